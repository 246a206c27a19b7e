/*  =========================================================================
    sdb - the super-data block types of association-rule mining

    Decoders copy into plain arrays rather than reading in place: the copy
    costs a fraction of what most SIs then do with the block, and it lets
    the SI bodies work on aligned native integers on any host. The
    exceptions are read in place because they are read often or only
    once: the items of a transaction block (spm_mining_trans_view) and
    the text of a text block.
    =========================================================================
*/
#include "isa/mining/sdb.h"
#include "isa/mining/fimi.h"
#include "isa/mining/sdb_int.h"
#include "spm/spm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  1 when every transaction of B is strictly increasing: one pass over all
    its items, less the pairs that straddle two transactions. Checked a
    transaction at a time, the check was most of the time of decoding a
    block (T25I10D100K at 0.6%: 9% of the job's CPU, every block of
    transactions decoded by every class; this way, decoding is 4%). */
static int trans_increasing(const spm_mining_trans_t *b)
{
    size_t total = b->n ? b->off[b->n] : 0, down = not_increasing(b->items, total);
    for (uint32_t i = 1; i < b->n; i++)
        if (b->off[i] > b->off[i - 1] && b->off[i] < total)
            down -= b->items[b->off[i] - 1] >= b->items[b->off[i]];
    return down == 0;
}

/* ------------------------------------------------------------ BlockOfItems */

int spm_mining_items_encode(const spm_mining_items_t *b, void **data, size_t *len)
{
    spm_buf_t buf = {0};
    spm_buf_put_u32(&buf, MAGIC_ITEMS);
    spm_buf_put_u32(&buf, b->lo);
    spm_buf_put_u32(&buf, b->hi);
    spm_buf_put_u32(&buf, b->n);
    put_u32s(&buf, b->items, b->n);
    put_u64s(&buf, b->counts, b->n);
    return spm_buf_take(&buf, data, len);
}

int spm_mining_items_decode(const void *data, size_t len, spm_mining_items_t *b)
{
    const char *t = SPM_MINING_ITEMS;
    spm_cursor_t c = spm_cursor(data, len);
    memset(b, 0, sizeof *b);
    int rc;
    if ((rc = get_head(&c, MAGIC_ITEMS, t)) || (rc = get_count(&c, t, "lo", UINT32_MAX, &b->lo)) ||
        (rc = get_count(&c, t, "hi", UINT32_MAX, &b->hi)) ||
        (rc = get_count(&c, t, "items", SPM_MINING_MAX_ENTRIES, &b->n)) ||
        (rc = get_u32s(&c, t, b->n, &b->items)) || (rc = get_u64s(&c, t, b->n, &b->counts)) ||
        (rc = get_end(&c, t)))
        goto err;
    if (b->lo > b->hi || !increasing(b->items, b->n) ||
        (b->n && (b->items[0] < b->lo || b->items[b->n - 1] >= b->hi))) {
        rc = spm_error(SPM_EFORMAT, "%s: items unsorted or outside [%u, %u)", t, b->lo, b->hi);
        goto err;
    }
    return 0;
err:
    spm_mining_items_free(b);
    return rc;
}

