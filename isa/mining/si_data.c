/*  =========================================================================
    si_data - the SIs of the initial stage: load, count and shrink the data

    LoadDataBlock, CountItemSupport, ShrinkItemBlock, GetFrequentItemsBlock,
    ShrinkTransactionBlock and MergeTransactionBlock (see isa.h for their
    operands). After ShrinkTransactionBlock a transaction holds only ranks of
    frequent items (rarest first, see spm_mining_rank_order), and identical transactions are one
   entry with a weight: on dense data (chess) this shrinks blocks severalfold before counting.
    =========================================================================
*/
#include "isa/core/codec.h"
#include "isa/core/keysort.h"
#include "runtime/si.h"
#include "isa/mining/fimi.h"
#include "isa/mining/isa.h"

#include <stdlib.h>
#include <string.h>

/*  Item domains up to this size are counted and ranked with direct tables. */
#define DENSE_MAX (1u << 20)

/*  Transaction order for merging duplicates: by length, then items. */
static int cmp_trans(uint32_t i, uint32_t j, void *arg)
{
    const spm_mining_trans_t *t = arg;
    uint32_t li = t->off[i + 1] - t->off[i], lj = t->off[j + 1] - t->off[j];
    if (li != lj)
        return li < lj ? -1 : 1;
    int c = spm_mining_set_cmp(t->items + t->off[i], t->items + t->off[j], li);
    return c ? c : (i < j ? -1 : i > j);
}

/*  Sorts the transactions IDX[0..M) of T into cmp_trans order: by a key of
    their length (20 bits) and first items packed (as many as fit in the
    other 44: 4 of 1,000 ranks), then by the rest where keys tie. On
    T25I10D100K a qsort of the indices was half of ShrinkTransactionBlock's
    time. A, B: M pairs of scratch. */
static void sort_trans(const spm_mining_trans_t *t, uint32_t *idx, uint32_t m, spm_keyed_t *a,
                       spm_keyed_t *b)
{
    uint32_t top = 0, bits = 1;
    for (uint32_t j = 0; t->n && j < t->off[t->n]; j++)
        top = t->items[j] > top ? t->items[j] : top;
    while (bits < 32 && top >> bits)
        bits++;
    uint32_t fit = 44 / bits;
    for (uint32_t q = 0; q < m; q++) {
        uint32_t i = idx[q], l = t->off[i + 1] - t->off[i];
        uint64_t key = (uint64_t)(l < (1u << 20) - 1 ? l : (1u << 20) - 1) << 44;
        for (uint32_t j = 0; j < fit && j < l; j++)
            key |= (uint64_t)t->items[t->off[i] + j] << (44 - bits * (j + 1));
        a[q] = (spm_keyed_t){.key = key, .i = i};
    }
    spm_keyed_t *o = spm_keysort(a, b, m);
    spm_keysort_ties(o, m, cmp_trans, (void *)t);
    for (uint32_t q = 0; q < m; q++)
        idx[q] = o[q].i;
}

/*  Sets OUT to the transactions of IN that have at least MINLEN items, in a
    canonical order with identical ones merged (weights summed). OUT's arrays
    are malloc'd. Returns 0 or SPM_ENOMEM. */
static int canonical(const spm_mining_trans_t *in, uint32_t minlen, spm_mining_trans_t *out)
{
    uint32_t *idx = malloc(((size_t)in->n + 1) * 4);
    spm_keyed_t *ka = malloc(((size_t)in->n + 1) * sizeof *ka);
    spm_keyed_t *kb = malloc(((size_t)in->n + 1) * sizeof *kb);
    memset(out, 0, sizeof *out);
    out->normalized = 1;
    out->off = malloc(((size_t)in->n + 1) * 4);
    out->weight = malloc(((size_t)in->n + 1) * 4);
    out->items = malloc(((size_t)(in->n ? in->off[in->n] : 0) + 1) * 4);
    if (!idx || !ka || !kb || !out->off || !out->weight || !out->items) {
        free(idx);
        free(ka);
        free(kb);
        spm_mining_trans_free(out);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < in->n; i++)
        if (in->off[i + 1] - in->off[i] >= minlen)
            idx[m++] = i;
    sort_trans(in, idx, m, ka, kb);
    free(ka);
    free(kb);
    out->off[0] = 0;
    for (uint32_t a = 0; a < m; a++) {
        uint32_t i = idx[a], l = in->off[i + 1] - in->off[i];
        const uint32_t *s = in->items + in->off[i];
        if (out->n > 0 && out->off[out->n] - out->off[out->n - 1] == l &&
            memcmp(out->items + out->off[out->n - 1], s, (size_t)l * 4) == 0) {
            out->weight[out->n - 1] += in->weight[i];
            continue;
        }
        memcpy(out->items + out->off[out->n], s, (size_t)l * 4);
        out->weight[out->n] = in->weight[i];
        out->off[out->n + 1] = out->off[out->n] + l;
        out->n++;
    }
    free(idx);
    return 0;
}

