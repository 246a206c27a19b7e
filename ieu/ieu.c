/*  =========================================================================
    ieu - an execution unit: a process that pulls SIs and runs them

    The main thread owns the DEALER socket to the center: it asks for work
    (PULL with credits: slots + prefetch SIs in hand), localizes each SI's
    operands as soon as the SI arrives (node cache, else straight from the
    nodes the ISSUE names as holders, else through the center), so the
    operands of prefetched SIs load while earlier ones run, and commits
    results in batches. `slots` worker threads execute SI bodies on
    operands read zero-copy from the node cache's memory map. Workers and
    the main thread meet at two mutex-guarded queues; an eventfd wakes the
    main thread's poll when a result is done.

    Outputs stay on the nodes (write-back): the IEU keeps each in its
    node's cache, where LRU never evicts it, and has replicas-1 other nodes
    keep a copy (pushed peer to peer) before the COMMIT, which carries only
    where each output lives, its size and checksum. With no other node to
    push to (a lone node), the output's bytes ride with the COMMIT to the
    center's store, its second copy.

    On the center's host (an ipc:// center) the IEU opens the center's store,
    reads operands straight from its memory map and writes its outputs into
    it before the COMMIT (which then carries no frames and says so): the
    store is this node's level 1, nothing is copied through a socket or into
    the node cache, and the center's directory does not list this node as a
    holder.

    This file holds the process: its lifecycle, its joining the VM and the
    main thread's loop. The parts of its work are in pull.c (credits),
    localize.c and plugins.c (operands), slots.c (the worker threads),
    keep.c (outputs kept on nodes) and commit.c (results in batches); the
    types they share in ieu_int.h.
    =========================================================================
*/
#include "ieu/ieu_int.h"
#include "base/config.h"
#include "base/log.h"
#include "base/lograte.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/*  Frees T and everything it owns. */
void spm_ieu_task_free(task_t *t)
{
    if (!t)
        return;
    if (t->cops) {
        for (size_t i = 0; i < t->nops; i++)
            free(t->cops[i].out);
        free(t->cops);
    }
    for (size_t i = 0; t->own && i < t->nops; i++)
        free(t->own[i]);
    free(t->own);
    free(t->own_len);
    for (size_t i = 0; t->ops && i < t->nops; i++)
        free(t->ops[i].holders);
    for (size_t i = 0; i < t->nouts; i++)
        spm_blockbuf_unref(t->outs[i].buf);
    free(t->outs);
    free(t->ops);
    free(t->params);
    free(t->error);
    free(t->reply);
    free(t);
}

/*  Sends ENV and the N frames F (ownership passes) to the center. */
int spm_ieu_send(ieu_t *ieu, Spm__Envelope *env, spm_frame_t *f, size_t n)
{
    return spm_wire_send(ieu->dealer, NULL, env, f, n, &ieu->wire);
}

/*  NODES: the data agents up now. Nodes gone are forgotten (their fetches
    and pushes move on), new ones learned. */
static void on_nodes(ieu_t *ieu, Spm__Node **nodes, size_t n)
{
    uint32_t *now = malloc((n ? n : 1) * sizeof *now);
    if (!now)
        return;
    for (size_t i = 0; i < n; i++) {
        now[i] = nodes[i]->index;
        if (spm_blockclient_node(ieu->bc, nodes[i]->index, nodes[i]->endpoint, nodes[i]->key) != 0)
            spm_log_warn("node %u: out of memory", nodes[i]->index);
    }
    for (size_t i = 0; i < ieu->nnodes; i++) {
        int up = 0;
        for (size_t k = 0; k < n && !up; k++)
            up = now[k] == ieu->nodes[i];
        if (!up)
            spm_blockclient_node_down(ieu->bc, ieu->nodes[i]);
    }
    free(ieu->nodes);
    ieu->nodes = now;
    ieu->nnodes = n;
}

/*  Opens the center's store named in welcome W for direct reads, when this
    IEU may (an ipc:// center is on this host) and it is the store W names. */
static void open_store(ieu_t *ieu, const Spm__Welcome *w)
{
    if (!ieu->store_reads || !w->store_dir || !*w->store_dir || w->store_id.len != 16)
        return;
    ieu->store = spm_store_view_open(w->store_dir, w->store_id.data);
    if (!ieu->store)
        spm_log_info("reading blocks through the center: %s", spm_error_detail());
}

/*  Reads the node index the agent writes on FD once the center has
    welcomed the node, then closes FD. The agent writes one 4-byte record
    per IEU, atomically, and every reader takes 4 bytes, so IEUs sharing
    the pipe each get a whole one. Returns 0, or -1 when the pipe closed
    first (the agent could not join and says why) or a signal came. */
