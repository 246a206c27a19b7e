/*  =========================================================================
    fimi - FIMI transaction lines: item numbers separated by blanks

    Numbers of up to 7 digits are read 8 bytes at a time, with no branch
    per digit, so their varying lengths cost no mispredictions; longer
    ones digit by digit. A line with anything else is read again item by
    item, to name what is wrong.
    =========================================================================
*/
#include "isa/mining/fimi.h"
#include "base/checksum.h"
#include "spm/spm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int blank(char c)
{
    return c == ' ' || c == '\t';
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

/*  The numbers of line S (LEN bytes) into OUT. Returns how many, or -1
    when the line has anything but blanks and numbers up to
    SPM_MINING_FIMI_MAX_ITEM. */
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
                if ((v = v * 10 + (uint64_t)(s[i] - '0')) > SPM_MINING_FIMI_MAX_ITEM)
                    return -1;
            out[m++] = (uint32_t)v;
        }
        if (i < len && !blank(s[i]))
            return -1;
    }
}

/*  The first bad item of line S (LEN bytes), as an SPM_EFORMAT detail. */
static int bad_item(const char *s, size_t len, const char *where, uint64_t lineno)
{
    size_t i = 0;
    for (;;) {
        while (i < len && blank(s[i]))
            i++;
        size_t start = i;
        while (i < len && !blank(s[i]))
            i++;
        const char *t = s + start;
        int n = (int)(i - start);
        if (n == 0)
            break;
        if (t[0] == '-')
            return spm_error(SPM_EFORMAT, "%s:%llu: negative item '%.*s'", where,
                             (unsigned long long)lineno, n, t);
        uint64_t v = 0;
        for (int k = 0; k < n; k++) {
            if (t[k] < '0' || t[k] > '9')
                return spm_error(SPM_EFORMAT,
                                 "%s:%llu: item '%.*s' is not a non-negative integer (use "
                                 "--names for named items)",
                                 where, (unsigned long long)lineno, n > 40 ? 40 : n, t);
            if ((v = v * 10 + (uint64_t)(t[k] - '0')) > SPM_MINING_FIMI_MAX_ITEM)
                return spm_error(SPM_EFORMAT, "%s:%llu: item '%.*s' is over %u", where,
                                 (unsigned long long)lineno, n, t, SPM_MINING_FIMI_MAX_ITEM);
        }
    }
    return spm_error(SPM_EFORMAT, "%s:%llu: not a line of item numbers", where,
                     (unsigned long long)lineno);
}

int spm_mining_fimi_line(const char *line, size_t len, uint32_t *items, size_t *n,
                         const char *where, uint64_t lineno)
{
    long got = plain_numbers(line, len, items);
    if (got < 0)
        return bad_item(line, len, where, lineno);
    *n = (size_t)got;
    return 0;
}

/*  Line FIRST + the line ends in the N bytes at TEXT. */
static uint64_t line_of(const char *text, size_t n, uint64_t first)
{
    for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + n - p))); p++)
        first++;
    return first;
}

int spm_mining_fimi_parse(const spm_mining_text_t *b, spm_mining_trans_t *t)
{
    const char *p = b->text, *end = b->text + b->len, *nul = memchr(p, '\0', b->len);
    char where[SPM_MINING_NAME_MAX + 1];
    snprintf(where, sizeof where, "%.*s", (int)b->namelen, b->name);
    memset(t, 0, sizeof *t);
    if (nul)
        return spm_error(SPM_EFORMAT, "%s:%llu: NUL byte in a text line", where,
                         (unsigned long long)line_of(p, (size_t)(nul - p), b->first));
    /* A line of L bytes holds at most (L + 1) / 2 items. */
    size_t room = b->len / 2 + b->nlines + 1, used = 0;
    t->off = malloc(((size_t)b->nlines + 1) * 4);
    t->weight = malloc(((size_t)b->nlines + 1) * 4);
    t->items = malloc(room * 4);
    if (!t->off || !t->weight || !t->items) {
        spm_mining_trans_free(t);
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_TEXT);
    }
    t->off[0] = 0;
    int rc = 0;
    for (uint32_t i = 0; i < b->nlines && rc == 0; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            rc = spm_error(SPM_EFORMAT, "%s: %u lines promised, %u found", SPM_MINING_TEXT,
                           b->nlines, i);
            break;
        }
        size_t l = (size_t)(nl - p), n = 0;
        if (l > 0 && p[l - 1] == '\r')
            l--;
        if ((rc = spm_mining_fimi_line(p, l, t->items + used, &n, where, b->first + i)) == 0 &&
            (used += n) > SPM_MINING_MAX_ENTRIES)
            rc =
                spm_error(SPM_EFORMAT, "%s:%llu: over %u items in one block; use a smaller --block",
                          where, (unsigned long long)(b->first + i), SPM_MINING_MAX_ENTRIES);
        t->weight[i] = 1;
        t->off[i + 1] = (uint32_t)used;
        p = nl + 1;
    }
    if (rc == 0 && p != end)
        rc = spm_error(SPM_EFORMAT, "%s: more than the %u lines promised", SPM_MINING_TEXT,
                       b->nlines);
    if (rc != 0) {
        spm_mining_trans_free(t);
        return rc;
    }
    t->n = b->nlines;
    return 0;
}

int spm_mining_fimi_read(const spm_mining_file_t *b, spm_mining_trans_t *t)
{
    char path[SPM_MINING_NAME_MAX + 1], name[SPM_MINING_NAME_MAX + 1];
    snprintf(path, sizeof path, "%.*s", (int)b->pathlen, b->path);
    snprintf(name, sizeof name, "%.*s", (int)b->namelen, b->name);
    memset(t, 0, sizeof *t);
    char *text = malloc(b->len + SPM_MINING_FIMI_PAD);
    if (!text)
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
    size_t got = 0;
    spm_file_stamp_t now;
    if (fd < 0)
        rc = spm_error(SPM_EIO, "%s: %s", name, strerror(errno));
    /* the file the client cut, in the state it cut it: not another one
       moved under its name, nor one rewritten since (the bytes' checksum,
       below, catches a rewrite the stamp cannot tell) */
    else if (spm_file_stamp(fd, &now) != 1 || !spm_file_stamp_eq(&now, &b->stamp))
        rc = spm_error(SPM_EIO, "%s: the file changed while it was read", name);
    while (rc == 0 && got < b->len) {
        ssize_t n = pread(fd, text + got, b->len - got, (off_t)(b->offset + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = spm_error(SPM_EIO, "%s: %s", name,
                           n < 0 ? strerror(errno) : "the file got shorter while it was read");
        else
            got += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    if (rc == 0 &&
        (spm_checksum(text, b->len) != b->sum || (b->len > 0 && text[b->len - 1] != '\n')))
        rc = spm_error(SPM_EIO, "%s: the file changed while it was read", name);
    if (rc == 0) {
        memset(text + b->len, 0, SPM_MINING_FIMI_PAD);
        spm_mining_text_t x = {.first = b->first,
                               .nlines = b->nlines,
                               .namelen = b->namelen,
                               .name = b->name,
                               .text = text,
                               .len = b->len};
        rc = spm_mining_fimi_parse(&x, t);
    }
    free(text);
    return rc;
}
