/*  =========================================================================
    eclat_build - the bitsets of the depth-first miner's class over its
    transactions

    A class of first items needs the bitsets of those items and of their
    frequent partners over every transaction of its operands (counted
    first, horizontally), the heavy transactions first with their weights
    as bit planes; under item order, by the items' positions.
    =========================================================================
*/
#include "isa/mining/eclat_int.h"

#include <stdlib.h>
#include <string.h>

/*  Largest table of pair counts one SI keeps. */
#define MAX_PAIRS_BYTES (64ull << 20)

/*  Counts the supports of the pairs {a, b} with a in [lo, hi) over the
    transactions T[0..NT), horizontally: on sparse data a transaction holds
    few pairs while a vertical AND costs the first item's support for every
    partner. Skipped (m->pairs NULL) when the rows would take over
    MAX_PAIRS_BYTES; the walk then tries every partner. */
static void count_pairs(miner_t *m, const spm_mining_trans_t *t, size_t nt)
{
    uint64_t cells = (uint64_t)(m->hi - m->lo) * (m->f1 - m->lo);
    if (cells == 0 || cells * 8 > MAX_PAIRS_BYTES || !(m->pairs = calloc(cells, 8)))
        return;
    uint32_t lo = m->lo;
    for (size_t q = 0; q < nt; q++)
        for (uint32_t i = 0; i < t[q].n; i++) {
            const uint32_t *it = t[q].items + t[q].off[i], *end = t[q].items + t[q].off[i + 1];
            uint64_t w = t[q].weight[i];
            while (it < end && *it < lo)
                it++;
            /* Four partners at a time: the exit of a loop over a varying
               number of partners is mispredicted, and is now taken a
               quarter as often (T25I10D100K at 0.6%: count_pairs 34.5 ->
               27.5 ms CPU over its 8 classes, medians of 5). */
            for (; it < end && *it < m->hi; it++) {
                uint64_t *row = pair_row(m, *it);
                const uint32_t *y = it + 1;
                for (; y + 4 <= end; y += 4) {
                    row[y[0] - lo] += w;
                    row[y[1] - lo] += w;
                    row[y[2] - lo] += w;
                    row[y[3] - lo] += w;
                }
                switch (end - y) {
                case 3:
                    row[y[2] - lo] += w;
                    /* fall through */
                case 2:
                    row[y[1] - lo] += w;
                    /* fall through */
                case 1:
                    row[y[0] - lo] += w;
                }
            }
        }
}

/*  Sets m->row to the items whose bitsets the class needs, in order, and
    returns how many: with the pair counts, each first item that has a
    frequent partner and those partners (a walk only ever extends by a
    frequent partner of its first item); without, every item from lo. On
    sparse data most first items have none (T25I10D100K at 0.6%: of the
    classes' 784 items, 3 of 8 classes need no bitset at all). */
static uint64_t need_rows(miner_t *m)
{
    for (uint32_t j = 0; j < m->f1; j++)
        m->row[j] = !m->pairs && j >= m->lo ? 0 : NO_ROW;
    for (uint32_t a = m->lo; m->pairs && a < m->hi; a++) {
        const uint64_t *pairs = pair_row(m, a);
        for (uint32_t j = m->slo > a + 1 ? m->slo : a + 1; j < m->f1; j++)
            if (pairs[j - m->lo] >= m->minsup)
                m->row[a] = m->row[j] = 0;
    }
    for (uint32_t k = 1; k < m->depth; k++) /* a prefix's items, before slo */
        m->row[m->lo] = m->row[m->pre[k]] = 0;
    uint64_t n = 0;
    for (uint32_t j = 0; j < m->f1; j++)
        if (m->row[j] != NO_ROW)
            m->row[j] = (uint32_t)n++;
    return n;
}

/*  Tids filled at once: the bits of GROUP_WORDS words of every row (a
    cache line each) are set in a small table, then ORed into the rows.
    Set in place, a transaction's items go to rows a page or more apart,
    a TLB miss each: all 784 rows of T25I10D100K at 0.6% (12.5 KB each)
    took 10 ms to fill, 4 ms on huge pages. Filling the classes' rows
    there, 2 IEUs: 19.2 -> 15.2 ms CPU over 8 classes. */
