/*  =========================================================================
    reader - streaming transaction input: FIMI numbers or named items

    Names live in one open-addressing table (FNV-1a, linear probing) that
    maps a name to its number, and an array that maps back. Only the
    names, never the transactions, stay in memory.
    =========================================================================
*/
#include "programs/apriori/reader.h"
#include "isa/core/textio.h"
#include "vm/spm.h"

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

void spm_reader_close(spm_reader_t **rp)
{
    spm_reader_t *r = *rp;
    if (!r)
        return;
    spm_lines_close(&r->lines);
    for (size_t i = 0; i < r->nnames; i++)
        free(r->name[i]);
    free(r->name);
    free(r->slot);
    free(r->items);
    free(r);
    *rp = NULL;
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

/*  Parses the number S (N bytes): digits only, at most SPM_READER_MAX_ITEM. */
static int number(spm_reader_t *r, const char *s, size_t n, uint32_t *item)
{
    uint64_t v = 0;
    if (s[0] == '-')
        return spm_lines_error(r->lines, SPM_EFORMAT, "negative item '%.*s'", (int)n, s);
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return spm_lines_error(r->lines, SPM_EFORMAT,
                                   "item '%.*s' is not a non-negative integer (use --names "
                                   "for named items)",
                                   (int)(n > 40 ? 40 : n), s);
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > SPM_READER_MAX_ITEM)
            return spm_lines_error(r->lines, SPM_EFORMAT, "item '%.*s' is over %u", (int)n, s,
                                   SPM_READER_MAX_ITEM);
    }
    *item = (uint32_t)v;
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

/*  The next item of LINE (LEN bytes) from *AT, into *ITEM; *AT moves past
    it. Returns 1, 0 at the end of the line, or an error. Item by item:
    for names, and for the numbers of a line that plain_numbers refused,
    so that number() names what is wrong. */
static int next_item(spm_reader_t *r, const char *line, size_t len, size_t *at, uint32_t *item)
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
    int rc;
    if (!r->names)
        return (rc = number(r, line + start, i - start, item)) != 0 ? rc : 1;
    if ((rc = intern(r, line + start, i - start, item)) != 0)
        return rc == SPM_ENOMEM ? spm_error(rc, "out of memory")
                                : spm_lines_error(r->lines, rc, "too many names");
    return 1;
}

/*  The leading digits of the 8 bytes W (first byte lowest): a mask with
    the high bit of every byte that is '0' to '9'. */
static uint64_t digit_bytes(uint64_t w)
{
    const uint64_t hi = 0x8080808080808080ull, lo7 = w & ~hi;
    uint64_t ge0 = (lo7 + 0x5050505050505050ull) & hi; /* byte >= '0' */
    uint64_t gt9 = (lo7 + 0x4646464646464646ull) & hi; /* byte >= ':' */
    return ge0 & ~gt9 & ~(w & hi);
}

/*  The value of the first N (1 to 7) digit bytes of W: eight digits at
    once by multiply-and-add of byte pairs, then pairs of pairs. */
static uint32_t swar_value(uint64_t w, unsigned n)
{
    uint64_t x = (w & 0x0f0f0f0f0f0f0f0full) << (8 * (8 - n)); /* leading zeros */
    x = (x * 10) + (x >> 8);
    x = (((x & 0x000000ff000000ffull) * (100 + (1000000ull << 32))) +
         (((x >> 16) & 0x000000ff000000ffull) * (1 + (10000ull << 32)))) >>
        32;
    return (uint32_t)x;
}

/*  The numbers of a plain FIMI line S (LEN bytes, readable to LEN + 8)
    into OUT, which has room for LEN / 2 + 1. Numbers of up to 7 digits
    are read 8 bytes at a time (no branch per digit, so their varying
    lengths cost no mispredictions); longer ones digit by digit. Returns
    how many, or -1 when the line has anything but blanks and numbers up
    to SPM_READER_MAX_ITEM: the careful path (next_item) then finds the
    error to report. */
static long plain_numbers(const char *s, size_t len, uint32_t *out)
{
    size_t i = 0, m = 0;
    for (;;) {
        while (i < len && blank(s[i]))
            i++;
        if (i >= len)
            return (long)m;
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t nd = ~digit_bytes(w) & 0x8080808080808080ull;
        unsigned n = nd ? (unsigned)__builtin_ctzll(nd) / 8 : 8;
        if (n == 0)
            return -1;
        if (n < 8) {
            out[m++] = swar_value(w, n);
            i += n;
        } else {
            uint64_t v = 0;
            for (; i < len && (unsigned)(s[i] - '0') < 10; i++)
                if ((v = v * 10 + (uint64_t)(s[i] - '0')) > SPM_READER_MAX_ITEM)
                    return -1;
            out[m++] = (uint32_t)v;
        }
        if (i < len && !blank(s[i]))
            return -1;
    }
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
        if ((rc = grow(r, len / 2 + 1)) != 0)
            return rc;
        long fast = plain_numbers(line, len, r->items);
        if (fast >= 0) {
            uint32_t top = 0;
            for (m = 0; m < (size_t)fast; m++)
                top = r->items[m] > top ? r->items[m] : top;
            if (fast > 0 && (uint64_t)top + 1 > r->domain)
                r->domain = (uint64_t)top + 1;
            r->count++;
            *items = r->items;
            *n = m;
            return 1;
        }
    }
    while ((rc = next_item(r, line, len, &at, &item)) == 1) {
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

uint64_t spm_reader_domain(const spm_reader_t *r)
{
    return r->domain;
}