void spm_mining_items_free(spm_mining_items_t *b)
{
    free(b->items);
    free(b->counts);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------ BlockOfTransaction */

/*  A transaction block is columnar: u32 magic, u32 normalized, u32 n,
    u32 total, then the n weights, the n lengths and the total items. The
    items are one run, which a reader that only reads them can use where
    they lie (spm_mining_trans_view): the depth-first miner reads every
    block of transactions once per class. (Each transaction's weight and
    length before its items, decoding was one copy a transaction and 4.6%
    of the job's CPU on T25I10D100K at 1%.) */
int spm_mining_trans_encode(const spm_mining_trans_t *b, void **data, size_t *len)
{
    spm_buf_t buf = {0};
    uint32_t from = b->n ? b->off[0] : 0, total = b->n ? b->off[b->n] - from : 0;
    /* its exact size at once: no copy as it grows (staging T25I10D100K
       reallocated each block's bytes 12 times) */
    spm_buf_reserve(&buf, 16 + (size_t)b->n * 8 + (size_t)total * 4);
    spm_buf_put_u32(&buf, MAGIC_TRANS);
    spm_buf_put_u32(&buf, b->normalized);
    spm_buf_put_u32(&buf, b->n);
    spm_buf_put_u32(&buf, total);
    put_u32s(&buf, b->weight, b->n);
    for (uint32_t i = 0; i < b->n; i++)
        spm_buf_put_u32(&buf, b->off[i + 1] - b->off[i]);
    put_u32s(&buf, b->items + from, total);
    return spm_buf_take(&buf, data, len);
}

/*  Decodes a transaction block; with VIEW, B's items point into DATA
    where it is aligned (b->view set), else they are copied. */
static int trans_decode(const void *data, size_t len, spm_mining_trans_t *b, int view)
{
    const char *t = SPM_MINING_TRANS;
    spm_cursor_t c = spm_cursor(data, len);
    uint32_t total;
    memset(b, 0, sizeof *b);
    int rc;
    if ((rc = get_head(&c, MAGIC_TRANS, t)) || (rc = get_count(&c, t, "flag", 1, &b->normalized)) ||
        (rc = get_count(&c, t, "transactions", SPM_MINING_MAX_ENTRIES, &b->n)) ||
        (rc = get_count(&c, t, "items", UINT32_MAX, &total)))
        goto err;
    /* its exact size: a forged count is refused before allocating for it */
    if (spm_cursor_left(&c) != (size_t)b->n * 8 + (size_t)total * 4) {
        rc = spm_error(SPM_EFORMAT, "%s: truncated block or bytes past its end", t);
        goto err;
    }
    const unsigned char *lens = c.p + (size_t)b->n * 4, *items = lens + (size_t)b->n * 4;
    if ((rc = get_u32s(&c, t, b->n, &b->weight)) != 0)
        goto err;
    b->off = malloc(((size_t)b->n + 1) * sizeof *b->off);
    if (!b->off) {
        rc = spm_error(SPM_ENOMEM, "%s: out of memory", t);
        goto err;
    }
    uint64_t at = 0;
    uint32_t zero = 0;
    b->off[0] = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        at += spm_le32(lens + 4 * (size_t)i);
        b->off[i + 1] = (uint32_t)(at <= total ? at : total);
        zero |= b->weight[i] == 0;
    }
    if (at != total || zero) {
        rc = spm_error(SPM_EFORMAT, "%s: %s", t,
                       zero ? "a zero weight" : "lengths do not add up to the item total");
        goto err;
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (view && ((uintptr_t)items & 3) == 0) {
        b->items = (uint32_t *)(uintptr_t)items; /* read only: see view */
        b->view = 1;
    }
#else
    (void)view;
#endif
    c.p = items;
    if (!b->view && (rc = get_u32s(&c, t, total, &b->items)) != 0)
        goto err;
    int bad = b->normalized && !trans_increasing(b); /* then name the first */
    for (uint32_t i = 0; bad && i < b->n; i++)
        if (!increasing(b->items + b->off[i], b->off[i + 1] - b->off[i])) {
            rc = spm_error(SPM_EFORMAT, "%s: transaction %u: items not increasing", t, i);
            goto err;
        }
    return 0;
err:
    spm_mining_trans_free(b);
    return rc;
}

int spm_mining_trans_decode(const void *data, size_t len, spm_mining_trans_t *b)
{
    return trans_decode(data, len, b, 0);
}

int spm_mining_trans_view(const void *data, size_t len, spm_mining_trans_t *b)
{
    return trans_decode(data, len, b, 1);
}

void spm_mining_trans_free(spm_mining_trans_t *b)
{
    free(b->off);
    free(b->weight);
    if (!b->view)
        free(b->items);
    memset(b, 0, sizeof *b);
}

/*  A text block: u32 magic, u32 nlines, u64 first, u32 namelen, u32 len,
    the name, the text, then SPM_MINING_FIMI_PAD zero bytes. */
#define TEXT_HEAD 24

int spm_mining_text_encode(const spm_mining_text_t *b, void **data, size_t *len)
{
    if (b->len > SPM_MINING_MAX_TEXT)
        return spm_error(SPM_ERANGE, "%s: %zu bytes of text, over %u", SPM_MINING_TEXT, b->len,
                         SPM_MINING_MAX_TEXT);
    size_t n = TEXT_HEAD + b->namelen + b->len + SPM_MINING_FIMI_PAD;
    unsigned char *d = malloc(n);
    if (!d)
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_TEXT);
    spm_put_le32(d, MAGIC_TEXT);
    spm_put_le32(d + 4, b->nlines);
    spm_put_le64(d + 8, b->first);
    spm_put_le32(d + 16, b->namelen);
    spm_put_le32(d + 20, (uint32_t)b->len);
    memcpy(d + TEXT_HEAD, b->name, b->namelen);
    memcpy(d + TEXT_HEAD + b->namelen, b->text, b->len);
    memset(d + n - SPM_MINING_FIMI_PAD, 0, SPM_MINING_FIMI_PAD);
    *data = d;
    *len = n;
    return 0;
}

