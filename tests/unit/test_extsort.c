/*  extsort: random variable-length records come back in the order qsort
    gives them, with budgets so small that hundreds of runs spill and are
    merged in several passes, and with one large enough to sort in memory,
    with and without a key; records that come in runs already in order
    (spm_extsort_run) are merged to the same order, also where runs span
    spills and where some records came outside any run;
    empty input, one record, all records equal; no temporary file is ever
    left in the run directory and every descriptor is closed after destroy,
    also when the directory does not exist or a write fails (a file size
    limit). */
#include "isa/core/extsort.h"
#include "isa/core/rng.h"
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "spm/spm.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/*  A record: N words, then N values. Ordered by values, then shorter first. */
static int cmp_rec(const void *a, const void *b, void *arg)
{
    (void)arg;
    const uint32_t *x = a, *y = b;
    for (uint32_t i = 0; i < x[0] && i < y[0]; i++)
        if (x[1 + i] != y[1 + i])
            return x[1 + i] < y[1 + i] ? -1 : 1;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/*  A key of the record's first *ARG values (1 or 2), 32 bits each: ties
    where they agree, so the keyed sort calls cmp_rec there. */
static uint64_t key_rec(const void *a, void *arg)
{
    const uint32_t *x = a;
    int words = *(const int *)arg;
    return (uint64_t)x[1] << 32 | (words > 1 && x[0] > 1 ? x[2] : 0);
}

static int cmp_ptr(const void *a, const void *b)
{
    return cmp_rec(*(uint32_t *const *)a, *(uint32_t *const *)b, NULL);
}

/*  Entries in DIR other than . and .. */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/*  Open descriptors of this process. */
static int open_fds(void)
{
    return dir_entries("/proc/self/fd") - 1; /* the one opendir holds */
}

/*  Sorts N random records (values below RANGE, so some repeat) with
    BUDGET, keyed by their first KEYED values (0: no key), checks them
    against qsort twice (once after a rewind), and returns the runs
    written. */
static uint64_t sort_random_keyed(size_t n, uint32_t range, size_t budget, int keyed)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, 7 + n + budget);
    uint32_t **recs = malloc((n + 1) * sizeof *recs);
    int fds = open_fds();
    spm_extsort_t *s = spm_extsort_new(budget, base, cmp_rec, NULL);
    ck_assert_ptr_nonnull(s);
    if (keyed)
        spm_extsort_set_key(s, key_rec, &keyed);
    for (size_t i = 0; i < n; i++) {
        uint32_t len = 1 + (uint32_t)spm_rng_below(&rng, 12);
        recs[i] = malloc((len + 1) * 4);
        recs[i][0] = len;
        for (uint32_t j = 0; j < len; j++)
            recs[i][1 + j] = (uint32_t)spm_rng_below(&rng, range);
        ck_assert_int_eq(spm_extsort_add(s, recs[i], (len + 1) * 4), 0);
    }
    ck_assert_int_eq(spm_extsort_sort(s), 0);
    ck_assert_uint_eq(spm_extsort_count(s), n);
    ck_assert_int_eq(dir_entries(base), 0);
    qsort(recs, n, sizeof *recs, cmp_ptr);
    for (int pass = 0; pass < 2; pass++) {
        const void *rec;
        size_t len, at = 0;
        int rc, same = 1;
        while ((rc = spm_extsort_next(s, &rec, &len)) == 1) {
            ck_assert_uint_lt(at, n);
            ck_assert_uint_eq((uintptr_t)rec % 8, 0);
            same &= len == (recs[at][0] + 1) * 4 && memcmp(rec, recs[at], len) == 0;
            at++;
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_msg(same, "records differ from qsort's order");
        ck_assert_uint_eq(at, n);
        ck_assert_int_eq(spm_extsort_next(s, &rec, &len), 0);
        ck_assert_int_eq(spm_extsort_rewind(s), 0);
    }
    uint64_t runs = spm_extsort_runs(s);
    spm_extsort_destroy(&s);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(open_fds(), fds);
    ck_assert_int_eq(dir_entries(base), 0);
    for (size_t i = 0; i < n; i++)
        free(recs[i]);
    free(recs);
    return runs;
}

