/*  =========================================================================
    test_mining_count - the counting prefix tree against brute force
    =========================================================================
*/
#include "isa/core/rng.h"
#include "isa/mining/count.h"
#include "isa/mining/sdb.h"
#include "tests/check_main.h"

#include <stdlib.h>
#include <string.h>

static int cmp_set_k; /* set length for cmp_set */

static int cmp_set(const void *a, const void *b)
{
    return spm_mining_set_cmp(a, b, (uint32_t)cmp_set_k);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/*  Draws N distinct sorted items from [0, D) into OUT (N <= D). */
static void draw(spm_rng_t *r, uint32_t d, uint32_t n, uint32_t *out)
{
    uint32_t m = 0;
    while (m < n) {
        uint32_t v = (uint32_t)spm_rng_below(r, d);
        int seen = 0;
        for (uint32_t j = 0; j < m; j++)
            seen |= out[j] == v;
        if (!seen)
            out[m++] = v;
    }
    qsort(out, n, 4, cmp_u32);
}

/*  1 when sorted A (k items) is a subset of sorted T (n items). */
static int subset(const uint32_t *a, uint32_t k, const uint32_t *t, uint32_t n)
{
    uint32_t i = 0;
    for (uint32_t j = 0; j < n && i < k; j++)
        if (t[j] == a[i])
            i++;
    return i == k;
}

/*  Random candidates of length K over D items (drawn from a few "hot"
    items so some nodes are wide), random transactions; the tree with and
    without direct tables must count exactly what brute force counts. */
static void compare(uint64_t seed, uint32_t k, uint32_t d, uint32_t ncand, uint32_t ntrans,
                    uint32_t tlen)
{
    spm_rng_t r;
    spm_rng_seed(&r, seed);
    uint32_t *sets = malloc((size_t)ncand * k * 4), n = 0;
    for (uint32_t i = 0; i < ncand; i++)
        draw(&r, i % 3 ? d : (d < 24 ? d : 24), k, sets + (size_t)i * k);
    cmp_set_k = (int)k;
    qsort(sets, ncand, k * 4, cmp_set);
    for (uint32_t i = 0; i < ncand; i++) /* distinct */
        if (n == 0 || spm_mining_set_cmp(sets + (size_t)(n - 1) * k, sets + (size_t)i * k, k))
            memmove(sets + (size_t)n++ * k, sets + (size_t)i * k, k * 4);
    uint64_t *want = calloc(n, 8), *got = calloc(n, 8), *got0 = calloc(n, 8);
    spm_mining_trie_t *t = spm_mining_trie_new(sets, k, n, d);
    spm_mining_trie_t *t0 = spm_mining_trie_new(sets, k, n, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(t0);
    uint32_t *tr = malloc(d * 4);
    for (uint32_t i = 0; i < ntrans; i++) {
        uint32_t pool = i % 2 ? d : (d < 30 ? d : 30);
        uint32_t len = (uint32_t)spm_rng_below(&r, tlen + 1);
        len = len > pool ? pool : len;
        draw(&r, pool, len, tr);
        uint64_t w = 1 + spm_rng_below(&r, 3);
        for (uint32_t c = 0; c < n; c++)
            if (subset(sets + (size_t)c * k, k, tr, len))
                want[c] += w;
        spm_mining_trie_count(t, tr, len, w, got);
        spm_mining_trie_count(t0, tr, len, w, got0);
    }
    ck_assert_mem_eq(got, want, n * 8);
    ck_assert_mem_eq(got0, want, n * 8);
    /* The vertical kernel, over the same transactions replayed as one block. */
    uint64_t *vert = calloc(n, 8);
    spm_rng_seed(&r, seed);
    for (uint32_t i = 0; i < ncand; i++) /* replay the candidate draws */
        draw(&r, i % 3 ? d : (d < 24 ? d : 24), k, tr + 0 * k);
    uint32_t *off = malloc((ntrans + 1) * 4), *w = malloc(ntrans * 4);
    uint32_t *all = malloc((size_t)ntrans * (tlen + 1) * 4);
    off[0] = 0;
    for (uint32_t i = 0; i < ntrans; i++) {
        uint32_t pool = i % 2 ? d : (d < 30 ? d : 30);
        uint32_t len = (uint32_t)spm_rng_below(&r, tlen + 1);
        len = len > pool ? pool : len;
        draw(&r, pool, len, all + off[i]);
        w[i] = 1 + (uint32_t)spm_rng_below(&r, 3);
        off[i + 1] = off[i] + len;
    }
    ck_assert_int_eq(spm_mining_count_vertical(sets, k, n, d, off, all, w, ntrans, vert), 0);
    ck_assert_mem_eq(vert, want, n * 8);
    /* the same in chunks of 64 transactions, added in runs of 50 */
    memset(vert, 0, n * 8);
    spm_mining_vert_t *v = spm_mining_vert_new(sets, k, n, d, 64);
    ck_assert_ptr_nonnull(v);
    for (uint32_t done = 0; done < ntrans;) {
        uint32_t run = ntrans - done < 50 ? ntrans - done : 50;
        uint32_t took = spm_mining_vert_add(v, off + done, all, w + done, run);
        if (took < run)
            spm_mining_vert_flush(v, vert);
        done += took;
    }
    spm_mining_vert_flush(v, vert);
    spm_mining_vert_destroy(&v);
    ck_assert_mem_eq(vert, want, n * 8);
    spm_mining_pairs_t *pairs = k == 2 ? spm_mining_pairs_new(sets, n, d) : NULL;
    ck_assert(k != 2 || pairs != NULL); /* small domains: the pair matrix */
    if (pairs) {
        memset(vert, 0, n * 8);
        for (uint32_t i = 0; i < ntrans; i++)
            spm_mining_pairs_count(pairs, all + off[i], off[i + 1] - off[i], w[i]);
        spm_mining_pairs_finish(pairs, sets, n, vert);
        ck_assert_mem_eq(vert, want, n * 8);
        spm_mining_pairs_destroy(&pairs);
    }
    free(vert);
    free(off);
    free(w);
    free(all);
    spm_mining_trie_destroy(&t);
    spm_mining_trie_destroy(&t0);
    ck_assert_ptr_null(t);
    free(tr);
    free(sets);
    free(want);
    free(got);
    free(got0);
}

START_TEST(singletons)
{
    compare(1, 1, 50, 30, 300, 12);
}
END_TEST

START_TEST(pairs)
{
    compare(2, 2, 60, 900, 400, 20);
}
END_TEST

START_TEST(triples_and_longer)
{
    compare(3, 3, 40, 2000, 300, 25);
    compare(4, 4, 30, 3000, 200, 22);
    compare(5, 6, 20, 1500, 200, 18);
}
END_TEST

START_TEST(sparse_large_domain)
{
    compare(6, 3, 5000, 400, 300, 40);
}
END_TEST

START_TEST(empty_block)
{
    uint64_t c = 0;
    spm_mining_trie_t *t = spm_mining_trie_new(NULL, 2, 0, 10);
    ck_assert_ptr_nonnull(t);
    spm_mining_trie_count(t, (uint32_t[]){1, 2, 3}, 3, 1, &c);
    spm_mining_trie_destroy(&t);
    ck_assert_uint_eq(c, 0);
}
END_TEST

/*  Weights that overflow the pair matrix's 32-bit counters still add up. */
START_TEST(pair_counts_beyond_32_bits)
{
    uint32_t set[2] = {1, 3}, items[3] = {1, 2, 3};
    uint64_t c = 0;
    spm_mining_pairs_t *p = spm_mining_pairs_new(set, 1, 4);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(spm_mining_pairs_count(p, items, 3, UINT32_MAX), 0);
    spm_mining_pairs_finish(p, set, 1, &c);
    spm_mining_pairs_destroy(&p);
    ck_assert_uint_eq(c, 3 * (uint64_t)UINT32_MAX);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mining_count");
    const spm_test_case_t c = {.timeout_s = 30};
    SPM_TEST_ADD(s, &c, singletons);
    SPM_TEST_ADD(s, &c, pairs);
    SPM_TEST_ADD(s, &c, triples_and_longer);
    SPM_TEST_ADD(s, &c, sparse_large_domain);
    SPM_TEST_ADD(s, &c, empty_block);
    SPM_TEST_ADD(s, &c, pair_counts_beyond_32_bits);
    return s;
}

SPM_TEST_MAIN(suite)
