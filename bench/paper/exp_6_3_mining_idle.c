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

/*  Writes Quest T25.I10 of TRANSACTIONS transactions (N = 1,000 items,
    |L| = 10,000 patterns, seed 1) to the scratch db.dat; returns its path. */
static const char *make_db(long transactions)
{
    const char *db = paper_file("db.dat");
    char t[32];
    snprintf(t, sizeof t, "%ld", transactions);
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
    return db;
}

/*  Figures 6.2-6.3's axis: D100K on 1, 2 and 4 node hosts of one IEU each
    (4 IEUs share this machine's 2 cores, so the last row's SI time is
    stretched; its bytes are not). */
static void against_nodes(int reps)
{
    const char *db = make_db(100000);
    const char *argv[] = {"mine", db, "--min-support", "0.6%", "-o", "/dev/null", NULL};
    static const int widths[] = {1, 2, 4};
    double idle[3], nn[3], wall[3];
    printf("\n**Against nodes** (Figures 6.2-6.3's axis; T25.I10.D100K, medians of %d runs):\n\n"
           "| nodes | job wall (s) | idle, whole job | idle, computing stage | IEUs' wait for "
           "operands (s) | node to node (MiB) |\n|---|---|---|---|---|---|\n",
           reps);
    for (int w = 0; w < 3; w++) {
        bc_cluster_t c;
        double m[P_FIELDS];
        paper_cluster_up(&c, widths[w], 1, "minew", NULL);
        paper_cmedian(argv, &c, 0, reps, m);
        bc_cluster_down(&c);
        idle[w] = m[P_IDLE_SHARE];
        wall[w] = m[P_WALL];
        nn[w] = m[P_NODE_NODE] / (1 << 20);
        printf("| %d | %.2f | %.1f%% | %.1f%% | %.2f | %.1f |\n", widths[w], m[P_WALL],
               100 * idle[w], 100 * m[P_SPAN_IDLE], m[P_WAIT], nn[w]);
        fflush(stdout);
    }
    unlink(db);
    printf("\nIdle is %.1f%% of the job on 1 node, %.1f%% on 2 and %.1f%% on 4, and the job "
           "takes %.2f, %.2f and %.2f s: on one node nothing crosses a link, on 2 and 4 nodes "
           "%.0f and %.0f MiB cross between them, because every class SI reads every shrunk "
           "block and each node fetches the share the others hold, and the IEUs wait for it "
           "(the wait column; waiting is not counted as idle).%s The dissertation's \"not more "
           "than 8%% if the problem size is large enough\" needs mining that outweighs that "
           "fetch, as said above.\n",
           100 * idle[0], 100 * idle[1], 100 * idle[2], wall[0], wall[1], wall[2], nn[1], nn[2],
           wall[2] > wall[1] && wall[1] > wall[0] ? " More nodes make this job slower, not faster."
                                                  : "");
}

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
    printf("| database | SIs | job wall (s) | idle, whole job | dissertation (2 nodes) | idle, "
           "computing stage | dissertation (2 nodes) | IEUs' SI time (s) | IEUs' wait for operands "
           "(s) "
           "| center host's link (MiB) | node to node (MiB) | level-2 reads (MiB) |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|\n");
    double last_idle = -1, last_wall = -1, last_busy = -1, last_wait = -1, last_nn = -1,
           last_l2 = -1, last_host1 = -1, last_same = -1, last_stage = -1, last_tail = -1,
           last_span = -1;
    for (int d = 0; d < ndb; d++) {
        const char *db = make_db(dbs[d].transactions);
        const char *argv[] = {"mine", db, "--min-support", "0.6%", "-o", "/dev/null", NULL};
        double m[P_FIELDS];
        paper_cmedian(argv, &c, 0, dbs[d].transactions >= 500000 ? 1 : reps, m);
        printf("| %s | %.0f | %.2f | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.2f | %.2f | %.1f | %.1f "
               "| %.1f |\n",
               dbs[d].name, m[P_COMMITTED], m[P_WALL], 100 * m[P_IDLE_SHARE],
               100 * dbs[d].idle / dbs[d].total, 100 * m[P_SPAN_IDLE],
               100 * dbs[d].idle_comp / dbs[d].comp, m[P_BUSY], m[P_WAIT], m[P_HOST1] / (1 << 20),
               m[P_NODE_NODE] / (1 << 20), m[P_BYTES_L2] / (1 << 20));
        fflush(stdout);
        last_idle = m[P_IDLE_SHARE];
        last_wall = m[P_WALL];
        last_busy = m[P_BUSY];
        last_wait = m[P_WAIT];
        last_nn = m[P_NODE_NODE] / (1 << 20);
        last_l2 = m[P_BYTES_L2] / (1 << 20);
        last_host1 = m[P_HOST1] / (1 << 20);
        last_same = m[P_GAP_SAME];
        last_stage = m[P_GAP_STAGE];
        last_tail = m[P_TAIL_IDLE];
        last_span = m[P_SPAN_IDLE];
        unlink(db);
    }
    bc_cluster_down(&c);
    /* what one node receives, the node-to-node bytes and the staged
       database shared among the nodes, at the link's rate */
    double link_s = (last_nn + last_host1) / nodes * 1048576 * 8 / (PAPER_MBIT * 1e6);
    printf("\n**Beside the dissertation.** On the largest database our IEUs are idle %.0f%% of "
           "the job against the dissertation's %.1f%% (and %.1f%% in its computing stage). The "
           "job is bound by blocks crossing the nodes' links, not by mining: the IEUs ran SIs "
           "for %.1f s in all and waited %.1f s for operands, in a job of %.1f s. The client "
           "stages the database onto the nodes (%.0f MiB on the center host's link), and every "
           "MineClassBlock SI reads every shrunk transaction block, so each node fetches what the "
           "other holds (%.0f MiB of level-2 reads); %.0f MiB crossed from node to node in all, "
           "and a node received about %.1f s of its %d Mbit/s link's worth. %s The "
           "dissertation's 1.2 "
           "GHz nodes mined for "
           "minutes what crossed its Ethernet in seconds, and its computing stage began after "
           "every node had read the database from NFS. Ours would show its figure only with "
           "mining that outweighs the transfer: databases twenty times larger (hours on this "
           "machine), or a database staged on every node before the job, which `spm mine` does "
           "not do.\n",
           100 * last_idle, 100 * dbs[ndb - 1].idle / dbs[ndb - 1].total,
           100 * dbs[ndb - 1].idle_comp / dbs[ndb - 1].comp, last_busy, last_wait, last_wall,
           last_host1, last_l2, last_nn, link_s, PAPER_MBIT,
           last_nn > 1.5 * last_l2
               ? "Level-2 reads are not most of those bytes, and the report's counters do not "
                 "say what the rest is (no output was kept on a peer, no SI speculated; a few "
                 "were re-issued): finding it is the next step, since it, not mining, sets "
                 "this job's length."
               : "Level-2 reads are most of those bytes.");
    /* where the idle is, from the trace of the largest database */
    printf("\n**Where the idle goes** (the trace of the largest database; shares of the IEUs' "
           "time from the first SI to the last, as the computing stage's column). Between two "
           "SIs of one kind an IEU was idle %.1f%% of it: asking for the next of SIs of 1-3 ms "
           "(the loads and the shrinks), a fixed cost a job of minutes would not see. At the "
           "changes of kind, %.1f%%: the ends of stages (the counting barrier, the class SIs "
           "starting once the last shrink is in, the last class SIs running while the other IEU "
           "has none). After an IEU's own last SI, %.1f%%. The rest of the %.1f%% that is not "
           "SI time is waiting for operands: the class SIs' fetches of the other node's shrunk "
           "blocks, which end at different times on the two nodes when they hold unequal shares. "
           "Until 2026-12-06 the counting SIs each read consecutive raw blocks of both nodes "
           "(19 MB of raw blocks crossed the links to be counted, and the IEU that fetched less "
           "waited at the barrier after them), the shrinks took each other's raw blocks in turns "
           "(the pool compared only the first 8 ready SIs), and an IEU still fetching held three "
           "class SIs while the other had run out: 9.8%% idle, 86 MiB node to node and a job of "
           "4.60 s on D500K. Now each node counts its own blocks (an IEU may still take its peer's "
           "last counting SI), an IEU takes a ready SI whose blocks it holds when one is among "
           "the first 256, and an IEU still fetching gets one class SI at a time. That cut the "
           "bytes and the job, not the idle: in 6 pairs of runs alternating with the code "
           "before (2026-12-06, load average 3-12), D500K's median job went from 5.9 to 4.1 s "
           "and node to node from 82 to 58 MiB, while the IEUs' idle stayed at 1.7-1.8 s "
           "(14.6%% and 17.7%% of the job): what counting fetched was waiting for operands, "
           "not idle, and the idle left is the ends of stages. Runs vary on this machine, "
           "whose 2 cores are shared with other work: an IEU starved of CPU has its loads and "
           "shrinks taken by its peer, whose node then holds more of the shrunk blocks, so "
           "that the IEU fetches longer at the end while the other has nothing left to mine; "
           "and a stage's last SIs taken across a link (a raw block of 0.5 MB is 43 ms on it, "
           "its shrink 1-3 ms) keep the other IEU waiting at the barrier.\n",
           100 * last_same, 100 * last_stage, 100 * last_tail, 100 * last_span);
    against_nodes(reps);
    printf("\nFailed jobs (run again, or given up after three): %d.\n", paper_failures);
    paper_cleanup();
    return 0;
}
