/*  =========================================================================
    cluster - a VM of real processes on a simulated cluster, for the
    benchmarks that measure one (bench/bench_scale.c, bench/paper)

    The hosts are network namespaces on one bridge (tests/netns.h), every
    link shaped to a rate in both directions, so that a link is a real
    bottleneck as on a switched network and its bytes can be counted. Host
    1 runs the center (CurveZMQ keys, tcp://SUBNET.1:7700); agent i runs on
    host i + 2 and serves its blocks at tcp://SUBNET.(i+2):7701; the
    caller picks the host a client runs on.

        if (bc_open("spmscale", "10.78.0", 10, 100) != 0) skip;
        bc_cluster_t c;
        bc_cluster_up(&c, 4, 2, "run1", NULL, NULL);  -- 4 agents of 2 IEUs
        pid_t p = bc_start(10, args, out, err);       -- a client on host 10
        bc_finish(p, 600);
        bc_cluster_down(&c);

    One world per process (the static BC): a signal or the exit kills
    every process it started (each leads a process group that holds its
    children, an agent's IEUs among them), deletes the namespaces and the
    scratch directory. Header-only; include after bench/bench.h and
    tests/spm_test.h.
    =========================================================================
*/
#ifndef SPM_BENCH_CLUSTER_H_INCLUDED
#define SPM_BENCH_CLUSTER_H_INCLUDED

#include "tests/netns.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BC_MAX_AGENTS 16
#define BC_MAX_PROCS 64 /* processes started and not yet reaped */

static struct {
    spm_netns_t net;             /* [0] the bridge, [h] host h at SUBNET.h */
    int have_net;                /* net is up, to delete */
    char dir[64];                /* scratch: keys, stores, caches, logs */
    int have_dir;                /* dir exists, to remove */
    char keys[96];               /* DIR/keys: center, agent and client keys */
    char center_ep[48];          /* tcp://SUBNET.1:7700 */
    pid_t procs[BC_MAX_PROCS];   /* process groups started and not yet reaped */
    volatile sig_atomic_t ended; /* bc_cleanup ran */
} bc;

static inline double bc_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*  Kills every process started here, deletes the namespaces and the
    scratch directory. Runs once: at exit, or from the handler of SIGINT
    and SIGTERM, hence fork, exec, kill and waitpid only. */
static inline void bc_cleanup(void)
{
    if (bc.ended)
        return;
    bc.ended = 1;
    /* a second Ctrl-C must not cut the cleanup short */
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, NULL);
    for (int i = 0; i < BC_MAX_PROCS; i++)
        if (bc.procs[i] > 0)
            kill(-bc.procs[i], SIGKILL);
    for (int i = 0; i < BC_MAX_PROCS; i++)
        if (bc.procs[i] > 0)
            waitpid(bc.procs[i], NULL, 0);
    if (bc.have_net)
        spm_netns_down(&bc.net);
    if (bc.have_dir) {
        char *argv[] = {"rm", "-rf", bc.dir, NULL};
        spm_netns_exec(argv, 1);
    }
}