/*  Sorts each transaction of T and drops its repeated items, in place;
    sets T normalized. Returns one past the largest item (0: none). */
static uint32_t normalize(spm_mining_trans_t *t)
{
    uint32_t w = 0, start = 0, hi = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t *a = t->items + start, l = t->off[i + 1] - start, m = 0, down = 0;
        start = t->off[i + 1];
        /* Files mostly list a transaction's items in order already:
           such a transaction stays where it is, with no branch per item. */
        for (uint32_t j = 1; j < l; j++)
            down += a[j] <= a[j - 1];
        if (down == 0 && w == t->off[i]) {
            w += l;
            hi = l > 0 && a[l - 1] + 1 > hi ? a[l - 1] + 1 : hi;
            continue;
        }
        spm_mining_sort_items(a, l);
        for (uint32_t j = 0; j < l; j++)
            if (m == 0 || a[j] != a[m - 1])
                a[m++] = a[j];
        memmove(t->items + w, a, (size_t)m * 4);
        t->off[i] = w;
        w += m;
        hi = m > 0 && a[m - 1] + 1 > hi ? a[m - 1] + 1 : hi;
    }
    if (t->n > 0)
        t->off[t->n] = w;
    t->normalized = 1;
    return hi;
}

static int reply_trans(spm_si_ctx_t *ctx, const spm_mining_trans_t *t)
{
    uint32_t r[2] = {t->n, t->n ? t->off[t->n] : 0};
    return spm_mining_reply_u32(ctx, r, 2);
}

/*  The staged block of operand 0, lines of text (staged, or read from the
    file in place) parsed or a transaction block decoded, into *T. */
static int staged_trans(spm_si_ctx_t *ctx, spm_mining_trans_t *t)
{
    const void *d;
    size_t l;
    spm_mining_text_t x;
    int rc = spm_si_input(ctx, 0, &d, &l);
    if (rc != 0)
        return spm_error(rc, "operand 0 is not readable");
    if (spm_mining_file_is(d, l)) {
        spm_mining_file_t f;
        if (!spm_si_local_files())
            return spm_error(SPM_EDENIED,
                             "%s: only an embedded VM's IEUs read input files in place",
                             SPM_MINING_LOAD);
        return (rc = spm_mining_file_view(d, l, &f)) != 0 ? rc : spm_mining_fimi_read(&f, t);
    }
    if (!spm_mining_text_is(d, l))
        return spm_mining_trans_decode(d, l, t);
    if ((rc = spm_mining_text_view(d, l, &x)) != 0)
        return rc;
    return spm_mining_fimi_parse(&x, t);
}

