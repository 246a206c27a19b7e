/*  =========================================================================
    agent - the agent of one node: its link to the center, its data agent,
    its IEUs

    The agent registers its node with the center, empties the node cache
    (a cache left by an earlier run may hold blocks of ids the center has
    reused), starts N `spm ieu` processes (at once, while the center
    welcomes the node: their node index reaches them through a pipe),
    tells the center at once when one dies (so its SIs are re-issued
    without waiting for heartbeats) and restarts it with a growing delay,
    up to a cap of deaths in a row within a second of starting (a crash
    loop; vm/agent/ieus.c). It runs the node's data agent, and joins a
    center that restarted again as the same node. SIGTERM or SIGINT, or a
    SHUTDOWN from the center, stop the IEUs and the agent; a center silent
    too long is waited for.
    =========================================================================
*/
#include "vm/agent/agent_int.h"
#include "vm/agent/identity.h"
#include "vm/agent/metrics.h"
#include "datacache/blockclient.h"
#include "datacache/dataagent.h"
#include "datacache/nodecache.h"
#include "runtime/registry.h"
#include "base/backoff.h"
#include "base/config.h"
#include "base/log.h"
#include "base/lograte.h"
#include "base/proc.h"
#include "base/procstat.h"
#include "transport/security.h"
#include "transport/wire.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag;

#define PUBLISH_US 1000000 /* the node's /metrics are built this often */

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
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

/*  Fills heartbeat HB with what the node's data agent did and holds, and
    what its spm processes (this agent and its IEUs) use. */
static void report(agent_t *a, spm_dataagent_t *served, spm_nodecache_t *cache, Spm__Heartbeat *hb)
{
    spm_procstat_t ps = {0};
    pid_t pids[1 + 1024]; /* agent.ieus is at most 1024 */
    int n = 0;
    pids[n++] = getpid();
    for (long i = 0; i < a->nkids && n < (int)(sizeof pids / sizeof *pids); i++)
        pids[n++] = a->kids[i].pid;
    hb->processes = (uint32_t)spm_procstat_sum(pids, n, &ps);
    hb->cpu_us = ps.cpu_us;
    hb->rss_bytes = ps.rss_bytes;
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

int spm_agent_drain(const char *cache_dir, int *pid)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/agent.pid", cache_dir);
    FILE *f = fopen(path, "r");
    *pid = 0;
    if (!f || fscanf(f, "%d", pid) != 1 || *pid <= 0) {
        if (f)
            fclose(f);
        return spm_error(SPM_ENOTFOUND, "%s: no running agent's pid file", path);
    }
    fclose(f);
    if (kill(*pid, SIGTERM) != 0)
        return spm_error(SPM_ENOTFOUND, "agent pid %d: %s", *pid, strerror(errno));
    while (kill(*pid, 0) == 0 && !exited(*pid))
        usleep(50000);
    return 0;
}

/*  Says HELLO to the center, as node NODE_INDEX - 1 (0: any node). */
static void send_hello(agent_t *a, uint32_t node_index)
{
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__AGENT;
    h.node = a->host;
    h.pid = (uint32_t)getpid();
    h.data_endpoint = a->advertise;
    h.public_key = (char *)spm_security_public(a->security);
    h.node_index = node_index;
    h.name = a->name;
    h.identity.data = a->identity;
    h.identity.len = sizeof a->identity;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    spm_wire_send(a->dealer, NULL, &env, NULL, 0, NULL);
}

