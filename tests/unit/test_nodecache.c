/*  Tests of datacache/nodecache: the node's level-1 cache shared by IEU processes. Every test
    works on real LMDB files below a mkdtemp directory that is removed at the end. */
#include "datacache/nodecache.h"
#include "tests/check_main.h"
#include "tests/mapped.h"

#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[64]; /* mkdtemp directory of the test case */
static char dir[96];  /* the running test's cache directory, below base */

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Unchecked fixture (runs in the runner): the directory goes even when a test fails. */
static void setup_base(void)
{
    strcpy(base, "/tmp/spm-nodecache-XXXXXX");
    if (!mkdtemp(base))
        abort();
}

static void teardown_base(void)
{
    nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void pick_dir(void)
{
    snprintf(dir, sizeof dir, "%s/%d", base, (int)getpid());
}

/* The LEN bytes a block made from SEED holds. */
static uint8_t *block_bytes(size_t len, uint64_t seed)
{
    uint8_t *b = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
    return b;
}

static int put_block(spm_nodecache_t *nc, spm_sdb_t id, size_t len)
{
    uint8_t *b = block_bytes(len, id);
    int rc = spm_nodecache_put(nc, id, 1, 9, b, len);
    free(b);
    return rc;
}

/* 1 when the block (ID, 1) read through R has LEN bytes made from seed ID. */
static int block_ok(spm_nodecache_reader_t *r, spm_sdb_t id, size_t len, const void **where)
{
    const void *p;
    size_t n;
    uint32_t type;
    if (spm_nodecache_get(r, id, 1, &type, &p, &n) != 0 || n != len || type != 9)
        return 0;
    uint8_t *want = block_bytes(len, id);
    int same = memcmp(p, want, len) == 0;
    free(want);
    if (where)
        *where = p;
    return same;
}

/* 1 when P points into this process's memory map of DIR/data.mdb: read without a copy. */
static int in_map(const void *p)
{
    char file[160];
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    return spm_test_mapped(file, p);
}

START_TEST(test_two_processes_share)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    ck_assert_msg(nc != NULL, "%s", spm_error_detail());
    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* another IEU process of the node */
        spm_nodecache_t *c = spm_nodecache_open(dir, 0, 0);
        char ok = c && put_block(c, 1, 1 << 20) == 0;
        if (write(up[1], &ok, 1) != 1 || read(down[0], &ok, 1) != 1)
            _exit(2);
        spm_nodecache_reader_t *r = spm_nodecache_reader(c);
        const void *p = NULL;
        ok = r && block_ok(r, 2, 5000, &p) && in_map(p);
        spm_nodecache_reader_end(&r);
        for (int i = 0; i < 200 && ok; i++)
            ok = put_block(c, 1000 + (spm_sdb_t)i, 100 + (size_t)i) == 0;
        spm_nodecache_close(&c);
        _exit(ok ? 0 : 1);
    }
    char ok = 0;
    ck_assert_int_eq(read(up[0], &ok, 1), 1);
    ck_assert_int_eq(ok, 1);

    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert_ptr_nonnull(r);
    const void *p = NULL;
    ck_assert(block_ok(r, 1, 1 << 20, &p));
    ck_assert_msg(in_map(p), "the block was copied out of the map");
    ck_assert_msg((uintptr_t)p % 8 == 0, "a large block is not 8-byte aligned: %p", p);
    spm_nodecache_reader_end(&r);
    ck_assert_ptr_null(r);

    ck_assert_int_eq(put_block(nc, 2, 5000), 0);
    ck_assert_int_eq(write(down[1], "g", 1), 1);
    for (int i = 0; i < 200; i++) /* writes of both processes at once */
        ck_assert_int_eq(put_block(nc, 2000 + (spm_sdb_t)i, 100 + (size_t)i), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");

    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 2 + 400);
    ck_assert_uint_eq(s.bytes, (1 << 20) + 5000 + 2 * (200 * 100 + 199 * 200 / 2));
    r = spm_nodecache_reader(nc);
    for (int i = 0; i < 200; i++) {
        ck_assert(block_ok(r, 1000 + (spm_sdb_t)i, 100 + (size_t)i, NULL));
        ck_assert(block_ok(r, 2000 + (spm_sdb_t)i, 100 + (size_t)i, NULL));
    }
    spm_nodecache_reader_end(&r);
    spm_nodecache_close(&nc);
    ck_assert_ptr_null(nc);
}
END_TEST

