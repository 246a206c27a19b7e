/*  =========================================================================
    test_mining_quest - the IBM Quest generator: reproducible, on target
    =========================================================================
*/
#include "programs/apriori/quest.h"
#include "tests/check_main.h"

#include <string.h>

/*  FNV-1a over every transaction of P, and the mean size and item range. */
static uint64_t digest(const spm_quest_params_t *p, double *mean, uint32_t *maxitem)
{
    spm_quest_t *q = spm_quest_new(p);
    ck_assert_ptr_nonnull(q);
    const uint32_t *items;
    size_t n, total = 0, count = 0;
    int sorted = 1;
    uint64_t h = 1469598103934665603ull;
    *maxitem = 0;
    while (spm_quest_next(q, &items, &n) == 1) {
        count++;
        total += n;
        for (size_t i = 0; i < n; i++) {
            sorted &= i == 0 || items[i - 1] < items[i]; /* sorted, distinct */
            *maxitem = items[i] > *maxitem ? items[i] : *maxitem;
            h = (h ^ items[i]) * 1099511628211ull;
        }
        h = (h ^ 0xffffffffu) * 1099511628211ull;
    }
    ck_assert(sorted);
    ck_assert_uint_eq(count, p->transactions);
    *mean = (double)total / (double)count;
    spm_quest_destroy(&q);
    return h;
}

START_TEST(same_seed_same_data)
{
    spm_quest_params_t p;
    spm_quest_defaults(&p);
    p.transactions = 2000;
    double m1, m2, m3;
    uint32_t x1, x2, x3;
    uint64_t a = digest(&p, &m1, &x1), b = digest(&p, &m2, &x2);
    p.seed = 2;
    uint64_t c = digest(&p, &m3, &x3);
    ck_assert_uint_eq(a, b);
    ck_assert_uint_ne(a, c);
}
END_TEST

START_TEST(sizes_near_parameters)
{
    spm_quest_params_t p;
    spm_quest_defaults(&p);
    p.transactions = 20000;
    double mean;
    uint32_t maxitem;
    digest(&p, &mean, &maxitem); /* T10I4 */
    ck_assert_double_eq_tol(mean, 10, 1.0);
    ck_assert_uint_lt(maxitem, p.items);
    p.avg_size = 25;
    p.avg_pattern = 10;
    p.patterns = 10000;
    digest(&p, &mean, &maxitem); /* T25I10 */
    ck_assert_double_eq_tol(mean, 25, 2.0);
}
END_TEST

START_TEST(patterns_make_frequent_pairs)
{
    /* Patterns make some pairs far more frequent than independent items
       would: the most frequent pair of a Quest database beats the product
       of its items' frequencies. */
    spm_quest_params_t p;
    spm_quest_defaults(&p);
    p.transactions = 5000;
    p.items = 50;
    p.patterns = 20;
    spm_quest_t *q = spm_quest_new(&p);
    static uint32_t single[50], pair[50][50];
    const uint32_t *items;
    size_t n;
    while (spm_quest_next(q, &items, &n) == 1)
        for (size_t i = 0; i < n; i++) {
            single[items[i]]++;
            for (size_t j = i + 1; j < n; j++)
                pair[items[i]][items[j]]++;
        }
    spm_quest_destroy(&q);
    double best = 0;
    for (int a = 0; a < 50; a++)
        for (int b = a + 1; b < 50; b++) {
            double expect = (double)single[a] * single[b] / p.transactions;
            if (expect > 0 && pair[a][b] / expect > best)
                best = pair[a][b] / expect;
        }
    ck_assert_double_gt(best, 2.0);
}
END_TEST

START_TEST(bad_parameters)
{
    spm_quest_params_t p;
    spm_quest_defaults(&p);
    p.items = 0;
    ck_assert_ptr_null(spm_quest_new(&p));
    spm_quest_defaults(&p);
    p.corruption = 1.5;
    ck_assert_ptr_null(spm_quest_new(&p));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mining_quest");
    const spm_test_case_t c = {.timeout_s = 30};
    SPM_TEST_ADD(s, &c, same_seed_same_data);
    SPM_TEST_ADD(s, &c, sizes_near_parameters);
    SPM_TEST_ADD(s, &c, patterns_make_frequent_pairs);
    SPM_TEST_ADD(s, &c, bad_parameters);
    return s;
}

SPM_TEST_MAIN(suite)
