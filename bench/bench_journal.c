/*  Benchmark of the center's journal (what lets a restarted center resume
    its jobs), in two parts.

    Cost: the same jobs on an embedded VM of 2 IEUs with the journal on
    (SPM_JOURNAL=true; an embedded VM has none by default, since nothing
    could resume it) and off (false), alternating, in the same run: the
    dispatch workload of bench_vm (null SIs, prefetch 64: the worst case
    per SI), 1 ms SIs, a sparse and a dense product (bench_matmul's kinds,
    smaller) and a Quest mining job (bench_mine's T25I10D100K at 0.6%).
    Printed: the center's CPU per SI (the report's center_cpu_s over its
    committed SIs) and the job's wall time, medians, and on/off ratios.

    Recovery: a center and an agent of 2 IEUs; a job of null SIs runs until
    100,000 SIs are committed, the center is killed with SIGKILL and started
    again on the same store. Printed: the replay (events read back, their
    time and rate, from the center's log line) and the time from the new
    center's start to the job's first new commit (polled with spm status
    every 10 ms), medians.

    Medians of SPM_BENCH_REPS runs (default 3); SPM_BENCH_QUICK=1 shrinks
    the work for a smoke run. */
#include "bench/bench.h"
#include "tests/spm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void must_run(const char *const *argv)
{
    char *out, *err;
    if (spm_test_run(argv, 1200, &out, &err) != 0)
        SPM_TEST_FAIL("bench_journal: spm %s failed: %s", argv[0], err);
    free(out);
    free(err);
}

/* ------------------------------------------------------------------ cost */

typedef struct {
    const char *name;
    const char *argv[24];
} workload_t;

/*  Runs W once with the journal ON or off; sets *CPU_US_PER_SI and *WALL. */
static void run_once(const workload_t *w, int on, double *cpu_per_si, double *wall)
{
    setenv("SPM_JOURNAL", on ? "true" : "false", 1);
    char *out, *err;
    if (spm_test_run(w->argv, 1200, &out, &err) != 0)
        SPM_TEST_FAIL("bench_journal: %s failed: %s", w->name, err);
    double committed = spm_test_json_num(out, "committed");
    *cpu_per_si = 1e6 * spm_test_json_num(out, "center_cpu_s") / (committed > 0 ? committed : 1);
    *wall = spm_test_json_num(out, "wall_s");
    free(out);
    free(err);
    unsetenv("SPM_JOURNAL");
}

static void bench_cost(const char *dir)
{
    int quick = bench_quick();
    char a[128], b[128], da[128], db[128], t[128];
    snprintf(a, sizeof a, "%s/a.mtx", dir);
    snprintf(b, sizeof b, "%s/b.mtx", dir);
    snprintf(da, sizeof da, "%s/da.mtx", dir);
    snprintf(db, sizeof db, "%s/db.mtx", dir);
    snprintf(t, sizeof t, "%s/t.dat", dir);
    const char *sparse_n = quick ? "1024" : "4096", *dense_n = quick ? "512" : "2048";
    const char *gens[][16] = {
        {"gen", "matrix", "--rows", sparse_n, "--density", "0.05", "--seed", "1", "-o", a, NULL},
        {"gen", "matrix", "--rows", sparse_n, "--density", "0.05", "--seed", "2", "-o", b, NULL},
        {"gen", "matrix", "--rows", dense_n, "--format", "array", "--seed", "3", "-o", da, NULL},
        {"gen", "matrix", "--rows", dense_n, "--format", "array", "--seed", "4", "-o", db, NULL},
        {"gen", "transactions", "--transactions", quick ? "20000" : "100000", "--avg-size", "25",
         "--avg-pattern", "10", "--patterns", "10000", "-o", t, NULL},
    };
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++)
        must_run(gens[i]);
    const char *null_sis = quick ? "20000" : "200000", *ms_sis = quick ? "500" : "4000";
    workload_t ws[] = {
        {"null SIs (bench_vm dispatch)",
         {"run", "synthetic", "--sis", null_sis, "--work", "fixed:0", "--ieus", "2", "--prefetch",
          "64", "--json", "--quiet", NULL}},
        {"1 ms SIs",
         {"run", "synthetic", "--sis", ms_sis, "--work", "fixed:1ms", "--ieus", "2", "--json",
          "--quiet", NULL}},
        {"sparse matmul, 5%, blocks of 256",
         {"matmul", a, b, "-o", "/dev/null", "--block", "256", "--ieus", "2", "--json", "--quiet",
          NULL}},
        {"dense matmul, blocks of 512",
         {"matmul", da, db, "-o", "/dev/null", "--block", "512", "--ieus", "2", "--json", "--quiet",
          NULL}},
        {"mine T25I10 at 0.6%",
         {"mine", t, "--min-support", "0.6%", "--ieus", "2", "--json", "--quiet", "-o", "/dev/null",
          NULL}},
    };
    int reps = bench_reps();
    printf("\n## The journal's cost: the same jobs with the journal on and off "
           "(embedded VM, 2 IEUs, alternating, medians of %d)\n\n",
           reps);
    printf("| job | center CPU/SI on (us) | off (us) | ratio | wall on (s) | off (s) | ratio "
           "|\n|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) {
        double con[16], coff[16], won[16], woff[16];
        for (int r = 0; r < reps && r < 16; r++) { /* which goes first alternates */
            if (r % 2)
                run_once(&ws[k], 0, &coff[r], &woff[r]);
            run_once(&ws[k], 1, &con[r], &won[r]);
            if (!(r % 2))
                run_once(&ws[k], 0, &coff[r], &woff[r]);
        }
        double mc = bench_median(con, reps), mo = bench_median(coff, reps);
        double wn = bench_median(won, reps), wf = bench_median(woff, reps);
        printf("| %s | %.2f | %.2f | %.3f | %.3f | %.3f | %.3f |\n", ws[k].name, mc, mo,
               mo > 0 ? mc / mo : 0, wn, wf, wf > 0 ? wn / wf : 0);
        fflush(stdout);
    }
}

