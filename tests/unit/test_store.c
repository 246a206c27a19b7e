/*  Tests of datacache/store: the center's durable LMDB store. Every test works on real LMDB
    files in a fresh mkdtemp directory that is removed at the end. */
#include "datacache/lmdbenv.h"
#include "datacache/store.h"
#include "datacache/storeview.h"
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "tests/mapped.h"

#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[96]; /* the running test's store directory, below base */

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "%s/%d", base, (int)getpid());
    ck_assert_int_eq(mkdir(dir, 0700), 0);
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

/* Waits for child PID and returns its exit status, or -1 when it died of a signal. */
static int child_exit(pid_t pid)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
    spm_store_destroy(&st);
    ck_assert_ptr_null(st);
}
END_TEST

/* Blocks of 1 MiB and more are copied in past the caches (16-byte stores
   after an unaligned head, then a tail): every byte must still arrive. */
START_TEST(test_large_blocks_arrive_whole)
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    ck_assert_int_eq(put_filled(st, 1, 1, (3 << 20) + 13, 71), 0);
    ck_assert_int_eq(put_filled(st, 1, 2, 1 << 20, 72), 0);
    ck_assert_int_eq(put_filled(st, 2, 1, (1 << 20) - 1, 73), 0);
    expect_block(st, 1, 1, 7, (3 << 20) + 13, 71);
    expect_block(st, 1, 2, 7, 1 << 20, 72);
    expect_block(st, 2, 1, 7, (1 << 20) - 1, 73);
    spm_store_destroy(&st);
}
END_TEST

START_TEST(test_delete_all_takes_every_version_of_one_block)
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    uint64_t blocks = 9, bytes = 0;
    ck_assert_int_eq(spm_store_usage(st, &blocks, &bytes), 0);
    ck_assert_uint_eq(blocks, 0); /* the identity record is not a block */
    ck_assert_int_eq(put_filled(st, 4, 1, 10, 41), 0);
    for (uint64_t v = 1; v <= 3; v++)
        ck_assert_int_eq(put_filled(st, 5, v, 20000, 50 + v), 0); /* overflow pages */
    ck_assert_int_eq(put_filled(st, 6, 1, 10, 61), 0);
    uint64_t full;
    ck_assert_int_eq(spm_store_usage(st, &blocks, &full), 0);
    ck_assert_uint_eq(blocks, 5);
    ck_assert_uint_ge(full, 3 * 20000);

    ck_assert_int_eq(spm_store_begin(st), 0); /* in a batch, as the center deletes */
    ck_assert_int_eq(spm_store_delete_all(st, 5), 0);
    ck_assert_int_eq(spm_store_delete_all(st, 77), 0); /* nothing stored: no error */
    ck_assert_int_eq(spm_store_commit(st), 0);
    void *data;
    size_t len;
    ck_assert_int_eq(spm_store_get(st, 5, 0, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    expect_block(st, 4, 1, 7, 10, 41); /* its neighbours stay */
    expect_block(st, 6, 1, 7, 10, 61);
    ck_assert_int_eq(spm_store_usage(st, &blocks, &bytes), 0);
    ck_assert_uint_eq(blocks, 2);
    ck_assert_uint_lt(bytes, full - 3 * 20000);

    ck_assert_int_eq(spm_store_delete_all(st, 0), 0); /* never the identity record */
    spm_store_destroy(&st);
    ck_assert_ptr_nonnull(st = spm_store_open(dir));
    expect_block(st, 4, 1, 7, 10, 41);
    spm_store_destroy(&st);
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
    spm_store_destroy(&st);
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
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), 11);
    spm_store_abort(st);
    ck_assert_int_eq(spm_store_get(st, 10, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_store_get(st, 11, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), 0);

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
    spm_store_destroy(&st);
    st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(spm_store_get(st, 13, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    expect_block(st, 11, 1, 7, 500, 2);
    spm_store_destroy(&st);
}
END_TEST

START_TEST(test_reopen_and_max_id)
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), 0);
    for (spm_sdb_t id = 1; id <= 300; id++)
        ck_assert_int_eq(put_filled(st, id * 3, id % 4 + 1, id * 7, id), 0);
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), 900);
    ck_assert_int_eq(put_filled(st, 0x100000000ull, 1, 1, 1), 0);
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), 0x100000000ull);
    /* a job's SDBs count from 2^32 up: the largest put below them */
    ck_assert_uint_eq(spm_store_max_id(st, 0x100000000ull), 900);
    ck_assert_uint_eq(spm_store_max_id(st, 900), 897);
    ck_assert_uint_eq(spm_store_max_id(st, 3), 0);
    ck_assert_int_eq(spm_store_delete(st, 0x100000000ull, 1), 0);
    spm_store_destroy(&st);

    st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), 900);
    for (spm_sdb_t id = 1; id <= 300; id++)
        expect_block(st, id * 3, id % 4 + 1, 7, id * 7, id);
    spm_store_destroy(&st);
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
    spm_store_destroy(&st);

    st = spm_store_open_map(dir, 1 << 20); /* keeps the size the store grew to */
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_ge(spm_store_mapsize(st), (size_t)NBLOCKS * BLOCK);
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), NBLOCKS);
    for (int i = 0; i < NBLOCKS; i += 7)
        expect_block(st, (spm_sdb_t)i + 1, 1, 7, BLOCK, (uint64_t)i);
    spm_store_destroy(&st);
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
        ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX),
                          newest ? 100 + (newest < 6 ? newest : 6) : 0);
        spm_store_destroy(&st);
        last = newest;
    }
    ck_assert_msg(last > 6, "the writer committed only %llu batches", (unsigned long long)last);
}
END_TEST

