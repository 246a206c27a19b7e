/*  Dissertation section 6.3.1, Figure 6.1: the imbalance overhead of the
    matrix-multiplication super-program under the five scheduling policies
    (syn, s, r, sr, ss), on homogeneous and on 3:1 heterogeneous nodes, with
    the model of equation 6.4 beside it.

    The dissertation simulated 1 to 64 PCs, 32 x 32 blocks, SI work uniform
    in 0-20 ms, odd nodes 3x as fast as even ones. We run the real program:
    a dense N x N product A x A on 2 IEUs with blocks of 256 and one product
    per multiply SI, so every group of C(i,j) is a chain of N/256 SIs. Two
    measures of imbalance:

      span idle   from the job's trace: 1 - (time in SIs) / (2 x the span
                  from the first SI's start to the last SI's end); what
                  equation 6.4 models (IEUs idle while others finish);
      w_idle      the run report's idle overhead (idle slot time / busy
                  time), which also counts the job's start and end.

    Heterogeneity is emulated as paper.h says (one IEU pinned with two busy
    processes on CPU 0, the other alone on CPU 1). Medians of
    SPM_PAPER_REPS runs (default 5). */
#include "bench/bench.h"
#include "tests/spm_test.h"

#include "bench/paper/paper.h"

/*  The dissertation's own workload: synthetic SIs uniform in 0-20 ms, in K
    super-functions each ending in a barrier, against eq. 6.4 with
    n_i = SIs / K. */
static void synthetic(int reps)
{
    const char *sis = paper_quick() ? "100" : "400";
    static const char *sfs[] = {"1", "10", "40"};
    printf("\n### The dissertation's workload: synthetic SIs uniform in 0-20 ms, %s SIs in K "
           "super-functions\n\n",
           sis);
    printf("| IEUs | K | n_i | idle in the SIs' span (median) | model delta | w_idle | least SIs "
           "on one IEU |\n|---|---|---|---|---|---|---|\n");
    for (int hetero = 0; hetero < 2; hetero++)
        for (int k = 0; k < 3; k++) {
            const char *argv[] = {"run",    "synthetic",      "--sis",  sis, "--sfs", sfs[k],
                                  "--work", "uniform:0:20ms", "--ieus", "2", NULL};
            double m[P_FIELDS], ni = atof(sis) / atof(sfs[k]);
            paper_median(argv, 2, hetero, reps, m);
            printf("| %s | %s | %.0f | %.3f | %.3f | %.3f | %.0f%% |\n", hetero ? "3:1" : "equal",
                   sfs[k], ni, m[P_SPAN_IDLE], paper_eq64(2, ni, hetero ? 1.5 : 0.5), m[P_W_IDLE],
                   100 * m[P_MIN_SHARE]);
        }
}

int main(void)
{
    int reps = paper_reps(5);
    long n = paper_quick() ? 512 : 1024, block = 256, g = n / block;
    static const char *policies[] = {"syn", "s", "r", "sr", "ss"};
    const char *a = paper_file("A.mtx");
    paper_gen_dense(a, n, n, 2);
    double groups = (double)(g * g), sis = groups * (double)g; /* multiply SIs */
    printf("\n## Imbalance overhead of the scheduling policies (section 6.3.1, Figure 6.1, "
           "eq. 6.4)\n\n");
    printf("Dissertation: simulation of the MM program on 1-64 PCs, 32 x 32 blocks, SI work "
           "uniform in 0-20 ms, heterogeneous nodes 3:1. Figure 6.1 is not in the text "
           "extraction; the text says: \"the synchronous policy introduces significantly higher "
           "imbalance overhead\", \"dynamic scheduling algorithms ... have less imbalance "
           "overhead than static scheduling algorithms\", \"the difference ... among different "
           "(dynamic) scheduling strategies ... is very small\", and on heterogeneous nodes "
           "\"the imbalance overhead increases\".\n\n");
    printf("Heterogeneity (3:1): during each job one IEU is pinned to CPU 0 together with two "
           "busy-looping processes (a third of a CPU), the other IEU alone on CPU 1. Medians of "
           "%d runs, 2 IEUs.\n\n",
           reps);
    printf("Model (eq. 6.4), n_p = 2: delta = (n_p - 1) / (n_i / c + n_p - 1), n_i the SIs per "
           "super-function. c = 0.5 on equal IEUs (an IEU waits half an SI on average); c = 1.5 "
           "at 3:1 (the slow IEU's last SI lasts three fast SIs; half of it is waited).\n");
    synthetic(reps);
    printf("\n### The MM program: `spm matmul` A x A, dense %ld x %ld, blocks %ld, --per-si 1 "
           "(%.0f groups of %ld multiply SIs)\n\n",
           n, n, block, groups, g);
    printf("n_i: the job is one super-function of %.0f multiply SIs under the asynchronous "
           "policies; under syn each superstep ends in a barrier (%.0f SIs each). Tail idle is "
           "what eq. 6.1 counts: the IEUs' time after their own last SI until the job's last "
           "SI ends, over 2 x the SIs' span (under syn only the last superstep's). Span idle is "
           "all the IEUs' time outside SIs within that span: here mostly waiting for the "
           "previous version of a C block to commit (write chains, write-through commits), "
           "not imbalance. w_idle is the report's (it also counts the job's start and "
           "end).\n\n",
           sis, groups);
    printf("| IEUs | policy | tail idle (median) | model delta | span idle | w_idle | wall (s) "
           "| least SIs on one IEU |\n|---|---|---|---|---|---|---|---|\n");
    for (int hetero = 0; hetero < 2; hetero++)
        for (int p = 0; p < 5; p++) {
            char b[16];
            snprintf(b, sizeof b, "%ld", block);
            const char *argv[] = {"matmul",  a, a,          "-o", "/dev/null", "--ieus",    "2",
                                  "--block", b, "--per-si", "1",  "--policy",  policies[p], NULL};
            double m[P_FIELDS];
            paper_median(argv, 2, hetero, reps, m);
            double ni = p == 0 ? groups : sis, c = hetero ? 1.5 : 0.5;
            printf("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.2f | %.0f%% |\n",
                   hetero ? "3:1" : "equal", policies[p], m[P_TAIL_IDLE], paper_eq64(2, ni, c),
                   m[P_SPAN_IDLE], m[P_W_IDLE], m[P_WALL], 100 * m[P_MIN_SHARE]);
        }
    printf("\nWall times are the job's alone (the report's wall_s, without reading the inputs). "
           "The last column is the share of the SIs (loads "
           "and multiplies) run by the IEU that ran fewest: the slowed one at 3:1, where "
           "pulling work should give it about a quarter. Failed jobs (run again, or given up after "
           "three): %d.\n",
           paper_failures);
    unlink(a);
    paper_cleanup();
    return 0;
}
