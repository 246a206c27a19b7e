/*  Dissertation section 5.3.2, Figure 5.1: the relative management overhead
    of the matrix-multiplication super-program against the grain of its SIs.

    The dissertation bounded it from above by a simulation of the IDU (60-200
    ms) against the real program (150-300 s) on 256 x 256 sparse blocks at
    5%, SIs of a few ms: "less than 1% of the total execution time". We
    measure it directly on a simulated cluster (paper.h): w_man of the run
    report is the center's CPU time over the IEUs' busy time. Three parts:

      matmul     the real program, A x A with A sparse at 5%, blocks of
                 256, one product per SI, on 2 node hosts of one IEU each
                 (one core a node);
      model      the synthetic program given that job's measured shape: as
                 many SIs, each sleeping the real SIs' mean duration and
                 writing a block of the real operands' size, read by two
                 SIs of the next of 16 super-functions; on 2 nodes (beside
                 the real row: the check of the model) and on 8;
      grain      synthetic SIs on 8 nodes with fixed durations from 0.5 to
                 20 ms, no data, and the same work per node: the grain
                 alone.

    Medians of SPM_PAPER_REPS runs (default 3). */
#include "bench/bench.h"
#include "tests/spm_test.h"

#include "bench/paper/paper.h"

/*  The bytes of a 256 x 256 block at 5% as it travels (CSR: 12 bytes a
    nonzero, 4 a row). */
#define BLOCK_BYTES (0.05 * 256 * 256 * 12 + 4 * 257)

/*  Runs the synthetic model on NODES nodes: SIS SIs of WORK in 16
    super-functions, with DATA blocks of BLOCK_BYTES each read twice;
    prints its row and returns its w_man, its center CPU per SI (us) in
    *CENTER_US. */
static double model_row(const char *what, int nodes, long sis, const char *work, int data, int reps,
                        double *center_us)
{
    char s[32], b[32], name[16];
    snprintf(s, sizeof s, "%ld", sis);
    snprintf(b, sizeof b, "%.0f", data ? BLOCK_BYTES : 0);
    snprintf(name, sizeof name, "mod%d", nodes);
    const char *argv[] = {"run",     "synthetic", "--sleep", "--sis", s,       "--work", work,
                          "--bytes", b,           "--reads", "2",     "--sfs", "16",     NULL};
    bc_cluster_t c;
    paper_cluster_up(&c, nodes, 1, name, NULL);
    double m[P_FIELDS];
    paper_cmedian(argv, &c, 0, reps, m);
    bc_cluster_down(&c);
    printf("| %s | %d | %ld | %.2f | %.3f | %.0f | %.3f | %.1f | %.4f (%.2f%%) |\n", what, nodes,
           (long)m[P_COMMITTED], 1e3 * m[P_BUSY] / m[P_COMMITTED], m[P_CENTER_CPU],
           1e6 * m[P_CENTER_CPU] / m[P_COMMITTED], m[P_BUSY], m[P_WALL], m[P_W_MAN],
           100 * m[P_W_MAN]);
    *center_us = 1e6 * m[P_CENTER_CPU] / m[P_COMMITTED];
    fflush(stdout);
    return m[P_W_MAN];
}