/* In a forked child: opens a store in DIR with a 1 MiB map, then limits the files this
   process writes to 4 MiB, a full disk's stand-in (writes past it fail with EFBIG). Exits
   100 when either fails. */
static spm_store_t *open_limited(void)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {4 << 20, 4 << 20};
    spm_store_t *st = spm_store_open_map(dir, 1 << 20);
    if (!st || setrlimit(RLIMIT_FSIZE, &lim) != 0)
        _exit(100);
    return st;
}

START_TEST(test_disk_full)
{
    make_dir();
    /* A file size limit stands in for a full disk: writes past it fail with EFBIG. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int i, rc = 0;
        spm_store_t *st = open_limited();
        for (i = 1; i <= 200 && rc == 0; i++)
            rc = put_filled(st, (spm_sdb_t)i, 1, 64 << 10, (uint64_t)i);
        if (rc != SPM_EFULL || !strstr(spm_error_detail(), dir)) {
            fprintf(stderr, "put %d: %d %s\n", i, rc, spm_error_detail());
            _exit(101);
        }
        spm_store_destroy(&st);
        _exit(i - 2); /* the number of blocks stored */
    }
    int stored = child_exit(pid);
    ck_assert_msg(stored > 10 && stored < 64, "child stored %d blocks", stored);
    spm_store_t *st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), (spm_sdb_t)stored);
    for (int i = 1; i <= stored; i++)
        expect_block(st, (spm_sdb_t)i, 1, 7, 64 << 10, (uint64_t)i);
    spm_store_destroy(&st);
}
END_TEST

/* ------------------------------------------------------------- sweep */

START_TEST(test_space_a_deletion_freed_serves_the_next_put)
{
    make_dir();
    /* A store filled until a put fails, then every block deleted in one
       transaction (as the center deletes a discarded job's): LMDB reuses
       freed pages only from the commit after next, and a put that fails
       commits nothing, so every put after the deletion failed for good
       unless the store commits once more first. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int i, rc = 0;
        spm_store_t *st = open_limited();
        for (i = 1; i <= 200 && rc == 0; i++)
            rc = put_filled(st, (spm_sdb_t)i, 1, 64 << 10, (uint64_t)i);
        int stored = i - 2;
        if (rc != SPM_EFULL || spm_store_begin(st) != 0)
            _exit(101);
        for (i = 1; i <= stored; i++)
            spm_store_delete_all(st, (spm_sdb_t)i);
        if ((rc = spm_store_commit(st)) != 0) {
            fprintf(stderr, "deleting %d blocks: %s\n", stored, spm_error_detail());
            _exit(102);
        }
        for (i = 1; i <= stored / 2; i++) /* half: LMDB's own bookkeeping takes some */
            if ((rc = put_filled(st, (spm_sdb_t)(1000 + i), 1, 64 << 10, (uint64_t)i)) != 0) {
                fprintf(stderr, "put %d of %d after the deletion: %s\n", i, stored / 2,
                        spm_error_detail());
                _exit(103);
            }
        spm_store_destroy(&st);
        _exit(0);
    }
    ck_assert_int_eq(child_exit(pid), 0);
}
END_TEST

