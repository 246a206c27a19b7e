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

    A tidset here is the list of the non-zero 64-bit words of a bitset over
    every transaction of the SI's operands, with their word indices: near
    the minimum support a prefix is rare and its list short (sparse data),
    while on dense data it is the plain bitset. Extending a prefix by item j
    ANDs its words with j's full bitset at those indices only. Transactions
    carry weights (identical ones merged): a support is the popcount plus
    weight - 1 for each heavy transaction present. The heavy ones take the
    first words, where weight - 1 is counted a bit plane at a time: after
    shrinking chess at 60%, 586 transactions of 2,525 are heavy, none over
    4, so two popcounts for each of the first 10 words of 40, where
    visiting each heavy transaction was most of the walk. Where the CPU has
    AVX-512's 64-bit lane popcount, the dense AND and the planes go eight
    words (or planes) at a time (SPM_NO_AVX512 in the environment keeps
    the plain loops, to compare them).

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
#include "isa/mining/isa.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NO_ROW UINT32_MAX

/*  Item order walks by position up to this many frequent items (dense
    data), else by rank and sorts each group of the block (see the top). */
#define BY_POSITION 128

/*  Largest vertical database one SI builds (bitsets of the items of its
    class over every transaction). */
#define MAX_BITS_BYTES (1ull << 30)
#define MAX_PAIRS_BYTES (64ull << 20)

/*  A tidset: a bitset over the transactions, dense (every word) or as its
    non-zero words with their indices (where the set is rare). */
typedef struct {
    uint64_t *w;   /* n words (one allocation with idx) */
    uint32_t *idx; /* n word indices, increasing; NULL when dense (n = nwords) */
    uint32_t n;
    uint64_t sup; /* its support */
} tids_t;

/*  A frequent extension of a prefix: its last item and its tidset. */
typedef struct {
    uint32_t item;
    tids_t t;
} ext_t;

/*  The walk's memory: the extensions of a prefix and their tidsets live
    until the walk leaves the prefix, so they come off a stack of chunks
    and go back to a mark, instead of a malloc and a free each (the dense
    set at 5% makes 8 million of them). */
typedef struct chunk {
    struct chunk *prev; /* the chunk below (NULL: the first) */
    size_t size, used;  /* bytes of data, and in use */
    uint64_t data[];
} chunk_t;

#define CHUNK_BYTES ((size_t)1 << 20)

typedef struct {
    chunk_t *top;   /* the chunk allocations come from (NULL: none yet) */
    chunk_t *spare; /* a freed chunk kept for the next */
} arena_t;

typedef struct {
    chunk_t *c;
    size_t used;
} mark_t;

typedef struct {
    uint32_t f1, maxlen; /* the rank domain; longest set (0: any) */
    uint32_t lo, hi;     /* first items of the class */
    uint32_t slo, shi;   /* second items of the class */
    uint64_t minsup;     /* minimum support */
    size_t cap, bytes;   /* output bound, and encoded bytes found so far */
    uint64_t bits_cap;   /* bitsets of a class of several first items, at most */
    size_t soft;         /* past this, stop between two of the class's top prefixes */
    int too_big;         /* the class went over cap */
    int partial;         /* stopped early: the rest starts at (ra, rb) */
    uint32_t ra, rb;     /* first item, and next item (0: any) to resume at */
    uint32_t a;          /* the current first item */
    uint32_t depth;      /* a prefix class: its prefix's items (0: none, see isa.h) */
    uint32_t pre[SPM_MINING_MAX_DEPTH]; /* the prefix */
    uint32_t own;                       /* its shortest prefix of its own to emit (0: none) */
    uint32_t top;                       /* the walk's level whose extensions are the class's */
    int rc;                             /* first error (0: none) */
    uint32_t nwords;                    /* words per bitset */
    uint64_t *bits;                     /* the bitsets the class needs, nwords each */
    uint32_t *row;                      /* f1: an item's bitset in bits (NO_ROW: none) */
    uint32_t nhw;                       /* words of heavy transactions (weight > 1): the first */
    uint64_t *plane;                    /* nhw x npad: word i's bits p of each weight - 1 */
    uint32_t nplanes;                   /* bits of the largest weight - 1 */
    uint32_t npad;                      /* nplanes rounded up to a multiple of 8 */
    uint64_t *pairs;               /* supports of {a, b}, a in [lo, hi), b in [lo, f1); or NULL */
    uint32_t *sidx;                /* scratch tidset: nwords indices */
    uint64_t *sw;                  /* and words */
    uint32_t *set;                 /* the current prefix as output (SPM_MINING_MAX_K items) */
    uint32_t *pos;                 /* item order: f1, a rank's position by item number */
    uint32_t *item;                /* and f1 items by position (NULL: rank order) */
    int by_pos;                    /* item order, walked by position (see BY_POSITION) */
    spm_mining_isets_writer_t out; /* the sets found */
    arena_t arena;                 /* the walk's extensions and tidsets */
} miner_t;

