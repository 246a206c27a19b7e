/*  What the experiments of bench/paper share: quick mode and repetitions,
    the simulated cluster they run on (bench/cluster.h: a center host and
    up to 8 node hosts in network namespaces, 100 Mbit/s links), running
    one spm job there and reading its JSON report, its trace and the bytes
    on the links, medians over repetitions, generating inputs, and the
    honest emulation of a 3:1 heterogeneous pair of nodes.

    Heterogeneity: this machine has two cores. During a job node 0's IEUs
    are pinned to CPU 0 together with two busy-looping processes (so they
    get about a third of that CPU), every other node's IEUs are pinned to
    CPU 1: a 3:1 ratio of available speed, as in bench/bench_matmul.c. The
    center and the agents are not pinned. It means something with one
    IEU on each of two nodes only, and never for sleeping SIs.

    Environment: SPM_BIN (the binary, set by make), SPM_PAPER_QUICK=1 (a
    smoke run: less work, one repetition), SPM_PAPER_REPS (repetitions),
    SPM_PAPER_DEBUG=1 (print each report and each link's bytes on
    stderr), SPM_PAPER_KEEP=DIR (keep each job's trace there as
    trace-N.json, N counting the jobs from 1: where its time went).
    Header-only; include after bench/bench.h and tests/spm_test.h. */
#ifndef SPM_PAPER_H_INCLUDED
#define SPM_PAPER_H_INCLUDED

#include "bench/cluster.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*  SPM_PAPER_QUICK=1: a smoke run. */
static inline int paper_quick(void)
{
    const char *q = getenv("SPM_PAPER_QUICK");
    return q && *q == '1';
}

/*  Repetitions: SPM_PAPER_REPS, else 1 when quick, else DEF. */
static inline int paper_reps(int def)
{
    const char *r = getenv("SPM_PAPER_REPS");
    int n = r && atoi(r) > 0 ? atoi(r) : paper_quick() ? 1 : def;
    return n > 15 ? 15 : n;
}

/*  Scratch directory of this experiment (created once; static buffer). */
static inline const char *paper_dir(void)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/spm-paper-XXXXXX");
        SPM_TEST_ASSERT(mkdtemp(dir) != NULL);
    }
    return dir;
}

/*  paper_dir()/NAME in one of 8 rotating buffers: hold at most 8 at once. */
static inline const char *paper_file(const char *name)
{
    static char buf[8][320];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 320, "%s/%s", paper_dir(), name);
    return p;
}

/*  Runs `spm ARGV...` to the end; exits the experiment when it fails. */
static inline void paper_must(const char *const *argv)
{
    char *err = NULL;
    int rc = spm_test_run(argv, 1200, NULL, &err);
    if (rc != 0) {
        fprintf(stderr, "paper: spm %s %s failed (%d): %s\n", argv[0], argv[1], rc, err);
        exit(1);
    }
    free(err);
}

/* ------------------------------------------------------- heterogeneity */

static pid_t paper_hogs[2];

static inline void paper_pin(pid_t pid, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(pid, sizeof set, &set);
}

/*  Reads NAME under /proc/PID into BUF (CAP bytes, NUL-terminated);
    returns the bytes read, or -1 when PID is gone. */
static inline long paper_procfile(pid_t pid, const char *name, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}

/*  Sets *STATE and *PPID from /proc/PID/stat; returns 0, or -1 when PID is
    gone. */
static inline int paper_stat(pid_t pid, char *state, pid_t *ppid)
{
    char buf[512];
    int pp = 0;
    if (paper_procfile(pid, "stat", buf, sizeof buf) < 0)
        return -1;
    const char *close_paren = strrchr(buf, ')');
    if (!close_paren || sscanf(close_paren + 2, "%c %d", state, &pp) != 2)
        return -1;
    *ppid = (pid_t)pp;
    return 0;
}

/*  Reads the parent pid and the second word of the command line of PID;
    returns 0, or -1 when PID is gone. */
static inline int paper_proc(pid_t pid, pid_t *ppid, char *arg1, size_t cap)
{
    char buf[512], state;
    arg1[0] = '\0';
    if (paper_stat(pid, &state, ppid) != 0)
        return -1;
    long n = paper_procfile(pid, "cmdline", buf, sizeof buf);
    if (n < 0)
        return -1;
    size_t first = strlen(buf);
    if ((long)first + 1 < n)
        snprintf(arg1, cap, "%s", buf + first + 1);
    return 0;
}

/*  The IEU processes among the descendants of ROOT, sorted by pid (at most
    MAX). One pass over /proc collects every process's parent; the
    descendants are then closed over that table. */
