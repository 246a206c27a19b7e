/*  Tests of datacache/store: the center's durable LMDB store. Every test works on real LMDB
    files in a fresh mkdtemp directory that is removed at the end. */
#include "datacache/store.h"
#include "tests/check_main.h"

#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char base[64]; /* mkdtemp directory of the whole test case, removed at its end */
static char dir[96];  /* the running test's store directory, below base */

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "%s/%d", base, (int)getpid());
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Unchecked fixture: runs in the runner, so the directory goes even when a test fails. */
static void base_setup(void)
{
    strcpy(base, "/tmp/spm-store-XXXXXX");
    if (!mkdtemp(base))
        abort();
}

static void base_teardown(void)
{
    nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Fills BUF with LEN bytes derived from SEED, so a block can be checked later. */
static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
}

/* Asserts that (ID, VERSION) is stored with TYPE and the LEN bytes fill(SEED) makes. */
static void expect_block(spm_store_t *st, spm_sdb_t id, uint64_t version, uint32_t type, size_t len,
                         uint64_t seed)
{
    void *data = NULL;
    size_t n = 0;
    uint32_t t = 0;
    int rc = spm_store_get(st, id, version, NULL, &t, &data, &n);
    ck_assert_msg(rc == 0, "get %llu.%llu: %s", (unsigned long long)id, (unsigned long long)version,
                  spm_error_detail());
    ck_assert_uint_eq(t, type);
    ck_assert_uint_eq(n, len);
    uint8_t *want = malloc(len ? len : 1);
    fill(want, len, seed);
    ck_assert_msg(memcmp(data, want, len) == 0, "block %llu.%llu has other bytes",
                  (unsigned long long)id, (unsigned long long)version);
    free(want);
    free(data);
}

static int put_filled(spm_store_t *st, spm_sdb_t id, uint64_t version, size_t len, uint64_t seed)
{
    uint8_t *buf = malloc(len ? len : 1);
    fill(buf, len, seed);
    int rc = spm_store_put(st, id, version, 7, buf, len);
    free(buf);
    return rc;
}

START_TEST(test_roundtrip_and_newest)
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    ck_assert_int_eq(put_filled(st, 5, 1, 100, 51), 0);
    ck_assert_int_eq(put_filled(st, 5, 2, 3000, 52), 0);
    ck_assert_int_eq(put_filled(st, 5, 9, 10, 59), 0);
    ck_assert_int_eq(put_filled(st, 6, 1, 0, 61), 0);
    ck_assert_int_eq(put_filled(st, 4, 3, 5000, 43), 0);
    expect_block(st, 5, 1, 7, 100, 51);
    expect_block(st, 5, 2, 7, 3000, 52);
    expect_block(st, 6, 1, 7, 0, 61);

    /* version 0: the newest, with a next id after it (5) and without one (6) */
    uint64_t found = 0;
    void *data;
    size_t len;
    ck_assert_int_eq(spm_store_get(st, 5, 0, &found, NULL, &data, &len), 0);
    ck_assert_uint_eq(found, 9);
    ck_assert_uint_eq(len, 10);
    free(data);
    ck_assert_int_eq(spm_store_get(st, 6, 0, &found, NULL, &data, &len), 0);
    ck_assert_uint_eq(found, 1);
    free(data);
    ck_assert_int_eq(spm_store_get(st, 4, 0, &found, NULL, &data, &len), 0);
    ck_assert_uint_eq(found, 3);
    free(data);

    /* misses: unknown version, unknown id (between, before and after stored ids) */
    ck_assert_int_eq(spm_store_get(st, 5, 3, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "5"));
    ck_assert_int_eq(spm_store_get(st, 3, 0, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_store_get(st, 7, 0, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_store_get(st, 1, 0, NULL, NULL, &data, &len), SPM_ENOTFOUND);

    /* delete */
    ck_assert_int_eq(spm_store_delete(st, 5, 9), 0);
    ck_assert_int_eq(spm_store_get(st, 5, 0, &found, NULL, &data, &len), 0);
    ck_assert_uint_eq(found, 2);
    free(data);
    ck_assert_int_eq(spm_store_delete(st, 5, 9), SPM_ENOTFOUND);

    /* id 0 and version 0 cannot be written */
    ck_assert_int_eq(spm_store_put(st, 0, 1, 7, "x", 1), SPM_EINVAL);
    ck_assert_int_eq(spm_store_put(st, 1, 0, 7, "x", 1), SPM_EINVAL);

    spm_store_stats_t s;
    spm_store_stats(st, &s);
    ck_assert_uint_eq(s.puts, 5);
    ck_assert_uint_eq(s.bytes_put, 100 + 3000 + 10 + 0 + 5000);
    ck_assert_uint_eq(s.gets, 7);
    spm_store_close(&st);
    ck_assert_ptr_null(st);
}
END_TEST

START_TEST(test_versions_are_immutable)
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(put_filled(st, 1, 1, 4096, 11), 0);
    ck_assert_int_eq(put_filled(st, 1, 1, 4096, 11), 0);          /* same bytes: no-op */
    ck_assert_int_eq(put_filled(st, 1, 1, 4096, 12), SPM_EINVAL); /* other bytes */
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "immutable"));
    ck_assert_int_eq(put_filled(st, 1, 1, 4095, 11), SPM_EINVAL);      /* other length */
    ck_assert_int_eq(spm_store_put(st, 1, 1, 8, NULL, 0), SPM_EINVAL); /* other type */
    uint8_t buf[4096];
    fill(buf, sizeof buf, 11);
    ck_assert_int_eq(spm_store_put(st, 1, 1, 8, buf, sizeof buf), SPM_EINVAL);
    expect_block(st, 1, 1, 7, 4096, 11);

    /* in a batch a refusal changes nothing and the batch goes on */
    ck_assert_int_eq(spm_store_begin(st), 0);
    ck_assert_int_eq(put_filled(st, 2, 1, 10, 21), 0);
    ck_assert_int_eq(put_filled(st, 1, 1, 4096, 99), SPM_EINVAL);
    ck_assert_int_eq(put_filled(st, 2, 1, 10, 22), SPM_EINVAL);
    ck_assert_int_eq(spm_store_delete(st, 3, 1), SPM_ENOTFOUND);
    ck_assert_int_eq(put_filled(st, 2, 2, 10, 23), 0);
    ck_assert_int_eq(spm_store_commit(st), 0);
    expect_block(st, 1, 1, 7, 4096, 11);
    expect_block(st, 2, 1, 7, 10, 21);
    expect_block(st, 2, 2, 7, 10, 23);
    spm_store_stats_t s;
    spm_store_stats(st, &s);
    ck_assert_uint_eq(s.puts, 3); /* the no-op rewrite stored nothing */
    spm_store_close(&st);
}
END_TEST