/*  N bytes (8-aligned) off A, or NULL when out of memory. */
static void *arena_alloc(arena_t *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (!a->top || a->top->size - a->top->used < n) {
        chunk_t *c = a->spare && a->spare->size >= n ? a->spare : NULL;
        if (c)
            a->spare = NULL;
        else if (!(c = malloc(sizeof *c + (n > CHUNK_BYTES ? n : CHUNK_BYTES))))
            return NULL;
        else
            c->size = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        c->prev = a->top;
        c->used = 0;
        a->top = c;
    }
    void *p = (char *)a->top->data + a->top->used;
    a->top->used += n;
    return p;
}

static mark_t arena_mark(const arena_t *a)
{
    return (mark_t){a->top, a->top ? a->top->used : 0};
}

/*  Gives back everything allocated since mark M. */
static void arena_release(arena_t *a, mark_t m)
{
    while (a->top != m.c) {
        chunk_t *c = a->top;
        a->top = c->prev;
        if (!a->spare || c->size > a->spare->size) {
            free(a->spare);
            a->spare = c;
        } else {
            free(c);
        }
    }
    if (a->top)
        a->top->used = m.used;
}

static void arena_free(arena_t *a)
{
    arena_release(a, (mark_t){0});
    free(a->spare);
    a->spare = NULL;
}

/*  The dense loop of intersect: T AND B into OUT over N words. Returns
    the AND's popcount (weights apart) with its non-zero words in *NZ, or
    UINT64_MAX when T lost more than SLACK bits. */
typedef uint64_t (*and_dense_fn)(const uint64_t *t, const uint64_t *b, uint64_t *out, uint32_t n,
                                 uint64_t slack, uint32_t *nz);

/*  Word by word, giving up at the first word past the slack. Built with
    and without the POPCNT instruction; the loader picks the one the CPU
    runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
static uint64_t
and_dense_plain(const uint64_t *t, const uint64_t *b, uint64_t *out, uint32_t n, uint64_t slack,
                uint32_t *nz)
{
    uint64_t sup = 0, lost = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = t[i] & b[i];
        out[i] = v;
        sup += (uint64_t)__builtin_popcountll(v);
        lost += (uint64_t)__builtin_popcountll(t[i] & ~b[i]);
        k += v != 0;
        if (lost > slack)
            return UINT64_MAX;
    }
    *nz = k;
    return sup;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define HAVE_AVX512_POPCNT 1
/*  Eight words at a time with AVX-512's 64-bit lane popcount, the slack
    checked every 32 words. MineClassBlock's time, 2 IEUs, medians of 3:
    chess at 60% 0.061 -> 0.054 s, the dense set at 5% 1.93 -> 1.84 s. */
