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
#include "isa/core/codec.h"
#include "isa/mining/fimi.h"
#include "spm/spm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC_ITEMS 0x4d49544du /* "MITM" */
#define MAGIC_TRANS 0x4d545243u /* "MTRC" (columnar) */
#define MAGIC_JOIN 0x4d4a4f4eu  /* "MJON" */
#define MAGIC_CANDS 0x4d43414eu /* "MCAN" */
#define MAGIC_FSETS 0x4d465354u /* "MFST" */
#define MAGIC_RULES 0x4d52554cu /* "MRUL" */
#define MAGIC_ISETS 0x4d495354u /* "MIST" */
#define MAGIC_TEXT 0x4d545854u  /* "MTXT" */
#define MAGIC_FILE 0x4d46494cu  /* "MFIL" */

static const uint32_t set_magic[] = {MAGIC_JOIN, MAGIC_CANDS, MAGIC_FSETS};
static const char *const set_name[] = {SPM_MINING_JOIN, SPM_MINING_CANDS, SPM_MINING_FSETS};

/*  Reads the magic and a count field, checking both. */
static int get_head(spm_cursor_t *c, uint32_t magic, const char *type)
{
    uint32_t m;
    if (spm_get_u32(c, &m) != 0 || m != magic)
        return spm_error(SPM_EFORMAT, "%s: bad magic (not a block of this type)", type);
    return 0;
}

static int get_count(spm_cursor_t *c, const char *type, const char *what, uint32_t max, uint32_t *v)
{
    if (spm_get_u32(c, v) != 0)
        return spm_error(SPM_EFORMAT, "%s: truncated block", type);
    if (*v > max)
        return spm_error(SPM_EFORMAT, "%s: %u %s, over the bound of %u", type, *v, what, max);
    return 0;
}

/*  Copies N little-endian u32 from P into A: one memcpy on a little-endian
    host, which is where block decoding spends its time. */
static void copy_le32(uint32_t *a, const unsigned char *p, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(a, p, n * 4);
#else
    for (size_t i = 0; i < n; i++)
        a[i] = spm_le32(p + 4 * i);
#endif
}

/*  Reads N u32 into A (allocated here, N may be 0). */
static int get_u32s(spm_cursor_t *c, const char *type, size_t n, uint32_t **a)
{
    if (spm_cursor_left(c) / 4 < n)
        return spm_error(SPM_EFORMAT, "%s: truncated block", type);
    *a = malloc((n ? n : 1) * sizeof **a);
    if (!*a)
        return spm_error(SPM_ENOMEM, "%s: out of memory", type);
    copy_le32(*a, c->p, n);
    c->p += n * 4;
    return 0;
}

static int get_u64s(spm_cursor_t *c, const char *type, size_t n, uint64_t **a)
{
    if (spm_cursor_left(c) / 8 < n)
        return spm_error(SPM_EFORMAT, "%s: truncated block", type);
    *a = malloc((n ? n : 1) * sizeof **a);
    if (!*a)
        return spm_error(SPM_ENOMEM, "%s: out of memory", type);
    for (size_t i = 0; i < n; i++, c->p += 8)
        (*a)[i] = spm_le64(c->p);
    return 0;
}

static int get_end(const spm_cursor_t *c, const char *type)
{
    if (spm_cursor_left(c) != 0)
        return spm_error(SPM_EFORMAT, "%s: %zu trailing bytes", type, spm_cursor_left(c));
    return 0;
}

static void put_u32s(spm_buf_t *b, const uint32_t *a, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    spm_buf_put(b, a, n * 4);
#else
    for (size_t i = 0; i < n; i++)
        spm_buf_put_u32(b, a[i]);
#endif
}

static void put_u64s(spm_buf_t *b, const uint64_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spm_buf_put_u64(b, a[i]);
}

/*  1 when the N items at A are strictly increasing. */
static int increasing(const uint32_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (a[i - 1] >= a[i])
            return 0;
    return 1;
}

/*  How many of the N - 1 neighbours in A do not increase: four pairs at a
    time, with no branch on them. */
