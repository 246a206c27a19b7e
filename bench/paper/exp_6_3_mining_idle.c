/*  Dissertation section 6.3.2, Table 6.3 and Figures 6.2-6.3: the idle time
    of the IEUs while the association-rule super-program mines the Quest
    databases T25.I10.D3K, D10K, D30K, D100K and D500K at 0.6% support.

    The dissertation ran 1-6 dual-processor nodes (1.2 GHz Athlon, 100 Mbps
    Ethernet, NFS) and reported per database the average idle time, the
    idle time in the computing stage (without the sequential data load),
    the total and the computing time. "The percentage of idle time is not
    more than 8% if the problem size is large enough." We quote its 2-node
    column beside our 2 nodes: a simulated cluster (paper.h) of a center
    host (the client runs there too, and stages the database onto the
    nodes over their 100 Mbit/s links) and 2 node hosts of one IEU each,
    one core each on this 2-core machine, so the work is real, not
    modelled:

      whole job        the IEUs' idle_s over their busy+wait+idle (report);
                       the dissertation's average idle / total time;
      computing stage  1 - SI time / (2 x span of the SIs) from the trace,
                       i.e. from the first SI to the last: reading and
                       staging the file before it are left out, as the
                       dissertation's "idle time in computing" leaves out
                       its sequential load; its idle in computing /
                       computing time.

    Databases: `spm gen transactions --avg-size 25 --avg-pattern 10 --items
    1000 --patterns 10000` (the dissertation's N and |L|), seed 1. Medians
    of SPM_PAPER_REPS runs (default 3; D500K once, it is the longest).
    SPM_PAPER_QUICK=1 mines only D3K and D10K once. */
#include "bench/bench.h"
#include "tests/spm_test.h"

#include "bench/paper/paper.h"

/*  Table 6.3, 2-node column (ms): average idle, idle in computing, total,
    computing. */
static const struct {
    const char *name;
    long transactions;
    double idle, idle_comp, total, comp;
} dbs[] = {
    {"T25.I10.D3K", 3000, 3556, 1266.3, 63209, 59901},
    {"T25.I10.D10K", 10000, 5478, 2716, 103904, 96999},
    {"T25.I10.D30K", 30000, 9340, 2617, 231358, 214551},
    {"T25.I10.D100K", 100000, 19484, 2696, 701748, 656980},
    {"T25.I10.D500K", 500000, 85293, 53622, 4825186, 4571818},
};

int main(void)
{
    int reps = paper_reps(3), ndb = paper_quick() ? 2 : 5, nodes = 2;
    printf("\n## Idle time of the mining program (section 6.3.2, Table 6.3, Figures 6.2-6.3)\n\n");
    printf("Dissertation: 1-6 dual-Athlon nodes, 100 Mbps Ethernet, NFS, 0.6%% support, SDBs of "
           "1,000 records. \"The percentage of idle time is not more than 8%% if the problem "
           "size is large enough.\" Figures 6.2-6.3 (idle share against nodes) are not in the "
           "text extraction; the dissertation's figures below are computed from Table 6.3's "
           "2-node column (average idle / total time, idle in computing / computing time).\n\n");
    if (paper_cluster_open() != 0)
        return 0;
    bc_cluster_t c;
    paper_cluster_up(&c, nodes, 1, "mine", NULL);
    printf(
        "Ours: `spm mine DB --min-support 0.6%%` (default blocks of 1,000 transactions) on "
        "a simulated cluster: a center host, where the client runs and stages the database "
        "onto the nodes, and %d node hosts of one IEU each, links of %d Mbit/s; real work "
        "(one core a node). Medians of %d runs (D500K: 1). Whole job: the IEUs' idle_s / (busy_s + "
        "wait_s + idle_s) from the report. Computing stage: 1 - SI time / (2 x the SIs' "
        "span) from the trace (reading and staging the file before the first SI excluded). "
        "The databases are Quest T25.I10 with N = 1,000 items and |L| = 10,000 patterns "
        "(`spm gen transactions`, seed 1); the issue named D50K, the dissertation's table "
        "has D30K, which we use.\n\n",
        nodes, PAPER_MBIT, reps);
    printf(
        "| database | SIs | job wall (s) | idle, whole job | dissertation (2 nodes) | idle, "
        "computing stage | dissertation (2 nodes) | IEUs' SI time (s) | center host's link (MiB) | "
        "that link alone at 100 Mbit/s (s) |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n");
    double last_idle = -1, last_link = -1, last_wall = -1, last_busy = -1;
    for (int d = 0; d < ndb; d++) {
        const char *db = paper_file("db.dat");
        char t[32];
        snprintf(t, sizeof t, "%ld", dbs[d].transactions);
        const char *gen[] = {"gen",
                             "transactions",
                             "--transactions",
                             t,
                             "--avg-size",
                             "25",
                             "--avg-pattern",
                             "10",
                             "--items",
                             "1000",
                             "--patterns",
                             "10000",
                             "--seed",
                             "1",
                             "-o",
                             db,
                             NULL};
        paper_must(gen);
        const char *argv[] = {"mine", db, "--min-support", "0.6%", "-o", "/dev/null", NULL};
        double m[P_FIELDS];
        paper_cmedian(argv, &c, 0, dbs[d].transactions >= 500000 ? 1 : reps, m);
        double link_s = m[P_HOST1] * 8 / (PAPER_MBIT * 1e6);
        printf("| %s | %.0f | %.2f | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.2f | %.1f | %.1f |\n",
               dbs[d].name, m[P_COMMITTED], m[P_WALL], 100 * m[P_IDLE_SHARE],
               100 * dbs[d].idle / dbs[d].total, 100 * m[P_SPAN_IDLE],
               100 * dbs[d].idle_comp / dbs[d].comp, m[P_BUSY], m[P_HOST1] / (1 << 20), link_s);
        fflush(stdout);
        last_idle = m[P_IDLE_SHARE];
        last_link = link_s;
        last_wall = m[P_WALL];
        last_busy = m[P_BUSY];
        unlink(db);
    }
    bc_cluster_down(&c);
    printf("\n**Beside the dissertation.** On the largest database our IEUs are idle %.0f%% of "
           "the job against the dissertation's %.1f%% (and %.1f%% in its computing stage). The "
           "job is bound by its link, not by mining: the database crosses the center host's "
           "link while the IEUs mine (%.1f s of that link alone at %d Mbit/s in a job of %.1f "
           "s), and the IEUs' SIs take %.1f s in all, where the dissertation's 1.2 GHz nodes "
           "mined for minutes what crossed its Ethernet in seconds; so our \"computing stage\" "
           "(first SI to last) still holds the wait for the staged blocks. To show the "
           "dissertation's figure the mining would have to outweigh the transfer: databases "
           "twenty times larger (hours on this machine), or the transfer ended before the "
           "first SI and counted apart, as the dissertation counted its sequential load from "
           "NFS apart.\n",
           100 * last_idle, 100 * dbs[ndb - 1].idle / dbs[ndb - 1].total,
           100 * dbs[ndb - 1].idle_comp / dbs[ndb - 1].comp, last_link, PAPER_MBIT, last_wall,
           last_busy);
    printf("\nFailed jobs (run again, or given up after three): %d.\n", paper_failures);
    paper_cleanup();
    return 0;
}
