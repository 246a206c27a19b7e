/*  Tests of datacache/nodecache: the node's level-1 cache shared by IEU processes. Every test
    works on real LMDB files below a mkdtemp directory that is removed at the end. */
#include "base/checksum.h"
#include "datacache/nodecache.h"
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "tests/mapped.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[96]; /* the running test's cache directory, below base */

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
        spm_nodecache_destroy(&c);
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
    spm_nodecache_destroy(&nc);
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
        spm_nodecache_destroy(&c);
        _exit(ok ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(put_block(nc, 7, 1000), 0);
    ck_assert_int_eq(ev.n, 5);
    ck_assert_uint_eq(ev.id[4], 6);
    ck_assert_int_eq(spm_nodecache_has(nc, 5, 1), 1);
    spm_nodecache_destroy(&nc);
}
END_TEST

START_TEST(test_fresh_empties)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    ck_assert_ptr_nonnull(nc);
    for (spm_sdb_t id = 1; id <= 3; id++)
        ck_assert_int_eq(put_block(nc, id, 700), 0);
    spm_nodecache_destroy(&nc);

    nc = spm_nodecache_open(dir, 0, 0); /* an IEU joining keeps the content */
    ck_assert_ptr_nonnull(nc);
    ck_assert_int_eq(spm_nodecache_has(nc, 2, 1), 1);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 3);
    spm_nodecache_destroy(&nc);

    nc = spm_nodecache_open(dir, 0, 1); /* the agent starting empties it */
    ck_assert_ptr_nonnull(nc);
    for (spm_sdb_t id = 1; id <= 3; id++)
        ck_assert_int_eq(spm_nodecache_has(nc, id, 1), 0);
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 0);
    ck_assert_uint_eq(s.bytes, 0);
    ck_assert_int_eq(put_block(nc, 2, 10), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 2, 1), 1);
    spm_nodecache_destroy(&nc);
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
    spm_nodecache_destroy(&nc);
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
    spm_nodecache_destroy(&nc);
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
    spm_nodecache_destroy(&nc);
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

/* ------------------------------------------------------------ kept blocks */

/* Keeps block (ID, VERSION) of type 9 with LEN bytes made from SEED and their checksum. */
static int keep_block(spm_nodecache_t *nc, spm_sdb_t id, uint64_t version, size_t len,
                      uint64_t seed)
{
    uint8_t *b = block_bytes(len, seed);
    int rc = spm_nodecache_keep(nc, id, version, 9, spm_checksum(b, len), b, len, 1);
    free(b);
    return rc;
}

/* 1 when block (ID, VERSION) read through R is of TYPE with LEN bytes made from SEED. */
static int holds(spm_nodecache_reader_t *r, spm_sdb_t id, uint64_t version, uint32_t type,
                 size_t len, uint64_t seed)
{
    const void *p;
    size_t n;
    uint32_t t;
    if (spm_nodecache_get(r, id, version, &t, &p, &n) != 0 || n != len || t != type)
        return 0;
    uint8_t *want = block_bytes(len, seed);
    int same = len == 0 || memcmp(p, want, len) == 0;
    free(want);
    return same;
}

/* 1 when block (ID, VERSION) is kept with the checksum of LEN bytes made from SEED. */
static int kept_with_sum(spm_nodecache_t *nc, spm_sdb_t id, uint64_t version, size_t len,
                         uint64_t seed)
{
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    uint64_t sum = 1;
    unsigned flags = 0;
    int ok = r && spm_nodecache_meta(r, id, version, &sum, &flags) == 0;
    spm_nodecache_reader_end(&r);
    uint8_t *b = block_bytes(len, seed);
    ok = ok && flags == SPM_NODECACHE_KEPT && sum == spm_checksum(b, len);
    free(b);
    return ok;
}

START_TEST(test_checksum)
{
    /* XXH3_64bits of no bytes, as published by xxHash: every node must compute the same */
    ck_assert_uint_eq(spm_checksum(NULL, 0), 0x2D06800538D394C2ull);
    ck_assert_uint_eq(spm_checksum("", 0), 0x2D06800538D394C2ull);
    uint8_t *b = block_bytes(10000, 5);
    uint64_t sum = spm_checksum(b, 10000);
    ck_assert_uint_eq(spm_checksum(b, 10000), sum);
    for (size_t i = 0; i < 10000; i += 997) { /* one flipped bit anywhere is caught */
        b[i] ^= 0x10;
        ck_assert_uint_ne(spm_checksum(b, 10000), sum);
        b[i] ^= 0x10;
    }
    ck_assert_uint_ne(spm_checksum(b, 9999), sum); /* and so is a truncated copy */
    free(b);
}
END_TEST