#define GROUP_WORDS 8

/*  ORs the table ACC (ROWS x GROUP_WORDS, the words of group G) into the
    bitsets, and clears it. */
static void fill_flush(miner_t *m, uint64_t *acc, uint64_t rows, uint64_t g)
{
    uint64_t from = g * GROUP_WORDS, n = m->nwords - from;
    n = n < GROUP_WORDS ? n : GROUP_WORDS;
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t *dst = m->bits + r * m->nwords + from, *src = acc + r * GROUP_WORDS;
        for (uint64_t w = 0; w < n; w++)
            dst[w] |= src[w];
    }
    memset(acc, 0, rows * GROUP_WORDS * 8);
}

/*  Sets the bits of the class's ITEMS rows, and the weights' planes, over
    the transactions of T[0..NT), NHEAVY of them heavy: tids in two passes,
    the heavy transactions' then the others', each in increasing order.
    An item without a row sets a scratch row of the table, so that each
    item is one store with no branch. */
static int fill(miner_t *m, const spm_mining_trans_t *t, size_t nt, uint64_t items, uint64_t nheavy)
{
    uint64_t *acc = calloc((items + 1) * GROUP_WORDS, 8);
    uint32_t *at = malloc(((size_t)m->f1 + 1) * 4);
    if (!acc || !at) {
        free(acc);
        free(at);
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    }
    for (uint32_t j = 0; j < m->f1; j++)
        at[j] = (uint32_t)((m->row[j] != NO_ROW ? m->row[j] : items) * GROUP_WORDS);
    for (int pass = 1; pass >= 0; pass--) {
        uint64_t tid = pass ? 0 : nheavy, g = tid / 64 / GROUP_WORDS;
        for (size_t q = 0; q < nt; q++)
            for (uint32_t i = 0; i < t[q].n; i++) {
                uint32_t w1 = t[q].weight[i] - 1;
                if ((w1 > 0) != pass)
                    continue;
                if (tid / 64 / GROUP_WORDS != g) {
                    fill_flush(m, acc, items, g);
                    g = tid / 64 / GROUP_WORDS;
                }
                for (uint32_t p = 0; p < m->nplanes; p++)
                    if (w1 >> p & 1)
                        m->plane[tid / 64 * m->npad + p] |= 1ull << (tid % 64);
                /* The items of the class are the tail (items increase). */
                uint64_t *col = acc + tid / 64 % GROUP_WORDS, bit = 1ull << (tid % 64);
                for (uint32_t b = t[q].off[i], j = t[q].off[i + 1];
                     j > b && t[q].items[j - 1] >= m->lo; j--)
                    col[at[t[q].items[j - 1]]] |= bit;
                tid++;
            }
        fill_flush(m, acc, items, g);
    }
    free(acc);
    free(at);
    return 0;
}

/*  Item order: the walk goes by position, so T's ranks become positions,
    each transaction's in increasing order: in place, or in *OWN
    (malloc'd) when T is a view of its block. */
static int to_positions(const miner_t *m, spm_mining_trans_t *t, uint32_t **own)
{
    uint32_t total = t->n ? t->off[t->n] : 0, *p = t->items;
    if (t->view && !(p = *own = malloc(((size_t)total + 1) * 4)))
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    for (uint32_t j = 0; j < total; j++)
        p[j] = m->pos[t->items[j]];
    for (uint32_t i = 0; i < t->n; i++)
        spm_mining_sort_items(p + t->off[i], t->off[i + 1] - t->off[i]);
    t->items = p;
    return 0;
}

/*  Builds the bitsets the class needs over the transactions of operands
    [0, NT), and the weights. */