static inline void bc_on_signal(int sig)
{
    bc_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

static inline void bc_track(pid_t pid, pid_t was)
{
    for (int i = 0; i < BC_MAX_PROCS; i++)
        if (bc.procs[i] == was) {
            bc.procs[i] = pid;
            return;
        }
    SPM_TEST_FAIL("cluster: more than %d processes\n", BC_MAX_PROCS);
}

/*  A path in the scratch directory, by value: callers keep several. */
typedef struct {
    char s[160];
} bc_path_t;

/*  DIR/NAME. */
static inline bc_path_t bc_file(const char *name)
{
    bc_path_t p;
    snprintf(p.s, sizeof p.s, "%s/%s", bc.dir, name);
    return p;
}

/*  The contents of PATH (malloc'd; "" where it cannot be read). */
static inline char *bc_slurp(const char *path)
{
    int fd = open(path, O_RDONLY);
    char *s = fd >= 0 ? spm_test_slurp(fd) : NULL;
    if (fd >= 0)
        close(fd);
    return s ? s : strdup("");
}

/*  Starts `spm ARGS...` on host H (0: in this namespace; no spm runs on
    the bridge) in a process group of its own, stdout to OUT and stderr
    appended to ERR (NULL: discarded). Returns its pid, which is spm's:
    `ip netns exec` execs it in place. */
static inline pid_t bc_start(int h, const char *const *args, const char *out, const char *err)
{
    const char *argv[64];
    int k = 0;
    if (h) {
        argv[k++] = "ip";
        argv[k++] = "netns";
        argv[k++] = "exec";
        argv[k++] = spm_netns_host(&bc.net, h);
    }
    argv[k++] = spm_test_bin();
    for (int i = 0; args[i] && k < 63; i++)
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
        SPM_TEST_FAIL("cluster: fork failed\n");
    setpgid(pid, pid); /* also here, so that a kill right after fork finds the group */
    bc_track(pid, 0);
    return pid;
}

/*  Waits up to TIMEOUT_S for PID (then kills its group); returns its exit
    status, 128 + signal, or -1 on the timeout. What it left in its group
    is killed either way. */
static inline int bc_finish(pid_t pid, double timeout_s)
{
    int st = 0;
    double end = bc_now() + timeout_s;
    pid_t r;
    while ((r = waitpid(pid, &st, WNOHANG)) == 0 && bc_now() < end)
        usleep(20000);
    if (r == 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    kill(-pid, SIGKILL);
    bc_track(0, pid);
    if (r == 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*  SIGTERM to PID, then bc_finish within TIMEOUT_S. */
static inline int bc_stop(pid_t pid, double timeout_s)
{
    kill(pid, SIGTERM);
    return bc_finish(pid, timeout_s);
}

/*  Runs `spm ARGS` in this namespace to its end; fails the bench unless
    it exits 0. */
static inline void bc_must_run(const char *const *args)
{
    bc_path_t err = bc_file("must_run.err");
    unlink(err.s);
    if (bc_finish(bc_start(0, args, NULL, err.s), 600) != 0) {
        char *e = bc_slurp(err.s);
        SPM_TEST_FAIL("cluster: spm %s %s failed: %s\n", args[0], args[1], e);
    }
}

/*  Bytes host H's link has received (*RX) and sent (*TX) so far. */
static inline void bc_link(int h, double *rx, double *tx)
{
    unsigned long long r = 0, t = 0;
    if (spm_netns_bytes(&bc.net, h, &r, &t) != 0)
        SPM_TEST_FAIL("cluster: cannot read host %d's link counters\n", h);
    *rx = (double)r;
    *tx = (double)t;
}

/*  Bytes received plus sent on host H's link so far. */
static inline double bc_link_bytes(int h)
{
    double rx, tx;
    bc_link(h, &rx, &tx);
    return rx + tx;
}

/*  Shapes every host's link to MBIT each way from now on (bc_open's rate
    until then); fails the bench when tc cannot. */
static inline void bc_rate(double mbit)
{
    for (int h = 1; h <= bc.net.nhosts; h++)
        if (spm_netns_shape(&bc.net, h, mbit) != 0)
            SPM_TEST_FAIL("cluster: cannot shape host %d's link to %.0f Mbit/s (tc tbf)\n", h,
                          mbit);
}

/*  Makes the world: NHOSTS hosts at SUBNET.1.. named from PREFIX, each link
    shaped to MBIT each way, a scratch directory and keys for a center, an
    agent and a client (authorized); the cleanup runs at exit and on
    SIGINT, SIGTERM and SIGHUP. Returns 0, or -1 where namespaces cannot be
    made here (the caller skips with a message); fails the bench on any
    other error. */
static inline int bc_open(const char *prefix, const char *subnet, int nhosts, double mbit)
{
    atexit(bc_cleanup);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = bc_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    spm_netns_init(&bc.net, prefix, subnet, nhosts);
    int rc = spm_netns_up(&bc.net, mbit);
    if (rc == -2)
        SPM_TEST_FAIL("cluster: %s\n", bc.net.why);
    if (rc != 0)
        return -1;
    bc.have_net = 1;
    snprintf(bc.dir, sizeof bc.dir, "/tmp/spm-cluster-XXXXXX");
    if (!mkdtemp(bc.dir))
        SPM_TEST_FAIL("cluster: mkdtemp failed\n");
    bc.have_dir = 1;
    snprintf(bc.keys, sizeof bc.keys, "%s/keys", bc.dir);
    snprintf(bc.center_ep, sizeof bc.center_ep, "tcp://%s.1:7700", subnet);
    const char *names[] = {"center", "agent", "client"};
    for (int i = 0; i < 3; i++) {
        const char *kg[] = {"keygen", "--keys", bc.keys, "--name", names[i], "--authorize", NULL};
        bc_must_run(kg);
    }
    return 0;
}

/* --------------------------------------------------------------- cluster */

typedef struct {
    pid_t center;
    pid_t agents[BC_MAX_AGENTS];
    int nagents;
    int ieus;      /* IEUs per agent */
    char name[32]; /* prefix of its store, caches and logs in DIR */
} bc_cluster_t;

/*  Occurrences of NEEDLE in S. */
static inline int bc_count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/*  IEUs alive in the center's status, as seen from host 1; -1 when the
    center did not answer. */
static inline int bc_ieus_alive(void)
{
    const char *args[] = {"status", "--center", bc.center_ep, "--keys", bc.keys, "--json", NULL};
    bc_path_t out = bc_file("status.json");
    if (bc_finish(bc_start(1, args, out.s, NULL), 20) != 0)
        return -1;
    /* the IEUs listed, less the dead: whatever other states they may
       have (idle and busy today) */
    char *s = bc_slurp(out.s), *list = strstr(s, "\"ieus\": ["),
         *end = list ? strchr(list, ']') : NULL;
    int n = 0;
    if (end) {
        *end = '\0';
        n = bc_count(list, "\"state\": \"") - bc_count(list, "\"state\": \"dead\"");
    }
    free(s);
    return n;
}

/*  A fresh center on host 1 and NAGENTS agents of IEUS IEUs each on hosts
    2.., with stores, caches and logs under DIR/NAME-*; CENTER_EXTRA and
    AGENT_EXTRA (NULL-terminated, may be NULL) are more options for each.
    Returns once the center sees all their IEUs (fails the bench after
    60 s). */
static inline void bc_cluster_up(bc_cluster_t *c, int nagents, int ieus, const char *name,
                                 const char *const *center_extra, const char *const *agent_extra)
{
    memset(c, 0, sizeof *c);
    SPM_TEST_ASSERT(nagents <= BC_MAX_AGENTS && nagents + 1 <= bc.net.nhosts);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ieus = ieus;
    char store[160], log[160], sieus[16];
    snprintf(store, sizeof store, "%s/%s-store", bc.dir, name);
    snprintf(log, sizeof log, "%s/%s-center.log", bc.dir, name);
    snprintf(sieus, sizeof sieus, "%d", ieus);
    const char *center[40] = {"center", "--listen", bc.center_ep,  "--store", store,
                              "--keys", bc.keys,    "--log-level", "error"};
    spm_test_args(center, 9, 40, center_extra);
    c->center = bc_start(1, center, NULL, log);
    for (int i = 0; i < nagents; i++) {
        char cache[160], ep[64];
        snprintf(cache, sizeof cache, "%s/%s-cache%d", bc.dir, name, i + 2);
        snprintf(log, sizeof log, "%s/%s-agent%d.log", bc.dir, name, i + 2);
        snprintf(ep, sizeof ep, "tcp://%s.%d:7701", bc.net.subnet, i + 2);
        const char *agent[40] = {"agent",  "--center",    bc.center_ep,  "--keys", bc.keys,
                                 "--ieus", sieus,         "--cache-dir", cache,    "--data-listen",
                                 ep,       "--log-level", "error"};
        spm_test_args(agent, 13, 40, agent_extra);
        c->agents[c->nagents++] = bc_start(i + 2, agent, NULL, log);
    }
    /* Agents join as their IEUs come up, which takes from a fraction of a
       second to a few on 2 cores with 8 agents starting at once: wait for
       them rather than for a fixed time. */
    double end = bc_now() + 60;
    int n = -1;
    while (bc_now() < end && (n = bc_ieus_alive()) < ieus * nagents)
        usleep(200000);
    if (n < ieus * nagents) {
        snprintf(log, sizeof log, "%s/%s-center.log", bc.dir, name);
        char *l = bc_slurp(log);
        SPM_TEST_FAIL("cluster: only %d of %d IEUs joined within 60 s; the center said: %s\n", n,
                      ieus * nagents, l);
    }
}

/*  Stops the center, then the agents, and removes their files. */
static inline void bc_cluster_down(bc_cluster_t *c)
{
    bc_stop(c->center, 30);
    for (int i = 0; i < c->nagents; i++)
        bc_stop(c->agents[i], 30);
    spm_netns_sh(0, "rm -rf %s/%s-*", bc.dir, c->name);
}

#endif