static int await_node(int fd, uint32_t *node)
{
    uint8_t b[4];
    ssize_t n = -1;
    while (!stop_flag) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue; /* a timeout, or a signal: stop_flag is looked at */
        n = read(fd, b, sizeof b);
        if (n >= 0 || errno != EINTR)
            break;
    }
    close(fd);
    if (n != (ssize_t)sizeof b)
        return -1;
    memcpy(node, b, sizeof b);
    return 0;
}

/*  Says HELLO and waits for the WELCOME. MONITOR (may be NULL) reports
    the handshakes with CENTER: a refused key ends the wait at once.
    Returns 0, SPM_EDENIED (detail set) or SPM_EUNREACH. */
static int hello(ieu_t *ieu, long timeout_ms, void *monitor, const char *center)
{
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__IEU;
    h.node_index = ieu->node;
    h.slots = ieu->slots;
    h.pid = (uint32_t)getpid();
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    if (spm_ieu_send(ieu, &env, NULL, 0) != 0)
        return SPM_EUNREACH;
    zmq_pollitem_t items[2] = {{ieu->dealer, 0, ZMQ_POLLIN, 0}, {monitor, 0, ZMQ_POLLIN, 0}};
    uint64_t deadline = spm_now_us() + (uint64_t)timeout_ms * 1000;
    while (!stop_flag && spm_now_us() < deadline) {
        if (zmq_poll(items, monitor ? 2 : 1, 100) <= 0)
            continue;
        if (monitor && spm_security_monitor_read(ieu->security, monitor, center) != 0)
            return SPM_EDENIED;
        spm_msg_t m;
        if (spm_wire_recv(ieu->dealer, 0, 1, &m, &ieu->wire) != 1)
            continue;
        int ok = m.env->body_case == SPM__ENVELOPE__BODY_WELCOME;
        if (ok) {
            ieu->index = m.env->welcome->index;
            ieu->heartbeat_ms = m.env->welcome->heartbeat_ms;
            ieu->dead_ms = m.env->welcome->dead_ms;
            ieu->replicas = m.env->welcome->replicas ? m.env->welcome->replicas : 1;
            open_store(ieu, m.env->welcome);
            on_nodes(ieu, m.env->welcome->nodes, m.env->welcome->n_nodes);
        }
        spm_msg_close(&m);
        if (ok)
            return 0;
    }
    return SPM_EUNREACH;
}

/*  The main thread's loop, from the first PULL to a SHUTDOWN or the end of
    a drain. Returns 0, SPM_ESYS, SPM_ETIMEOUT (the center went silent) or
    SPM_ESTRANGER (the center took it for dead or restarted). */