START_TEST(test_batch_all_or_nothing)
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    void *data;
    size_t len;

    /* aborted: nothing stays, though the batch saw its own puts */
    ck_assert_int_eq(spm_store_begin(st), 0);
    ck_assert_int_eq(spm_store_begin(st), SPM_EINVAL);
    ck_assert_int_eq(put_filled(st, 10, 1, 500, 1), 0);
    ck_assert_int_eq(put_filled(st, 11, 1, 500, 2), 0);
    expect_block(st, 10, 1, 7, 500, 1);
    ck_assert_uint_eq(spm_store_max_id(st), 11);
    spm_store_abort(st);
    ck_assert_int_eq(spm_store_get(st, 10, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_store_get(st, 11, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_uint_eq(spm_store_max_id(st), 0);

    /* committed: everything, deletes included */
    ck_assert_int_eq(put_filled(st, 12, 1, 50, 3), 0);
    ck_assert_int_eq(spm_store_begin(st), 0);
    ck_assert_int_eq(put_filled(st, 10, 1, 500, 1), 0);
    ck_assert_int_eq(put_filled(st, 11, 1, 500, 2), 0);
    ck_assert_int_eq(spm_store_delete(st, 12, 1), 0);
    ck_assert_int_eq(spm_store_commit(st), 0);
    ck_assert_int_eq(spm_store_commit(st), SPM_EINVAL);
    expect_block(st, 10, 1, 7, 500, 1);
    expect_block(st, 11, 1, 7, 500, 2);
    ck_assert_int_eq(spm_store_get(st, 12, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);

    /* an empty batch commits */
    ck_assert_int_eq(spm_store_begin(st), 0);
    ck_assert_int_eq(spm_store_commit(st), 0);

    /* a batch left open at close is dropped */
    ck_assert_int_eq(spm_store_begin(st), 0);
    ck_assert_int_eq(put_filled(st, 13, 1, 5, 4), 0);
    spm_store_close(&st);
    st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(spm_store_get(st, 13, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    expect_block(st, 11, 1, 7, 500, 2);
    spm_store_close(&st);
}
END_TEST

START_TEST(test_reopen_and_max_id)
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(spm_store_max_id(st), 0);
    for (spm_sdb_t id = 1; id <= 300; id++)
        ck_assert_int_eq(put_filled(st, id * 3, id % 4 + 1, id * 7, id), 0);
    ck_assert_uint_eq(spm_store_max_id(st), 900);
    ck_assert_int_eq(put_filled(st, 0x100000000ull, 1, 1, 1), 0);
    ck_assert_uint_eq(spm_store_max_id(st), 0x100000000ull);
    ck_assert_int_eq(spm_store_delete(st, 0x100000000ull, 1), 0);
    spm_store_close(&st);

    st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(spm_store_max_id(st), 900);
    for (spm_sdb_t id = 1; id <= 300; id++)
        expect_block(st, id * 3, id % 4 + 1, 7, id * 7, id);
    spm_store_close(&st);
}
END_TEST

START_TEST(test_map_grows)
{
    make_dir();
    spm_store_t *st = spm_store_open_map(dir, 1 << 20);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(spm_store_mapsize(st), 1 << 20);
    enum { BLOCK = 128 << 10, NBLOCKS = 400 }; /* 50 MiB */
    for (int i = 0; i < NBLOCKS; i++) {
        int batch = i < NBLOCKS / 2 && i % 25 == 0; /* the first half in batches of 25 */
        if (batch)
            ck_assert_int_eq(spm_store_begin(st), 0);
        int rc = put_filled(st, (spm_sdb_t)i + 1, 1, BLOCK, (uint64_t)i);
        ck_assert_msg(rc == 0, "put %d: %s", i, spm_error_detail());
        if (i < NBLOCKS / 2 && i % 25 == 24)
            ck_assert_msg(spm_store_commit(st) == 0, "%s", spm_error_detail());
    }
    spm_store_stats_t s;
    spm_store_stats(st, &s);
    ck_assert_uint_ge(s.map_grows, 5);
    ck_assert_uint_eq(s.puts, NBLOCKS);
    ck_assert_uint_eq(s.bytes_put, (uint64_t)NBLOCKS * BLOCK);
    ck_assert_uint_ge(spm_store_mapsize(st), (size_t)NBLOCKS * BLOCK);
    for (int i = 0; i < NBLOCKS; i++)
        expect_block(st, (spm_sdb_t)i + 1, 1, 7, BLOCK, (uint64_t)i);
    spm_store_close(&st);

    st = spm_store_open_map(dir, 1 << 20); /* keeps the size the store grew to */
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_ge(spm_store_mapsize(st), (size_t)NBLOCKS * BLOCK);
    ck_assert_uint_eq(spm_store_max_id(st), NBLOCKS);
    for (int i = 0; i < NBLOCKS; i += 7)
        expect_block(st, (spm_sdb_t)i + 1, 1, 7, BLOCK, (uint64_t)i);
    spm_store_close(&st);
}
END_TEST

START_TEST(test_unwritable_dir)
{
    make_dir();
    /* a path under a regular file cannot be created, even by root */
    char file[128], path[160];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/store", file);
    ck_assert_ptr_null(spm_store_open(path));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), path));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "Not a directory"));
    MDB_env *env = NULL;
    ck_assert_int_eq(spm_store_env_open(&env, path, 1 << 20, 0, 0, 0), SPM_EIO);
    ck_assert_ptr_null(env);
    ck_assert_int_eq(spm_store_env_open(&env, file, 1 << 20, 0, 0, 0), SPM_EIO);

    if (geteuid() != 0) { /* root writes anyway: only the check above applies */
        snprintf(path, sizeof path, "%s/locked", dir);
        ck_assert_int_eq(mkdir(path, 0500), 0);
        ck_assert_ptr_null(spm_store_open(path));
        ck_assert_ptr_nonnull(strstr(spm_error_detail(), "Permission denied"));
        snprintf(path, sizeof path, "%s/locked/sub", dir);
        ck_assert_int_eq(spm_store_env_open(&env, path, 1 << 20, 0, 0, 0), SPM_EIO);
        ck_assert_ptr_nonnull(strstr(spm_error_detail(), path));
        snprintf(path, sizeof path, "%s/locked", dir);
        chmod(path, 0700);
    }
}
END_TEST