static uint64_t sort_random(size_t n, uint32_t range, size_t budget)
{
    return sort_random_keyed(n, range, budget, 0);
}

/*  Adds N random records as NRUNS runs, each sorted but run BAD (when
    below NRUNS), after LOOSE records outside any run, with BUDGET (keyed
    by the first value when KEYED), and checks the order against qsort's.
    Returns the runs spilled. */
static uint64_t sort_in_runs(size_t n, size_t nruns, size_t bad, size_t loose, size_t budget,
                             int keyed)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, 11 + n + nruns + budget);
    uint32_t **recs = malloc((n + 1) * sizeof *recs);
    spm_extsort_t *s = spm_extsort_new(budget, base, cmp_rec, NULL);
    ck_assert_ptr_nonnull(s);
    if (keyed)
        spm_extsort_set_key(s, key_rec, &keyed);
    for (size_t i = 0; i < n; i++) {
        uint32_t len = 1 + (uint32_t)spm_rng_below(&rng, 6);
        recs[i] = malloc((len + 1) * 4);
        recs[i][0] = len;
        for (uint32_t j = 0; j < len; j++)
            recs[i][1 + j] = (uint32_t)spm_rng_below(&rng, 100);
    }
    for (size_t i = 0; i < loose; i++)
        ck_assert_int_eq(spm_extsort_add(s, recs[i], (recs[i][0] + 1) * 4), 0);
    /* runs of random lengths (some empty) over the rest, each sorted */
    for (size_t r = 0, at = loose; r < nruns; r++) {
        size_t end = r + 1 == nruns ? n : at + (size_t)spm_rng_below(&rng, 2 * (n - loose) / nruns);
        end = end > n ? n : end;
        if (r != bad)
            qsort(recs + at, end - at, sizeof *recs, cmp_ptr);
        ck_assert_int_eq(spm_extsort_run(s), 0);
        for (; at < end; at++)
            ck_assert_int_eq(spm_extsort_add(s, recs[at], (recs[at][0] + 1) * 4), 0);
    }
    ck_assert_int_eq(spm_extsort_sort(s), 0);
    qsort(recs, n, sizeof *recs, cmp_ptr);
    const void *rec;
    size_t len, at = 0;
    int rc, same = 1;
    while ((rc = spm_extsort_next(s, &rec, &len)) == 1) {
        ck_assert_uint_lt(at, n);
        same &= len == (recs[at][0] + 1) * 4 && memcmp(rec, recs[at], len) == 0;
        at++;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(same, "records differ from qsort's order");
    ck_assert_uint_eq(at, n);
    uint64_t runs = spm_extsort_runs(s);
    spm_extsort_destroy(&s);
    for (size_t i = 0; i < n; i++)
        free(recs[i]);
    free(recs);
    return runs;
}

START_TEST(runs_merged_like_qsort)
{
    size_t none = SIZE_MAX;
    /* in memory: many runs, one run, with and without a key */
    ck_assert_uint_eq(sort_in_runs(30000, 40, none, 0, 64 << 20, 0), 0);
    ck_assert_uint_eq(sort_in_runs(30000, 40, none, 0, 64 << 20, 1), 0);
    ck_assert_uint_eq(sort_in_runs(5000, 1, none, 0, 64 << 20, 1), 0);
    /* runs that go on past spills, and tiny runs */
    ck_assert_uint_gt(sort_in_runs(30000, 25, none, 0, 64 << 10, 1), 1);
    ck_assert_uint_gt(sort_in_runs(30000, 3000, none, 0, 64 << 10, 0), 1);
    /* records outside a run first, or a run out of order: that buffer is sorted */
    ck_assert_uint_eq(sort_in_runs(30000, 40, none, 500, 64 << 20, 1), 0);
    ck_assert_uint_gt(sort_in_runs(30000, 40, none, 500, 64 << 10, 0), 1);
    ck_assert_uint_eq(sort_in_runs(30000, 40, 17, 0, 64 << 20, 1), 0);
    ck_assert_uint_eq(sort_in_runs(30000, 40, 17, 0, 64 << 20, 0), 0);
    ck_assert_uint_gt(sort_in_runs(30000, 40, 17, 0, 64 << 10, 1), 1);
}
END_TEST