START_TEST(test_kept_never_evicted)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 3000, 1);
    ck_assert_ptr_nonnull(nc);
    evicted_t ev = {0};
    spm_nodecache_on_evict(nc, on_evict, &ev);
    ck_assert_int_eq(put_block(nc, 1, 1000), 0);
    ck_assert_int_eq(put_block(nc, 2, 1000), 0);

    /* keeping makes room by evicting copies, oldest first */
    ck_assert_int_eq(keep_block(nc, 10, 1, 2500, 10), 0);
    ck_assert_int_eq(ev.n, 2);
    ck_assert_uint_eq(ev.id[0], 1);
    ck_assert_uint_eq(ev.id[1], 2);
    /* a keep past the budget is refused and changes nothing: the node is full, and the
       block must be kept elsewhere */
    ck_assert_int_eq(keep_block(nc, 11, 1, 600, 11), SPM_EFULL);
    ck_assert_int_eq(spm_nodecache_has(nc, 11, 1), 0);
    ck_assert_int_eq(ev.n, 2);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 1);
    ck_assert_uint_eq(s.bytes, 2500);
    ck_assert_uint_eq(s.kept_blocks, 1);
    ck_assert_uint_eq(s.kept_bytes, 2500);
    ck_assert_uint_eq(s.evictions, 2);

    /* reads of kept blocks put them in no LRU order: 10, read before 3 is put, stays */
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert_ptr_nonnull(r);
    ck_assert(holds(r, 10, 1, 9, 2500, 10));
    spm_nodecache_reader_end(&r);
    ck_assert_int_eq(spm_nodecache_flush(nc), 0);
    ck_assert_int_eq(put_block(nc, 3, 500), 0);
    ck_assert_int_eq(put_block(nc, 4, 400), 0); /* 2500 + 500 + 400 > 3000: 3 goes */
    ck_assert_int_eq(ev.n, 3);
    ck_assert_uint_eq(ev.id[2], 3);
    ck_assert_int_eq(spm_nodecache_has(nc, 10, 1), 1);
    ck_assert(kept_with_sum(nc, 10, 1, 2500, 10));
    r = spm_nodecache_reader(nc);
    ck_assert(holds(r, 10, 1, 9, 2500, 10));
    spm_nodecache_reader_end(&r);
    spm_nodecache_destroy(&nc);
}
END_TEST

START_TEST(test_put_refused_beside_kept)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 4000, 1);
    ck_assert_ptr_nonnull(nc);
    evicted_t ev = {0};
    spm_nodecache_on_evict(nc, on_evict, &ev);
    ck_assert_int_eq(put_block(nc, 1, 1000), 0);
    ck_assert_int_eq(keep_block(nc, 2, 1, 3500, 2), 0);
    ck_assert_int_eq(ev.n, 1);

    /* 3500 kept + 1000 > 4000 even with no copy left: refused, nothing stored */
    ck_assert_int_eq(put_block(nc, 3, 1000), SPM_EFULL);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "kept"));
    ck_assert_int_eq(spm_nodecache_has(nc, 3, 1), 0);
    ck_assert_int_eq(put_block(nc, 4, 500), 0); /* a copy that fits beside them is taken */
    /* a refused put evicts nothing: the copy of 4 stays */
    ck_assert_int_eq(put_block(nc, 5, 600), SPM_EFULL);
    ck_assert_int_eq(spm_nodecache_has(nc, 5, 1), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 4, 1), 1);
    ck_assert_int_eq(ev.n, 1);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 2);
    ck_assert_uint_eq(s.bytes, 4000);
    ck_assert_uint_eq(s.kept_blocks, 1);
    ck_assert_uint_eq(s.kept_bytes, 3500);
    ck_assert_uint_eq(s.evictions, 1);

    /* once the kept block is dropped, the copy fits */
    ck_assert_int_eq(spm_nodecache_drop(nc, 2, 1), 0);
    ck_assert_int_eq(put_block(nc, 5, 600), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 5, 1), 1);
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.kept_blocks, 0);
    ck_assert_uint_eq(s.kept_bytes, 0);
    ck_assert_uint_eq(s.bytes, 1100);
    spm_nodecache_destroy(&nc);
}
END_TEST

