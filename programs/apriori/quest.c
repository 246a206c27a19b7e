/*  =========================================================================
    quest - the IBM Quest synthetic transaction generator

    Sampling by weight is a binary search over cumulative weights. A
    transaction is assembled in a small bitmap-free way: items are appended,
    then sorted and deduplicated, since patterns overlap.
    =========================================================================
*/
#include "programs/apriori/quest.h"
#include "isa/core/rng.h"
#include "spm/spm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t *items; /* sorted, distinct */
    uint32_t n;
    double corruption; /* probability of dropping one more item */
} pattern_t;

struct spm_quest {
    spm_quest_params_t p;
    spm_rng_t rng;
    double *item_cum; /* cumulative item weights */
    double *pat_cum;  /* cumulative pattern weights */
    pattern_t *pat;   /* the |L| patterns */
    uint64_t made;    /* transactions produced */
    int32_t carried;  /* pattern left over for the next transaction, or -1 */
    uint32_t *buf;    /* the transaction being built */
    size_t cap;
    uint32_t *tmp; /* a corrupted copy of a pattern */
    size_t tcap;
};

void spm_quest_defaults(spm_quest_params_t *p)
{
    *p = (spm_quest_params_t){.transactions = 100000,
                              .avg_size = 10,
                              .avg_pattern = 4,
                              .items = 1000,
                              .patterns = 2000,
                              .seed = 1,
                              .correlation = 0.5,
                              .corruption = 0.5,
                              .corruption_sd = 0.1};
}

/*  Index drawn in proportion to the weights whose running sums are CUM[0..N). */
static uint32_t pick(spm_rng_t *r, const double *cum, uint32_t n)
{
    double u = spm_rng_uniform(r) * cum[n - 1];
    uint32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/*  Sorts A[0..N) and drops repeats; returns the new length. */
static size_t sort_unique(uint32_t *a, size_t n)
{
    qsort(a, n, sizeof *a, cmp_u32);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || a[m - 1] != a[i])
            a[m++] = a[i];
    return m;
}

static int contains(const uint32_t *a, size_t n, uint32_t v)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] == v)
            return 1;
    return 0;
}

/*  Draws pattern I; PREV is the pattern drawn before it (NULL for the first). */
static int make_pattern(spm_quest_t *q, pattern_t *pt, const pattern_t *prev)
{
    uint32_t size = (uint32_t)spm_rng_poisson(&q->rng, q->p.avg_pattern);
    if (size < 1)
        size = 1;
    if (size > q->p.items)
        size = q->p.items;
    if (!(pt->items = malloc(size * sizeof *pt->items)))
        return SPM_ENOMEM;
    uint32_t n = 0;
    if (prev) {
        double frac = spm_rng_exponential(&q->rng, q->p.correlation);
        uint32_t same = (uint32_t)(frac * size + 0.5);
        if (same > prev->n)
            same = prev->n;
        if (same > size)
            same = size;
        while (n < same) {
            uint32_t v = prev->items[spm_rng_below(&q->rng, prev->n)];
            if (!contains(pt->items, n, v))
                pt->items[n++] = v;
        }
    }
    while (n < size) {
        uint32_t v = pick(&q->rng, q->item_cum, q->p.items);
        if (!contains(pt->items, n, v))
            pt->items[n++] = v;
    }
    pt->n = (uint32_t)sort_unique(pt->items, n);
    double c = q->p.corruption + q->p.corruption_sd * spm_rng_normal(&q->rng);
    pt->corruption = c < 0 ? 0 : c > 1 ? 1 : c;
    return 0;
}