/* -------------------------------------------------------------- recovery */

/*  The job's committed SIs in a `spm status --json` text (-1: none). */
static double committed_in(const char *status)
{
    const char *p = status ? strstr(status, "{\"job\": ") : NULL;
    return p ? spm_test_json_num(p, "committed") : -1;
}

static char *status_of(const char *ep)
{
    const char *argv[] = {"status", "--center", ep, "--json", "--timeout", "5000", NULL};
    char *out = NULL;
    if (spm_test_run(argv, 30, &out, NULL) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

typedef struct {
    double committed;      /* at the kill */
    double events, replay; /* read back, and the seconds it took */
    double first_commit;   /* seconds from the new center's start */
} recovery_t;

static recovery_t recover_once(double target)
{
    recovery_t r = {0};
    spm_test_vm_t vm;
    const char *extra[] = {"--log-level", "info", NULL};
    spm_test_vm_start(&vm, extra);
    spm_test_vm_agent(&vm, "2", NULL);
    usleep(300000);
    char sis[32];
    snprintf(sis, sizeof sis, "%.0f", target * 3);
    const char *submit[] = {"submit", "synthetic", "--center",   vm.ep, "--sis", sis,
                            "--work", "fixed:0",   "--prefetch", "64",  NULL};
    must_run(submit);
    for (int i = 0; i < 6000; i++) { /* up to 60 s */
        char *st = status_of(vm.ep);
        double c = committed_in(st);
        free(st);
        if (c >= target)
            break;
        usleep(10000);
    }
    kill(vm.center.pid, SIGKILL);
    spm_test_finish(&vm.center, 10, NULL, NULL);
    char *st = NULL;
    char store[128];
    snprintf(store, sizeof store, "%s/store", vm.dir);
    const char *center[] = {"center", "--listen",    vm.ep,  "--store",
                            store,    "--log-level", "info", NULL};
    double t0 = now();
    vm.center = spm_test_start(center);
    double base = -1;
    for (int i = 0; i < 3000; i++) { /* up to 30 s */
        free(st);
        st = status_of(vm.ep);
        double c = committed_in(st);
        if (base < 0 && c >= 0)
            base = c; /* what the journal gave back */
        if (base >= 0 && c > base) {
            r.first_commit = now() - t0;
            break;
        }
        usleep(10000);
    }
    free(st);
    r.committed = base;
    kill(vm.center.pid, SIGTERM);
    char *err = NULL;
    spm_test_finish(&vm.center, 30, NULL, &err);
    const char *p = err ? strstr(err, "jobs read back in ") : NULL;
    if (p) {
        r.replay = strtod(p + strlen("jobs read back in "), NULL);
        const char *e = strstr(p, " s (");
        r.events = e ? strtod(e + 4, NULL) : 0;
    }
    free(err);
    for (int i = 0; i < vm.nagents; i++)
        spm_test_finish(&vm.agents[i], 60, NULL, NULL);
    vm.nagents = 0;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", vm.dir);
    SPM_TEST_ASSERT(system(cmd) == 0);
    return r;
}

static void bench_recovery(void)
{
    double target = bench_quick() ? 20000 : 100000;
    int reps = bench_reps();
    double first[16], replay[16], rate[16], committed[16];
    for (int r = 0; r < reps && r < 16; r++) {
        recovery_t x = recover_once(target);
        if (x.first_commit <= 0)
            SPM_TEST_FAIL("bench_journal: the resumed job made no new commit");
        first[r] = x.first_commit;
        replay[r] = x.replay;
        rate[r] = x.replay > 0 ? x.events / x.replay : 0;
        committed[r] = x.committed;
    }
    printf("\n## Recovery: a job of null SIs killed with %.0f SIs committed "
           "(center and 1 agent of 2 IEUs, medians of %d)\n\n",
           target, reps);
    printf("| committed at the restart | replay (s) | events/s | start to first new commit (s) |\n"
           "|---|---|---|---|\n");
    printf("| %.0f | %.3f | %.0f | %.3f |\n", bench_median(committed, reps),
           bench_median(replay, reps), bench_median(rate, reps), bench_median(first, reps));
}

int main(void)
{
    const char *dir = spm_test_tmpdir();
    bench_cost(dir);
    bench_recovery();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    SPM_TEST_ASSERT(system(cmd) == 0);
    return 0;
}
