/*  =========================================================================
    reader - streaming transaction input: FIMI numbers or named items

    Names live in one open-addressing table (FNV-1a, linear probing) that
    maps a name to its number, and an array that maps back. Only the
    names, never the transactions, stay in memory.
    =========================================================================
*/
#include "programs/apriori/reader.h"
#include "base/textio.h"
#include "spm/spm.h"

#include <stdlib.h>
#include <string.h>

struct spm_reader {
    spm_lines_t *lines; /* the file, a line at a time */
    int names;          /* named format */
    uint32_t *items;    /* the current transaction */
    size_t cap;
    uint64_t count;  /* transactions read */
    uint64_t domain; /* largest item + 1 */
    char **name;     /* item -> name (named format) */
    size_t nnames, capnames;
    uint32_t *slot; /* hash table of item + 1 (0: empty) */
    size_t nslots;
};

spm_reader_t *spm_reader_open(const char *path, int names)
{
    spm_reader_t *r = calloc(1, sizeof *r);
    if (!r) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    r->names = names;
    if (!(r->lines = spm_lines_open(path))) {
        free(r);
        return NULL;
    }
    return r;
}

void spm_reader_destroy(spm_reader_t **self_p)
{
    spm_reader_t *r = *self_p;
    if (!r)
        return;
    spm_lines_destroy(&r->lines);
    for (size_t i = 0; i < r->nnames; i++)
        free(r->name[i]);
    free(r->name);
    free(r->slot);
    free(r->items);
    free(r);
    *self_p = NULL;
}

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/*  Doubles the name table and re-inserts every name. */
static int rehash(spm_reader_t *r)
{
    size_t n = r->nslots ? r->nslots * 2 : 1024;
    uint32_t *slot = calloc(n, sizeof *slot);
    if (!slot)
        return SPM_ENOMEM;
    for (size_t i = 0; i < r->nnames; i++) {
        size_t h = hash(r->name[i], strlen(r->name[i])) & (n - 1);
        while (slot[h])
            h = (h + 1) & (n - 1);
        slot[h] = (uint32_t)i + 1;
    }
    free(r->slot);
    r->slot = slot;
    r->nslots = n;
    return 0;
}

/*  The number of name S (N bytes), adding it when new. */
static int intern(spm_reader_t *r, const char *s, size_t n, uint32_t *item)
{
    if ((r->nnames + 1) * 2 > r->nslots && rehash(r) != 0)
        return SPM_ENOMEM;
    size_t h = hash(s, n) & (r->nslots - 1);
    for (; r->slot[h]; h = (h + 1) & (r->nslots - 1)) {
        const char *t = r->name[r->slot[h] - 1];
        if (strncmp(t, s, n) == 0 && t[n] == '\0') {
            *item = r->slot[h] - 1;
            return 0;
        }
    }
    if (r->nnames > SPM_READER_MAX_ITEM)
        return SPM_ERANGE;
    if (r->nnames == r->capnames) {
        size_t cap = r->capnames ? r->capnames * 2 : 256;
        char **v = realloc(r->name, cap * sizeof *v);
        if (!v)
            return SPM_ENOMEM;
        r->name = v;
        r->capnames = cap;
    }
    if (!(r->name[r->nnames] = strndup(s, n)))
        return SPM_ENOMEM;
    r->slot[h] = (uint32_t)r->nnames + 1;
    *item = (uint32_t)r->nnames++;
    return 0;
}

/*  Room for item M in R->items. */
static int grow(spm_reader_t *r, size_t m)
{
    if (m < r->cap)
        return 0;
    size_t cap = r->cap ? r->cap * 2 : 64;
    while (cap <= m)
        cap *= 2;
    uint32_t *v = realloc(r->items, cap * sizeof *v);
    if (!v)
        return spm_error(SPM_ENOMEM, "out of memory");
    r->items = v;
    r->cap = cap;
    return 0;
}

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

/*  The next name of LINE (LEN bytes) from *AT, as its number in *ITEM;
 *AT moves past it. Returns 1, 0 at the end of the line, or an error. */
static int next_name(spm_reader_t *r, const char *line, size_t len, size_t *at, uint32_t *item)
{
    size_t i = *at;
    while (i < len && blank(line[i]))
        i++;
    if (i == len)
        return 0;
    size_t start = i;
    while (i < len && !blank(line[i]))
        i++;
    *at = i;
    int rc = intern(r, line + start, i - start, item);
    if (rc != 0)
        return rc == SPM_ENOMEM ? spm_error(rc, "out of memory")
                                : spm_lines_error(r->lines, rc, "too many names");
    return 1;
}

int spm_reader_next(spm_reader_t *r, const uint32_t **items, size_t *n)
{
    char *line;
    size_t len;
    int truncated;
    int rc = spm_lines_next(r->lines, &line, &len, &truncated);
    if (rc <= 0)
        return rc;
    if (truncated)
        return spm_lines_error(r->lines, SPM_EFORMAT,
                               "last line has no line end (truncated file?)");
    size_t m = 0, at = 0;
    uint32_t item = 0;
    if (!r->names) {
        if ((rc = grow(r, len / 2 + 1)) != 0 ||
            (rc = spm_mining_fimi_line(line, len, r->items, &m, spm_lines_path(r->lines),
                                       spm_lines_lineno(r->lines))) != 0)
            return rc;
        uint32_t top = 0;
        for (size_t j = 0; j < m; j++)
            top = r->items[j] > top ? r->items[j] : top;
        if (m > 0 && (uint64_t)top + 1 > r->domain)
            r->domain = (uint64_t)top + 1;
    }
    while (r->names && (rc = next_name(r, line, len, &at, &item)) == 1) {
        if ((rc = grow(r, m)) != 0)
            return rc;
        r->items[m++] = item;
        if ((uint64_t)item + 1 > r->domain)
            r->domain = (uint64_t)item + 1;
    }
    if (rc != 0)
        return rc;
    r->count++;
    *items = r->items;
    *n = m;
    return 1;
}

const char *spm_reader_name(const spm_reader_t *r, uint32_t i)
{
    return r->names && i < r->nnames ? r->name[i] : NULL;
}

uint64_t spm_reader_count(const spm_reader_t *r)
{
    return r->count;
}

int spm_reader_unchanged(const spm_reader_t *r)
{
    return spm_lines_unchanged(r->lines);
}

uint64_t spm_reader_domain(const spm_reader_t *r)
{
    return r->domain;
}
