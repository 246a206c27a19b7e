/*  =========================================================================
    count - support counting of candidate itemsets over transactions

    The tree is stored level by level. Because candidates arrive sorted,
    edge e of level d leads to node e of level d + 1, and edge e of the last
    level is candidate e, so a level is just two arrays: the items of its
    edges and, per node, the index of its first edge. The walk is a merge of
    a node's sorted edge items with the rest of the sorted transaction.
    =========================================================================
*/
#include "isa/mining/count.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "spm/spm.h"

/*  Direct tables are used while they stay this small relative to the block,
    since each SI builds its tree anew. */
#define TABLE_MIN (1u << 16)
#define TABLE_PER_SET 16u
/*  Nodes with at least this many children get a direct row. */
#define DENSE_CHILDREN 16u

struct spm_mining_trie {
    uint32_t k;       /* items per candidate */
    uint32_t domain;  /* items are below this; 0: unknown */
    uint32_t **first; /* per level: node i's edges are first[d][i] .. first[d][i + 1] */
    uint32_t **item;  /* per level: the item of each edge */
    uint32_t *nnode;  /* per level: number of nodes */
    int32_t *root;    /* domain entries: root edge of an item, or -1 (NULL: none) */
    int32_t *last;    /* nnode[k - 1] rows of domain entries: candidate, or -1 */
    int32_t **row;    /* per level >= 1: node -> its dense row in dense[], or -1 */
    int32_t *dense;   /* rows of domain entries: edge of an item, or -1 */
    uint32_t *pos;    /* domain entries: 1 + position of the item in the current
                         transaction, 0 when absent (all 0 between calls) */
};

void spm_mining_trie_destroy(spm_mining_trie_t **self_p)
{
    spm_mining_trie_t *t = *self_p;
    if (!t)
        return;
    for (uint32_t d = 0; d < t->k; d++) {
        if (t->first)
            free(t->first[d]);
        if (t->item)
            free(t->item[d]);
        if (t->row)
            free(t->row[d]);
    }
    free(t->row);
    free(t->dense);
    free(t->first);
    free(t->item);
    free(t->nnode);
    free(t->root);
    free(t->last);
    free(t->pos);
    free(t);
    *self_p = NULL;
}

/*  Fills a direct table of ROWS x domain for level D (-1 where no edge). */
static int32_t *table(const spm_mining_trie_t *t, uint32_t d)
{
    size_t rows = t->nnode[d];
    int32_t *tab = malloc(rows * t->domain * sizeof *tab);
    if (!tab)
        return NULL;
    memset(tab, 0xff, rows * t->domain * sizeof *tab);
    for (size_t r = 0; r < rows; r++)
        for (uint32_t e = t->first[d][r]; e < t->first[d][r + 1]; e++)
            if (t->item[d][e] < t->domain)
                tab[r * t->domain + t->item[d][e]] = (int32_t)e;
    return tab;
}

/*  Gives the nodes of levels >= 1 with many children a direct row over the
    domain, level by level, within a budget of cells. */
static int dense_rows(spm_mining_trie_t *t, uint32_t n)
{
    size_t budget = (size_t)TABLE_PER_SET * n > TABLE_MIN ? (size_t)TABLE_PER_SET * n : TABLE_MIN;
    size_t rows = 0, max = budget / t->domain;
    for (uint32_t d = 1; d < t->k; d++) {
        if (!(t->row[d] = malloc(((size_t)t->nnode[d] + 1) * sizeof **t->row)))
            return -1;
        for (uint32_t v = 0; v < t->nnode[d]; v++) {
            uint32_t m = t->first[d][v + 1] - t->first[d][v];
            int dense = m >= DENSE_CHILDREN && rows < max && !(d == t->k - 1 && t->last);
            t->row[d][v] = dense ? (int32_t)rows++ : -1;
        }
    }
    if (rows == 0)
        return 0;
    if (!(t->dense = malloc(rows * t->domain * sizeof *t->dense)))
        return -1;
    memset(t->dense, 0xff, rows * t->domain * sizeof *t->dense);
    for (uint32_t d = 1; d < t->k; d++)
        for (uint32_t v = 0; v < t->nnode[d]; v++)
            if (t->row[d][v] >= 0)
                for (uint32_t e = t->first[d][v]; e < t->first[d][v + 1]; e++)
                    if (t->item[d][e] < t->domain)
                        t->dense[(size_t)t->row[d][v] * t->domain + t->item[d][e]] = (int32_t)e;
    return 0;
}