/* Sweep keep: even ids keep only version 2, odd ids keep every version; id 5 goes whole. */
static int keep_some(void *arg, spm_sdb_t id, uint64_t version)
{
    (*(int *)arg)++;
    return id != 5 && (id % 2 == 1 || version == 2);
}

START_TEST(test_sweep_deletes_what_nothing_refers_to)
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_ptr_nonnull(st);
    uint8_t id0[16], id1[16];
    spm_store_identity(st, id0);
    for (int i = 1; i <= 200; i++)
        for (int v = 1; v <= 2; v++)
            ck_assert_int_eq(
                put_filled(st, (spm_sdb_t)i, (uint64_t)v, 3000, (uint64_t)(i * 10 + v)), 0);
    int asked = 0;
    uint64_t freed = 0, bytes = 0;
    ck_assert_int_eq(spm_store_begin(st), 0);
    ck_assert_int_eq(spm_store_sweep(st, keep_some, &asked, &freed, &bytes), SPM_EINVAL);
    spm_store_abort(st);
    ck_assert_int_eq(spm_store_sweep(st, keep_some, &asked, &freed, &bytes), 0);
    ck_assert_int_eq(asked, 400);      /* every block asked about once; not the identity record */
    ck_assert_uint_eq(freed, 100 + 2); /* version 1 of the 100 even ids, both of id 5 */
    ck_assert_uint_eq(bytes, 102 * 3000);
    uint64_t blocks = 0, used = 0;
    ck_assert_int_eq(spm_store_usage(st, &blocks, &used), 0);
    ck_assert_uint_eq(blocks, 400 - 102);
    for (int i = 1; i <= 200; i++)
        for (int v = 1; v <= 2; v++) {
            asked = 0;
            if (keep_some(&asked, (spm_sdb_t)i, (uint64_t)v))
                expect_block(st, (spm_sdb_t)i, (uint64_t)v, 7, 3000, (uint64_t)(i * 10 + v));
            else
                ck_assert_int_eq(spm_store_stat(st, (spm_sdb_t)i, (uint64_t)v, NULL, NULL),
                                 SPM_ENOTFOUND);
        }
    asked = 0; /* a second sweep finds nothing more */
    ck_assert_int_eq(spm_store_sweep(st, keep_some, &asked, &freed, NULL), 0);
    ck_assert_uint_eq(freed, 0);
    ck_assert_int_eq(asked, 400 - 102);
    spm_store_destroy(&st);
    st = spm_store_open(dir); /* the identity record was not swept */
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    spm_store_identity(st, id1);
    ck_assert_mem_eq(id0, id1, 16);
    spm_store_destroy(&st);
}
END_TEST

static int keep_none(void *arg, spm_sdb_t id, uint64_t version)
{
    (void)arg;
    (void)id;
    (void)version;
    return 0;
}

