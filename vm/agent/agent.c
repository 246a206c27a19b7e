/*  =========================================================================
    agent - `spm agent`: one per node; starts and supervises the node's IEUs

    The agent registers its node with the center, empties the node cache
    (a cache left by an earlier run may hold blocks of ids the center has
    reused), starts N `spm ieu` processes (at once, while the center
    welcomes the node: their node index reaches them through a pipe),
    tells the center at once when one dies (so its SIs are re-issued
    without waiting for heartbeats) and restarts it with a growing delay,
    up to a cap of deaths in a row within a second of starting (a crash
    loop). SIGTERM or SIGINT, a SHUTDOWN from the center, or a center
    silent too long stop the IEUs and the agent.
    =========================================================================
*/
#include "datacache/blockclient.h"
#include "datacache/dataagent.h"
#include "datacache/nodecache.h"
#include "runtime/registry.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/heap.h"
#include "base/log.h"
#include "base/proc.h"
#include "transport/security.h"
#include "transport/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RESTARTS 10
/* An IEU that ran this long before it died was not crash-looping: its
   restart count (and delay) starts again from zero. */
#define HEALTHY_US 1000000

typedef struct {
    pid_t pid;           /* 0 when not running */
    uint32_t restarts;   /* since the last death after a healthy run */
    uint64_t started_at; /* monotonic us when it was started */
    uint64_t restart_at; /* monotonic us when to start it again (0: not pending) */
} child_t;

typedef struct {
    const char *center, *cache_dir;
    const char *data_listen, *data_advertise; /* the data agent's endpoints */
    const char *keys;                         /* key directory given with --keys, or NULL */
    int insecure;                             /* plain TCP allowed */
    int store_reads;                          /* IEUs may read an ipc:// center's store directly */
    int local_files;                          /* IEUs may read clients' files by path */
    spm_security_t *security;
    long slots, prefetch;
    long cache_mb; /* node cache budget, MiB (0: none) */
    long heap_mb;  /* memory each IEU thread touches at start (base/heap.h) */
    long drain_s;  /* how long running SIs may take to finish on SIGTERM */
    const char *log_level;
    uint32_t node;
    int node_fd; /* IEUs started before the WELCOME read the node from it; else -1 */
    child_t *kids;
    long nkids;
} agent_t;

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static pid_t start_ieu(agent_t *a)
{
    char node[16], slots[16], prefetch[16], cache_mb[24], heap_mb[24];
    snprintf(cache_mb, sizeof cache_mb, "%ld", a->cache_mb);
    snprintf(heap_mb, sizeof heap_mb, "%ld", a->heap_mb);
    if (a->node_fd >= 0)
        snprintf(node, sizeof node, "%d", a->node_fd);
    else
        snprintf(node, sizeof node, "%u", a->node);
    snprintf(slots, sizeof slots, "%ld", a->slots);
    snprintf(prefetch, sizeof prefetch, "%ld", a->prefetch);
    char *node_opt = a->node_fd >= 0 ? "--node-fd" : "--node";
    char *argv[] = {"spm",         "ieu",
                    "--center",    (char *)a->center,
                    node_opt,      node,
                    "--cache-dir", (char *)a->cache_dir,
                    "--slots",     slots,
                    "--prefetch",  prefetch,
                    "--log-level", (char *)a->log_level,
                    "--cache-mb",  cache_mb,
                    "--heap-mb",   heap_mb,
                    NULL,          NULL,
                    NULL,          NULL,
                    NULL,          NULL};
    size_t n = 18;
    if (a->insecure)
        argv[n++] = "--insecure";
    if (!a->store_reads)
        argv[n++] = "--no-store-reads";
    if (a->local_files)
        argv[n++] = "--local-files";
    if (a->keys) {
        argv[n++] = "--keys";
        argv[n++] = (char *)a->keys;
    }
    /* The first IEUs, started before the agent has a thread, are forked
       copies of it; later ones (restarts) start the binary afresh. */
    return a->node_fd >= 0 ? spm_proc_fork(argv) : spm_proc_spawn(argv);
}

static void report_death(void *dealer, pid_t pid, int status)
{
    Spm__IeuDied d = SPM__IEU_DIED__INIT;
    d.pid = (uint32_t)pid;
    d.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    d.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_IEU_DIED;
    env.ieu_died = &d;
    spm_wire_send(dealer, NULL, &env, NULL, 0, NULL);
}

