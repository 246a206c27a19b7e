/*  =========================================================================
    si_eclat - the depth-first miner's SIs: MineClassBlock, CutFrequentSetBlock

    Level-wise Apriori counts every candidate of a level before it can
    generate the next one; on dense data (chess at 60%) the levels are wide
    and a candidate's subsets are all frequent, so most of its time goes to
    candidates that the tidsets of their prefix would have settled at once.
    Eclat (Zaki, 2000) walks the itemsets depth first instead: an itemset's
    transactions (its tidset) are the AND of its prefix's tidset with the
    last item's, and each prefix class is independent of every other, so a
    class of first items is one SI.

    The walk (eclat_walk.c) and the bitsets it walks (eclat_build.c) are
    in files of their own.

    Output order: the sets of each length are emitted at the nodes one
    shorter, which the walk visits in lexicographic order, so every length's
    sets come out in order with no sort, each length front coded as they
    come (spm_mining_isets_put). A job that wants the itemsets alone gets
    them in item order. With at most BY_POSITION frequent items (dense
    data) the walk then goes by the items' positions among the frequent
    items instead of by rank: the sets come out in output order, and since
    a class holds the sets whose first item is in its range, the classes'
    blocks in class order hold each length's sets in output order one after
    the other, which the client reads with no merge to speak of. On the
    dense set at 5% the walk by position makes 1.7% more candidates, and
    sorting each group by items instead (a radix sort on bitmaps of
    positions) was a third of MineClassBlock's time. On sparse data the
    rarest first items are what keeps tidsets short (T25I10D100K at 0.25%:
    0.37 s by rank, 0.88 s by position), so there the walk goes by rank and
    each group is then mapped to items and sorted, by a radix sort on the
    items' positions.
    =========================================================================
*/
#include "isa/core/keysort.h"
#include "isa/mining/eclat_int.h"
#include "isa/mining/isa.h"

#include <stdlib.h>
#include <string.h>

/*  Item order walks by position up to this many frequent items (dense
    data), else by rank and sorts each group of the block (see the top). */
#define BY_POSITION 128

static void miner_free(miner_t *m)
{
    spm_mining_isets_abort(&m->out);
    free(m->bits);
    free(m->row);
    free(m->pairs);
    free(m->plane);
    free(m->sidx);
    free(m->sw);
    free(m->set);
    free(m->pos);
    free(m->item);
    eclat_arena_free(&m->arena);
}

/*  Item order: reads the frequent items (BlockOfItems, by number) of
    operand OP; a rank's position is its index there. */
static int read_items(spm_si_ctx_t *ctx, miner_t *m, size_t op)
{
    spm_mining_items_t it;
    int rc = spm_mining_in_items(ctx, op, &it);
    if (rc != 0)
        return rc;
    if (it.n != m->f1)
        rc = spm_error(SPM_EFORMAT, "%s: operand %zu holds %u frequent items, not %u",
                       SPM_MINING_MINE_CLASS, op, it.n, m->f1);
    if (rc == 0 && (rc = spm_mining_rank_order(&it, &m->pos)) == 0) {
        m->item = it.items;
        it.items = NULL;
    }
    spm_mining_items_free(&it);
    return rc;
}

/*  The sets of a group, their length, and how many positions the keys hold. */
typedef struct {
    const uint32_t *p;
    uint32_t k, fit;
} rest_t;

/*  Orders sets X and Y of equal keys by the positions after the key. */
static int cmp_rest(uint32_t x, uint32_t y, void *arg)
{
    const rest_t *r = arg;
    return spm_mining_set_cmp(r->p + (size_t)x * r->k + r->fit, r->p + (size_t)y * r->k + r->fit,
                              r->k - r->fit);
}

/*  Puts group S (sets of ranks) in item order: each set's ranks become
    positions, sorted within the set; the sets are sorted by a key of their
    first positions packed (as many as fit in 64 bits: 6 of 1,000 items),
    then by the rest where keys tie, and copied out in that order as
    items. A, T: S->n entries each. Returns 0 or SPM_ENOMEM. */