START_TEST(test_sweep_frees_a_full_store)
{
    make_dir();
    /* As test_disk_full: a file size limit stands in for a full disk. The
       store is filled until a put fails, then swept: every block goes, in
       transactions small enough to find pages on a full disk, and puts
       succeed again in the space freed. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int i, rc = 0;
        spm_store_t *st = open_limited();
        for (i = 1; i <= 2000 && rc == 0; i++)
            rc = put_filled(st, (spm_sdb_t)i, 1, 1500, (uint64_t)i);
        if (rc != SPM_EFULL)
            _exit(101);
        int stored = i - 2;
        uint64_t freed = 0;
        if ((rc = spm_store_sweep(st, keep_none, NULL, &freed, NULL)) != 0) {
            fprintf(stderr, "sweep of %d blocks: %s (%llu freed)\n", stored, spm_error_detail(),
                    (unsigned long long)freed);
            _exit(102);
        }
        if (freed != (uint64_t)stored)
            _exit(103);
        for (i = 1; i <= stored / 2; i++)
            if ((rc = put_filled(st, (spm_sdb_t)(10000 + i), 1, 1500, (uint64_t)i)) != 0) {
                fprintf(stderr, "put %d of %d after the sweep: %s\n", i, stored / 2,
                        spm_error_detail());
                _exit(104);
            }
        spm_store_destroy(&st);
        _exit(0);
    }
    ck_assert_int_eq(child_exit(pid), 0);
}
END_TEST

/* ------------------------------------------------- identity and views */

/* 1 when P points into this process's memory map of DIR/data.mdb: read without a copy. */
static int in_map(const void *p)
{
    char file[160];
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    return spm_test_mapped(file, p);
}

/* 1 when the LEN bytes at P are those fill(SEED) makes. */
static int same_bytes(const void *p, size_t len, uint64_t seed)
{
    uint8_t *want = malloc(len ? len : 1);
    fill(want, len, seed);
    int same = memcmp(p, want, len) == 0;
    free(want);
    return same;
}

/* 1 when block (ID, VERSION) of SNAP is of type 7 and holds the LEN bytes of fill(SEED); its
   address goes to *WHERE (may be NULL). */
static int snap_block_ok(spm_store_snap_t *snap, spm_sdb_t id, uint64_t version, size_t len,
                         uint64_t seed, const void **where)
{
    const void *p;
    size_t n;
    uint32_t type;
    if (spm_store_snap_get(snap, id, version, &type, &p, &n) != 0) {
        fprintf(stderr, "snap get %llu.%llu: %s\n", (unsigned long long)id,
                (unsigned long long)version, spm_error_detail());
        return 0;
    }
    if (where)
        *where = p;
    return type == 7 && n == len && same_bytes(p, len, seed);
}

/* Makes the running test's directory and opens a new store in it; its identity goes to ID. */
static spm_store_t *open_fresh(uint8_t id[16])
{
    make_dir();
    spm_store_t *st = spm_store_open(dir);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    spm_store_identity(st, id);
    return st;
}

/* The reader process of test_view_in_another_process; returns its exit status. */
static int view_reader(const uint8_t id[16])
{
    spm_store_view_t *v = spm_store_view_open(dir, id);
    if (!v) {
        fprintf(stderr, "view open: %s\n", spm_error_detail());
        return 1;
    }
    spm_store_snap_t *snap = spm_store_view_snap(v);
    if (!snap)
        return 2;
    const void *p = NULL;
    if (!snap_block_ok(snap, 8, 1, 64 << 10, 81, &p))
        return 3;
    if (!in_map(p))
        return 4;
    if ((uintptr_t)p % 8 != 0)
        return 5;
    if (!snap_block_ok(snap, 8, 2, 100, 82, NULL) || !snap_block_ok(snap, 9, 1, 0, 91, NULL))
        return 6;
    const void *d;
    size_t n;
    if (spm_store_snap_get(snap, 8, 3, NULL, &d, &n) != SPM_ENOTFOUND ||
        spm_store_snap_get(snap, 8, 0, NULL, &d, &n) != SPM_ENOTFOUND ||
        spm_store_snap_get(snap, 0, 0, NULL, &d, &n) != SPM_ENOTFOUND)
        return 7;
    spm_store_snap_t *second = spm_store_view_snap(v); /* two at once, in one thread */
    if (!second || !snap_block_ok(second, 8, 1, 64 << 10, 81, NULL))
        return 8;
    spm_store_snap_end(&second);
    spm_store_snap_end(&snap);
    if (snap || second)
        return 9;
    if (spm_store_view_has(v, 8, 1) != 1 || spm_store_view_has(v, 8, 3) != 0 ||
        spm_store_view_has(v, 0, 0) != 0)
        return 10;
    spm_store_view_destroy(&v);
    return v ? 11 : 0;
}

START_TEST(test_view_in_another_process)
{
    uint8_t id[16];
    spm_store_t *st = open_fresh(id);
    ck_assert_int_eq(spm_store_begin(st), 0);
    ck_assert_int_eq(put_filled(st, 8, 1, 64 << 10, 81), 0);
    ck_assert_int_eq(put_filled(st, 8, 2, 100, 82), 0);
    ck_assert_int_eq(put_filled(st, 9, 1, 0, 91), 0);
    ck_assert_msg(spm_store_commit(st) == 0, "%s", spm_error_detail());

    pid_t pid = fork(); /* the store stays open for writing here, as in the center */
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(view_reader(id));
    int rc = child_exit(pid);
    static const char *const what[] = {"ok",
                                       "the view did not open",
                                       "no snapshot",
                                       "wrong bytes",
                                       "the block was copied",
                                       "a 64 KiB block is not 8-byte aligned",
                                       "small blocks",
                                       "a missing version was found",
                                       "a second snapshot",
                                       "snap_end",
                                       "view_has",
                                       "view_close"};
    ck_assert_msg(rc == 0, "reader process: %s (exit %d)",
                  rc > 0 && rc < (int)(sizeof what / sizeof *what) ? what[rc] : "crashed", rc);
    expect_block(st, 8, 1, 7, 64 << 10, 81); /* the writer is unaffected */
    spm_store_destroy(&st);
}
END_TEST

/* The writer process of test_view_writes_reach_the_store; returns its exit status. */
static int view_writer(const uint8_t id[16])
{
    spm_store_view_t *v = spm_store_view_open(dir, id);
    if (!v)
        return 1;
    uint8_t *big = malloc(256 << 10), other[100];
    fill(big, 256 << 10, 71);
    fill(other, sizeof other, 99);
    spm_store_block_t b[] = {{12, 1, 7, big, 256 << 10},      /* new */
                             {8, 1, 7, other, sizeof other}}; /* stored already: left alone */
    int rc = spm_store_view_put(v, b, 2);
    spm_store_block_t bad = {0, 1, 7, other, sizeof other};
    int refused = spm_store_view_put(v, &bad, 1);
    free(big);
    spm_store_view_destroy(&v);
    return rc != 0 ? 2 : refused != SPM_EINVAL ? 3 : 0;
}

START_TEST(test_view_writes_reach_the_store)
{
    /* An IEU on the center's host writes its outputs into the store itself;
       the center, which keeps the store open, then finds them. A version
       already stored keeps its bytes (an earlier attempt's result). */
    uint8_t id[16];
    spm_store_t *st = open_fresh(id);
    ck_assert_int_eq(put_filled(st, 8, 1, 64 << 10, 81), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(view_writer(id));
    ck_assert_int_eq(child_exit(pid), 0);
    uint32_t type;
    size_t len;
    ck_assert_int_eq(spm_store_stat(st, 12, 1, &type, &len), 0);
    ck_assert_uint_eq(type, 7);
    ck_assert_uint_eq(len, 256 << 10);
    expect_block(st, 12, 1, 7, 256 << 10, 71);
    expect_block(st, 8, 1, 7, 64 << 10, 81);
    ck_assert_int_eq(spm_store_stat(st, 12, 2, NULL, NULL), SPM_ENOTFOUND);
    spm_store_destroy(&st);
}
END_TEST

START_TEST(test_view_needs_the_identity)
{
    uint8_t id[16], wrong[16];
    spm_store_t *st = open_fresh(id);
    ck_assert_int_eq(put_filled(st, 1, 1, 10, 1), 0);
    spm_store_destroy(&st); /* one environment per process: the views below come after */

    memcpy(wrong, id, sizeof wrong);
    wrong[15] ^= 1;
    ck_assert_ptr_null(spm_store_view_open(dir, wrong));
    ck_assert_msg(strstr(spm_error_detail(), "another store") != NULL, "%s", spm_error_detail());
    spm_store_view_t *v = spm_store_view_open(dir, id);
    ck_assert_msg(v != NULL, "%s", spm_error_detail());
    ck_assert_int_eq(spm_store_view_has(v, 1, 1), 1);
    spm_store_view_destroy(&v);
    ck_assert_ptr_null(v);

    /* no store at all: a missing directory, an empty one (in which nothing is created) */
    char path[160];
    snprintf(path, sizeof path, "%s/missing", dir);
    ck_assert_ptr_null(spm_store_view_open(path, id));
    ck_assert_msg(strstr(spm_error_detail(), "not a store") != NULL, "%s", spm_error_detail());
    snprintf(path, sizeof path, "%s/empty", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_ptr_null(spm_store_view_open(path, id));
    ck_assert_msg(strstr(spm_error_detail(), "not a store") != NULL, "%s", spm_error_detail());
    snprintf(path, sizeof path, "%s/empty/lock.mdb", dir);
    ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

/* The reader process of test_snapshot_outlives_delete: takes a snapshot, tells the writer
   (UP), waits until it deleted the block and wrote others (DOWN), then reads both
   snapshots. Returns its exit status. */
static int snapshot_reader(const uint8_t id[16], int up, int down)
{
    spm_store_view_t *v = spm_store_view_open(dir, id);
    spm_store_snap_t *old = v ? spm_store_view_snap(v) : NULL;
    const void *p = NULL;
    char c = old && snap_block_ok(old, 3, 1, 64 << 10, 31, &p);
    if (write(up, &c, 1) != 1 || !c || read(down, &c, 1) != 1)
        return 1;
    if (!same_bytes(p, 64 << 10, 31)) /* the pointer from before the delete */
        return 2;
    if (!snap_block_ok(old, 3, 1, 64 << 10, 31, NULL))
        return 3;
    const void *d;
    size_t n;
    if (spm_store_snap_get(old, 4, 1, NULL, &d, &n) != SPM_ENOTFOUND) /* written after it */
        return 4;
    if (spm_store_view_has(v, 3, 1) != 0 || spm_store_view_has(v, 4, 1) != 1)
        return 5;
    spm_store_snap_t *now = spm_store_view_snap(v);
    if (!now || spm_store_snap_get(now, 3, 1, NULL, &d, &n) != SPM_ENOTFOUND ||
        !snap_block_ok(now, 4, 1, 64 << 10, 41, NULL))
        return 6;
    spm_store_snap_end(&now);
    spm_store_snap_end(&old);
    spm_store_view_destroy(&v);
    return 0;
}

START_TEST(test_snapshot_outlives_delete)
{
    uint8_t id[16];
    spm_store_t *st = open_fresh(id);
    ck_assert_int_eq(put_filled(st, 3, 1, 64 << 10, 31), 0);
    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(snapshot_reader(id, up[1], down[0]));
    char c = 0;
    ck_assert_int_eq(read(up[0], &c, 1), 1);
    ck_assert_int_eq(c, 1);
    /* Delete it, then write blocks of the same size one transaction each: without the
       reader's snapshot, LMDB would reuse the freed pages for them. */
    ck_assert_int_eq(spm_store_delete(st, 3, 1), 0);
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(put_filled(st, 100 + (spm_sdb_t)i, 1, 64 << 10, 1000 + (uint64_t)i), 0);
    ck_assert_int_eq(put_filled(st, 4, 1, 64 << 10, 41), 0);
    ck_assert_int_eq(write(down[1], "d", 1), 1);
    int rc = child_exit(pid);
    ck_assert_msg(rc == 0, "reader process failed at step %d", rc);
    spm_store_destroy(&st);
}
END_TEST

/* Writes the raw LMDB value VAL (N bytes) under the key of (ID, VERSION) in DIR, as a store of
   an older spm would have. */
static void raw_put(spm_sdb_t id, uint64_t version, const void *val, size_t n)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    ck_assert_int_eq(mdb_env_create(&env), 0);
    ck_assert_int_eq(mdb_env_set_mapsize(env, 1 << 20), 0);
    ck_assert_int_eq(mdb_env_open(env, dir, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
    uint8_t k[SPM_STORE_KEY_LEN];
    spm_store_key(k, id, version);
    MDB_val key = {sizeof k, k}, v = {n, (void *)val};
    ck_assert_int_eq(mdb_put(txn, dbi, &key, &v, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

START_TEST(test_older_layout_refused)
{
    make_dir();
    /* a block with the 4-byte header of earlier versions, and no identity record */
    uint8_t old[4 + 12] = {7, 0, 0, 0, 'o', 'l', 'd', ' ', 'l', 'a', 'y', 'o', 'u', 't', '!', 0};
    raw_put(5, 1, old, sizeof old);
    ck_assert_ptr_null(spm_store_open(dir));
    ck_assert_msg(strstr(spm_error_detail(), "older spm") != NULL, "%s", spm_error_detail());
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), dir));
    uint8_t id[16] = {0};
    ck_assert_ptr_null(spm_store_view_open(dir, id));
    ck_assert_msg(strstr(spm_error_detail(), "no identity record") != NULL, "%s",
                  spm_error_detail());

    /* nothing was written into it: still no identity record, so still refused */
    ck_assert_ptr_null(spm_store_open(dir));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "older spm"));

    /* an identity record of another layout is refused as well, naming it */
    uint8_t other[24] = "spmstor1";
    raw_put(0, 0, other, sizeof other);
    ck_assert_ptr_null(spm_store_open(dir));
    ck_assert_msg(strstr(spm_error_detail(), "layout 1, written by an older spm; this spm reads "
                                             "layout 2") != NULL,
                  "%s", spm_error_detail());
    ck_assert_ptr_null(spm_store_view_open(dir, id));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "layout 1"));

    /* and one of a newer spm */
    uint8_t newer[24] = "spmstor3";
    raw_put(0, 0, newer, sizeof newer);
    ck_assert_ptr_null(spm_store_open(dir));
    ck_assert_msg(strstr(spm_error_detail(), "layout 3, written by a newer spm") != NULL, "%s",
                  spm_error_detail());
}
END_TEST

/*  A store opened lazy (an embedded center's) is a whole store: it has an
    identity, takes blocks, and reopens with both (the page cache has them). */
START_TEST(test_lazy_store_is_whole)
{
    make_dir();
    uint8_t first[16], again[16], zero[16] = {0};
    spm_store_t *st = spm_store_open_lazy(dir);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    spm_store_identity(st, first);
    ck_assert_int_ne(memcmp(first, zero, sizeof zero), 0);
    ck_assert_int_eq(put_filled(st, 3, 1, 4096, 31), 0);
    spm_store_destroy(&st);
    ck_assert_ptr_nonnull(st = spm_store_open(dir));
    spm_store_identity(st, again);
    ck_assert_int_eq(memcmp(first, again, sizeof first), 0);
    expect_block(st, 3, 1, 7, 4096, 31);
    spm_store_destroy(&st);
}
END_TEST

START_TEST(test_identity_survives_reopen)
{
    uint8_t first[16], again[16], other[16], zero[16] = {0};
    spm_store_t *st = open_fresh(first);
    ck_assert_int_ne(memcmp(first, zero, sizeof zero), 0);

    /* the identity record is no block: not counted, not found, not deletable, no id */
    spm_store_stats_t s;
    spm_store_stats(st, &s);
    ck_assert_uint_eq(s.puts, 0);
    ck_assert_uint_eq(s.bytes_put, 0);
    ck_assert_uint_eq(spm_store_max_id(st, UINT64_MAX), 0);
    void *data;
    size_t len;
    ck_assert_int_eq(spm_store_get(st, 0, 0, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_store_delete(st, 0, 0), SPM_ENOTFOUND);
    ck_assert_int_eq(put_filled(st, 2, 1, 10, 21), 0);
    spm_store_stats(st, &s);
    ck_assert_uint_eq(s.puts, 1);
    spm_store_destroy(&st);

    st = spm_store_open(dir);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    spm_store_identity(st, again);
    ck_assert_int_eq(memcmp(first, again, sizeof first), 0);
    expect_block(st, 2, 1, 7, 10, 21);
    spm_store_destroy(&st);

    char path[160];
    snprintf(path, sizeof path, "%s/second", dir);
    st = spm_store_open(path);
    ck_assert_msg(st != NULL, "%s", spm_error_detail());
    spm_store_identity(st, other);
    ck_assert_int_ne(memcmp(first, other, sizeof first), 0);
    spm_store_destroy(&st);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    const spm_test_case_t c = {
        .timeout_s = 120, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, test_roundtrip_and_newest);
    SPM_TEST_ADD(s, &c, test_large_blocks_arrive_whole);
    SPM_TEST_ADD(s, &c, test_delete_all_takes_every_version_of_one_block);
    SPM_TEST_ADD(s, &c, test_versions_are_immutable);
    SPM_TEST_ADD(s, &c, test_batch_all_or_nothing);
    SPM_TEST_ADD(s, &c, test_reopen_and_max_id);
    SPM_TEST_ADD(s, &c, test_map_grows);
    SPM_TEST_ADD(s, &c, test_unwritable_dir);
    SPM_TEST_ADD(s, &c, test_crash_leaves_whole_batches);
    SPM_TEST_ADD(s, &c, test_disk_full);
    SPM_TEST_ADD(s, &c, test_space_a_deletion_freed_serves_the_next_put);
    SPM_TEST_ADD(s, &c, test_sweep_deletes_what_nothing_refers_to);
    SPM_TEST_ADD(s, &c, test_sweep_frees_a_full_store);
    SPM_TEST_ADD(s, &c, test_view_in_another_process);
    SPM_TEST_ADD(s, &c, test_view_writes_reach_the_store);
    SPM_TEST_ADD(s, &c, test_view_needs_the_identity);
    SPM_TEST_ADD(s, &c, test_snapshot_outlives_delete);
    SPM_TEST_ADD(s, &c, test_older_layout_refused);
    SPM_TEST_ADD(s, &c, test_identity_survives_reopen);
    SPM_TEST_ADD(s, &c, test_lazy_store_is_whole);
    return s;
}

SPM_TEST_MAIN(store_suite)
