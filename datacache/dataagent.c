/*  =========================================================================
    dataagent - a node's blocks, served to and taken from the rest of the
    VM
    =========================================================================
*/
#include "datacache/dataagent.h"
#include "base/checksum.h"
#include "base/log.h"
#include "base/lograte.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Routine after a fault, and by the thousand: a counted line per interval. */
static spm_log_rate_t refused_rate = SPM_LOG_RATE(SPM_LOG_WARN, "blocks this node refused to keep");
static spm_log_rate_t copy_rate =
    SPM_LOG_RATE(SPM_LOG_WARN, "copies the center ordered that failed "
                               "(it orders them again elsewhere)");

#define BATCH 256          /* FETCHes answered per call */
#define DROP_BATCH 256     /* garbage dropped per cache transaction */
#define HOLD_US 2000000ull /* room said yes to in an offer is held this long */
#define HOLDS_MAX 256      /* offers held at once; more are refused */

/*  Room this node said yes to (an offer), held for the block to come. */
typedef struct {
    spm_sdb_t sdb;
    uint64_t version;
    uint64_t bytes;
    uint64_t until_us; /* forgotten after this: the sender did not come */
} hold_t;

/*  A read transaction lent to the frames of one batch. */
typedef struct lease {
    spm_nodecache_reader_t *reader;
    uint64_t opened_us; /* when its snapshot was taken */
    atomic_int refs;    /* frames ZeroMQ still holds, + 1 while the batch runs */
    struct lease *next;
} lease_t;

struct spm_dataagent {
    void *router;             /* not owned */
    spm_nodecache_t *cache;   /* not owned */
    spm_block_check_fn check; /* a block's type check */
    spm_blockclient_t *bc;    /* passes blocks on, or NULL */
    uint32_t node;            /* this node's index, for the holders it names */
    lease_t *leases;          /* outstanding read transactions */
    spm_dataagent_stats_t st; /* counters */
    hold_t holds[HOLDS_MAX];  /* room held for offers said yes to */
    size_t nholds;
};

spm_dataagent_t *spm_dataagent_new(void *router, spm_nodecache_t *cache, spm_block_check_fn check)
{
    spm_dataagent_t *self = calloc(1, sizeof *self);
    if (self) {
        self->router = router;
        self->cache = cache;
        self->check = check;
    }
    return self;
}

/*  zmq_free_fn: ZeroMQ is done with a frame of the lease HINT. */
static void release(void *data, void *hint)
{
    (void)data;
    atomic_fetch_sub(&((lease_t *)hint)->refs, 1);
}

/*  Ends, on this thread, the read transactions nobody uses any more. */
static void reap(spm_dataagent_t *self)
{
    for (lease_t **pl = &self->leases; *pl;) {
        lease_t *l = *pl;
        if (atomic_load(&l->refs) == 0) {
            *pl = l->next;
            spm_nodecache_reader_end(&l->reader);
            free(l);
        } else {
            pl = &l->next;
        }
    }
}

/*  Answers the FETCH M from the batch's lease *LP, in place. A block its
    snapshot misses may have been kept since the snapshot was taken (a
    STORE earlier in the batch, a copy, an older snapshot shared): it is
    copied out of the cache as it is now. Answered "not found", a fetch of
    a block this node alone keeps (one replica) would leave its reader
    nowhere to turn. */
static void answer(spm_dataagent_t *self, lease_t *l, spm_msg_t *m)
{
    Spm__Fetch *f = m->env->fetch;
    Spm__FetchReply r = SPM__FETCH_REPLY__INIT;
    r.req = f->req;
    spm_frame_t frame = {0};
    const void *data;
    void *copy = NULL;
    size_t len;
    uint32_t type;
    r.status = l && l->reader ? spm_nodecache_get(l->reader, f->sdb, f->version, &type, &data, &len)
                              : SPM_ESTORE;
    if (r.status == 0) {
        atomic_fetch_add(&l->refs, 1);
        frame = (spm_frame_t){(void *)data, len, release, l};
    } else if ((r.status =
                    spm_nodecache_copy(self->cache, f->sdb, f->version, &type, &copy, &len)) == 0) {
        frame = (spm_frame_t){copy, len, spm_wire_free, NULL};
    }
    if (r.status == 0) {
        self->st.served++;
        self->st.served_bytes += len;
    }
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_FETCH_REPLY;
    env.fetch_reply = &r;
    spm_wire_send(self->router, &m->id, &env, &frame, r.status == 0 ? 1 : 0, NULL);
}