static size_t not_increasing(const uint32_t *a, size_t n)
{
    typedef uint32_t v4_t __attribute__((vector_size(16)));
    v4_t down = {0};
    size_t i = 1, k = 0;
    for (; i + 4 <= n; i += 4) {
        v4_t x, y;
        memcpy(&x, a + i - 1, sizeof x);
        memcpy(&y, a + i, sizeof y);
        down -= (v4_t)(x >= y); /* a true lane is all ones: -1 */
    }
    for (; i < n; i++)
        k += a[i - 1] >= a[i];
    return k + down[0] + down[1] + down[2] + down[3];
}

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

/* ------------------------------------------------------ front-coded groups */

/*  The sets of a frequent-set block and of each group of an itemsets block
    (N sorted K-sets with counts, after their k and n) are front coded:

        u32 bytes                     what follows: the index and the sets
        u32 index[(n - 1) / RESTART]  byte offset of set RESTART x (i + 1)
        the sets                      each as LEB128 varints: how many items
                                      it shares with the set before (p < k),
                                      its item p as the gap from that set's
                                      item p, its later items as gaps from
                                      the item before (every gap less one),
                                      then its count

    A set whose index is a multiple of RESTART shares nothing and its first
    gap is its item: a slice of a group is read from the restart before it.
    Sorted sets share long prefixes and their gaps are small: the dense set
    at 5% (8,020,425 sets of 10.1 items on average) takes 5.15 bytes a set
    against 48.5 as u32 items and u64 counts, which every IEU wrote to its
    cache and the client fetched (chess at 60%: 5.14 bytes a set). A decoder cannot produce an
   unsorted set or a repeat, so reading checks only the varints, the bounds and, at a restart, the
   order against the set before. */
#define RESTART 1024u

/*  Longest encoding of a set of K items and its count. */
#define SET_MAX_BYTES(k) (((size_t)(k) + 2) * 10)

