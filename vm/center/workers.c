/*  =========================================================================
    workers - the center's side of the IEUs and agents: HELLO, the SIs the
    IDU picked for each IEU (ISSUE), COMMITs and the group commit that
    applies them once per turn, deaths

    An IEU pulls SIs with credits and commits their results; an agent
    speaks for its node (its data agent, its IEUs' deaths). Part of the
    center (vm/center/center.h).
    =========================================================================
*/
#include "base/grow.h"
#include "base/log.h"
#include "runtime/registry.h"
#include "transport/trace.h"
#include "vm/center/center_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ dispatch */

/*  Frees S, an SI built by center_emit, with its operands and holders. */
void center_free_si_msg(Spm__Si *s)
{
    for (size_t i = 0; i < s->n_ops; i++) {
        if (s->ops[i])
            free(s->ops[i]->holders);
        free(s->ops[i]);
    }
    if (s->plugin)
        free(s->plugin->holders);
    free(s->plugin);
    free(s->ops);
    free(s);
}

/*  Fills the holders, checksum and size of operand O an IEU of NODE reads,
    so that it fetches the block itself without asking first. Holders that
    cannot be named (out of memory) only cost that IEU a GET. */
static void locate(spm_center_t *c, Spm__Operand *o, uint32_t node)
{
    uint64_t v = o->mode == SPM_R ? o->version : o->mode == SPM_RW ? o->in_version : 0;
    uint32_t h[8];
    size_t n = v ? spm_dataplane_locate(c->dp, o->sdb, v, h, 8, &o->checksum, &o->bytes) : 0;
    for (size_t i = 0; i < n; i++)
        if (h[i] == node)
            return; /* its own node holds it */
    if (n && (o->holders = malloc(n * sizeof *o->holders))) {
        memcpy(o->holders, h, n * sizeof *h);
        o->n_holders = n;
    }
}

/*  IDU emit callback: queue SI for IEU's next ISSUE message. */
void center_emit(void *arg, uint32_t ieu, const spm_idu_si_t *si)
{
    spm_center_t *c = arg;
    peer_t *p = spm_hmap_get(c->ieus, (uint64_t)ieu + 1);
    Spm__Si *s = malloc(sizeof *s);
    if (!p || !s) {
        free(s);
        return; /* the lease brings it back */
    }
    spm__si__init(s);
    s->id = si->id;
    s->attempt = si->attempt;
    s->opcode = si->opcode;
    s->job = si->job;
    s->params.data = (uint8_t *)si->params;
    s->params.len = si->params_len;
    s->n_ops = si->nops;
    s->ops = calloc(si->nops ? si->nops : 1, sizeof *s->ops);
    for (size_t i = 0; s->ops && i < si->nops; i++) {
        Spm__Operand *o = s->ops[i] = malloc(sizeof *o);
        if (!o)
            continue;
        spm__operand__init(o);
        o->sdb = si->ops[i].sdb;
        o->version = si->ops[i].version;
        o->in_version = si->ops[i].in_version;
        o->mode = si->ops[i].mode;
        o->type = si->ops[i].type;
        o->nocache = (si->ops[i].flags & SPM_NOCACHE) != 0;
        locate(c, o, p->node);
    }
    if (si->plugin && (s->plugin = malloc(sizeof *s->plugin))) {
        spm__operand__init(s->plugin);
        s->plugin->sdb = si->plugin;
        s->plugin->version = 1;
        s->plugin->mode = SPM_R;
        s->plugin->type = c->plugin_type;
        locate(c, s->plugin, p->node);
        s->plugin->checksum = si->plugin_sum; /* IEUs that loaded these bytes fetch nothing */
    }
    if (spm_grow(&p->batch, p->nbatch, &p->capbatch, sizeof *p->batch, 16) != 0) {
        center_free_si_msg(s);
        return;
    }
    p->batch[p->nbatch++] = s;
}