spm_mining_trie_t *spm_mining_trie_new(const uint32_t *sets, uint32_t k, uint32_t n,
                                       uint32_t domain)
{
    spm_mining_trie_t *t = calloc(1, sizeof *t);
    if (!t || k == 0)
        goto err;
    t->k = k;
    t->domain = domain;
    t->first = calloc(k, sizeof *t->first);
    t->item = calloc(k, sizeof *t->item);
    t->nnode = calloc(k, sizeof *t->nnode);
    t->row = calloc(k, sizeof *t->row);
    uint32_t *ne = calloc(k, sizeof *ne); /* edges so far per level */
    if (!t->first || !t->item || !t->nnode || !ne || !t->row) {
        free(ne);
        goto err;
    }
    for (uint32_t d = 0; d < k; d++) {
        t->first[d] = malloc(((size_t)n + 2) * sizeof **t->first);
        t->item[d] = malloc(((size_t)n + 1) * sizeof **t->item);
        if (!t->first[d] || !t->item[d]) {
            free(ne);
            goto err;
        }
    }
    t->first[0][0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *c = sets + (size_t)i * k;
        uint32_t d = 0; /* first level where candidate i leaves i - 1's path */
        if (i > 0)
            while (d < k - 1 && c[d] == (c - k)[d])
                d++;
        for (; d < k; d++) {
            t->item[d][ne[d]] = c[d];
            if (d + 1 < k)
                t->first[d + 1][ne[d]] = ne[d + 1];
            ne[d]++;
        }
    }
    t->nnode[0] = 1;
    for (uint32_t d = 0; d < k; d++) {
        if (d > 0)
            t->nnode[d] = ne[d - 1];
        t->first[d][t->nnode[d]] = ne[d];
    }
    free(ne);
    if (domain > 0) {
        if (!(t->pos = calloc(domain, sizeof *t->pos)) || !(t->root = table(t, 0)))
            goto err;
        size_t cells = (size_t)t->nnode[k - 1] * domain;
        if (k > 1 && (cells <= TABLE_MIN || cells <= (size_t)TABLE_PER_SET * n) &&
            !(t->last = table(t, k - 1)))
            goto err;
        if (dense_rows(t, n) != 0)
            goto err;
    }
    return t;
err:
    spm_mining_trie_destroy(&t);
    return NULL;
}

/*  Counts the candidates below NODE of level D in IT[from..len). Each node
    costs the smaller of its number of children (each looked up in the
    transaction's position table) and the number of items left (each looked
    up in the level's hash, or the last level's direct table). */