START_TEST(test_keep_replaces)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 2000, 1);
    ck_assert_ptr_nonnull(nc);
    evicted_t ev = {0};
    spm_nodecache_on_evict(nc, on_evict, &ev);
    ck_assert_int_eq(keep_block(nc, 0, 1, 10, 1), SPM_EINVAL);
    ck_assert_int_eq(keep_block(nc, 1, 0, 10, 1), SPM_EINVAL);

    /* a copy is stored without a checksum */
    ck_assert_int_eq(put_block(nc, 1, 1000), 0);
    spm_nodecache_reader_t *old = spm_nodecache_reader(nc);
    ck_assert_ptr_nonnull(old);
    uint64_t sum = 1;
    unsigned flags = 0;
    ck_assert_int_eq(spm_nodecache_meta(old, 1, 1, &sum, &flags), 0);
    ck_assert_uint_eq(flags, SPM_NODECACHE_NOSUM);
    ck_assert_uint_eq(sum, 0);
    ck_assert_int_eq(spm_nodecache_meta(old, 1, 2, &sum, &flags), SPM_ENOTFOUND);
    const void *p;
    size_t n;
    ck_assert_int_eq(spm_nodecache_get(old, 1, 1, NULL, &p, &n), 0);

    /* another process keeping it replaces its bytes and makes it kept; a reader that began
       before goes on seeing the old bytes */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        spm_nodecache_t *c = spm_nodecache_open(dir, 2000, 0);
        _exit(c && keep_block(c, 1, 1, 1500, 2) == 0 ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    uint8_t *want = block_bytes(1000, 1);
    ck_assert_uint_eq(n, 1000);
    ck_assert_int_eq(memcmp(p, want, 1000), 0);
    free(want);
    spm_nodecache_reader_end(&old);
    ck_assert(kept_with_sum(nc, 1, 1, 1500, 2));
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert(holds(r, 1, 1, 9, 1500, 2));
    spm_nodecache_reader_end(&r);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 1);
    ck_assert_uint_eq(s.bytes, 1500);
    ck_assert_uint_eq(s.kept_blocks, 1);
    ck_assert_uint_eq(s.kept_bytes, 1500);

    /* keeping a kept block again replaces type, bytes and checksum */
    uint8_t *b = block_bytes(500, 3);
    ck_assert_int_eq(spm_nodecache_keep(nc, 1, 1, 12, spm_checksum(b, 500), b, 500, 1), 0);
    free(b);
    ck_assert(kept_with_sum(nc, 1, 1, 500, 3));
    r = spm_nodecache_reader(nc);
    ck_assert(holds(r, 1, 1, 12, 500, 3));
    spm_nodecache_reader_end(&r);
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 1);
    ck_assert_uint_eq(s.bytes, 500);
    ck_assert_uint_eq(s.kept_blocks, 1);
    ck_assert_uint_eq(s.kept_bytes, 500);

    /* without REPLACE (another node storing it here) other bytes are refused and the kept
       ones stay; the same bytes are a no-op */
    b = block_bytes(800, 4);
    ck_assert_int_eq(spm_nodecache_keep(nc, 1, 1, 12, spm_checksum(b, 800), b, 800, 0), SPM_EINVAL);
    free(b);
    ck_assert(kept_with_sum(nc, 1, 1, 500, 3));
    b = block_bytes(500, 3);
    ck_assert_int_eq(spm_nodecache_keep(nc, 1, 1, 12, spm_checksum(b, 500), b, 500, 0), 0);
    free(b);
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.kept_blocks, 1);
    ck_assert_uint_eq(s.kept_bytes, 500);

    /* a plain put never demotes it, nor changes its bytes */
    ck_assert_int_eq(put_block(nc, 1, 700), 0);
    ck_assert(kept_with_sum(nc, 1, 1, 500, 3));
    r = spm_nodecache_reader(nc);
    ck_assert(holds(r, 1, 1, 12, 500, 3));
    spm_nodecache_reader_end(&r);
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 1);
    ck_assert_uint_eq(s.kept_bytes, 500);

    /* the block that was a copy left the LRU order: later copies are evicted, it is not */
    ck_assert_int_eq(put_block(nc, 2, 1000), 0);
    ck_assert_int_eq(put_block(nc, 3, 600), 0); /* 500 + 1000 + 600 > 2000: 2 goes */
    ck_assert_int_eq(ev.n, 1);
    ck_assert_uint_eq(ev.id[0], 2);
    ck_assert_int_eq(spm_nodecache_has(nc, 1, 1), 1);
    spm_nodecache_destroy(&nc);
}
END_TEST

/*  A batch of drops in one transaction: kept blocks and copies, whole SDBs
    (version 0) and single versions, and refs that are not there (passed
    over, not counted), with the totals right after. */