/*  Sends every IEU the SIs the IDU picked for it this turn (spm_idu_pump),
    one ISSUE each. Called once the turn's events are written (an SI's feed
    call is often made in the same turn): a restart must not give an SI's
    ids to another while a node still holds what the first wrote.

    Each ISSUE says how many SIs are still ready in the pool (backlog).
    While some are, an IEU lets its results wait a few milliseconds to
    share one COMMIT (ieu/ieu.c, commit_due): nothing is idle for want of
    them. When the pool runs dry, every IEU that was told otherwise gets an
    empty ISSUE saying so, and sends what it holds at once. */
void center_send_issues(spm_center_t *c)
{
    uint64_t ready = spm_idu_ready(c->idu);
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(c->ieus, &pos, &key, &value)) {
        peer_t *p = value;
        if (!p->nbatch && !(p->told_backlog && ready == 0))
            continue;
        p->told_backlog = ready > 0;
        Spm__Issue issue = SPM__ISSUE__INIT;
        issue.n_sis = p->nbatch;
        issue.sis = p->batch;
        issue.backlog = ready > UINT32_MAX ? UINT32_MAX : (uint32_t)ready;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_ISSUE;
        env.issue = &issue;
        center_send_to(c, &p->id, &env, NULL, 0);
        for (size_t i = 0; i < p->nbatch; i++)
            center_free_si_msg(p->batch[i]);
        p->nbatch = 0;
    }
}

/* ------------------------------------------------------------- handlers */

#define MAX_NODES 1024 /* data agents named in one NODES message */

static void trace_instant(spm_center_t *c, const char *name);

/*  Fills ENV with the data agents up now (NODES, PTRS: MAX_NODES each). */
static size_t nodes_now(spm_center_t *c, Spm__Node *nodes, Spm__Node **ptrs)
{
    return spm_dataplane_node_list(c->dp, nodes, ptrs, MAX_NODES);
}

/*  Tells every IEU which data agents are up (a node joined or died), so
    that they fetch from and push replicas to the right ones. */
static void send_nodes(spm_center_t *c)
{
    Spm__Node *nodes = calloc(MAX_NODES, sizeof *nodes);
    Spm__Node **ptrs = calloc(MAX_NODES, sizeof *ptrs);
    if (!nodes || !ptrs) {
        free(nodes);
        free(ptrs);
        return;
    }
    Spm__Nodes msg = SPM__NODES__INIT;
    msg.n_nodes = nodes_now(c, nodes, ptrs);
    msg.nodes = ptrs;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_NODES;
    env.nodes = &msg;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(c->ieus, &pos, &key, &value))
        if (!((peer_t *)value)->dead)
            center_send_to(c, &((peer_t *)value)->id, &env, NULL, 0);
    free(nodes);
    free(ptrs);
}

/*  Data plane callback: ENV to NODE's agent. */
int center_send_agent(void *arg, uint32_t node, Spm__Envelope *env)
{
    spm_center_t *c = arg;
    peer_t *p = node < c->nagents ? c->agents[node] : NULL;
    if (!p || p->dead)
        return SPM_EDEAD;
    center_send_to(c, &p->id, env, NULL, 0);
    return 0;
}

/*  The agent of NODE is gone (WHY: "drained", "went silent", "restarted"):
    the node holds nothing any more, its IEUs are out of service with it,
    and the other IEUs hear of it.

    A node is never half in service: an agent taken for dead (a stopped
    process, a cut network) may come back, and its IEUs may never have
    stopped, but its blocks are no longer in the directory and nothing
    would drop them; its IEUs' SIs go elsewhere now. If it comes back, it
    is told it is a stranger and joins again as the same node
    (center_on_hello), reporting what it keeps, with IEUs started afresh.
    A drain is not a death: its IEUs left before it (each with a BYE), it
    is logged at info and not counted among the failures. */