__attribute__((target("avx512f,avx512vpopcntdq,popcnt"))) static uint64_t
and_dense_avx512(const uint64_t *t, const uint64_t *b, uint64_t *out, uint32_t n, uint64_t slack,
                 uint32_t *nz)
{
    __m512i sup = _mm512_setzero_si512(), lost = _mm512_setzero_si512();
    uint32_t k = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i x = _mm512_loadu_si512(t + i), y = _mm512_loadu_si512(b + i);
        __m512i v = _mm512_and_si512(x, y);
        _mm512_storeu_si512(out + i, v);
        sup = _mm512_add_epi64(sup, _mm512_popcnt_epi64(v));
        lost = _mm512_add_epi64(lost, _mm512_popcnt_epi64(_mm512_andnot_si512(y, x)));
        k += (uint32_t)_mm_popcnt_u32(_mm512_test_epi64_mask(v, v));
        if ((i & 24) == 24 && (uint64_t)_mm512_reduce_add_epi64(lost) > slack)
            return UINT64_MAX;
    }
    uint64_t s = (uint64_t)_mm512_reduce_add_epi64(sup),
             l = (uint64_t)_mm512_reduce_add_epi64(lost);
    for (; i < n; i++) {
        uint64_t v = t[i] & b[i];
        out[i] = v;
        s += (uint64_t)_mm_popcnt_u64(v);
        l += (uint64_t)_mm_popcnt_u64(t[i] & ~b[i]);
        k += v != 0;
    }
    if (l > slack)
        return UINT64_MAX;
    *nz = k;
    return s;
}
#endif

/*  The weight above 1 of the transactions in the N words at W (word E is
    word IDX[E] of the bitsets, or E when IDX is NULL; all below nhw):
    per word, a popcount of each bit plane. */
typedef uint64_t (*heavy_fn)(const miner_t *m, const uint64_t *w, const uint32_t *idx, uint32_t n);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
static uint64_t
heavy_plain(const miner_t *m, const uint64_t *w, const uint32_t *idx, uint32_t n)
{
    uint64_t s = 0;
    for (uint32_t e = 0; e < n; e++) {
        const uint64_t *pl = m->plane + (size_t)(idx ? idx[e] : e) * m->npad;
        for (uint32_t p = 0; p < m->nplanes; p++)
            s += (uint64_t)__builtin_popcountll(w[e] & pl[p]) << p;
    }
    return s;
}

#ifdef HAVE_AVX512_POPCNT
/*  Eight planes of a word at a time, each lane shifted by its plane. */
__attribute__((target("avx512f,avx512vpopcntdq"))) static uint64_t
heavy_avx512(const miner_t *m, const uint64_t *w, const uint32_t *idx, uint32_t n)
{
    __m512i acc = _mm512_setzero_si512();
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    for (uint32_t e = 0; e < n; e++) {
        const uint64_t *pl = m->plane + (size_t)(idx ? idx[e] : e) * m->npad;
        __m512i v = _mm512_set1_epi64((long long)w[e]);
        for (uint32_t c = 0; c < m->npad; c += 8) {
            __m512i x = _mm512_popcnt_epi64(_mm512_and_si512(v, _mm512_loadu_si512(pl + c)));
            __m512i by = _mm512_add_epi64(lane, _mm512_set1_epi64(c));
            acc = _mm512_add_epi64(acc, _mm512_sllv_epi64(x, by));
        }
    }
    return (uint64_t)_mm512_reduce_add_epi64(acc);
}
#endif

static and_dense_fn and_dense = and_dense_plain;
static heavy_fn heavy = heavy_plain;
static pthread_once_t and_dense_once = PTHREAD_ONCE_INIT;

static void and_dense_pick(void)
{
#ifdef HAVE_AVX512_POPCNT
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512f") &&
        !getenv("SPM_NO_AVX512")) {
        and_dense = and_dense_avx512;
        heavy = heavy_avx512;
    }
#endif
}