static int loop(ieu_t *ieu)
{
    uint64_t last_heard = spm_now_us(), last_beat = 0;
    spm_ieu_pull(ieu);
    for (;;) {
        if (stop_flag && !ieu->draining) {
            /* SIGTERM drains: running SIs finish and commit, queued ones
               go back to the center with the BYE below. */
            pthread_mutex_lock(&ieu->lock);
            ieu->draining = 1;
            pthread_cond_broadcast(&ieu->cond);
            pthread_mutex_unlock(&ieu->lock);
        }
        if (ieu->draining) {
            pthread_mutex_lock(&ieu->lock);
            int idle = ieu->executing == 0 && !ieu->done.head && !ieu->keeping && !ieu->kept.head;
            pthread_mutex_unlock(&ieu->lock);
            if (idle)
                break;
        }
        /* The center, the workers' eventfd, and the nodes asked for blocks. */
        zmq_pollitem_t items[2 + 256];
        int nitems = 2;
        items[0] = (zmq_pollitem_t){ieu->dealer, 0, ZMQ_POLLIN, 0};
        items[1] = (zmq_pollitem_t){NULL, ieu->efd, ZMQ_POLLIN, 0};
        nitems += spm_blockclient_items(ieu->bc, items + 2, 256);
        int busy = spm_hmap_size(ieu->fetches) || spm_blockclient_pending(ieu->bc);
        long wait = busy ? 100 : (long)ieu->heartbeat_ms,
             due = spm_ieu_commit_wait_ms(ieu, spm_now_us());
        int n = zmq_poll(items, nitems, due >= 0 && due < wait ? due : wait);
        if (n < 0 && zmq_errno() != EINTR)
            return SPM_ESYS;
        spm_log_rate_tick(); /* the counted lines of routine events */
        if (items[1].revents & ZMQ_POLLIN)
            spm_ieu_collect_done(ieu);
        if (nitems > 2)
            spm_blockclient_process(ieu->bc);
        for (int k = 0; (items[0].revents & ZMQ_POLLIN) && k < 1024; k++) {
            spm_msg_t m;
            int r = spm_wire_recv(ieu->dealer, 0, 1, &m, &ieu->wire);
            if (r == 2)
                continue;
            if (r != 1)
                break;
            if (m.env->body_case == SPM__ENVELOPE__BODY_ERROR &&
                m.env->error->status == SPM_ESTRANGER) {
                /* Taken for dead while silent (stopped, or a center that
                   restarted): out of service for good. Exiting lets the
                   agent start another, which joins; waiting would keep a
                   live IEU out of service, since these answers, once a
                   second, would never let the center seem silent. */
                spm_log_warn("the center no longer knows this IEU (it was taken for dead, or "
                             "the center restarted); exiting");
                spm_msg_close(&m);
                return SPM_ESTRANGER;
            }
            last_heard = spm_now_us();
            switch (m.env->body_case) {
            case SPM__ENVELOPE__BODY_ISSUE:
                spm_ieu_on_issue(ieu, m.env->issue);
                break;
            case SPM__ENVELOPE__BODY_GET_REPLY:
                spm_ieu_on_get_reply(ieu, &m);
                break;
            case SPM__ENVELOPE__BODY_NODES:
                on_nodes(ieu, m.env->nodes->nodes, m.env->nodes->n_nodes);
                break;
            case SPM__ENVELOPE__BODY_SHUTDOWN:
                spm_msg_close(&m);
                return 0;
            default:
                break;
            }
            spm_msg_close(&m);
        }
        spm_blockclient_expire(ieu->bc, spm_now_us());
        spm_ieu_send_commit(ieu);
        spm_ieu_send_refs(ieu);
        if (!ieu->draining)
            spm_ieu_pull(ieu);
        uint64_t now = spm_now_us();
        if (now - last_beat >= (uint64_t)ieu->heartbeat_ms * 1000) {
            Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
            Spm__Envelope env = SPM__ENVELOPE__INIT;
            env.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
            env.heartbeat = &hb;
            spm_ieu_send(ieu, &env, NULL, 0);
            last_beat = now;
        }
        if (now - last_heard > 2 * (uint64_t)ieu->dead_ms * 1000) {
            spm_log_warn("the center has been silent for %u ms; exiting", 2 * ieu->dead_ms);
            return SPM_ETIMEOUT;
        }
    }
    /* Drained: tell the center, which re-issues what is still held here. */
    Spm__Bye bye = SPM__BYE__INIT;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_BYE;
    env.bye = &bye;
    spm_ieu_send(ieu, &env, NULL, 0);
    return 0;
}

/*  Closes the monitor of the handshakes with the center: once it has
    answered, or with the IEU. */
static void monitor_close(ieu_t *ieu)
{
    if (ieu->monitor)
        zmq_close(ieu->monitor);
    ieu->monitor = NULL;
}

int spm_ieu_new(const spm_ieu_opts_t *o, spm_ieu_proc_t **out)
{
    assert(o);
    assert(out);
    *out = NULL;
    if (o->local_files)
        spm_si_set_local_files(1);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    ieu_t *ieu = calloc(1, sizeof *ieu);
    if (!ieu)
        return SPM_ENOMEM;
    *ieu = (ieu_t){.node = (uint32_t)o->node,
                   .slots = (uint32_t)o->slots,
                   .prefetch = (uint32_t)o->prefetch,
                   .store_reads = o->store_reads && strncmp(o->center, "ipc://", 6) == 0,
                   .heartbeat_ms = (uint32_t)spm_config_default_long("center", "heartbeat_ms"),
                   .dead_ms = (uint32_t)spm_config_default_long("center", "dead_ms"),
                   .heap_bytes = (size_t)o->heap_mb << 20,
                   .efd = -1,
                   .center = o->center,
                   .node_fd = (int)o->node_fd};
    pthread_mutex_init(&ieu->lock, NULL);
    pthread_cond_init(&ieu->cond, NULL);
    int rc = 0;
    ieu->cache = spm_nodecache_open(o->cache_dir, (uint64_t)o->cache_mb << 20, 0);
    if (ieu->cache)
        spm_nodecache_on_evict(ieu->cache, spm_ieu_on_evict, ieu);
    ieu->fetches = spm_hmap_new();
    ieu->plugins = spm_hmap_new();
    ieu->security = spm_security_new(o->keys, "agent", o->insecure);
    ieu->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ieu->ctx = zmq_ctx_new();
    ieu->workers = calloc((size_t)o->slots, sizeof *ieu->workers);
    if (ieu->ctx && ieu->security && (ieu->bc = spm_blockclient_new(ieu->ctx, ieu->security)))
        spm_blockclient_on_corrupt(ieu->bc, spm_ieu_on_corrupt, ieu);
    if (!ieu->cache || !ieu->fetches || !ieu->plugins || !ieu->bc || !ieu->security ||
        ieu->efd < 0 || !ieu->ctx || !ieu->workers) {
        rc = SPM_ESYS;
        goto err;
    }
    ieu->dealer = spm_wire_socket(ieu->ctx, ZMQ_DEALER);
    ieu->monitor = ieu->dealer ? spm_security_monitor(ieu->ctx, ieu->dealer, 0) : NULL;
    if (ieu->node_fd >= 0) /* started with its agent: an embedded center may still be starting */
        spm_wire_await_ipc(ieu->center, 2000);
    if (!ieu->dealer ||
        (rc = spm_security_connect(ieu->security, ieu->dealer, ieu->center, NULL)) != 0) {
        rc = rc ? rc : SPM_ESYS;
        goto err;
    }
    *out = ieu;
    return 0;
err:
    spm_ieu_destroy(&ieu);
    return rc;
}