static void walk(const spm_mining_trie_t *t, uint32_t d, uint32_t node, const uint32_t *it,
                 uint32_t from, uint32_t len, uint64_t w, uint64_t *counts)
{
    uint32_t need = t->k - 1 - d; /* items the path needs after this level's */
    if (len < need + from + 1)
        return;
    uint32_t stop = len - need, e = t->first[d][node], eend = t->first[d][node + 1];
    const uint32_t *item = t->item[d];
    int last = d == t->k - 1;
    if (t->pos && eend - e <= stop - from) {
        /* Few children: find each in the transaction. */
        for (; e < eend; e++) {
            uint32_t p = t->pos[item[e]];
            if (p == 0 || p - 1 < from || p - 1 >= stop)
                continue;
            if (last)
                counts[e] += w;
            else
                walk(t, d + 1, e, it, p, len, w, counts);
        }
        return;
    }
    if (last && t->last) {
        const int32_t *row = t->last + (size_t)node * t->domain;
        for (uint32_t y = from; y < len; y++)
            if (it[y] < t->domain && row[it[y]] >= 0)
                counts[row[it[y]]] += w;
        return;
    }
    if (d > 0 && t->row[d] && t->row[d][node] >= 0) {
        /* Many children, few items left: look each item up. */
        const int32_t *row = t->dense + (size_t)t->row[d][node] * t->domain;
        for (uint32_t y = from; y < stop; y++) {
            int32_t c = it[y] < t->domain ? row[it[y]] : -1;
            if (c < 0)
                continue;
            if (last)
                counts[c] += w;
            else
                walk(t, d + 1, (uint32_t)c, it, y + 1, len, w, counts);
        }
        return;
    }
    while (e < eend && from < stop) { /* no table: merge */
        if (item[e] < it[from]) {
            e++;
        } else if (item[e] > it[from]) {
            from++;
        } else {
            if (last)
                counts[e] += w;
            else
                walk(t, d + 1, e, it, from + 1, len, w, counts);
            e++;
            from++;
        }
    }
}

void spm_mining_trie_count(spm_mining_trie_t *t, const uint32_t *items, uint32_t len, uint64_t w,
                           uint64_t *counts)
{
    if (len < t->k)
        return;
    if (!t->root) {
        walk(t, 0, 0, items, 0, len, w, counts);
        return;
    }
    for (uint32_t y = 0; y < len; y++)
        if (items[y] < t->domain)
            t->pos[items[y]] = y + 1;
    uint32_t stop = len - (t->k - 1);
    for (uint32_t y = 0; y < stop; y++) {
        if (items[y] >= t->domain)
            continue;
        int32_t e = t->root[items[y]];
        if (e < 0)
            continue;
        if (t->k == 1)
            counts[e] += w;
        else
            walk(t, 1, (uint32_t)e, items, y + 1, len, w, counts);
    }
    for (uint32_t y = 0; y < len; y++)
        if (items[y] < t->domain)
            t->pos[items[y]] = 0;
}

/* --------------------------------------------------------- vertical bitsets */

struct spm_mining_vert {
    const uint32_t *sets; /* the candidates, borrowed */
    uint32_t k, n, domain;
    uint32_t cap, words; /* transactions one chunk holds; its 64-bit words */
    uint32_t held;       /* transactions in the chunk */
    uint32_t rows;       /* items that occur in some candidate */
    int32_t *slot;       /* item -> row of bits, or -1: items of no candidate */
    uint64_t *bits;      /* one row of WORDS per used item */
    uint64_t *heavy;     /* transactions of weight > 1 */
    uint32_t *weight;    /* their weights */
    uint64_t *acc;       /* acc[d]: AND of the rows of items 0..d of the set */
    uint32_t *nz, *nnz;  /* nz[d][0..nnz[d]): the non-zero words of acc[d]; nz[k]: scratch */
    uint8_t *full;       /* full[d]: acc[d] was computed over every word */
};

spm_mining_vert_t *spm_mining_vert_new(const uint32_t *sets, uint32_t k, uint32_t n,
                                       uint32_t domain, uint32_t cap)
{
    if (k == 0 || domain == 0 || cap == 0)
        return NULL;
    spm_mining_vert_t *v = calloc(1, sizeof *v);
    if (!v || !(v->slot = malloc((size_t)domain * 4))) {
        free(v);
        return NULL;
    }
    memset(v->slot, 0xff, (size_t)domain * 4);
    for (size_t j = 0; j < (size_t)n * k; j++)
        if (sets[j] < domain && v->slot[sets[j]] < 0)
            v->slot[sets[j]] = (int32_t)v->rows++;
    v->sets = sets;
    v->k = k;
    v->n = n;
    v->domain = domain;
    v->words = (cap + 63) / 64;
    v->cap = v->words * 64;
    v->bits = calloc((size_t)v->rows * v->words + 1, 8);
    v->heavy = calloc((size_t)v->words + 1, 8);
    v->weight = malloc((size_t)v->cap * 4);
    v->acc = malloc(((size_t)k * v->words + 1) * 8);
    v->nz = malloc(((size_t)(k + 1) * v->words + 1) * 4);
    v->nnz = calloc(k, 4);
    v->full = calloc(k, 1);
    if (!v->bits || !v->heavy || !v->weight || !v->acc || !v->nz || !v->nnz || !v->full)
        spm_mining_vert_destroy(&v);
    return v;
}