START_TEST(random_many_runs)
{
    /* about 20 records a run: over a thousand runs, merged in passes of 64 */
    ck_assert_uint_gt(sort_random(30000, 1000, 1024), 2 * SPM_EXTSORT_FANIN);
    /* a few runs, one merge */
    uint64_t runs = sort_random(30000, 50, 256 << 10);
    ck_assert_uint_gt(runs, 1);
    ck_assert_uint_le(runs, SPM_EXTSORT_FANIN);
}
END_TEST

START_TEST(random_in_memory)
{
    ck_assert_uint_eq(sort_random(30000, 1000, 64 << 20), 0);
}
END_TEST

/*  With a key: the same order, in memory and in runs, whether keys tie
    often (one value of 50) or seldom (two of 1000), on one thread and on
    two. */
START_TEST(keyed_like_qsort)
{
    ck_assert_uint_eq(sort_random_keyed(30000, 50, 64 << 20, 1), 0);
    ck_assert_uint_eq(sort_random_keyed(30000, 1000, 64 << 20, 2), 0);
    ck_assert_uint_gt(sort_random_keyed(30000, 1000, 1024, 2), 2 * SPM_EXTSORT_FANIN);
    ck_assert_uint_gt(sort_random_keyed(30000, 3, 256 << 10, 1), 1);
    /* large enough for two threads: in memory, and in runs */
    ck_assert_uint_eq(sort_random_keyed(100000, 1000, 64 << 20, 2), 0);
    ck_assert_uint_gt(sort_random_keyed(150000, 50, 4 << 20, 1), 1);
}
END_TEST

START_TEST(find_in_memory)
{
    spm_extsort_t *s = spm_extsort_new(1 << 20, base, cmp_rec, NULL);
    for (uint32_t v = 0; v < 1000; v += 2) {
        uint32_t r[3] = {2, 1000 - v, v};
        ck_assert_int_eq(spm_extsort_add(s, r, sizeof r), 0);
    }
    ck_assert_int_eq(spm_extsort_sort(s), 0);
    uint32_t key[3] = {2, 500, 500}, miss[3] = {2, 499, 501};
    const uint32_t *got = spm_extsort_find(s, key);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(got[2], 500);
    ck_assert_ptr_null(spm_extsort_find(s, miss));
    spm_extsort_destroy(&s);
}
END_TEST

START_TEST(empty_input)
{
    for (size_t budget = 64; budget <= (1 << 20); budget <<= 14) {
        spm_extsort_t *s = spm_extsort_new(budget, base, cmp_rec, NULL);
        const void *rec;
        size_t len;
        ck_assert_int_eq(spm_extsort_sort(s), 0);
        ck_assert_int_eq(spm_extsort_next(s, &rec, &len), 0);
        ck_assert_int_eq(spm_extsort_rewind(s), 0);
        ck_assert_int_eq(spm_extsort_next(s, &rec, &len), 0);
        ck_assert_uint_eq(spm_extsort_count(s), 0);
        ck_assert_uint_eq(spm_extsort_runs(s), 0);
        spm_extsort_destroy(&s);
    }
    spm_extsort_destroy(NULL);
}
END_TEST