/*  1 when the LEN bytes at DATA start with MAGIC. */
static int has_magic(const void *data, size_t len, uint32_t magic)
{
    return len >= 4 && spm_le32(data) == magic;
}

int spm_mining_text_is(const void *data, size_t len)
{
    return has_magic(data, len, MAGIC_TEXT);
}

int spm_mining_text_view(const void *data, size_t len, spm_mining_text_t *b)
{
    const unsigned char *d = data;
    memset(b, 0, sizeof *b);
    if (len < TEXT_HEAD + SPM_MINING_FIMI_PAD || !has_magic(d, len, MAGIC_TEXT))
        return spm_error(SPM_EFORMAT, "%s: bad magic or truncated block", SPM_MINING_TEXT);
    b->nlines = spm_le32(d + 4);
    b->first = spm_le64(d + 8);
    b->namelen = spm_le32(d + 16);
    b->len = spm_le32(d + 20);
    const unsigned char *pad = d + len - SPM_MINING_FIMI_PAD;
    if (b->len > SPM_MINING_MAX_TEXT || b->namelen > SPM_MINING_NAME_MAX ||
        len != TEXT_HEAD + (size_t)b->namelen + b->len + SPM_MINING_FIMI_PAD ||
        (b->len > 0) != (b->nlines > 0) || b->nlines > b->len || b->first == 0 ||
        b->first > UINT64_MAX - b->nlines || memcmp(pad, "\0\0\0\0\0\0\0\0", 8) != 0)
        return spm_error(SPM_EFORMAT, "%s: malformed block", SPM_MINING_TEXT);
    b->name = (const char *)d + TEXT_HEAD;
    b->text = b->name + b->namelen;
    if (b->len > 0 && b->text[b->len - 1] != '\n')
        return spm_error(SPM_EFORMAT, "%s: text does not end in a line end", SPM_MINING_TEXT);
    return 0;
}

/* ------------------------------------------------------------ BlockOfRules */

int spm_mining_rules_encode(const spm_mining_rules_t *b, void **data, size_t *len)
{
    spm_buf_t buf = {0};
    spm_buf_put_u32(&buf, MAGIC_RULES);
    spm_buf_put_u32(&buf, b->n);
    for (uint32_t i = 0; i < b->n; i++) {
        spm_buf_put_u32(&buf, b->xlen[i]);
        spm_buf_put_u32(&buf, b->ylen[i]);
        spm_buf_put_u64(&buf, b->supz[i]);
        spm_buf_put_u64(&buf, b->supx[i]);
        put_u32s(&buf, b->items + b->off[i], b->xlen[i] + b->ylen[i]);
    }
    return spm_buf_take(&buf, data, len);
}