static inline int paper_ieus(pid_t root, pid_t *out, int max)
{
    enum { CAP = 4096 };
    static pid_t pid[CAP], parent[CAP];
    static char ieu[CAP];
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < CAP) {
        char arg1[32];
        pid_t p = (pid_t)atoi(e->d_name);
        if (p > 0 && paper_proc(p, &parent[n], arg1, sizeof arg1) == 0) {
            pid[n] = p;
            ieu[n++] = strcmp(arg1, "ieu") == 0;
        }
    }
    if (d)
        closedir(d);
    static char inside[CAP];
    memset(inside, 0, sizeof inside);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < n; i++)
            if (!inside[i] && parent[i] == root)
                inside[i] = changed = 1;
            else if (!inside[i])
                for (int j = 0; j < n; j++)
                    if (inside[j] && pid[j] == parent[i]) {
                        inside[i] = changed = 1;
                        break;
                    }
    }
    int k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (inside[i] && ieu[i])
            out[k++] = pid[i];
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && out[j] < out[j - 1]; j--) {
            pid_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return k;
}

static inline void paper_stop_hogs(void)
{
    for (int h = 0; h < 2; h++)
        if (paper_hogs[h] > 0) {
            kill(paper_hogs[h], SIGKILL);
            waitpid(paper_hogs[h], NULL, 0);
            paper_hogs[h] = 0;
        }
}

/* ---------------------------------------------------------------- runs */

/*  What one job reports; the fields follow the --json report, plus the
    idle share inside the SIs' span measured from the trace. */
typedef enum {
    P_WALL,
    P_COMMITTED,
    P_REISSUED,
    P_W_IDLE,
    P_W_COMM,
    P_W_MAN,
    P_EFF,
    P_BUSY,
    P_CENTER_CPU,
    P_STORE_READS,
    P_BYTES_STORE,
    P_BYTES_L2,
    P_L1_HITS,
    P_EVICTIONS,
    P_MERGES,
    P_IDLE_SHARE,  /* sum of the IEUs' idle_s over their busy+wait+idle */
    P_SPAN_IDLE,   /* from the trace: 1 - SI time / (IEUs x first start..last end) */
    P_PARALLELISM, /* from the trace: SI time / span, the mean SIs running at once */
    P_MIN_SHARE,   /* the smallest share of the SIs one IEU ran (the slowed one's, at 3:1) */
    P_TAIL_IDLE,   /* from the trace: the IEUs' idle time after their own last SI, until
                      the job's last SI ends, over IEUs x span: the end-of-SF wait of eq. 6.1 */
    P_GAP_SAME,    /* from the trace: the IEUs' idle between two SIs of one opcode (the
                      time of asking for the next), over IEUs x span */
    P_GAP_STAGE,   /* likewise between SIs of two opcodes: a stage's end, a barrier */
    P_L2_HITS,
    P_WAIT,         /* the IEUs' wait_s: SIs waiting for their operands */
    P_NODE_NODE,    /* on a cluster: bytes node to node, counted on the links */
    P_HOST1,        /* on a cluster: bytes on the link of the center and client host */
    P_BYTES_PUSHED, /* output bytes other nodes kept (replicas, outputs a full node placed) */
    P_FIELDS
} paper_field_t;

static const char *const paper_keys[P_FIELDS] = {
    "wall_s", "committed",    "reissued",    "w_idle",      "w_comm",   "w_man",       "efficiency",
    "busy_s", "center_cpu_s", "store_reads", "bytes_store", "bytes_l2", "l1_hits",     "evictions",
    "merges", NULL,           NULL,          NULL,          NULL,       NULL,          NULL,
    NULL,     "l2_hits",      NULL,          NULL,          NULL,       "bytes_pushed"};

/*  Sum of every "KEY": number in JSON between FROM and UNTIL (NULL: end). */
static inline double paper_sum(const char *from, const char *until, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    double s = 0;
    for (const char *p = strstr(from, pat); p && (!until || p < until); p = strstr(p + 1, pat))
        s += strtod(p + strlen(pat), NULL);
    return s;
}

/*  One SI slice of a trace, for the gaps between an IEU's SIs. */
typedef struct {
    double ts, dur, wait;
    int lane;
    char name[48];
} paper_slice_t;