START_TEST(test_drop_each)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 100000, 1);
    ck_assert_ptr_nonnull(nc);
    for (uint64_t v = 1; v <= 3; v++)
        ck_assert_int_eq(keep_block(nc, 4, v, 1000, 40 + v), 0);
    ck_assert_int_eq(keep_block(nc, 5, 1, 1000, 51), 0);
    ck_assert_int_eq(put_block(nc, 9, 2000), 0);
    ck_assert_int_eq(put_block(nc, 10, 500), 0);
    spm_nodecache_ref_t refs[] = {{4, 0}, {5, 2}, {9, UINT64_MAX}, {77, 0}, {10, 3}, {5, 1}};
    size_t found = 99;
    ck_assert_int_eq(spm_nodecache_drop_each(nc, refs, 6, &found), 0);
    /* SDB 4 (all three), 5 v1: 5 v2, 77 and 10 v3 were never there */
    ck_assert_uint_eq(found, 2);
    for (uint64_t v = 1; v <= 3; v++)
        ck_assert_int_eq(spm_nodecache_has(nc, 4, v), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 5, 1), 0);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.kept_blocks, 0);
    ck_assert_uint_eq(s.kept_bytes, 0);
    ck_assert_uint_eq(s.blocks, 2); /* the two copies put_block made stay */
    ck_assert_uint_eq(s.bytes, 2500);
    ck_assert_int_eq(spm_nodecache_drop_each(nc, refs, 0, &found), 0); /* nothing: no error */
    ck_assert_uint_eq(found, 0);
    spm_nodecache_destroy(&nc);
}
END_TEST

START_TEST(test_drop_all)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 10000, 1);
    ck_assert_ptr_nonnull(nc);
    evicted_t ev = {0};
    spm_nodecache_on_evict(nc, on_evict, &ev);
    uint8_t *b = block_bytes(1000, 7);
    ck_assert_int_eq(spm_nodecache_put(nc, 7, 3, 9, b, 1000), 0); /* oldest copy */
    ck_assert_int_eq(spm_nodecache_put(nc, 6, UINT64_MAX, 9, b, 1000), 0);
    free(b);
    ck_assert_int_eq(keep_block(nc, 7, 1, 1000, 71), 0);
    ck_assert_int_eq(keep_block(nc, 7, 2, 1000, 72), 0);
    ck_assert_int_eq(keep_block(nc, 8, 1, 1000, 81), 0);
    ck_assert_int_eq(keep_block(nc, 6, 5, 1000, 65), 0);

    ck_assert_int_eq(spm_nodecache_drop_all(nc, 7), 0);
    for (uint64_t v = 1; v <= 3; v++)
        ck_assert_int_eq(spm_nodecache_has(nc, 7, v), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 6, 5), 1); /* the neighbours in key order stay */
    ck_assert_int_eq(spm_nodecache_has(nc, 6, UINT64_MAX), 1);
    ck_assert_int_eq(spm_nodecache_has(nc, 8, 1), 1);
    ck_assert_int_eq(ev.n, 0); /* dropped, not evicted: no write-back */
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 3);
    ck_assert_uint_eq(s.bytes, 3000);
    ck_assert_uint_eq(s.kept_blocks, 2);
    ck_assert_uint_eq(s.kept_bytes, 2000);
    ck_assert_uint_eq(s.evictions, 0);
    ck_assert_int_eq(spm_nodecache_drop_all(nc, 7), 0); /* none left is no error */
    ck_assert_int_eq(spm_nodecache_drop_all(nc, 12345), 0);

    /* the dropped copy left the LRU order too: the next eviction takes (6, max) */
    ck_assert_int_eq(put_block(nc, 20, 4000), 0);
    ck_assert_int_eq(put_block(nc, 21, 3000), 0);
    ck_assert_int_eq(put_block(nc, 22, 1000), 0);
    ck_assert_int_eq(ev.n, 1);
    ck_assert_uint_eq(ev.id[0], 6);

    /* drop works on a kept block */
    ck_assert_int_eq(spm_nodecache_drop(nc, 8, 1), 0);
    ck_assert_int_eq(spm_nodecache_drop(nc, 8, 1), SPM_ENOTFOUND);
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.kept_blocks, 1);
    ck_assert_uint_eq(s.kept_bytes, 1000);
    ck_assert_uint_eq(s.blocks, 4);
    ck_assert_uint_eq(s.bytes, 9000);
    spm_nodecache_destroy(&nc);
}
END_TEST

/* What spm_nodecache_list_kept reported. */
typedef struct {
    int n;                /* blocks listed */
    spm_sdb_t id[8];      /* their ids, in order */
    uint64_t version[8];  /* their versions */
    uint32_t type[8];     /* their types */
    uint64_t checksum[8]; /* their checksums */
    size_t len[8];        /* their lengths */
} listed_t;

static void on_list(void *arg, spm_sdb_t id, uint64_t version, uint32_t type, uint64_t checksum,
                    size_t len)
{
    listed_t *l = arg;
    if (l->n < 8) {
        l->id[l->n] = id;
        l->version[l->n] = version;
        l->type[l->n] = type;
        l->checksum[l->n] = checksum;
        l->len[l->n] = len;
    }
    l->n++;
}

/*  A node that joins a center that does not know its blocks empties its
    cache: kept blocks and copies go, a reader keeps its snapshot, and the
    cache works as new afterwards (no stale LRU entry is evicted). */