void center_agent_gone(spm_center_t *c, peer_t *p, const char *why)
{
    if (p->dead)
        return;
    center_flush_commits(c); /* commits that arrived before the death still count */
    int drained = strcmp(why, "drained") == 0;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(c->ieus, &pos, &key, &value)) {
        peer_t *q = value;
        if (!q->dead && q->node == p->node)
            center_ieu_gone(c, q, drained ? "drained" : "lost its node's agent");
    }
    p->dead = 1;
    spm_dataplane_node_down(c->dp, p->node);
    if (drained) {
        spm_log_info("agent of node %u (%s) drained; the node is out of service", p->node, p->name);
    } else {
        spm_log_warn("agent of node %u (%s) %s; the node and its IEUs are out of service", p->node,
                     p->name, why);
        spm_status_failure(&c->status, "node %u (%s) %s", p->node, p->name, why);
    }
    send_nodes(c);
}

/*  Forgets agent P, taken for dead, now that it says HELLO again: its
    index is free for it (or another). */
static void forget_agent(spm_center_t *c, peer_t *p, uint64_t key)
{
    spm_hmap_remove(c->peers, key);
    if (p->node < c->nagents && c->agents[p->node] == p)
        c->agents[p->node] = NULL;
    zmq_msg_close(&p->id);
    free(p->batch);
    free(p);
}

/*  A hash of a node's 16-byte identity, as a map key (never 0). */
static uint64_t identity_key(const uint8_t *id)
{
    uint64_t k = 1469598103934665603ull;
    for (size_t i = 0; i < 16; i++)
        k = (k ^ id[i]) * 1099511628211ull;
    return k ? k : 1;
}

/*  The node index an agent saying H gets: the one its identity had, when
    that one is free or its agent is gone, or was that same node's earlier
    agent (a restart faster than --dead-ms: that one is ended); the one it
    asks for after a restart of the center, when free; else a new one. */
static uint32_t agent_index(spm_center_t *c, const Spm__Hello *h)
{
    if (h->identity.len == 16 && c->identities) {
        uintptr_t had = (uintptr_t)spm_hmap_get(c->identities, identity_key(h->identity.data));
        peer_t *old = had && had - 1 < c->nagents ? c->agents[had - 1] : NULL;
        if (had && (!old || old->dead))
            return (uint32_t)(had - 1);
        if (had && old->has_identity && memcmp(old->identity, h->identity.data, 16) == 0 &&
            strcmp(old->name, h->name && *h->name ? h->name
                              : h->node           ? h->node
                                                  : "") == 0) {
            center_agent_gone(c, old, "restarted");
            return (uint32_t)(had - 1);
        }
        if (had)
            spm_log_warn("an agent named %s has the identity of node %u, whose agent is alive "
                         "(a copied cache directory?): it joins as a new node",
                         h->name && *h->name ? h->name : h->node, (unsigned)(had - 1));
    }
    uint32_t want = h->node_index;
    int free_index = want > 0 && want <= 65536 &&
                     (want - 1 >= c->nagents || !c->agents[want - 1] || c->agents[want - 1]->dead);
    return free_index ? want - 1 : c->next_node;
}

/*  HELLO: the peer is recorded and welcomed. An IEU joins the IDU and
    learns the store and the nodes up; an agent gets its node index (the one
    it had, when it asks and that one is free), its data agent joins the
    data plane and the IEUs hear of it; a client learns whether it stages
    on the nodes, and where the store is when it runs on this host. */