#define FRESH_US 20000 /* a snapshot younger than this serves new batches too */

/*  The read transaction for a new batch. The node cache allows one reader
    per thread: while frames of earlier batches are out, a batch shares the
    newest transaction if its snapshot is fresh; an older one is let go
    (waiting up to 20 ms for ZeroMQ to release its frames) so that blocks
    cached since become visible. Should the old frames outlive the wait,
    the new batch shares the old snapshot after all; a block it lacks is
    copied out of the cache as it is now (see answer). */
static lease_t *lease(spm_dataagent_t *self, int fresh)
{
    reap(self);
    if (!fresh && self->leases && spm_now_us() - self->leases->opened_us < FRESH_US) {
        atomic_fetch_add(&self->leases->refs, 1);
        return self->leases;
    }
    for (int i = 0; i < 20 && self->leases; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        reap(self);
    }
    if (self->leases) {
        atomic_fetch_add(&self->leases->refs, 1);
        return self->leases;
    }
    lease_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    atomic_init(&l->refs, 1);
    l->reader = spm_nodecache_reader(self->cache);
    l->opened_us = spm_now_us();
    l->next = self->leases;
    self->leases = l;
    return l;
}

/*  Checks block (ID, VERSION) of TYPE, LEN bytes at DATA, against its
    type and CHECKSUM and keeps it for the VM. Returns 0 or an SPM_E* code
    with the detail set. */
static int keep(spm_dataagent_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                uint64_t checksum, const void *data, size_t len)
{
    if (!id || !version)
        return spm_error(SPM_EINVAL, "no SDB %llu version %llu", (unsigned long long)id,
                         (unsigned long long)version);
    if (self->check(type, data, len) != 0)
        return spm_error(SPM_EFORMAT, "SDB %llu v%llu: not a well-formed block of its type",
                         (unsigned long long)id, (unsigned long long)version);
    if (spm_checksum(data, len) != checksum)
        return spm_error(SPM_EFORMAT, "SDB %llu v%llu: its bytes do not match their checksum",
                         (unsigned long long)id, (unsigned long long)version);
    int rc = spm_nodecache_keep(self->cache, id, version, type, checksum, data, len, 0);
    if (rc == 0) {
        self->st.stored++;
        self->st.stored_bytes += len;
    }
    return rc;
}

void spm_dataagent_forwarding(spm_dataagent_t *self, spm_blockclient_t *bc, uint32_t node)
{
    self->bc = bc;
    self->node = node;
}

/*  Forgets the holds that ran out at NOW, and the one of (SDB, VERSION)
    (its block came). Returns the bytes the others hold. */
static uint64_t holds_prune(spm_dataagent_t *self, uint64_t now, spm_sdb_t sdb, uint64_t version)
{
    uint64_t held = 0;
    for (size_t i = 0; i < self->nholds;) {
        hold_t *h = &self->holds[i];
        if (h->until_us <= now || (h->sdb == sdb && h->version == version)) {
            *h = self->holds[--self->nholds];
            continue;
        }
        held += h->bytes;
        i++;
    }
    return held;
}

/*  Answers STORE REQ of the sender ID with STATUS (ERROR) and the
    HOLDERS[0..N) that keep the block, and with this node's room. */
static void reply(spm_dataagent_t *self, const zmq_msg_t *id, uint64_t req, int status,
                  const char *error, const uint32_t *holders, size_t n)
{
    Spm__StoreReply r = SPM__STORE_REPLY__INIT;
    spm_nodecache_stats_t cs;
    spm_nodecache_stats(self->cache, &cs);
    uint64_t taken = cs.kept_bytes + holds_prune(self, spm_now_us(), 0, 0);
    r.limited = cs.budget != 0;
    r.room = cs.budget > taken ? cs.budget - taken : 0;
    r.req = req;
    r.status = status;
    r.error = (char *)(error ? error : "");
    r.holders = (uint32_t *)holders;
    r.n_holders = n;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_STORE_REPLY;
    env.store_reply = &r;
    spm_wire_send(self->router, id, &env, NULL, 0, NULL);
}

