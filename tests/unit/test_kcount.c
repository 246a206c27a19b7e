/*  kcount: a table counts keys of 0 to 40 bytes exactly, keys that differ
    only in length or in their last byte apart; a table made after another
    was destroyed (which hands its buffers on to the next table of the
    thread) starts empty and counts from 0, also when the first table had
    grown large; and a table's block (spm_si_put_kcount) lists every key
    once, in memcmp order, with its count: keys of up to 16 bytes and
    longer ones that share their first 16 bytes or differ only in length;
    and the merge SI of an ACC group of many tables (folded in two halves
    at once) gives the block that folding them one by one gives. */
#include "runtime/registry.h"
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

/*  Counts the keys of long_keys_count's list into ACC: KEY_TIMES[i] of key i. */
static const char *const long_keys[] = {
    "abcdefghijklmnop",  "abcdefghijklmnopq", "abcdefghijklmnopr",   "abcdefghijklmnopqrstuvwxyz12",
    "abcdefghijklmnoo",  "abcdefghijklmno",   "abcdefghijklmnopq\0", "",
    "abcdefghijklmnopqz"};
static const uint64_t key_times[] = {3, 5, 7, 11, 13, 17, 19, 23, 29};
#define NKEYS (sizeof long_keys / sizeof *long_keys)
static size_t long_key_len(size_t i)
{
    return i == 6 ? 18 : strlen(long_keys[i]);
}

static int count_long_keys(spm_si_ctx_t *ctx)
{
    spm_kcount_t *t = spm_kcount_new();
    for (size_t r = 0; r < 2; r++) /* twice, in two orders */
        for (size_t j = 0; j < NKEYS; j++) {
            size_t i = r ? NKEYS - 1 - j : j;
            for (uint64_t n = 0; n < key_times[i]; n++)
                if (spm_kcount_add(t, long_keys[i], long_key_len(i), 1) != 0)
                    return SPM_EINVAL;
        }
    return spm_si_put_kcount(ctx, 0, &t);
}

START_TEST(long_keys_are_written_in_order_with_their_counts)
{
    spm_opcode_register(&(spm_opcode_t){.name = "test.longkeys", .exec = count_long_keys});
    spm_si_operand_t op = {.mode = SPM_W};
    ck_assert_int_eq(spm_si_exec_local("test.longkeys", &op, 1, NULL, 0, NULL, NULL), 0);
    ck_assert(op.has_out);
    size_t pos = 0, klen, prev = 0, seen = 0;
    const char *key, *pkey = NULL;
    uint64_t count;
    int rc;
    while ((rc = spm_kcount_next(op.out, op.out_len, &pos, &key, &klen, &count)) == 1) {
        size_t i = 0;
        while (i < NKEYS && !(long_key_len(i) == klen && !memcmp(long_keys[i], key, klen)))
            i++;
        ck_assert_msg(i < NKEYS, "a key never added: %.*s", (int)klen, key);
        ck_assert_uint_eq(count, 2 * key_times[i]);
        if (pkey) {
            int c = memcmp(pkey, key, prev < klen ? prev : klen);
            ck_assert_msg(c < 0 || (c == 0 && prev < klen), "out of order: %.*s", (int)klen, key);
        }
        pkey = key, prev = klen, seen++;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(seen, NKEYS);
    free(op.out);
}
END_TEST

/*  Table P of merge_si_equals_the_fold's group: the keys "wP0" .. and
    "shared" (4 + P % 5 times) and the long "abcdefghijklmnopqrstuvwxyz<P % 3>". */
static int count_part(spm_si_ctx_t *ctx)
{
    size_t plen;
    const unsigned char *p = spm_si_params(ctx, &plen);
    spm_kcount_t *t = spm_kcount_new();
    char key[64];
    for (unsigned i = 0; i < 50u + *p; i++) {
        int n = snprintf(key, sizeof key, "w%u", (i * 7 + *p) % 97);
        if (spm_kcount_add(t, key, (size_t)n, 1) != 0)
            return SPM_EINVAL;
    }
    int n = snprintf(key, sizeof key, "abcdefghijklmnopqrstuvwxyz%u", *p % 3u);
    if (spm_kcount_add(t, "shared", 6, 4 + *p % 5) != 0 ||
        spm_kcount_add(t, key, (size_t)n, 1) != 0)
        return SPM_EINVAL;
    return spm_si_put_kcount(ctx, 0, &t);
}

START_TEST(merge_si_equals_the_fold)
{
    enum { PARTS = 21 };
    spm_opcode_register(&(spm_opcode_t){.name = "test.part", .exec = count_part});
    spm_si_operand_t ops[PARTS + 1];
    for (unsigned char p = 0; p < PARTS; p++) {
        spm_si_operand_t w = {.mode = SPM_W};
        ck_assert_int_eq(spm_si_exec_local("test.part", &w, 1, &p, 1, NULL, NULL), 0);
        ops[p] = (spm_si_operand_t){.mode = SPM_R, .in = w.out, .in_len = w.out_len};
    }
    const spm_sdb_type_t *type = spm_sdb_type_find(SPM_KCOUNT);
    void *fold = NULL;
    size_t fold_len = 0;
    for (size_t p = 0; p < PARTS; p++) {
        void *out;
        size_t out_len;
        ck_assert_int_eq(type->merge(fold, fold_len, ops[p].in, ops[p].in_len, &out, &out_len), 0);
        free(fold);
        fold = out, fold_len = out_len;
    }
    for (size_t n = 1; n <= PARTS; n += 4) { /* n partials: folded one by one below 8 */
        void *want = NULL;
        size_t want_len = 0;
        for (size_t p = 0; p < n; p++) {
            void *out;
            size_t out_len;
            ck_assert_int_eq(type->merge(want, want_len, ops[p].in, ops[p].in_len, &out, &out_len),
                             0);
            free(want);
            want = out, want_len = out_len;
        }
        spm_si_operand_t m[PARTS + 1];
        memcpy(m, ops, n * sizeof *m);
        m[n] = (spm_si_operand_t){.mode = SPM_W};
        uint32_t id = spm_name_id(SPM_KCOUNT);
        unsigned char params[4] = {(unsigned char)id, (unsigned char)(id >> 8),
                                   (unsigned char)(id >> 16), (unsigned char)(id >> 24)};
        ck_assert_int_eq(spm_si_exec_local("spm.merge", m, n + 1, params, 4, NULL, NULL), 0);
        ck_assert_uint_eq(m[n].out_len, want_len);
        ck_assert_msg(!memcmp(m[n].out, want, want_len), "%zu partials merged differently", n);
        if (n == PARTS)
            ck_assert(!memcmp(m[n].out, fold, fold_len));
        free(m[n].out);
        free(want);
    }
    for (size_t p = 0; p < PARTS; p++)
        free((void *)ops[p].in);
    free(fold);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kcount");
    static const spm_test_case_t big = {.timeout_s = 60};
    SPM_TEST_ADD(s, &big, counts_are_exact_in_a_reused_table);
    SPM_TEST_ADD(s, &big, long_keys_are_written_in_order_with_their_counts);
    SPM_TEST_ADD(s, &big, merge_si_equals_the_fold);
    return s;
}

SPM_TEST_MAIN(suite)
