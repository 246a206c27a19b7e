/*  Dissertation section 8.3, Figures 8.2-8.6: how the method that updates
    the result's blocks (write, update, distributed update, mixture) and the
    limit of SIs per node change the parallelism and the speed of the
    matrix-multiplication super-program.

    The dissertation's case 256r1 multiplies a wide matrix by a tall one
    (2048 x 32768 by 32768 x 2048, 12.5% dense, 256-blocks): few result
    blocks (inter-block parallelism 16 in its Table 8.3) and long chains
    of products per block (intra-block parallelism 64), on 1-8 nodes with 1
    to 8 SIs per node. We scale it to the same shape on this machine:
    A (M x K) times B (K x M), dense, blocks of 256, one product per SI,
    so C has (M/256)^2 blocks each summing K/256 products. On 2 IEUs:

      - every update method under the random policy (r: the dissertation's
        S, R, D, M) and write and mixture under ss (its G and N);
      - write and distributed under r with 1, 2, 4 and 6 SIs per IEU
        (--slots N --prefetch N; the dissertation's "threads limit").

    Measured: the job's wall time relative to write (Figure 8.2), the mean
    number of SIs executing at once from the trace (SI time / span; the
    dissertation's "average number of threads", Figures 8.3 and 8.6), the
    level-1 cache-miss share (store reads / all operand reads; Figure 8.4)
    and the VM's merges of partial results. Medians of SPM_PAPER_REPS runs
    (default 5). */
#include "bench/bench.h"
#include "tests/spm_test.h"

#include "bench/paper/paper.h"

static const char *a_path, *b_path;

/*  Runs A x B with POLICY, UPDATE and SLOTS; medians into M. */
static void run(const char *policy, const char *update, const char *slots, int reps, double *m)
{
    const char *argv[] = {"matmul",  a_path,     b_path,       "-o",       "/dev/null",
                          "--ieus",  "2",        "--block",    "256",      "--per-si",
                          "1",       "--policy", policy,       "--update", update,
                          "--slots", slots,      "--prefetch", slots,      NULL};
    paper_median(argv, 2, 0, reps, m);
}

static void row(const char *label, const char *slots, const double *m, double base)
{
    double reads = m[P_L1_HITS] + m[P_STORE_READS];
    printf("| %s | %s | %.2f | %.2fx | %.2f | %.1f%% | %.0f |\n", label, slots, m[P_WALL],
           base / m[P_WALL], m[P_PARALLELISM], reads > 0 ? 100 * m[P_STORE_READS] / reads : 0,
           m[P_MERGES]);
}

int main(void)
{
    int reps = paper_reps(5);
    long mdim = 512, kdim = paper_quick() ? 1024 : 4096;
    a_path = paper_file("A.mtx");
    b_path = paper_file("B.mtx");
    paper_gen_dense(a_path, mdim, kdim, 4);
    paper_gen_dense(b_path, kdim, mdim, 5);
    long groups = (mdim / 256) * (mdim / 256), chain = kdim / 256;
    printf("\n## Update methods and SIs per node (section 8.3, Figures 8.2-8.6)\n\n");
    printf("Dissertation: case 256r1, 2048 x 32768 by 32768 x 2048 at 12.5%%, 256-blocks "
           "(inter-block parallelism 16, intra-block 64 in Table 8.3), 1-8 dual-CPU nodes, at "
           "most 6 SIs per node (1-8 for 256r1). Figures 8.2-8.6 are not in the text "
           "extraction; the text says: \"RemoteUpdate\" and \"DistributedUpdate\" \"can exploit "
           "both types of parallelism\" while \"SimpleUpdate\" (write) only the inter-block one; "
           "the actual parallelism is \"significantly lower\" than the 6 allowed (under 3 for "
           "128s and 128r); \"the execution time ... decreases significantly only when the "
           "maximum number of threads increases from 1 to 4\"; mixture gets \"the benefit of "
           "the latter with a reduced overhead\".\n\n");
    printf("Ours: `spm matmul` A (%ld x %ld) x B (%ld x %ld), dense, blocks of 256, one product "
           "per SI: %ld result blocks (inter-block parallelism), %ld products each "
           "(intra-block), 2 IEUs, medians of %d runs. Speed is relative to write under the "
           "same policy; parallelism is the trace's SI time / span (mean SIs executing at "
           "once); miss share is store reads / (level-1 hits + store reads).\n\n",
           mdim, kdim, kdim, mdim, groups, chain, reps);
    printf("### Update methods (Figures 8.2-8.4), 1 SI per IEU\n\n");
    printf("| policy, update | slots | job wall (s) | speed vs write | parallelism | miss share "
           "| merges |\n|---|---|---|---|---|---|---|\n");
    /* The dissertation's S, R, D, M (policy r) and G, N (ss); a policy's
       first row is its write, the base of its speeds. */
    static const char *cases[][2] = {{"r", "write"},   {"r", "update"}, {"r", "distributed"},
                                     {"r", "mixture"}, {"ss", "write"}, {"ss", "mixture"}};
    static const char *updates[] = {"write", "update", "distributed", "mixture"};
    double m[P_FIELDS], base = 0;
    for (int c = 0; c < 6; c++) {
        char label[64];
        snprintf(label, sizeof label, "%s, %s", cases[c][0], cases[c][1]);
        run(cases[c][0], cases[c][1], "1", reps, m);
        if (strcmp(cases[c][1], "write") == 0)
            base = m[P_WALL];
        row(label, "1", m, base);
    }
    printf("\n### SIs per IEU (Figures 8.5-8.6), policy r\n\n");
    printf("| update | slots = prefetch | job wall (s) | speed vs 1 slot | parallelism | miss "
           "share | merges |\n|---|---|---|---|---|---|---|\n");
    static const char *slots[] = {"1", "2", "4", "6"};
    for (int u = 0; u < 3; u += 2)
        for (int s = 0; s < 4; s++) {
            run("r", updates[u], slots[s], reps, m);
            if (s == 0)
                base = m[P_WALL];
            row(updates[u], slots[s], m, base);
        }
    printf("\nOn this machine 2 IEUs share 2 cores: more slots can hide waiting for operands, "
           "not add CPU. Failed jobs (run again, or given up after three): %d.\n",
           paper_failures);
    unlink(a_path);
    unlink(b_path);
    paper_cleanup();
    return 0;
}
