/*  =========================================================================
    center - the center of one VM: its life (new, destroy) and its loop
    (the turn, ticks, the pump, shutdown)

    One thread, one ROUTER socket, one poll loop (as Redis does it): IEUs,
    agents and clients all talk to the same socket, and every message is
    handled to the end before the next is read. No locks. The CPU time this
    process uses while a job runs is that job's management overhead (w_man).
    The handlers are in workers.c, clients.c and blocks.c, what the center
    does once before its loop in startup.c (vm/center/center.h).
    =========================================================================
*/
#include "base/heap.h"
#include "base/log.h"
#include "base/lograte.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "transport/trace.h"
#include "vm/center/center_int.h"
#include "vm/center/dashboard.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag; /* set by SIGINT/SIGTERM */

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/*  The CPU time this process has used, user and system, in microseconds. */
uint64_t center_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/*  Routing ids from ZeroMQ are 5 bytes; fold them into a map key. */
uint64_t center_id_key(zmq_msg_t *id)
{
    const unsigned char *p = zmq_msg_data(id);
    size_t n = zmq_msg_size(id);
    uint64_t k = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        k = (k ^ p[i]) * 1099511628211ull;
    return k ? k : 1;
}

/*  The peer that sent M, or NULL. A peer may choose its own routing id
    (ZMQ_ROUTING_ID), so one whose id only hashes like another's is not
    that other: the bytes must match. */
static peer_t *peer_of(spm_center_t *c, spm_msg_t *m)
{
    peer_t *p = spm_hmap_get(c->peers, center_id_key(&m->id));
    size_t n = zmq_msg_size(&m->id);
    if (p && (zmq_msg_size(&p->id) != n || memcmp(zmq_msg_data(&p->id), zmq_msg_data(&m->id), n)))
        return NULL;
    return p;
}

/*  Sends ENV and N block frames F (ZeroMQ owns them from here, also when
    the peer is gone) to the peer routed by ID, counted in the wire stats. */
void center_send_to(spm_center_t *c, zmq_msg_t *id, Spm__Envelope *env, spm_frame_t *f, size_t n)
{
    spm_wire_send(c->router, id, env, f, n, &c->wire);
}

/*  Sends the peer routed by ID an ERROR with CODE and MSG. */
void center_send_error(spm_center_t *c, zmq_msg_t *id, int code, const char *msg)
{
    Spm__Error e = SPM__ERROR__INIT;
    e.status = code;
    e.message = (char *)msg;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_ERROR;
    env.error = &e;
    center_send_to(c, id, &env, NULL, 0);
}

/*  A message from a peer that has not said HELLO: most likely one that
    knew this center before it restarted. It is told so (at most once a
    second per peer), and says HELLO again. */
static void stranger(spm_center_t *c, spm_msg_t *m)
{
    uint64_t key = center_id_key(&m->id), now = spm_now_us();
    uintptr_t last = (uintptr_t)spm_hmap_get(c->strangers, key);
    if (last && now - (uint64_t)last < 1000000)
        return;
    if (spm_hmap_size(c->strangers) > 4096) { /* forget them all rather than grow */
        spm_hmap_destroy(&c->strangers);
        c->strangers = spm_hmap_new();
    }
    if (c->strangers)
        spm_hmap_put(c->strangers, key, (void *)(uintptr_t)now);
    center_send_error(c, &m->id, SPM_ESTRANGER,
                      "this center does not know you (it restarted): HELLO");
}

/*  Hands message M to its handler: a HELLO from anyone, anything else only
    from a peer that said HELLO, and each only from the roles that send it
    (the rest is ignored). A COMMIT kept for the group commit is taken (M
    is left empty). */