void center_on_hello(spm_center_t *c, spm_msg_t *m)
{
    Spm__Hello *h = m->env->hello;
    uint64_t key = center_id_key(&m->id);
    peer_t *had = spm_hmap_get(c->peers, key);
    if (had && had->role == ROLE_AGENT && had->dead && (int)h->role == ROLE_AGENT &&
        zmq_msg_size(&had->id) == zmq_msg_size(&m->id) &&
        memcmp(zmq_msg_data(&had->id), zmq_msg_data(&m->id), zmq_msg_size(&m->id)) == 0)
        forget_agent(c, had, key); /* it was taken for dead and comes back */
    else if (had)
        return; /* a second HELLO on one connection is out of order, and one
                   whose id collides with another's is refused: ignore */
    peer_t *p = calloc(1, sizeof *p);
    if (!p)
        return;
    zmq_msg_init(&p->id);
    zmq_msg_copy(&p->id, &m->id);
    p->role = h->role;
    p->pid = h->pid;
    p->last_seen = spm_now_us();
    Spm__Welcome w = SPM__WELCOME__INIT;
    w.heartbeat_ms = c->heartbeat_ms;
    w.dead_ms = c->dead_ms;
    if ((int)h->role == ROLE_IEU && h->node_index < c->nagents && c->agents[h->node_index] &&
        c->agents[h->node_index]->dead) {
        /* An IEU of a node taken out of service (its agent was silent):
           not welcomed, so that the node is never half in service; it
           gives up, and its agent starts another once it joined again. */
        spm_log_debug("an IEU of node %u, which is out of service, was not welcomed",
                      h->node_index);
        zmq_msg_close(&p->id);
        free(p);
        return;
    }
    if ((int)h->role == ROLE_IEU) {
        p->node = h->node_index;
        p->index = spm_idu_ieu_join(c->idu, h->node_index, h->slots);
        spm_hmap_put(c->ieus, (uint64_t)p->index + 1, p);
        spm_log_info("IEU %u joined (node %u, pid %u, %u slots)", p->index, p->node, p->pid,
                     h->slots);
        w.store_dir = c->store_dir ? c->store_dir : "";
        w.store_id.data = c->store_id;
        w.store_id.len = sizeof c->store_id;
        w.replicas = c->replicas;
    } else if ((int)h->role == ROLE_AGENT) {
        /* An agent restarted on its cache directory is the node it was
           (its identity); one that rejoins after a restart of the center
           asks for its old index: the blocks it keeps and the jobs'
           records speak of it. */
        snprintf(p->name, sizeof p->name, "%s", h->name && *h->name ? h->name : h->node);
        if ((p->has_identity = h->identity.len == sizeof p->identity))
            memcpy(p->identity, h->identity.data, sizeof p->identity);
        p->index = p->node = agent_index(c, h);
        if (p->has_identity && c->identities)
            spm_hmap_put(c->identities, identity_key(p->identity),
                         (void *)(uintptr_t)(p->node + 1));
        spm_status_node_name(&c->status, p->node, p->name);
        if (p->node >= c->next_node)
            c->next_node = p->node + 1;
        if (spm_grow_zeroed(&c->agents, &c->nagents, (size_t)p->node + 1, sizeof *c->agents) == 0)
            c->agents[p->node] = p;
        w.store_id.data = c->cache_id; /* the same: the node keeps its blocks */
        w.store_id.len = sizeof c->cache_id;
        if (h->data_endpoint && *h->data_endpoint &&
            spm_dataplane_node_up(c->dp, p->node, h->data_endpoint, h->public_key) != 0)
            spm_log_warn("node %u: out of memory recording its data agent", p->node);
        spm_log_info("agent of node %u (%s, host %s, pid %u) joined", p->node, p->name, h->node,
                     p->pid);
    } else if ((int)h->role == ROLE_CLIENT) {
        w.stage_to_nodes = !c->local;   /* on an ipc:// center the store is every node's */
        if (c->local && c->store_dir) { /* and the client may read it in place */
            w.store_dir = c->store_dir;
            w.store_id.data = c->store_id;
            w.store_id.len = sizeof c->store_id;
        }
    }
    w.index = p->index;
    spm_hmap_put(c->peers, key, p);
    Spm__Node *nodes = NULL, **ptrs = NULL;
    if ((int)h->role == ROLE_IEU && (nodes = calloc(MAX_NODES, sizeof *nodes)) &&
        (ptrs = calloc(MAX_NODES, sizeof *ptrs))) {
        w.n_nodes = nodes_now(c, nodes, ptrs);
        w.nodes = ptrs;
    }
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_WELCOME;
    env.welcome = &w;
    center_send_to(c, &m->id, &env, NULL, 0);
    free(nodes);
    free(ptrs);
    if ((int)h->role == ROLE_AGENT)
        send_nodes(c);
}