uint32_t spm_mining_vert_add(spm_mining_vert_t *v, const uint32_t *off, const uint32_t *items,
                             const uint32_t *weight, uint32_t nt)
{
    uint32_t take = nt < v->cap - v->held ? nt : v->cap - v->held;
    for (uint32_t i = 0; i < take; i++) {
        uint32_t t = v->held + i;
        uint64_t bit = 1ull << (t % 64);
        for (uint32_t j = off[i]; j < off[i + 1]; j++) {
            int32_t s = items[j] < v->domain ? v->slot[items[j]] : -1;
            if (s >= 0)
                v->bits[(size_t)s * v->words + t / 64] |= bit;
        }
        v->weight[t] = weight[i];
        if (weight[i] > 1)
            v->heavy[t / 64] |= bit;
    }
    v->held += take;
    return take;
}

/*  Popcount of A AND B over N words: the inner loop of the vertical count
    where a prefix occurs in most words. AVX-512 with its 64-bit lane
    popcount where the CPU has it (picked once), else the plain loop. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define HAVE_AVX512_POPCNT 1
__attribute__((target("avx512f,avx512vpopcntdq"))) static uint64_t
and_popcount_avx512(const uint64_t *a, const uint64_t *b, uint32_t n)
{
    __m512i acc = _mm512_setzero_si512();
    uint32_t w = 0;
    for (; w + 8 <= n; w += 8)
        acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(_mm512_and_si512(
                                        _mm512_loadu_si512(a + w), _mm512_loadu_si512(b + w))));
    uint64_t sum = (uint64_t)_mm512_reduce_add_epi64(acc);
    for (; w < n; w++)
        sum += (uint64_t)__builtin_popcountll(a[w] & b[w]);
    return sum;
}
#endif

/*  Built with and without the POPCNT instruction (target_clones): the
    loader picks the one the CPU runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
static uint64_t
and_popcount_plain(const uint64_t *a, const uint64_t *b, uint32_t n)
{
    uint64_t sum = 0;
    for (uint32_t w = 0; w < n; w++)
        sum += (uint64_t)__builtin_popcountll(a[w] & b[w]);
    return sum;
}

typedef uint64_t (*and_popcount_fn)(const uint64_t *, const uint64_t *, uint32_t);

static and_popcount_fn and_popcount = and_popcount_plain;
static pthread_once_t and_popcount_once = PTHREAD_ONCE_INIT;

static void and_popcount_pick(void)
{
#ifdef HAVE_AVX512_POPCNT
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512f") &&
        !getenv("SPM_NO_AVX512"))
        and_popcount = and_popcount_avx512;
#endif
}

/*  The extra weight (above 1 each) of the heavy transactions in M, word W. */
static uint64_t heavy_extra(const spm_mining_vert_t *v, uint32_t w, uint64_t m)
{
    uint64_t sum = 0;
    for (uint64_t h = m & v->heavy[w]; h; h &= h - 1)
        sum += v->weight[w * 64 + (uint32_t)__builtin_ctzll(h)] - 1;
    return sum;
}