static void handle(spm_center_t *c, spm_msg_t *m)
{
    peer_t *p = peer_of(c, m);
    int body = m->env->body_case;
    if (body == SPM__ENVELOPE__BODY_HELLO) {
        center_on_hello(c, m);
        return;
    }
    if (!p) { /* everything else needs a HELLO first */
        c->wire.dropped++;
        stranger(c, m);
        return;
    }
    if (p->dead && (p->role == ROLE_AGENT || p->role == ROLE_IEU)) {
        /* Taken for dead (silent for --dead-ms: a stopped process), it is
           out of service: nothing it says counts, and it is told to join
           again (an agent does, as the same node; an IEU, unanswered,
           exits and its agent starts another). */
        stranger(c, m);
        return;
    }
    p->last_seen = spm_now_us();
    if (p->role == ROLE_IEU)
        spm_idu_ieu_heard(c->idu, p->index, p->last_seen);
    switch (body) {
    case SPM__ENVELOPE__BODY_PULL:
        if (p->role == ROLE_IEU && !p->dead)
            spm_idu_ieu_pull(c->idu, p->index, m->env->pull->credits);
        break;
    case SPM__ENVELOPE__BODY_COMMIT:
        if (p->role == ROLE_IEU)
            center_on_commit(c, p, m);
        break;
    case SPM__ENVELOPE__BODY_HEARTBEAT: {
        if (p->role == ROLE_AGENT) {
            spm_dataplane_node_report(c->dp, p->node, m->env->heartbeat);
            spm_status_node_heard(&c->status, p->node, m->env->heartbeat, p->last_seen);
        }
        Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
        if (p->role == ROLE_AGENT)
            spm_metrics_node_answer(c->metrics, p->node, &hb);
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
        env.heartbeat = &hb;
        center_send_to(c, &m->id, &env, NULL, 0);
        break;
    }
    case SPM__ENVELOPE__BODY_BYE:
        if (p->role == ROLE_IEU)
            center_ieu_gone(c, p, "drained");
        else if (p->role == ROLE_AGENT && m->env->bye->reason && *m->env->bye->reason) {
            /* its cache went out of service: the node lost its blocks */
            char why[400];
            snprintf(why, sizeof why, "left service: %.300s", m->env->bye->reason);
            center_agent_gone(c, p, why);
        } else if (p->role == ROLE_AGENT)
            center_agent_gone(c, p, "drained");
        break;
    case SPM__ENVELOPE__BODY_IEU_DIED:
        if (p->role == ROLE_AGENT)
            center_on_ieu_died(c, p, m);
        break;
    case SPM__ENVELOPE__BODY_SUBMIT:
        center_on_submit(c, m);
        break;
    case SPM__ENVELOPE__BODY_WATCH:
        center_on_watch(c, m);
        break;
    case SPM__ENVELOPE__BODY_GET:
        center_on_get(c, p, m);
        break;
    case SPM__ENVELOPE__BODY_PUBLISH:
        if (p->role == ROLE_IEU || p->role == ROLE_AGENT)
            center_on_blocks(c, p, m->env->publish->blocks, m->env->publish->n_blocks, 1);
        break;
    case SPM__ENVELOPE__BODY_DROP:
        if (p->role == ROLE_IEU)
            center_on_blocks(c, p, m->env->drop->blocks, m->env->drop->n_blocks, 0);
        break;
    case SPM__ENVELOPE__BODY_PUT:
        center_on_put(c, m);
        break;
    case SPM__ENVELOPE__BODY_STORE:
        if (p->role == ROLE_CLIENT || p->role == ROLE_AGENT)
            center_on_store(c, p, m);
        break;
    case SPM__ENVELOPE__BODY_PLACED:
        if (p->role == ROLE_CLIENT)
            center_on_placed(c, m);
        break;
    case SPM__ENVELOPE__BODY_STATUS:
        center_on_status(c, m);
        break;
    case SPM__ENVELOPE__BODY_CANCEL:
        center_on_cancel(c, m);
        break;
    case SPM__ENVELOPE__BODY_JOBS:
        center_on_jobs(c, m);
        break;
    case SPM__ENVELOPE__BODY_DISCARD:
        if (p->role == ROLE_CLIENT)
            center_on_discard(c, m);
        break;
    case SPM__ENVELOPE__BODY_SHUTDOWN:
        if (p->role == ROLE_CLIENT)
            c->stopping = 1;
        break;
    default:
        c->wire.dropped++; /* a message the center never receives */
        break;
    }
}

/*  With --http, once a tick: what the HTTP thread serves, built here and
    handed over without waiting (transport/http.h). */