START_TEST(one_record)
{
    spm_extsort_t *s = spm_extsort_new(64, base, cmp_rec, NULL);
    uint32_t r[2] = {1, 42};
    const uint32_t *rec;
    size_t len;
    ck_assert_int_eq(spm_extsort_add(s, r, 0), SPM_ERANGE);
    ck_assert_int_eq(spm_extsort_add(s, r, sizeof r), 0);
    ck_assert_int_eq(spm_extsort_sort(s), 0);
    ck_assert_int_eq(spm_extsort_next(s, (const void **)&rec, &len), 1);
    ck_assert_uint_eq(len, sizeof r);
    ck_assert_uint_eq(rec[1], 42);
    ck_assert_int_eq(spm_extsort_next(s, (const void **)&rec, &len), 0);
    spm_extsort_destroy(&s);
}
END_TEST

START_TEST(equal_records)
{
    /* a budget of 64 bytes: two records a run, so every merge sees ties */
    spm_extsort_t *s = spm_extsort_new(64, base, cmp_rec, NULL);
    uint32_t r[3] = {2, 7, 7};
    for (int i = 0; i < 500; i++)
        ck_assert_int_eq(spm_extsort_add(s, r, sizeof r), 0);
    ck_assert_int_eq(spm_extsort_sort(s), 0);
    ck_assert_uint_gt(spm_extsort_runs(s), 200);
    const void *rec;
    size_t len;
    int n = 0, rc;
    while ((rc = spm_extsort_next(s, &rec, &len)) == 1)
        n += len == sizeof r && memcmp(rec, r, sizeof r) == 0;
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(n, 500);
    spm_extsort_destroy(&s);
    ck_assert_int_eq(dir_entries(base), 0);
}
END_TEST

START_TEST(missing_directory)
{
    char missing[sizeof base + 16];
    snprintf(missing, sizeof missing, "%s/not-there", base);
    int fds = open_fds();
    spm_extsort_t *s = spm_extsort_new(64, missing, cmp_rec, NULL);
    uint32_t r[4] = {3, 1, 2, 3};
    int rc = 0;
    for (int i = 0; i < 10 && rc == 0; i++)
        rc = spm_extsort_add(s, r, sizeof r);
    ck_assert_int_eq(rc, SPM_EIO);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "not-there"));
    spm_extsort_destroy(&s);
    ck_assert_int_eq(open_fds(), fds);
    ck_assert_int_eq(dir_entries(base), 0);
}
END_TEST

START_TEST(write_error)
{
    /* files over 16 KiB cannot be written (the soft limit alone, restored
       at the end, in case the test does not run in a process of its own) */
    struct rlimit was, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
    lim = (struct rlimit){16 << 10, was.rlim_max};
    void (*handler)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int fds = open_fds();
    spm_extsort_t *s = spm_extsort_new(256 << 10, base, cmp_rec, NULL);
    uint32_t r[9] = {8};
    int rc = 0;
    for (uint32_t i = 0; i < 100000 && rc == 0; i++) {
        r[1] = i * 2654435761u;
        rc = spm_extsort_add(s, r, sizeof r);
    }
    if (rc == 0)
        rc = spm_extsort_sort(s);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, handler);
    ck_assert_int_eq(rc, SPM_EIO);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "cannot write a temporary file"));
    ck_assert_int_eq(dir_entries(base), 0);
    spm_extsort_destroy(&s);
    ck_assert_int_eq(open_fds(), fds);
    ck_assert_int_eq(dir_entries(base), 0);
}
END_TEST

static Suite *extsort_suite(void)
{
    Suite *s = suite_create("extsort");
    const spm_test_case_t c = {
        .timeout_s = 30, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, random_many_runs);
    SPM_TEST_ADD(s, &c, random_in_memory);
    SPM_TEST_ADD(s, &c, keyed_like_qsort);
    SPM_TEST_ADD(s, &c, runs_merged_like_qsort);
    SPM_TEST_ADD(s, &c, find_in_memory);
    SPM_TEST_ADD(s, &c, empty_input);
    SPM_TEST_ADD(s, &c, one_record);
    SPM_TEST_ADD(s, &c, equal_records);
    SPM_TEST_ADD(s, &c, missing_directory);
    SPM_TEST_ADD(s, &c, write_error);
    return s;
}

SPM_TEST_MAIN(extsort_suite)