int main(void)
{
    int reps = paper_reps(3);
    long n = paper_quick() ? 2048 : 4096;
    printf("\n## Management overhead against grain (section 5.3.2, Figure 5.1)\n\n");
    printf("Dissertation: an upper bound from simulating the IDU, 60-200 ms of simulation "
           "against 150-300 s of the real MM program; \"the relative management overhead is "
           "less than 1%% of the total execution time\", falling as SIs grow (eq. 5.8-5.10). "
           "Figure 5.1 is not in the text extraction.\n\n");
    if (paper_cluster_open() != 0)
        return 0;
    printf("Ours: w_man = the center's CPU time / the IEUs' busy time, from the run report, on a "
           "simulated cluster: a center host (the client there too) and node hosts of one IEU "
           "each, links of %d Mbit/s. The real row is `spm matmul` A x A, A %ld x %ld sparse at "
           "5%%, blocks of 256 (the dissertation's), one product per SI, on 2 nodes. *Modelled* "
           "rows run `spm run synthetic --sleep` with that job's SI count and mean SI duration, "
           "blocks of a 256 x 256 block's %.0f bytes, each read by two SIs of the next of 16 "
           "super-functions: on 2 nodes beside the real row (the check), and on 8, which would "
           "need 8 cores to run for real. Medians of %d runs.\n\n",
           PAPER_MBIT, n, n, BLOCK_BYTES, reps);
    printf("| rows | nodes | SIs | mean SI (ms) | center CPU (s) | center CPU per SI (us) | IEU "
           "busy (s) "
           "| wall (s) | w_man (median) |\n|---|---|---|---|---|---|---|---|---|\n");
    const char *a = paper_file("A.mtx");
    paper_gen_sparse(a, n, n, 0.05, 1);
    const char *argv[] = {"matmul", a,          a,   "-o",       "/dev/null", "--block",
                          "256",    "--per-si", "1", "--policy", "ss",        NULL};
    bc_cluster_t c;
    paper_cluster_up(&c, 2, 1, "mm", NULL);
    double m[P_FIELDS];
    paper_cmedian(argv, &c, 0, reps, m);
    bc_cluster_down(&c);
    unlink(a);
    printf("| real (matmul) | 2 | %.0f | %.2f | %.3f | %.0f | %.3f | %.1f | %.4f (%.2f%%) |\n",
           m[P_COMMITTED], 1e3 * m[P_BUSY] / m[P_COMMITTED], m[P_CENTER_CPU],
           1e6 * m[P_CENTER_CPU] / m[P_COMMITTED], m[P_BUSY], m[P_WALL], m[P_W_MAN],
           100 * m[P_W_MAN]);
    fflush(stdout);
    char work[32];
    snprintf(work, sizeof work, "fixed:%.0fus", 1e6 * m[P_BUSY] / m[P_COMMITTED]);
    long sis = (long)m[P_COMMITTED];
    double real = m[P_W_MAN], si_ms = 1e3 * m[P_BUSY] / m[P_COMMITTED];
    double real_us = 1e6 * m[P_CENTER_CPU] / m[P_COMMITTED], two_us, eight_us, us;
    double two = model_row("modelled (matmul's SIs)", 2, sis, work, 1, reps, &two_us);
    double eight =
        model_row("modelled (matmul's SIs)", PAPER_MAX_NODES, sis, work, 1, reps, &eight_us);

    /* the grain alone: about 2 s of work a node */
    static const char *grains[] = {"500us", "1ms", "5ms", "20ms"};
    static const double ms[] = {0.5, 1, 5, 20};
    double grain[4];
    for (int k = 0; k < 4; k++) {
        char w[32];
        snprintf(w, sizeof w, "fixed:%s", grains[k]);
        grain[k] = model_row("modelled (grain)", PAPER_MAX_NODES,
                             (long)((paper_quick() ? 500 : 2000) * PAPER_MAX_NODES / ms[k]), w, 0,
                             reps, &us);
    }
    printf("\n**Beside the dissertation.** The center spends %.0f us of CPU per SI of the "
           "real job and %.0f us per SI of its model on 2 nodes (the check; %.0f us on 8 "
           "nodes). w_man is %.2f%% for the real job, whose SIs take %.2f ms, and %.2f%% and "
           "%.2f%% for the model on 2 and 8 nodes, whose sleeping SIs overrun their %.2f ms on "
           "this loaded machine (the mean SI column), which lowers the ratio. With SIs of 5 and "
           "20 ms, the dissertation's \"few ms\", w_man is %.2f%% and %.2f%% on 8 nodes "
           "against its \"less than 1%%\": %s. Our products of 256 x 256 blocks at 5%% take "
           "a tenth of the dissertation's time, so the real job's ratio is that of the "
           "0.5 ms row, and its center also stores the staged inputs and commits every "
           "version of C durably, which the dissertation's IDU did not.\n",
           real_us, two_us, eight_us, 100 * real, si_ms, 100 * two, 100 * eight, si_ms,
           100 * grain[2], 100 * grain[3],
           grain[3] < 0.01 && grain[2] < 0.01 ? "ours agrees"
           : grain[3] < 0.01                  ? "ours agrees from 20 ms, and is above it at 5 ms"
                                              : "ours is above it at these grains");
    printf("\nFailed jobs (run again, or given up after three): %d.\n", paper_failures);
    paper_cleanup();
    return 0;
}