/*  1 when sorted lists A and B share no item. */
static int disjoint(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
    uint32_t i = 0, j = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j])
            return 0;
        if (a[i] < b[j])
            i++;
        else
            j++;
    }
    return 1;
}

int spm_mining_rules_decode(const void *data, size_t len, spm_mining_rules_t *b)
{
    const char *t = SPM_MINING_RULES;
    spm_cursor_t c = spm_cursor(data, len);
    memset(b, 0, sizeof *b);
    int rc;
    if ((rc = get_head(&c, MAGIC_RULES, t)) ||
        (rc = get_count(&c, t, "rules", SPM_MINING_MAX_ENTRIES, &b->n)))
        goto err;
    if (spm_cursor_left(&c) / 32 < b->n) {
        rc = spm_error(SPM_EFORMAT, "%s: truncated block", t);
        goto err;
    }
    size_t n1 = (size_t)b->n + 1, items = spm_cursor_left(&c) / 4 + 1;
    b->xlen = malloc(n1 * 4);
    b->ylen = malloc(n1 * 4);
    b->supz = malloc(n1 * 8);
    b->supx = malloc(n1 * 8);
    b->off = malloc(n1 * 4);
    b->items = malloc(items * 4);
    if (!b->xlen || !b->ylen || !b->supz || !b->supx || !b->off || !b->items) {
        rc = spm_error(SPM_ENOMEM, "%s: out of memory", t);
        goto err;
    }
    b->off[0] = 0;
    uint32_t i;
    for (i = 0; i < b->n; i++) {
        if (spm_get_u32(&c, &b->xlen[i]) || spm_get_u32(&c, &b->ylen[i]) ||
            spm_get_u64(&c, &b->supz[i]) || spm_get_u64(&c, &b->supx[i]))
            goto bad;
        uint32_t xl = b->xlen[i], yl = b->ylen[i];
        if (xl == 0 || yl == 0 || xl > SPM_MINING_MAX_K || yl > SPM_MINING_MAX_K ||
            spm_cursor_left(&c) / 4 < (size_t)xl + yl || b->supz[i] > b->supx[i])
            goto bad;
        uint32_t *x = b->items + b->off[i];
        for (uint32_t j = 0; j < xl + yl; j++, c.p += 4)
            x[j] = spm_le32(c.p);
        if (!increasing(x, xl) || !increasing(x + xl, yl) || !disjoint(x, xl, x + xl, yl))
            goto bad;
        b->off[i + 1] = b->off[i] + xl + yl;
    }
    if ((rc = get_end(&c, t)) != 0)
        goto err;
    return 0;
bad:
    rc = spm_error(SPM_EFORMAT, "%s: rule %u truncated or malformed", t, i);
err:
    spm_mining_rules_free(b);
    return rc;
}

void spm_mining_rules_free(spm_mining_rules_t *b)
{
    free(b->xlen);
    free(b->ylen);
    free(b->supz);
    free(b->supx);
    free(b->off);
    free(b->items);
    memset(b, 0, sizeof *b);
}

/*  Grows *A (element size SZ) to hold at least N elements. */
static int grow(void *a, size_t sz, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < n)
        c *= 2;
    void *p = realloc(*(void **)a, c * sz);
    if (!p)
        return SPM_ENOMEM;
    *(void **)a = p;
    *cap = c;
    return 0;
}