/*  A STORE being passed on: its sender waits for the answer. */
typedef struct {
    spm_dataagent_t *self;
    zmq_msg_t id; /* the sender */
    uint64_t req;
} pass_t;

static void passed_on(void *arg, const uint32_t *holders, size_t n, int status, const char *why)
{
    (void)status; /* it is kept here at least: the sender counts the holders */
    (void)why;
    pass_t *p = arg;
    reply(p->self, &p->id, p->req, 0, NULL, holders, n);
    zmq_msg_close(&p->id);
    free(p);
}

/*  Passes the block of STORE M, kept here, on to the nodes it names until
    WANT keep it, answering when they do. Returns 0, or an SPM_E* code when
    it cannot (the caller answers for this node alone). */
static int pass_on(spm_dataagent_t *self, spm_msg_t *m)
{
    Spm__Store *st = m->env->store;
    uint32_t cand[16];
    size_t n = 0;
    for (size_t i = 0; i < st->n_forward && n < 16; i++)
        if (st->forward[i]->index != self->node &&
            spm_blockclient_node(self->bc, st->forward[i]->index, st->forward[i]->endpoint,
                                 st->forward[i]->key) == 0)
            cand[n++] = st->forward[i]->index;
    size_t len = zmq_msg_size(&m->frames[0]);
    void *copy = malloc(len ? len : 1);
    pass_t *p = malloc(sizeof *p);
    spm_blockbuf_t *buf = copy && p ? spm_blockbuf_new(copy, len) : NULL;
    if (!buf) {
        if (!p || !copy)
            free(copy);
        free(p);
        return SPM_ENOMEM;
    }
    memcpy(copy, zmq_msg_data(&m->frames[0]), len);
    p->self = self;
    p->req = st->req;
    zmq_msg_init(&p->id);
    zmq_msg_copy(&p->id, &m->id);
    spm_blockref_t ref = {st->sdb, st->version, st->type, st->checksum, len};
    int rc = spm_blockclient_keep(self->bc, &ref, buf, &self->node, 1, st->want, cand, n, 1,
                                  passed_on, p);
    spm_blockbuf_unref(buf);
    if (rc != 0) {
        zmq_msg_close(&p->id);
        free(p);
    }
    return rc;
}

/*  Whether LEN more bytes of block (SDB, VERSION) fit this node's cache
    beside the blocks it keeps and the room it holds for other offers.
    Returns 0 or SPM_EFULL with the detail set. Only an estimate: the
    node's own IEUs keep their outputs without asking, so the keep that
    follows may still be refused. */
static int room_for(spm_dataagent_t *self, spm_sdb_t sdb, uint64_t version, uint64_t len,
                    uint64_t now)
{
    uint64_t held = holds_prune(self, now, sdb, version);
    spm_nodecache_stats_t cs;
    spm_nodecache_stats(self->cache, &cs);
    if (!cs.budget || cs.kept_bytes + held + len <= cs.budget)
        return 0;
    return spm_error(SPM_EFULL,
                     "the node keeps %llu bytes and holds %llu for offers; SDB %llu v%llu (%llu "
                     "bytes) would exceed its budget of %llu bytes",
                     (unsigned long long)cs.kept_bytes, (unsigned long long)held,
                     (unsigned long long)sdb, (unsigned long long)version, (unsigned long long)len,
                     (unsigned long long)cs.budget);
}

/*  OFFER M: says whether its block would be kept here, and holds the room
    for it when it would. A malformed offer is refused, never kept. */
static void offered(spm_dataagent_t *self, spm_msg_t *m)
{
    Spm__Store *st = m->env->store;
    uint64_t now = spm_now_us();
    int rc = m->nframes != 0 ? spm_error(SPM_EPROTO, "an offer carries no block frame")
             : !st->sdb || !st->version
                 ? spm_error(SPM_EINVAL, "offer of SDB %llu version %llu",
                             (unsigned long long)st->sdb, (unsigned long long)st->version)
                 : room_for(self, st->sdb, st->version, st->bytes, now);
    if (rc == 0 && self->nholds == HOLDS_MAX)
        rc = spm_error(SPM_EFULL, "%d offers held already", HOLDS_MAX);
    self->st.offers++;
    if (rc != 0) {
        self->st.offers_refused++;
        reply(self, &m->id, st->req, rc, spm_error_detail(), NULL, 0);
        return;
    }
    self->holds[self->nholds++] = (hold_t){st->sdb, st->version, st->bytes, now + HOLD_US};
    reply(self, &m->id, st->req, 0, NULL, NULL, 0);
}

