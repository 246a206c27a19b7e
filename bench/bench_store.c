/*  Benchmarks of datacache/, each against a baseline in the same run:
    - store: 64 KiB puts, one synced transaction each, against batches of 64
      (what a batch saves), and gets against the puts;
    - node cache: summing a 1 MiB block through a pointer into the map
      against the same bytes in a private buffer at the same alignment (the
      cost of reading mapped memory), and through a new reader and get for
      every pass against the held pointer (the cost of the cache's API).
    SPM_BENCH_QUICK=1 shrinks the work for a smoke run. */
#include "datacache/nodecache.h"
#include "datacache/store.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void die(const char *what)
{
    fprintf(stderr, "bench_store: %s: %s\n", what, spm_error_detail());
    exit(1);
}

static uint64_t sum(const uint8_t *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += p[i];
    return s;
}

int main(void)
{
    const char *q = getenv("SPM_BENCH_QUICK");
    int n = q && *q == '1' ? 64 : 640;
    char base[] = "/tmp/spm-bench-XXXXXX", dir[64];
    if (!mkdtemp(base))
        return 1;
    size_t len = 64 << 10;
    uint8_t *buf = malloc(1 << 20);
    for (size_t i = 0; i < 1 << 20; i++)
        buf[i] = (uint8_t)(i * 7);

    snprintf(dir, sizeof dir, "%s/store", base);
    spm_store_t *st = spm_store_open(dir);
    if (!st)
        die("store open");
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (spm_store_put(st, (spm_sdb_t)i + 1, 1, 1, buf, len) != 0)
            die("put");
    double single = now() - t0;
    t0 = now();
    for (int i = 0; i < n; i++) {
        if (i % 64 == 0 && spm_store_begin(st) != 0)
            die("begin");
        if (spm_store_put(st, (spm_sdb_t)i + 1, 2, 1, buf, len) != 0)
            die("put");
        if ((i % 64 == 63 || i == n - 1) && spm_store_commit(st) != 0)
            die("commit");
    }
    double batched = now() - t0;
    t0 = now();
    for (int i = 0; i < n; i++) {
        void *d;
        size_t l;
        if (spm_store_get(st, (spm_sdb_t)i + 1, 0, NULL, NULL, &d, &l) != 0)
            die("get");
        free(d);
    }
    double gets = now() - t0;
    spm_store_destroy(&st);
    double mib = (double)n * (double)len / (1 << 20);
    printf("store put, one txn each:  %8.1f MiB/s\n", mib / single);
    printf("store put, batches of 64: %8.1f MiB/s  (%.1fx the single puts)\n", mib / batched,
           single / batched);
    printf("store get:                %8.1f MiB/s  (%.1fx the single puts)\n", mib / gets,
           single / gets);

    snprintf(dir, sizeof dir, "%s/cache", base);
    spm_nodecache_t *nc = spm_nodecache_open(dir, 0, 1);
    if (!nc || spm_nodecache_put(nc, 1, 1, 1, buf, 1 << 20) != 0)
        die("cache");
    /* the baseline's bytes sit at the same offset in a cache line as the mapped block's */
    spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
    const void *p;
    size_t l;
    if (!r || spm_nodecache_get(r, 1, 1, NULL, &p, &l) != 0)
        die("cache get");
    uint8_t *mem = aligned_alloc(64, (2 << 20) + 64), *plainbuf = mem + (uintptr_t)p % 64;
    memcpy(plainbuf, p, l);
    int reps = n * 4;
    uint64_t s1 = 0, s2 = 0, s3 = 0;
    t0 = now();
    for (int i = 0; i < reps; i++)
        s1 += sum(plainbuf, l);
    double plain = now() - t0;
    t0 = now();
    for (int i = 0; i < reps; i++)
        s2 += sum(p, l);
    double held = now() - t0;
    spm_nodecache_reader_end(&r);
    free(mem);
    t0 = now();
    for (int i = 0; i < reps; i++) {
        r = spm_nodecache_reader(nc);
        if (!r || spm_nodecache_get(r, 1, 1, NULL, &p, &l) != 0)
            die("cache get");
        s3 += sum(p, l);
        spm_nodecache_reader_end(&r);
    }
    double cached = now() - t0;
    if (s1 != s2 || s1 != s3)
        die("sums differ");
    printf("map bytes, pointer held:  %8.1f MiB/s  (%.2fx a private copy)\n", reps / held,
           plain / held);
    printf("cache read, reader each:  %8.1f MiB/s  (%.2fx the held pointer)\n", reps / cached,
           held / cached);
    spm_nodecache_destroy(&nc);
    free(buf);
    nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
