/*  =========================================================================
    localize - an SI's operands made local before it runs: level 1, then
    other nodes, then the center

    As soon as an SI arrives, each operand it reads is looked for in level
    1 (this node's cache or, on the center's host, the center's store),
    then fetched straight from the nodes the ISSUE names as holders, then
    through the center (which names the holders it knows now or sends the
    block), then from the center's store alone. A block fetched is checked
    and kept in the node cache (or, when the cache refuses it, by the SI
    itself). The SI goes to the ready queue once all are local. The center's
    directory hears of the copies this node now holds (PUBLISH) and of
    those it lost or found corrupt (DROP).
    =========================================================================
*/
#include "ieu/ieu_int.h"
#include "runtime/registry.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/lograte.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  Every operand of T is local: once its plugin is loaded (when it
    fetched it), T joins the ready queue and a worker is woken. */
static void make_local(ieu_t *ieu, task_t *t)
{
    if (t->plugin_op && spm_ieu_load_plugin(ieu, t) != 0)
        return;
    t->local_us = spm_now_us();
    pthread_mutex_lock(&ieu->lock);
    push(&ieu->ready, t);
    pthread_cond_signal(&ieu->cond);
    pthread_mutex_unlock(&ieu->lock);
}

static void refs_add(refs_t *r, spm_sdb_t sdb, uint64_t version, uint64_t bytes)
{
    if (spm_grow(&r->v, r->n, &r->cap, sizeof *r->v, 32) != 0)
        return; /* the directory is a hint: a missed update costs a fetch */
    Spm__BlockRef *b = &r->v[r->n++];
    spm__block_ref__init(b);
    b->sdb = sdb;
    b->version = version;
    b->bytes = bytes;
}

/*  Sends the pending PUBLISH and DROP messages. */
void spm_ieu_send_refs(ieu_t *ieu)
{
    refs_t *lists[2] = {&ieu->publish, &ieu->drop};
    for (int k = 0; k < 2; k++) {
        refs_t *r = lists[k];
        if (!r->n)
            continue;
        Spm__BlockRef **ptrs = malloc(r->n * sizeof *ptrs);
        if (!ptrs)
            return;
        for (size_t i = 0; i < r->n; i++)
            ptrs[i] = &r->v[i];
        Spm__Publish pub = SPM__PUBLISH__INIT;
        Spm__Drop drop = SPM__DROP__INIT;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        if (k == 0) {
            pub.n_blocks = r->n;
            pub.blocks = ptrs;
            env.body_case = SPM__ENVELOPE__BODY_PUBLISH;
            env.publish = &pub;
        } else {
            drop.n_blocks = r->n;
            drop.blocks = ptrs;
            env.body_case = SPM__ENVELOPE__BODY_DROP;
            env.drop = &drop;
        }
        spm_ieu_send(ieu, &env, NULL, 0);
        free(ptrs);
        r->n = 0;
    }
}

/*  Node-cache callback: a block left this node's cache. */
void spm_ieu_on_evict(void *arg, spm_sdb_t id, uint64_t version, uint32_t type, const void *data,
                      size_t len)
{
    (void)type;
    (void)data;
    ieu_t *ieu = arg;
    refs_add(&ieu->drop, id, version, len);
    ieu->evictions++;
}

/*  Asks the center for operand I of T at VERSION: the center answers
    with the nodes that hold it or, with STORE_ONLY or when only its store
    has it, with the block. */
static void request(ieu_t *ieu, task_t *t, size_t i, uint64_t version, int store_only)
{
    fetch_t *f = malloc(sizeof *f);
    if (!f)
        return;
    *f = (fetch_t){t, i, version};
    uint64_t req = ++ieu->next_req;
    spm_hmap_put(ieu->fetches, req, f);
    Spm__Get g = SPM__GET__INIT;
    g.req = req;
    g.sdb = t->ops[i].sdb;
    g.version = version;
    g.store_only = store_only;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_GET;
    env.get = &g;
    spm_ieu_send(ieu, &env, NULL, 0);
}

/*  The version operand O reads (0: none). */
static uint64_t read_version(const op_t *o)
{
    return o->mode == SPM_R ? o->version : o->mode == SPM_RW ? o->in_version : 0;
}

/*  One operand fetch of T ended with STATUS (WHY when it failed). */
static void fetched(ieu_t *ieu, task_t *t, int status, const char *why)
{
    if (status != 0 && !t->status) {
        t->status = status;
        t->error = strdup(why);
    }
    if (--t->missing > 0)
        return;
    if (t->status) {
        int st = t->status;
        char *err = t->error;
        t->status = 0;
        t->error = NULL;
        spm_ieu_fail_task(ieu, t, st == SPM_EFORMAT ? SPM_ESTORE : st, err);
        free(err);
    } else {
        make_local(ieu, t);
    }
}

