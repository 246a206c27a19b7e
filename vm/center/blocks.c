/*  =========================================================================
    blocks - the center's side of the data: GET, PUT, STORE, PLACED,
    PUBLISH and DROP, the GETs parked while a restarted center learns where
    blocks are, and the garbage it hands to the data plane

    Where every block lives is the data plane's (datacache/dataplane.c);
    these handlers check what peers say against the IDU and answer them.
    Part of the center (vm/center/center.h).
    =========================================================================
*/
#include "base/grow.h"
#include "base/log.h"
#include "base/lograte.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "vm/center/center_int.h"

#include <stdlib.h>
#include <string.h>

/*  Hands the versions the IDU found nobody can read to the data plane,
    which has their holders delete them. */
void center_collect_garbage(spm_center_t *c)
{
    spm_sdb_t id;
    uint64_t version;
    while (spm_idu_gc_take(c->idu, &id, &version)) {
        spm_durable_garbage(c->durable, id, version);
        c->gc_versions += version != 0;
    }
}

/*  Garbage whose cause is on disk: its holders delete it. */
void center_release_garbage(void *arg, spm_sdb_t id, uint64_t version)
{
    spm_center_t *c = arg;
    spm_dataplane_garbage(c->dp, id, version);
}

/*  Answers GET request REQ for version VERSION (0: the newest) of SDB
    from the peer routed by ID on node REQUESTER: the nodes that hold the
    block (and its checksum), or its bytes when only the center's store has
    it, or that it is gone. While a restarted center still hears from its
    nodes where blocks are, a committed block nobody reported yet is not
    gone: the request is parked (returns 1) when PARK allows. */
static int answer_get(spm_center_t *c, zmq_msg_t *id, uint32_t requester, uint64_t req,
                      spm_sdb_t sdb, uint64_t version, int store_only, int in_place, int park)
{
    uint32_t type = 0;
    uint64_t newest = spm_idu_sdb_version(c->idu, sdb, &type);
    version = version ? version : newest;
    Spm__GetReply r = SPM__GET_REPLY__INIT;
    r.req = req;
    r.sdb = sdb;
    r.version = version;
    r.type = type;
    void *data = NULL;
    size_t len = 0;
    if (version && in_place && spm_dataplane_in_store(c->dp, sdb, version, &r.type))
        r.in_store = 1; /* read where it lies, not copied into a reply */
    else
        r.status =
            version ? spm_dataplane_get(c->dp, sdb, version, requester, store_only, &r, &data, &len)
                    : spm_error(SPM_ENOTFOUND, "no SDB %llu", (unsigned long long)sdb);
    if (r.status == SPM_ENOTFOUND && park && spm_now_us() < c->locating_us &&
        spm_idu_sdb_live(c->idu, sdb, version) &&
        spm_grow(&c->parked, c->nparked, &c->capparked, sizeof *c->parked, 64) == 0) {
        parked_t *pk = &c->parked[c->nparked++];
        *pk = (parked_t){.requester = requester, .req = req, .sdb = sdb, .version = version};
        zmq_msg_init(&pk->id);
        zmq_msg_copy(&pk->id, id);
        return 1;
    }
    if (r.status != 0)
        r.error = (char *)spm_error_detail();
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_GET_REPLY;
    env.get_reply = &r;
    spm_frame_t f = {data, len, spm_wire_free, NULL};
    center_send_to(c, id, &env, &f, data ? 1 : 0);
    return 0;
}

/*  GET: an IEU's operand that its holders could not give it, or a
    client's result. */
