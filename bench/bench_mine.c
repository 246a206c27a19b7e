/*  Benchmark of `spm mine` against the sequential reference in the same run.

    Cases: Quest T25I10D100K (N = 1000 items, 10,000 patterns, seed 1) at
    0.6% and 0.25% minimum support, and T10I4D100K (the FIMI file when
    ../shared is there, else a Quest T10I4D100K) at 0.1%; minimum confidence
    80%. For each: the reference (tests/ref/apriori_ref.h: load + mine,
    in this process) and `spm mine` on an embedded VM with 1 and 2 IEUs
    (wall time of the whole command: reading, staging, mining, writing).
    Medians of SPM_BENCH_REPS runs (default 3); SPM_BENCH_QUICK=1 mines
    20,000-transaction databases once; SPM_BENCH_TRANSACTIONS sets |D|.

    Then the algorithms table: itemsets only, level-wise and depth first,
    against a sequential depth-first miner timed in this process
    (bench/eclat_base.h: read, mine, write), all three outputs compared
    byte for byte, on T25I10D100K, T10I4D100K, chess (when ../shared is
    there) and a dense generated set; time and peak memory of all spm
    processes.

    Then against Borgelt's apriori, eclat and fpgrowth (bench/borgelt.h:
    built once from ../shared/peers/borgelt or $SPM_PEERS, skipped with a
    message where they are not): whole commands on the same files at the
    same supports, alternating, each time and the ratio spm / the best of
    his three (issue 41's rows and targets).

    BENCH_MINE_SKIP: any of "reference,algorithms,borgelt" to skip a part.

    For scale: the dissertation mined T25I10D100K at 0.6% in 1,234 s on
    one 2002 node. */
#include <stdio.h>
#include <stdlib.h>
#include "bench/bench.h"

#include "tests/ref/apriori_ref.h"
#include "tests/spm_test.h"

#include "bench/borgelt.h"
#include "bench/eclat_base.h"
#include "bench/peakmem.h"

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

static const char *tmp; /* the bench's directory */

/*  BENCH_MINE_SKIP names WHAT (any of "reference,algorithms,borgelt"). */
static int skipped(const char *what)
{
    const char *v = getenv("BENCH_MINE_SKIP");
    return v && strstr(v, what);
}