START_TEST(test_clear)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 10000, 1);
    ck_assert_ptr_nonnull(nc);
    evicted_t ev = {0};
    spm_nodecache_on_evict(nc, on_evict, &ev);
    ck_assert_int_eq(put_block(nc, 1, 1000), 0);
    ck_assert_int_eq(keep_block(nc, 2, 1, 1000, 21), 0);
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(spm_nodecache_clear(nc), 0);
    ck_assert(holds(r, 2, 1, 9, 1000, 21)); /* the snapshot stays */
    spm_nodecache_reader_end(&r);
    ck_assert_int_eq(spm_nodecache_has(nc, 1, 1), 0);
    ck_assert_int_eq(spm_nodecache_has(nc, 2, 1), 0);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.blocks, 0);
    ck_assert_uint_eq(s.bytes, 0);
    ck_assert_uint_eq(s.kept_blocks, 0);
    ck_assert_uint_eq(s.kept_bytes, 0);
    for (uint64_t id = 10; id < 20; id++) /* fills the budget: evicts only its own */
        ck_assert_int_eq(put_block(nc, id, 1000), 0);
    ck_assert_int_eq(put_block(nc, 20, 1000), 0);
    ck_assert_int_eq(ev.n, 1);
    ck_assert_uint_eq(ev.id[0], 10);
    spm_nodecache_destroy(&nc);
}
END_TEST

START_TEST(test_list_kept)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    ck_assert_ptr_nonnull(nc);
    listed_t l = {0};
    ck_assert_int_eq(spm_nodecache_list_kept(nc, on_list, &l), 0);
    ck_assert_int_eq(l.n, 0);

    ck_assert_int_eq(spm_nodecache_keep(nc, 3, 1, 4, 0, NULL, 0, 1), 0); /* checksum 0 is valid */
    ck_assert_int_eq(keep_block(nc, 3, 2, 5000, 32), 0);
    ck_assert_int_eq(keep_block(nc, 1, 7, 10, 17), 0);
    ck_assert_int_eq(put_block(nc, 2, 100), 0); /* copies are not listed */
    uint8_t *b = block_bytes(64, 33);
    ck_assert_int_eq(spm_nodecache_put(nc, 3, 3, 9, b, 64), 0);
    free(b);
    b = block_bytes(20, 18); /* kept again with other bytes: listed as it is now */
    ck_assert_int_eq(spm_nodecache_keep(nc, 1, 7, 5, 0xFEEDull, b, 20, 1), 0);
    free(b);

    ck_assert_int_eq(spm_nodecache_list_kept(nc, on_list, &l), 0);
    ck_assert_int_eq(l.n, 3);
    ck_assert_uint_eq(l.id[0], 1);
    ck_assert_uint_eq(l.version[0], 7);
    ck_assert_uint_eq(l.type[0], 5);
    ck_assert_uint_eq(l.checksum[0], 0xFEEDull);
    ck_assert_uint_eq(l.len[0], 20);
    ck_assert_uint_eq(l.id[1], 3);
    ck_assert_uint_eq(l.version[1], 1);
    ck_assert_uint_eq(l.type[1], 4);
    ck_assert_uint_eq(l.checksum[1], 0);
    ck_assert_uint_eq(l.len[1], 0);
    ck_assert_uint_eq(l.id[2], 3);
    ck_assert_uint_eq(l.version[2], 2);
    ck_assert_uint_eq(l.type[2], 9);
    b = block_bytes(5000, 32);
    ck_assert_uint_eq(l.checksum[2], spm_checksum(b, 5000));
    free(b);
    ck_assert_uint_eq(l.len[2], 5000);

    /* the same through meta, for a reader serving them; a kept block of 0 bytes reads back */
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    uint64_t sum = 1;
    unsigned flags = 0;
    ck_assert_int_eq(spm_nodecache_meta(r, 3, 1, &sum, &flags), 0);
    ck_assert_uint_eq(sum, 0);
    ck_assert_uint_eq(flags, SPM_NODECACHE_KEPT);
    ck_assert(holds(r, 3, 1, 4, 0, 0));
    ck_assert_int_eq(spm_nodecache_meta(r, 3, 3, &sum, &flags), 0);
    ck_assert_uint_eq(flags, SPM_NODECACHE_NOSUM);
    spm_nodecache_reader_end(&r);

    ck_assert_int_eq(spm_nodecache_drop(nc, 3, 2), 0);
    l.n = 0;
    ck_assert_int_eq(spm_nodecache_list_kept(nc, on_list, &l), 0);
    ck_assert_int_eq(l.n, 2);
    ck_assert_uint_eq(l.id[1], 3);
    ck_assert_uint_eq(l.version[1], 1);
    spm_nodecache_destroy(&nc);
}
END_TEST

/* A line from the other process: 1 when it said it went well. */
static int heard_ok(int fd)
{
    char ok = 0;
    return read(fd, &ok, 1) == 1 && ok == 1;
}