int eclat_build(spm_si_ctx_t *ctx, miner_t *m, size_t nt)
{
    spm_mining_trans_t *t = calloc(nt + 1, sizeof *t);
    uint32_t **own = calloc(nt + 1, sizeof *own);
    uint64_t total = 0;
    int rc = t && own ? 0 : spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    for (size_t q = 0; q < nt && rc == 0; q++)
        if ((rc = spm_mining_in_trans_view(ctx, q, &t[q])) == 0 && !t[q].normalized)
            rc = spm_error(SPM_EFORMAT, "%s: operand %zu: transactions not normalized",
                           SPM_MINING_MINE_CLASS, q);
        else if (rc == 0)
            total += t[q].n;
    /* Items increase (normalized): only a transaction's last can be out
       of range. */
    for (size_t q = 0; q < nt && rc == 0; q++)
        for (uint32_t i = 0; i < t[q].n && rc == 0; i++)
            if (t[q].off[i + 1] > t[q].off[i] && t[q].items[t[q].off[i + 1] - 1] >= m->f1)
                rc = spm_error(SPM_EFORMAT, "%s: operand %zu: item %u is not a rank below %u",
                               SPM_MINING_MINE_CLASS, q, t[q].items[t[q].off[i + 1] - 1], m->f1);
    for (size_t q = 0; q < nt && rc == 0 && m->by_pos; q++)
        rc = to_positions(m, &t[q], &own[q]);
    m->nwords = (uint32_t)((total + 63) / 64);
    if (rc == 0)
        count_pairs(m, t, nt);
    uint64_t items = 0, bytes, nheavy = 0;
    if (rc == 0 && !(m->row = malloc(((size_t)m->f1 + 1) * 4)))
        rc = spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    if (rc == 0)
        items = need_rows(m);
    if (rc == 0 && items == 0)
        goto done; /* no first item has a frequent partner: no set to find */
    bytes = items * m->nwords * 8;
    if (rc == 0 && bytes > m->bits_cap && m->hi - m->lo >= 2) {
        m->too_big = 1; /* fewer first items need fewer partners: split */
        goto done;
    }
    if (rc == 0 && (total > UINT32_MAX - 64 || bytes > MAX_BITS_BYTES))
        rc = spm_error(SPM_ERANGE,
                       "%s: %llu transactions x %llu items make bitsets over %llu bytes (use "
                       "--algorithm apriori)",
                       SPM_MINING_MINE_CLASS, (unsigned long long)total, (unsigned long long)items,
                       MAX_BITS_BYTES);
    if (rc == 0) {
        m->bits = calloc(items * m->nwords + 1, 8);
        /* The heavy transactions (weight > 1) take the first tids, so that
           their weights are bit planes over the first words alone: a
           popcount a plane and heavy word. The dense set at 10% has 708
           heavy transactions of 2,381 (after shrinking) and 9 planes over
           12 of 38 words. MineClassBlock's time, medians of 3, where
           each heavy transaction's weight was added: dense 10% 0.177 ->
           0.138 s, chess 60% 0.053 -> 0.040 s; with the planes summed by
           AVX-512 (heavy_avx512), dense 10% 0.112 s, dense 5% 1.71 ->
           1.44 s. */
        uint32_t wmax = 1;
        for (size_t q = 0; q < nt; q++)
            for (uint32_t i = 0; i < t[q].n; i++) {
                wmax = t[q].weight[i] > wmax ? t[q].weight[i] : wmax;
                nheavy += t[q].weight[i] > 1;
            }
        while (m->nplanes < 32 && (wmax - 1) >> m->nplanes)
            m->nplanes++;
        m->nhw = (uint32_t)((nheavy + 63) / 64);
        m->npad = (m->nplanes + 7) / 8 * 8;
        m->plane = calloc((size_t)m->npad * m->nhw + 1, 8);
        m->sidx = malloc(((size_t)m->nwords + 1) * 4);
        m->sw = malloc(((size_t)m->nwords + 1) * 8);
        m->set = malloc(SPM_MINING_MAX_K * 4);
        if (!m->bits || !m->plane || !m->sidx || !m->sw || !m->set)
            rc = spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    }
    if (rc == 0)
        rc = fill(m, t, nt, items, nheavy);
done:
    for (size_t q = 0; t && q < nt; q++) {
        spm_mining_trans_free(&t[q]);
        free(own[q]);
    }
    free(t);
    free(own);
    return rc;
}