/*  T AND the bitset of ITEM into the scratch tidset (dense when T is);
    returns its support and, in *NZ, its non-zero words. Gives up, returning
    0, as soon as T has lost more transactions than its support exceeds the
    minimum by (weights are >= 1, so lost bits bound lost support): near the
    minimum support most extensions fail within a few words. Built with and
    without the POPCNT instruction; the loader picks the one the CPU runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
static uint64_t
intersect(miner_t *m, const tids_t *t, uint32_t item, uint32_t *nz)
{
    const uint64_t *b = m->bits + (size_t)m->row[item] * m->nwords;
    uint64_t sup = 0, lost = 0, slack = t->sup - m->minsup;
    uint32_t k = 0;
    if (!t->idx) {
        if ((sup = and_dense(t->w, b, m->sw, m->nwords, slack, &k)) == UINT64_MAX)
            return 0;
        sup += heavy(m, m->sw, NULL, m->nhw);
    } else {
        for (uint32_t e = 0; e < t->n; e++) {
            uint64_t v = t->w[e] & b[t->idx[e]];
            m->sidx[k] = t->idx[e];
            m->sw[k] = v;
            sup += (uint64_t)__builtin_popcountll(v);
            lost += (uint64_t)__builtin_popcountll(t->w[e] & ~v);
            k += v != 0;
            if (lost > slack)
                return 0;
        }
        uint32_t h = 0; /* the words of heavy transactions come first */
        while (h < k && m->sidx[h] < m->nhw)
            h++;
        sup += heavy(m, m->sw, m->sidx, h);
    }
    *nz = k;
    return sup;
}

/*  Keeps the scratch tidset (NZ non-zero words; every word when FULL) as
 *T: dense while at least three quarters of the words are non-zero (a
    sparse word costs its index and a gather, but a dense tidset costs every
    word at every extension). */
static int keep_scratch(miner_t *m, int full, uint32_t nz, tids_t *t)
{
    int dense = full && (uint64_t)nz * 4 >= (uint64_t)m->nwords * 3;
    if (full && !dense) {
        /* Compacted in place, without a branch per word (the branchy loop
           was a third of the SIs' time on T25I10 at 0.6%): k never passes i. */
        uint32_t k = 0;
        for (uint32_t i = 0; i < m->nwords; i++) {
            uint64_t v = m->sw[i];
            m->sw[k] = v;
            m->sidx[k] = i;
            k += v != 0;
        }
        full = 0;
    }
    t->n = dense ? m->nwords : nz;
    t->w = arena_alloc(&m->arena, (size_t)t->n * (dense ? 8 : 12) + 8);
    if (!t->w)
        return spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    t->idx = dense ? NULL : (uint32_t *)(t->w + t->n);
    if (dense) {
        memcpy(t->w, m->sw, (size_t)t->n * 8);
    } else {
        memcpy(t->w, m->sw, (size_t)nz * 8);
        memcpy(t->idx, m->sidx, (size_t)nz * 4);
    }
    return 0;
}

/*  Item J of the walk as output: its item (item order) or rank. */
static uint32_t label(const miner_t *m, uint32_t j)
{
    return m->by_pos ? m->item[j] : j;
}

/*  Writes the K-set (the prefix's first K-1 items and ITEM) with support
    SUP; sets too_big past the cap. */
static void emit(miner_t *m, uint32_t k, uint32_t item, uint64_t sup)
{
    /* Item order: the block as it is encoded (5 bytes a set on the dense
       set at 5%), for the client reads it so. Rank order: as u32 items
       and a u64 count, as CutFrequentSetBlock cuts it into blocks. */
    m->bytes = m->by_pos ? m->out.bytes : m->bytes + 4 * (size_t)k + 8;
    if (m->bytes > m->cap) {
        m->too_big = 1;
        return;
    }
    m->set[k - 1] = label(m, item);
    int rc = spm_mining_isets_put(&m->out, m->set, k, sup);
    if (rc != 0)
        m->rc = spm_error(rc, "%s: %s", SPM_MINING_MINE_CLASS,
                          rc == SPM_ENOMEM ? "out of memory" : spm_error_detail());
}

/*  The frequent extensions of the prefix (D items) and E[I] among E[I+1..N),
    each emitted as a (D + 2)-set, into *OUT (off the arena) and *NOUT. */