/*  IEU P is gone (WHY: "drained", "died", "went silent", "lost its node's
    agent"): the commits that came before still count, then its SIs are
    issued again; the status and the traces say so. A drain (BYE) is
    logged at info and shown as "left", not counted as a death. Once per
    IEU. */
void center_ieu_gone(spm_center_t *c, peer_t *p, const char *why)
{
    if (p->dead)
        return;
    /* Commits that arrived before the death still count. */
    center_flush_commits(c);
    p->dead = 1;
    /* The node's blocks stay: its agent serves them, IEU or not. */
    center_reissued_t before[64];
    size_t nbefore = center_reissued_now(c, before, 64);
    uint32_t n = spm_idu_ieu_dead(c->idu, p->index);
    const char *name = spm_status_name_of(&c->status, p->node);
    char what[160];
    snprintf(what, sizeof what, "IEU %u (node %u %s) %s", p->index, p->node, name, why);
    center_record_reissues(c, before, nbefore, what);
    if (strcmp(why, "drained") == 0) {
        spm_log_info("IEU %u (node %u %s, pid %u) drained; %u SIs re-issued", p->index, p->node,
                     name, p->pid, n);
        spm_status_ieu_left(&c->status, p->index);
    } else {
        spm_log_warn("IEU %u (node %u %s, pid %u) %s; %u SIs re-issued", p->index, p->node, name,
                     p->pid, why, n);
        spm_status_failure(&c->status, "IEU %u (node %u %s) %s; %u SIs re-issued", p->index,
                           p->node, name, why, n);
    }
    snprintf(what, sizeof what, "IEU %u %s: %u re-issued", p->index, why, n);
    trace_instant(c, what);
}

/*  Checks that the outputs of result R of SI, which its IEU wrote into the
    store itself, are there with their types. Returns 1 (applied with the
    batch), or 2: missing, the SI fails with a transient error and is run
    again. */
static int stored_outputs(spm_center_t *c, const spm_idu_si_t *si, const Spm__Result *r)
{
    size_t want = 0;
    for (size_t k = 0; k < si->nops; k++) {
        if (si->ops[k].mode == SPM_R || r->status != 0)
            continue;
        uint32_t type;
        if (spm_store_stat(c->store, si->ops[k].sdb, si->ops[k].version, &type, NULL) != 0 ||
            type != si->ops[k].type) {
            spm_log_warn("SI %llu: output SDB %llu v%llu is not in the store",
                         (unsigned long long)si->id, (unsigned long long)si->ops[k].sdb,
                         (unsigned long long)si->ops[k].version);
            return 2;
        }
        want++;
    }
    c->dirty |= want > 0; /* the syncer flushes what the IEU wrote */
    return r->status == 0 && want != r->outputs ? 2 : 1;
}

/*  The outputs of SI (operands that are not R). */
static size_t outputs_of(const spm_idu_si_t *si)
{
    size_t n = 0;
    for (size_t k = 0; k < si->nops; k++)
        n += si->ops[k].mode != SPM_R;
    return n;
}

/*  Whether result R of SI says where each output is kept: one BlockMeta
    per output, each kept by a node or framed for the store, and as many
    frames announced as are framed. */
static int metas_ok(const spm_idu_si_t *si, const Spm__Result *r)
{
    if (r->n_blocks != outputs_of(si))
        return 0;
    size_t framed = 0;
    for (size_t k = 0; k < r->n_blocks; k++) {
        if (!r->blocks[k]->framed && r->blocks[k]->n_holders == 0)
            return 0;
        framed += r->blocks[k]->framed;
    }
    return framed == r->outputs;
}

/*  COMMIT, first half: the outputs whose bytes came with it (a lone
    node's second copy) go into the store batch of this loop turn, and the
    message is kept until the batch is durable (group commit: one LMDB
    write per turn, not per SI). The others stay on the nodes the results
    name. Takes M. */
