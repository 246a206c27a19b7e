/*  Tests of datacache/warmer: the store's file prepared ahead of its data.
    Real LMDB stores in a fresh mkdtemp directory, removed at the end; the
    pages in memory are read with mincore. */
#include "datacache/store.h"
#include "datacache/warmer.h"
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "transport/wire.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

static uint64_t file_size(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", base);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

/*  Share of the pages of the data file in [FROM, TO) that are in memory. */
static double resident(uint64_t from, uint64_t to)
{
    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", base);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    void *map = mmap(NULL, to, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (to - from) / page, in = 0;
    unsigned char *vec = malloc(n);
    ck_assert_int_eq(mincore((char *)map + from, n * page, vec), 0);
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    munmap(map, to);
    close(fd);
    return (double)in / (double)n;
}

/*  A block of LEN bytes whose content tells SEED. */
static void *block(size_t len, unsigned seed)
{
    unsigned char *b = malloc(len);
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)(i * 31 + seed);
    return b;
}

static void expect(spm_store_t *st, spm_sdb_t id, size_t len, unsigned seed)
{
    void *data, *want = block(len, seed);
    size_t n;
    uint32_t type;
    ck_assert_int_eq(spm_store_get(st, id, 1, NULL, &type, &data, &n), 0);
    ck_assert_uint_eq(n, len);
    ck_assert_msg(memcmp(data, want, len) == 0, "block %llu changed", (unsigned long long)id);
    free(data);
    free(want);
}

/*  Whether the file system of DIR allocates with fallocate; the warmer
    stops at once where it does not, and these tests then say so and pass. */
static int can_fallocate(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/probe", base);
    int fd = open(path, O_CREAT | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    int ok = fallocate(fd, 0, 0, 1 << 20) == 0;
    close(fd);
    unlink(path);
    if (!ok)
        printf("test_warmer: %s has no fallocate: nothing to prepare there, skipped\n", base);
    return ok;
}

/*  Waits up to 3 s for the warmer to have prepared BYTES. */
static uint64_t wait_prepared(spm_warmer_t *w, uint64_t bytes)
{
    uint64_t t0 = spm_now_us();
    while (spm_warmer_prepared(w) < bytes && spm_now_us() - t0 < 3000000)
        usleep(10000);
    return spm_warmer_prepared(w);
}

START_TEST(prepares_ahead_only_while_quiet_and_blocks_survive)
{
    if (!can_fallocate())
        return;
    spm_store_t *st = spm_store_open(base);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    void *b = block(MIB, 1);
    ck_assert_int_eq(spm_store_put(st, 1, 1, 7, b, MIB), 0);
    free(b);
    uint64_t end = spm_store_data_end(st), size = file_size();
    ck_assert_uint_gt(end, MIB);
    ck_assert_uint_le(end, size);

    spm_warmer_t *w = spm_warmer_start(base, 32 * MIB);
    ck_assert_ptr_nonnull(w);
    spm_warmer_note(w, end, 0); /* a job runs: hands off */
    usleep(300000);
    ck_assert_uint_eq(spm_warmer_prepared(w), 0);
    ck_assert_uint_eq(file_size(), size);

    spm_warmer_note(w, end, 1);
    ck_assert_uint_eq(wait_prepared(w, 32 * MIB), 32 * MIB);
    ck_assert_uint_ge(file_size(), end + 32 * MIB);
    double in = resident(end, end + 32 * MIB);
    ck_assert_msg(in > 0.9, "only %.0f%% of the prepared pages are in memory", in * 100);

    /* the next block lands in the prepared part, and the warmer follows in
       steps of 8 MiB */
    b = block(12 * MIB, 2);
    ck_assert_int_eq(spm_store_put(st, 2, 1, 7, b, 12 * MIB), 0);
    free(b);
    uint64_t end2 = spm_store_data_end(st);
    ck_assert_uint_ge(end2, end + 12 * MIB);
    spm_warmer_note(w, end2, 1);
    ck_assert_uint_ge(wait_prepared(w, 40 * MIB), 40 * MIB);
    ck_assert_uint_ge(file_size(), end2 + 32 * MIB - 8 * MIB);
    spm_warmer_destroy(&w);
    ck_assert_ptr_null(w);
    spm_store_destroy(&st);

    /* a longer file than its data is still the same store */
    st = spm_store_open(base);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    expect(st, 1, MIB, 1);
    expect(st, 2, 12 * MIB, 2);
    ck_assert_uint_eq(spm_store_data_end(st), end2);
    spm_store_destroy(&st);
}
END_TEST

START_TEST(stays_well_below_a_file_size_limit)
{
    if (!can_fallocate())
        return;
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {24 * MIB, 24 * MIB};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    spm_store_t *st = spm_store_open(base);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    spm_warmer_t *w = spm_warmer_start(base, 256 * MIB);
    spm_warmer_note(w, spm_store_data_end(st), 1);
    wait_prepared(w, 256 * MIB); /* gives up after 3 s: it may not get there */
    ck_assert_uint_le(file_size(), 18 * MIB);
    ck_assert_uint_gt(spm_warmer_prepared(w), 0);
    /* the store still takes blocks up to the limit */
    void *b = block(4 * MIB, 3);
    ck_assert_int_eq(spm_store_put(st, 1, 1, 7, b, 4 * MIB), 0);
    free(b);
    spm_warmer_destroy(&w);
    expect(st, 1, 4 * MIB, 3);
    spm_store_destroy(&st);
}
END_TEST

START_TEST(nothing_to_prepare_starts_nothing)
{
    ck_assert_ptr_null(spm_warmer_start(base, 0));
    ck_assert_ptr_null(spm_warmer_start(base, MIB)); /* under one step */
    spm_warmer_note(NULL, 1, 1);                     /* the center calls it either way */
    spm_warmer_t *none = NULL;
    spm_warmer_destroy(&none);
}
END_TEST

static Suite *warmer_suite(void)
{
    Suite *s = suite_create("warmer");
    const spm_test_case_t c = {
        .timeout_s = 60, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, prepares_ahead_only_while_quiet_and_blocks_survive);
    SPM_TEST_ADD(s, &c, stays_well_below_a_file_size_limit);
    SPM_TEST_ADD(s, &c, nothing_to_prepare_starts_nothing);
    return s;
}

SPM_TEST_MAIN(warmer_suite)