/*  Built twice, with and without the POPCNT instruction; the loader picks
    the one the CPU runs (the build targets baseline x86-64).

    acc[d] holds the AND of the rows of the set's items 0..d and nz[d] its
    non-zero words. Where the parent prefix occurs in most words, acc[d] is
    computed over every word ("full") and the last item's count is one
    contiguous AND-popcount; where it is rare, only its non-zero words are
    visited. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
void spm_mining_vert_flush(spm_mining_vert_t *v, uint64_t *counts)
{
    pthread_once(&and_popcount_once, and_popcount_pick);
    uint32_t k = v->k, words = (v->held + 63) / 64, valid = 0, nheavy = 0;
    uint32_t *heavy = v->nz + (size_t)k * v->words; /* words holding heavy transactions */
    for (uint32_t w = 0; w < words; w++)
        if (v->heavy[w])
            heavy[nheavy++] = w;
    for (uint32_t i = 0; i < v->n && words > 0; i++) {
        const uint32_t *c = v->sets + (size_t)i * k;
        uint32_t same = 0;
        if (i > 0)
            while (same < valid && c[same] == (c - k)[same])
                same++;
        int skip = 0;
        for (uint32_t d = same; d + 1 < k && !skip; d++) {
            int32_t s = c[d] < v->domain ? v->slot[c[d]] : -1;
            uint64_t *a = v->acc + (size_t)d * v->words;
            uint32_t *z = v->nz + (size_t)d * v->words, m = 0;
            const uint64_t *b = v->bits + (size_t)(s < 0 ? 0 : s) * v->words;
            if (s < 0) {
                skip = 1;
            } else if (d == 0 || (v->full[d - 1] && 2 * v->nnz[d - 1] > words)) {
                const uint64_t *p = d == 0 ? b : a - v->words;
                for (uint32_t w = 0; w < words; w++)
                    a[w] = p[w] & b[w];
                for (uint32_t w = 0; w < words; w++) { /* branch-free: a[w] is unpredictable */
                    z[m] = w;
                    m += a[w] != 0;
                }
                v->full[d] = 1;
            } else {
                const uint64_t *p = a - v->words;
                const uint32_t *pz = z - v->words;
                for (uint32_t x = 0; x < v->nnz[d - 1]; x++) {
                    uint32_t w = pz[x];
                    a[w] = p[w] & b[w];
                    z[m] = w;
                    m += a[w] != 0;
                }
                v->full[d] = 0;
            }
            v->nnz[d] = m;
        }
        valid = skip ? 0 : k - 1;
        int32_t s = c[k - 1] < v->domain ? v->slot[c[k - 1]] : -1;
        if (skip || s < 0)
            continue;
        const uint64_t *last = v->bits + (size_t)s * v->words;
        const uint64_t *pre = k > 1 ? v->acc + (size_t)(k - 2) * v->words : last;
        uint64_t sum = 0;
        if (k == 1 || (v->full[k - 2] && 2 * v->nnz[k - 2] > words)) {
            sum = and_popcount(pre, last, words);
            for (uint32_t x = 0; x < nheavy; x++)
                sum += heavy_extra(v, heavy[x], pre[heavy[x]] & last[heavy[x]]);
        } else {
            const uint32_t *z = v->nz + (size_t)(k - 2) * v->words;
            for (uint32_t x = 0; x < v->nnz[k - 2]; x++) {
                uint32_t w = z[x];
                uint64_t m = pre[w] & last[w];
                sum += (uint64_t)__builtin_popcountll(m) + heavy_extra(v, w, m);
            }
        }
        counts[i] += sum;
    }
    memset(v->bits, 0, (size_t)v->rows * v->words * 8);
    memset(v->heavy, 0, (size_t)v->words * 8);
    v->held = 0;
}

void spm_mining_vert_destroy(spm_mining_vert_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->slot);
    free((*self_p)->bits);
    free((*self_p)->heavy);
    free((*self_p)->weight);
    free((*self_p)->acc);
    free((*self_p)->nz);
    free((*self_p)->nnz);
    free((*self_p)->full);
    free(*self_p);
    *self_p = NULL;
}