static int paper_slice_cmp(const void *a, const void *b)
{
    const paper_slice_t *x = a, *y = b;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/*  Reads the trace at PATH; sets V[P_SPAN_IDLE], V[P_PARALLELISM],
    V[P_TAIL_IDLE], V[P_GAP_SAME] and V[P_GAP_STAGE] for NIEUS IEUs (lanes
    numbered below 64). A gap between two SIs of an IEU is idle but for
    the second SI's wait for its operands (its wait_us: it was there, not
    yet local). */
static inline void paper_trace(const char *path, int nieus, double *v)
{
    FILE *f = fopen(path, "r");
    v[P_SPAN_IDLE] = v[P_PARALLELISM] = v[P_TAIL_IDLE] = v[P_GAP_SAME] = v[P_GAP_STAGE] = -1;
    if (!f)
        return;
    char line[1024];
    double first = -1, last = 0, sum = 0, lane_end[64] = {0};
    paper_slice_t *sl = NULL;
    size_t n = 0, cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "\"ph\": \"X\"") || !strstr(line, "\"cat\": \"si\""))
            continue;
        const char *t = strstr(line, "\"ts\": "), *d = strstr(line, "\"dur\": ");
        const char *l = strstr(line, "\"tid\": "), *w = strstr(line, "\"wait_us\": ");
        const char *nm = strstr(line, "\"name\": \"");
        if (!t || !d || !l)
            continue;
        double ts = strtod(t + 6, NULL), dur = strtod(d + 7, NULL);
        int lane = atoi(l + 7);
        if (first < 0 || ts < first)
            first = ts;
        if (ts + dur > last)
            last = ts + dur;
        if (lane >= 0 && lane < 64 && ts + dur > lane_end[lane])
            lane_end[lane] = ts + dur;
        sum += dur;
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            paper_slice_t *g = realloc(sl, cap * sizeof *sl);
            if (!g)
                break;
            sl = g;
        }
        paper_slice_t *s = &sl[n++];
        *s = (paper_slice_t){
            .ts = ts, .dur = dur, .wait = w ? strtod(w + 11, NULL) : 0, .lane = lane};
        if (nm)
            sscanf(nm + 9, "%47[^\"]", s->name);
    }
    fclose(f);
    if (first >= 0 && last > first) {
        double tail = 0, same = 0, stage = 0;
        for (int i = 0; i < nieus && i < 64; i++)
            tail += last - (lane_end[i] > first ? lane_end[i] : first);
        qsort(sl, n, sizeof *sl, paper_slice_cmp);
        for (size_t i = 1; i < n; i++) {
            if (sl[i].lane != sl[i - 1].lane)
                continue;
            double gap = sl[i].ts - (sl[i - 1].ts + sl[i - 1].dur);
            gap -= sl[i].wait < gap ? sl[i].wait : gap;
            if (gap > 0)
                *(strcmp(sl[i].name, sl[i - 1].name) == 0 ? &same : &stage) += gap;
        }
        v[P_SPAN_IDLE] = 1 - sum / (nieus * (last - first));
        v[P_PARALLELISM] = sum / (last - first);
        v[P_TAIL_IDLE] = tail / (nieus * (last - first));
        v[P_GAP_SAME] = same / (nieus * (last - first));
        v[P_GAP_STAGE] = stage / (nieus * (last - first));
    }
    free(sl);
}

/*  Fills V[P_FIELDS] from the --json report OUT and the trace at TRACE
    (removed) of a job on NIEUS IEUs. */
static inline void paper_report(const char *out, const char *trace, int nieus, double *v)
{
    for (int k = 0; k < P_FIELDS; k++)
        v[k] = paper_keys[k] ? spm_test_json_num(out, paper_keys[k]) : -1;
    const char *ieus = strstr(out, "\"ieus\": ");
    const char *ops = ieus ? strstr(ieus, "\"opcodes\": ") : NULL;
    if (ieus) {
        double idle = paper_sum(ieus, ops, "idle_s");
        double all = idle + paper_sum(ieus, ops, "busy_s") + paper_sum(ieus, ops, "wait_s");
        v[P_IDLE_SHARE] = all > 0 ? idle / all : -1;
        v[P_WAIT] = paper_sum(ieus, ops, "wait_s");
        double all_sis = paper_sum(ieus, ops, "sis"), least = all_sis;
        for (const char *p = strstr(ieus, "\"sis\": "); p && (!ops || p < ops);
             p = strstr(p + 1, "\"sis\": "))
            if (strtod(p + 7, NULL) < least)
                least = strtod(p + 7, NULL);
        v[P_MIN_SHARE] = all_sis > 0 ? least / all_sis : -1;
    }
    paper_trace(trace, nieus, v);
    unlink(trace);
}

/*  Jobs that failed, run again or given up (printed by the experiments). */
static int paper_failures;