static int to_item_order(const miner_t *m, spm_mining_sets_t *s, spm_keyed_t *a, spm_keyed_t *t)
{
    uint32_t k = s->k, n = s->n, *p = s->items, bits = 1;
    while (bits < 32 && (m->f1 - 1) >> bits)
        bits++;
    uint32_t fit = 64 / bits < k ? 64 / bits : k;
    uint32_t *items = malloc((size_t)n * k * sizeof *items);
    uint64_t *counts = malloc((size_t)n * sizeof *counts);
    if (!items || !counts) {
        free(items);
        free(counts);
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t *x = p + (size_t)i * k;
        if (m->f1 <= 256) { /* few items (long sets): through a bit mask */
            uint64_t w[4] = {0};
            for (uint32_t j = 0; j < k; j++)
                w[m->pos[x[j]] >> 6] |= 1ull << (m->pos[x[j]] & 63);
            for (uint32_t q = 0, j = 0; q < 4; q++)
                for (; w[q]; w[q] &= w[q] - 1)
                    x[j++] = q * 64 + (uint32_t)__builtin_ctzll(w[q]);
        } else {
            for (uint32_t j = 0; j < k; j++)
                x[j] = m->pos[x[j]];
            spm_mining_sort_items(x, k);
        }
        uint64_t key = 0;
        for (uint32_t j = 0; j < fit; j++)
            key |= (uint64_t)x[j] << (64 - bits * (j + 1));
        a[i] = (spm_keyed_t){.key = key, .i = i};
    }
    spm_keyed_t *o = spm_keysort(a, t, n);
    /* Sets longer than their key: a run of equal keys is put in order by
       the rest of its sets. */
    rest_t r = {p, k, fit};
    if (fit < k)
        spm_keysort_ties(o, n, cmp_rest, &r);
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *x = p + (size_t)o[i].i * k;
        for (uint32_t j = 0; j < k; j++)
            items[(size_t)i * k + j] = m->item[x[j]];
        counts[i] = s->counts[o[i].i];
    }
    free(s->items);
    free(s->counts);
    s->items = items;
    s->counts = counts;
    return 0;
}

/*  Item order walked by rank: the block of rank sets at *DATA, *LEN
    becomes one of item sets, each group put in item order. */
static int block_to_item_order(const miner_t *m, void **data, size_t *len)
{
    spm_mining_itemsets_t b;
    int rc = spm_mining_itemsets_decode(*data, *len, &b);
    size_t most = 0;
    for (uint32_t i = 0; rc == 0 && i < b.nlen; i++)
        most = b.lv[i].n > most ? b.lv[i].n : most;
    spm_keyed_t *a = rc == 0 ? malloc((most + 1) * sizeof *a) : NULL;
    spm_keyed_t *t = a ? malloc((most + 1) * sizeof *t) : NULL;
    if (rc == 0 && !t)
        rc = spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    for (uint32_t i = 0; i < b.nlen && rc == 0; i++)
        rc = to_item_order(m, &b.lv[i], a, t);
    void *d = NULL;
    size_t l = 0;
    if (rc == 0 && (rc = spm_mining_itemsets_encode(&b, &d, &l)) != 0)
        rc = spm_error(rc, "%s: out of memory", SPM_MINING_MINE_CLASS);
    if (rc == 0) {
        free(*data);
        *data = d;
        *len = l;
    }
    free(a);
    free(t);
    spm_mining_itemsets_free(&b);
    return rc;
}

/*  Writes the sets found (none when too big) and the reply: status,
    lengths, (k, sets) per length, resume point (ra, rb, rn). */
static int finish_class(spm_si_ctx_t *ctx, miner_t *m, size_t out)
{
    if (m->too_big)
        spm_mining_isets_abort(&m->out);
    uint32_t reply[5 + 2 * SPM_MINING_MAX_K], nlen = 0;
    for (uint32_t k = 1; k <= m->out.nlen; k++)
        if (spm_mining_isets_count(&m->out, k) > 0) {
            reply[2 + 2 * nlen] = k;
            reply[3 + 2 * nlen++] = spm_mining_isets_count(&m->out, k);
        }
    reply[0] = m->too_big ? 1 : m->partial == 2 ? 3 : m->partial ? 2 : 0;
    reply[1] = nlen;
    reply[2 + 2 * nlen] = m->ra;
    reply[3 + 2 * nlen] = m->rb;
    reply[4 + 2 * nlen] = m->partial == 2 ? m->rn : 0;
    void *d = NULL;
    size_t l = 0;
    int rc = spm_mining_isets_end(&m->out, &d, &l);
    if (rc != 0)
        return spm_error(rc, "%s: out of memory", SPM_MINING_MINE_CLASS);
    if (m->item && !m->by_pos && nlen > 0 && (rc = block_to_item_order(m, &d, &l)) != 0) {
        free(d);
        return rc;
    }
    if ((rc = spm_si_output(ctx, out, d, l)) != 0)
        return spm_error(rc, "operand %zu is not writable", out);
    return spm_mining_reply_u32(ctx, reply, 5 + 2 * (size_t)nlen);
}