/*  Makes T's table of private copies. Returns 0 or SPM_ENOMEM. */
static int own_slots(task_t *t)
{
    if (!t->own && (!(t->own = calloc(t->nops, sizeof *t->own)) ||
                    !(t->own_len = calloc(t->nops, sizeof *t->own_len))))
        return SPM_ENOMEM;
    return 0;
}

/*  Takes a private copy of operand I of T out of the node cache as it is
    now. This is where a block the node keeps is found when the SI comes
    back to be localized (another operand left the cache before it ran):
    the center names no holder on the asking IEU's own node, and with one
    replica no other node has it, so asking the VM would end in "no SDB in
    the VM". An evictable copy still there is taken too, so that it cannot
    leave again before the SI runs. Returns 0 when it did, else non-zero
    (not there: the operand is fetched). */
static int own_copy(ieu_t *ieu, task_t *t, size_t i)
{
    op_t *o = &t->ops[i];
    void *data;
    size_t len;
    uint32_t type;
    if (!ieu->cache || own_slots(t) != 0 ||
        spm_nodecache_copy(ieu->cache, o->sdb, read_version(o), &type, &data, &len) != 0)
        return SPM_ENOTFOUND;
    if (type != o->type) {
        free(data);
        return SPM_EFORMAT;
    }
    free(t->own[i]);
    t->own[i] = data;
    t->own_len[i] = len;
    return 0;
}

/*  Checks and caches the block BYTES (LEN) that arrived for operand I of
    T, from another node (PEER) or the center. Returns 0, or SPM_EFORMAT
    (malformed: the caller tries elsewhere) or SPM_ENOMEM. */
static int accept_block(ieu_t *ieu, task_t *t, size_t i, const void *bytes, size_t len, int peer)
{
    op_t *o = &t->ops[i];
    uint64_t v = read_version(o);
    int usable = !o->nocache && !t->relocalized;
    if (peer && usable && spm_nodecache_has(ieu->cache, o->sdb, v)) {
        /* Another SI's fetch of the same block, shared with this one
           (spm_blockclient_fetch), checked it and put it here first: it
           crossed once. */
        t->l1_hits++;
        return 0;
    }
    if (spm_sdb_check(o->type, bytes, len) != 0)
        return SPM_EFORMAT;
    /* A copy to read: evictable, and refused when the node's budget is
       taken by the blocks it keeps for the VM. The SI then keeps its own,
       as it does after an eviction or for a block read once. */
    int cached = usable && spm_nodecache_put(ieu->cache, o->sdb, v, o->type, bytes, len) == 0;
    if (!cached) {
        if (own_slots(t) != 0)
            return SPM_ENOMEM;
        free(t->own[i]);
        if (!(t->own[i] = malloc(len ? len : 1)))
            return SPM_ENOMEM;
        memcpy(t->own[i], bytes, len);
        t->own_len[i] = len;
    } else {
        refs_add(&ieu->publish, o->sdb, v, len);
    }
    if (peer) {
        t->l2_hits++;
        t->bytes_l2 += len;
    } else {
        t->store_reads++;
        t->bytes_store += len;
    }
    return 0;
}

static void localize_next(ieu_t *ieu, task_t *t, size_t i, const char *why);

/*  A fetch from other nodes asked for operand I of T. */
typedef struct {
    ieu_t *ieu;
    task_t *task;
    size_t op;
} peer_fetch_t;

static void peer_fetched(void *arg, int status, zmq_msg_t *block, uint32_t node, const char *why)
{
    (void)node;
    peer_fetch_t *pf = arg;
    ieu_t *ieu = pf->ieu;
    task_t *t = pf->task;
    size_t i = pf->op;
    free(pf);
    if (status == 0 && accept_block(ieu, t, i, zmq_msg_data(block), zmq_msg_size(block), 1) == 0) {
        fetched(ieu, t, 0, NULL);
        return;
    }
    localize_next(ieu, t, i, status == 0 ? "a copy from another node is malformed" : why);
}

/*  Fetches operand I of T from the N HOLDERS. Returns 0 when asked. */
static int fetch_from(ieu_t *ieu, task_t *t, size_t i, const uint32_t *holders, size_t n)
{
    op_t *o = &t->ops[i];
    spm_blockref_t ref = {o->sdb, read_version(o), o->type, o->checksum, o->bytes};
    peer_fetch_t *pf = malloc(sizeof *pf);
    if (!pf)
        return SPM_ENOMEM;
    *pf = (peer_fetch_t){ieu, t, i};
    int rc = spm_blockclient_fetch(ieu->bc, &ref, holders, n, peer_fetched, pf);
    if (rc != 0)
        free(pf);
    return rc;
}

/*  Looks for operand I of T in the next place: the holders the ISSUE
    named; then the center, which names the holders it knows now or sends
    the block from its store; then its store alone. WHY says why the last
    place failed; after the last, the SI fails with it. */