/*  STORE M: keeps its block, passes it on when more keepers are wanted,
    and says so. The room held for other offers is not given to it. */
static void take_block(spm_dataagent_t *self, spm_msg_t *m)
{
    Spm__Store *st = m->env->store;
    if (st->offer) {
        offered(self, m);
        return;
    }
    size_t len = m->nframes == 1 ? zmq_msg_size(&m->frames[0]) : 0;
    int rc = m->nframes != 1 ? spm_error(SPM_EPROTO, "STORE needs exactly one block frame")
             : self->nholds  ? room_for(self, st->sdb, st->version, len, spm_now_us())
                             : 0;
    if (rc == 0)
        rc = keep(self, st->sdb, st->version, st->type, st->checksum, zmq_msg_data(&m->frames[0]),
                  len);
    if (rc != 0) {
        self->st.refused++;
        self->st.refused_bytes += len;
        /* a cache out of service refuses every block: the agent says so once */
        if (spm_nodecache_broken(self->cache, NULL, 0))
            spm_log_debug("refused to keep a block: %s", spm_error_detail());
        else
            spm_log_rated(&refused_rate, "refused to keep a block: %s", spm_error_detail());
        reply(self, &m->id, st->req, rc, spm_error_detail(), NULL, 0);
        return;
    }
    if (st->want > 1 && st->n_forward && self->bc && pass_on(self, m) == 0)
        return; /* answered when the others keep it */
    reply(self, &m->id, st->req, 0, NULL, &self->node, self->bc ? 1 : 0);
}

void spm_dataagent_serve(spm_dataagent_t *self)
{
    lease_t *l = NULL;
    spm_msg_t m;
    int r;
    for (int k = 0; k < BATCH && (r = spm_wire_recv(self->router, 1, 1, &m, NULL)) > 0; k++) {
        if (r != 1)
            continue;
        if (m.env->body_case == SPM__ENVELOPE__BODY_FETCH) {
            if (!l)
                l = lease(self, 0);
            answer(self, l, &m);
        } else if (m.env->body_case == SPM__ENVELOPE__BODY_STORE) {
            take_block(self, &m);
        }
        spm_msg_close(&m);
    }
    if (l)
        atomic_fetch_sub(&l->refs, 1); /* the batch is over */
    reap(self);
}

size_t spm_dataagent_drop(spm_dataagent_t *self, Spm__BlockRef *const *refs, size_t n)
{
    /* A few hundred a transaction: one wait for the node's IEUs, not one a
       block, and none held long (a discarded job drops thousands at once). */
    spm_nodecache_ref_t batch[DROP_BATCH];
    size_t found = 0;
    for (size_t at = 0; at < n; at += DROP_BATCH) {
        size_t k = n - at < DROP_BATCH ? n - at : DROP_BATCH, got = 0;
        for (size_t i = 0; i < k; i++)
            batch[i] = (spm_nodecache_ref_t){refs[at + i]->sdb, refs[at + i]->version};
        if (spm_nodecache_drop_each(self->cache, batch, k, &got) != 0)
            spm_log_warn("dropping garbage: %s", spm_error_detail());
        found += got;
    }
    return found;
}

/* ------------------------------------------------------------------ copies */

typedef struct {
    spm_dataagent_t *self;
    void *center; /* the agent's DEALER to the center */
    spm_blockref_t ref;
} copy_t;

/*  Tells the center this node keeps REF now. */
static void publish(void *center, const spm_blockref_t *ref, uint64_t bytes)
{
    Spm__BlockRef b = SPM__BLOCK_REF__INIT, *bp = &b;
    b.sdb = ref->sdb;
    b.version = ref->version;
    b.bytes = bytes;
    Spm__Publish p = SPM__PUBLISH__INIT;
    p.n_blocks = 1;
    p.blocks = &bp;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PUBLISH;
    env.publish = &p;
    spm_wire_send(center, NULL, &env, NULL, 0, NULL);
}