/* The crash test's child: writes batches 1, 2, ... forever. Batch K stores blocks (100 + J, K)
   for J < K % 7 + 1 and then the marker (1, K) holding that count; it starts after the newest
   marker found. */
static void crash_writer(void)
{
    spm_store_t *st = spm_store_open_map(dir, 256 << 10);
    if (!st)
        _exit(2);
    uint64_t k = 0;
    void *data;
    size_t len;
    if (spm_store_get(st, 1, 0, &k, NULL, &data, &len) == 0)
        free(data);
    for (k++;; k++) {
        uint32_t nb = (uint32_t)(k % 7 + 1);
        if (spm_store_begin(st) != 0)
            _exit(3);
        for (uint32_t j = 0; j < nb; j++)
            if (put_filled(st, 100 + j, k, 2000 + (k * 131 + j * 977) % 30000, k * 16 + j) != 0)
                _exit(4);
        if (spm_store_put(st, 1, k, 1, &nb, sizeof nb) != 0 || spm_store_commit(st) != 0)
            _exit(5);
    }
}

START_TEST(test_crash_leaves_whole_batches)
{
    make_dir();
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    uint64_t last = 0;
    for (int round = 0; round < 6; round++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
            crash_writer();
        usleep(50000 + (useconds_t)(rand() % 250000));
        ck_assert_int_eq(kill(pid, SIGKILL), 0);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFSIGNALED(status), "writer failed on its own: exit %d",
                      WEXITSTATUS(status));

        spm_store_t *st = spm_store_open(dir);
        ck_assert_msg(st != NULL, "reopen after kill: %s", spm_error_detail());
        uint64_t newest = 0;
        void *data;
        size_t len;
        if (spm_store_get(st, 1, 0, &newest, NULL, &data, &len) == 0)
            free(data);
        ck_assert_uint_ge(newest, last);
        for (uint64_t k = 1; k <= newest; k++) {
            uint32_t nb;
            ck_assert_int_eq(spm_store_get(st, 1, k, NULL, NULL, &data, &len), 0);
            ck_assert_uint_eq(len, sizeof nb);
            memcpy(&nb, data, sizeof nb);
            free(data);
            ck_assert_uint_eq(nb, k % 7 + 1);
            for (uint32_t j = 0; j < nb; j++)
                expect_block(st, 100 + j, k, 7, 2000 + (k * 131 + j * 977) % 30000, k * 16 + j);
        }
        /* nothing of the batch that was cut short */
        for (uint32_t j = 0; j < 8; j++)
            ck_assert_int_eq(spm_store_get(st, 100 + j, newest + 1, NULL, NULL, &data, &len),
                             SPM_ENOTFOUND);
        ck_assert_uint_eq(spm_store_max_id(st), newest ? 100 + (newest < 6 ? newest : 6) : 0);
        spm_store_close(&st);
        last = newest;
    }
    ck_assert_msg(last > 6, "the writer committed only %llu batches", (unsigned long long)last);
}
END_TEST