int spm_agent_new(const spm_agent_opts_t *o, spm_agent_t **out)
{
    assert(o);
    assert(out);
    *out = NULL;
    agent_t *a = calloc(1, sizeof *a);
    if (!a)
        return SPM_ENOMEM;
    *a = (agent_t){.center = o->center,
                   .cache_dir = o->cache_dir,
                   .data_listen = o->data_listen,
                   .data_advertise = o->data_advertise,
                   .keys = o->keys,
                   .insecure = o->insecure,
                   .store_reads = o->store_reads,
                   .local_files = o->local_files,
                   .slots = o->slots,
                   .prefetch = o->prefetch,
                   .cache_mb = o->cache_mb,
                   .heap_mb = o->heap_mb,
                   .drain_s = o->drain_s,
                   .wait_center_s = o->wait_center_s,
                   .log_level = o->log_level,
                   .node_fd = -1,
                   .node_pipe = -1,
                   .started_us = spm_now_us(),
                   .nkids = o->ieus ? o->ieus : sysconf(_SC_NPROCESSORS_ONLN)};
    if (!a->cache_dir || !*a->cache_dir) {
        snprintf(a->default_cache, sizeof a->default_cache, "/tmp/spm-cache-%d-%d", (int)getuid(),
                 (int)getpid());
        a->cache_dir = a->default_cache;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    int rc = 0;
    int node_pipe[2] = {-1, -1}; /* the node index to IEUs started before WELCOME */
    a->security = spm_security_new(a->keys, "agent", a->insecure);
    /* made before the IEUs are forked: it has no thread until its first
       socket, and they inherit OpenPGM's start (vm/client/session.c) */
    a->ctx = zmq_ctx_new();
    if (!a->ctx || !a->security || !(a->kids = calloc((size_t)a->nkids, sizeof *a->kids))) {
        rc = SPM_ENOMEM;
        goto err;
    }
    /* The IEUs get the same security settings, whatever their source. */
    a->insecure = !spm_security_on(a->security);
    if (!a->keys)
        a->keys = spm_config_str("security", "keys");
    if (spm_nodecache_wipe(a->cache_dir) != 0) {
        rc = SPM_EIO;
        goto err;
    }
    /* The IEUs start now, not once the center has welcomed the node:
       starting them takes as long as the center's start, and the node index
       they need reaches them through a pipe (4 bytes each). This process
       has no thread yet, so they are forked copies of it (base/proc.h). */
    if (pipe2(node_pipe, O_CLOEXEC) == 0 && fcntl(node_pipe[0], F_SETFD, 0) == 0) {
        a->node_fd = node_pipe[0];
        spm_ieus_start_all(a);
        a->node_fd = -1;
    } else if (node_pipe[1] >= 0) {
        close(node_pipe[1]); /* they start once the node is known */
        node_pipe[1] = -1;
    }
    if (node_pipe[0] >= 0)
        close(node_pipe[0]); /* the IEUs have theirs; later ones get --node */
    a->node_pipe = node_pipe[1];
    if (!(a->cache = spm_nodecache_open(a->cache_dir, (uint64_t)a->cache_mb << 20, 0)) ||
        spm_agent_identity(a->cache_dir, a->identity,
                           !o->no_sync && a->cache_dir != a->default_cache) != 0) {
        rc = SPM_EIO;
        goto err;
    }
    gethostname(a->host, sizeof a->host - 1);
    snprintf(a->name, sizeof a->name, "%s", o->name && *o->name ? o->name : a->host);
    if (!(a->data = bind_data(a->ctx, a, a->advertise, sizeof a->advertise, &rc))) {
        rc = rc ? rc : SPM_ESYS; /* no socket: the detail says why */
        goto err;
    }
    if (!(a->served = spm_dataagent_new(a->data, a->cache, spm_sdb_check_known)) ||
        !(a->copier = spm_blockclient_new(a->ctx, a->security))) {
        rc = SPM_ENOMEM;
        goto err;
    }
    a->dealer = spm_wire_socket(a->ctx, ZMQ_DEALER);
    spm_wire_await_ipc(a->center, 2000); /* an embedded center is starting beside us */
    if (!a->dealer || (rc = spm_security_connect(a->security, a->dealer, a->center, NULL)) != 0) {
        rc = rc ? rc : SPM_ESYS;
        goto err;
    }
    /* The server's thread starts after the IEUs were forked (above): a
       fork copies only the thread that calls it. */
    if (o->http && *o->http) {
        if (!(a->http = spm_http_start(o->http, o->http_token, "agent.http_token", &rc)))
            goto err;
        spm_agent_metrics_publish(a, 0);
        spm_log_info("metrics on http://%s/metrics (port %d)%s", o->http, spm_http_port(a->http),
                     o->http_token && *o->http_token ? ", token required" : "");
    }
    *out = a;
    return 0;
err:
    spm_agent_destroy(&a);
    return rc;
}

/*  Says HELLO and waits for the center's WELCOME, which gives the node its
    index: as long as wait_center_s says (0: as long as it takes, as a
    daemon started before its center should), saying HELLO again after 1,
    2, 4 ... s, at most every 30 s (a center that restarted meanwhile hears
    it), and saying once, after a second without an answer, that it waits
    (base/backoff.h: a client's --wait-center is paced the same). Returns 0, SPM_ECANCELED when a
   signal came first, or SPM_EUNREACH or SPM_EDENIED with the detail set. */
static int join(agent_t *a)
{
    int rc = 0;
    send_hello(a, 0);
    /* until the center's WELCOME says */
    a->hb_ms = (uint32_t)spm_config_default_long("center", "heartbeat_ms");
    a->dead_ms = (uint32_t)spm_config_default_long("center", "dead_ms");
    /* Told at once when the connection to the center is made again: a
       restarted center hears from this node within a round trip. */
    a->monitor = spm_security_monitor(a->ctx, a->dealer, ZMQ_EVENT_CONNECTED);
    int welcomed = 0;
    spm_backoff_t b;
    spm_backoff_start(&b, a->wait_center_s);
    while (!welcomed && !stop_flag && !spm_backoff_over(&b)) {
        spm_backoff_say(&b, a->center);
        if (spm_backoff_due(&b))
            send_hello(a, 0);
        zmq_pollitem_t items[2] = {{a->dealer, 0, ZMQ_POLLIN, 0}, {a->monitor, 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, a->monitor ? 2 : 1, spm_backoff_poll_ms(&b)) <= 0)
            continue;
        if (a->monitor && (rc = spm_security_monitor_read(a->security, a->monitor, a->center)) != 0)
            break;
        spm_msg_t m;
        if (spm_wire_recv(a->dealer, 0, 1, &m, NULL) != 1)
            continue;
        if (m.env->body_case == SPM__ENVELOPE__BODY_WELCOME) {
            a->node = m.env->welcome->index;
            a->hb_ms = m.env->welcome->heartbeat_ms;
            a->dead_ms = m.env->welcome->dead_ms;
            if (m.env->welcome->store_id.len == sizeof a->store_id)
                memcpy(a->store_id, m.env->welcome->store_id.data, sizeof a->store_id);
            welcomed = 1;
        }
        spm_msg_close(&m);
    }
    if (welcomed) {
        char joined[32];
        snprintf(joined, sizeof joined, "node %u joined", a->node);
        spm_backoff_answered(&b, a->center, joined);
        return 0;
    }
    if (stop_flag)
        return SPM_ECANCELED;
    if (rc == 0)
        rc = spm_backoff_fail(&b, a->center);
    return rc ? rc : SPM_EUNREACH;
}

int spm_agent_run(spm_agent_t *self)
{
    assert(self);
    agent_t *a = self;
    int rc = join(a);
    if (rc != 0)
        return rc;
    spm_dataagent_forwarding(a->served, a->copier, a->node);
    char pidfile[1024];
    snprintf(pidfile, sizeof pidfile, "%s/agent.pid", a->cache_dir);
    FILE *pf = fopen(pidfile, "w");
    if (pf) {
        fprintf(pf, "%d\n", (int)getpid());
        fclose(pf);
    }
    if (a->node_pipe < 0)
        spm_ieus_start_all(a);
    for (long i = 0; a->node_pipe >= 0 && i < a->nkids; i++)
        if (write(a->node_pipe, &a->node, sizeof a->node) != (ssize_t)sizeof a->node)
            break; /* no IEU reads (all died): they restart with --node */
    if (a->node_pipe >= 0) {
        close(a->node_pipe);
        a->node_pipe = -1;
    }
    spm_log_info("node %u: %ld IEUs started, cache %s", a->node, a->nkids, a->cache_dir);
    int lost = 0; /* the center went silent or forgot us; HELLO until it answers */
    int draining = 0, shutdown = 0;
    uint64_t last_hello = 0, drain_end = 0;
    uint64_t last_heard = spm_now_us(), last_beat = 0, last_published = 0;
    for (;;) {
        if (stop_flag && !draining) {
            /* A drain: the IEUs finish their running SIs and say BYE; the
               node goes on serving its blocks and beating meanwhile, so
               that the center does not take it for dead. */
            draining = 1;
            drain_end = spm_now_us() + (uint64_t)a->drain_s * 1000000u;
            spm_ieus_signal_all(a, SIGTERM);
            spm_log_info("node %u drains: its IEUs finish their running SIs", a->node);
        }
        if (draining && (spm_ieus_reap(a) == 0 || spm_now_us() > drain_end))
            break;
        zmq_pollitem_t items[4 + 64] = {{a->dealer, 0, ZMQ_POLLIN, 0}, {a->data, 0, ZMQ_POLLIN, 0}};
        int nitems = 2;
        if (a->monitor)
            items[nitems++] = (zmq_pollitem_t){a->monitor, 0, ZMQ_POLLIN, 0};
        if (spm_security_zap(a->security))
            items[nitems++] = (zmq_pollitem_t){spm_security_zap(a->security), 0, ZMQ_POLLIN, 0};
        nitems += spm_blockclient_items(a->copier, items + nitems, 64);
        zmq_poll(items, nitems, 100);
        spm_log_rate_tick(); /* the counted lines of routine events */
        spm_security_zap_handle(a->security);
        if (a->monitor && (items[2].revents & ZMQ_POLLIN)) {
            zmq_msg_t ev;
            zmq_msg_init(&ev);
            while (zmq_msg_recv(&ev, a->monitor, ZMQ_DONTWAIT) >= 0) /* event, then address */
                ;
            zmq_msg_close(&ev);
            last_beat = 0; /* a heartbeat now: a new center says it does not know us */
        }
        spm_msg_t m;
        int r;
        spm_dataagent_serve(a->served);
        spm_blockclient_process(a->copier);
        spm_blockclient_expire(a->copier, spm_now_us());
        while ((r = spm_wire_recv(a->dealer, 0, 1, &m, NULL)) > 0) {
            if (r != 1)
                continue;
            last_heard = spm_now_us();
            shutdown |= m.env->body_case == SPM__ENVELOPE__BODY_SHUTDOWN;
            if (m.env->body_case == SPM__ENVELOPE__BODY_DROP)
                spm_dataagent_drop(a->served, m.env->drop->blocks, m.env->drop->n_blocks);
            if (m.env->body_case == SPM__ENVELOPE__BODY_COPY)
                spm_dataagent_copy(a->served, a->copier, a->dealer, m.env->copy);
            if (m.env->body_case == SPM__ENVELOPE__BODY_ERROR &&
                m.env->error->status == SPM_ESTRANGER && !lost) {
                /* The center restarted: join it again now, as the same node. */
                spm_log_warn("the center does not know this node (it restarted, or took the "
                             "node for dead while it was silent); joining again");
                lost = 1;
                last_hello = 0;
            }
            if (m.env->body_case == SPM__ENVELOPE__BODY_HEARTBEAT)
                spm_agent_metrics_heard(a, m.env->heartbeat);
            if (m.env->body_case == SPM__ENVELOPE__BODY_HEARTBEAT && lost) {
                /* The center that knows this node answers again (a new
                   one drops heartbeats before HELLO): it had stalled. Its
                   IEUs exited meanwhile; spm_ieus_supervise restarts them. */
                lost = 0;
                spm_log_warn("the center answers again; node %u resumes", a->node);
            }
            if (m.env->body_case == SPM__ENVELOPE__BODY_WELCOME && lost) {
                /* A restarted center: its IEUs join again under the node's
                   index. A center on the same store resumes its jobs and
                   learns where their blocks are from the nodes: this one
                   keeps its blocks and tells it which. */
                a->node = m.env->welcome->index;
                a->hb_ms = m.env->welcome->heartbeat_ms; /* the new center's pace */
                a->dead_ms = m.env->welcome->dead_ms;
                lost = 0;
                int same =
                    m.env->welcome->store_id.len == sizeof a->store_id &&
                    memcmp(m.env->welcome->store_id.data, a->store_id, sizeof a->store_id) == 0;
                spm_log_warn("the center is back%s; node %u rejoined, restarting its IEUs",
                             same ? " on the same store" : " on another store", a->node);
                if (!same && m.env->welcome->store_id.len == sizeof a->store_id)
                    memcpy(a->store_id, m.env->welcome->store_id.data, sizeof a->store_id);
                /* What the node keeps is told before its IEUs join again, so
                   that the center drops what it no longer knows before they
                   can read it. */
                if (same)
                    report_held(a->cache, a->dealer);
                if (!draining)
                    spm_ieus_restart_all(a, a->cache, same);
                spm_dataagent_forwarding(a->served, a->copier, a->node);
            }
            spm_msg_close(&m);
        }
        if (shutdown)
            break;
        if (!lost && !draining)
            spm_ieus_supervise(a, a->dealer);
        int rejoin = 0;
        if (!draining && spm_agent_check_cache(a, &rejoin) != 0)
            return SPM_ESTORE; /* the detail says why, in one line */
        if (rejoin) {
            lost = 1; /* HELLO at once, as the same node; its IEUs start on WELCOME */
            last_hello = 0;
        }
        uint64_t now = spm_now_us();
        if (lost && now - last_hello > 2000000) {
            send_hello(a, a->node + 1); /* the same node, if the center will have it */
            last_hello = now;
        }
        if (now - last_beat >= (uint64_t)a->hb_ms * 1000) {
            Spm__Heartbeat hbm = SPM__HEARTBEAT__INIT;
            report(a, a->served, a->cache, &hbm);
            Spm__Envelope e = SPM__ENVELOPE__INIT;
            e.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
            e.heartbeat = &hbm;
            spm_wire_send(a->dealer, NULL, &e, NULL, 0, NULL);
            last_beat = now;
        }
        if (now - last_published >= PUBLISH_US) {
            spm_agent_metrics_publish(a, !lost);
            last_published = now;
        }
        if (!lost && now - last_heard > 2 * (uint64_t)a->dead_ms * 1000) {
            /* Wait for it (a restarted center, a healed network) rather than
               exit: its IEUs exit on their own, and come back on rejoin. */
            spm_log_warn("the center has been silent for %u ms; waiting for it", 2 * a->dead_ms);
            lost = 1;
        }
    }
    if (draining && !shutdown) {
        a->drain_s = 0; /* those still running past the drain's end are killed */
        spm_ieus_stop_all(a);
        /* The node leaves: a drain, not a death. Sent before the socket
           closes, which waits up to a second for it to go. */
        Spm__Bye bye = SPM__BYE__INIT;
        Spm__Envelope e = SPM__ENVELOPE__INIT;
        e.body_case = SPM__ENVELOPE__BODY_BYE;
        e.bye = &bye;
        int linger = 1000;
        zmq_setsockopt(a->dealer, ZMQ_LINGER, &linger, sizeof linger);
        spm_wire_send(a->dealer, NULL, &e, NULL, 0, NULL);
        spm_log_info("node %u drained", a->node);
    }
    return 0;
}

void spm_agent_destroy(spm_agent_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    agent_t *a = *self_p;
    spm_http_destroy(&a->http); /* first: its last text was built from what follows */
    if (a->node_pipe >= 0)
        close(a->node_pipe); /* an IEU still waiting for its node exits */
    if (a->monitor)
        zmq_close(a->monitor);
    if (a->kids)
        spm_ieus_stop_all(a);
    free(a->kids);
    if (a->dealer)
        zmq_close(a->dealer);
    if (a->data)
        zmq_close(a->data);
    spm_security_destroy(&a->security);
    spm_blockclient_destroy(&a->copier);
    if (a->ctx)
        zmq_ctx_term(a->ctx); /* releases every frame still pointing into the cache */
    spm_dataagent_destroy(&a->served);
    spm_nodecache_destroy(&a->cache);
    if (*a->default_cache)
        spm_rmtree(a->default_cache);
    free(a);
    *self_p = NULL;
}