START_TEST(test_kept_two_processes)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 3000, 1);
    ck_assert_ptr_nonnull(nc);
    evicted_t ev = {0};
    spm_nodecache_on_evict(nc, on_evict, &ev);
    /* this process reads a copy; its note is still pending when the other keeps it */
    ck_assert_int_eq(put_block(nc, 3, 1000), 0);
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert(block_ok(r, 3, 1000, NULL));
    spm_nodecache_reader_end(&r);

    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* another IEU process of the node */
        spm_nodecache_t *c = spm_nodecache_open(dir, 3000, 0);
        char ok = c && keep_block(c, 3, 1, 1000, 33) == 0 && keep_block(c, 1, 1, 1500, 1) == 0;
        if (write(up[1], &ok, 1) != 1 || read(down[0], &ok, 1) != 1)
            _exit(2);
        spm_nodecache_reader_t *cr = spm_nodecache_reader(c);
        ok = cr && holds(cr, 2, 1, 9, 200, 2);
        spm_nodecache_reader_end(&cr);
        ok = ok && kept_with_sum(c, 2, 1, 200, 2) && spm_nodecache_drop_all(c, 3) == 0;
        spm_nodecache_destroy(&c);
        _exit(ok ? 0 : 1);
    }
    ck_assert(heard_ok(up[0]));

    /* its kept blocks are kept here too */
    ck_assert(kept_with_sum(nc, 3, 1, 1000, 33));
    ck_assert(kept_with_sum(nc, 1, 1, 1500, 1));
    r = spm_nodecache_reader(nc);
    ck_assert(holds(r, 1, 1, 9, 1500, 1));
    ck_assert(holds(r, 3, 1, 9, 1000, 33));
    spm_nodecache_reader_end(&r);
    listed_t l = {0};
    ck_assert_int_eq(spm_nodecache_list_kept(nc, on_list, &l), 0);
    ck_assert_int_eq(l.n, 2);
    spm_nodecache_stats_t s;
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.kept_blocks, 2);
    ck_assert_uint_eq(s.kept_bytes, 2500);

    /* the pending note of the copy it replaced gives the kept block no LRU place */
    ck_assert_int_eq(spm_nodecache_flush(nc), 0);
    ck_assert_int_eq(put_block(nc, 4, 400), 0);
    ck_assert_int_eq(put_block(nc, 5, 400), 0); /* 2500 + 400 + 400 > 3000: 4 goes */
    ck_assert_int_eq(ev.n, 1);
    ck_assert_uint_eq(ev.id[0], 4);
    ck_assert_int_eq(spm_nodecache_has(nc, 3, 1), 1);

    /* and the other process sees what this one keeps; its drop_all is seen here */
    ck_assert_int_eq(keep_block(nc, 2, 1, 200, 2), 0);
    ck_assert_int_eq(write(down[1], "g", 1), 1);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
    ck_assert_int_eq(spm_nodecache_has(nc, 3, 1), 0);
    spm_nodecache_stats(nc, &s);
    ck_assert_uint_eq(s.kept_blocks, 2);
    ck_assert_uint_eq(s.kept_bytes, 1700);
    spm_nodecache_destroy(&nc);
}
END_TEST

START_TEST(test_copy_sees_blocks_kept_after_a_reader)
{
    /* A thread whose reader began before a block was kept (the data
       agent's, serving a batch) copies it out as the cache is now. */
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    ck_assert_ptr_nonnull(nc);
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(keep_block(nc, 5, 1, 9000, 5), 0);
    ck_assert_int_eq(put_block(nc, 6, 300), 0);
    const void *p;
    size_t n;
    ck_assert_int_eq(spm_nodecache_get(r, 5, 1, NULL, &p, &n), SPM_ENOTFOUND);
    void *copy;
    uint32_t type;
    ck_assert_int_eq(spm_nodecache_copy(nc, 5, 1, &type, &copy, &n), 0);
    uint8_t *want = block_bytes(9000, 5);
    ck_assert_uint_eq(type, 9);
    ck_assert_uint_eq(n, 9000);
    ck_assert(memcmp(copy, want, n) == 0);
    ck_assert(!in_map(copy)); /* the caller's own: valid after the reader ends */
    free(want);
    free(copy);
    ck_assert_int_eq(spm_nodecache_copy(nc, 6, 1, NULL, &copy, &n), 0); /* an evictable copy */
    ck_assert_uint_eq(n, 300);
    free(copy);
    ck_assert_int_eq(spm_nodecache_copy(nc, 7, 1, NULL, &copy, &n), SPM_ENOTFOUND);
    ck_assert_ptr_null(copy);
    spm_nodecache_reader_end(&r);
    spm_nodecache_destroy(&nc);
}
END_TEST