void spm_mining_rules_add(spm_mining_rules_builder_t *b, const uint32_t *x, uint32_t xlen,
                          const uint32_t *y, uint32_t ylen, uint64_t supz, uint64_t supx)
{
    spm_mining_rules_t *r = &b->r;
    size_t n = r->n, used = n ? r->off[n] : 0, cap = b->cap;
    if (b->failed)
        return;
    /* Every per-rule array shares one capacity, grown in step. */
    if (grow(&r->xlen, 4, &cap, n + 2) || (cap = b->cap, grow(&r->ylen, 4, &cap, n + 2)) ||
        (cap = b->cap, grow(&r->supz, 8, &cap, n + 2)) ||
        (cap = b->cap, grow(&r->supx, 8, &cap, n + 2)) ||
        (cap = b->cap, grow(&r->off, 4, &cap, n + 2)) ||
        grow(&r->items, 4, &b->icap, used + xlen + ylen)) {
        b->failed = 1;
        return;
    }
    b->cap = cap;
    r->off[0] = 0;
    r->xlen[n] = xlen;
    r->ylen[n] = ylen;
    r->supz[n] = supz;
    r->supx[n] = supx;
    memcpy(r->items + used, x, xlen * 4);
    memcpy(r->items + used + xlen, y, ylen * 4);
    r->off[n + 1] = (uint32_t)(used + xlen + ylen);
    r->n++;
}

/* ----------------------------------------------------------- registration */

static int validate_items(const void *data, size_t len)
{
    spm_mining_items_t b;
    int rc = spm_mining_items_decode(data, len, &b);
    spm_mining_items_free(&b);
    return rc;
}

/*  A file-lines block: u32 magic, u32 nlines, u64 first, u64 offset, u64
    len, u32 pathlen, u32 namelen, u64 dev, ino, size, mtime_ns (the
    stamp), u64 sum, the path, the name. */
#define FILE_HEAD 80

int spm_mining_file_encode(const spm_mining_file_t *b, void **data, size_t *len)
{
    size_t n = FILE_HEAD + (size_t)b->pathlen + b->namelen;
    unsigned char *d = malloc(n);
    if (!d)
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_FILE);
    spm_put_le32(d, MAGIC_FILE);
    spm_put_le32(d + 4, b->nlines);
    spm_put_le64(d + 8, b->first);
    spm_put_le64(d + 16, b->offset);
    spm_put_le64(d + 24, b->len);
    spm_put_le32(d + 32, b->pathlen);
    spm_put_le32(d + 36, b->namelen);
    spm_put_le64(d + 40, b->stamp.dev);
    spm_put_le64(d + 48, b->stamp.ino);
    spm_put_le64(d + 56, b->stamp.size);
    spm_put_le64(d + 64, b->stamp.mtime_ns);
    spm_put_le64(d + 72, b->sum);
    memcpy(d + FILE_HEAD, b->path, b->pathlen);
    memcpy(d + FILE_HEAD + b->pathlen, b->name, b->namelen);
    *data = d;
    *len = n;
    return 0;
}

int spm_mining_file_is(const void *data, size_t len)
{
    return has_magic(data, len, MAGIC_FILE);
}

int spm_mining_file_view(const void *data, size_t len, spm_mining_file_t *b)
{
    const unsigned char *d = data;
    memset(b, 0, sizeof *b);
    if (len < FILE_HEAD || !has_magic(d, len, MAGIC_FILE))
        return spm_error(SPM_EFORMAT, "%s: bad magic or truncated block", SPM_MINING_FILE);
    b->nlines = spm_le32(d + 4);
    b->first = spm_le64(d + 8);
    b->offset = spm_le64(d + 16);
    b->len = spm_le64(d + 24);
    b->pathlen = spm_le32(d + 32);
    b->namelen = spm_le32(d + 36);
    b->stamp.dev = spm_le64(d + 40);
    b->stamp.ino = spm_le64(d + 48);
    b->stamp.size = spm_le64(d + 56);
    b->stamp.mtime_ns = spm_le64(d + 64);
    b->sum = spm_le64(d + 72);
    if (b->pathlen == 0 || b->pathlen > SPM_MINING_NAME_MAX || b->namelen > SPM_MINING_NAME_MAX ||
        len != FILE_HEAD + (size_t)b->pathlen + b->namelen || b->len > SPM_MINING_MAX_TEXT ||
        (b->len > 0) != (b->nlines > 0) || b->nlines > b->len || b->first == 0 ||
        b->first > UINT64_MAX - b->nlines || b->offset > UINT64_MAX - b->len)
        return spm_error(SPM_EFORMAT, "%s: malformed block", SPM_MINING_FILE);
    b->path = (const char *)d + FILE_HEAD;
    b->name = b->path + b->pathlen;
    if (b->path[0] != '/' || memchr(b->path, '\0', b->pathlen))
        return spm_error(SPM_EFORMAT, "%s: the path is not absolute", SPM_MINING_FILE);
    return 0;
}

