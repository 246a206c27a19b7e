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

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 16              /* agent hosts of the nodes part */
#define MAX_HOSTS (MAX_NODES + 1) /* and the center's */
#define MAX_PROCS 64              /* processes running at once */
#define CENTER_EP "tcp://10.78.0.1:7700"
#define IEUS 4                    /* IEUs per agent */
#define SI_MS 20                  /* work of one synthetic SI */
#define SI_BYTES 16384            /* output of one synthetic SI */
#define MM_AGENTS 3               /* agent hosts of the matmul part */
#define MM_CLIENT (MM_AGENTS + 2) /* the client's host, after the center's and the agents' */
#define MIB (1024.0 * 1024.0)

static const char *bin;                              /* the spm binary */
static char tag[16];                                 /* namespace prefix, from our pid */
static char ns[MAX_HOSTS + 1][32];                   /* [0] the bridge, [h] host h at 10.78.0.h */
static int nns;                                      /* namespaces made, to delete */
static char dir[64] = "/tmp/spm-bench-scale-XXXXXX"; /* scratch: keys, stores, caches */
static int have_dir;                                 /* dir exists, to remove */
static char keys[96];                                /* DIR/keys */
static pid_t procs[MAX_PROCS];                       /* process groups started and not yet reaped */
static volatile sig_atomic_t ended;                  /* cleanup ran */
static int reps;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

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

/*  Runs ARGV (a program on $PATH) to its end; returns its exit status, or
    -1. Only fork, exec and waitpid: the signal handler's cleanup uses it. */
static int run_argv(char *const argv[], int quiet)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (quiet) {
            int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            dup2(null, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*  Runs the shell command FMT... (system() would ignore our SIGINT while
    it runs, and the cleanup must hear it). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    fflush(stdout);
    char *argv[] = {"sh", "-c", cmd, NULL};
    return run_argv(argv, 0);
}

/*  Kills every process this bench started (each leads a process group
    that holds its children, an agent's IEUs among them), deletes the
    namespaces and the scratch directory. Runs once: at exit, or from the
    handler of SIGINT and SIGTERM, hence fork, exec, kill and waitpid only. */
static void cleanup(void)
{
    if (ended)
        return;
    ended = 1;
    /* a second Ctrl-C must not cut the cleanup short */
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, NULL);
    for (int i = 0; i < MAX_PROCS; i++)
        if (procs[i] > 0)
            kill(-procs[i], SIGKILL);
    for (int i = 0; i < MAX_PROCS; i++)
        if (procs[i] > 0)
            waitpid(procs[i], NULL, 0);
    for (int i = nns - 1; i >= 0; i--) {
        char *argv[] = {"ip", "netns", "del", ns[i], NULL};
        run_argv(argv, 1);
    }
    if (have_dir) {
        char *argv[] = {"rm", "-rf", dir, NULL};
        run_argv(argv, 1);
    }
}