static void publish(spm_center_t *c, uint64_t now)
{
    spm_metrics_sample(c->metrics, c->idu, now);
    center_update_status(c);
    spm_http_snapshot_t *snap = spm_http_snapshot_new();
    if (!snap)
        return;
    char *json = NULL, *text = NULL, *metrics = NULL, *history = NULL;
    if (spm_status_build(c->idu, c->dp, &c->status, &json, &text) != 0)
        json = NULL;
    free(text);
    spm_metrics_text(c->metrics, c->idu, c->dp, &c->status, center_cpu_us(), &metrics);
    spm_metrics_history(c->metrics, c->idu, &history);
    if (spm_http_snapshot_add(snap, "/api/status", SPM_HTTP_JSON, json) == 0 &&
        spm_http_snapshot_add(snap, "/metrics", SPM_HTTP_PROMETHEUS, metrics) == 0 &&
        spm_http_snapshot_add(snap, "/api/history", SPM_HTTP_JSON, history) == 0)
        spm_http_publish(c->http, &snap);
    else
        spm_http_snapshot_destroy(&snap);
}

/*  Once every tick: silent peers are dead, leases expire, watchers get
    progress. */
static void tick(spm_center_t *c)
{
    uint64_t now = spm_now_us();
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(c->ieus, &pos, &key, &value)) {
        peer_t *p = value;
        if (!p->dead && now - p->last_seen > (uint64_t)c->dead_ms * 1000)
            center_ieu_gone(c, p, "went silent");
    }
    pos = 0;
    while (spm_hmap_next(c->peers, &pos, &key, &value)) {
        peer_t *p = value;
        if (p->role == ROLE_AGENT && !p->dead && now - p->last_seen > (uint64_t)c->dead_ms * 1000)
            center_agent_gone(c, p, "went silent");
    }
    if (c->lease_us) {
        center_reissued_t before[64];
        size_t nbefore = center_reissued_now(c, before, 64);
        spm_idu_expire(c->idu, now, c->lease_us);
        center_record_reissues(c, before, nbefore, "leases expired");
    }
    spm_sfhosts_tick(c->sfhosts, now);
    /* The pages of the store this loop read (b-tree pages, the headers that
       commits are checked against) would stay mapped, and count in its
       memory, until it exits. Once a second: each time costs TLB flushes
       on every core, and the pages read again fault back in. */
    if (++c->ticks % 10 == 0)
        spm_store_unmap_all(c->store);
    /* A job's SIs, their messages and records come and go through malloc,
       which keeps up to 256 MiB freed (base/heap.c): after a million tiny
       SIs the center held 380 MiB while idle. Once no job runs, what was
       freed goes back to the system, then again 2 s later (the records of
       a job whose report was still on its way). */
    if (spm_idu_running(c->idu) > 0) {
        c->trims_due = 2;
        c->trim_at = now;
    } else if (c->trims_due && now >= c->trim_at) {
        spm_heap_release();
        c->trims_due--;
        c->trim_at = now + 2000000;
    }
    pos = 0;
    while (spm_hmap_next(c->traces, &pos, &key, &value)) {
        spm_idu_job_info_t info;
        if (spm_idu_job_info(c->idu, key, &info) != 0 || info.state != 0)
            continue;
        spm_trace_event_t ev = {.phase = 'C', .ts = now, .value = info.ready};
        snprintf(ev.name, sizeof ev.name, "ready SIs");
        spm_trace_add(value, &ev);
    }
    pos = 0;
    while (spm_hmap_next(c->watches, &pos, &key, &value)) {
        watch_t *w = value;
        if (now - w->last_progress_us >= 200000) {
            w->last_progress_us = now;
            center_send_progress(c, w);
        }
    }
    center_records_tick(c, now);
    if (c->jobapi) /* a copy of a running job's trace, if the dashboard asks */
        spm_jobapi_turn(c->jobapi, now, center_trace_copy, c);
    if (c->http)
        publish(c, now);
}

/*  Tells every IEU and agent that the center stops (SHUTDOWN). */
static void shutdown_peers(spm_center_t *c)
{
    Spm__Shutdown s = SPM__SHUTDOWN__INIT;
    s.reason = "center shutting down";
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_SHUTDOWN;
    env.shutdown = &s;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(c->peers, &pos, &key, &value)) {
        peer_t *p = value;
        if (p->role == ROLE_IEU || p->role == ROLE_AGENT)
            center_send_to(c, &p->id, &env, NULL, 0);
    }
}