/*  LoadDataBlock (staged R, raw W; u32 s). */
static int load(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint32_t s;
    spm_mining_trans_t t;
    if (spm_get_u32(&p, &s) != 0)
        return spm_error(SPM_EINVAL, "%s: missing parameter s", SPM_MINING_LOAD);
    int rc = staged_trans(ctx, &t);
    if (rc != 0)
        return rc;
    if (t.n > s) {
        rc = spm_error(SPM_EFORMAT, "%s: %u transactions, over the block size %u", SPM_MINING_LOAD,
                       t.n, s);
        goto out;
    }
    uint32_t hi = normalize(&t);
    uint32_t w = t.n ? t.off[t.n] : 0;
    uint32_t r[3] = {t.n, w, hi};
    if ((rc = spm_mining_out_trans(ctx, 1, &t)) == 0)
        rc = spm_mining_reply_u32(ctx, r, 3);
out:
    spm_mining_trans_free(&t);
    return rc;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*  Sorted (item, count) pairs: the weighted item counts of a block. */
typedef struct {
    uint32_t n;      /* distinct items */
    uint32_t *item;  /* n increasing items */
    uint64_t *count; /* n counts */
} tally_t;

static void tally_free(tally_t *t)
{
    free(t->item);
    free(t->count);
}

/*  Counts the items of T (all below DOMAIN) with their weights: a direct
    table for a small domain, else sorted (item, weight) pairs. */
static int tally(const spm_mining_trans_t *t, uint64_t domain, tally_t *out)
{
    size_t total = t->n ? t->off[t->n] : 0, m = 0;
    memset(out, 0, sizeof *out);
    for (size_t j = 0; j < total; j++)
        if (t->items[j] >= domain)
            return spm_error(SPM_ERANGE, "item %u outside the domain [0, %llu)", t->items[j],
                             (unsigned long long)domain);
    int dense = domain <= DENSE_MAX;
    uint64_t *acc = dense ? calloc(domain + 1, 8) : malloc((total + 1) * 8);
    out->item = malloc((total + 1) * 4);
    out->count = malloc((total + 1) * 8);
    if (!acc || !out->item || !out->count) {
        free(acc);
        tally_free(out);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < t->n; i++)
        for (uint32_t j = t->off[i]; j < t->off[i + 1]; j++)
            if (dense)
                acc[t->items[j]] += t->weight[i];
            else
                acc[m++] = (uint64_t)t->items[j] << 32 | t->weight[i];
    if (dense) {
        for (uint64_t v = 0; v < domain; v++)
            if (acc[v]) {
                out->item[out->n] = (uint32_t)v;
                out->count[out->n++] = acc[v];
            }
    } else {
        qsort(acc, m, 8, cmp_u64);
        for (size_t a = 0; a < m; a++) {
            uint32_t v = (uint32_t)(acc[a] >> 32);
            if (out->n == 0 || out->item[out->n - 1] != v) {
                out->item[out->n] = v;
                out->count[out->n++] = 0;
            }
            out->count[out->n - 1] += (uint32_t)acc[a];
        }
    }
    free(acc);
    return 0;
}

/*  Decodes the transaction blocks of operands [FROM, TO) into one block
 *ALL (arrays malloc'd; free with spm_mining_trans_free). */
static int concat_trans(spm_si_ctx_t *ctx, size_t from, size_t to, spm_mining_trans_t *all)
{
    spm_mining_trans_t b;
    size_t cap = 0, icap = 0;
    int rc = 0;
    memset(all, 0, sizeof *all);
    all->normalized = 1;
    for (size_t q = from; q < to && rc == 0; q++) {
        if ((rc = spm_mining_in_trans_view(ctx, q, &b)) != 0)
            break;
        size_t items = all->n ? all->off[all->n] : 0, add = b.n ? b.off[b.n] : 0;
        if (all->n + b.n + 1 > cap || items + add + 1 > icap) {
            cap = (all->n + b.n + 1) * 2;
            icap = (items + add + 1) * 2;
            uint32_t *o = realloc(all->off, cap * 4), *w = realloc(all->weight, cap * 4);
            uint32_t *it = realloc(all->items, icap * 4);
            all->off = o ? o : all->off;
            all->weight = w ? w : all->weight;
            all->items = it ? it : all->items;
            if (!o || !w || !it)
                rc = spm_error(SPM_ENOMEM, "out of memory");
        }
        if (rc == 0) {
            all->off[0] = 0;
            all->normalized &= b.normalized;
            memcpy(all->items + items, b.items, add * 4);
            for (uint32_t i = 0; i < b.n; i++) {
                all->weight[all->n + i] = b.weight[i];
                all->off[all->n + i + 1] = (uint32_t)items + b.off[i + 1];
            }
            all->n += b.n;
        }
        spm_mining_trans_free(&b);
    }
    if (rc != 0)
        spm_mining_trans_free(all);
    return rc;
}

/*  CountItemSupport (raw[0..r) R, items[0..P) ACC; u32 P, u32 width). */
static int count_items(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint32_t np, width;
    size_t m = spm_si_noperands(ctx);
    if (spm_get_u32(&p, &np) || spm_get_u32(&p, &width) || np == 0 || width == 0 ||
        m < (size_t)np + 1)
        return spm_error(SPM_EINVAL, "%s: bad parameters", SPM_MINING_COUNT_ITEMS);
    size_t nraw = m - np;
    spm_mining_trans_t t;
    tally_t c;
    int rc = concat_trans(ctx, 0, nraw, &t);
    if (rc != 0)
        return rc;
    if ((rc = tally(&t, (uint64_t)np * width, &c)) != 0)
        goto out_t;
    uint32_t a = 0;
    for (uint32_t q = 0; q < np && rc == 0; q++) {
        /* The last partition may reach past 2^32 - 1: clamp (items are below). */
        uint64_t hi = (uint64_t)q * width + width;
        spm_mining_items_t b = {.lo = q * width, .hi = hi > UINT32_MAX ? UINT32_MAX : (uint32_t)hi};
        b.items = c.item + a;
        b.counts = c.count + a;
        while (a < c.n && c.item[a] < b.hi)
            a++, b.n++;
        rc = spm_mining_out_items(ctx, nraw + q, &b);
    }
    tally_free(&c);
out_t:
    spm_mining_trans_free(&t);
    return rc;
}

/*  ShrinkItemBlock (items RW; u64 minsup). */
static int shrink_items(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint64_t minsup;
    if (spm_get_u64(&p, &minsup) != 0)
        return spm_error(SPM_EINVAL, "%s: missing minsup", SPM_MINING_SHRINK_ITEMS);
    spm_mining_items_t b;
    int rc = spm_mining_in_items(ctx, 0, &b);
    if (rc != 0)
        return rc;
    uint32_t m = 0;
    for (uint32_t i = 0; i < b.n; i++)
        if (b.counts[i] >= minsup) {
            b.items[m] = b.items[i];
            b.counts[m++] = b.counts[i];
        }
    b.n = m;
    if ((rc = spm_mining_out_items(ctx, 0, &b)) == 0)
        rc = spm_mining_reply_u32(ctx, &m, 1);
    spm_mining_items_free(&b);
    return rc;
}

/*  GetFrequentItemsBlock (items[0..P) R, fitems W, fsets W). */
static int frequent_items(spm_si_ctx_t *ctx)
{
    size_t np = spm_si_noperands(ctx);
    if (np < 3)
        return spm_error(SPM_EINVAL, "%s: needs at least 3 operands", SPM_MINING_FREQ_ITEMS);
    np -= 2;
    spm_mining_items_t all = {0}, b;
    spm_mining_sets_t f = {.kind = SPM_MINING_KIND_FSETS, .k = 1};
    int rc = 0;
    size_t cap = 0;
    for (size_t q = 0; q < np && rc == 0; q++) {
        if ((rc = spm_mining_in_items(ctx, q, &b)) != 0)
            break;
        if (q > 0 && b.lo < all.hi)
            rc = spm_error(SPM_EFORMAT, "%s: partitions out of order", SPM_MINING_FREQ_ITEMS);
        if (q == 0)
            all.lo = b.lo;
        all.hi = b.hi;
        if (rc == 0 && all.n + b.n > cap) {
            cap = (all.n + b.n) * 2;
            uint32_t *i2 = realloc(all.items, cap * 4);
            if (i2)
                all.items = i2;
            uint64_t *c2 = realloc(all.counts, cap * 8);
            if (c2)
                all.counts = c2;
            if (!i2 || !c2)
                rc = spm_error(SPM_ENOMEM, "out of memory");
        }
        if (rc == 0 && b.n) { /* no memcpy from or to NULL, even of 0 bytes */
            memcpy(all.items + all.n, b.items, (size_t)b.n * 4);
            memcpy(all.counts + all.n, b.counts, (size_t)b.n * 8);
            all.n += b.n;
        }
        spm_mining_items_free(&b);
    }
    uint32_t *order = NULL;
    if (rc == 0 && (rc = spm_mining_rank_order(&all, &order)) == 0) {
        f.n = all.n;
        f.items = malloc(((size_t)all.n + 1) * 4);
        f.counts = malloc(((size_t)all.n + 1) * 8);
        if (!f.items || !f.counts)
            rc = spm_error(SPM_ENOMEM, "out of memory");
        for (uint32_t r = 0; rc == 0 && r < all.n; r++) {
            f.items[r] = r;
            f.counts[r] = all.counts[order[r]];
        }
    }
    free(order);
    if (rc == 0 && (rc = spm_mining_out_items(ctx, np, &all)) == 0 &&
        (rc = spm_mining_out_sets(ctx, np + 1, &f)) == 0)
        rc = spm_mining_reply_u32(ctx, &all.n, 1);
    spm_mining_sets_free(&f);
    spm_mining_items_free(&all);
    return rc;
}

/*  Index of item V among the sorted frequent items F, or -1. */
static long index_of(const spm_mining_items_t *f, uint32_t v)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->items[mid] == v)
            return (long)mid;
        if (f->items[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/*  Sorts the ranks of every transaction of T at once (each transaction's
    distinct, all below NRANKS): a counting sort of the block's (rank,
    transaction) pairs by rank, which lists each rank's transactions in
    order, then each rank written back, in increasing order, to the
    transactions listed for it. Sorting each transaction by itself (a
    bitmap of its ranks read back, or an insertion sort) was most of
    ShrinkTransactionBlock's time on T25I10D100K, in mispredicted branches.
    Returns 0 or SPM_ENOMEM. */
static int sort_block(spm_mining_trans_t *t, uint32_t nranks)
{
    size_t total = t->n ? t->off[t->n] : 0;
    uint32_t *end = calloc((size_t)nranks + 1, 4), *tid = malloc((total + 1) * 4),
             *at = malloc(((size_t)t->n + 1) * 4);
    if (!end || !tid || !at) {
        free(end);
        free(tid);
        free(at);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    for (size_t j = 0; j < total; j++)
        end[t->items[j] + 1]++;
    for (uint32_t r = 1; r <= nranks; r++)
        end[r] += end[r - 1];
    /* end[r]: where rank r's list starts; after the scatter, where it ends */
    for (uint32_t i = 0; i < t->n; i++)
        for (uint32_t j = t->off[i]; j < t->off[i + 1]; j++)
            tid[end[t->items[j]]++] = i;
    memcpy(at, t->off, (size_t)t->n * 4);
    for (uint32_t r = 0, p = 0; r < nranks; r++)
        for (; p < end[r]; p++)
            t->items[at[tid[p]]++] = r;
    free(end);
    free(tid);
    free(at);
    return 0;
}

/*  ShrinkTransactionBlock (raw R, fitems R, trans W). */
static int shrink_trans(spm_si_ctx_t *ctx)
{
    spm_mining_trans_t t, out;
    spm_mining_items_t f;
    uint32_t *order = NULL, *rank = NULL;
    int32_t *table = NULL;
    int rc = spm_mining_in_trans(ctx, 0, &t);
    if (rc != 0)
        return rc;
    if ((rc = spm_mining_in_items(ctx, 1, &f)) != 0)
        goto out_t;
    if ((rc = spm_mining_rank_order(&f, &order)) != 0)
        goto out_f;
    if (!(rank = malloc(((size_t)f.n + 1) * 4))) {
        rc = spm_error(SPM_ENOMEM, "out of memory");
        goto out_f;
    }
    for (uint32_t r = 0; r < f.n; r++)
        rank[order[r]] = r;
    /* A direct item -> rank table when the domain is small. */
    if (f.hi <= DENSE_MAX && (table = malloc(((size_t)f.hi + 1) * 4))) {
        memset(table, 0xff, ((size_t)f.hi + 1) * 4);
        for (uint32_t i = 0; i < f.n; i++)
            table[f.items[i]] = (int32_t)rank[i];
    }
    /* sort_block below needs each transaction's ranks distinct */
    if (!t.normalized)
        normalize(&t);
    uint32_t w = 0, start = 0;
    for (uint32_t i = 0; i < t.n; i++) {
        uint32_t end = t.off[i + 1];
        t.off[i] = w;
        /* w <= j: each rank is stored where it may be overwritten next,
            with no branch on whether the item is frequent (mispredicted
            about as often as not near the minimum support) */
        for (uint32_t j = start; table && j < end; j++) {
            int32_t r = t.items[j] < f.hi ? table[t.items[j]] : -1;
            t.items[w] = (uint32_t)r;
            w += r >= 0;
        }
        for (uint32_t j = start; !table && j < end; j++) {
            long r = index_of(&f, t.items[j]);
            if (r >= 0)
                t.items[w++] = rank[r];
        }
        start = end;
    }
    if (t.n > 0)
        t.off[t.n] = w;
    if ((rc = sort_block(&t, f.n)) != 0)
        goto out_f;
    if ((rc = canonical(&t, 2, &out)) == 0) {
        if ((rc = spm_mining_out_trans(ctx, 2, &out)) == 0)
            rc = reply_trans(ctx, &out);
        spm_mining_trans_free(&out);
    }
out_f:
    free(table);
    free(rank);
    free(order);
    spm_mining_items_free(&f);
out_t:
    spm_mining_trans_free(&t);
    return rc;
}

/*  MergeTransactionBlock (trans RW, trans[1..m) R). */
static int merge_trans(spm_si_ctx_t *ctx)
{
    spm_mining_trans_t all, out;
    int rc = concat_trans(ctx, 0, spm_si_noperands(ctx), &all);
    if (rc != 0)
        return rc;
    if ((rc = canonical(&all, 0, &out)) == 0) {
        if ((rc = spm_mining_out_trans(ctx, 0, &out)) == 0)
            rc = reply_trans(ctx, &out);
        spm_mining_trans_free(&out);
    }
    spm_mining_trans_free(&all);
    return rc;
}

SPM_CONSTRUCTOR(mining_si_data)
{
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_LOAD, .exec = load});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_COUNT_ITEMS, .exec = count_items});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_SHRINK_ITEMS, .exec = shrink_items});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_FREQ_ITEMS, .exec = frequent_items});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_SHRINK_TRANS, .exec = shrink_trans});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_MERGE_TRANS, .exec = merge_trans});
}