void center_on_commit(spm_center_t *c, peer_t *p, spm_msg_t *m)
{
    Spm__Commit *cm = m->env->commit;
    pending_t *pc = NULL;
    if (spm_grow(&c->pending, c->npending, &c->cappending, sizeof *c->pending, 16) != 0)
        return; /* dropped: the leases bring these SIs back */
    uint8_t *ok = calloc(cm->n_results ? cm->n_results : 1, 1);
    if (!ok)
        return;
    size_t frame = 0;
    if (cm->stored && !c->local) {
        spm_log_warn("COMMIT from IEU %u says it wrote the store, but peers are not on this "
                     "host; dropped",
                     p->index);
        cm->n_results = 0; /* the leases bring these SIs back */
    }
    for (size_t i = 0; i < cm->n_results; i++) {
        Spm__Result *r = cm->results[i];
        const spm_idu_si_t *si = spm_idu_lookup(c->idu, p->index, r->si, r->attempt);
        if (cm->stored) {
            ok[i] = si ? stored_outputs(c, si, r) : 0;
            continue;
        }
        if (frame + r->outputs > m->nframes) {
            spm_log_warn("COMMIT from IEU %u announces more frames than it has", p->index);
            break;
        }
        if (si && r->status == 0 && !metas_ok(si, r)) {
            spm_log_warn("COMMIT of SI %llu does not say where its %zu outputs are; dropped",
                         (unsigned long long)r->si, outputs_of(si));
            si = NULL;
        }
        ok[i] = si != NULL;
        for (size_t k = 0, o = 0, f = frame; si && r->status == 0 && k < si->nops; k++) {
            if (si->ops[k].mode == SPM_R)
                continue;
            const Spm__BlockMeta *b = r->blocks[o++];
            if (!b->framed)
                continue;
            zmq_msg_t *fm = &m->frames[f++];
            spm_dataplane_store_put(c->dp, si->ops[k].sdb, si->ops[k].version, si->ops[k].type,
                                    zmq_msg_data(fm), zmq_msg_size(fm));
        }
        frame += r->outputs;
    }
    pc = &c->pending[c->npending++];
    pc->m = *m;
    memset(m, 0, sizeof *m); /* the pending list owns it now */
    pc->ieu = p;
    pc->ok = ok;
    pc->arrived_us = spm_now_us();
}

/*  Records the slice of result R of SI in its job's trace, if it has one. */
static void trace_si(spm_center_t *c, const pending_t *pc, const spm_idu_si_t *si,
                     const Spm__Result *r)
{
    spm_trace_t *t = spm_hmap_get(c->traces, si->job);
    Spm__Commit *cm = pc->m.env->commit;
    if (!t || !cm->sent_us || !r->t_end)
        return;
    const peer_t *p = pc->ieu;
    const spm_opcode_t *op = spm_opcode_by_id(si->opcode);
    /* The IEU's clock runs at an offset from ours; the smallest (arrival -
       send) seen is the closest estimate (least queueing), applied to all
       of the IEU's slices when the trace is sent. */
    int64_t offset = (int64_t)pc->arrived_us - (int64_t)cm->sent_us;
    peer_t *pp = pc->ieu;
    if (!pp->clock_known || offset < pp->clock_offset) {
        pp->clock_offset = offset;
        pp->clock_known = 1;
    }
    spm_trace_event_t ev = {.phase = 'X',
                            .ts = r->t_start, /* IEU clock until sent */
                            .dur = r->t_end - r->t_start,
                            .ieu = p->index,
                            .node = p->node,
                            .si = si->id,
                            .bytes = r->bytes_l2 + r->bytes_store,
                            .wait_us = r->wait_us};
    snprintf(ev.name, sizeof ev.name, "%s%s", op ? op->name : "?", r->status ? " (failed)" : "");
    snprintf(ev.sf, sizeof ev.sf, "%s", si->sf ? si->sf : "");
    spm_trace_add(t, &ev);
}