/* ---------------------------------------------------- on a simulated cluster */

/*  The dissertation's cluster, simulated (bench/cluster.h): host 1 runs
    the center and the client (so the bytes of host 1's link are all
    center-or-client to node bytes), hosts 2..17 up to 16 nodes, every
    link 100 Mbit/s each way as the dissertation's Ethernet. Experiments
    run real work on up to PAPER_MAX_NODES nodes; PAPER_WIDE_NODES is for
    the rows of figures that go further (Figures 6.1 and 7.3-7.4 to 64
    PCs), modelled or with little work a node. */
#define PAPER_MAX_NODES 8
#define PAPER_WIDE_NODES 16
#define PAPER_MBIT 100

/*  Makes the cluster's hosts once per experiment. Returns 0, or prints
    why the section is skipped and returns -1 where namespaces cannot be
    made here (not root). */
static inline int paper_cluster_open(void)
{
    char prefix[16];
    snprintf(prefix, sizeof prefix, "spmp%d", (int)(getpid() % 1000));
    if (bc_open("spmpaper", "10.79.0", PAPER_WIDE_NODES + 1, PAPER_MBIT) == 0)
        return 0;
    printf("Skipped: this machine cannot make network namespaces (needs root and "
           "iproute2), so the simulated cluster cannot be built.\n");
    return -1;
}

/*  A fresh cluster of NODES node hosts of IEUS IEUs each (AGENT_EXTRA:
    more options for every agent, may be NULL), named NAME, whose center
    keeps one copy of every block and does not copy stragglers
    (`--replicas 1 --no-speculate`): as the dissertation's VM, which had
    neither, so that what moves is what its experiments counted. */
static inline void paper_cluster_up(bc_cluster_t *c, int nodes, int ieus, const char *name,
                                    const char *const *agent_extra)
{
    const char *center[] = {"--replicas", "1", "--no-speculate", NULL};
    bc_cluster_up(c, nodes, ieus, name, center, agent_extra);
}

/*  What crossed the links during one job: per host, bytes received and
    sent (index 1 the center and client's host, 2.. the nodes). */
typedef struct {
    double rx[PAPER_WIDE_NODES + 2], tx[PAPER_WIDE_NODES + 2];
} paper_links_t;

/*  Bytes that went from node to node: every byte a node's link carries
    goes to or comes from host 1 or another node, and a node-to-node byte
    is counted on two node links; so (sum over the nodes' links - host 1's
    link) / 2. Whole frames: TCP/IP and CurveZMQ overheads count too. */
static inline double paper_node_to_node(const paper_links_t *l, int nodes)
{
    double sum = 0;
    for (int h = 2; h < nodes + 2; h++)
        sum += l->rx[h] + l->tx[h];
    return (sum - l->rx[1] - l->tx[1]) / 2;
}

/*  Runs `spm ARGV... --center EP --keys K --json --quiet --trace T` from
    host 1 on cluster C, its node 0 slowed 3:1 when HETERO; fills V[P_FIELDS], with what crossed the
   links (P_NODE_NODE, P_HOST1). Returns 0, or -1 when the job failed three times (each failure
   counted in paper_failures). */
/*  Slows node 0 of C 3:1 against the others for one job (see the header):
    its IEUs pinned to CPU 0 with two busy-looping processes, every other
    node's IEUs to CPU 1; paper_stop_hogs ends it. */
static inline void paper_slow_node(const bc_cluster_t *c)
{
    for (int i = 0; i < c->nagents; i++) {
        pid_t ieus[16];
        int n = paper_ieus(c->agents[i], ieus, 16);
        for (int k = 0; k < n; k++)
            paper_pin(ieus[k], i == 0 ? 0 : 1);
    }
    fflush(stdout);
    for (int h = 0; h < 2; h++)
        if ((paper_hogs[h] = fork()) == 0) {
            paper_pin(0, 0);
            for (volatile unsigned long x = 0;; x++)
                ;
        }
}