/* What the evict callback saw. */
typedef struct {
    int n;            /* blocks evicted */
    spm_sdb_t id[16]; /* their ids, in order */
    int intact[16];   /* 1 when the callback got the block's bytes */
} evicted_t;

static void on_evict(void *arg, spm_sdb_t id, uint64_t version, uint32_t type, const void *data,
                     size_t len)
{
    evicted_t *ev = arg;
    uint8_t *want = block_bytes(len, id);
    if (ev->n < 16) {
        ev->id[ev->n] = id;
        ev->intact[ev->n] = version == 1 && type == 9 && memcmp(data, want, len) == 0;
        ev->n++;
    }
    free(want);
}

static void read_in_order(spm_nodecache_t *nc, const spm_sdb_t *ids, int n)
{
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert_ptr_nonnull(r);
    for (int i = 0; i < n; i++) {
        const void *p;
        size_t len;
        ck_assert_int_eq(spm_nodecache_get(r, ids[i], 1, NULL, &p, &len), 0);
    }
    spm_nodecache_reader_end(&r);
}

START_TEST(test_lru_eviction)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 3000, 1);
    ck_assert_ptr_nonnull(nc);
    evicted_t ev = {0};
    spm_nodecache_on_evict(nc, on_evict, &ev);
    for (spm_sdb_t id = 1; id <= 3; id++)
        ck_assert_int_eq(put_block(nc, id, 1000), 0);
    read_in_order(nc, (spm_sdb_t[]){3, 2, 1}, 3); /* 3 is now the least recently used */

    ck_assert_int_eq(put_block(nc, 4, 1000), 0);
    ck_assert_int_eq(ev.n, 1);
    ck_assert_uint_eq(ev.id[0], 3);
    ck_assert(ev.intact[0]);
    ck_assert_int_eq(spm_nodecache_has(nc, 3, 1), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 1, 1), 1);
    ck_assert_int_eq(spm_nodecache_has(nc, 2, 1), 1);
    ck_assert_int_eq(spm_nodecache_has(nc, 4, 1), 1);

    ck_assert_int_eq(put_block(nc, 5, 1000), 0); /* then 2, read before 1 */
    ck_assert_int_eq(ev.n, 2);
    ck_assert_uint_eq(ev.id[1], 2);
    ck_assert(ev.intact[1]);

    ck_assert_int_eq(put_block(nc, 1, 1000), 0); /* present: nothing happens */
    ck_assert_int_eq(put_block(nc, 9, 3001), SPM_EFULL);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "budget"));
    ck_assert_int_eq(ev.n, 2);

    ck_assert_int_eq(put_block(nc, 6, 2000), 0); /* room for 2000: evicts 1, then 4 */
    ck_assert_int_eq(ev.n, 4);
    ck_assert_uint_eq(ev.id[2], 1);
    ck_assert_uint_eq(ev.id[3], 4);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 2);
    ck_assert_uint_eq(s.bytes, 3000);
    ck_assert_uint_eq(s.budget, 3000);
    ck_assert_uint_eq(s.evictions, 4);
    ck_assert_uint_eq(s.bytes_evicted, 4000);
    ck_assert_uint_eq(s.hits, 3);

    /* a read by another process counts once it is flushed: 5 becomes newer than 6 */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        spm_nodecache_t *c = spm_nodecache_open(dir, 3000, 0);
        spm_nodecache_reader_t *r = c ? spm_nodecache_reader(c) : NULL;
        int ok = r && block_ok(r, 5, 1000, NULL);
        spm_nodecache_reader_end(&r);
        ok = ok && spm_nodecache_flush(c) == 0;
        spm_nodecache_close(&c);
        _exit(ok ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(put_block(nc, 7, 1000), 0);
    ck_assert_int_eq(ev.n, 5);
    ck_assert_uint_eq(ev.id[4], 6);
    ck_assert_int_eq(spm_nodecache_has(nc, 5, 1), 1);
    spm_nodecache_close(&nc);
}
END_TEST