/* Cuts the cache file of the running test to its two meta pages: every other page LMDB maps is
   past the end of the file, and touching one raises SIGBUS. */
static void cut_file(void)
{
    char path[160];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    ck_assert_int_eq(truncate(path, 2 * 4096), 0);
}

/* A cache filled with 40 blocks of 64 KiB, then cut short under the handle. */
static spm_nodecache_t *cut_cache(void)
{
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    ck_assert_ptr_nonnull(nc);
    for (spm_sdb_t id = 1; id <= 40; id++)
        ck_assert_int_eq(put_block(nc, id, 65536), 0);
    cut_file();
    return nc;
}

/* The cache is out of service, and says why. */
static void assert_out_for_sigbus(spm_nodecache_t *nc)
{
    char why[512];
    ck_assert(spm_nodecache_broken(nc, why, sizeof why));
    ck_assert_msg(strstr(why, "SIGBUS"), "%s", why);
}

START_TEST(test_cut_file_fails_a_read)
{
    /* A cache file cut short (or whose corrupted page number points past
       its end) faults the process that reads it; the read fails instead,
       and the cache goes out of service, so the node's agent replaces it. */
    spm_nodecache_t *nc = cut_cache();
    void *copy;
    size_t n;
    ck_assert_int_eq(spm_nodecache_copy(nc, 7, 1, NULL, &copy, &n), SPM_ESTORE);
    assert_out_for_sigbus(nc);
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert_ptr_null(r); /* out of service: refused at once */
    spm_nodecache_destroy(&nc);
    /* a reader's lookup and a listing meet the same fault */
    nc = cut_cache();
    r = spm_nodecache_reader(nc);
    ck_assert_ptr_nonnull(r);
    const void *p;
    ck_assert_int_eq(spm_nodecache_get(r, 9, 1, NULL, &p, &n), SPM_ESTORE);
    spm_nodecache_reader_end(&r);
    assert_out_for_sigbus(nc);
    spm_nodecache_destroy(&nc);
}
END_TEST

/* The reason in DIR/broken, the marker a process leaves when it takes the cache out of
   service, into WHY (SIZE bytes). */
static void marker_reason(char *why, size_t size)
{
    char path[160];
    snprintf(path, sizeof path, "%s/broken", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(why, (int)size, f));
    fclose(f);
}

/* Waits for the child PID and checks that it ended for its cache (SPM_NODECACHE_EXIT), leaving
   a marker whose reason has WANT. */
static void assert_writer_ended(pid_t pid, const char *want)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == SPM_NODECACHE_EXIT, "status %#x",
                  status);
    char why[512];
    marker_reason(why, sizeof why);
    ck_assert_msg(strstr(why, want), "%s", why);
}

START_TEST(test_cut_file_ends_a_writer)
{
    /* A write that faults cannot tell a cut file (SIGBUS on a page past
       its end) from a copy that ran over the heap and then met the end of
       the file (test_wild_page_ends_a_writer): the writer marks the cache
       broken, naming the fault, and ends, as its agent expects. */
    pick_dir();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
        for (spm_sdb_t id = 1; nc && id <= 40; id++)
            if (put_block(nc, id, 65536) != 0)
                _exit(2);
        cut_file();
        _exit(nc && put_block(nc, 41, 65536) == 0 ? 0 : 1);
    }
    assert_writer_ended(pid, "writing the cache raised SIGBUS");
}
END_TEST

/* The offset in DIR/data.mdb (open as FD) of the root page of LMDB's main database, which
   names the cache's four: from the newer of the two meta pages, in LMDB's layout (a 16-byte page
   header, then magic, version, address and map size, the free and the main database of 48
   bytes each, the free one's first 4 the page size, each one's last 8 its root page, then the
   last page and the transaction id). */
static off_t main_root(int fd)
{
    uint8_t meta[2][152];
    uint32_t psize;
    ck_assert_int_eq(pread(fd, meta[0], sizeof meta[0], 0), sizeof meta[0]);
    memcpy(&psize, meta[0] + 40, sizeof psize);
    ck_assert_int_eq(pread(fd, meta[1], sizeof meta[1], psize), sizeof meta[1]);
    uint64_t txn[2], root;
    memcpy(&txn[0], meta[0] + 144, 8);
    memcpy(&txn[1], meta[1] + 144, 8);
    memcpy(&root, meta[txn[1] > txn[0]] + 128, 8);
    uint16_t flags;
    ck_assert_int_eq(pread(fd, &flags, 2, (off_t)(root * psize + 10)), 2);
    ck_assert_msg(flags & 2, "page %llu is no leaf", (unsigned long long)root); /* P_LEAF */
    return (off_t)(root * psize);
}