int spm_ieu_run(spm_ieu_proc_t *self)
{
    assert(self);
    ieu_t *ieu = self;
    /* Connected (the handshake goes on meanwhile), it waits for its node. */
    if (ieu->node_fd >= 0) {
        int fd = ieu->node_fd;
        ieu->node_fd = -1;
        if (await_node(fd, &ieu->node) != 0)
            return stop_flag ? 0 : SPM_EDEAD; /* the agent did not join, and says why */
    }
    int rc = hello(ieu, 10000, ieu->monitor, ieu->center);
    monitor_close(ieu);
    if (rc != 0) {
        if (stop_flag)
            return SPM_ECANCELED;
        if (rc != SPM_EDENIED)
            spm_error(SPM_EUNREACH, "%s: the center did not answer", ieu->center);
        return rc;
    }
    spm_ieu_prepare_heap(ieu); /* the main thread's: the store's copies of outputs */
    for (; ieu->started < ieu->slots; ieu->started++)
        if (pthread_create(&ieu->workers[ieu->started], NULL, spm_ieu_worker, ieu) != 0)
            break;
    return loop(ieu);
}

void spm_ieu_destroy(spm_ieu_proc_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ieu_t *ieu = *self_p;
    monitor_close(ieu);
    pthread_mutex_lock(&ieu->lock);
    ieu->stop = 1;
    pthread_cond_broadcast(&ieu->cond);
    pthread_mutex_unlock(&ieu->lock);
    for (size_t i = 0; i < ieu->started; i++)
        pthread_join(ieu->workers[i], NULL);
    free(ieu->workers);
    for (task_t *t; (t = pop(&ieu->ready)) || (t = pop(&ieu->done));)
        spm_ieu_task_free(t);
    for (task_t *t; (t = pop(&ieu->kept));)
        spm_ieu_task_free(t);
    if (ieu->fetches) {
        size_t pos = 0;
        uint64_t key;
        void *value;
        while (spm_hmap_next(ieu->fetches, &pos, &key, &value))
            free(value); /* their tasks are freed with the queues or leak at exit */
        spm_hmap_destroy(&ieu->fetches);
    }
    if (ieu->plugins) {
        size_t pos = 0;
        uint64_t key;
        void *value;
        while (spm_hmap_next(ieu->plugins, &pos, &key, &value))
            free(value); /* SIs still waiting leak at exit, as those being fetched */
        spm_hmap_destroy(&ieu->plugins);
    }
    spm_blockclient_destroy(&ieu->bc); /* tasks still being kept leak at exit */
    free(ieu->nodes);
    free(ieu->publish.v);
    free(ieu->drop.v);
    if (ieu->dealer)
        zmq_close(ieu->dealer);
    spm_security_destroy(&ieu->security);
    if (ieu->ctx)
        zmq_ctx_term(ieu->ctx);
    if (ieu->efd >= 0)
        close(ieu->efd);
    spm_nodecache_destroy(&ieu->cache);
    spm_store_view_destroy(&ieu->store);
    pthread_cond_destroy(&ieu->cond);
    pthread_mutex_destroy(&ieu->lock);
    free(ieu);
    *self_p = NULL;
}
