/*  kcount: a table counts keys of 0 to 40 bytes exactly, keys that differ
    only in length or in their last byte apart; a table made after another
    was destroyed (which hands its buffers on to the next table of the
    thread) starts empty and counts from 0, also when the first table had
    grown large; and the encoded tables merge to the sums. */
#include "runtime/si.h"
#include "spm/spm.h"
#include "tests/check_main.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  The key of number I: I's digits after 'k's, I % 41 bytes when they fit. */
static size_t key_of(unsigned i, char *buf)
{
    char digits[16];
    size_t d = (size_t)snprintf(digits, sizeof digits, "%u", i), len = i % 41 > d ? i % 41 : d;
    memset(buf, 'k', len - d);
    memcpy(buf + len - d, digits, d);
    return len;
}

/*  Adds the keys FROM to FROM + N - 1 into T, each I % 7 + 1 times, and three
    keys that differ in length or their last byte only. */
static void fill(spm_kcount_t *t, unsigned from, unsigned n)
{
    char key[64];
    for (unsigned i = from; i < from + n; i++)
        for (unsigned r = 0; r < i % 7 + 1; r++)
            ck_assert_int_eq(spm_kcount_add(t, key, key_of(i, key), 1), 0);
    ck_assert_int_eq(spm_kcount_add(t, "ab", 2, 5), 0);
    ck_assert_int_eq(spm_kcount_add(t, "ab\0", 3, 6), 0);
    ck_assert_int_eq(spm_kcount_add(t, "ac", 2, 7), 0);
}

/*  Fills a new table with N keys, destroys it and fills the next one (its
    buffers) with N other keys: it holds those only. */
static void count_and_check(unsigned n)
{
    spm_kcount_t *t = spm_kcount_new();
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(spm_kcount_size(t), 0);
    fill(t, 0, n);
    fill(t, 0, n); /* the same keys again */
    ck_assert_uint_eq(spm_kcount_size(t), n + 3);
    spm_kcount_destroy(&t);
    ck_assert_ptr_null(t);
    t = spm_kcount_new();
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(spm_kcount_size(t), 0);
    fill(t, n, n);
    ck_assert_uint_eq(spm_kcount_size(t), n + 3);
    spm_kcount_destroy(&t);
}

START_TEST(counts_are_exact_in_a_reused_table)
{
    count_and_check(1000);
    count_and_check(300000); /* grown to 2^20 slots: kept */
    count_and_check(10);     /* a small table in large buffers */
    count_and_check(1000);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kcount");
    static const spm_test_case_t big = {.timeout_s = 60};
    SPM_TEST_ADD(s, &big, counts_are_exact_in_a_reused_table);
    return s;
}

SPM_TEST_MAIN(suite)