/*  Reaps dead IEUs, reports them, schedules restarts; starts due ones. */
static void supervise(agent_t *a, void *dealer)
{
    int status;
    pid_t pid;
    uint64_t now = spm_now_us();
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (long i = 0; i < a->nkids; i++) {
            child_t *k = &a->kids[i];
            if (k->pid != pid)
                continue;
            k->pid = 0;
            report_death(dealer, pid, status);
            if (now - k->started_at >= HEALTHY_US)
                k->restarts = 0;
            if (k->restarts >= MAX_RESTARTS) {
                spm_log_error("IEU %ld died %u times in a row within %.1f s of starting; not "
                              "restarting it",
                              i, k->restarts, HEALTHY_US / 1e6);
                break;
            }
            uint64_t delay = 100000ull << (k->restarts < 8 ? k->restarts : 8);
            k->restart_at = now + delay;
            spm_log_warn("IEU pid %d %s %d; restarting in %.1f s", (int)pid,
                         WIFSIGNALED(status) ? "killed by signal" : "exited with",
                         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), delay / 1e6);
        }
    }
    for (long i = 0; i < a->nkids; i++) {
        child_t *k = &a->kids[i];
        if (!k->pid && k->restart_at && now >= k->restart_at) {
            k->restart_at = 0;
            k->restarts++;
            k->started_at = now;
            k->pid = start_ieu(a);
            if (k->pid < 0)
                k->pid = 0;
        }
    }
}

/*  After a rejoin: every IEU is stopped and started again at once under the
    node's index; the restart does not count against the cap. A center of
    another store knows nothing of the blocks the node kept (and may give
    their ids to new blocks): unless SAME_STORE, CACHE is emptied in
    between. */
static void restart_all(agent_t *a, spm_nodecache_t *cache, int same_store)
{
    for (long i = 0; i < a->nkids; i++)
        if (a->kids[i].pid > 0)
            spm_proc_stop(a->kids[i].pid, 3000);
    if (!same_store && spm_nodecache_clear(cache) != 0)
        spm_log_warn("emptying the node cache: %s", spm_error_detail());
    for (long i = 0; i < a->nkids; i++) {
        child_t *k = &a->kids[i];
        k->pid = start_ieu(a);
        if (k->pid < 0)
            k->pid = 0;
        k->started_at = spm_now_us();
        k->restart_at = 0;
    }
}

/*  Starts every IEU (the first time). */
static void start_all(agent_t *a)
{
    for (long i = 0; i < a->nkids; i++) {
        a->kids[i].pid = start_ieu(a);
        if (a->kids[i].pid < 0)
            a->kids[i].pid = 0;
        a->kids[i].started_at = spm_now_us();
    }
}

/*  SIGTERM to every IEU: each finishes its running SIs, commits them and
    exits. Whoever is still there after DRAIN_S seconds is killed. */
static void stop_all(agent_t *a)
{
    for (long i = 0; i < a->nkids; i++)
        if (a->kids[i].pid > 0)
            kill(a->kids[i].pid, SIGTERM);
    uint64_t deadline = spm_now_us() + (uint64_t)a->drain_s * 1000000u;
    for (;;) {
        int alive = 0;
        for (long i = 0; i < a->nkids; i++) {
            if (a->kids[i].pid <= 0)
                continue;
            if (waitpid(a->kids[i].pid, NULL, WNOHANG) == a->kids[i].pid)
                a->kids[i].pid = 0;
            else
                alive = 1;
        }
        if (!alive)
            return;
        if (spm_now_us() > deadline)
            break;
        usleep(1000); /* an IEU exits within ms of its last commit */
    }
    for (long i = 0; i < a->nkids; i++)
        if (a->kids[i].pid > 0) {
            kill(a->kids[i].pid, SIGKILL);
            waitpid(a->kids[i].pid, NULL, 0);
        }
}

/*  The blocks the node keeps, told to a center that restarted on the same
    store (its directory starts empty): PUBLISHes of up to 1024 HELD refs. */
typedef struct {
    void *center;
    Spm__BlockRef refs[1024];
    size_t n;
    uint64_t sent;
} held_t;