START_TEST(test_disk_full)
{
    make_dir();
    /* A file size limit stands in for a full disk: writes past it fail with EFBIG. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {4 << 20, 4 << 20};
        spm_store_t *st = spm_store_open_map(dir, 1 << 20);
        if (!st || setrlimit(RLIMIT_FSIZE, &lim) != 0)
            _exit(100);
        int i, rc = 0;
        for (i = 1; i <= 200 && rc == 0; i++)
            rc = put_filled(st, (spm_sdb_t)i, 1, 64 << 10, (uint64_t)i);
        if (rc != SPM_EFULL || !strstr(spm_error_detail(), dir)) {
            fprintf(stderr, "put %d: %d %s\n", i, rc, spm_error_detail());
            _exit(101);
        }
        spm_store_close(&st);
        _exit(i - 2); /* the number of blocks stored */
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    int stored = WEXITSTATUS(status);
    ck_assert_msg(stored > 10 && stored < 64, "child stored %d blocks", stored);
    spm_store_t *st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(spm_store_max_id(st), (spm_sdb_t)stored);
    for (int i = 1; i <= stored; i++)
        expect_block(st, (spm_sdb_t)i, 1, 7, 64 << 10, (uint64_t)i);
    spm_store_close(&st);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, test_roundtrip_and_newest);
    tcase_add_test(tc, test_versions_are_immutable);
    tcase_add_test(tc, test_batch_all_or_nothing);
    tcase_add_test(tc, test_reopen_and_max_id);
    tcase_add_test(tc, test_map_grows);
    tcase_add_test(tc, test_unwritable_dir);
    tcase_add_test(tc, test_crash_leaves_whole_batches);
    tcase_add_test(tc, test_disk_full);
    suite_add_tcase(s, tc);
    return s;
}

SPM_TEST_MAIN(store_suite)