static void extend(miner_t *m, uint32_t d, const ext_t *e, uint32_t i, uint32_t n, ext_t **out,
                   uint32_t *nout)
{
    *nout = 0;
    if (!(*out = arena_alloc(&m->arena, ((size_t)(n - i)) * sizeof **out))) {
        m->rc = spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
        return;
    }
    for (uint32_t j = i + 1; j < n && !m->rc && !m->too_big; j++) {
        uint32_t nw;
        uint64_t sup = intersect(m, &e[i].t, e[j].item, &nw);
        if (sup < m->minsup)
            continue;
        emit(m, d + 2, e[j].item, sup);
        if (!m->rc && !m->too_big) {
            (*out)[*nout].item = e[j].item;
            if ((m->rc = keep_scratch(m, !e[i].t.idx, nw, &(*out)[*nout].t)) == 0)
                (*out)[(*nout)++].t.sup = sup;
        }
    }
}

/*  Walks the prefix of D items whose frequent extensions are E[0..N),
    descending into the first STOP of them. Each extension is emitted by
    its parent (extend), but those of the class's prefix (m->top items)
    here, as the walk comes to them: a class that stops early has emitted
    none past that point. */
static void walk(miner_t *m, uint32_t d, const ext_t *e, uint32_t n, uint32_t stop)
{
    int deeper = !(m->maxlen && d + 2 > m->maxlen) && d + 2 <= SPM_MINING_MAX_K;
    if (d > m->top && !deeper)
        return;
    for (uint32_t i = 0; i < stop && !m->rc && !m->too_big; i++) {
        ext_t *kids;
        uint32_t nk;
        if (d == m->top)
            emit(m, d + 1, e[i].item, e[i].t.sup);
        if (!deeper || m->rc || m->too_big)
            continue;
        mark_t mark = arena_mark(&m->arena);
        m->set[d] = label(m, e[i].item);
        extend(m, d, e, i, n, &kids, &nk);
        if (nk > 0)
            walk(m, d + 1, kids, nk, nk);
        arena_release(&m->arena, mark);
        /* A prefix of the class's is complete: stop here if the block is
           big enough. */
        if (d == m->top && i + 1 < stop && m->bytes >= m->soft && !m->rc && !m->too_big) {
            m->partial = 1;
            m->ra = m->a;
            m->rb = e[i + 1].item;
            break;
        }
    }
}

/*  The pair counts of first item A (lo <= A < hi): entry B - lo is the
    support of {A, B}. A partner ranks above A, so columns below lo are
    never used and are not kept: the classes of the last ranks (the most
    frequent items) count into rows a few KiB long. */
static uint64_t *pair_row(const miner_t *m, uint32_t a)
{
    return m->pairs + (size_t)(a - m->lo) * (m->f1 - m->lo);
}

/*  Mines the class of the D-item prefix PRE: its (D + 1)-sets whose item
    D + 1 lies in [SLO, SHI), and everything below them; and, from m->own
    items on, the prefix's own first items (a class made a level deeper
    emits the sets it was split below). */