int spm_mining_count_vertical(const uint32_t *sets, uint32_t k, uint32_t n, uint32_t domain,
                              const uint32_t *off, const uint32_t *items, const uint32_t *weight,
                              uint32_t nt, uint64_t *counts)
{
    if (n == 0 || nt == 0)
        return 0;
    spm_mining_vert_t *v = spm_mining_vert_new(sets, k, n, domain, nt < 16384 ? nt : 16384);
    if (!v)
        return SPM_ENOMEM;
    for (uint32_t done = 0; done < nt;) {
        done += spm_mining_vert_add(v, off + done, items, weight + done, nt - done);
        spm_mining_vert_flush(v, counts);
    }
    spm_mining_vert_destroy(&v);
    return 0;
}

#define PAIRS_MAX_CELLS (1u << 21)

/*  Counters are 32-bit, half the cache footprint of 64-bit ones; before the
    weight added since the last spill could overflow one, they are spilled
    into 64-bit totals. */
struct spm_mining_pairs {
    uint32_t lo, hi;  /* first items of the block's pairs: lo .. hi */
    uint32_t domain;  /* row width */
    uint32_t *cell;   /* (hi - lo + 1) rows of domain counters */
    uint64_t *total;  /* spilled counts, the same shape; NULL until needed */
    uint64_t pending; /* weight added since the last spill */
};

spm_mining_pairs_t *spm_mining_pairs_new(const uint32_t *sets, uint32_t n, uint32_t domain)
{
    if (n == 0 || domain == 0 || sets[2 * (size_t)(n - 1)] >= domain)
        return NULL;
    uint32_t lo = sets[0], hi = sets[2 * (size_t)(n - 1)];
    size_t cells = (size_t)(hi - lo + 1) * domain;
    if (cells > PAIRS_MAX_CELLS)
        return NULL;
    spm_mining_pairs_t *p = calloc(1, sizeof *p);
    if (!p || !(p->cell = calloc(cells, sizeof *p->cell))) {
        free(p);
        return NULL;
    }
    p->lo = lo;
    p->hi = hi;
    p->domain = domain;
    return p;
}

/*  Adds the 32-bit counters to the 64-bit totals and clears them. */
static int pairs_spill(spm_mining_pairs_t *p)
{
    size_t cells = (size_t)(p->hi - p->lo + 1) * p->domain;
    if (!p->total && !(p->total = calloc(cells, sizeof *p->total)))
        return SPM_ENOMEM;
    for (size_t i = 0; i < cells; i++)
        p->total[i] += p->cell[i];
    memset(p->cell, 0, cells * sizeof *p->cell);
    p->pending = 0;
    return 0;
}

int spm_mining_pairs_count(spm_mining_pairs_t *p, const uint32_t *items, uint32_t len, uint32_t w)
{
    if (p->pending + w > UINT32_MAX && pairs_spill(p) != 0)
        return SPM_ENOMEM;
    p->pending += w;
    while (len > 0 && items[len - 1] >= p->domain) /* items are increasing */
        len--;
    for (uint32_t y = 0; y + 1 < len && items[y] <= p->hi; y++) {
        if (items[y] < p->lo)
            continue;
        uint32_t *row = p->cell + (size_t)(items[y] - p->lo) * p->domain;
        for (uint32_t z = y + 1; z < len; z++)
            row[items[z]] += w;
    }
    return 0;
}

void spm_mining_pairs_finish(const spm_mining_pairs_t *p, const uint32_t *sets, uint32_t n,
                             uint64_t *counts)
{
    for (uint32_t i = 0; i < n; i++) {
        size_t at = (size_t)(sets[2 * (size_t)i] - p->lo) * p->domain + sets[2 * (size_t)i + 1];
        counts[i] += p->cell[at] + (p->total ? p->total[at] : 0);
    }
}

void spm_mining_pairs_destroy(spm_mining_pairs_t **self_p)
{
    if (*self_p) {
        free((*self_p)->cell);
        free((*self_p)->total);
        free(*self_p);
        *self_p = NULL;
    }
}