void center_on_get(spm_center_t *c, peer_t *p, spm_msg_t *m)
{
    Spm__Get *g = m->env->get;
    if (p->role == ROLE_CLIENT && center_may_sdb(c, m->user, g->sdb) != 0) {
        Spm__GetReply r = SPM__GET_REPLY__INIT; /* a client fetches only its own */
        r.req = g->req;
        r.sdb = g->sdb;
        r.version = g->version;
        r.status = SPM_EDENIED;
        r.error = (char *)spm_error_detail();
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_GET_REPLY;
        env.get_reply = &r;
        center_send_to(c, &m->id, &env, NULL, 0);
        return;
    }
    answer_get(c, &m->id, p->role == ROLE_IEU ? p->node : SPM_NODE_STORE, g->req, g->sdb,
               g->version, g->store_only, g->in_place, 1);
}

/*  The parked GETs, tried again: a node reported blocks, or the wait for
    the nodes is over (then what is still unknown is gone). */
void center_retry_parked(spm_center_t *c, uint64_t now)
{
    center_verify_cut(c, now); /* before a GET is told that a block is gone */
    if (!c->nparked || (!c->located && now < c->locating_us))
        return;
    c->located = 0;
    size_t n = c->nparked;
    c->nparked = 0; /* answer_get may park again, behind these */
    parked_t *v = c->parked;
    c->parked = NULL;
    c->capparked = 0;
    for (size_t i = 0; i < n; i++) {
        answer_get(c, &v[i].id, v[i].requester, v[i].req, v[i].sdb, v[i].version, 0, 0, 1);
        zmq_msg_close(&v[i].id);
    }
    free(v);
}

/*  PUBLISH and DROP: an IEU's node cache gained or evicted copies, or an
    agent keeps a copy the center ordered. A node can only hold a version
    that was committed, so a PUBLISH of any other is a lie and is ignored:
    the directory never grows with forged entries. */