static void mine_prefix(miner_t *m, const uint32_t *pre, uint32_t d, uint32_t slo, uint32_t shi)
{
    uint32_t a = pre[0];
    /* A's tidset: its bitset, as the non-zero words where it is rare. */
    if (m->row[a] == NO_ROW)
        return; /* no frequent partner: no class */
    const uint64_t *bits = m->bits + (size_t)m->row[a] * m->nwords;
    tids_t dense = {.w = (uint64_t *)bits, .n = m->nwords};
    ext_t root = {.item = a, .t = dense};
    mark_t mark = arena_mark(&m->arena);
    uint32_t nw = 0;
    uint64_t own = 0;
    for (uint32_t i = 0; i < m->nwords; i++)
        if (bits[i]) {
            m->sw[nw] = bits[i];
            m->sidx[nw++] = i;
            own += (uint64_t)__builtin_popcountll(bits[i]);
        }
    own += heavy(m, bits, NULL, m->nhw);
    if (own < m->minsup)
        return; /* not a frequent item: no class */
    if ((uint64_t)nw * 4 < (uint64_t)m->nwords * 3 &&
        (m->rc = keep_scratch(m, 0, nw, &root.t)) != 0)
        return;
    root.t.sup = own;
    m->a = a;
    m->set[0] = label(m, a);
    /* The rest of a longer prefix, its own sets emitted from m->own on. */
    uint32_t k = 1;
    for (; k < d && !m->rc && !m->too_big; k++) {
        uint64_t sup = m->row[pre[k]] == NO_ROW ? 0 : intersect(m, &root.t, pre[k], &nw);
        if (sup < m->minsup || (m->rc = keep_scratch(m, !root.t.idx, nw, &root.t)) != 0)
            break; /* the prefix is not frequent: nothing in the class */
        root.t.sup = sup;
        m->set[k] = label(m, pre[k]);
        if (m->own && k + 1 >= m->own && !(m->maxlen && k + 1 > m->maxlen))
            emit(m, k + 1, pre[k], sup);
    }
    const uint64_t *pairs = m->pairs ? pair_row(m, a) : NULL;
    uint32_t from = slo > pre[d - 1] + 1 ? slo : pre[d - 1] + 1, n = 0, stop = 0;
    if (k < d || (m->maxlen && d + 1 > m->maxlen))
        from = m->f1; /* nothing in the class, or no set of it short enough */
    ext_t *e = from < m->f1 ? arena_alloc(&m->arena, (size_t)(m->f1 - from) * sizeof *e) : NULL;
    if (from < m->f1 && !e)
        m->rc = spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_MINE_CLASS);
    /* Partners past shi are not in the class, but extend those before it. */
    for (uint32_t j = from; j < m->f1 && !m->rc && !m->too_big; j++) {
        if (pairs && pairs[j - m->lo] < m->minsup)
            continue;
        uint64_t sup = intersect(m, &root.t, j, &nw);
        if (sup < m->minsup)
            continue;
        stop += j < shi;
        e[n].item = j;
        if (!m->rc && !m->too_big && (m->rc = keep_scratch(m, !root.t.idx, nw, &e[n].t)) == 0)
            e[n++].t.sup = sup;
    }
    if (stop > n)
        stop = n;
    m->top = d;
    walk(m, d, e, n, stop);
    arena_release(&m->arena, mark);
}

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
static int build(spm_si_ctx_t *ctx, miner_t *m, size_t nt)
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
    arena_free(&m->arena);
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
    lengths, (k, sets) per length, resume point. */
static int finish_class(spm_si_ctx_t *ctx, miner_t *m, size_t out)
{
    if (m->too_big)
        spm_mining_isets_abort(&m->out);
    uint32_t reply[4 + 2 * SPM_MINING_MAX_K], nlen = 0;
    for (uint32_t k = 1; k <= m->out.nlen; k++)
        if (spm_mining_isets_count(&m->out, k) > 0) {
            reply[2 + 2 * nlen] = k;
            reply[3 + 2 * nlen++] = spm_mining_isets_count(&m->out, k);
        }
    reply[0] = m->too_big ? 1 : m->partial ? 2 : 0;
    reply[1] = nlen;
    reply[2 + 2 * nlen] = m->ra;
    reply[3 + 2 * nlen] = m->rb;
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
    return spm_mining_reply_u32(ctx, reply, 4 + 2 * (size_t)nlen);
}

/*  A prefix class's params, when there (see isa.h): u32 depth (0: none),
    then depth items, strictly increasing below F1, the first lo (hi =
    lo + 1), the last below slo, and u32 own (0, or 2 .. depth). */
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
    if (spm_get_u32(p, &m->own) || m->own == 1 || m->own > m->depth || spm_cursor_left(p) != 0)
        return SPM_EINVAL;
    return 0;
}

/*  MineClassBlock (trans[0..m) R, [fitems R,] isets W; see isa.h). */
static int mine_class(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    miner_t m = {0};
    uint32_t cap, soft, order = 0, bits_kb = 0;
    size_t n = spm_si_noperands(ctx);
    pthread_once(&and_dense_once, and_dense_pick);
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
        rc = build(ctx, &m, n - 1 - order);
    if (m.depth > 0 && rc == 0 && m.maxlen != 1)
        mine_prefix(&m, m.pre, m.depth, m.slo, m.shi);
    for (uint32_t a = m.lo;
         m.depth == 0 && a < m.hi && rc == 0 && !m.rc && !m.too_big && !m.partial && m.maxlen != 1;
         a++) {
        mine_prefix(&m, &a, 1, m.slo, m.shi);
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
