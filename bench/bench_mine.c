/*  Benchmark of `spm mine` against the sequential reference in the same run.

    Cases: Quest T25I10D100K (N = 1000 items, 10,000 patterns, seed 1) at
    0.6% and 0.25% minimum support, and T10I4D100K (the FIMI file when
    ../shared is there, else a Quest T10I4D100K) at 0.1%; minimum confidence
    80%. For each: the reference (tests/ref/apriori_ref.h: load + mine,
    in this process) and `spm mine` on an embedded VM with 1 and 2 IEUs
    (wall time of the whole command: reading, staging, mining, writing).
    Medians of SPM_BENCH_REPS runs (default 3); SPM_BENCH_QUICK=1 mines
    20,000-transaction databases once; SPM_BENCH_TRANSACTIONS sets |D|.

    For scale: the dissertation mined T25I10D100K at 0.6% in 1,234 s on
    one 2002 node; a leading single-threaded C Apriori takes about 0.28 s
    (0.6%) and 0.83 s (0.25%) on this machine. */
#include <stdio.h>
#include <stdlib.h>
#include "bench/bench.h"

#include "tests/ref/apriori_ref.h"
#include "tests/spm_test.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>

static long transactions(void)
{
    const char *t = getenv("SPM_BENCH_TRANSACTIONS");
    if (t && atol(t) > 0)
        return atol(t);
    return bench_quick() ? 20000 : 100000;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*  Writes a Quest database to PATH. */
static void gen(const char *path, long d, const char *t, const char *i, const char *patterns)
{
    char ds[32];
    snprintf(ds, sizeof ds, "%ld", d);
    const char *argv[] = {"gen",
                          "transactions",
                          "--transactions",
                          ds,
                          "--avg-size",
                          t,
                          "--avg-pattern",
                          i,
                          "--items",
                          "1000",
                          "--patterns",
                          patterns,
                          "--seed",
                          "1",
                          "-o",
                          path,
                          NULL};
    char *out, *err;
    if (spm_test_run(argv, 600, &out, &err) != 0)
        SPM_TEST_FAIL("bench_mine: spm gen failed: %s", err);
    free(out);
    free(err);
}

typedef struct {
    double wall, idle; /* seconds, and the IEUs' idle share of the run */
    double itemsets;
} spm_run_t;

/*  Runs spm mine once with IEUS and returns its wall time and idle share. */
static spm_run_t mine(const char *file, const char *support, const char *ieus, const char *sets)
{
    const char *argv[] = {"mine",
                          file,
                          "--min-support",
                          support,
                          "--min-confidence",
                          "80%",
                          "--ieus",
                          ieus,
                          "--json",
                          "--itemsets",
                          sets,
                          "-o",
                          "/dev/null",
                          NULL};
    char *out, *err;
    double t0 = now();
    int rc = spm_test_run(argv, 1200, &out, &err);
    spm_run_t r = {.wall = now() - t0};
    if (rc != 0)
        SPM_TEST_FAIL("bench_mine: spm mine failed (%d): %s", rc, err);
    /* idle share = sum of idle_s over IEUs / (IEUs * wall_s) */
    double wall = spm_test_json_num(out, "wall_s"), idle = 0;
    for (const char *p = out; (p = strstr(p, "\"idle_s\": ")) != NULL; p++)
        idle += atof(p + 10);
    r.idle = wall > 0 ? idle / (atof(ieus) * wall) : 0;
    free(out);
    free(err);
    return r;
}

/*  The IEUs' idle time per stage (the dissertation's Table 6.3): one more
    run with 2 IEUs and a trace. A stage is the work of one super-function
    class (initial, gen_candidate, gen_frequentSet, find_rules); its window
    runs from the first start to the last end of its SIs, and its idle share
    is the part of the window's IEU time in which no SI (of any stage: they
    overlap by design) ran. */
#define MAX_STAGES 8
#define MAX_SLICES 65536
static void stage_idle(const char *file, const char *support)
{
    char trace[600];
    snprintf(trace, sizeof trace, "%s.trace.json", file);
    const char *argv[] = {"mine", file, "--min-support", support,   "--ieus", "2", "--trace",
                          trace,  "-o", "/dev/null",     "--quiet", NULL};
    char *out, *err;
    if (spm_test_run(argv, 1200, &out, &err) != 0)
        SPM_TEST_FAIL("bench_mine: traced spm mine failed: %s", err);
    free(out);
    free(err);
    static double t0[MAX_SLICES], t1[MAX_SLICES];
    char names[MAX_STAGES][40];
    double lo[MAX_STAGES], hi[MAX_STAGES], end = 0;
    int nst = 0;
    size_t n = 0, cap = 0;
    char *line = NULL;
    FILE *f = fopen(trace, "r");
    while (f && getline(&line, &cap, f) >= 0 && n < MAX_SLICES) {
        const char *ts = strstr(line, "\"ts\": "), *dur = strstr(line, "\"dur\": ");
        const char *sf = strstr(line, "\"sf\": \"");
        if (!strstr(line, "\"ph\": \"X\"") || !ts || !dur || !sf)
            continue;
        char name[40] = "";
        sscanf(sf + 7, "%39[^\"]", name);
        const char *dot = strchr(name, '.');
        const char *stage = dot ? dot + 1 : name[0] ? name : "merge";
        int s = 0;
        while (s < nst && strcmp(names[s], stage) != 0)
            s++;
        if (s == nst && nst < MAX_STAGES) {
            snprintf(names[nst], sizeof names[nst], "%s", stage);
            lo[nst] = 1e300;
            hi[nst++] = 0;
        }
        if (s == nst)
            continue;
        t0[n] = atof(ts + 6);
        t1[n] = t0[n] + atof(dur + 7);
        lo[s] = t0[n] < lo[s] ? t0[n] : lo[s];
        hi[s] = t1[n] > hi[s] ? t1[n] : hi[s];
        end = t1[n] > end ? t1[n] : end;
        n++;
    }
    free(line);
    if (f)
        fclose(f);
    remove(trace);
    printf("  idle per stage, 2 IEUs (share of the stage's window; window as share of the run):");
    for (int s = 0; s < nst; s++) {
        double busy = 0, w = hi[s] - lo[s];
        for (size_t i = 0; i < n; i++) {
            double a = t0[i] > lo[s] ? t0[i] : lo[s], b = t1[i] < hi[s] ? t1[i] : hi[s];
            busy += b > a ? b - a : 0;
        }
        printf(" %s %.1f%% (%.0f%%)", names[s], w > 0 ? 100 * (1 - busy / (2 * w)) : 0,
               end > 0 ? 100 * w / end : 0);
    }
    printf("\n");
}

static void bench(const char *name, const char *file, const char *support, uint64_t count)
{
    int n = bench_reps();
    double ref[16], one[16], two[16], idle1 = 0, idle2 = 0;
    size_t nsets = 0;
    char sets[512];
    snprintf(sets, sizeof sets, "%s.sets", file);
    for (int i = 0; i < n; i++) {
        double t0 = now();
        ref_db_t db;
        ref_result_t r;
        SPM_TEST_ASSERT(ref_db_load(file, &db) == 0);
        ref_mine(&db, count, 0.8, 0, &r);
        ref[i] = now() - t0;
        nsets = r.nsets;
        ref_result_free(&r);
        ref_db_free(&db);
        spm_run_t a = mine(file, support, "1", sets), b = mine(file, support, "2", sets);
        one[i] = a.wall;
        two[i] = b.wall;
        idle1 += a.idle / n;
        idle2 += b.idle / n;
    }
    char *got = NULL;
    FILE *f = fopen(sets, "r");
    size_t lines = 0, cap = 0;
    while (f && getline(&got, &cap, f) >= 0)
        lines += got[0] != '#';
    free(got);
    if (f)
        fclose(f);
    if (lines != nsets)
        SPM_TEST_FAIL("bench_mine: %s: spm found %zu itemsets, the reference %zu\n", name, lines,
                      nsets);
    double r = bench_median(ref, n), s1 = bench_median(one, n), s2 = bench_median(two, n);
    printf("%-22s %7zu sets  ref %7.3f s  spm 1 IEU %7.3f s (%4.2fx, idle %4.1f%%)  "
           "2 IEUs %7.3f s (%4.2fx, idle %4.1f%%)\n",
           name, nsets, r, s1, r / s1, 100 * idle1, s2, r / s2, 100 * idle2);
    stage_idle(file, support);
    fflush(stdout);
}

int main(void)
{
    const char *dir = spm_test_tmpdir();
    long d = transactions();
    char t25[512], t10[512];
    snprintf(t25, sizeof t25, "%s/T25I10D%ldK.dat", dir, d / 1000);
    gen(t25, d, "25", "10", "10000");
    struct stat st;
    if (d == 100000 && stat("../shared/data/fimi/T10I4D100K.dat", &st) == 0) {
        snprintf(t10, sizeof t10, "../shared/data/fimi/T10I4D100K.dat");
    } else {
        snprintf(t10, sizeof t10, "%s/T10I4D%ldK.dat", dir, d / 1000);
        gen(t10, d, "10", "4", "2000");
    }
    printf("bench_mine: %ld transactions, medians of %d runs; ratio = reference / spm "
           "(above 1: spm faster); idle = IEU idle share of the job\n",
           d, bench_reps());
    bench("T25I10 0.6%", t25, "0.6%", (uint64_t)(d * 6 + 999) / 1000);
    bench("T25I10 0.25%", t25, "0.25%", (uint64_t)(d * 25 + 9999) / 10000);
    bench("T10I4 0.1%", t10, "0.1%", (uint64_t)(d + 999) / 1000);
    printf("for scale: the dissertation's T25I10D100K at 0.6%%: 1,234 s on one 2002 node;\n"
           "a leading single-threaded C Apriori here: about 0.28 s (0.6%%), 0.83 s (0.25%%)\n");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