/* Writes the 16-bit VALUE at byte AT of the main database's root page (12: its lower bound,
   where its node offsets end; 14: its upper bound, where its nodes begin). */
static void corrupt_main_root(int at, uint16_t value)
{
    char path[160];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, &value, 2, main_root(fd) + at), 2);
    close(fd);
}

/* The cache can be emptied and made again, as the node's agent does. */
static void assert_made_again(void)
{
    ck_assert_int_eq(spm_nodecache_wipe(dir), 0);
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 0);
    ck_assert_ptr_nonnull(nc);
    ck_assert_int_eq(put_block(nc, 1, 65536), 0);
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    ck_assert(block_ok(r, 1, 65536, NULL));
    spm_nodecache_reader_end(&r);
    spm_nodecache_destroy(&nc);
}

START_TEST(test_wild_page_fails_a_read)
{
    /* A corrupted page can send LMDB out of its map: the main database's
       root page, its lower bound 0, says it holds 2^31 keys, and the
       binary search of the first read reads a node offset 2 GiB past the
       page, past the 64 MiB map: SIGSEGV. The read fails instead, the
       cache goes out of service naming the fault, and the process, whose
       memory LMDB only read, goes on. */
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open_map(dir, 0, 1, (size_t)64 << 20);
    ck_assert_ptr_nonnull(nc);
    for (spm_sdb_t id = 1; id <= 8; id++)
        ck_assert_int_eq(put_block(nc, id, 65536), 0);
    corrupt_main_root(12, 0); /* under the open handle, as a disk would */
    void *copy;
    size_t n;
    ck_assert_int_eq(spm_nodecache_copy(nc, 3, 1, NULL, &copy, &n), SPM_ESTORE);
    char why[512];
    ck_assert(spm_nodecache_broken(nc, why, sizeof why));
    ck_assert_msg(strstr(why, "reading the cache raised SIGSEGV"), "%s", why);
    ck_assert_ptr_null(spm_nodecache_reader(nc)); /* out of service: refused at once */
    spm_nodecache_destroy(&nc);
    assert_made_again();
}
END_TEST

START_TEST(test_wild_page_ends_a_writer)
{
    /* The main database's root page, its upper bound past its end: the
       first write copies it (to change it) by that bound, over the heap of
       the process, until the copy faults (SIGSEGV at the end of the heap,
       or SIGBUS at the end of the file). That process cannot go on: it
       marks the cache broken, naming the fault, and ends with
       SPM_NODECACHE_EXIT (its agent takes that for the cache's fault). */
    pick_dir();
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    ck_assert_ptr_nonnull(nc);
    for (spm_sdb_t id = 1; id <= 8; id++)
        ck_assert_int_eq(put_block(nc, id, 65536), 0);
    spm_nodecache_destroy(&nc);
    corrupt_main_root(14, 0xfff8);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        spm_nodecache_t *c = spm_nodecache_open(dir, 0, 0);
        _exit(c && put_block(c, 9, 65536) == 0 ? 0 : 1);
    }
    assert_writer_ended(pid, "writing the cache raised SIG");
    assert_made_again();
}
END_TEST

static Suite *nodecache_suite(void)
{
    Suite *s = suite_create("nodecache");
    const spm_test_case_t c = {
        .timeout_s = 120, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, test_two_processes_share);
    SPM_TEST_ADD(s, &c, test_lru_eviction);
    SPM_TEST_ADD(s, &c, test_fresh_empties);
    SPM_TEST_ADD(s, &c, test_threads_read_while_map_grows);
    SPM_TEST_ADD(s, &c, test_reader_rules_has_drop);
    SPM_TEST_ADD(s, &c, test_writer_killed);
    SPM_TEST_ADD(s, &c, test_unwritable_dir);
    SPM_TEST_ADD(s, &c, test_checksum);
    SPM_TEST_ADD(s, &c, test_kept_never_evicted);
    SPM_TEST_ADD(s, &c, test_put_refused_beside_kept);
    SPM_TEST_ADD(s, &c, test_keep_replaces);
    SPM_TEST_ADD(s, &c, test_drop_all);
    SPM_TEST_ADD(s, &c, test_drop_each);
    SPM_TEST_ADD(s, &c, test_list_kept);
    SPM_TEST_ADD(s, &c, test_clear);
    SPM_TEST_ADD(s, &c, test_kept_two_processes);
    SPM_TEST_ADD(s, &c, test_copy_sees_blocks_kept_after_a_reader);
    SPM_TEST_ADD(s, &c, test_cut_file_fails_a_read);
    SPM_TEST_ADD(s, &c, test_cut_file_ends_a_writer);
    SPM_TEST_ADD(s, &c, test_wild_page_fails_a_read);
    SPM_TEST_ADD(s, &c, test_wild_page_ends_a_writer);
    return s;
}

SPM_TEST_MAIN(nodecache_suite)