/*  An instant NAME in the trace of every traced job. */
static void trace_instant(spm_center_t *c, const char *name)
{
    size_t pos = 0;
    uint64_t key;
    void *value;
    spm_trace_event_t ev = {.phase = 'i', .ts = spm_now_us()};
    snprintf(ev.name, sizeof ev.name, "%.39s", name);
    while (spm_hmap_next(c->traces, &pos, &key, &value))
        spm_trace_add(value, &ev);
}

/*  COMMIT, second half, once per loop turn: makes the batch durable, then
    applies the results (versions readable, waiters wake, SF commits run). */
void center_flush_commits(spm_center_t *c)
{
    int wrote = 0;
    int rc = spm_dataplane_store_commit(c->dp, &wrote);
    c->dirty |= wrote;
    for (size_t n = 0; n < c->npending; n++) {
        pending_t *pc = &c->pending[n];
        Spm__Commit *cm = pc->m.env->commit;
        peer_t *p = pc->ieu;
        for (size_t i = 0; i < cm->n_results; i++) {
            Spm__Result *r = cm->results[i];
            /* still the live lease? (the IEU may have died this turn) */
            const spm_idu_si_t *si =
                pc->ok[i] ? spm_idu_lookup(c->idu, p->index, r->si, r->attempt) : NULL;
            if (!si)
                continue;
            int framed = 0;
            for (size_t k = 0; r->status == 0 && k < r->n_blocks; k++)
                framed |= r->blocks[k]->framed;
            if (rc != 0 && framed) {
                /* Its outputs did not reach the store: the job cannot go on. */
                spm_idu_job_fail(c->idu, si->job, rc, spm_error_detail());
                continue;
            }
            /* Where the outputs live, before the SF hears of them (it may
               issue readers at once). */
            for (size_t k = 0, o = 0; r->status == 0 && !cm->stored && k < si->nops; k++)
                if (si->ops[k].mode != SPM_R)
                    spm_dataplane_output(c->dp, si->ops[k].sdb, si->ops[k].version, si->ops[k].type,
                                         r->blocks[o++]);
            int missing = pc->ok[i] == 2; /* written by the IEU, but not found */
            spm_idu_commit_t ct = {.status = missing ? SPM_ESTORE : r->status,
                                   .error = missing ? "outputs missing from the store" : r->error,
                                   .reply = r->reply.data,
                                   .reply_len = r->reply.len,
                                   .wait_us = r->wait_us,
                                   .exec_us = r->exec_us,
                                   .localize_us = r->localize_us,
                                   .l1_hits = r->l1_hits,
                                   .l2_hits = r->l2_hits,
                                   .store_reads = r->store_reads,
                                   .evictions = r->evictions,
                                   .corrupt = r->corrupt,
                                   .bytes_l2 = r->bytes_l2,
                                   .bytes_store = r->bytes_store,
                                   .bytes_pushed = r->bytes_pushed};
            trace_si(c, pc, si, r);
            if (ct.status == 0) /* as the job's report counts it */
                spm_metrics_commit(c->metrics, p->node, si->opcode, &ct);
            spm_status_node_fetched(&c->status, p->node, r->bytes_l2 + r->bytes_store);
            spm_idu_commit(c->idu, p->index, r->si, &ct);
        }
        if (!p->dead)
            spm_idu_ieu_pull(c->idu, p->index, cm->credits);
        free(pc->ok);
        spm_msg_close(&pc->m);
    }
    c->npending = 0;
    center_collect_garbage(c);
}

/*  IEU_DIED from AGENT: its IEU with that process id is gone. */
void center_on_ieu_died(spm_center_t *c, peer_t *agent, spm_msg_t *m)
{
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(c->ieus, &pos, &key, &value)) {
        peer_t *p = value;
        if (!p->dead && p->node == agent->node && p->pid == m->env->ieu_died->pid)
            center_ieu_gone(c, p, "died");
    }
}
