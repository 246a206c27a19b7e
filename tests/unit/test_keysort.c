/*  keysort: random keys come back in the order a stable comparison sort
    gives them (equal keys in their first order), whether the keys differ
    in every byte or only in a few, and runs of equal keys are put in the
    caller's order by spm_keysort_ties, short runs and long ones; no pair,
    one pair. */
#include "isa/core/keysort.h"
#include "isa/core/rng.h"
#include "tests/check_main.h"

#include <stdlib.h>
#include <string.h>

/*  Stable order of pairs by key, then by index (the indices are the
    original positions). */
static int cmp_stable(const void *x, const void *y)
{
    const spm_keyed_t *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/*  Sorts N pairs with keys MASKed random (few bits set: many ties; high
    bytes only: passes skipped) and checks them against qsort. */
static void against_qsort(size_t n, uint64_t mask, uint64_t seed)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, seed);
    spm_keyed_t *a = malloc((n + 1) * sizeof *a), *t = malloc((n + 1) * sizeof *t);
    spm_keyed_t *want = malloc((n + 1) * sizeof *want);
    for (size_t i = 0; i < n; i++)
        a[i] = want[i] = (spm_keyed_t){.key = spm_rng_next(&rng) & mask, .i = (uint32_t)i};
    qsort(want, n, sizeof *want, cmp_stable);
    spm_keyed_t *o = spm_keysort(a, t, n);
    ck_assert(o == a || o == t);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(o[i].key, want[i].key);
        ck_assert_uint_eq(o[i].i, want[i].i);
    }
    free(a);
    free(t);
    free(want);
}

START_TEST(like_a_stable_sort)
{
    against_qsort(0, ~0ull, 1);
    against_qsort(1, ~0ull, 2);
    against_qsort(20000, ~0ull, 3);                 /* every byte differs */
    against_qsort(20000, 0xff00000000000000ull, 4); /* one byte: most equal */
    against_qsort(20000, 0x0000f00000000f00ull, 5); /* two nibbles apart */
    against_qsort(20000, 0, 6);                     /* all equal: order kept */
}
END_TEST

/*  Values to order ties by: by VAL[index] descending, as a caller's
    comparison of what the key could not hold. */
static int by_value_desc(uint32_t x, uint32_t y, void *arg)
{
    const uint32_t *val = arg;
    return val[x] > val[y] ? -1 : val[x] < val[y];
}

START_TEST(ties_in_the_callers_order)
{
    enum { N = 5000 };
    static uint32_t val[N];
    static spm_keyed_t a[N], t[N];
    spm_rng_t rng;
    spm_rng_seed(&rng, 9);
    for (uint32_t i = 0; i < N; i++) {
        val[i] = (uint32_t)spm_rng_below(&rng, 1000);
        /* keys 0..3 for short runs of 1-4 mostly, and one long run of 7s */
        uint64_t key = i < 4000 ? i / 3 : 7 + 100000;
        a[i] = (spm_keyed_t){.key = key, .i = i};
    }
    spm_keyed_t *o = spm_keysort(a, t, N);
    spm_keysort_ties(o, N, by_value_desc, val);
    for (uint32_t i = 1; i < N; i++) {
        ck_assert_uint_le(o[i - 1].key, o[i].key);
        if (o[i - 1].key == o[i].key)
            ck_assert_uint_ge(val[o[i - 1].i], val[o[i].i]);
    }
    /* every index once */
    static char seen[N];
    memset(seen, 0, sizeof seen);
    for (uint32_t i = 0; i < N; i++)
        seen[o[i].i]++;
    for (uint32_t i = 0; i < N; i++)
        ck_assert_int_eq(seen[i], 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keysort");
    SPM_TEST_ADD(s, NULL, like_a_stable_sort);
    SPM_TEST_ADD(s, NULL, ties_in_the_callers_order);
    return s;
}

SPM_TEST_MAIN(suite)