spm_quest_t *spm_quest_new(const spm_quest_params_t *p)
{
    if (p->items == 0 || p->patterns == 0 || !(p->avg_size > 0) || !(p->avg_pattern > 0) ||
        !(p->correlation >= 0) || !(p->corruption >= 0 && p->corruption <= 1) ||
        !(p->corruption_sd >= 0)) {
        spm_error(SPM_EINVAL, "gen transactions: sizes, items and patterns must be positive");
        return NULL;
    }
    spm_quest_t *q = calloc(1, sizeof *q);
    if (!q)
        goto nomem;
    q->p = *p;
    q->carried = -1;
    spm_rng_seed(&q->rng, p->seed);
    q->item_cum = malloc(p->items * sizeof *q->item_cum);
    q->pat_cum = malloc(p->patterns * sizeof *q->pat_cum);
    q->pat = calloc(p->patterns, sizeof *q->pat);
    if (!q->item_cum || !q->pat_cum || !q->pat)
        goto nomem;
    double sum = 0;
    for (uint32_t i = 0; i < p->items; i++)
        q->item_cum[i] = sum += spm_rng_exponential(&q->rng, 1.0);
    sum = 0;
    for (uint32_t i = 0; i < p->patterns; i++) {
        if (make_pattern(q, &q->pat[i], i ? &q->pat[i - 1] : NULL) != 0)
            goto nomem;
        q->pat_cum[i] = sum += spm_rng_exponential(&q->rng, 1.0);
    }
    return q;
nomem:
    spm_quest_destroy(&q);
    spm_error(SPM_ENOMEM, "out of memory");
    return NULL;
}

void spm_quest_destroy(spm_quest_t **self_p)
{
    spm_quest_t *q = *self_p;
    if (!q)
        return;
    for (uint32_t i = 0; q->pat && i < q->p.patterns; i++)
        free(q->pat[i].items);
    free(q->pat);
    free(q->item_cum);
    free(q->pat_cum);
    free(q->buf);
    free(q->tmp);
    free(q);
    *self_p = NULL;
}

static int reserve(uint32_t **a, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < n)
        c *= 2;
    uint32_t *v = realloc(*a, c * sizeof *v);
    if (!v)
        return SPM_ENOMEM;
    *a = v;
    *cap = c;
    return 0;
}

int spm_quest_next(spm_quest_t *q, const uint32_t **items, size_t *n)
{
    if (q->made >= q->p.transactions)
        return 0;
    q->made++;
    uint64_t size = spm_rng_poisson(&q->rng, q->p.avg_size);
    if (size < 1)
        size = 1;
    if (size > q->p.items)
        size = q->p.items;
    size_t m = 0;
    /* Patterns may cover fewer items than the size asks for: give up after
       a bounded number of picks rather than loop forever. */
    for (uint64_t tries = 0; tries < 8 * size + 64; tries++) {
        uint32_t i =
            q->carried >= 0 ? (uint32_t)q->carried : pick(&q->rng, q->pat_cum, q->p.patterns);
        q->carried = -1;
        const pattern_t *pt = &q->pat[i];
        /* Corrupt a copy: drop random items while a uniform draw is below c. */
        if (reserve(&q->tmp, &q->tcap, pt->n + 1) != 0)
            return spm_error(SPM_ENOMEM, "out of memory");
        memcpy(q->tmp, pt->items, pt->n * sizeof *q->tmp);
        size_t k = pt->n;
        while (k > 0 && spm_rng_uniform(&q->rng) < pt->corruption) {
            size_t d = spm_rng_below(&q->rng, k);
            q->tmp[d] = q->tmp[--k];
        }
        if (m > 0 && m + k > size) {
            if (spm_rng_uniform(&q->rng) < 0.5) {
                q->carried = (int32_t)i; /* keep it for the next transaction */
                break;
            }
            if (reserve(&q->buf, &q->cap, m + k) != 0)
                return spm_error(SPM_ENOMEM, "out of memory");
            memcpy(q->buf + m, q->tmp, k * sizeof *q->buf);
            m = sort_unique(q->buf, m + k);
            break;
        }
        if (reserve(&q->buf, &q->cap, m + k + 1) != 0)
            return spm_error(SPM_ENOMEM, "out of memory");
        memcpy(q->buf + m, q->tmp, k * sizeof *q->buf);
        m = sort_unique(q->buf, m + k);
        if (m >= size)
            break;
    }
    *items = q->buf;
    *n = m;
    return 1;
}