static void on_signal(int sig)
{
    cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void track(pid_t pid, pid_t was)
{
    for (int i = 0; i < MAX_PROCS; i++)
        if (procs[i] == was) {
            procs[i] = pid;
            return;
        }
    SPM_TEST_FAIL("bench_scale: more than %d processes\n", MAX_PROCS);
}

/* ------------------------------------------------------------ the network */

/*  The bridge namespace and hosts 1..NHOSTS, each joined to it by a veth
    pair (eth0 in the host, hH in the bridge's) with its link shaped to
    MBIT each way. Returns 0, or -1 where namespaces cannot be made here. */
static int net_up(int nhosts, double mbit)
{
    snprintf(tag, sizeof tag, "spmscale%d-", (int)(getpid() % 100000));
    for (int h = 0; h <= nhosts; h++)
        snprintf(ns[h], sizeof ns[h], "%s%d", tag, h);
    if (sh("ip netns add %s 2>/dev/null", ns[0]) != 0)
        return -1;
    nns = 1;
    /* tbf's bucket (burst) must hold a whole GSO packet (up to 64 KiB on
       a veth) and at least a timer tick of traffic, or it cannot reach
       the rate, so it is 20 ms of the rate and never below 64 KiB: 250 KB
       at 100 Mbit/s. Its queue (latency) is 50 ms: long enough that
       TCP's bursts wait rather than being dropped (a drop halves a
       sender's window, and the bench would measure TCP's loss recovery
       instead of the link), short enough not to hide the rate behind a
       deep buffer. */
    long burst = (long)(mbit * 1e6 / 8 * 0.020);
    if (burst < 65536)
        burst = 65536;
    if (sh("ip -n %s link add br0 type bridge && ip -n %s link set br0 up", ns[0], ns[0]) != 0)
        SPM_TEST_FAIL("bench_scale: cannot make the bridge\n");
    for (int h = 1; h <= nhosts; h++) {
        if (sh("ip netns add %s", ns[h]) != 0)
            SPM_TEST_FAIL("bench_scale: cannot add namespace %s\n", ns[h]);
        nns = h + 1;
        if (sh("ip -n %s link add h%d type veth peer name eth0 netns %s && "
               "ip -n %s link set h%d master br0 && ip -n %s link set h%d up && "
               "ip -n %s addr add 10.78.0.%d/24 dev eth0 && ip -n %s link set eth0 up && "
               "ip -n %s link set lo up",
               ns[0], h, ns[h], ns[0], h, ns[0], h, ns[h], h, ns[h], ns[h]) != 0)
            SPM_TEST_FAIL("bench_scale: cannot link host %d\n", h);
        /* eth0's egress is what the host sends; the bridge's end of the
           veth sends what the host receives */
        if (sh("tc -n %s qdisc add dev eth0 root tbf rate %.0fkbit burst %ld latency 50ms && "
               "tc -n %s qdisc add dev h%d root tbf rate %.0fkbit burst %ld latency 50ms",
               ns[h], mbit * 1000, burst, ns[0], h, mbit * 1000, burst) != 0)
            SPM_TEST_FAIL("bench_scale: cannot shape host %d's link (tc tbf)\n", h);
    }
    return 0;
}

/*  Bytes received plus sent on host H's eth0 so far. */
static double link_bytes(int h)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "ip netns exec %s cat /sys/class/net/eth0/statistics/rx_bytes "
             "/sys/class/net/eth0/statistics/tx_bytes",
             ns[h]);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    unsigned long long rx = 0, tx = 0;
    int n = f ? fscanf(f, "%llu %llu", &rx, &tx) : 0;
    if (f)
        pclose(f);
    if (n != 2)
        SPM_TEST_FAIL("bench_scale: cannot read host %d's link counters\n", h);
    return (double)rx + (double)tx;
}

/* ------------------------------------------------------------- processes */

/*  A path in the scratch directory, by value: callers keep several. */
typedef struct {
    char s[128];
} path_t;

/*  DIR/NAME. */
static path_t file(const char *name)
{
    path_t p;
    snprintf(p.s, sizeof p.s, "%s/%s", dir, name);
    return p;
}

/*  Starts `spm ARGS...` on host H (0: in this namespace; no spm runs on
    the bridge) in a process group of its own, stdout to OUT and stderr
    appended to ERR (NULL: discarded). Returns its pid, which is spm's:
    `ip netns exec` execs it in place. */
static pid_t start(int h, const char *const *args, const char *out, const char *err)
{
    const char *argv[48];
    int k = 0;
    if (h) {
        argv[k++] = "ip";
        argv[k++] = "netns";
        argv[k++] = "exec";
        argv[k++] = ns[h];
    }
    argv[k++] = bin;
    for (int i = 0; args[i] && k < 47; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int fo = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fo < 0 || fe < 0)
            _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        execvp(argv[0], (char **)argv);
        _exit(127);
    }
    if (pid < 0)
        SPM_TEST_FAIL("bench_scale: fork failed\n");
    setpgid(pid, pid); /* also here, so that a kill right after fork finds the group */
    track(pid, 0);
    return pid;
}

/*  Waits up to TIMEOUT_S for PID (then kills its group); returns its exit
    status, 128 + signal, or -1 on the timeout. What it left in its group
    is killed either way. */