/*  Frees the center and everything it holds, and sets *SELF to NULL. */
void spm_center_destroy(spm_center_t **self_p)
{
    assert(self_p);
    spm_center_t *c = *self_p;
    if (!c)
        return;
    /* First: its thread's handlers read the history and the kept traces. */
    spm_http_destroy(&c->http);
    spm_jobapi_destroy(&c->jobapi);
    spm_durable_destroy(&c->durable);
    spm_history_destroy(&c->history);
    spm_sfhosts_destroy(&c->sfhosts);
    spm_warmer_destroy(&c->warmer);
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (c->peers && spm_hmap_next(c->peers, &pos, &key, &value)) {
        peer_t *p = value;
        for (size_t i = 0; i < p->nbatch; i++)
            center_free_si_msg(p->batch[i]);
        free(p->batch);
        zmq_msg_close(&p->id);
        free(p);
    }
    pos = 0;
    while (c->watches && spm_hmap_next(c->watches, &pos, &key, &value)) {
        zmq_msg_close(&((watch_t *)value)->id);
        free(value);
    }
    pos = 0;
    while (c->usage && spm_hmap_next(c->usage, &pos, &key, &value))
        free(value);
    for (size_t n = 0; n < c->npending; n++) {
        free(c->pending[n].ok);
        spm_msg_close(&c->pending[n].m);
    }
    free(c->pending);
    for (size_t i = 0; i < c->nparked; i++)
        zmq_msg_close(&c->parked[i].id);
    free(c->parked);
    free(c->agents);
    spm_hmap_destroy(&c->peers);
    spm_hmap_destroy(&c->strangers);
    spm_hmap_destroy(&c->identities);
    spm_status_free(&c->status);
    spm_hmap_destroy(&c->ieus);
    spm_hmap_destroy(&c->watches);
    spm_hmap_destroy(&c->usage);
    pos = 0;
    while (c->traces && spm_hmap_next(c->traces, &pos, &key, &value)) {
        spm_trace_t *t = value;
        spm_trace_destroy(&t);
    }
    spm_hmap_destroy(&c->traces);
    spm_metrics_destroy(&c->metrics);
    spm_idu_destroy(&c->idu);
    spm_dataplane_destroy(&c->dp);
    spm_store_destroy(&c->store);
    free(c->store_dir);
    if (c->router)
        zmq_close(c->router);
    spm_security_destroy(&c->security); /* closes the ZAP socket before the context */
    if (c->ctx)
        zmq_ctx_term(c->ctx);
    free(c->listen);
    free(c->store_path);
    free(c);
    *self_p = NULL;
}

/*  Makes a center from O (vm/center/center.h). Returns it, or NULL with
 *RC set and the detail saying why. */