static void bench(const char *name, const char *file, const char *support, uint64_t count)
{
    int n = bench_reps();
    double ref[16], one[16], two[16], idle1 = 0, idle2 = 0;
    size_t nsets = 0;
    char sets[512];
    snprintf(sets, sizeof sets, "%s/bench.sets", tmp); /* not beside FILE: it may be read-only */
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
    remove(sets);
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

/* ------------------------------------------------- algorithms and memory */

typedef struct {
    double wall, mib; /* whole command; peak Pss of all its processes */
} measured_t;

/*  Runs `spm mine FILE --min-support SUPPORT --ieus 2 ARGS...` (ARGS ends
    with NULL), returning its wall time and, when MEM, its peak memory
    (sampling /proc takes CPU from the run: that run is not timed). */
static measured_t mine_measured(const char *file, const char *support, const char *const *args,
                                int mem)
{
    const char *argv[32] = {"mine", file, "--min-support", support, "--ieus", "2", "--quiet"};
    size_t n = 7;
    while (*args && n < 31)
        argv[n++] = *args++;
    argv[n] = NULL;
    double t0 = now();
    spm_test_proc_t p = spm_test_start(argv);
    peakmem_t m;
    if (mem)
        peakmem_start(&m, p.pid);
    char *out, *err;
    int rc = spm_test_finish(&p, 1200, &out, &err);
    measured_t r = {.wall = now() - t0, .mib = mem ? peakmem_stop(&m) : 0};
    if (rc != 0)
        SPM_TEST_FAIL("bench_mine: spm mine %s %s failed (%d): %s", file, support, rc, err);
    free(out);
    free(err);
    return r;
}

/*  The median time of bench_reps() runs, and the peak memory of one more. */
static measured_t measured(const char *file, const char *support, const char *const *args)
{
    double w[16];
    int n = bench_reps() > 16 ? 16 : bench_reps();
    for (int i = 0; i < n; i++)
        w[i] = mine_measured(file, support, args, 0).wall;
    return (measured_t){bench_median(w, n), mine_measured(file, support, args, 1).mib};
}

/*  Lines of PATH that are not headers. */
static size_t count_lines(const char *path)
{
    char *line = NULL;
    size_t lines = 0, cap = 0;
    FILE *f = fopen(path, "r");
    while (f && getline(&line, &cap, f) >= 0)
        lines += line[0] != '#';
    free(line);
    if (f)
        fclose(f);
    return lines;
}

/*  The median time of bench_reps() runs of the sequential baseline
    (bench/eclat_base.h) at SUPPORT ("0.6%"), writing to OUT. */
static double baseline(const char *file, const char *support, const char *out)
{
    double w[16];
    int n = bench_reps() > 16 ? 16 : bench_reps();
    for (int i = 0; i < n; i++)
        if (eb_mine(file, atof(support) / 100, 0, out, &w[i]) != 0)
            SPM_TEST_FAIL("bench_mine: the baseline failed on %s\n", file);
    return bench_median(w, n);
}

#define RULES 1      /* also with rules (auto) */
#define NO_APRIORI 2 /* not level-wise: too long a run (the dense set at 5%) */

/*  One case of the algorithms table: itemsets only with each algorithm
    and with the sequential baseline (all outputs compared byte for
    byte), then with rules (the default, auto) when FLAGS has RULES. */
static void algorithms(const char *name, const char *file, const char *support, int flags)
{
    char a[600], e[600], r[600], cmd[2000];
    snprintf(a, sizeof a, "%s/apriori.sets", tmp);
    snprintf(e, sizeof e, "%s/eclat.sets", tmp);
    snprintf(r, sizeof r, "%s/rules.txt", tmp);
    const char *ap[] = {"--itemsets-only", "--algorithm", "apriori", "--itemsets", a, NULL};
    const char *ec[] = {"--itemsets-only", "--algorithm", "eclat", "--itemsets", e, NULL};
    const char *au[] = {"--itemsets", e, "-o", r, NULL};
    measured_t me = measured(file, support, ec), ma = {0};
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, e);
    if (!(flags & NO_APRIORI)) {
        ma = measured(file, support, ap);
        if (system(cmd) != 0)
            SPM_TEST_FAIL("bench_mine: %s: apriori and eclat wrote different itemsets\n", name);
    }
    double base = baseline(file, support, a);
    if (system(cmd) != 0)
        SPM_TEST_FAIL("bench_mine: %s: the baseline and spm wrote different itemsets\n", name);
    size_t sets = count_lines(a);
    printf("| %s | %zu |", name, sets);
    if (flags & NO_APRIORI)
        printf(" - | %.3f s, %.0f MiB | - |", me.wall, me.mib);
    else
        printf(" %.3f s, %.0f MiB | %.3f s, %.0f MiB | %.2f |", ma.wall, ma.mib, me.wall, me.mib,
               me.wall / ma.wall);
    printf(" %.3f s | %.2f |", base, base / me.wall);
    if (flags & RULES) {
        measured_t mr = measured(file, support, au);
        printf(" %.3f s, %.0f MiB, %zu rules |\n", mr.wall, mr.mib, count_lines(r));
    } else {
        printf(" - |\n");
    }
    fflush(stdout);
    remove(a);
    remove(e);
    remove(r);
}

/* ------------------------------------------------------ Borgelt's miners */

static const char *peers; /* the built peers' directory, or NULL */

/*  One row against Borgelt's apriori, eclat and fpgrowth (bench/borgelt.h):
    `spm mine --itemsets-only` (2 IEUs, whole command, writing to a file)
    and each of his (one thread, writing to a file) at the same support,
    repetitions alternating so that a drifting machine hits all alike; the
    ratio is the median of the per-repetition ratios spm / best of his
    three. With RULES, also `spm mine` with rules of one consequent at 80%
    against his apriori's `-tr` rules with the same definition (-o: a
    rule's support is that of body and head; -m2: no empty body), the only
    rules the three share. TARGET: the bound on the ratio. */