static void held_send(held_t *h)
{
    if (!h->n)
        return;
    Spm__BlockRef *ptrs[1024];
    for (size_t i = 0; i < h->n; i++)
        ptrs[i] = &h->refs[i];
    Spm__Publish p = SPM__PUBLISH__INIT;
    p.n_blocks = h->n;
    p.blocks = ptrs;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PUBLISH;
    env.publish = &p;
    spm_wire_send(h->center, NULL, &env, NULL, 0, NULL);
    h->sent += h->n;
    h->n = 0;
}

static void held_add(void *arg, spm_sdb_t id, uint64_t version, uint32_t type, uint64_t checksum,
                     size_t len)
{
    held_t *h = arg;
    Spm__BlockRef *b = &h->refs[h->n++];
    spm__block_ref__init(b);
    b->sdb = id;
    b->version = version;
    b->bytes = len;
    b->held = 1;
    b->checksum = checksum;
    b->type = type;
    if (h->n == 1024)
        held_send(h);
}

static void report_held(spm_nodecache_t *cache, void *center)
{
    held_t *h = calloc(1, sizeof *h);
    if (!h)
        return;
    h->center = center;
    if (spm_nodecache_list_kept(cache, held_add, h) != 0)
        spm_log_warn("listing the blocks this node keeps: %s", spm_error_detail());
    held_send(h);
    spm_log_info("told the center of the %llu blocks this node keeps", (unsigned long long)h->sent);
    free(h);
}

/*  Fills heartbeat HB with what the node's data agent did and holds. */
static void report(spm_dataagent_t *served, spm_nodecache_t *cache, Spm__Heartbeat *hb)
{
    spm_dataagent_stats_t st;
    spm_nodecache_stats_t cs;
    spm_dataagent_stats(served, &st);
    spm_nodecache_stats(cache, &cs);
    hb->served = st.served;
    hb->served_bytes = st.served_bytes;
    hb->stored = st.stored;
    hb->stored_bytes = st.stored_bytes;
    hb->kept_bytes = cs.kept_bytes;
    hb->cache_bytes = cs.bytes;
}

/*  Binds the data agent's ROUTER and works out the endpoint peers use.
    Returns the socket or NULL with the detail set. */
static void *bind_data(void *ctx, agent_t *a, char *advertise, size_t size, int *rc)
{
    char listen[512];
    if (a->data_listen && *a->data_listen)
        snprintf(listen, sizeof listen, "%s", a->data_listen);
    else if (strncmp(a->center, "ipc://", 6) == 0)
        snprintf(listen, sizeof listen, "ipc://%s/data", a->cache_dir);
    else
        snprintf(listen, sizeof listen, "tcp://*:0");
    void *router = spm_wire_socket(ctx, ZMQ_ROUTER);
    if (!router)
        return NULL;
    if ((*rc = spm_security_bind(a->security, ctx, router, listen)) != 0) {
        zmq_close(router);
        return NULL;
    }
    char bound[512];
    size_t blen = sizeof bound;
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, bound, &blen);
    if (a->data_advertise && *a->data_advertise) {
        snprintf(advertise, size, "%s", a->data_advertise);
    } else if (strncmp(bound, "tcp://0.0.0.0:", 14) == 0) {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        snprintf(advertise, size, "tcp://%s:%s", host, bound + 14);
    } else {
        snprintf(advertise, size, "%s", bound);
    }
    return router;
}

/*  Whether PID has exited but not been reaped yet (a zombie). */
static int exited(int pid)
{
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *p = strrchr(stat, ')');
    return p && p[1] == ' ' && p[2] == 'Z';
}

/*  `spm agent --drain`: SIGTERM to the agent whose pid file is in
    CACHE_DIR, then wait for it to exit. */
static int drain_running(const char *cache_dir)
{
    char path[1024];
    if (!cache_dir || !*cache_dir)
        return spm_cli_usage("agent", "--drain needs the running agent's --cache-dir");
    snprintf(path, sizeof path, "%s/agent.pid", cache_dir);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (!f || fscanf(f, "%d", &pid) != 1 || pid <= 0) {
        if (f)
            fclose(f);
        spm_error(SPM_ENOTFOUND, "%s: no running agent's pid file", path);
        return spm_cli_fail("agent", SPM_ENOTFOUND);
    }
    fclose(f);
    if (kill(pid, SIGTERM) != 0) {
        spm_error(SPM_ENOTFOUND, "agent pid %d: %s", pid, strerror(errno));
        return spm_cli_fail("agent", SPM_ENOTFOUND);
    }
    while (kill(pid, 0) == 0 && !exited(pid))
        usleep(50000);
    printf("agent %d drained\n", pid);
    return 0;
}

