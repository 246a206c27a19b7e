/*  =========================================================================
    sets - the mining block types that hold sorted itemsets: join results,
    candidates and frequent sets (BlockOfJoinResult, BlockOfCandidates,
    BlockOfFrequentSet), and the itemsets of depth-first mining
    (BlockOfItemsets), with the front coding they share

    Decoders copy into plain arrays (see sdb.c); a group of front-coded
    sets can also be walked in place (spm_mining_group_next), and an
    itemsets block read a set at a time (spm_mining_setrd_*).
    =========================================================================
*/
#include "isa/mining/sdb.h"
#include "isa/mining/sdb_int.h"
#include "spm/spm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t set_magic[] = {MAGIC_JOIN, MAGIC_CANDS, MAGIC_FSETS};
static const char *const set_name[] = {SPM_MINING_JOIN, SPM_MINING_CANDS, SPM_MINING_FSETS};

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
