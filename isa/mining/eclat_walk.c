/*  =========================================================================
    eclat_walk - the depth-first miner's walk: tidsets, their intersection,
    and the walk of a class

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
    =========================================================================
*/
#include "isa/mining/eclat_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

void eclat_arena_free(arena_t *a)
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

void eclat_pick_loops(void)
{
    pthread_once(&and_dense_once, and_dense_pick);
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
    for (uint32_t i = 0; i < stop && !m->rc && !m->too_big && !m->partial; i++) {
        ext_t *kids;
        uint32_t nk;
        if (d == m->top && !m->quiet)
            emit(m, d + 1, e[i].item, e[i].t.sup);
        if (!deeper || m->rc || m->too_big)
            continue;
        mark_t mark = arena_mark(&m->arena);
        m->set[d] = label(m, e[i].item);
        if (d == m->top)
            m->in_top = e[i].item; /* where a stop inside it resumes */
        extend(m, d, e, i, n, &kids, &nk);
        if (nk > 0)
            walk(m, d + 1, kids, nk, nk);
        arena_release(&m->arena, mark);
        /* One extension of a top prefix is complete, and with it every
           (top + 2)-set of that prefix (extend emitted them): a class may
           stop here, and its rest is the longer prefix's class from the
           next extension on, which emits none of its (top + 2)-sets again.
           Without it one top prefix of the dense set at 5% (a fifth of its
           sets) ran on one IEU while the other waited. */
        if (d == m->top + 1 && m->deep && i + 1 < stop && m->top + 1 < SPM_MINING_MAX_DEPTH &&
            m->bytes >= m->soft && !m->rc && !m->too_big) {
            m->partial = 2;
            m->ra = m->a;
            m->rb = m->in_top;
            m->rn = e[i + 1].item;
            break;
        }
        /* A prefix of the class's is complete: stop here if the block is
           big enough. */
        if (d == m->top && i + 1 < stop && m->bytes >= m->soft && !m->rc && !m->too_big &&
            !m->partial) {
            m->partial = 1;
            m->ra = m->a;
            m->rb = e[i + 1].item;
            break;
        }
    }
}

/*  Mines the class of the D-item prefix PRE: its (D + 1)-sets whose item
    D + 1 lies in [SLO, SHI), and everything below them; and, from m->own
    items on, the prefix's own first items (a class made a level deeper
    emits the sets it was split below). */
void eclat_mine_prefix(miner_t *m, const uint32_t *pre, uint32_t d, uint32_t slo, uint32_t shi)
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