static int validate_file(const void *data, size_t len)
{
    spm_mining_file_t b;
    return spm_mining_file_view(data, len, &b);
}

static int validate_text(const void *data, size_t len)
{
    spm_mining_text_t b;
    return spm_mining_text_view(data, len, &b);
}

static int validate_trans(const void *data, size_t len)
{
    spm_mining_trans_t b;
    int rc = spm_mining_trans_decode(data, len, &b);
    spm_mining_trans_free(&b);
    return rc;
}

static int validate_sets(spm_mining_kind_t kind, const void *data, size_t len)
{
    spm_mining_sets_t b;
    int rc = spm_mining_sets_decode(kind, data, len, &b);
    spm_mining_sets_free(&b);
    return rc;
}

static int validate_join(const void *data, size_t len)
{
    return validate_sets(SPM_MINING_KIND_JOIN, data, len);
}

static int validate_cands(const void *data, size_t len)
{
    return validate_sets(SPM_MINING_KIND_CANDS, data, len);
}

static int validate_fsets(const void *data, size_t len)
{
    return validate_sets(SPM_MINING_KIND_FSETS, data, len);
}

static int validate_itemsets(const void *data, size_t len)
{
    spm_mining_itemsets_t b;
    int rc = spm_mining_itemsets_decode(data, len, &b);
    spm_mining_itemsets_free(&b);
    return rc;
}

static int validate_rules(const void *data, size_t len)
{
    spm_mining_rules_t b;
    int rc = spm_mining_rules_decode(data, len, &b);
    spm_mining_rules_free(&b);
    return rc;
}

/*  Copies B as the merge of nothing with B, after checking it. */
static int merge_first(int (*validate)(const void *, size_t), const void *b, size_t blen,
                       void **out, size_t *outlen)
{
    int rc = validate(b, blen);
    if (rc != 0)
        return rc;
    if (!(*out = malloc(blen ? blen : 1)))
        return SPM_ENOMEM;
    memcpy(*out, b, blen);
    *outlen = blen;
    return 0;
}

/*  ACC merge of partial item counts: the union of the items, counts summed. */
static int merge_items(const void *a, size_t alen, const void *b, size_t blen, void **out,
                       size_t *outlen)
{
    if (!a)
        return merge_first(validate_items, b, blen, out, outlen);
    spm_mining_items_t x, y, z = {0};
    int rc = spm_mining_items_decode(a, alen, &x);
    if (rc != 0)
        return rc;
    if ((rc = spm_mining_items_decode(b, blen, &y)) != 0)
        goto out_x;
    if (x.lo != y.lo || x.hi != y.hi) {
        rc = spm_error(SPM_EFORMAT, "%s: merge of different partitions", SPM_MINING_ITEMS);
        goto out;
    }
    z.lo = x.lo;
    z.hi = x.hi;
    z.items = malloc(((size_t)x.n + y.n + 1) * 4);
    z.counts = malloc(((size_t)x.n + y.n + 1) * 8);
    rc = SPM_ENOMEM;
    if (!z.items || !z.counts)
        goto out;
    uint32_t i = 0, j = 0;
    while (i < x.n || j < y.n) {
        if (j == y.n || (i < x.n && x.items[i] < y.items[j])) {
            z.items[z.n] = x.items[i];
            z.counts[z.n++] = x.counts[i++];
        } else if (i == x.n || y.items[j] < x.items[i]) {
            z.items[z.n] = y.items[j];
            z.counts[z.n++] = y.counts[j++];
        } else {
            z.items[z.n] = x.items[i];
            z.counts[z.n++] = x.counts[i++] + y.counts[j++];
        }
    }
    rc = spm_mining_items_encode(&z, out, outlen);
out:
    spm_mining_items_free(&z);
    spm_mining_items_free(&y);
out_x:
    spm_mining_items_free(&x);
    return rc;
}

