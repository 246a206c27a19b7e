/*  Dissertation section 7.4, Figures 7.3-7.4: the communication overhead of
    the matrix-multiplication super-program under the scheduling policies,
    and its fall as the nodes' caches grow.

    The dissertation simulated 4-64 nodes with unicast and multicast and a
    cache of 1 to 32 rows of A / columns of B (32: everything a node needs).
    We run the real program on an embedded VM: one node whose cache (the
    node cache, `--cache-mb`) is shared by its 2 IEUs, which read through
    it as on a node of their own (`--no-store-reads`; on the center's host
    they would read its store in place). An operand that is not in it
    comes from the center's store; with one node there is no
    peer to fetch from (level 2), so every miss is a store read. Measured
    from the run report: bytes read from the store per multiply SI,
    store reads per multiply SI, the level-1 hit share, evictions and
    w_comm (slot time waiting for operands / busy time).

    Medians of SPM_PAPER_REPS runs (default 3). */
#include "bench/bench.h"
#include "tests/spm_test.h"

#include "bench/paper/paper.h"

int main(void)
{
    int reps = paper_reps(3);
    long n = paper_quick() ? 512 : 768, block = 128, g = n / block;
    static const char *policies[] = {"syn", "s", "r", "sr", "ss"};
    static const char *caches[] = {"2", "4", "0"};
    const char *a = paper_file("A.mtx");
    paper_gen_dense(a, n, n, 3);
    double mult = (double)(g * g * g), blocks = 2.0 * (double)(g * g);
    double block_mib = (double)(block * block) * 8 / (1 << 20);
    printf("\n## Communication overhead against policy and cache size (section 7.4, Figures "
           "7.3-7.4)\n\n");
    printf("Dissertation: simulation, 4-64 nodes, unicast and multicast, cache of 1-32 rows "
           "of A / columns of B. Figures 7.3-7.4 are not in the text extraction; the text says: "
           "\"the communication overhead decreases when increasing the cache size\", \"SS "
           "using unicast communication has the lowest communication overhead\", \"the "
           "communication overhead for the SS strategy drops faster when increasing the cache "
           "size\", and \"the significant difference in communication overheads between SS "
           "and R indicates that for dynamic scheduling strategies appropriate optimization "
           "is necessary\".\n\n");
    printf("Ours: `spm matmul` A x A, dense %ld x %ld, blocks %ld (%.2f MiB each; A and B "
           "are %.0f blocks, %.1f MiB), one product per SI (%.0f multiply SIs), 2 IEUs on one "
           "node sharing its cache; `--cache-mb` 2, 4 and 0 (no limit); at 1 MiB (8 blocks, less "
           "than a row of A and a column of B) the job fails: its operands keep leaving the "
           "cache. Every miss is a read from the center's store (one node: "
           "no peer to fetch from). Medians of %d runs.\n\n",
           n, n, block, block_mib, blocks, blocks * block_mib, mult, reps);
    printf("| cache MiB | policy | store MiB per multiply SI | store reads per multiply SI | "
           "level-1 hit share | evictions | w_comm | wall (s) |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (int c = 0; c < 3; c++)
        for (int p = 0; p < 5; p++) {
            char b[16];
            snprintf(b, sizeof b, "%ld", block);
            const char *argv[] = {"matmul",    a,
                                  a,           "-o",
                                  "/dev/null", "--ieus",
                                  "2",         "--block",
                                  b,           "--per-si",
                                  "1",         "--policy",
                                  policies[p], "--cache-mb",
                                  caches[c],   "--no-store-reads",
                                  NULL};
            double m[P_FIELDS];
            if (!paper_median(argv, 2, 0, reps, m)) {
                printf("| %s | %s | failed | | | | | |\n", c == 2 ? "no limit" : caches[c],
                       policies[p]);
                continue;
            }
            double reads = m[P_L1_HITS] + m[P_STORE_READS];
            printf("| %s | %s | %.3f | %.2f | %.1f%% | %.0f | %.3f | %.2f |\n",
                   c == 2 ? "no limit" : caches[c], policies[p],
                   m[P_BYTES_STORE] / (1 << 20) / mult, m[P_STORE_READS] / mult,
                   reads > 0 ? 100 * m[P_L1_HITS] / reads : 0, m[P_EVICTIONS], m[P_W_COMM],
                   m[P_WALL]);
        }
    printf("\nThe store bytes include the loads that put A and B into the store (the same for "
           "every policy). Failed jobs (run again, or given up after three): %d.\n",
           paper_failures);
    unlink(a);
    paper_cleanup();
    return 0;
}
