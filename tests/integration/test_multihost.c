/*  The data plane across hosts: network namespaces made for this test,
    joined by veth links to a bridge in a namespace of its own
    (10.77.0.0/24; nothing outside them is reached). The center runs on
    host 1, agents on hosts 2 to 4 with their data endpoints on port 7701,
    a client on host 5, all over CurveZMQ TCP.

    What a user relies on: results do not depend on where a job ran, and
    block bytes go client to node and node to node, not through the
    center's link; a job survives a whole node dying, and then a second one
    once the first one's blocks have been copied again; node caches smaller
    than a job's live blocks cost no result; neither does a node that
    serves corrupt copies; the report counts no more replica bytes than the
    links carried; a node advertising a data endpoint nobody reaches is
    survived or named; a client that reaches no data agent fails with one
    line naming one, in bounded time.

    Processes of a failed test are left running by Check (it ends the test
    at once): the suite's unchecked teardown kills whatever runs in the
    namespaces (`ip netns pids`) and removes them. A failure prints the end
    of the center's and agents' logs. Skipped, with a message, where
    namespaces cannot be made (not root, no iproute2). */
#include <check.h>

/*  spm_test.h's failures print the cluster's logs first. */
static void dump_logs(void);
#define SPM_TEST_ASSERT(c)                                                                         \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            dump_logs();                                                                           \
            ck_abort_msg("Assertion '%s' failed", #c);                                             \
        }                                                                                          \
    } while (0)
#define SPM_TEST_FAIL(...)                                                                         \
    do {                                                                                           \
        dump_logs();                                                                               \
        ck_abort_msg(__VA_ARGS__);                                                                 \
    } while (0)

#include "tests/check_main.h"
#include "tests/netns.h"
#include "tests/spm_test.h"

#include <stdarg.h>

/*  As ck_assert_msg, printing the cluster's logs first. */
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c))                                                                                  \
            SPM_TEST_FAIL(__VA_ARGS__);                                                            \
    } while (0)

#define NHOSTS 5                            /* hosts 1..NHOSTS; namespace 0 is the bridge */
#define CENTER "tcp://10.77.0.1:7700"       /* the center, on host 1 */
#define UNREACHABLE "tcp://10.77.0.99:7701" /* an address on the subnet nobody has */

static spm_netns_t net; /* hosts 1..NHOSTS at 10.77.0.h (tests/netns.h) */
static char dir[64];    /* scratch directory of this run */
static char keys[128];  /* CurveZMQ keys of the center, agents and clients */
static int have_net;    /* this test's namespaces exist */

/*  A process of the cluster, on a host. */
typedef struct {
    spm_test_proc_t p;
    int host;         /* its host (namespace) */
    const char *what; /* "center", "agent" or "client job" */
    int live;         /* started and not finished */
} node_proc_t;

static node_proc_t procs[8]; /* this test's cluster */
static int nprocs;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* ------------------------------------------------------------ the network */

/*  Bytes received plus sent on HOST's link so far. */
static unsigned long long link_bytes(int host)
{
    unsigned long long rx = 0, tx = 0;
    CHECK(spm_netns_bytes(&net, host, &rx, &tx) == 0, "cannot read host %d's link counters", host);
    return rx + tx;
}

/*  Bytes HOST's link has sent so far. */
static unsigned long long link_sent(int host)
{
    unsigned long long rx = 0, tx = 0;
    CHECK(spm_netns_bytes(&net, host, &rx, &tx) == 0, "cannot read host %d's link counters", host);
    return tx;
}

/* -------------------------------------------------------------- fixtures */

static void suite_setup(void)
{
    spm_netns_init(&net, "spmh", "10.77.0", NHOSTS);
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
}

static void suite_teardown(void)
{
    spm_netns_down(&net);
    sh("rm -rf %s", dir);
}

static void setup(void)
{
    sh("rm -rf %s/*", dir);
    nprocs = 0;
    /* unshaped links: these tests are about what crosses them, not when */
    have_net = spm_netns_up(&net, 0) == 0; /* removes what a failed test before left */
    if (!have_net)
        return;
    snprintf(keys, sizeof keys, "%s/keys", dir);
    const char *names[] = {"center", "agent", "client"};
    for (int i = 0; i < 3; i++) {
        const char *kg[] = {"keygen", "--keys", keys, "--name", names[i], "--authorize", NULL};
        ck_assert_int_eq(spm_test_run(kg, 10, NULL, NULL), 0);
    }
}

/*  Waits up to TIMEOUT_S for procs[I] to end; returns its exit status
    and sets OUT and ERR as spm_test_finish does. */
static int finish(int i, int timeout_s, char **out, char **err)
{
    procs[i].live = 0;
    return spm_test_finish(&procs[i].p, timeout_s, out, err);
}

/*  Stops the cluster (SIGKILL: how it stops is not what these tests
    test) and removes the namespaces. Runs when the test passed. */