static void localize_next(ieu_t *ieu, task_t *t, size_t i, const char *why)
{
    op_t *o = &t->ops[i];
    int step = o->step++;
    if (step == 0 && o->nholders && fetch_from(ieu, t, i, o->holders, o->nholders) == 0)
        return;
    if (step <= 1) { /* no holder named, or none could give it */
        o->step = 2;
        request(ieu, t, i, read_version(o), 0);
    } else if (step == 2) { /* the center's holders failed too: its store is the last place */
        request(ieu, t, i, read_version(o), 1);
    } else if (own_copy(ieu, t, i) == 0) { /* kept here since it was looked for */
        t->l1_hits++;
        fetched(ieu, t, 0, NULL);
    } else {
        char msg[768];
        snprintf(msg, sizeof msg, "SDB %llu v%llu: %s", (unsigned long long)o->sdb,
                 (unsigned long long)read_version(o), why && *why ? why : "not found");
        fetched(ieu, t, SPM_ESTORE, msg);
    }
}

#define TO_FETCH -1 /* op_t.step of an operand localize is about to look for */

/*  Starts localizing T: operands already in the node cache (or, on the
    center's host, its store) are level-1 hits; the others are fetched. T
    goes to the ready queue once all are local. */
void spm_ieu_localize(ieu_t *ieu, task_t *t)
{
    for (size_t i = 0; i < t->nops; i++) {
        op_t *o = &t->ops[i];
        uint64_t v = read_version(o);
        o->step = 0;
        if (!v)
            continue;
        if (t->own && t->own[i])
            continue; /* kept from an earlier localization */
        o->in_store =
            ieu->store && !t->relocalized && spm_store_view_has(ieu->store, o->sdb, v) == 1;
        if (o->in_store || (!t->relocalized && spm_nodecache_has(ieu->cache, o->sdb, v)) ||
            (t->relocalized && own_copy(ieu, t, i) == 0)) {
            t->l1_hits++;
        } else {
            t->missing++;
            o->step = TO_FETCH;
        }
    }
    if (t->missing == 0) {
        make_local(ieu, t);
        return;
    }
    /* Asked only once every operand is counted: a fetch may end at once. */
    for (size_t i = 0; i < t->nops; i++)
        if (t->ops[i].step == TO_FETCH) {
            t->ops[i].step = 0;
            localize_next(ieu, t, i, NULL);
        }
}

void spm_ieu_on_get_reply(ieu_t *ieu, spm_msg_t *m)
{
    Spm__GetReply *r = m->env->get_reply;
    fetch_t *f = spm_hmap_remove(ieu->fetches, r->req);
    if (!f)
        return; /* a reply nobody asked for */
    task_t *t = f->task;
    size_t i = f->op;
    free(f);
    op_t *o = &t->ops[i];
    if (r->status == 0 && r->n_holders > 0 && m->nframes == 0) {
        /* The center names the nodes that hold it now. */
        uint32_t nodes[16];
        size_t n = 0;
        for (size_t k = 0; k < r->n_holders && k < r->n_holder_nodes && n < 16; k++)
            if (spm_blockclient_node(ieu->bc, r->holder_nodes[k], r->holders[k],
                                     k < r->n_holder_keys ? r->holder_keys[k] : "") == 0)
                nodes[n++] = r->holder_nodes[k];
        o->checksum = r->checksum;
        o->bytes = r->bytes;
        if (n && fetch_from(ieu, t, i, nodes, n) == 0)
            return;
        localize_next(ieu, t, i, "no holder could be reached");
        return;
    }
    if (r->status != 0) {
        localize_next(ieu, t, i, r->error && *r->error ? r->error : spm_strerror(r->status));
        return;
    }
    int rc =
        m->nframes == 1 && r->type == o->type
            ? accept_block(ieu, t, i, zmq_msg_data(&m->frames[0]), zmq_msg_size(&m->frames[0]), 0)
            : SPM_EFORMAT;
    if (rc == 0)
        fetched(ieu, t, 0, NULL);
    else
        localize_next(ieu, t, i, "a block from the store is malformed");
}

/*  Block client callback: NODE sent a corrupt copy of REF. The center
    hears of it (it stops naming that node and has it delete the copy). */
void spm_ieu_on_corrupt(void *arg, uint32_t node, const spm_blockref_t *ref)
{
    ieu_t *ieu = arg;
    static spm_log_rate_t rate =
        SPM_LOG_RATE(SPM_LOG_WARN, "corrupt copies sent by other nodes, fetched elsewhere");
    spm_log_rated(&rate, "node %u sent a corrupt copy of SDB %llu v%llu; trying another holder",
                  node, (unsigned long long)ref->sdb, (unsigned long long)ref->version);
    size_t n = ieu->drop.n;
    refs_add(&ieu->drop, ref->sdb, ref->version, ref->bytes);
    if (ieu->drop.n > n) {
        ieu->drop.v[n].corrupt = 1;
        ieu->drop.v[n].node = node;
    }
    ieu->corrupt++;
}