/*  A prefix class's params, when there (see isa.h): u32 depth (0: none),
    then depth items, strictly increasing below F1, the first lo (hi =
    lo + 1), the last below slo, and u32 own (0, or 2 .. depth); then,
    optionally, u32 flags: SPM_MINING_CLASS_DEEP, SPM_MINING_CLASS_QUIET
    (only with depth >= 2 and own 0). */
static int read_prefix(spm_cursor_t *p, miner_t *m)
{
    if (spm_cursor_left(p) == 0)
        return 0;
    if (spm_get_u32(p, &m->depth) || m->depth == 1 || m->depth > SPM_MINING_MAX_DEPTH)
        return SPM_EINVAL;
    for (uint32_t k = 0; k < m->depth; k++)
        if (spm_get_u32(p, &m->pre[k]) || m->pre[k] >= m->f1 ||
            (k > 0 && m->pre[k] <= m->pre[k - 1]))
            return SPM_EINVAL;
    if (m->depth > 0 && (m->lo != m->pre[0] || m->hi != m->lo + 1 ||
                         (m->slo > 0 && m->slo <= m->pre[m->depth - 1])))
        return SPM_EINVAL;
    uint32_t flags = 0;
    if (spm_get_u32(p, &m->own) || m->own == 1 || m->own > m->depth ||
        (spm_cursor_left(p) > 0 && spm_get_u32(p, &flags)) || spm_cursor_left(p) != 0 ||
        (flags & ~(uint32_t)(SPM_MINING_CLASS_DEEP | SPM_MINING_CLASS_QUIET)) ||
        ((flags & SPM_MINING_CLASS_QUIET) && (m->depth < 2 || m->own != 0)))
        return SPM_EINVAL;
    m->deep = (flags & SPM_MINING_CLASS_DEEP) != 0;
    m->quiet = (flags & SPM_MINING_CLASS_QUIET) != 0;
    return 0;
}

/*  MineClassBlock (trans[0..m) R, [fitems R,] isets W; see isa.h). */
static int mine_class(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    miner_t m = {0};
    uint32_t cap, soft, order = 0, bits_kb = 0;
    size_t n = spm_si_noperands(ctx);
    eclat_pick_loops();
    if (spm_get_u32(&p, &m.f1) || spm_get_u64(&p, &m.minsup) || spm_get_u32(&p, &m.maxlen) ||
        spm_get_u32(&p, &m.lo) || spm_get_u32(&p, &m.hi) || spm_get_u32(&p, &m.slo) ||
        spm_get_u32(&p, &m.shi) || spm_get_u32(&p, &cap) || spm_get_u32(&p, &soft) || n < 1 ||
        m.minsup == 0 || m.f1 > SPM_MINING_MAX_ENTRIES || m.lo > m.hi || m.hi > m.f1 ||
        m.slo > m.shi || (spm_cursor_left(&p) > 0 && spm_get_u32(&p, &order)) || order > 1 ||
        (spm_cursor_left(&p) > 0 && spm_get_u32(&p, &bits_kb)) || n < 1 + order ||
        read_prefix(&p, &m) != 0)
        return spm_error(SPM_EINVAL, "%s: bad parameters or operands", SPM_MINING_MINE_CLASS);
    m.cap = cap ? cap : SPM_MINING_CLASS_CAP;
    m.bits_cap = bits_kb ? (uint64_t)bits_kb << 10 : MAX_BITS_BYTES;
    m.soft = soft ? soft : m.cap / 16;
    int rc = order ? read_items(ctx, &m, n - 2) : 0;
    m.by_pos = m.item && m.f1 <= BY_POSITION;
    if (rc == 0)
        rc = eclat_build(ctx, &m, n - 1 - order);
    if (m.depth > 0 && rc == 0 && m.maxlen != 1)
        eclat_mine_prefix(&m, m.pre, m.depth, m.slo, m.shi);
    for (uint32_t a = m.lo;
         m.depth == 0 && a < m.hi && rc == 0 && !m.rc && !m.too_big && !m.partial && m.maxlen != 1;
         a++) {
        eclat_mine_prefix(&m, &a, 1, m.slo, m.shi);
        if (!m.partial && m.bytes >= m.soft && a + 1 < m.hi) {
            m.partial = 1;
            m.ra = a + 1;
            m.rb = 0;
        }
    }
    if (rc == 0)
        rc = m.rc;
    if (rc == 0)
        rc = finish_class(ctx, &m, n - 1);
    miner_free(&m);
    return rc;
}