static void teardown(void)
{
    for (int i = 0; i < nprocs; i++) {
        if (!procs[i].live)
            continue;
        pid_t kids[16];
        kill(procs[i].p.pid, SIGSTOP);
        int n = spm_test_children(procs[i].p.pid, kids, 16);
        for (int k = 0; k < n; k++)
            kill(kids[k], SIGKILL);
        kill(procs[i].p.pid, SIGKILL);
        finish(i, 10, NULL, NULL);
    }
    if (have_net)
        spm_netns_down(&net);
}

/*  Prints the end of the stderr of every process of the cluster still
    running, and removes its output files. */
static void dump_logs(void)
{
    for (int i = 0; i < nprocs; i++) {
        if (!procs[i].live)
            continue;
        procs[i].live = 0;
        int fd = open(procs[i].p.err_path, O_RDONLY);
        char *e = fd >= 0 ? spm_test_slurp(fd) : NULL;
        if (fd >= 0)
            close(fd);
        size_t n = e ? strlen(e) : 0, keep = 6000;
        printf("--- %s on host %d (pid %d), %s of its stderr:\n%s\n", procs[i].what, procs[i].host,
               (int)procs[i].p.pid, n > keep ? "the end" : "all",
               e ? e + (n > keep ? n - keep : 0) : "(unreadable)");
        free(e);
        unlink(procs[i].p.out_path);
        unlink(procs[i].p.err_path);
    }
    fflush(stdout);
}

/* ------------------------------------------------------------ the cluster */

/*  Starts `ip netns exec HOST spm ARGS...`. */
static spm_test_proc_t on_host(int host, const char *const *args)
{
    return spm_test_start_in(spm_netns_host(&net, host), args);
}

/*  Runs `spm ARGS...` on HOST to the end within TIMEOUT_S; returns its
    exit status, *OUT and *ERR (malloc'd). */
static int run_on(int host, const char *const *args, int timeout_s, char **out, char **err)
{
    spm_test_proc_t p = on_host(host, args);
    return spm_test_finish(&p, timeout_s, out, err);
}

static int keep_proc(int host, const char *what, const char *const *args)
{
    CHECK(nprocs < 8, "too many processes");
    procs[nprocs] = (node_proc_t){on_host(host, args), host, what, 1};
    return nprocs++;
}

/*  Starts the center on host 1 with its store in the scratch directory,
    deaths noticed after 1.5 s, and the flags EXTRA (may be NULL). */
static void center_up(const char *const *extra)
{
    static char store[128];
    snprintf(store, sizeof store, "%s/store", dir);
    const char *argv[32] = {"center", "--listen",  CENTER, "--store",     store, "--keys",
                            keys,     "--dead-ms", "1500", "--log-level", "info"};
    spm_test_args(argv, 11, 32, extra);
    keep_proc(1, "center", argv);
    usleep(200000);
}

/*  The data endpoint of the agent on HOST (static buffer). */
static const char *data_ep(int host)
{
    static char ep[4][48];
    static int next;
    char *p = ep[next++ % 4];
    snprintf(p, 48, "tcp://10.77.0.%d:7701", host);
    return p;
}

/*  The cache directory of the agent on HOST (static buffer). */
static const char *cache_dir(int host)
{
    static char d[4][128];
    static int next;
    char *p = d[next++ % 4];
    snprintf(p, 128, "%s/cache%d", dir, host);
    return p;
}

/*  Starts an agent of IEUS IEUs on HOST, serving its blocks on
    data_ep(HOST), with the flags EXTRA (may be NULL). Returns its index
    in procs. */
static int agent_up(int host, const char *ieus, const char *const *extra)
{
    const char *argv[32] = {
        "agent",       "--center",    CENTER,        "--keys",        keys,
        "--ieus",      ieus,          "--cache-dir", cache_dir(host), "--data-listen",
        data_ep(host), "--log-level", "info"};
    spm_test_args(argv, 13, 32, extra);
    return keep_proc(host, "agent", argv);
}

/*  The center's `spm status --json` asked from host 1 (malloc'd), or NULL
    when it did not answer. */