/*  ACC merge of partial candidate supports: same sets, counts summed. It
    works on the encoded bytes: the header and the sets of B must equal A's
    byte for byte, so B is as well-formed as A (a merge result or a block
    validated when it reached this node), and only the counts are added.
    Decoding, checking the order of every set and encoding again cost four
    times as much, at the end of every counting stage. */
static int merge_cands(const void *a, size_t alen, const void *b, size_t blen, void **out,
                       size_t *outlen)
{
    if (!a)
        return merge_first(validate_cands, b, blen, out, outlen);
    const unsigned char *x = a, *y = b;
    uint64_t k = alen >= 12 ? spm_le32(x + 4) : 0, n = alen >= 12 ? spm_le32(x + 8) : 0;
    size_t sets = 12 + 4 * n * k; /* header and sets: k, n < 2^32 */
    if (alen < 12 || spm_le32(x) != MAGIC_CANDS || k == 0 || k > SPM_MINING_MAX_K ||
        alen != sets + 8 * n)
        return spm_error(SPM_EFORMAT, "%s: malformed block", SPM_MINING_CANDS);
    if (blen != alen || memcmp(x, y, sets) != 0)
        return spm_error(SPM_EFORMAT, "%s: merge of blocks with different sets", SPM_MINING_CANDS);
    unsigned char *z = malloc(alen);
    if (!z)
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_CANDS);
    memcpy(z, x, sets);
    for (size_t i = sets; i < alen; i += 8)
        spm_put_le64(z + i, spm_le64(x + i) + spm_le64(y + i));
    *out = z;
    *outlen = alen;
    return 0;
}

static void summary(const char *type, const void *data, size_t len, char *buf, size_t size)
{
    uint32_t a = len >= 8 ? spm_le32((const unsigned char *)data + 4) : 0;
    uint32_t b = len >= 12 ? spm_le32((const unsigned char *)data + 8) : 0;
    snprintf(buf, size, "%s %u/%u, %zu bytes", type, a, b, len);
}

#define SUMMARY(fn, name)                                                                          \
    static void fn(const void *data, size_t len, char *buf, size_t size)                           \
    {                                                                                              \
        summary(name, data, len, buf, size);                                                       \
    }
SUMMARY(summary_items, SPM_MINING_ITEMS)
SUMMARY(summary_trans, SPM_MINING_TRANS)
SUMMARY(summary_text, SPM_MINING_TEXT)
SUMMARY(summary_file, SPM_MINING_FILE)
SUMMARY(summary_join, SPM_MINING_JOIN)
SUMMARY(summary_cands, SPM_MINING_CANDS)
SUMMARY(summary_fsets, SPM_MINING_FSETS)
SUMMARY(summary_rules, SPM_MINING_RULES)
SUMMARY(summary_itemsets, SPM_MINING_ITEMSETS)

SPM_CONSTRUCTOR(mining_sdb)
{
    static const spm_sdb_type_t types[] = {
        {SPM_MINING_ITEMS, validate_items, merge_items, summary_items},
        {SPM_MINING_TRANS, validate_trans, NULL, summary_trans},
        {SPM_MINING_TEXT, validate_text, NULL, summary_text},
        {SPM_MINING_FILE, validate_file, NULL, summary_file},
        {SPM_MINING_JOIN, validate_join, NULL, summary_join},
        {SPM_MINING_CANDS, validate_cands, merge_cands, summary_cands},
        {SPM_MINING_FSETS, validate_fsets, NULL, summary_fsets},
        {SPM_MINING_RULES, validate_rules, NULL, summary_rules},
        {SPM_MINING_ITEMSETS, validate_itemsets, NULL, summary_itemsets},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        spm_sdb_type_register(&types[i]);
}