/*  CutFrequentSetBlock (isets[0..m) R, fsets W; u32 k, skip, take): the
    k-sets skip .. skip + take of the operands' concatenation. */
static int cut_sets(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint32_t k, skip, take;
    size_t m = spm_si_noperands(ctx);
    if (spm_get_u32(&p, &k) || spm_get_u32(&p, &skip) || spm_get_u32(&p, &take) || m < 2 ||
        k == 0 || k > SPM_MINING_MAX_K)
        return spm_error(SPM_EINVAL, "%s: bad parameters or operands", SPM_MINING_CUT_SETS);
    if (take > SPM_MINING_MAX_FSETS)
        return spm_error(SPM_ERANGE, "%s: %u sets, over the bound of %u", SPM_MINING_CUT_SETS, take,
                         SPM_MINING_MAX_FSETS);
    spm_mining_sets_t o = {.kind = SPM_MINING_KIND_FSETS, .k = k};
    o.items = malloc(((size_t)take * k + 1) * 4);
    o.counts = malloc(((size_t)take + 1) * 8);
    int rc = o.items && o.counts ? 0 : spm_error(SPM_ENOMEM, "out of memory");
    uint64_t seen = 0;
    for (size_t q = 0; q + 1 < m && rc == 0 && o.n < take; q++) {
        spm_mining_sets_t g;
        const void *d;
        size_t l;
        if ((rc = spm_si_input(ctx, q, &d, &l)) != 0) {
            rc = spm_error(rc, "operand %zu is not readable", q);
            break;
        }
        /* only the sets wanted are decoded: pieces of one group read it once */
        uint32_t from = seen < skip ? (uint32_t)(skip - seen) : 0, total;
        if ((rc = spm_mining_itemsets_decode_range(d, l, k, from, take - o.n, &g, &total)) != 0)
            break;
        seen += from < total ? from : total;
        for (uint32_t i = 0; i < g.n && rc == 0; i++, seen++) {
            const uint32_t *s = g.items + (size_t)i * k;
            if (o.n > 0 && spm_mining_set_cmp(o.items + ((size_t)o.n - 1) * k, s, k) >= 0)
                rc = spm_error(SPM_EFORMAT, "%s: operand %zu: blocks out of order",
                               SPM_MINING_CUT_SETS, q);
            memcpy(o.items + (size_t)o.n * k, s, (size_t)k * 4);
            o.counts[o.n++] = g.counts[i];
        }
        spm_mining_sets_free(&g);
    }
    if (rc == 0 && o.n < take)
        rc = spm_error(SPM_ERANGE, "%s: sets %u..%u of %llu", SPM_MINING_CUT_SETS, skip,
                       skip + take, (unsigned long long)seen);
    void *reply = NULL;
    size_t len = 0;
    if (rc == 0 && (rc = spm_mining_out_sets(ctx, m - 1, &o)) == 0 &&
        (rc = spm_mining_fsets_reply_encode(&o, &reply, &len)) == 0)
        rc = spm_si_reply(ctx, reply, len);
    free(reply);
    spm_mining_sets_free(&o);
    return rc;
}

SPM_CONSTRUCTOR(mining_si_eclat)
{
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_MINE_CLASS, .exec = mine_class});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_CUT_SETS, .exec = cut_sets});
}