void center_on_blocks(spm_center_t *c, peer_t *p, Spm__BlockRef **refs, size_t n, int gained)
{
    if (!gained) {
        spm_dataplane_drop(c->dp, p->node, refs, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (refs[i]->held && p->role == ROLE_AGENT) {
            int live = spm_idu_sdb_live(c->idu, refs[i]->sdb, refs[i]->version);
            spm_dataplane_held(c->dp, p->node, refs[i], live);
            c->located = 1;
            continue;
        }
        uint64_t newest = spm_idu_sdb_version(c->idu, refs[i]->sdb, NULL);
        if (refs[i]->version != 0 && refs[i]->version <= newest)
            spm_dataplane_publish(c->dp, p->node, p->role == ROLE_AGENT, &refs[i], 1);
    }
}

/*  PUT: a client's block, as version 1 of a new SDB. A plugin is taken
    when the policy lets its sender send one and it is an object that can
    be loaded; a PUT to place (no frame) gets the nodes to stage the block
    on; any other block is checked by its type and written into the store.
    Answers PUT_REPLY with the SDB's id. */
void center_on_put(spm_center_t *c, spm_msg_t *m)
{
    Spm__Put *pu = m->env->put;
    Spm__PutReply r = SPM__PUT_REPLY__INIT;
    r.req = pu->req;
    const spm_sdb_type_t *type = spm_sdb_type_find(pu->type);
    int plugin = type && spm_name_id(pu->type) == c->plugin_type;
    if (!type) {
        r.status = SPM_ENOTFOUND;
        r.error = "unknown SDB type";
    } else if (plugin && spm_plugins_allowed(c->plugins, c->security, m->user) != 0) {
        r.status = SPM_EDENIED;
        r.error = (char *)spm_error_detail();
        spm_log_info("a plugin was refused: %s", r.error);
    } else if (plugin && m->nframes == 1 &&
               spm_plugin_check(zmq_msg_data(&m->frames[0]), zmq_msg_size(&m->frames[0])) != 0) {
        r.status = SPM_EFORMAT;
        r.error = (char *)spm_error_detail();
    } else if (pu->place && m->nframes == 0 && !plugin) {
        /* The block goes to nodes: the center only names them. */
        spm_sdb_t id =
            spm_idu_sdb_put_owned(c->idu, spm_name_id(pu->type), center_owner_hash(m->user));
        r.status =
            id ? spm_dataplane_place(c->dp, id, spm_name_id(pu->type), pu->bytes, pu->checksum, &r)
               : SPM_ENOMEM;
        r.sdb = id;
        if (r.status != 0)
            r.error = "out of memory";
    } else if (m->nframes != 1) {
        r.status = SPM_EPROTO;
        r.error = "PUT needs exactly one block frame";
    } else if (type->validate(zmq_msg_data(&m->frames[0]), zmq_msg_size(&m->frames[0])) != 0) {
        r.status = SPM_EFORMAT;
        r.error = "malformed block";
    } else {
        spm_sdb_t id =
            spm_idu_sdb_put_owned(c->idu, spm_name_id(pu->type), center_owner_hash(m->user));
        r.status = id ? spm_store_put(c->store, id, 1, spm_name_id(pu->type),
                                      zmq_msg_data(&m->frames[0]), zmq_msg_size(&m->frames[0]))
                      : SPM_ENOMEM;
        r.sdb = id;
        if (r.status != 0)
            r.error = (char *)spm_error_detail();
    }
    if (r.sdb) /* the client will name this id: a restart must not give it again */
        spm_durable_flush(c->durable);
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PUT_REPLY;
    env.put_reply = &r;
    center_send_to(c, &m->id, &env, NULL, 0);
}

/*  STORE to the center: a client with no node to stage a block on, or an
    agent handing the store the copy no other node can take. */
void center_on_store(spm_center_t *c, peer_t *p, spm_msg_t *m)
{
    Spm__Store *st = m->env->store;
    Spm__StoreReply r = SPM__STORE_REPLY__INIT;
    r.req = st->req;
    uint64_t newest = spm_idu_sdb_version(c->idu, st->sdb, NULL);
    int routine = 0; /* a refusal that follows from a fault, not one */
    if (m->nframes != 1)
        r.status = spm_error(SPM_EPROTO, "STORE needs exactly one block frame");
    else if ((routine = st->version == 0 || st->version > newest))
        r.status = spm_error(SPM_EINVAL, "SDB %llu has no version %llu",
                             (unsigned long long)st->sdb, (unsigned long long)st->version);
    else
        r.status = spm_dataplane_store(c->dp, st, zmq_msg_data(&m->frames[0]),
                                       zmq_msg_size(&m->frames[0]), spm_sdb_check_known);
    if (r.status != 0)
        r.error = (char *)spm_error_detail();
    if (p->role == ROLE_CLIENT) {
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_STORE_REPLY;
        env.store_reply = &r;
        center_send_to(c, &m->id, &env, NULL, 0);
    } else if (routine || r.status == SPM_ENOTFOUND) {
        /* Routine after a fault: a node hands over a copy of a version the
           job has since gone past or no longer wants (a re-issued SI, a
           rewound job). Nothing is lost: at info, a counted line per
           interval (a fault left 4,833 of them, a line each). */
        static spm_log_rate_t rate = SPM_LOG_RATE(
            SPM_LOG_INFO, "copies of versions their jobs had gone past or no longer wanted, "
                          "refused (routine after a fault; nothing is lost)");
        spm_log_rated(&rate, "node %u: %s", p->node, r.error);
    } else if (r.status != 0) {
        static spm_log_rate_t rate =
            SPM_LOG_RATE(SPM_LOG_WARN, "copies the store refused from nodes");
        spm_log_rated(&rate, "node %u: %s", p->node, r.error);
    }
}

/*  PLACED: the nodes a client staged an SDB on keep it now. */
void center_on_placed(spm_center_t *c, spm_msg_t *m)
{
    Spm__Placed *pl = m->env->placed;
    if (spm_idu_sdb_version(c->idu, pl->sdb, NULL) == 1)
        spm_dataplane_placed(c->dp, pl->sdb, pl->holders, pl->n_holders);
}