static void copied(void *arg, int status, zmq_msg_t *block, uint32_t node, const char *why)
{
    (void)node;
    copy_t *c = arg;
    if (status == 0 &&
        (status = keep(c->self, c->ref.sdb, c->ref.version, c->ref.type, c->ref.checksum,
                       zmq_msg_data(block), zmq_msg_size(block))) != 0)
        why = spm_error_detail();
    if (status == 0)
        publish(c->center, &c->ref, zmq_msg_size(block));
    else
        spm_log_rated(&copy_rate, "copying SDB %llu v%llu: %s", (unsigned long long)c->ref.sdb,
                      (unsigned long long)c->ref.version, why);
    free(c);
}

/*  Sends the copy of REF this node keeps to the center's store, as a
    zero-copy frame lent from a read transaction as FETCH answers are (or
    copied out, as they are, when that snapshot misses it). */
static void copy_to_store(spm_dataagent_t *self, void *center, const spm_blockref_t *ref)
{
    lease_t *l = lease(self, 1);
    const void *data;
    void *copy = NULL;
    size_t len;
    uint32_t type;
    int rc = l && l->reader
                 ? spm_nodecache_get(l->reader, ref->sdb, ref->version, &type, &data, &len)
                 : SPM_ESTORE;
    spm_frame_t f = {0};
    if (rc == 0) {
        atomic_fetch_add(&l->refs, 1);
        f = (spm_frame_t){(void *)data, len, release, l};
    } else if ((rc = spm_nodecache_copy(self->cache, ref->sdb, ref->version, &type, &copy, &len)) ==
               0) { /* kept since the old snapshot that was shared */
        f = (spm_frame_t){copy, len, spm_wire_free, NULL};
    }
    if (rc != 0) {
        spm_log_rated(&copy_rate, "copying SDB %llu v%llu to the store: this node has no copy",
                      (unsigned long long)ref->sdb, (unsigned long long)ref->version);
    } else {
        Spm__Store st = SPM__STORE__INIT;
        st.sdb = ref->sdb;
        st.version = ref->version;
        st.type = type;
        st.checksum = ref->checksum;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_STORE;
        env.store = &st;
        spm_wire_send(center, NULL, &env, &f, 1, NULL);
    }
    if (l)
        atomic_fetch_sub(&l->refs, 1);
    reap(self);
}

void spm_dataagent_copy(spm_dataagent_t *self, spm_blockclient_t *bc, void *center,
                        const Spm__Copy *c)
{
    spm_blockref_t ref = {c->sdb, c->version, c->type, c->checksum, c->bytes};
    if (c->to_store) {
        copy_to_store(self, center, &ref);
        return;
    }
    uint32_t nodes[16];
    size_t n = 0;
    for (size_t i = 0; i < c->n_sources && n < 16; i++)
        if (spm_blockclient_node(bc, c->sources[i]->index, c->sources[i]->endpoint,
                                 c->sources[i]->key) == 0)
            nodes[n++] = c->sources[i]->index;
    copy_t *cp = malloc(sizeof *cp);
    if (!cp)
        return;
    *cp = (copy_t){self, center, ref};
    int rc = spm_blockclient_fetch(bc, &ref, nodes, n, copied, cp);
    if (rc != 0) {
        spm_log_rated(&copy_rate, "copying SDB %llu v%llu: no source to fetch it from",
                      (unsigned long long)c->sdb, (unsigned long long)c->version);
        free(cp);
    }
}

void spm_dataagent_stats(const spm_dataagent_t *self, spm_dataagent_stats_t *out)
{
    *out = self->st;
}

int spm_dataagent_let_go(spm_dataagent_t *self, int wait_ms)
{
    reap(self);
    for (int i = 0; i < wait_ms && self->leases; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        reap(self);
    }
    if (!self->leases)
        return 0;
    /* ZeroMQ still holds frames in the old map: forget the leases (a small
       leak) rather than end transactions under them */
    self->leases = NULL;
    return SPM_ETIMEOUT;
}

void spm_dataagent_use(spm_dataagent_t *self, spm_nodecache_t *cache)
{
    self->cache = cache;
}

void spm_dataagent_destroy(spm_dataagent_t **self_p)
{
    spm_dataagent_t *self = *self_p;
    if (!self)
        return;
    reap(self);
    /* Leases still referenced here would mean ZeroMQ kept frames past its
       context: end them anyway, the memory map is about to go. */
    for (lease_t *l = self->leases, *n; l; l = n) {
        n = l->next;
        spm_nodecache_reader_end(&l->reader);
        free(l);
    }
    free(self);
    *self_p = NULL;
}