static void against_borgelt(const char *name, const char *file, const char *support, int rules)
{
    int n = bench_reps() > 16 ? 16 : bench_reps();
    char out[600], theirs[BORGELT_N][600], s[64], pr[600];
    snprintf(out, sizeof out, "%s/spm.sets", tmp);
    snprintf(pr, sizeof pr, "%s/borgelt.rules", tmp);
    snprintf(s, sizeof s, "-s%.*s", (int)strcspn(support, "%"), support);
    double spm[16], them[BORGELT_N][16], ratio[16], srules[16], prules[16], rratio[16];
    const char *sets_args[] = {"--itemsets-only", "--itemsets", out, NULL};
    const char *rule_args[] = {"--min-confidence", "80%", "--max-consequent", "1", "-o", out, NULL};
    for (int i = 0; i < n; i++) {
        spm[i] = mine_measured(file, support, sets_args, 0).wall;
        double best = 1e300;
        for (int p = 0; p < BORGELT_N; p++) {
            char prog[1100];
            snprintf(prog, sizeof prog, "%s/%s", peers, borgelt_names[p]);
            snprintf(theirs[p], sizeof theirs[p], "%s/%s.sets", tmp, borgelt_names[p]);
            const char *argv[] = {prog, s, file, theirs[p], NULL};
            if ((them[p][i] = borgelt_time(argv)) < 0)
                SPM_TEST_FAIL("bench_mine: %s %s %s failed\n", prog, s, file);
            best = them[p][i] < best ? them[p][i] : best;
        }
        ratio[i] = spm[i] / best;
    }
    size_t mine_n = count_lines(out);
    printf("| %s | %zu |  %.3f s |", name, mine_n, bench_median(spm, n));
    for (int p = 0; p < BORGELT_N; p++) {
        size_t c = count_lines(theirs[p]);
        printf(" %.3f s%s |", bench_median(them[p], n), c == mine_n ? "" : " (other count)");
        remove(theirs[p]);
    }
    double r = bench_median(ratio, n), best = 1e300;
    for (int p = 0; p < BORGELT_N; p++)
        best = bench_median(them[p], n) < best ? bench_median(them[p], n) : best;
    double target = best > 0.3 ? 0.7 : 1.0;
    printf(" %.2f | %.1f%s |", r, target, r <= target ? "" : " (over)");
    if (rules) {
        char prog[1100];
        snprintf(prog, sizeof prog, "%s/apriori", peers);
        for (int i = 0; i < n; i++) {
            srules[i] = mine_measured(file, support, rule_args, 0).wall;
            const char *argv[] = {prog, "-tr", "-o", "-m2", "-c80", s, file, pr, NULL};
            if ((prules[i] = borgelt_time(argv)) < 0)
                SPM_TEST_FAIL("bench_mine: %s -tr %s %s failed\n", prog, s, file);
            rratio[i] = srules[i] / prules[i];
        }
        size_t a = count_lines(out), b = count_lines(pr);
        printf(" %zu rules%s: spm %.3f s, apriori -tr %.3f s, %.2f |\n", a,
               a == b ? "" : " (apriori: another count)", bench_median(srules, n),
               bench_median(prules, n), bench_median(rratio, n));
        remove(pr);
    } else {
        printf(" - |\n");
    }
    remove(out);
    fflush(stdout);
}