/*  Its options that are not settings; spm_config_help prints the settings'. */
static const char agent_help[] =
    "usage: spm agent [OPTIONS]\n\n"
    "Runs the agent of one node: starts its IEUs, restarts them when they die\n"
    "and reports their deaths to the center. SIGTERM (or --drain) lets running\n"
    "SIs finish, takes no new ones, then exits. Defaults come from the\n"
    "configuration (see conf/spm.conf); flags win.\n\n"
    "  --config FILE       configuration file (default $SPM_CONFIG or /etc/spm/spm.conf)\n"
    "  --local-files       IEUs may read a client's input file where it lies, by its\n"
    "                      path (an embedded VM's: it shares the client's machine\n"
    "                      and user); without it, a client stages its input\n"
    "  --drain-s N         on SIGTERM, wait up to N s for running SIs (default 60)\n"
    "  --drain             drain the agent already running on CACHE-DIR (found by its\n"
    "                      pid file) and wait until it has exited\n";

static int agent_main(int argc, char **argv)
{
    static const struct option opts[] = {{"center", required_argument, 0, 'c'},
                                         {"ieus", required_argument, 0, 'n'},
                                         {"slots", required_argument, 0, 's'},
                                         {"prefetch", required_argument, 0, 'p'},
                                         {"cache-dir", required_argument, 0, 'd'},
                                         {"log-level", required_argument, 0, 'v'},
                                         {"cache-mb", required_argument, 0, 'm'},
                                         {"heap-mb", required_argument, 0, 'H'},
                                         {"data-listen", required_argument, 0, 'L'},
                                         {"data-advertise", required_argument, 0, 'A'},
                                         {"config", required_argument, 0, 'C'},
                                         {"keys", required_argument, 0, 'k'},
                                         {"insecure", no_argument, 0, 'I'},
                                         {"drain-s", required_argument, 0, 'T'},
                                         {"drain", no_argument, 0, 'R'},
                                         {"no-store-reads", no_argument, 0, 'S'},
                                         {"local-files", no_argument, 0, 'F'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch, rc = spm_config_load_args(argc, argv);
    if (rc != 0)
        return spm_cli_fail("agent", rc);
    agent_t a = {.center = spm_config_str("agent", "center"),
                 .slots = spm_config_long("agent", "slots"),
                 .prefetch = spm_config_long("agent", "prefetch"),
                 .cache_mb = spm_config_long("agent", "cache_mb"),
                 .heap_mb = spm_config_long("agent", "heap_mb"),
                 .cache_dir = spm_config_str("agent", "cache_dir"),
                 .data_listen = spm_config_str("agent", "data_listen"),
                 .data_advertise = spm_config_str("agent", "data_advertise"),
                 .store_reads = spm_config_bool("agent", "store_reads"),
                 .log_level = spm_config_log_level("warn"),
                 .drain_s = 60,
                 .node_fd = -1};
    int drain = 0;
    long nieus = spm_config_long("agent", "ieus");
    spm_log_level_t level;
    spm_log_parse_level(a.log_level, &level);
    char default_cache[128];
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        rc = 0;
        switch (ch) {
        case 'c':
            a.center = optarg;
            break;
        case 'n':
            rc = spm_config_arg("agent", "ieus", optarg, &nieus);
            break;
        case 's':
            rc = spm_config_arg("agent", "slots", optarg, &a.slots);
            break;
        case 'p':
            rc = spm_config_arg("agent", "prefetch", optarg, &a.prefetch);
            break;
        case 'd':
            a.cache_dir = optarg;
            break;
        case 'm':
            rc = spm_config_arg("agent", "cache_mb", optarg, &a.cache_mb);
            break;
        case 'H':
            rc = spm_config_arg("agent", "heap_mb", optarg, &a.heap_mb);
            break;
        case 'L':
            a.data_listen = optarg;
            break;
        case 'A':
            a.data_advertise = optarg;
            break;
        case 'C':
            break; /* loaded above */
        case 'k':
            a.keys = optarg;
            break;
        case 'I':
            a.insecure = 1;
            break;
        case 'T':
            rc = spm_parse_long("--drain-s", optarg, 0, 86400, &a.drain_s);
            break;
        case 'R':
            drain = 1;
            break;
        case 'S':
            a.store_reads = 0;
            break;
        case 'F':
            a.local_files = 1;
            break;
        case 'v':
            rc = spm_config_arg_level(optarg, &level);
            a.log_level = optarg;
            break;
        case 'h':
            fputs(agent_help, stdout);
            spm_config_help(stdout, SPM_PROC_AGENT);
            return 0;
        default:
            return spm_cli_usage("agent", "invalid option");
        }
        if (rc != 0)
            return spm_cli_fail("agent", rc);
    }
    if (optind < argc)
        return spm_cli_usage("agent", "unexpected argument '%s'", argv[optind]);
    if (drain)
        return drain_running(a.cache_dir);
    nieus = spm_config_ieus(nieus); /* 0, from --ieus or agent.ieus: one per core */
    if (!a.cache_dir || !*a.cache_dir) {
        snprintf(default_cache, sizeof default_cache, "/tmp/spm-cache-%d-%d", (int)getuid(),
                 (int)getpid());
        a.cache_dir = default_cache;
    }
    spm_log_init("agent", level);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    int status = 1;
    int node_pipe[2] = {-1, -1}; /* the node index to IEUs started before WELCOME */
    void *ctx = NULL, *dealer = NULL;
    void *data = NULL;
    spm_dataagent_t *served = NULL;   /* serves this node's blocks on DATA */
    spm_blockclient_t *copier = NULL; /* fetches the copies the center orders */
    void *monitor = NULL;             /* the DEALER's connects, to say HELLO at once */
    char advertise[512] = "";
    spm_nodecache_t *cache = NULL;
    a.security = spm_security_new(a.keys, "agent", a.insecure);
    a.nkids = nieus;
    /* made before the IEUs are forked: it has no thread until its first
       socket, and they inherit OpenPGM's start (vm/client/session.c) */
    ctx = zmq_ctx_new();
    if (!ctx || !a.security || !(a.kids = calloc((size_t)nieus, sizeof *a.kids))) {
        spm_cli_fail("agent", SPM_ENOMEM);
        goto done;
    }
    /* The IEUs get the same security settings, whatever their source. */
    a.insecure = !spm_security_on(a.security);
    if (!a.keys)
        a.keys = spm_config_str("security", "keys");
    if (spm_nodecache_wipe(a.cache_dir) != 0) {
        spm_cli_fail("agent", SPM_EIO);
        goto done;
    }
    /* The IEUs start now, not once the center has welcomed the node:
       starting them takes as long as the center's start, and the node index
       they need reaches them through a pipe (4 bytes each). This process
       has no thread yet, so they are forked copies of it (base/proc.h). */
    if (pipe2(node_pipe, O_CLOEXEC) == 0 && fcntl(node_pipe[0], F_SETFD, 0) == 0) {
        a.node_fd = node_pipe[0];
        start_all(&a);
        a.node_fd = -1;
    } else if (node_pipe[1] >= 0) {
        close(node_pipe[1]); /* they start once the node is known */
        node_pipe[1] = -1;
    }
    if (node_pipe[0] >= 0)
        close(node_pipe[0]); /* the IEUs have theirs; later ones get --node */
    if (!(cache = spm_nodecache_open(a.cache_dir, (uint64_t)a.cache_mb << 20, 0))) {
        spm_cli_fail("agent", SPM_EIO);
        goto done;
    }
    if (!(data = bind_data(ctx, &a, advertise, sizeof advertise, &rc))) {
        spm_cli_fail("agent", rc);
        goto done;
    }
    if (!(served = spm_dataagent_new(data, cache, spm_sdb_check_known)) ||
        !(copier = spm_blockclient_new(ctx, a.security))) {
        spm_cli_fail("agent", SPM_ENOMEM);
        goto done;
    }
    dealer = spm_wire_socket(ctx, ZMQ_DEALER);
    spm_wire_await_ipc(a.center, 2000); /* an embedded center is starting beside us */
    if (!dealer || (rc = spm_security_connect(a.security, dealer, a.center, NULL)) != 0) {
        spm_cli_fail("agent", rc ? rc : SPM_ESYS);
        goto done;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__AGENT;
    h.node = host;
    h.pid = (uint32_t)getpid();
    h.data_endpoint = advertise;
    h.public_key = (char *)spm_security_public(a.security);
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    spm_wire_send(dealer, NULL, &env, NULL, 0, NULL);
    /* until the center's WELCOME says */
    uint32_t hb_ms = (uint32_t)spm_config_default_long("center", "heartbeat_ms");
    uint32_t dead_ms = (uint32_t)spm_config_default_long("center", "dead_ms");
    int lost = 0; /* the center went silent or forgot us; HELLO until it answers */
    uint64_t last_hello = 0;
    uint8_t store_id[16] = {0}; /* of the center's store: a restarted one knows our blocks */
    /* Told at once when the connection to the center is made again: a
       restarted center hears from this node within a round trip. */
    monitor = spm_security_monitor(ctx, dealer, ZMQ_EVENT_CONNECTED);
    int welcomed = 0;
    uint64_t deadline = spm_now_us() + 10000000;
    while (!welcomed && !stop_flag && spm_now_us() < deadline) {
        zmq_pollitem_t items[2] = {{dealer, 0, ZMQ_POLLIN, 0}, {monitor, 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, monitor ? 2 : 1, 100) <= 0)
            continue;
        if (monitor && (rc = spm_security_monitor_read(a.security, monitor, a.center)) != 0)
            break;
        spm_msg_t m;
        if (spm_wire_recv(dealer, 0, 1, &m, NULL) != 1)
            continue;
        if (m.env->body_case == SPM__ENVELOPE__BODY_WELCOME) {
            a.node = m.env->welcome->index;
            hb_ms = m.env->welcome->heartbeat_ms;
            dead_ms = m.env->welcome->dead_ms;
            if (m.env->welcome->store_id.len == sizeof store_id)
                memcpy(store_id, m.env->welcome->store_id.data, sizeof store_id);
            welcomed = 1;
        }
        spm_msg_close(&m);
    }
    if (!welcomed) {
        if (!stop_flag && rc == 0)
            spm_error(SPM_EUNREACH, "%s: the center did not answer within 10 s", a.center);
        if (!stop_flag)
            spm_cli_fail("agent", rc ? rc : SPM_EUNREACH);
        goto done;
    }
    spm_dataagent_forwarding(served, copier, a.node);
    char pidfile[1024];
    snprintf(pidfile, sizeof pidfile, "%s/agent.pid", a.cache_dir);
    FILE *pf = fopen(pidfile, "w");
    if (pf) {
        fprintf(pf, "%d\n", (int)getpid());
        fclose(pf);
    }
    if (node_pipe[1] < 0)
        start_all(&a);
    for (long i = 0; node_pipe[1] >= 0 && i < a.nkids; i++)
        if (write(node_pipe[1], &a.node, sizeof a.node) != (ssize_t)sizeof a.node)
            break; /* no IEU reads (all died): they restart with --node */
    if (node_pipe[1] >= 0) {
        close(node_pipe[1]);
        node_pipe[1] = -1;
    }
    spm_log_info("node %u: %ld IEUs started, cache %s", a.node, nieus, a.cache_dir);
    uint64_t last_heard = spm_now_us(), last_beat = 0;
    while (!stop_flag) {
        zmq_pollitem_t items[4 + 64] = {{dealer, 0, ZMQ_POLLIN, 0}, {data, 0, ZMQ_POLLIN, 0}};
        int nitems = 2;
        if (monitor)
            items[nitems++] = (zmq_pollitem_t){monitor, 0, ZMQ_POLLIN, 0};
        if (spm_security_zap(a.security))
            items[nitems++] = (zmq_pollitem_t){spm_security_zap(a.security), 0, ZMQ_POLLIN, 0};
        nitems += spm_blockclient_items(copier, items + nitems, 64);
        zmq_poll(items, nitems, 100);
        spm_security_zap_handle(a.security);
        if (monitor && (items[2].revents & ZMQ_POLLIN)) {
            zmq_msg_t ev;
            zmq_msg_init(&ev);
            while (zmq_msg_recv(&ev, monitor, ZMQ_DONTWAIT) >= 0) /* event, then address */
                ;
            zmq_msg_close(&ev);
            last_beat = 0; /* a heartbeat now: a new center says it does not know us */
        }
        int shutdown = 0;
        spm_msg_t m;
        int r;
        spm_dataagent_serve(served);
        spm_blockclient_process(copier);
        spm_blockclient_expire(copier, spm_now_us());
        while ((r = spm_wire_recv(dealer, 0, 1, &m, NULL)) > 0) {
            if (r != 1)
                continue;
            last_heard = spm_now_us();
            shutdown |= m.env->body_case == SPM__ENVELOPE__BODY_SHUTDOWN;
            if (m.env->body_case == SPM__ENVELOPE__BODY_DROP)
                spm_dataagent_drop(served, m.env->drop->blocks, m.env->drop->n_blocks);
            if (m.env->body_case == SPM__ENVELOPE__BODY_COPY)
                spm_dataagent_copy(served, copier, dealer, m.env->copy);
            if (m.env->body_case == SPM__ENVELOPE__BODY_ERROR &&
                m.env->error->status == SPM_ESTRANGER && !lost) {
                /* The center restarted: join it again now, as the same node. */
                spm_log_warn("the center does not know this node (it restarted); joining again");
                lost = 1;
                last_hello = 0;
            }
            if (m.env->body_case == SPM__ENVELOPE__BODY_HEARTBEAT && lost) {
                /* The center that knows this node answers again (a new
                   one drops heartbeats before HELLO): it had stalled. Its
                   IEUs exited meanwhile; supervise() restarts them. */
                lost = 0;
                spm_log_warn("the center answers again; node %u resumes", a.node);
            }
            if (m.env->body_case == SPM__ENVELOPE__BODY_WELCOME && lost) {
                /* A restarted center: its IEUs join again under the node's
                   index. A center on the same store resumes its jobs and
                   learns where their blocks are from the nodes: this one
                   keeps its blocks and tells it which. */
                a.node = m.env->welcome->index;
                lost = 0;
                int same = m.env->welcome->store_id.len == sizeof store_id &&
                           memcmp(m.env->welcome->store_id.data, store_id, sizeof store_id) == 0;
                spm_log_warn("the center is back%s; node %u rejoined, restarting its IEUs",
                             same ? " on the same store" : " on another store", a.node);
                if (!same && m.env->welcome->store_id.len == sizeof store_id)
                    memcpy(store_id, m.env->welcome->store_id.data, sizeof store_id);
                /* What the node keeps is told before its IEUs join again, so
                   that the center drops what it no longer knows before they
                   can read it. */
                if (same)
                    report_held(cache, dealer);
                restart_all(&a, cache, same);
                spm_dataagent_forwarding(served, copier, a.node);
            }
            spm_msg_close(&m);
        }
        if (shutdown)
            break;
        if (!lost)
            supervise(&a, dealer);
        uint64_t now = spm_now_us();
        if (lost && now - last_hello > 2000000) {
            h.node_index = a.node + 1; /* the same node, if the center will have it */
            spm_wire_send(dealer, NULL, &env, NULL, 0, NULL);
            last_hello = now;
        }
        if (now - last_beat >= (uint64_t)hb_ms * 1000) {
            Spm__Heartbeat hbm = SPM__HEARTBEAT__INIT;
            report(served, cache, &hbm);
            Spm__Envelope e = SPM__ENVELOPE__INIT;
            e.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
            e.heartbeat = &hbm;
            spm_wire_send(dealer, NULL, &e, NULL, 0, NULL);
            last_beat = now;
        }
        if (!lost && now - last_heard > 2 * (uint64_t)dead_ms * 1000) {
            /* Wait for it (a restarted center, a healed network) rather than
               exit: its IEUs exit on their own, and come back on rejoin. */
            spm_log_warn("the center has been silent for %u ms; waiting for it", 2 * dead_ms);
            lost = 1;
        }
    }
    status = 0;
done:
    if (node_pipe[1] >= 0)
        close(node_pipe[1]); /* an IEU still waiting for its node exits */
    if (monitor)
        zmq_close(monitor);
    if (a.kids)
        stop_all(&a);
    free(a.kids);
    if (dealer)
        zmq_close(dealer);
    if (data)
        zmq_close(data);
    spm_security_destroy(&a.security);
    spm_blockclient_destroy(&copier);
    if (ctx)
        zmq_ctx_term(ctx); /* releases every frame still pointing into the cache */
    spm_dataagent_destroy(&served);
    spm_nodecache_close(&cache);
    if (a.cache_dir == default_cache)
        spm_rmtree(default_cache);
    return status;
}

SPM_CONSTRUCTOR(agent_cmd)
{
    spm_command_register(&(spm_command_t){.name = "agent",
                                          .summary = "run the agent of one node (starts its IEUs)",
                                          .main = agent_main});
}