static unsigned char *put_vu(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/*  Reads a varint at *P (before END) into *V. Returns 0, or -1 when it is
    truncated or over 64 bits. */
static inline int get_vu(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    if (*p < end && **p < 0x80) {
        *v = *(*p)++;
        return 0;
    }
    uint64_t x = 0;
    for (unsigned s = 0; *p < end && s < 64; s += 7) {
        unsigned char c = *(*p)++;
        if (s == 63 && c > 1)
            return -1;
        x |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/*  Starts a group of N sets at the end of B: its size word and restart
    index, filled in as the sets come (put_set) and at the end (end_group).
    *HEAD, *BASE: where the group and its first set begin. */
static void begin_group(spm_buf_t *b, uint32_t n, size_t *head, size_t *base)
{
    size_t nidx = n ? (n - 1) / RESTART : 0;
    *head = b->len;
    spm_buf_put_u32(b, 0);
    for (size_t r = 0; r < nidx; r++)
        spm_buf_put_u32(b, 0);
    *base = b->len;
}

/*  Front codes the K items at S after Q (NULL: at a restart, sharing
    nothing) at W, then COUNT unless !HAS_COUNT, with room for
    SET_MAX_BYTES(K). Returns the end, or NULL when S is not a strictly
    increasing list after Q (a restart's order is checked by the caller). */
static unsigned char *encode_set(unsigned char *w, const uint32_t *s, const uint32_t *q, uint32_t k,
                                 int has_count, uint64_t count)
{
    uint32_t p = 0;
    uint64_t last = 0; /* the item before item p, plus one */
    if (q) {
        while (p + 1 < k && s[p] == q[p])
            p++;
        last = (uint64_t)q[p] + 1;
    }
    w = put_vu(w, p);
    for (uint32_t j = p; j < k; j++) {
        if (s[j] < last)
            return NULL;
        w = put_vu(w, s[j] - last);
        last = (uint64_t)s[j] + 1;
    }
    return has_count ? put_vu(w, count) : w;
}

/*  Appends set I (its K items at S; Q: the set before, unless I is 0) of
    the group begun at HEAD, BASE, with COUNT unless !HAS_COUNT. Returns
    0, SPM_EINVAL when S is not a strictly increasing list after Q, or
    SPM_ENOMEM. */
static int put_set(spm_buf_t *b, size_t head, size_t base, uint32_t i, const uint32_t *s,
                   const uint32_t *q, uint32_t k, int has_count, uint64_t count)
{
    if (spm_buf_reserve(b, SET_MAX_BYTES(k)) != 0)
        return SPM_ENOMEM;
    if (i % RESTART == 0 && i > 0) {
        if (spm_mining_set_cmp(q, s, k) >= 0)
            return spm_error(SPM_EINVAL, "frequent sets: set %u out of order", i);
        spm_put_le32(b->data + head + 4 * (i / RESTART), (uint32_t)(b->len - base));
    }
    unsigned char *w = encode_set(b->data + b->len, s, i % RESTART ? q : NULL, k, has_count, count);
    if (!w)
        return spm_error(SPM_EINVAL, "frequent sets: set %u unsorted or out of order", i);
    b->len = (size_t)(w - b->data);
    return 0;
}

/*  Ends the group begun at HEAD: its size. */
static int end_group(spm_buf_t *b, size_t head)
{
    if (!b->failed)
        spm_put_le32(b->data + head, (uint32_t)(b->len - head - 4));
    return b->failed ? SPM_ENOMEM : 0;
}

/*  Appends the group of the N K-sets at ITEMS (and their COUNTS, unless
    NULL) to B. Returns 0, SPM_EINVAL when the sets are not strictly
    increasing lists in strictly increasing order, or SPM_ENOMEM. */
static int put_group(spm_buf_t *b, const uint32_t *items, const uint64_t *counts, uint32_t k,
                     uint32_t n)
{
    size_t head, base;
    begin_group(b, n, &head, &base);
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *s = items + (size_t)i * k;
        int rc = put_set(b, head, base, i, s, s - k, k, counts != NULL, counts ? counts[i] : 0);
        if (rc != 0)
            return rc;
    }
    return end_group(b, head);
}

/*  Opens reader G on the group at C of N K-sets (k, n read and bounded)
    whose items go to SET, and moves C past the group. */
static int open_group(spm_cursor_t *c, const char *t, uint32_t k, uint32_t n, int counts,
                      uint32_t *set, spm_mining_group_t *g)
{
    uint32_t bytes;
    size_t nidx = n ? (n - 1) / RESTART : 0;
    if (spm_get_u32(c, &bytes) != 0 || spm_cursor_left(c) < bytes || bytes / 4 < nidx ||
        (bytes - nidx * 4) / (counts ? 3 : 2) < n)
        return spm_error(SPM_EFORMAT, "%s: truncated block", t);
    *g = (spm_mining_group_t){.idx = c->p,
                              .base = c->p + nidx * 4,
                              .p = c->p + nidx * 4,
                              .end = c->p + bytes,
                              .k = k,
                              .n = n,
                              .counts = counts,
                              .set = set,
                              .type = t};
    c->p += bytes;
    return 0;
}

/*  spm_mining_group_next for a set that is not at a restart, where every
    byte of its shared length and gaps is a one-byte varint and the group
    has room for them all: no bounds or order checks a byte (a set after
    a shared prefix is greater than the one before by construction), the
    items made as gaps are read. Returns 1 with the set read (its count
    not yet), or 0 having changed nothing but set[p..) when the slow path
    must read it. The dense set at 5%: about nine in ten sets. */
static int next_fast(spm_mining_group_t *g)
{
    const unsigned char *q = g->p;
    uint32_t p = q[0], k = g->k;
    if (p >= 0x80 || p >= k || (size_t)(g->end - q) < (size_t)(k - p) + 1)
        return 0;
    uint32_t before = g->set[p];
    uint64_t x = (uint64_t)before + 1;
    for (uint32_t j = p; j < k; j++) {
        unsigned c = *++q;
        if (c >= 0x80) {
            g->set[p] = before;
            return 0;
        }
        x += c;
        g->set[j] = (uint32_t)x++;
    }
    if (x - 1 > UINT32_MAX) {
        g->set[p] = before;
        return 0;
    }
    g->p = q + 1;
    return 1;
}

/*  Reads the count of the set G has just read (when its sets carry one)
    and moves past it. Returns 1, or SPM_EFORMAT. */
static int end_set(spm_mining_group_t *g)
{
    if (g->counts && get_vu(&g->p, g->end, &g->count) != 0)
        return spm_error(SPM_EFORMAT, "%s: set %u: truncated count", g->type, g->i);
    if (g->counts == 2 && g->count == 0)
        return spm_error(SPM_EFORMAT, "%s: set %u has support 0", g->type, g->i);
    g->i++;
    return 1;
}

int spm_mining_group_next(spm_mining_group_t *g)
{
    const char *t = g->type;
    if (g->i == g->n) {
        if (g->p != g->end)
            return spm_error(SPM_EFORMAT, "%s: %zu bytes after the last set", t,
                             (size_t)(g->end - g->p));
        return 0;
    }
    int restart = g->i % RESTART == 0, fresh = g->i == g->from, order = 0;
    uint64_t p, gap, x = 0;
    if (!restart && next_fast(g))
        return end_set(g);
    if (restart && g->i > 0 &&
        (size_t)(g->p - g->base) != spm_le32(g->idx + 4 * (g->i / RESTART - 1)))
        return spm_error(SPM_EFORMAT, "%s: set %u is not where the index says", t, g->i);
    if (get_vu(&g->p, g->end, &p) != 0 || p >= g->k || (restart && p != 0))
        return spm_error(SPM_EFORMAT, "%s: set %u: bad shared length", t, g->i);
    if (!restart)
        x = (uint64_t)g->set[p] + 1;
    order = restart && !fresh ? 0 : 1; /* 1 once greater than the set before */
    for (uint32_t j = (uint32_t)p; j < g->k; j++) {
        if (get_vu(&g->p, g->end, &gap) != 0 || gap > UINT32_MAX || (x += gap) > UINT32_MAX)
            return spm_error(SPM_EFORMAT, "%s: set %u: truncated, or an item over 2^32", t, g->i);
        if (!order && x != g->set[j]) {
            if (x < g->set[j])
                return spm_error(SPM_EFORMAT, "%s: set %u out of order", t, g->i);
            order = 1;
        }
        g->set[j] = (uint32_t)x++;
    }
    if (!order)
        return spm_error(SPM_EFORMAT, "%s: set %u repeats the one before", t, g->i);
    return end_set(g);
}

/*  Moves G to set FROM (at most n): read from the restart before it. */
static int seek_group(spm_mining_group_t *g, uint32_t from)
{
    uint32_t r = (from < g->n ? from : g->n) / RESTART;
    if (r > 0 && r * RESTART < g->n) {
        uint32_t off = spm_le32(g->idx + 4 * (r - 1));
        if (off > (size_t)(g->end - g->base))
            return spm_error(SPM_EFORMAT, "%s: a restart past the group", g->type);
        g->p = g->base + off;
        g->i = g->from = r * RESTART;
    }
    int rc = 1;
    while (g->i < from && g->i < g->n && (rc = spm_mining_group_next(g)) == 1)
        ;
    return rc < 0 ? rc : 0;
}

/*  Decodes up to COUNT sets from set FROM of reader G into S (k set, n
    read: n becomes the number decoded). */
static int get_slice(spm_mining_group_t *g, spm_mining_sets_t *s, uint32_t from, uint32_t count)
{
    uint32_t a = from < g->n ? from : g->n, m = count < g->n - a ? count : g->n - a;
    int rc;
    s->n = 0;
    if (!(s->items = malloc(((size_t)m * s->k + 1) * 4)) ||
        (g->counts && !(s->counts = malloc(((size_t)m + 1) * 8))))
        return spm_error(SPM_ENOMEM, "%s: out of memory", g->type);
    g->set = s->items; /* sets skipped are read there too */
    if (m > 0 && (rc = seek_group(g, a)) != 0)
        return rc;
    for (uint32_t i = 0; i < m; i++) {
        if ((rc = spm_mining_group_next(g)) != 1)
            return rc < 0 ? rc : spm_error(SPM_EFORMAT, "%s: truncated group", g->type);
        if (g->counts)
            s->counts[i] = g->count;
        if (i + 1 < m) /* the next set is read over a copy of this one */
            memcpy(s->items + (size_t)(i + 1) * s->k, g->set, (size_t)s->k * 4);
        g->set = s->items + (size_t)(i + 1 < m ? i + 1 : i) * s->k;
        s->n = i + 1;
    }
    /* A whole group is read to its end, which checks its last bytes. */
    if (a == 0 && m == g->n && (rc = spm_mining_group_next(g)) != 0)
        return rc < 0 ? rc : spm_error(SPM_EFORMAT, "%s: sets past the count", g->type);
    return 0;
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

/* --------------------------------------- BlockOfJoinResult, Candidates, Frequent */

int spm_mining_set_cmp(const uint32_t *a, const uint32_t *b, uint32_t k)
{
    for (uint32_t i = 0; i < k; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

long spm_mining_sets_find(const spm_mining_sets_t *b, const uint32_t *s)
{
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = spm_mining_set_cmp(b->items + mid * b->k, s, b->k);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/*  Reads the B->n sets of B->k items (and, unless a join result, their
    counts) after the header, checking each set increasing and the block
    sorted without repeats; B->k >= 1 and B->n were read and bounded. */
static int get_sets(spm_cursor_t *c, const char *t, spm_mining_sets_t *b)
{
    int rc;
    if (spm_cursor_left(c) / 4 / b->k < b->n)
        return spm_error(SPM_EFORMAT, "%s: truncated block", t);
    if ((rc = get_u32s(c, t, (size_t)b->n * b->k, &b->items)) ||
        (b->kind != SPM_MINING_KIND_JOIN && (rc = get_u64s(c, t, b->n, &b->counts))))
        return rc;
    for (uint32_t i = 0; i < b->n; i++) {
        const uint32_t *s = b->items + (size_t)i * b->k;
        if (!increasing(s, b->k) || (i > 0 && spm_mining_set_cmp(s - b->k, s, b->k) >= 0))
            return spm_error(SPM_EFORMAT, "%s: set %u unsorted or out of order", t, i);
    }
    return 0;
}

int spm_mining_sets_encode(const spm_mining_sets_t *b, void **data, size_t *len)
{
    spm_buf_t buf = {0};
    spm_buf_put_u32(&buf, set_magic[b->kind]);
    spm_buf_put_u32(&buf, b->k);
    spm_buf_put_u32(&buf, b->n);
    if (b->kind == SPM_MINING_KIND_FSETS) {
        int rc = put_group(&buf, b->items, b->counts, b->k, b->n);
        if (rc != 0) {
            spm_buf_free(&buf);
            return rc;
        }
    } else {
        put_u32s(&buf, b->items, (size_t)b->n * b->k);
        if (b->kind != SPM_MINING_KIND_JOIN)
            put_u64s(&buf, b->counts, b->n);
    }
    return spm_buf_take(&buf, data, len);
}

int spm_mining_sets_decode(spm_mining_kind_t kind, const void *data, size_t len,
                           spm_mining_sets_t *b)
{
    const char *t = set_name[kind];
    spm_cursor_t c = spm_cursor(data, len);
    memset(b, 0, sizeof *b);
    b->kind = kind;
    int rc;
    if ((rc = get_head(&c, set_magic[kind], t)) ||
        (rc = get_count(&c, t, "items per set", SPM_MINING_MAX_K, &b->k)) ||
        (rc = get_count(&c, t, "sets", SPM_MINING_MAX_ENTRIES, &b->n)))
        goto err;
    if (b->k == 0) {
        rc = spm_error(SPM_EFORMAT, "%s: empty sets (k = 0)", t);
        goto err;
    }
    if (kind == SPM_MINING_KIND_FSETS) {
        spm_mining_group_t g;
        if ((rc = open_group(&c, t, b->k, b->n, 1, NULL, &g)) || (rc = get_slice(&g, b, 0, b->n)) ||
            (rc = get_end(&c, t)))
            goto err;
        return 0;
    }
    if (spm_cursor_left(&c) / 4 / b->k < b->n) {
        rc = spm_error(SPM_EFORMAT, "%s: truncated block", t);
        goto err;
    }
    if ((rc = get_sets(&c, t, b)) || (rc = get_end(&c, t)))
        goto err;
    return 0;
err:
    spm_mining_sets_free(b);
    return rc;
}

void spm_mining_sets_free(spm_mining_sets_t *b)
{
    free(b->items);
    free(b->counts);
    b->items = NULL;
    b->counts = NULL;
    b->n = 0;
}

/* -------------------------------------------------------- BlockOfItemsets */

int spm_mining_itemsets_encode(const spm_mining_itemsets_t *b, void **data, size_t *len)
{
    spm_buf_t buf = {0};
    spm_buf_put_u32(&buf, MAGIC_ISETS);
    spm_buf_put_u32(&buf, b->nlen);
    for (uint32_t g = 0; g < b->nlen; g++) {
        const spm_mining_sets_t *s = &b->lv[g];
        spm_buf_put_u32(&buf, s->k);
        spm_buf_put_u32(&buf, s->n);
        int rc = put_group(&buf, s->items, s->counts, s->k, s->n);
        if (rc != 0) {
            spm_buf_free(&buf);
            return rc;
        }
    }
    return spm_buf_take(&buf, data, len);
}

/*  Room for sets of length K in W. */
static int isets_room(spm_mining_isets_writer_t *w, uint32_t k)
{
    if (k <= w->nlen)
        return 0;
    spm_mining_isets_len_t *g = realloc(w->len, (size_t)k * sizeof *g);
    if (!g)
        return SPM_ENOMEM;
    w->len = g;
    for (; w->nlen < k; w->nlen++)
        g[w->nlen] = (spm_mining_isets_len_t){0};
    return 0;
}

int spm_mining_isets_put(spm_mining_isets_writer_t *w, const uint32_t *set, uint32_t k,
                         uint64_t count)
{
    if (k == 0 || k > SPM_MINING_MAX_K || w->sets == SPM_MINING_MAX_ENTRIES)
        return spm_error(SPM_EINVAL, "itemsets block: a set of %u items, or over %u sets", k,
                         SPM_MINING_MAX_ENTRIES);
    if (isets_room(w, k) != 0)
        return SPM_ENOMEM;
    spm_mining_isets_len_t *g = &w->len[k - 1];
    if (!g->prev && !(g->prev = malloc((size_t)k * sizeof *g->prev)))
        return SPM_ENOMEM;
    if (spm_buf_reserve(&g->sets, SET_MAX_BYTES(k)) != 0)
        return SPM_ENOMEM;
    int restart = g->n % RESTART == 0;
    if (restart && g->n > 0) {
        if (spm_mining_set_cmp(g->prev, set, k) >= 0)
            return spm_error(SPM_EINVAL, "itemsets block: %u-set %u out of order", k, g->n);
        spm_buf_put_u32(&g->idx, (uint32_t)g->sets.len);
        if (g->idx.failed)
            return SPM_ENOMEM;
    }
    unsigned char *e =
        encode_set(g->sets.data + g->sets.len, set, restart ? NULL : g->prev, k, 1, count);
    if (!e)
        return spm_error(SPM_EINVAL, "itemsets block: %u-set %u unsorted or out of order", k, g->n);
    w->bytes += (size_t)(e - g->sets.data) - g->sets.len;
    g->sets.len = (size_t)(e - g->sets.data);
    memcpy(g->prev, set, (size_t)k * sizeof *set);
    g->n++;
    w->sets++;
    return 0;
}

uint32_t spm_mining_isets_count(const spm_mining_isets_writer_t *w, uint32_t k)
{
    return k >= 1 && k <= w->nlen ? w->len[k - 1].n : 0;
}

int spm_mining_isets_end(spm_mining_isets_writer_t *w, void **data, size_t *len)
{
    spm_buf_t b = {0};
    uint32_t nlen = 0;
    size_t total = 8;
    for (uint32_t k = 1; k <= w->nlen; k++) {
        const spm_mining_isets_len_t *g = &w->len[k - 1];
        nlen += g->n > 0;
        total += g->n > 0 ? 12 + g->idx.len + g->sets.len : 0;
    }
    if (spm_buf_reserve(&b, total) == 0) {
        spm_buf_put_u32(&b, MAGIC_ISETS);
        spm_buf_put_u32(&b, nlen);
    }
    for (uint32_t k = 1; k <= w->nlen; k++) {
        const spm_mining_isets_len_t *g = &w->len[k - 1];
        if (g->n == 0)
            continue;
        spm_buf_put_u32(&b, k);
        spm_buf_put_u32(&b, g->n);
        spm_buf_put_u32(&b, (uint32_t)(g->idx.len + g->sets.len));
        spm_buf_put(&b, g->idx.data, g->idx.len);
        spm_buf_put(&b, g->sets.data, g->sets.len);
    }
    spm_mining_isets_abort(w);
    return spm_buf_take(&b, data, len);
}

void spm_mining_isets_abort(spm_mining_isets_writer_t *w)
{
    for (uint32_t k = 0; k < w->nlen; k++) {
        spm_buf_free(&w->len[k].sets);
        spm_buf_free(&w->len[k].idx);
        free(w->len[k].prev);
    }
    free(w->len);
    *w = (spm_mining_isets_writer_t){0};
}

/*  Decodes the groups of an itemsets block: every group of length WANT, or
    every group when WANT is 0; the others are checked for their framing
    (lengths increasing, non-empty, within the bytes) and skipped. Of the
    group decoded only sets FROM .. FROM + COUNT are (its whole size goes
    to *TOTAL, when not NULL). */
static int decode_itemsets(const void *data, size_t len, uint32_t want, uint32_t from,
                           uint32_t count, spm_mining_itemsets_t *b, uint32_t *total_n)
{
    const char *t = SPM_MINING_ITEMSETS;
    spm_cursor_t c = spm_cursor(data, len);
    uint64_t total = 0;
    memset(b, 0, sizeof *b);
    uint32_t nlen, prev = 0;
    int rc;
    if ((rc = get_head(&c, MAGIC_ISETS, t)) ||
        (rc = get_count(&c, t, "lengths", SPM_MINING_MAX_K, &nlen)))
        goto err;
    /* Each group takes at least 8 bytes of header. */
    if (spm_cursor_left(&c) / 8 < nlen) {
        rc = spm_error(SPM_EFORMAT, "%s: truncated block", t);
        goto err;
    }
    if (!(b->lv = calloc((size_t)nlen + 1, sizeof *b->lv))) {
        rc = spm_error(SPM_ENOMEM, "%s: out of memory", t);
        goto err;
    }
    for (uint32_t g = 0; g < nlen; g++) {
        spm_mining_sets_t *s = &b->lv[b->nlen];
        *s = (spm_mining_sets_t){.kind = SPM_MINING_KIND_FSETS};
        if ((rc = get_count(&c, t, "items per set", SPM_MINING_MAX_K, &s->k)) ||
            (rc = get_count(&c, t, "sets", SPM_MINING_MAX_ENTRIES, &s->n)))
            goto err;
        if (s->k <= prev || s->n == 0 || (total += s->n) > SPM_MINING_MAX_ENTRIES) {
            rc = spm_error(SPM_EFORMAT, "%s: group %u: empty, out of order or too many sets", t, g);
            goto err;
        }
        prev = s->k;
        spm_mining_group_t r;
        if ((rc = open_group(&c, t, s->k, s->n, 2, NULL, &r)) != 0)
            goto err;
        if (want && s->k != want)
            continue;
        b->nlen++;
        if (total_n)
            *total_n = s->n;
        if ((rc = get_slice(&r, s, from, count)) != 0)
            goto err;
    }
    if ((rc = get_end(&c, t)) != 0)
        goto err;
    return 0;
err:
    spm_mining_itemsets_free(b);
    return rc;
}

int spm_mining_itemsets_decode(const void *data, size_t len, spm_mining_itemsets_t *b)
{
    return decode_itemsets(data, len, 0, 0, UINT32_MAX, b, NULL);
}

int spm_mining_itemsets_decode_length(const void *data, size_t len, uint32_t k,
                                      spm_mining_sets_t *b)
{
    return spm_mining_itemsets_decode_range(data, len, k, 0, UINT32_MAX, b, NULL);
}

int spm_mining_itemsets_decode_range(const void *data, size_t len, uint32_t k, uint32_t from,
                                     uint32_t count, spm_mining_sets_t *b, uint32_t *total)
{
    spm_mining_itemsets_t all;
    memset(b, 0, sizeof *b);
    b->kind = SPM_MINING_KIND_FSETS;
    b->k = k;
    if (total)
        *total = 0;
    if (k == 0)
        return spm_error(SPM_EFORMAT, "%s: sets of no items", SPM_MINING_ITEMSETS);
    int rc = decode_itemsets(data, len, k, from, count, &all, total);
    if (rc == 0 && all.nlen == 1) {
        *b = all.lv[0];
        all.nlen = 0;
    }
    spm_mining_itemsets_free(&all);
    return rc;
}

void spm_mining_itemsets_free(spm_mining_itemsets_t *b)
{
    for (uint32_t g = 0; g < b->nlen; g++)
        spm_mining_sets_free(&b->lv[g]);
    free(b->lv);
    memset(b, 0, sizeof *b);
}

/*  Opens the group whose header (k, n) is at C: reader G on set buffer SET. */
static int open_next(spm_cursor_t *c, const char *t, int counts, uint32_t prevk, uint32_t *set,
                     spm_mining_group_t *g)
{
    uint32_t k, n;
    int rc;
    if ((rc = get_count(c, t, "items per set", SPM_MINING_MAX_K, &k)) ||
        (rc = get_count(c, t, "sets", SPM_MINING_MAX_ENTRIES, &n)))
        return rc;
    if (k <= prevk || (counts == 2 && n == 0))
        return spm_error(SPM_EFORMAT, "%s: a group empty, out of order or of sets of no items", t);
    return open_group(c, t, k, n, counts, set, g);
}

int spm_mining_setrd_open(spm_mining_setrd_t *r, const void *data, size_t len, uint32_t *set)
{
    spm_cursor_t c = spm_cursor(data, len);
    uint32_t magic = 0, groups = 1, prevk = 0;
    *r = (spm_mining_setrd_t){.data = data, .len = len};
    if (spm_get_u32(&c, &magic) != 0 || (magic != MAGIC_FSETS && magic != MAGIC_ISETS))
        return spm_error(SPM_EFORMAT, "%s: bad magic (not a block of this type)",
                         SPM_MINING_ITEMSETS);
    r->itemsets = magic == MAGIC_ISETS;
    const char *t = r->itemsets ? SPM_MINING_ITEMSETS : SPM_MINING_FSETS;
    int rc;
    if (r->itemsets && (rc = get_count(&c, t, "lengths", SPM_MINING_MAX_K, &groups)) != 0)
        return rc;
    r->next = c.p;
    r->groups = groups;
    for (uint32_t i = 0; i < groups; i++) {
        spm_mining_group_t g;
        if ((rc = open_next(&c, t, r->itemsets ? 2 : 1, prevk, set, &g)) != 0)
            return rc;
        prevk = r->itemsets ? g.k : 0;
        r->maxk = g.k > r->maxk ? g.k : r->maxk;
        if ((r->total += g.n) > SPM_MINING_MAX_ENTRIES)
            return spm_error(SPM_EFORMAT, "%s: too many sets", t);
    }
    r->g.set = set;
    return get_end(&c, t);
}

int spm_mining_setrd_next(spm_mining_setrd_t *r)
{
    for (;;) {
        int rc = r->g.type ? spm_mining_group_next(&r->g) : 0;
        if (rc != 0 || r->groups == 0)
            return rc;
        const char *t = r->itemsets ? SPM_MINING_ITEMSETS : SPM_MINING_FSETS;
        spm_cursor_t c =
            spm_cursor(r->next, (size_t)((const unsigned char *)r->data + r->len - r->next));
        if ((rc = open_next(&c, t, r->itemsets ? 2 : 1, r->prevk, r->g.set, &r->g)) != 0)
            return rc;
        r->prevk = r->itemsets ? r->g.k : 0;
        r->next = c.p;
        r->groups--;
    }
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
    len, u32 pathlen, u32 namelen, the path, the name. */
#define FILE_HEAD 40

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