START_TEST(test_fresh_empties)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    ck_assert_ptr_nonnull(nc);
    for (spm_sdb_t id = 1; id <= 3; id++)
        ck_assert_int_eq(put_block(nc, id, 700), 0);
    spm_nodecache_close(&nc);

    nc = spm_nodecache_open(dir, 0, 0); /* an IEU joining keeps the content */
    ck_assert_ptr_nonnull(nc);
    ck_assert_int_eq(spm_nodecache_has(nc, 2, 1), 1);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 3);
    spm_nodecache_close(&nc);

    nc = spm_nodecache_open(dir, 0, 1); /* the agent starting empties it */
    ck_assert_ptr_nonnull(nc);
    for (spm_sdb_t id = 1; id <= 3; id++)
        ck_assert_int_eq(spm_nodecache_has(nc, id, 1), 0);
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 0);
    ck_assert_uint_eq(s.bytes, 0);
    ck_assert_int_eq(put_block(nc, 2, 10), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 2, 1), 1);
    spm_nodecache_close(&nc);
}
END_TEST

enum { NREADERS = 6, ROUNDS = 200, NSHARED = 32, SHARED_LEN = 4096 };

static void *reader_thread(void *arg)
{
    spm_nodecache_t *nc = arg;
    long bad = 0;
    for (int round = 0; round < ROUNDS; round++) {
        spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
        if (!r)
            return (void *)-1L;
        for (spm_sdb_t id = 1; id <= NSHARED; id++)
            bad += !block_ok(r, id, SHARED_LEN, NULL);
        spm_nodecache_reader_end(&r);
    }
    return (void *)bad;
}

START_TEST(test_threads_read_while_map_grows)
{
    pick_dir();
    /* a 1 MiB map must grow many times under the readers' feet */
    spm_nodecache_t *nc = spm_nodecache_open_map(dir, 0, 1, 1 << 20);
    ck_assert_ptr_nonnull(nc);
    for (spm_sdb_t id = 1; id <= NSHARED; id++)
        ck_assert_int_eq(put_block(nc, id, SHARED_LEN), 0);
    pthread_t th[NREADERS];
    for (int i = 0; i < NREADERS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, reader_thread, nc), 0);
    for (spm_sdb_t id = 1000; id < 1400; id++) { /* 25 MiB */
        int rc = put_block(nc, id, 64 << 10);
        ck_assert_msg(rc == 0, "put %llu: %s", (unsigned long long)id, spm_error_detail());
    }
    for (int i = 0; i < NREADERS; i++) {
        void *bad;
        ck_assert_int_eq(pthread_join(th[i], &bad), 0);
        ck_assert_msg(bad == NULL, "reader %d: %ld bad reads", i, (long)bad);
    }
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.hits, (uint64_t)NREADERS * ROUNDS * NSHARED);
    ck_assert_uint_eq(s.misses, 0);
    ck_assert_uint_eq(s.blocks, NSHARED + 400);
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    for (spm_sdb_t id = 1000; id < 1400; id++)
        ck_assert(block_ok(r, id, 64 << 10, NULL));
    spm_nodecache_reader_end(&r);
    spm_nodecache_close(&nc);
}
END_TEST

