/*  =========================================================================
    bench_scale - the VM on a simulated cluster: does it scale with its
    nodes, and how many bytes go through the center's link?

    The cluster is made of Linux network namespaces, as in
    tests/integration/test_multihost.c: a bridge namespace and hosts
    10.78.0.1, .2, ... each joined to it by a veth pair, every host link
    shaped to BENCH_SCALE_MBIT in both directions (tbf on the host's eth0
    and on the bridge's end of its veth), so that the center's link is a
    real bottleneck as on a switched network. The center runs on host 1
    with CurveZMQ keys; each agent on a host of its own with 4 IEUs.

      nodes    a center host and N agent hosts, N in BENCH_SCALE_NODES.
               From the center's host, `spm run synthetic --sleep --work
               fixed:20ms --bytes 16384 --reads 2 --sfs 4 --sis 500*N`.
               Efficiency = ideal / wall, ideal = SIs x 20 ms / (4 N): the
               job's work spread perfectly over all IEU slots; the report's
               own E beside it. The bytes through the center host's link
               (rx + tx) during the job, against the job's output bytes
               (SIs x 16384); per SI, those bytes and the center's CPU
               (the report's center_cpu_s), and the busiest agent link's
               traffic: what docs/PERFORMANCE.md's model of how far past 8
               nodes one center goes is built from.
      matmul   a center host, 3 agent hosts and a client host. From the
               client, `spm matmul A.mtx A.mtx --block 256` of a sparse
               (5%) and a dense matrix. The bytes on the center's link
               against those on the client's (which carries the job's block
               bytes: staged inputs and fetched results): "center share of
               block bytes".

    A link's bytes are the rx and tx counters of the host's eth0, read
    before and after the command: whole frames, so TCP/IP headers,
    CurveZMQ's framing and the heartbeats count too.

    Each figure is the median of SPM_BENCH_REPS runs (default 3); every
    run of the matmul part and every N of the nodes part get a fresh
    center and agents.

    Run: make bench T=scale (as root; the bench skips itself, with one
    message and exit 0, where it cannot make network namespaces).

    Environment:
      SPM_BIN                  the spm binary (set by make bench)
      SPM_BENCH_QUICK=1        a smoke run: nodes 1,2, 200 SIs a node,
                               matmul 1024 x 1024, one repetition
      SPM_BENCH_REPS=3         repetitions (medians), at most 16
      BENCH_SCALE_MBIT=100     rate of every host link, each direction
      BENCH_SCALE_NODES=1,2,4,8  agent hosts of the nodes part (each 1..16)
      BENCH_SCALE_MM_N=2048    side of the matmul part's matrices
      BENCH_SCALE_SKIP=        "nodes" and/or "matmul" to skip a part
      BENCH_SCALE_CENTER=      more options for every center, split at blanks
                               (as "--no-journal", "--sync-ms 1000")
    =========================================================================
*/
#include "bench/bench.h"
#include "tests/spm_test.h"

#include "bench/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_NODES 16              /* agent hosts of the nodes part */
#define IEUS 4                    /* IEUs per agent */
#define SI_MS 20                  /* work of one synthetic SI */
#define SI_BYTES 16384            /* output of one synthetic SI */
#define MM_AGENTS 3               /* agent hosts of the matmul part */
#define MM_CLIENT (MM_AGENTS + 2) /* the client's host, after the center's and the agents' */
#define MIB (1024.0 * 1024.0)

static int reps;