spm_center_t *spm_center_new(const spm_center_opts_t *o, int *rc)
{
    assert(o && rc);
    char why[1024]; /* the failure's detail, kept across the cleanup */
    spm_center_t *self = calloc(1, sizeof *self);
    if (!self) {
        *rc = SPM_ENOMEM;
        return NULL;
    }
    self->heartbeat_ms = (uint32_t)o->heartbeat_ms;
    self->dead_ms = (uint32_t)o->dead_ms;
    if (self->heartbeat_ms > self->dead_ms / 3) {
        /* A peer silent for dead_ms is dead: it must have beaten three
           times by then, or every healthy node is taken for dead between
           two beats (--dead-ms 500 with the default beat of a second). */
        spm_log_info("heartbeats every %u ms, a third of the dead interval of %u ms (not %u ms)",
                     self->dead_ms / 3, self->dead_ms, self->heartbeat_ms);
        self->heartbeat_ms = self->dead_ms / 3;
    }
    self->lease_us = (uint64_t)o->lease_s * 1000000u;
    self->replicas = (uint32_t)o->replicas;
    self->plugins = o->plugins;
    self->started_us = spm_now_us();
    self->security = spm_security_new(o->keys, "center", o->insecure);
    self->store = o->no_sync ? spm_store_open_lazy(o->store) : spm_store_open(o->store);
    int lock_fd = -1;
    if (!self->store) {
        *rc = SPM_ESTORE;
        goto err;
    }
    if ((*rc = center_lock_store(o->store, &lock_fd)) != 0)
        goto err;
    spm_store_identity(self->store, self->store_id);
    self->warmer = spm_warmer_start(o->store, (uint64_t)o->warm_mb << 20);
    self->store_dir = realpath(o->store, NULL); /* NULL: IEUs go through the center */
    self->local = strncmp(o->listen, "ipc://", 6) == 0;
    self->idu = spm_idu_new(center_emit, center_job_done, self);
    self->dp = spm_dataplane_new(self->store, self->replicas, center_send_agent, self);
    self->peers = spm_hmap_new();
    self->strangers = spm_hmap_new();
    self->identities = spm_hmap_new();
    self->ieus = spm_hmap_new();
    self->watches = spm_hmap_new();
    self->usage = spm_hmap_new();
    self->traces = spm_hmap_new();
    self->ctx = zmq_ctx_new();
    self->listen = strdup(o->listen);
    self->store_path = strdup(o->store);
    if (!self->idu || !self->dp || !self->peers || !self->ieus || !self->watches || !self->usage ||
        !self->traces || !self->ctx || !self->security || !self->listen || !self->store_path) {
        *rc = SPM_ENOMEM;
        goto err;
    }
    spm_idu_sdb_floor(self->idu, spm_store_max_id(self->store, (spm_sdb_t)1 << 32));
    /* An IEU beats every heartbeat_ms while its SIs run: silent for two and
       a half beats, it is stopped (see spm_idu_set_speculate). */
    spm_idu_set_speculate(self->idu, o->speculate, (uint64_t)self->heartbeat_ms * 2500);
    spm_idu_set_directory(self->idu, spm_dataplane_directory(self->dp));
    spm_idu_job_floor(self->idu, spm_store_max_id(self->store, UINT64_MAX) >> 32);
    spm_idu_set_plugin_loader(self->idu, center_load_plugin, self);
    /* a plugin's super-functions run in hosts, never here */
    if (!(self->sfhosts =
              spm_sfhosts_new(self->idu, self->store,
                              (uint64_t)(o->sf_bound_ms > 0 ? o->sf_bound_ms : 2000) * 1000))) {
        *rc = SPM_ENOMEM;
        goto err;
    }
    self->plugin_type = spm_name_id(SPM_PLUGIN_TYPE);
    size_t quarantined = spm_plugins_quarantined(o->store, self->idu);
    spm_durable_opts_t dopts = {
        .journal = o->journal, .no_sync = o->no_sync, .sync_us = (uint64_t)o->sync_ms * 1000u};
    if (center_records_open(self, o) != 0 ||
        !(self->durable = spm_durable_open(self->store, o->store, self->store_id, &dopts)) ||
        center_resume_jobs(self) != 0) {
        *rc = SPM_EIO;
        goto err;
    }
    if (o->journal)
        center_sweep_store(self);
    if (quarantined) { /* once the journal says they failed */
        spm_durable_flush(self->durable);
        spm_plugins_quarantine_done(o->store);
    }
    if ((*rc = spm_plugins_guard(o->store)) != 0)
        goto err;
    center_write_pid(lock_fd, o->store);
    memcpy(self->cache_id, self->store_id, sizeof self->cache_id);
    if (!o->journal) { /* nothing is resumed: kept blocks would be of forgotten jobs */
        uint64_t salt = spm_now_us() ^ (uint64_t)getpid() << 40;
        if (getrandom(&salt, sizeof salt, GRND_NONBLOCK) != (ssize_t)sizeof salt)
            salt ^= (uint64_t)(uintptr_t)&salt;
        for (size_t i = 0; i < sizeof salt; i++)
            self->cache_id[8 + i] ^= (uint8_t)(salt >> 8 * i);
    }
    self->router = spm_wire_socket(self->ctx, ZMQ_ROUTER);
    if (!self->router) {
        *rc = SPM_ESYS;
        goto err;
    }
    /* A socket bound and listening already (--listen-fd): peers have
       connected to it while this center started, and their greetings
       wait in it. */
    if (o->listen_fd > 0 &&
        zmq_setsockopt(self->router, ZMQ_USE_FD, &o->listen_fd, sizeof o->listen_fd) != 0) {
        *rc = spm_error(SPM_ESYS, "--listen-fd %d: %s", o->listen_fd, zmq_strerror(zmq_errno()));
        goto err;
    }
    if ((*rc = spm_security_bind(self->security, self->ctx, self->router, o->listen)) != 0)
        goto err;
    /* Kept with or without --http: the agents' own /metrics hear their
       node's counts from it in the answer to their heartbeats. */
    if (!(self->metrics = spm_metrics_new(self->history))) {
        *rc = SPM_ENOMEM;
        goto err;
    }
    if (*o->http && !(self->http = spm_http_start(o->http, o->http_token, "center.http_token", rc)))
        goto err;
    if (self->http) {
        size_t len;
        const char *page = spm_dashboard_page(&len);
        if ((*rc = spm_http_page(self->http, "/", SPM_HTTP_HTML, page, len)) != 0 ||
            (*rc = spm_http_page(self->http, "/index.html", SPM_HTTP_HTML, page, len)) != 0 ||
            !(self->jobapi = spm_jobapi_new(self->http, self->history, rc)))
            goto err;
        center_trace_resumed(self);
    }
    if (self->http)
        spm_log_info("dashboard and metrics on http://%s/ (port %d)%s", o->http,
                     spm_http_port(self->http), *o->http_token ? ", token required" : "");
    return self;
err:
    /* the detail names the failure, whatever freeing the rest sets */
    snprintf(why, sizeof why, "%s", spm_error_detail());
    spm_center_destroy(&self);
    spm_error(*rc, "%s", why);
    return NULL;
}