START_TEST(test_reader_rules_has_drop)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open_map(dir, 0, 1, 1 << 20);
    ck_assert_ptr_nonnull(nc);
    ck_assert_int_eq(put_block(nc, 1, 3000), 0);
    ck_assert_int_eq(put_block(nc, 0, 10), SPM_EINVAL);

    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_null(spm_nodecache_reader(nc)); /* one per thread */
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "already"));
    const void *p, *q;
    size_t len;
    ck_assert_int_eq(spm_nodecache_get(r, 1, 2, NULL, &q, &len), SPM_ENOTFOUND);
    ck_assert(block_ok(r, 1, 3000, &p));

    /* dropping the block leaves the reader's bytes as they were */
    ck_assert_int_eq(spm_nodecache_drop(nc, 1, 1), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 1, 1), 0);
    uint8_t *want = block_bytes(3000, 1);
    ck_assert_int_eq(memcmp(p, want, 3000), 0);
    free(want);

    /* the map cannot grow while this thread reads; after the reader ends it can */
    ck_assert_int_eq(put_block(nc, 2, 2 << 20), SPM_EFULL);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "reader"));
    spm_nodecache_reader_end(&r);
    ck_assert_int_eq(put_block(nc, 2, 2 << 20), 0);

    ck_assert_int_eq(spm_nodecache_drop(nc, 1, 1), SPM_ENOTFOUND);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.hits, 1);
    ck_assert_uint_eq(s.misses, 1);
    ck_assert_uint_eq(s.blocks, 1);
    ck_assert_uint_eq(s.bytes, 2 << 20);
    spm_nodecache_close(&nc);
}
END_TEST

START_TEST(test_writer_killed)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    ck_assert_ptr_nonnull(nc);
    for (int round = 0; round < 4; round++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) { /* an IEU that dies with -9 in the middle of its puts */
            spm_nodecache_t *c = spm_nodecache_open(dir, 0, 0);
            for (spm_sdb_t id = 1;; id++)
                if (!c || put_block(c, 100000 * (spm_sdb_t)(round + 1) + id, 20000) != 0)
                    _exit(1);
        }
        usleep(20000 + (useconds_t)(round * 15000));
        ck_assert_int_eq(kill(pid, SIGKILL), 0);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFSIGNALED(status));
        /* the survivors go on writing and reading, and the totals still add up */
        ck_assert_int_eq(put_block(nc, 1 + (spm_sdb_t)round, 20000), 0);
        ck_assert_int_eq(spm_nodecache_has(nc, 1 + (spm_sdb_t)round, 1), 1);
    }
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_gt(s.blocks, 4);
    ck_assert_uint_eq(s.bytes, s.blocks * 20000);
    uint64_t found = 0;
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    for (int round = 1; round <= 4; round++)
        for (spm_sdb_t id = 1; block_ok(r, 100000 * (spm_sdb_t)round + id, 20000, NULL); id++)
            found++;
    spm_nodecache_reader_end(&r);
    ck_assert_uint_eq(found + 4, s.blocks);
    spm_nodecache_close(&nc);
}
END_TEST

START_TEST(test_unwritable_dir)
{
    pick_dir();
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char file[128], path[160];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/cache", file);
    ck_assert_ptr_null(spm_nodecache_open(path, 0, 1));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), path));
}
END_TEST

static Suite *nodecache_suite(void)
{
    Suite *s = suite_create("nodecache");
    TCase *tc = tcase_create("nodecache");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, setup_base, teardown_base);
    tcase_add_test(tc, test_two_processes_share);
    tcase_add_test(tc, test_lru_eviction);
    tcase_add_test(tc, test_fresh_empties);
    tcase_add_test(tc, test_threads_read_while_map_grows);
    tcase_add_test(tc, test_reader_rules_has_drop);
    tcase_add_test(tc, test_writer_killed);
    tcase_add_test(tc, test_unwritable_dir);
    suite_add_tcase(s, tc);
    return s;
}

SPM_TEST_MAIN(nodecache_suite)