static inline int paper_cjob(const char *const *argv, const bc_cluster_t *c, int hetero, double *v)
{
    static char trace[192];
    snprintf(trace, sizeof trace, "%s/trace.json", bc.dir);
    const char *extra[] = {"--center", bc.center_ep, "--keys", bc.keys, "--json",
                           "--quiet",  "--trace",    trace,    NULL};
    const char *args[64];
    int n = 0;
    for (; argv[n] && n < 50; n++)
        args[n] = argv[n];
    spm_test_args(args, n, 64, extra);
    bc_path_t out = bc_file("job.json"), err = bc_file("job.err");
    paper_links_t before, after;
    char *o = NULL;
    for (int attempt = 0;; attempt++) {
        for (int h = 1; h < c->nagents + 2; h++)
            bc_link(h, &before.rx[h], &before.tx[h]);
        unlink(err.s);
        if (hetero)
            paper_slow_node(c);
        int rc = bc_finish(bc_start(1, args, out.s, err.s), 1200);
        paper_stop_hogs();
        for (int h = 1; h < c->nagents + 2; h++)
            bc_link(h, &after.rx[h], &after.tx[h]);
        o = bc_slurp(out.s);
        if (rc == 0 && strstr(o, "\"status\": \"done\""))
            break;
        char *e = bc_slurp(err.s);
        fprintf(stderr, "paper: spm %s failed on the cluster (%d): %s%s\n", argv[0], rc, e, o);
        free(e);
        free(o);
        paper_failures++;
        if (attempt == 2)
            return -1;
    }
    if (getenv("SPM_PAPER_DEBUG"))
        fprintf(stderr, "paper: %s\n", o);
    const char *keep = getenv("SPM_PAPER_KEEP");
    if (keep && *keep) {
        static int kept;
        char to[320];
        snprintf(to, sizeof to, "%s/trace-%d.json", keep, ++kept);
        FILE *in = fopen(trace, "rb"), *cp = fopen(to, "wb");
        char buf[65536];
        size_t got;
        int ok = in && cp;
        while (ok && (got = fread(buf, 1, sizeof buf, in)) > 0)
            ok = fwrite(buf, 1, got, cp) == got;
        if (in)
            fclose(in);
        if ((cp && fclose(cp) != 0) || !ok)
            fprintf(stderr, "paper: cannot keep the trace as %s\n", to);
    }
    paper_report(o, trace, c->nagents * c->ieus, v);
    paper_links_t d;
    for (int h = 1; h < c->nagents + 2; h++) {
        d.rx[h] = after.rx[h] - before.rx[h];
        d.tx[h] = after.tx[h] - before.tx[h];
    }
    v[P_NODE_NODE] = paper_node_to_node(&d, c->nagents);
    v[P_HOST1] = d.rx[1] + d.tx[1];
    if (getenv("SPM_PAPER_DEBUG"))
        for (int h = 1; h < c->nagents + 2; h++)
            fprintf(stderr, "paper: host %d rx %.1f MiB tx %.1f MiB\n", h, d.rx[h] / 1048576,
                    d.tx[h] / 1048576);
    free(o);
    return 0;
}

/*  Medians over the jobs of REPS (at most 16) runs of paper_cjob on C
    that succeeded, into M[P_FIELDS]; returns how many succeeded (when
    none, M is all -1). */
static inline int paper_cmedian(const char *const *argv, const bc_cluster_t *c, int hetero,
                                int reps, double *m)
{
    double runs[P_FIELDS][16];
    int ok = 0;
    for (int r = 0; r < reps && r < 16; r++) {
        double v[P_FIELDS];
        if (paper_cjob(argv, c, hetero, v) != 0)
            continue;
        for (int k = 0; k < P_FIELDS; k++)
            runs[k][ok] = v[k];
        ok++;
    }
    for (int k = 0; k < P_FIELDS; k++)
        m[k] = ok ? bench_median(runs[k], ok) : -1;
    return ok;
}

/*  Writes a ROWS x COLS coordinate matrix of DENSITY (seed SEED) to PATH. */
static inline void paper_gen_sparse(const char *path, long rows, long cols, double density,
                                    int seed)
{
    char r[32], c[32], d[32], s[32];
    snprintf(r, sizeof r, "%ld", rows);
    snprintf(c, sizeof c, "%ld", cols);
    snprintf(d, sizeof d, "%g", density);
    snprintf(s, sizeof s, "%d", seed);
    const char *argv[] = {"gen", "matrix", "--rows", r,    "--cols", c,   "--density",
                          d,     "--seed", s,        "-o", path,     NULL};
    paper_must(argv);
}

/*  Equation 6.4: the share of IEU time lost to imbalance with NP IEUs and
    NI SIs per super-function, C the constant of the performance profile. */
static inline double paper_eq64(double np, double ni, double c)
{
    return (np - 1) / (ni / c + np - 1);
}

/*  Removes the scratch directory and what is left in it. */
static inline void paper_cleanup(void)
{
    DIR *d = opendir(paper_dir());
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            unlink(paper_file(e->d_name));
    if (d)
        closedir(d);
    rmdir(paper_dir());
}

#endif