static int finish(pid_t pid, double timeout_s)
{
    int st = 0;
    double end = now() + timeout_s;
    pid_t r;
    while ((r = waitpid(pid, &st, WNOHANG)) == 0 && now() < end)
        usleep(20000);
    if (r == 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    kill(-pid, SIGKILL);
    track(0, pid);
    if (r == 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*  SIGTERM to PID, then finish within TIMEOUT_S. */
static int stop(pid_t pid, double timeout_s)
{
    kill(pid, SIGTERM);
    return finish(pid, timeout_s);
}

/*  The contents of PATH (malloc'd; "" where it cannot be read). */
static char *slurp(const char *path)
{
    int fd = open(path, O_RDONLY);
    char *s = fd >= 0 ? spm_test_slurp(fd) : NULL;
    if (fd >= 0)
        close(fd);
    return s ? s : strdup("");
}

/*  Runs `spm ARGS` in this namespace to its end; fails the bench unless
    it exits 0. */
static void must_run(const char *const *args)
{
    path_t err = file("must_run.err");
    unlink(err.s);
    if (finish(start(0, args, NULL, err.s), 600) != 0) {
        char *e = slurp(err.s);
        SPM_TEST_FAIL("bench_scale: spm %s %s failed: %s\n", args[0], args[1], e);
    }
}

/*  Occurrences of NEEDLE in S. */
static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* --------------------------------------------------------------- cluster */

typedef struct {
    pid_t center;
    pid_t agents[MAX_NODES];
    int nagents;
    char name[32]; /* prefix of its store, caches and logs in DIR */
} cluster_t;

/*  IEUs alive in the center's status, as seen from host 1; -1 when the
    center did not answer. */
static int ieus_alive(void)
{
    const char *args[] = {"status", "--center", CENTER_EP, "--keys", keys, "--json", NULL};
    path_t out = file("status.json");
    if (finish(start(1, args, out.s, NULL), 20) != 0)
        return -1;
    /* the IEUs listed, less the dead: whatever other states they may
       have (idle and busy today) */
    char *s = slurp(out.s), *list = strstr(s, "\"ieus\": ["),
         *end = list ? strchr(list, ']') : NULL;
    int n = 0;
    if (end) {
        *end = '\0';
        n = count(list, "\"state\": \"") - count(list, "\"state\": \"dead\"");
    }
    free(s);
    return n;
}

/*  A fresh center on host 1 and NAGENTS agents on hosts 2.., with stores,
    caches and logs under DIR/NAME-*; returns once the center sees all
    their IEUs (fails the bench after 60 s). */
static void cluster_up(cluster_t *c, int nagents, const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    char store[128], log[128];
    snprintf(store, sizeof store, "%s/%s-store", dir, name);
    snprintf(log, sizeof log, "%s/%s-center.log", dir, name);
    char extra[256];
    snprintf(extra, sizeof extra, "%s", env_str("BENCH_SCALE_CENTER", ""));
    const char *center[24] = {"center", "--listen", CENTER_EP,     "--store", store,
                              "--keys", keys,       "--log-level", "error"};
    size_t na = 9;
    for (char *save = NULL, *w = strtok_r(extra, " ", &save); w && na + 1 < 24;
         w = strtok_r(NULL, " ", &save))
        center[na++] = w;
    center[na] = NULL;
    c->center = start(1, center, NULL, log);
    for (int i = 0; i < nagents; i++) {
        char cache[128], ep[64];
        snprintf(cache, sizeof cache, "%s/%s-cache%d", dir, name, i + 2);
        snprintf(log, sizeof log, "%s/%s-agent%d.log", dir, name, i + 2);
        snprintf(ep, sizeof ep, "tcp://10.78.0.%d:7701", i + 2);
        const char *agent[] = {"agent",  "--center",    CENTER_EP,     "--keys", keys,
                               "--ieus", "4",           "--cache-dir", cache,    "--data-listen",
                               ep,       "--log-level", "error",       NULL};
        c->agents[c->nagents++] = start(i + 2, agent, NULL, log);
    }
    /* Agents join as their IEUs come up, which takes from a fraction of a
       second to a few on 2 cores with 8 agents starting at once: wait for
       them rather than for a fixed time. */
    double end = now() + 60;
    int n = -1;
    while (now() < end && (n = ieus_alive()) < IEUS * nagents)
        usleep(200000);
    if (n < IEUS * nagents) {
        snprintf(log, sizeof log, "%s/%s-center.log", dir, name);
        char *l = slurp(log);
        SPM_TEST_FAIL("bench_scale: only %d of %d IEUs joined within 60 s; the center said: %s\n",
                      n, IEUS * nagents, l);
    }
}

/*  Stops the center, then the agents, and removes their files. */
static void cluster_down(cluster_t *c)
{
    stop(c->center, 30);
    for (int i = 0; i < c->nagents; i++)
        stop(c->agents[i], 30);
    sh("rm -rf %s/%s-*", dir, c->name);
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
    cluster_t c;
    char name[32], ssis[16];
    snprintf(name, sizeof name, "n%d", n);
    snprintf(ssis, sizeof ssis, "%d", sis);
    cluster_up(&c, n, name);
    const char *job[] = {"run",    "synthetic",  "--center", CENTER_EP, "--keys",  keys, "--sleep",
                         "--work", "fixed:20ms", "--bytes",  "16384",   "--reads", "2",  "--sfs",
                         "4",      "--sis",      ssis,       "--json",  NULL};
    double wall[16], eff[16], e[16], mib[16], cpu[16], node[16];
    double ideal = sis * SI_MS / 1000.0 / (IEUS * n);
    for (int r = 0; r < reps; r++) {
        path_t out = file("job.json"), err = file("job.err");
        unlink(err.s);
        double b0 = link_bytes(1), a0[MAX_NODES];
        for (int i = 0; i < n; i++)
            a0[i] = link_bytes(i + 2);
        int rc = finish(start(1, job, out.s, err.s), 600);
        double b1 = link_bytes(1);
        node[r] = 0;
        for (int i = 0; i < n; i++) {
            double d = link_bytes(i + 2) - a0[i];
            node[r] = d > node[r] ? d : node[r];
        }
        char *j = slurp(out.s);
        if (rc != 0 || !strstr(j, "\"status\": \"done\"")) {
            char *m = slurp(err.s);
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
    cluster_down(&c);
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
    path_t cp = file("C.mtx");
    const char *c_path = cp.s;
    const char *args[] = {"matmul", a,    a,         "-o",  c_path,   "--center", CENTER_EP,
                          "--keys", keys, "--block", "256", "--json", "--quiet",  NULL};
    for (int r = 0; r < reps; r++) {
        cluster_t c;
        cluster_up(&c, MM_AGENTS, "mm");
        path_t out = file("mm.json"), err = file("mm.err");
        unlink(err.s);
        unlink(c_path);
        double c0 = link_bytes(1), k0 = link_bytes(MM_CLIENT), t0 = now();
        int rc = finish(start(MM_CLIENT, args, out.s, err.s), 900);
        total[r] = now() - t0;
        double c1 = link_bytes(1), k1 = link_bytes(MM_CLIENT);
        struct stat st;
        char *j = slurp(out.s);
        if (rc != 0 || stat(c_path, &st) != 0 || st.st_size == 0) {
            char *m = slurp(err.s);
            SPM_TEST_FAIL("bench_scale: %s matmul failed (%d) or wrote no C.mtx: %s%s\n", what, rc,
                          m, j);
        }
        wall[r] = spm_test_json_num(j, "wall_s");
        cmib[r] = (c1 - c0) / MIB;
        kmib[r] = (k1 - k0) / MIB;
        share[r] = cmib[r] / kmib[r];
        free(j);
        unlink(c_path);
        cluster_down(&c);
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
    path_t sp = file("S.mtx"), dp = file("D.mtx");
    const char *sa = sp.s, *da = dp.s;
    const char *gs[] = {"gen",    "matrix", "--rows", side, "--density", "0.05",
                        "--seed", "3",      "-o",     sa,   NULL};
    const char *gd[] = {"gen",    "matrix", "--rows", side, "--format", "array",
                        "--seed", "4",      "-o",     da,   NULL};
    must_run(gs);
    must_run(gd);
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
    bin = spm_test_bin();
    reps = bench_reps() > 16 ? 16 : bench_reps();
    double mbit = atof(env_str("BENCH_SCALE_MBIT", "100"));
    long mm_n = atol(env_str("BENCH_SCALE_MM_N", bench_quick() ? "1024" : "2048"));
    if (mbit <= 0 || mm_n < 1)
        SPM_TEST_FAIL("bench_scale: BENCH_SCALE_MBIT and BENCH_SCALE_MM_N must be positive\n");
    int nodes[MAX_NODES], nn = node_counts(nodes, MAX_NODES), most = MM_CLIENT;
    for (int i = 0; i < nn; i++)
        if (nodes[i] + 1 > most)
            most = nodes[i] + 1;

    atexit(cleanup);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    if (net_up(most, mbit) != 0) {
        printf("scale: skipped: cannot create network namespaces here (needs root and "
               "iproute2)\n");
        return 0;
    }
    if (!mkdtemp(dir))
        SPM_TEST_FAIL("bench_scale: mkdtemp failed\n");
    have_dir = 1;
    snprintf(keys, sizeof keys, "%s/keys", dir);
    const char *names[] = {"center", "agent", "client"};
    for (int i = 0; i < 3; i++) {
        const char *kg[] = {"keygen", "--keys", keys, "--name", names[i], "--authorize", NULL};
        must_run(kg);
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