static char *status(void)
{
    const char *argv[] = {"status", "--center", CENTER, "--keys", keys, "--json", NULL};
    char *out = NULL, *err = NULL;
    int rc = run_on(1, argv, 20, &out, &err);
    free(err);
    if (rc != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; p && (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/*  The number after "KEY": in the "blocks" object of status S; -1 when
    absent. */
static double blocks_num(const char *s, const char *key)
{
    const char *b = s ? strstr(s, "\"blocks\": {") : NULL;
    return b ? spm_test_json_num(b, key) : -1;
}

/*  Copies the object of the node whose data endpoint is EP in status S
    into BUF; returns BUF, or NULL when S lists no such node. */
static const char *node_of(const char *s, const char *ep, char *buf, size_t size)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"endpoint\": \"%s\"", ep);
    const char *p = s ? strstr(s, pat) : NULL, *b = p, *e = p ? strchr(p, '}') : NULL;
    if (!p || !e)
        return NULL;
    while (b > s && *b != '{')
        b--;
    size_t n = (size_t)(e - b + 1) < size ? (size_t)(e - b + 1) : size - 1;
    memcpy(buf, b, n);
    buf[n] = '\0';
    return buf;
}

/*  The index of the node whose data endpoint is EP in status S, or -1. */
static int node_index(const char *s, const char *ep)
{
    char buf[512];
    const char *n = node_of(s, ep, buf, sizeof buf);
    return n ? (int)spm_test_json_num(n, "node") : -1;
}

/*  Whether status S shows node INDEX up (1), down (0), or not at all (-1). */
static int node_up(const char *s, int index)
{
    char pat[48];
    snprintf(pat, sizeof pat, "{\"node\": %d, \"up\": ", index);
    const char *p = s ? strstr(s, pat) : NULL;
    return p ? strncmp(p + strlen(pat), "true", 4) == 0 : -1;
}

/*  Waits until AGENTS agents and IEUS idle IEUs have joined. */
static void await_cluster(int agents, int ieus)
{
    for (int i = 0; i < 100; i++) {
        char *s = status();
        int ok = s && spm_test_json_num(s, "agents") >= agents &&
                 count(s, "\"state\": \"idle\"") >= ieus;
        free(s);
        if (ok)
            return;
        usleep(100000);
    }
    SPM_TEST_FAIL("the cluster did not come up: %d agents and %d IEUs expected", agents, ieus);
}

/*  Kills the node of procs[I] at once, as a power cut would: its agent
    and IEUs by SIGKILL, its cache directory removed. */
static void kill_node(int i)
{
    pid_t a = procs[i].p.pid, kids[16];
    kill(a, SIGSTOP); /* it restarts no IEU now */
    int n = spm_test_children(a, kids, 16);
    CHECK(n > 0, "the agent on host %d has no IEUs to kill", procs[i].host);
    for (int k = 0; k < n; k++)
        kill(kids[k], SIGKILL);
    kill(a, SIGKILL);
    finish(i, 10, NULL, NULL);
    sh("rm -rf %s", cache_dir(procs[i].host));
}

/* ------------------------------------------------------------- the jobs */

/*  The checksum line of synthetic's text report OUT (malloc'd copy), or
    NULL. The JSON report does not carry it. */
static char *checksum_of(const char *out)
{
    const char *line = out ? strstr(out, "checksum of the blocks read: ") : NULL;
    if (!line)
        return NULL;
    return strndup(line, strcspn(line, "\n"));
}

/*  The number after TEXT in a text report; 0 when absent. */
static unsigned long long text_num(const char *out, const char *text)
{
    const char *p = out ? strstr(out, text) : NULL;
    return p ? strtoull(p + strlen(text), NULL, 10) : 0;
}

/*  The checksum line the synthetic job of ARGS (NULL-terminated) gives on
    an embedded VM in the root namespace (malloc'd). */
static char *reference(const char *const *args)
{
    const char *argv[32] = {"run", "synthetic", "--work", "fixed:0", "--ieus", "2"};
    spm_test_args(argv, 6, 32, args);
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    CHECK(rc == 0, "the reference run failed (%d): %s", rc, err);
    char *sum = checksum_of(out);
    CHECK(sum != NULL, "no checksum in the reference report: %s", out);
    free(out);
    free(err);
    return sum;
}

/*  Starts the synthetic job of ARGS with WORK (SIs sleep: the cores are
    left to the VM) on the center, from HOST. Its text report goes to
    stdout. Returns its index in procs. */
static int job_start(int host, const char *work, const char *const *args)
{
    const char *argv[32] = {"run", "synthetic", "--center", CENTER,   "--keys",
                            keys,  "--work",    work,       "--sleep"};
    spm_test_args(argv, 9, 32, args);
    return keep_proc(host, "client job", argv);
}

/*  Waits for the job procs[J] (up to TIMEOUT_S), checks that it succeeded
    with the checksum WANT, and returns its text report (malloc'd). */
static char *job_finish(int j, int timeout_s, const char *want)
{
    char *out, *err;
    int rc = finish(j, timeout_s, &out, &err);
    CHECK(rc == 0, "the job failed (exit %d): %s\n%s", rc, err, out);
    char *got = checksum_of(out);
    CHECK(got && strcmp(got, want) == 0, "the result differs from the reference's (%s):\n%s", want,
          out);
    free(got);
    free(err);
    return out;
}

/*  1 (after saying so) where this machine cannot make namespaces. */
static int skipped(void)
{
    if (have_net)
        return 0;
    printf("multihost: skipped: cannot create network namespaces here (needs root and "
           "iproute2)%s%s\n",
           net.why[0] ? ": " : "", net.why);
    fflush(stdout);
    return 1;
}

/*  Starts the center and agents of IEUS IEUs on hosts 2 to 4 with the
    flags EXTRA (may be NULL), and waits until all have joined. Returns the
    index of the first agent in procs (the others follow). */
static int cluster_up(int ieus, const char *const *extra)
{
    char n[16];
    snprintf(n, sizeof n, "%d", ieus);
    center_up(NULL);
    int first = agent_up(2, n, extra);
    agent_up(3, n, extra);
    agent_up(4, n, extra);
    await_cluster(3, 3 * ieus);
    return first;
}

/* ---------------------------------------------- 1. placement and links */

/*  What one run of a client on host 5 moved. */
typedef struct {
    unsigned long long center_link; /* bytes on the center's link, both ways */
    unsigned long long client_link; /* bytes on the client's link, both ways */
    unsigned long long center_io;   /* the report's center_in + center_out */
} traffic_t;

/*  Runs `spm ARGS... --center CENTER --keys KEYS --json` on host 5 and
    returns what it moved, after printing it. */
static traffic_t from_client(const char *what, const char *const *args)
{
    const char *argv[32];
    int n = spm_test_args(argv, 0, 32, args);
    const char *remote[] = {"--center", CENTER, "--keys", keys, "--json", NULL};
    spm_test_args(argv, n, 32, remote);
    unsigned long long c0 = link_bytes(1), k0 = link_bytes(5);
    char *out, *err;
    int rc = run_on(5, argv, 120, &out, &err);
    unsigned long long c1 = link_bytes(1), k1 = link_bytes(5);
    CHECK(rc == 0, "%s from host 5 failed (exit %d): %s", what, rc, err);
    double in = spm_test_json_num(out, "center_in"), o = spm_test_json_num(out, "center_out");
    CHECK(in >= 0 && o >= 0, "%s: the report has no center_in or center_out: %s", what, out);
    traffic_t t = {c1 - c0, k1 - k0, (unsigned long long)(in + o)};
    printf("multihost: %s from host 5: center's link %llu bytes, client's link %llu bytes "
           "(%.2f%%); block bytes through the center's socket %llu (report)\n",
           what, t.center_link, t.client_link, 100.0 * t.center_link / t.client_link, t.center_io);
    fflush(stdout);
    free(out);
    free(err);
    return t;
}

/*  Whether files A and B are byte-identical. */
static int same_file(const char *a, const char *b)
{
    return sh("cmp -s %s %s", a, b) == 0;
}

/*  DIR/NAME, in a ring of buffers enough for the paths a test holds at
    once. */
static const char *path(const char *name)
{
    static char buf[64][128];
    static int next;
    char *p = buf[next++ % 64];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

/*  Runs `spm ARGS... --ieus 2 --quiet` here, on an embedded VM. */
static void embedded(const char *what, const char *const *args)
{
    const char *argv[32];
    int n = spm_test_args(argv, 0, 32, args);
    const char *local[] = {"--ieus", "2", "--quiet", NULL};
    spm_test_args(argv, n, 32, local);
    char *err;
    int rc = spm_test_run(argv, 120, NULL, &err);
    CHECK(rc == 0, "%s on an embedded VM failed (exit %d): %s", what, rc, err);
    free(err);
}

/*  Writes DIR/D.mtx: a dense 300 x 300 matrix (an array file). */
static void gen_dense(void)
{
    const char *argv[] = {"gen",    "matrix", "--rows", "300",         "--format", "array",
                          "--seed", "8",      "-o",     path("D.mtx"), NULL};
    CHECK(spm_test_run(argv, 60, NULL, NULL) == 0, "spm gen matrix failed");
}

START_TEST(jobs_from_a_fifth_host_match_and_bypass_the_center)
{
    if (skipped())
        return;
    cluster_up(2, NULL);
    const char *gs[] = {"gen",    "matrix", "--rows", "1500",        "--density", "0.01",
                        "--seed", "7",      "-o",     path("S.mtx"), NULL};
    const char *gt[] = {"gen",
                        "transactions",
                        "--transactions",
                        "3000",
                        "--avg-size",
                        "10",
                        "--avg-pattern",
                        "4",
                        "--items",
                        "300",
                        "--seed",
                        "3",
                        "-o",
                        path("T.dat"),
                        NULL};
    CHECK(spm_test_run(gs, 60, NULL, NULL) == 0, "spm gen matrix failed");
    CHECK(spm_test_run(gt, 60, NULL, NULL) == 0, "spm gen transactions failed");
    gen_dense();

    /* the same commands here, on an embedded VM: the reference */
    const char *ms[] = {"matmul",       path("S.mtx"), path("S.mtx"), "-o",
                        path("CS.ref"), "--block",     "256",         NULL};
    const char *md[] = {"matmul",       path("D.mtx"), path("D.mtx"), "-o",
                        path("CD.ref"), "--block",     "100",         NULL};
    const char *mi[] = {"mine",        path("T.dat"), "--min-support", "1%", "-o",
                        path("R.ref"), "--itemsets",  path("I.ref"),   NULL};
    embedded("sparse matmul", ms);
    embedded("dense matmul", md);
    embedded("mine", mi);

    ms[4] = path("CS.mtx");
    md[4] = path("CD.mtx");
    mi[5] = path("R.txt");
    mi[7] = path("I.txt");
    traffic_t t[3] = {from_client("sparse matmul (1500 x 1500, 1%)", ms),
                      from_client("dense matmul (300 x 300)", md),
                      from_client("mine (3000 transactions)", mi)};
    CHECK(same_file(path("CS.mtx"), path("CS.ref")), "sparse C differs from the embedded VM's");
    CHECK(same_file(path("CD.mtx"), path("CD.ref")), "dense C differs from the embedded VM's");
    CHECK(same_file(path("R.txt"), path("R.ref")), "the rules differ from the embedded VM's");
    CHECK(same_file(path("I.txt"), path("I.ref")), "the itemsets differ from the embedded VM's");

    /* Blocks went between the client and the nodes: the center's link
       carried only the control messages of each matmul job. */
    unsigned long long center = 0, client = 0;
    const char *names[] = {"sparse matmul", "dense matmul", "mine"};
    for (int i = 0; i < 3; i++) {
        center += t[i].center_link;
        client += t[i].client_link;
        CHECK(t[i].center_io * 50 < t[i].client_link,
              "%s: %llu block bytes through the center's socket, of %llu on the client's link",
              names[i], t[i].center_io, t[i].client_link);
        CHECK(i == 2 || t[i].center_link * 20 < t[i].client_link,
              "%s: the center's link carried %llu bytes, the client's %llu", names[i],
              t[i].center_link, t[i].client_link);
    }
    printf("multihost: the three jobs: center's link %llu bytes, client's link %llu bytes "
           "(%.2f%%)\n",
           center, client, 100.0 * center / client);
    fflush(stdout);
    CHECK(center * 20 < client, "the center's link carried %llu bytes, the client's %llu", center,
          client);
}
END_TEST

/* ------------------------------------------------- 2. nodes that die */

/*  Waits up to TIMEOUT_S, while JOB runs, for status to show node INDEX
    down and no block short of replicas; returns the last status taken
    while JOB ran (malloc'd). */
static char *await_copies(pid_t job, int index, int timeout_s)
{
    char *s = NULL;
    time_t end = time(NULL) + timeout_s;
    while (time(NULL) <= end) {
        char *now = status();
        if (!spm_test_running(job)) {
            free(now);
            break;
        }
        free(s);
        s = now;
        if (node_up(s, index) == 0 && blocks_num(s, "short") == 0)
            break;
        usleep(200000);
    }
    return s;
}

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

START_TEST(job_survives_two_nodes_killed_one_after_another)
{
    if (skipped())
        return;
    const char *args[] = {"--sis", "400", "--sfs", "4", "--bytes", "32768", "--reads", "2", NULL};
    char *want = reference(args);
    int a = cluster_up(2, NULL);
    /* 24 s of SIs over 6 IEUs, then 4, then 2 */
    int job = job_start(1, "fixed:60ms", args);
    char *s = NULL;
    for (int i = 0; i < 150 && blocks_num(s, "versions") < 60; i++) {
        usleep(100000);
        free(s);
        s = status();
    }
    int first = node_index(s, data_ep(2)), second = node_index(s, data_ep(3));
    CHECK(blocks_num(s, "versions") >= 60, "the first stage kept no blocks on the nodes: %s", s);
    CHECK(first >= 0 && second >= 0, "status does not list hosts 2 and 3: %s", s);
    free(s);
    CHECK(spm_test_running(procs[job].p.pid), "the job ended before a node could be killed");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill_node(a); /* host 2 */
    s = await_copies(procs[job].p.pid, first, 20);
    printf("multihost: host 2 killed; %.1f s later: %s, %g blocks short of replicas, %g lost, "
           "%g copies ordered, %g done\n",
           since(&t0), node_up(s, first) == 0 ? "down" : "not down", blocks_num(s, "short"),
           blocks_num(s, "lost"), blocks_num(s, "copies"), blocks_num(s, "copies_done"));
    fflush(stdout);
    CHECK(spm_test_running(procs[job].p.pid),
          "the job ended before the blocks host 2 kept were copied again; while it ran: host 2 "
          "%s, %g blocks short, %g copies ordered, %g done",
          node_up(s, first) == 0 ? "down" : "not down", blocks_num(s, "short"),
          blocks_num(s, "copies"), blocks_num(s, "copies_done"));
    CHECK(node_up(s, first) == 0, "the center did not notice host 2's death in 20 s: %s", s);
    CHECK(blocks_num(s, "short") == 0,
          "the blocks host 2 kept were not copied again within 20 s (%g short, %g copies "
          "ordered, %g done)",
          blocks_num(s, "short"), blocks_num(s, "copies"), blocks_num(s, "copies_done"));
    free(s);
    kill_node(a + 1); /* host 3 */
    char *out = job_finish(job, 120, want);
    s = status();
    unsigned long long reissued = text_num(out, "committed, ");
    printf("multihost: host 3 killed too; the job: %llu SIs re-issued, %llu blocks copied again; "
           "the center: %g copies done, %g versions lost\n",
           reissued, text_num(out, "blocks copied again after nodes died: "),
           blocks_num(s, "copies_done"), blocks_num(s, "lost"));
    fflush(stdout);
    CHECK(node_up(s, second) == 0, "the center did not notice host 3's death: %s", s);
    CHECK(reissued > 0 || blocks_num(s, "copies_done") > 0,
          "no SI re-issued and no copy made: %s\n%s", out, s);
    CHECK(blocks_num(s, "lost") == 0, "blocks were lost: %s", s);
    free(s);
    free(out);
    free(want);
}
END_TEST

/* ---------------------------------------------- 3. small node caches */

/*  The largest cache_bytes of any node in status S. */
static double max_cache_bytes(const char *s)
{
    double max = 0;
    for (const char *p = s; p && (p = strstr(p, "\"cache_bytes\": ")); p++) {
        double v = spm_test_json_num(p, "cache_bytes");
        max = v > max ? v : max;
    }
    return max;
}

START_TEST(node_caches_smaller_than_the_live_blocks)
{
    if (skipped())
        return;
    /* each of 6 stages writes 40 blocks of 256 KiB: 10 MiB, twice over
       with its replicas, for three caches of 1 MiB; 2 s of SIs, so that
       the agents' reports (every second) show their caches at work */
    const char *args[] = {"--sis", "240", "--sfs", "6", "--bytes", "262144", "--reads", "2", NULL};
    char *want = reference(args);
    const char *small[] = {"--cache-mb", "1", NULL};
    cluster_up(2, small);
    int job = job_start(1, "fixed:50ms", args);
    double most = 0;
    while (spm_test_running(procs[job].p.pid)) {
        char *s = status();
        double m = max_cache_bytes(s);
        most = m > most ? m : most;
        free(s);
        usleep(100000);
    }
    char *out = job_finish(job, 120, want);
    printf("multihost: caches of 1 MiB: the fullest held %.0f bytes\n", most);
    fflush(stdout);
    CHECK(most > 0, "status never showed a node cache holding blocks");
    CHECK(most <= 1048576, "a node cache held %.0f bytes, over its budget of 1 MiB", most);
    free(out);
    free(want);
}
END_TEST

/* ---------------------------------------------- 4. corrupt copies */

/*  Flips 16 bytes in every page of the LMDB file PATH made only of
    synthetic payload (consecutive bytes differ by 7, or 8 where the
    position crosses 256: see payload_byte in programs/synthetic): bytes of
    blocks, never LMDB's own pages, which no page of payload resembles.
    Returns the pages changed. The agent maps the file shared, so what it
    serves changes with it. */
static int corrupt_payload(const char *path)
{
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return 0;
    unsigned char p[4096];
    int n = 0;
    for (off_t off = 2 * sizeof p; pread(fd, p, sizeof p, off) == (ssize_t)sizeof p;
         off += sizeof p) {
        int payload = 1;
        for (size_t i = 0; payload && i + 1 < sizeof p; i++) {
            unsigned char d = (unsigned char)(p[i + 1] - p[i]);
            payload = d == 7 || d == 8;
        }
        if (!payload)
            continue;
        for (int i = 2000; i < 2016; i++)
            p[i] ^= 0x5a;
        n += pwrite(fd, p + 2000, 16, off + 2000) == 16;
    }
    close(fd);
    return n;
}

START_TEST(corrupt_copies_are_fetched_elsewhere)
{
    if (skipped())
        return;
    const char *args[] = {"--sis", "400", "--sfs", "4", "--bytes", "32768", "--reads", "3", NULL};
    char *want = reference(args);
    center_up(NULL);
    agent_up(2, "2", NULL);
    agent_up(3, "2", NULL);
    /* Host 4 keeps replicas and serves them, but runs no SI: its IEU is
       stopped before the job. What is tested is a node serving corrupt
       copies to others; an IEU reads its own node's cache without
       checking checksums (a corrupt block there fails its SI: not
       covered here). */
    int d = agent_up(4, "1", NULL);
    pid_t ieu = 0;
    for (int i = 0; i < 200 && spm_test_children(procs[d].p.pid, &ieu, 1) < 1; i++)
        usleep(10000);
    CHECK(ieu > 0, "the agent on host 4 started no IEU");
    kill(ieu, SIGSTOP);
    char pat[96], node[512];
    for (int i = 0;; i++) {
        char *s = status();
        const char *n = node_of(s, data_ep(4), node, sizeof node);
        /* host 4's IEU never joined, or the center gave it up for dead */
        snprintf(pat, sizeof pat, "\"node\": %d, \"slots\": 1, \"state\": \"idle\"",
                 n ? (int)spm_test_json_num(n, "node") : -1);
        int ready = n && strstr(n, "\"up\": true") && count(s, "\"state\": \"idle\"") == 4 &&
                    !strstr(s, pat);
        CHECK(ready || i < 100, "the cluster did not come up with host 4 serving blocks only: %s",
              s);
        free(s);
        if (ready)
            break;
        usleep(100000);
    }
    int job = job_start(1, "fixed:20ms", args);
    int pages = 0;
    while (spm_test_running(procs[job].p.pid)) {
        pages += corrupt_payload(path("cache4/data.mdb"));
        usleep(50000);
    }
    char *out = job_finish(job, 120, want);
    char *s = status();
    unsigned long long corrupt = text_num(out, "fetched again elsewhere: ");
    /* Either side may find a corrupt copy first: the node serving it checks
       its checksum before it sends (and leaves service, empties its cache
       and joins again), the node fetching it checks what arrives (and
       fetches it again elsewhere, which the report counts). */
    int fd = open(procs[d].p.err_path, O_RDONLY);
    char *log = fd >= 0 ? spm_test_slurp(fd) : NULL;
    if (fd >= 0)
        close(fd);
    int left = count(log, "does not match its checksum: the cache is corrupt; the node leaves "
                          "service");
    printf("multihost: %d pages of block payload corrupted in host 4's cache; the job met %llu "
           "corrupt copies, the center heard of %g, host 4 left service %d times\n",
           pages, corrupt, blocks_num(s, "corrupt"), left);
    fflush(stdout);
    CHECK(pages > 0, "no block payload found in host 4's cache to corrupt");
    CHECK(corrupt > 0 || left > 0,
          "neither the report nor host 4's agent found a corrupt copy: %s\nstatus: %s", out, s);
    CHECK(corrupt == 0 || blocks_num(s, "corrupt") > 0,
          "the report counts corrupt copies the center never heard of: %s", s);
    free(log);
    free(s);
    free(out);
    free(want);
}
END_TEST

/* ------------------------------------------- the report's replica bytes */

START_TEST(report_counts_the_replica_bytes_the_links_carried)
{
    if (skipped())
        return;
    /* no speculative copies: each SI runs once */
    const char *nospec[] = {"--no-speculate", NULL};
    center_up(nospec);
    for (int h = 2; h <= 4; h++)
        agent_up(h, "2", NULL);
    await_cluster(3, 6);
    /* 80 outputs of 256 KiB (and 16 bytes of header), each kept by a
       second node (--replicas 2): at least that much left the nodes, and
       whatever the report counts went over their links */
    const char *argv[] = {"run",     "synthetic", "--center", CENTER,    "--keys",  keys,
                          "--sis",   "80",        "--sfs",    "4",       "--bytes", "262144",
                          "--reads", "2",         "--work",   "fixed:0", "--json",  NULL};
    unsigned long long before = 0, after = 0;
    for (int h = 2; h <= 4; h++)
        before += link_sent(h);
    char *out, *err;
    int rc = run_on(1, argv, 60, &out, &err);
    for (int h = 2; h <= 4; h++)
        after += link_sent(h);
    CHECK(rc == 0, "the job failed (exit %d): %s", rc, err);
    double pushed = spm_test_json_num(out, "bytes_pushed"), l2 = spm_test_json_num(out, "bytes_l2");
    unsigned long long sent = after - before, outputs = 80ull * (262144 + 16);
    printf("multihost: the report says %.0f bytes of replicas and %.0f fetched node to node; the "
           "agents sent %llu bytes on their links; the outputs were %llu bytes\n",
           pushed, l2, sent, outputs);
    fflush(stdout);
    CHECK(pushed >= outputs, "the report counts %.0f bytes of replicas for %llu bytes of outputs",
          pushed, outputs);
    CHECK(pushed + l2 <= sent,
          "the report counts %.0f bytes node to node, the agents sent %llu bytes in all",
          pushed + l2, sent);
    free(out);
    free(err);
}
END_TEST

/* ---------------------------------------------------- 5. bad input */

/*  Whether ERR is one line naming a data endpoint: ENDPOINT, or with
    ENDPOINT NULL, any agent's. */
static int names_endpoint(const char *err, const char *endpoint)
{
    if (spm_test_lines(err) != 1)
        return 0;
    if (endpoint)
        return strstr(err, endpoint + strlen("tcp://")) != NULL;
    for (int h = 2; h <= 4; h++)
        if (strstr(err, data_ep(h) + strlen("tcp://")))
            return 1;
    return 0;
}

START_TEST(unreachable_data_endpoint_is_survived_or_named)
{
    if (skipped())
        return;
    const char *args[] = {"--sis", "120", "--sfs", "4", "--bytes", "32768", "--reads", "2", NULL};
    char *want = reference(args);
    center_up(NULL);
    agent_up(2, "1", NULL);
    agent_up(3, "1", NULL);
    const char *wrong[] = {"--data-advertise", UNREACHABLE, NULL};
    agent_up(4, "1", wrong);
    await_cluster(3, 3);

    /* a data job: its IEUs push to and fetch from host 4 */
    time_t t0 = time(NULL);
    int job = job_start(1, "fixed:0", args);
    char *out, *err;
    int rc = finish(job, 120, &out, &err);
    char *got = checksum_of(out);
    printf("multihost: synthetic with host 4 advertising %s: exit %d after %ld s: %s%s\n",
           UNREACHABLE, rc, (long)(time(NULL) - t0), got ? got : "", err);
    fflush(stdout);
    CHECK(rc == 0 ? got && strcmp(got, want) == 0 : names_endpoint(err, UNREACHABLE),
          "exit %d: neither the reference's result (%s) nor one line naming %s:\n%s%s", rc, want,
          UNREACHABLE, out, err);
    free(got);
    free(out);
    free(err);

    /* a client staging its inputs on the nodes, host 4 among them */
    gen_dense();
    const char *ref[] = {"matmul",      path("D.mtx"), path("D.mtx"), "-o",
                         path("C.ref"), "--block",     "100",         NULL};
    embedded("dense matmul", ref);
    const char *mm[] = {"matmul",  path("D.mtx"), path("D.mtx"), "-o",   path("C.mtx"),
                        "--block", "100",         "--center",    CENTER, "--keys",
                        keys,      "--quiet",     NULL};
    t0 = time(NULL);
    rc = run_on(5, mm, 120, NULL, &err);
    printf("multihost: matmul from host 5 with host 4 advertising %s: exit %d after %ld s%s%s\n",
           UNREACHABLE, rc, (long)(time(NULL) - t0), rc ? ": " : "", err);
    fflush(stdout);
    CHECK(rc == 0 ? same_file(path("C.mtx"), path("C.ref")) : names_endpoint(err, UNREACHABLE),
          "exit %d: neither the reference's C nor one line naming %s:\n%s", rc, UNREACHABLE, err);
    free(err);
    free(want);
}
END_TEST

START_TEST(client_that_reaches_no_data_agent_fails_with_one_line)
{
    if (skipped())
        return;
    cluster_up(1, NULL);
    /* Host 5 reaches the center, but what it sends to hosts 2 to 4 goes
       to hardware addresses nobody has: lost without an answer, as behind
       a firewall that drops. */
    for (int h = 2; h <= 4; h++)
        CHECK(sh("ip -n %s neigh replace 10.77.0.%d lladdr 02:00:00:00:00:0%d dev eth0 nud "
                 "permanent",
                 spm_netns_host(&net, 5), h, h) == 0,
              "cannot cut host 5 from host %d", h);
    const char *st[] = {"status", "--center", CENTER, "--keys", keys, NULL};
    CHECK(run_on(5, st, 20, NULL, NULL) == 0, "host 5 cannot reach the center");
    gen_dense();
    const char *mm[] = {"matmul",  path("D.mtx"), path("D.mtx"), "-o",   path("C.mtx"),
                        "--block", "100",         "--center",    CENTER, "--keys",
                        keys,      "--quiet",     NULL};
    time_t t0 = time(NULL);
    char *err;
    int rc = run_on(5, mm, 90, NULL, &err);
    printf("multihost: matmul from a host cut from every data agent: exit %d after %ld s: %s", rc,
           (long)(time(NULL) - t0), err);
    fflush(stdout);
    CHECK(rc != 0, "matmul succeeded from a host that reaches no data agent");
    CHECK(names_endpoint(err, NULL), "not one line naming a data agent's endpoint:\n%s", err);
    CHECK(access(path("C.mtx"), F_OK) != 0, "a failed matmul left C.mtx");
    free(err);
}
END_TEST

static Suite *multihost_suite(void)
{
    Suite *s = suite_create("multihost");
    const spm_test_case_t c = {.timeout_s = 150,
                               .setup = setup,
                               .teardown = teardown,
                               .unchecked_setup = suite_setup,
                               .unchecked_teardown = suite_teardown};
    SPM_TEST_ADD(s, &c, jobs_from_a_fifth_host_match_and_bypass_the_center);
    SPM_TEST_ADD(s, &c, job_survives_two_nodes_killed_one_after_another);
    SPM_TEST_ADD(s, &c, node_caches_smaller_than_the_live_blocks);
    SPM_TEST_ADD(s, &c, corrupt_copies_are_fetched_elsewhere);
    SPM_TEST_ADD(s, &c, report_counts_the_replica_bytes_the_links_carried);
    SPM_TEST_ADD(s, &c, unreachable_data_endpoint_is_survived_or_named);
    SPM_TEST_ADD(s, &c, client_that_reaches_no_data_agent_fails_with_one_line);
    return s;
}

SPM_TEST_MAIN(multihost_suite)