int main(void)
{
    const char *dir = tmp = spm_test_tmpdir();
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
    printf("bench_mine: %ld transactions, medians of %d runs\n", d, bench_reps());
    if (!skipped("reference")) {
        printf("ratio = reference / spm (above 1: spm faster); idle = IEU idle share of the "
               "job\n");
        bench("T25I10 0.6%", t25, "0.6%", (uint64_t)(d * 6 + 999) / 1000);
        bench("T25I10 0.25%", t25, "0.25%", (uint64_t)(d * 25 + 9999) / 10000);
        bench("T10I4 0.1%", t10, "0.1%", (uint64_t)(d + 999) / 1000);
        printf("for scale: the dissertation's T25I10D100K at 0.6%%: 1,234 s on one 2002 node\n");
    }

    /* A dense set: few items, long transactions (as mushroom or chess). */
    char dense[512];
    snprintf(dense, sizeof dense, "%s/dense.dat", dir);
    const char *dg[] = {"gen",
                        "transactions",
                        "--transactions",
                        bench_quick() ? "2000" : "8000",
                        "--avg-size",
                        "23",
                        "--avg-pattern",
                        "12",
                        "--items",
                        "120",
                        "--patterns",
                        "20",
                        "--corruption",
                        "0.1",
                        "--seed",
                        "2",
                        "-o",
                        dense,
                        NULL};
    char *out, *err;
    if (spm_test_run(dg, 600, &out, &err) != 0)
        SPM_TEST_FAIL("bench_mine: spm gen failed: %s", err);
    free(out);
    free(err);
    const char *chess = "../shared/data/fimi/chess.dat";
    int have_chess = stat(chess, &st) == 0;
    if (!have_chess)
        printf("(chess: skipped, %s is not here)\n", chess);
    if (!skipped("algorithms")) {
        printf("\n## Algorithms: itemsets only, apriori and eclat (byte-identical output), then "
               "with rules (auto, 80%%); 2 IEUs, whole command, medians of %d; memory = peak Pss "
               "of all spm processes, in one more run (sampling /proc slows the run it "
               "watches)\n\n",
               bench_reps());
        printf("baseline: bench/eclat_base.h, one thread in this process (read, mine, write); "
               "baseline / eclat above 1: spm faster\n\n");
        printf("| data, support | itemsets | apriori | eclat | eclat / apriori | baseline | "
               "baseline / eclat | with rules |\n"
               "|---|---|---|---|---|---|---|---|\n");
        algorithms("T25I10 1%", t25, "1%", RULES);
        algorithms("T25I10 0.6%", t25, "0.6%", RULES);
        algorithms("T25I10 0.25%", t25, "0.25%", RULES);
        algorithms("T10I4 0.1%", t10, "0.1%", RULES);
        algorithms("T10I4 0.05%", t10, "0.05%", 0);
        if (have_chess) {
            algorithms("chess 70%", chess, "70%", 0);
            algorithms("chess 60%", chess, "60%", 0);
        }
        algorithms("dense 10%", dense, "10%", 0);
        algorithms("dense 5%", dense, "5%", NO_APRIORI);
    }
    char why[1200];
    if (!skipped("borgelt") && !(peers = borgelt_find(why, sizeof why))) {
        printf("\n(Borgelt's miners: skipped, %s)\n", why);
    } else if (!skipped("borgelt")) {
        printf("\n## Against Borgelt's apriori, eclat and fpgrowth (one thread each), whole "
               "commands writing their output to a file, same support, medians of %d "
               "alternating runs; spm: --itemsets-only, 2 IEUs; ratio = spm / the best of his "
               "three in each run (below 1: spm faster); target from issue 41: 1.0, 0.7 where "
               "his best takes over 0.3 s\n\n",
               bench_reps());
        printf("| data, support | itemsets | spm | apriori | eclat | fpgrowth | spm / best | "
               "target | rules of one consequent, 80%%: spm / apriori -tr |\n"
               "|---|---|---|---|---|---|---|---|---|\n");
        if (have_chess) {
            against_borgelt("chess 70%", chess, "70%", 0);
            against_borgelt("chess 60%", chess, "60%", 0);
        }
        against_borgelt("T10I4 0.05%", t10, "0.05%", RULES);
        against_borgelt("T25I10 0.6%", t25, "0.6%", RULES);
        against_borgelt("T25I10 0.25%", t25, "0.25%", RULES);
        against_borgelt("dense 10%", dense, "10%", RULES);
        against_borgelt("dense 5%", dense, "5%", 0);
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