/*  One turn of the loop: poll (100 ms), drain up to 4,096 messages, tick
    every 100 ms, then the group commit, the pump, the journal's write, the
    parked GETs, the data plane's turn and the ISSUEs. Returns 0, or -1
    when polling failed (the loop ends). */
static int turn(spm_center_t *c)
{
    zmq_pollitem_t items[2 + 256]; /* not zeroed: filled up to what is polled */
    items[0] = (zmq_pollitem_t){c->router, 0, ZMQ_POLLIN, 0};
    items[1] = (zmq_pollitem_t){spm_security_zap(c->security), 0, ZMQ_POLLIN, 0};
    size_t base = items[1].socket ? 2 : 1; /* then plugin jobs' hosts (read each turn anyway) */
    size_t nhosts = spm_sfhosts_poll_items(c->sfhosts, items + base, 256);
    int n = zmq_poll(items, (int)(base + nhosts), 100);
    if (n < 0 && zmq_errno() != EINTR)
        return -1;
    spm_log_rate_tick(); /* the counted lines of routine events */
    if (n > 0 && (items[1].revents & ZMQ_POLLIN))
        spm_security_zap_handle(c->security);
    for (int k = 0; n > 0 && k < 4096; k++) { /* drain, bounded */
        spm_msg_t m;
        int r = spm_wire_recv(c->router, 1, 1, &m, &c->wire);
        if (r == 2)
            continue;
        if (r != 1)
            break;
        handle(c, &m);
        spm_msg_close(&m);
    }
    uint64_t now = spm_now_us();
    spm_sfhosts_turn(c->sfhosts, now); /* what plugin jobs' callbacks did */
    if (now - c->last_tick > 100000) {
        tick(c);
        c->last_tick = now;
    }
    center_flush_commits(c);
    spm_idu_pump(c->idu); /* SIs picked for the IEUs with credits */
    /* one write of the turn's events, then its SIs and garbage may go */
    spm_durable_turn(c->durable, now, c->dirty, center_release_garbage, c);
    center_retry_parked(c, now);
    c->dirty = 0;
    spm_dataplane_turn(c->dp, now);
    center_send_issues(c);
    spm_sfhosts_send(c->sfhosts, now); /* this turn's events to plugin jobs' hosts */
    if (c->warmer)                     /* off by default: then the loop reads nothing for it */
        spm_warmer_note(c->warmer, spm_store_data_end(c->store), spm_idu_running(c->idu) == 0);
    return 0;
}

/*  Runs the loop until a stop (vm/center/center.h). */
void spm_center_run(spm_center_t *self)
{
    assert(self);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit is a full disk: an error, not death */
    spm_log_info("listening on %s, store %s", self->listen, self->store_path);
    while (!stop_flag && !self->stopping)
        if (turn(self) != 0)
            break;
    center_flush_commits(self);
    spm_durable_destroy(&self->durable); /* writes and syncs what is left */
    shutdown_peers(self);
    spm_log_info("stopped (%llu messages, %llu dropped)", (unsigned long long)self->wire.received,
                 (unsigned long long)self->wire.dropped);
}