/*  NAME's value, or DEF where it is unset or empty. */
static const char *env_str(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

static int skipped(const char *what)
{
    const char *v = getenv("BENCH_SCALE_SKIP");
    return v && strstr(v, what);
}

/*  A fresh center and NAGENTS agents of IEUS IEUs (bench/cluster.h), the
    center with BENCH_SCALE_CENTER's options. */
static void cluster_up(bc_cluster_t *c, int nagents, const char *name)
{
    static char extra[256];
    snprintf(extra, sizeof extra, "%s", env_str("BENCH_SCALE_CENTER", ""));
    const char *opts[24];
    int n = 0;
    for (char *save = NULL, *w = strtok_r(extra, " ", &save); w && n + 1 < 24;
         w = strtok_r(NULL, " ", &save))
        opts[n++] = w;
    opts[n] = NULL;
    bc_cluster_up(c, nagents, IEUS, name, opts, NULL);
}

/* ------------------------------------------------------------------ nodes */

typedef struct {
    int nodes;
    double wall, eff, e, center_mib, out_mib;
    double center_us;  /* the center's CPU per SI, us */
    double center_b;   /* bytes on the center's link per SI */
    double node_mib_s; /* the busiest agent link's traffic, MiB/s (both ways) */
} nodes_row_t;

/*  One row of the nodes part: N agent hosts, REPS jobs of SIS SIs. */
static nodes_row_t bench_nodes_one(int n, int sis)
{
    bc_cluster_t c;
    char name[32], ssis[16];
    snprintf(name, sizeof name, "n%d", n);
    snprintf(ssis, sizeof ssis, "%d", sis);
    cluster_up(&c, n, name);
    const char *job[] = {"run",   "synthetic", "--center", bc.center_ep, "--keys",
                         bc.keys, "--sleep",   "--work",   "fixed:20ms", "--bytes",
                         "16384", "--reads",   "2",        "--sfs",      "4",
                         "--sis", ssis,        "--json",   NULL};
    double wall[16], eff[16], e[16], mib[16], cpu[16], node[16];
    double ideal = sis * SI_MS / 1000.0 / (IEUS * n);
    for (int r = 0; r < reps; r++) {
        bc_path_t out = bc_file("job.json"), err = bc_file("job.err");
        unlink(err.s);
        double b0 = bc_link_bytes(1), a0[MAX_NODES];
        for (int i = 0; i < n; i++)
            a0[i] = bc_link_bytes(i + 2);
        int rc = bc_finish(bc_start(1, job, out.s, err.s), 600);
        double b1 = bc_link_bytes(1);
        node[r] = 0;
        for (int i = 0; i < n; i++) {
            double d = bc_link_bytes(i + 2) - a0[i];
            node[r] = d > node[r] ? d : node[r];
        }
        char *j = bc_slurp(out.s);
        if (rc != 0 || !strstr(j, "\"status\": \"done\"")) {
            char *m = bc_slurp(err.s);
            SPM_TEST_FAIL("bench_scale: the job on %d nodes failed (%d): %s%s\n", n, rc, m, j);
        }
        wall[r] = spm_test_json_num(j, "wall_s");
        e[r] = spm_test_json_num(j, "efficiency");
        eff[r] = ideal / wall[r];
        mib[r] = (b1 - b0) / MIB;
        cpu[r] = spm_test_json_num(j, "center_cpu_s") * 1e6 / sis;
        node[r] = node[r] / MIB / wall[r];
        free(j);
    }
    bc_cluster_down(&c);
    nodes_row_t row = {n,
                       bench_median(wall, reps),
                       bench_median(eff, reps),
                       bench_median(e, reps),
                       bench_median(mib, reps),
                       (double)sis * SI_BYTES / MIB,
                       bench_median(cpu, reps),
                       0,
                       bench_median(node, reps)};
    row.center_b = row.center_mib * MIB / sis;
    return row;
}

/*  Parses BENCH_SCALE_NODES into NODES; returns how many. */
static int node_counts(int *nodes, int max)
{
    const char *s = env_str("BENCH_SCALE_NODES", bench_quick() ? "1,2" : "1,2,4,8");
    int n = 0;
    for (const char *p = s; *p && n < max;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > MAX_NODES)
            SPM_TEST_FAIL("bench_scale: BENCH_SCALE_NODES=%s: want counts 1 to %d, as 1,2,4,8\n", s,
                          MAX_NODES);
        nodes[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void bench_nodes(const int *nodes, int nn, double mbit, nodes_row_t *rows)
{
    int per_node = bench_quick() ? 200 : 500;
    printf("\n## Efficiency against nodes: %d SIs a node of %d ms (sleep), %d bytes each, 2 "
           "reads, 4 SFs; %d IEUs a node; links %g Mbit/s each way\n\n",
           per_node, SI_MS, SI_BYTES, IEUS, mbit);
    printf("| nodes | IEUs | SIs | ideal s | wall s (median) | efficiency ideal/wall | report E | "
           "center link MiB | output MiB | center link / output | center link B/SI | center "
           "CPU us/SI | busiest node link MiB/s |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);
    for (int i = 0; i < nn; i++) {
        int sis = per_node * nodes[i];
        rows[i] = bench_nodes_one(nodes[i], sis);
        nodes_row_t *r = &rows[i];
        printf("| %d | %d | %d | %.2f | %.3f | %.3f | %.3f | %.1f | %.1f | %.2f | %.0f | %.1f | "
               "%.2f |\n",
               r->nodes, IEUS * r->nodes, sis, sis * SI_MS / 1000.0 / (IEUS * r->nodes), r->wall,
               r->eff, r->e, r->center_mib, r->out_mib, r->center_mib / r->out_mib, r->center_b,
               r->center_us, r->node_mib_s);
        fflush(stdout);
    }
}

/* ----------------------------------------------------------------- matmul */

typedef struct {
    double wall, total, center_mib, client_mib, share;
} mm_row_t;

/*  REPS runs of `spm matmul A A` from the client host, each on a fresh
    cluster of MM_AGENTS agents. */
static mm_row_t bench_mm_one(const char *a, const char *what)
{
    double wall[16], total[16], cmib[16], kmib[16], share[16];
    bc_path_t cp = bc_file("C.mtx");
    const char *c_path = cp.s;
    const char *args[] = {"matmul", a,       a,         "-o",  c_path,   "--center", bc.center_ep,
                          "--keys", bc.keys, "--block", "256", "--json", "--quiet",  NULL};
    for (int r = 0; r < reps; r++) {
        bc_cluster_t c;
        cluster_up(&c, MM_AGENTS, "mm");
        bc_path_t out = bc_file("mm.json"), err = bc_file("mm.err");
        unlink(err.s);
        unlink(c_path);
        double c0 = bc_link_bytes(1), k0 = bc_link_bytes(MM_CLIENT), t0 = bc_now();
        int rc = bc_finish(bc_start(MM_CLIENT, args, out.s, err.s), 900);
        total[r] = bc_now() - t0;
        double c1 = bc_link_bytes(1), k1 = bc_link_bytes(MM_CLIENT);
        struct stat st;
        char *j = bc_slurp(out.s);
        if (rc != 0 || stat(c_path, &st) != 0 || st.st_size == 0) {
            char *m = bc_slurp(err.s);
            SPM_TEST_FAIL("bench_scale: %s matmul failed (%d) or wrote no C.mtx: %s%s\n", what, rc,
                          m, j);
        }
        wall[r] = spm_test_json_num(j, "wall_s");
        cmib[r] = (c1 - c0) / MIB;
        kmib[r] = (k1 - k0) / MIB;
        share[r] = cmib[r] / kmib[r];
        free(j);
        unlink(c_path);
        bc_cluster_down(&c);
    }
    mm_row_t row = {bench_median(wall, reps), bench_median(total, reps), bench_median(cmib, reps),
                    bench_median(kmib, reps), bench_median(share, reps)};
    return row;
}

static void bench_matmul(long n, double mbit, mm_row_t *sparse, mm_row_t *dense)
{
    char side[32];
    snprintf(side, sizeof side, "%ld", n);
    /* generated here, before the hosts run anything: the namespaces share
       this file system */
    bc_path_t sp = bc_file("S.mtx"), dp = bc_file("D.mtx");
    const char *sa = sp.s, *da = dp.s;
    const char *gs[] = {"gen",    "matrix", "--rows", side, "--density", "0.05",
                        "--seed", "3",      "-o",     sa,   NULL};
    const char *gd[] = {"gen",    "matrix", "--rows", side, "--format", "array",
                        "--seed", "4",      "-o",     da,   NULL};
    bc_must_run(gs);
    bc_must_run(gd);
    printf("\n## matmul A x A from a client host: center host, %d agent hosts of %d IEUs, "
           "client host; blocks 256; links %g Mbit/s each way\n\n",
           MM_AGENTS, IEUS, mbit);
    printf("| A | job wall s (median) | command s | center link MiB | client link MiB | "
           "center share of block bytes |\n|---|---|---|---|---|---|\n");
    fflush(stdout);
    *sparse = bench_mm_one(sa, "sparse");
    printf("| sparse %ldx%ld at 5%% | %.3f | %.3f | %.1f | %.1f | %.2f |\n", n, n, sparse->wall,
           sparse->total, sparse->center_mib, sparse->client_mib, sparse->share);
    fflush(stdout);
    *dense = bench_mm_one(da, "dense");
    printf("| dense %ldx%ld | %.3f | %.3f | %.1f | %.1f | %.2f |\n", n, n, dense->wall,
           dense->total, dense->center_mib, dense->client_mib, dense->share);
    unlink(sa);
    unlink(da);
}

int main(void)
{
    reps = bench_reps() > 16 ? 16 : bench_reps();
    double mbit = atof(env_str("BENCH_SCALE_MBIT", "100"));
    long mm_n = atol(env_str("BENCH_SCALE_MM_N", bench_quick() ? "1024" : "2048"));
    if (mbit <= 0 || mm_n < 1)
        SPM_TEST_FAIL("bench_scale: BENCH_SCALE_MBIT and BENCH_SCALE_MM_N must be positive\n");
    int nodes[MAX_NODES], nn = node_counts(nodes, MAX_NODES), most = MM_CLIENT;
    for (int i = 0; i < nn; i++)
        if (nodes[i] + 1 > most)
            most = nodes[i] + 1;

    if (bc_open("spmscale", "10.78.0", most, mbit) != 0) {
        printf("scale: skipped: cannot create network namespaces here (needs root and "
               "iproute2)\n");
        return 0;
    }

    printf("# spm on a simulated cluster (%d repetitions; medians)\n", reps);
    nodes_row_t rows[MAX_NODES];
    mm_row_t sparse = {0}, dense = {0};
    int do_nodes = !skipped("nodes"), do_mm = !skipped("matmul");
    if (do_nodes)
        bench_nodes(nodes, nn, mbit, rows);
    if (do_mm)
        bench_matmul(mm_n, mbit, &sparse, &dense);

    printf("\n");
    if (do_nodes) {
        printf("scale: efficiency (ideal/wall)");
        for (int i = 0; i < nn; i++)
            printf("%s %.2f at %d node%s", i ? "," : "", rows[i].eff, rows[i].nodes,
                   rows[i].nodes > 1 ? "s" : "");
        const nodes_row_t *l = &rows[nn - 1];
        printf("; at %d node%s the center's link carried %.2fx the job's output (%.0f of %.0f "
               "MiB)\n",
               l->nodes, l->nodes > 1 ? "s" : "", l->center_mib / l->out_mib, l->center_mib,
               l->out_mib);
    }
    if (do_mm)
        printf("scale: matmul from a client host, center share of block bytes: sparse %.2f "
               "(job %.2f s), dense %.2f (job %.2f s)\n",
               sparse.share, sparse.wall, dense.share, dense.wall);
    return 0;
}
