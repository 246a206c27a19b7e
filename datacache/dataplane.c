/*  =========================================================================
    dataplane - the center's side of where blocks live

    Why replicas and not lineage: a block that outlives its producer's node
    either has a second copy elsewhere, or the IDU re-runs the SI that made
    it (and, if its inputs are gone too, their producers, recursively).
    Re-running needs every SI's operands and parameters kept for as long as
    any version it made is live, and a way to replay an SI without its SF
    hearing of it twice; the garbage collector frees SIs as they commit,
    and SFs react to every commit. A second copy costs one more transfer of
    every output over some node's link (not the center's), spread over all
    nodes, and makes a node's death cost only the SIs it was running: the
    measured price is in docs/PERFORMANCE.md.
    =========================================================================
*/
#include "datacache/dataplane.h"
#include "base/checksum.h"
#include "base/grow.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/lograte.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HOLDERS 8            /* holders named in one answer */
#define COPY_TIMEOUT_US 15000000 /* a copy not reported by then is ordered again */
#define COPIES_PER_TURN 256      /* copy orders sent in one turn */
#define COPIES_PER_NODE 32       /* copy orders a node works on at once */
#define GC_RETRY_BATCH 16        /* store deletions per transaction after one failed */
#define GC_RETRY_US 100000       /* failed store deletions are tried again this often */

typedef struct {
    Spm__BlockRef *v;
    size_t n, cap;
} refs_t;

typedef struct {
    spm_sdb_t sdb;
    uint64_t version;
    uint32_t target;      /* node asked to keep a copy */
    uint64_t deadline_us; /* ordered again after this */
} order_t;

struct spm_dataplane {
    spm_store_t *store;   /* not owned */
    spm_directory_t *dir; /* owned */
    spm_dp_send_fn send;
    void *arg;
    int batch_open, batch_rc; /* the turn's store batch */
    char batch_why[512];      /* the detail of the put that failed it (batch_rc) */
    int wrote;                /* the store changed since spm_dataplane_store_commit */
    refs_t *drops;            /* by node: garbage to delete there this turn */
    size_t ndrops;
    refs_t drop_all;      /* discarded SDBs: every node deletes every version */
    refs_t store_gone;    /* versions to delete from the store (kept while that fails) */
    int gc_failing;       /* the last deletion from the store failed */
    uint64_t gc_retry_us; /* ... and is tried again from then */
    spm_hmap_t *orders;   /* block key -> order_t, copies in flight */
    uint32_t *inflight;   /* by node: copies it was asked for and has not done */
    size_t ninflight;
    spm_dp_node_stats_t *nodes; /* by node: its agent's last report */
    size_t nnodes;
    uint32_t place_turn;                        /* rotates staging targets */
    char *eps[MAX_HOLDERS], *keys[MAX_HOLDERS]; /* a GET answer's holders */
    uint32_t ids[MAX_HOLDERS];
    Spm__Node targets[MAX_HOLDERS + 3], *ptargets[MAX_HOLDERS + 3]; /* a PUT answer's */
    spm_dataplane_stats_t st;
};

static uint64_t block_key(spm_sdb_t id, uint64_t version)
{
    uint64_t k = (id * 0x9e3779b97f4a7c15ull) ^ (version * 0xc2b2ae3d27d4eb4full);
    return k ? k : 1;
}

spm_dataplane_t *spm_dataplane_new(spm_store_t *store, uint32_t replicas, spm_dp_send_fn send,
                                   void *arg)
{
    spm_dataplane_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->send = send;
    self->arg = arg;
    self->dir = spm_directory_new(replicas);
    self->orders = spm_hmap_new();
    if (!self->dir || !self->orders) {
        spm_dataplane_destroy(&self);
        return NULL;
    }
    return self;
}

void spm_dataplane_destroy(spm_dataplane_t **self_p)
{
    spm_dataplane_t *self = *self_p;
    if (!self)
        return;
    if (self->batch_open)
        spm_store_abort(self->store);
    for (size_t i = 0; i < self->ndrops; i++)
        free(self->drops[i].v);
    free(self->drops);
    free(self->drop_all.v);
    free(self->store_gone.v);
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (self->orders && spm_hmap_next(self->orders, &pos, &key, &value))
        free(value);
    spm_hmap_destroy(&self->orders);
    free(self->inflight);
    free(self->nodes);
    spm_directory_destroy(&self->dir);
    free(self);
    *self_p = NULL;
}

spm_directory_t *spm_dataplane_directory(spm_dataplane_t *self)
{
    return self->dir;
}

static void refs_add(refs_t *r, spm_sdb_t id, uint64_t version, uint64_t bytes)
{
    if (spm_grow(&r->v, r->n, &r->cap, sizeof *r->v, 64) != 0)
        return; /* left where it is: costs space, not correctness */
    spm__block_ref__init(&r->v[r->n]);
    r->v[r->n].sdb = id;
    r->v[r->n].version = version;
    r->v[r->n++].bytes = bytes;
}

/* ----------------------------------------------------------------- nodes */

int spm_dataplane_node_up(spm_dataplane_t *self, uint32_t node, const char *endpoint,
                          const char *key)
{
    size_t need = (size_t)node + 1;
    if (spm_grow_zeroed(&self->drops, &self->ndrops, need, sizeof *self->drops) != 0 ||
        spm_grow_zeroed(&self->nodes, &self->nnodes, need, sizeof *self->nodes) != 0 ||
        spm_grow_zeroed(&self->inflight, &self->ninflight, need, sizeof *self->inflight) != 0)
        return SPM_ENOMEM;
    return spm_directory_node_up(self->dir, node, endpoint, key);
}

void spm_dataplane_node_down(spm_dataplane_t *self, uint32_t node)
{
    size_t lost = spm_directory_node_down(self->dir, node);
    if (node < self->ndrops)
        self->drops[node].n = 0;
    if (lost)
        spm_log_warn("node %u died holding the last copy of %zu block versions", node, lost);
}

size_t spm_dataplane_node_list(spm_dataplane_t *self, Spm__Node *nodes, Spm__Node **ptrs,
                               size_t max)
{
    uint32_t *ids = malloc((max ? max : 1) * sizeof *ids);
    if (!ids)
        return 0;
    size_t n = spm_directory_nodes(self->dir, ids, max), k = 0;
    for (size_t i = 0; i < n && i < max; i++) {
        const char *ep, *key;
        if (!spm_directory_node(self->dir, ids[i], &ep, &key))
            continue;
        spm__node__init(&nodes[k]);
        nodes[k].index = ids[i];
        nodes[k].endpoint = (char *)ep;
        nodes[k].key = (char *)key;
        ptrs[k] = &nodes[k];
        k++;
    }
    free(ids);
    return k;
}

void spm_dataplane_node_report(spm_dataplane_t *self, uint32_t node, const Spm__Heartbeat *hb)
{
    if (node >= self->nnodes)
        return;
    spm_dp_node_stats_t *n = &self->nodes[node];
    n->served = hb->served;
    n->served_bytes = hb->served_bytes;
    n->stored = hb->stored;
    n->stored_bytes = hb->stored_bytes;
    n->kept_bytes = hb->kept_bytes;
    n->cache_bytes = hb->cache_bytes;
}

/* ------------------------------------------------------------- operands */

size_t spm_dataplane_locate(spm_dataplane_t *self, spm_sdb_t id, uint64_t version,
                            uint32_t *holders, size_t max, uint64_t *checksum, uint64_t *bytes)
{
    spm_dir_block_t b;
    if (spm_directory_block(self->dir, id, version, &b) != 0)
        return 0;
    *checksum = b.checksum;
    *bytes = b.bytes;
    uint32_t all[MAX_HOLDERS];
    size_t n = spm_directory_holders(self->dir, id, version, all, MAX_HOLDERS), k = 0;
    for (size_t i = 0; i < n && i < MAX_HOLDERS && k < max; i++)
        if (all[i] != SPM_NODE_STORE)
            holders[k++] = all[i];
    return k;
}

int spm_dataplane_in_store(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t *type)
{
    return spm_store_stat(self->store, id, version, type, NULL) == 0;
}

int spm_dataplane_get(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t requester,
                      int store_only, Spm__GetReply *r, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    spm_dir_block_t b;
    int known = spm_directory_block(self->dir, id, version, &b) == 0;
    if (known && !store_only) {
        uint32_t all[MAX_HOLDERS];
        size_t n = spm_directory_holders(self->dir, id, version, all, MAX_HOLDERS), k = 0;
        for (size_t i = 0; i < n && i < MAX_HOLDERS; i++) {
            const char *ep, *key;
            if (all[i] == requester || !spm_directory_node(self->dir, all[i], &ep, &key))
                continue;
            self->eps[k] = (char *)ep;
            self->keys[k] = (char *)key;
            self->ids[k++] = all[i];
        }
        if (k) {
            r->n_holders = r->n_holder_keys = r->n_holder_nodes = k;
            r->holders = self->eps;
            r->holder_keys = self->keys;
            r->holder_nodes = self->ids;
            r->checksum = b.checksum;
            r->bytes = b.bytes;
            return 0;
        }
    }
    uint32_t type;
    int rc = spm_store_get(self->store, id, version, NULL, &type, data, len);
    if (rc == 0) {
        r->type = type;
        self->st.store_out += *len;
        return 0;
    }
    if (known && b.lost)
        return spm_error(SPM_ENOTFOUND,
                         "SDB %llu version %llu was lost: every node that kept it died",
                         (unsigned long long)id, (unsigned long long)version);
    return spm_error(SPM_ENOTFOUND, "no SDB %llu version %llu in the VM", (unsigned long long)id,
                     (unsigned long long)version);
}

/* -------------------------------------------------------------- commits */

int spm_dataplane_store_put(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                            const void *data, size_t len)
{
    if (!self->batch_open && self->batch_rc == 0) {
        self->batch_rc = spm_store_begin(self->store);
        self->batch_open = self->batch_rc == 0;
    }
    int rc = self->batch_rc;
    if (rc == 0) {
        rc = spm_store_put(self->store, id, version, type, data, len);
        if (rc == SPM_EINVAL) { /* an earlier attempt's bytes, never applied */
            spm_store_delete(self->store, id, version);
            rc = spm_store_put(self->store, id, version, type, data, len);
        }
    }
    if (rc != 0 && self->batch_rc == 0) {
        /* kept: other failures may set the detail before the commit reports this one */
        self->batch_rc = rc;
        snprintf(self->batch_why, sizeof self->batch_why, "%s", spm_error_detail());
    }
    if (rc == 0)
        self->st.store_in += len;
    return rc;
}

int spm_dataplane_store_commit(spm_dataplane_t *self, int *wrote)
{
    int rc = self->batch_rc;
    if (self->batch_open) {
        if (rc == 0)
            rc = spm_store_commit(self->store);
        else
            spm_store_abort(self->store);
        self->wrote |= rc == 0;
    }
    if (self->batch_rc != 0) /* the put's own failure, with its reason */
        spm_error(self->batch_rc, "%s", self->batch_why);
    self->batch_open = 0;
    self->batch_rc = 0;
    *wrote = self->wrote;
    self->wrote = 0;
    return rc;
}

void spm_dataplane_output(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                          const Spm__BlockMeta *meta)
{
    for (size_t i = 0; i < meta->n_holders; i++)
        spm_directory_add(self->dir, id, version, meta->bytes, meta->checksum, meta->holders[i],
                          SPM_DIR_KEEPER);
    if (meta->framed)
        spm_directory_add(self->dir, id, version, meta->bytes, meta->checksum, SPM_NODE_STORE,
                          SPM_DIR_KEEPER);
    spm_directory_set_type(self->dir, id, version, type);
}

/*  Takes the copy order of (ID, VERSION) to TARGET out of the table, if
    there is one. Returns 1 when there was. */
static int order_done(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t target)
{
    uint64_t key = block_key(id, version);
    order_t *o = spm_hmap_get(self->orders, key);
    if (!o || o->sdb != id || o->version != version || o->target != target)
        return 0;
    spm_hmap_remove(self->orders, key);
    if (o->target < self->ninflight && self->inflight[o->target])
        self->inflight[o->target]--;
    free(o);
    return 1;
}

/*  Forgets the copy orders of ID (VERSION 0: of every version): it is
    garbage, and a copy made after all must not bring it back. */
static void orders_forget(spm_dataplane_t *self, spm_sdb_t id, uint64_t version)
{
    uint64_t gone[64];
    size_t n;
    do {
        n = 0;
        size_t pos = 0;
        uint64_t key;
        void *value;
        while (n < 64 && spm_hmap_next(self->orders, &pos, &key, &value)) {
            const order_t *o = value;
            if (o->sdb == id && (version == 0 || o->version == version))
                gone[n++] = key;
        }
        for (size_t i = 0; i < n; i++) {
            order_t *o = spm_hmap_remove(self->orders, gone[i]);
            if (o->target < self->ninflight && self->inflight[o->target])
                self->inflight[o->target]--;
            free(o);
        }
    } while (n == 64);
}

/* ---------------------------------------------------------------- clients */

/*  Fills target K of the PUT answer with NODE. */
static void target(spm_dataplane_t *self, size_t k, uint32_t node, const char *ep, const char *key)
{
    spm__node__init(&self->targets[k]);
    self->targets[k].index = node;
    self->targets[k].endpoint = (char *)ep;
    self->targets[k].key = (char *)key;
    self->ptargets[k] = &self->targets[k];
}

int spm_dataplane_place(spm_dataplane_t *self, spm_sdb_t id, uint32_t type, uint64_t bytes,
                        uint64_t checksum, Spm__PutReply *r)
{
    if (spm_directory_expect(self->dir, id, 1, bytes, checksum) != 0)
        return SPM_ENOMEM;
    spm_directory_set_type(self->dir, id, 1, type);
    uint32_t replicas = spm_directory_replicas(self->dir);
    uint32_t up[256];
    size_t n = spm_directory_nodes(self->dir, up, 256), k = 0;
    n = n < 256 ? n : 256;
    size_t want = replicas + 2 < MAX_HOLDERS + 2 ? replicas + 2 : MAX_HOLDERS + 2;
    for (size_t i = 0; i < n && k < want; i++) {
        uint32_t node = up[(self->place_turn + i) % n];
        const char *ep, *key;
        if (spm_directory_node(self->dir, node, &ep, &key))
            target(self, k++, node, ep, key);
    }
    self->place_turn++;
    /* The last resort, when too few nodes are up or will keep it: the
       center's store. */
    target(self, k++, SPM_NODE_STORE, "", "");
    r->n_targets = k;
    r->targets = self->ptargets;
    r->replicas = replicas;
    return 0;
}

void spm_dataplane_placed(spm_dataplane_t *self, spm_sdb_t id, const uint32_t *holders, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spm_directory_add(self->dir, id, 1, 0, 0, holders[i], SPM_DIR_KEEPER);
    spm_directory_short_again(self->dir, id, 1); /* fewer than wanted: copies follow */
}

int spm_dataplane_store(spm_dataplane_t *self, const Spm__Store *st, const void *data, size_t len,
                        int (*check)(uint32_t type, const void *data, size_t len))
{
    if (!st->sdb || !st->version)
        return spm_error(SPM_EINVAL, "STORE of no SDB");
    if (check(st->type, data, len) != 0)
        return spm_error(SPM_EFORMAT, "SDB %llu v%llu: not a well-formed block of its type",
                         (unsigned long long)st->sdb, (unsigned long long)st->version);
    spm_dir_block_t b;
    if (spm_directory_block(self->dir, st->sdb, st->version, &b) != 0)
        return spm_error(SPM_ENOTFOUND, "SDB %llu v%llu is not wanted (any more)",
                         (unsigned long long)st->sdb, (unsigned long long)st->version);
    if (spm_checksum(data, len) != st->checksum || (b.checksum && b.checksum != st->checksum))
        return spm_error(SPM_EFORMAT, "SDB %llu v%llu: its bytes do not match their checksum",
                         (unsigned long long)st->sdb, (unsigned long long)st->version);
    int rc = spm_store_put(self->store, st->sdb, st->version, st->type, data, len);
    if (rc != 0)
        return rc;
    self->wrote = 1;
    self->st.store_in += len;
    self->st.copies_done += order_done(self, st->sdb, st->version, SPM_NODE_STORE);
    return spm_directory_add(self->dir, st->sdb, st->version, len, st->checksum, SPM_NODE_STORE,
                             SPM_DIR_KEEPER);
}

void spm_dataplane_publish(spm_dataplane_t *self, uint32_t node, int from_agent,
                           Spm__BlockRef *const *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!from_agent) { /* a copy an IEU cached to read */
            spm_directory_add(self->dir, refs[i]->sdb, refs[i]->version, refs[i]->bytes, 0, node,
                              SPM_DIR_COPY);
            continue;
        }
        /* A keeper only by the center's own order: an agent cannot make
           itself the holder of record of anything else. */
        if (!order_done(self, refs[i]->sdb, refs[i]->version, node))
            continue;
        spm_directory_add(self->dir, refs[i]->sdb, refs[i]->version, refs[i]->bytes, 0, node,
                          SPM_DIR_KEEPER);
        self->st.copies_done++;
    }
}

void spm_dataplane_held(spm_dataplane_t *self, uint32_t node, const Spm__BlockRef *ref, int wanted)
{
    /* A version this center saw committed has its checksum recorded: a
       copy with other bytes is from before a crash that lost its commit
       (the same ids were given again since), and goes. */
    spm_dir_block_t known;
    if (wanted && spm_directory_block(self->dir, ref->sdb, ref->version, &known) == 0 &&
        known.checksum != ref->checksum)
        wanted = 0;
    if (!wanted) {
        if (node < self->ndrops)
            refs_add(&self->drops[node], ref->sdb, ref->version, 0);
        return;
    }
    spm_directory_add(self->dir, ref->sdb, ref->version, ref->bytes, ref->checksum, node,
                      SPM_DIR_KEEPER);
    spm_directory_set_type(self->dir, ref->sdb, ref->version, ref->type);
}

void spm_dataplane_drop(spm_dataplane_t *self, uint32_t node, Spm__BlockRef *const *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const Spm__BlockRef *b = refs[i];
        if (!b->corrupt) { /* an eviction: only copies are ever evicted */
            if (spm_directory_holds(self->dir, b->sdb, b->version, node) == SPM_DIR_HELD_COPY)
                spm_directory_drop(self->dir, b->sdb, b->version, node);
            continue;
        }
        /* The node that served a corrupt copy deletes it; readers go
           elsewhere from now on, and the block gets a new copy if it was
           a keeper. The center cannot check the claim, so a last keeper is
           never dropped on it: a false report costs a copy, never data. */
        spm_dir_block_t d;
        int held = spm_directory_holds(self->dir, b->sdb, b->version, b->node);
        if (!held || spm_directory_block(self->dir, b->sdb, b->version, &d) != 0 ||
            (held == SPM_DIR_HELD_KEEPER && d.keepers < 2))
            continue;
        static spm_log_rate_t rate =
            SPM_LOG_RATE(SPM_LOG_WARN, "corrupt copies reported, copied again from good ones");
        spm_log_rated(&rate, "node %u reports a corrupt copy of SDB %llu v%llu on node %u", node,
                      (unsigned long long)b->sdb, (unsigned long long)b->version, b->node);
        self->st.corrupt++;
        spm_directory_drop(self->dir, b->sdb, b->version, b->node);
        if (b->node < self->ndrops)
            refs_add(&self->drops[b->node], b->sdb, b->version, 0);
    }
}

/* ---------------------------------------------------------------- garbage */

static void tell_holder(void *arg, uint32_t node, spm_sdb_t id, uint64_t version)
{
    spm_dataplane_t *self = arg;
    if (node == SPM_NODE_STORE)
        refs_add(&self->store_gone, id, version, 0);
    else if (node < self->ndrops)
        refs_add(&self->drops[node], id, version, 0);
    self->st.dropped++;
}

void spm_dataplane_garbage(spm_dataplane_t *self, spm_sdb_t id, uint64_t version)
{
    orders_forget(self, id, version);
    spm_directory_forget(self->dir, id, version, tell_holder, self);
    if (version == 0) {
        /* A discarded SDB: every node deletes every version, also copies
           the directory never heard of (a replica pushed by an IEU that
           died before its COMMIT). */
        refs_add(&self->drop_all, id, 0, 0);
        refs_add(&self->store_gone, id, 0, 0);
    } else {
        refs_add(&self->store_gone, id, version, 0); /* in-place outputs are in no directory */
    }
}

/*  Deletes the N blocks of REFS from the store in one transaction.
    Returns 0 or the commit's failure (nothing deleted then). */
static int store_delete(spm_dataplane_t *self, const Spm__BlockRef *refs, size_t n)
{
    int rc = spm_store_begin(self->store);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const Spm__BlockRef *b = &refs[i];
        int r = b->version == 0 ? spm_store_delete_all(self->store, b->sdb)
                                : spm_store_delete(self->store, b->sdb, b->version);
        if (r != 0 && r != SPM_ENOTFOUND) /* not found: never there, or gone already */
            rc = r;
    }
    if (rc == 0)
        return spm_store_commit(self->store);
    spm_store_abort(self->store);
    return rc;
}

/*  Deletes the garbage from the store: the turn's in one transaction. A
    deletion's commit can fail (the disk full, and the map with it: even a
    delete needs free pages, for the pages it copies and for the list of
    those it frees); the blocks are then kept in the list, not dropped, and
    tried again every GC_RETRY_US in transactions of GC_RETRY_BATCH, as
    small as can be, until they go: each commit frees pages for the ones
    after it. Dropped, they would hold their space for good, since nothing
    would name them again until a restart swept the store. */
static void store_collect(spm_dataplane_t *self, uint64_t now_us)
{
    size_t n = self->store_gone.n, done = 0;
    if (!n || (self->gc_failing && now_us < self->gc_retry_us))
        return;
    size_t batch = self->gc_failing ? GC_RETRY_BATCH : n;
    int rc = 0;
    while (done < n) {
        size_t k = n - done < batch ? n - done : batch;
        if ((rc = store_delete(self, self->store_gone.v + done, k)) != 0)
            break;
        done += k;
        self->wrote = 1;
    }
    memmove(self->store_gone.v, self->store_gone.v + done, (n - done) * sizeof *self->store_gone.v);
    self->store_gone.n = n - done;
    if (rc != 0) {
        static spm_log_rate_t rate = SPM_LOG_RATE(
            SPM_LOG_WARN, "garbage deletions from the store that failed (kept and tried again)");
        spm_log_rated(&rate, "garbage collection: %zu blocks kept to delete later: %s",
                      self->store_gone.n, spm_error_detail());
        self->gc_failing = 1;
        self->gc_retry_us = now_us + GC_RETRY_US;
    } else if (self->gc_failing) {
        self->gc_failing = 0;
        spm_log_info("garbage collection: the deletions kept after a failure are done");
    }
}

/*  Sends REFS to NODE as one DROP. */
static void send_drops(spm_dataplane_t *self, uint32_t node, const refs_t *refs)
{
    Spm__BlockRef **ptrs = malloc(refs->n * sizeof *ptrs);
    if (!ptrs)
        return;
    for (size_t i = 0; i < refs->n; i++)
        ptrs[i] = &refs->v[i];
    Spm__Drop d = SPM__DROP__INIT;
    d.n_blocks = refs->n;
    d.blocks = ptrs;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_DROP;
    env.drop = &d;
    self->send(self->arg, node, &env);
    free(ptrs);
}

/* ----------------------------------------------------------------- copies */

/*  The node up that should keep a new copy of (ID, VERSION): one that does
    not hold it, with the fewest copies in flight, then the fewest bytes
    kept. SPM_NODE_STORE when none can. */
static uint32_t copy_target(spm_dataplane_t *self, spm_sdb_t id, uint64_t version)
{
    uint32_t up[256], best = SPM_NODE_STORE;
    size_t n = spm_directory_nodes(self->dir, up, 256);
    uint64_t best_load = UINT64_MAX;
    for (size_t i = 0; i < n && i < 256; i++) {
        uint32_t node = up[i];
        if (spm_directory_holds(self->dir, id, version, node) == SPM_DIR_HELD_KEEPER ||
            (node < self->ninflight && self->inflight[node] >= COPIES_PER_NODE))
            continue;
        uint64_t kept = spm_directory_node_bytes(self->dir, node, NULL);
        uint64_t load =
            ((uint64_t)(node < self->ninflight ? self->inflight[node] : 0) << 48) + (kept >> 16);
        if (load < best_load) {
            best_load = load;
            best = node;
        }
    }
    return best;
}

/*  Orders one more copy of (ID, VERSION), which is short of keepers.
    Returns 0, or 1 when nothing can be ordered now (left queued). */
static int order_copy(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint64_t now)
{
    uint64_t key = block_key(id, version);
    if (spm_hmap_get(self->orders, key))
        return 0; /* one is in flight already */
    spm_dir_block_t b;
    uint32_t holders[MAX_HOLDERS];
    if (spm_directory_block(self->dir, id, version, &b) != 0)
        return 0;
    size_t n = spm_directory_holders(self->dir, id, version, holders, MAX_HOLDERS);
    n = n < MAX_HOLDERS ? n : MAX_HOLDERS;
    Spm__Node src[MAX_HOLDERS], *psrc[MAX_HOLDERS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *ep, *nk;
        if (holders[i] != SPM_NODE_STORE && spm_directory_node(self->dir, holders[i], &ep, &nk)) {
            spm__node__init(&src[k]);
            src[k].index = holders[i];
            src[k].endpoint = (char *)ep;
            src[k].key = (char *)nk;
            psrc[k] = &src[k];
            k++;
        }
    }
    if (!k)
        return 0; /* only the store holds it: durable as it is */
    uint32_t target = copy_target(self, id, version);
    Spm__Copy c = SPM__COPY__INIT;
    c.sdb = id;
    c.version = version;
    c.type = b.type;
    c.checksum = b.checksum;
    c.bytes = b.bytes;
    c.n_sources = k;
    c.sources = psrc;
    uint32_t to = target;
    if (target == SPM_NODE_STORE) { /* every node up holds it: the store takes one */
        c.to_store = 1;
        to = src[0].index;
    } else if (target < self->ninflight && self->inflight[target] >= COPIES_PER_NODE) {
        return 1;
    }
    order_t *o = malloc(sizeof *o);
    if (!o)
        return 1;
    *o = (order_t){id, version, target, now + COPY_TIMEOUT_US};
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_COPY;
    env.copy = &c;
    if (self->send(self->arg, to, &env) != 0 || spm_hmap_put(self->orders, key, o) != 0) {
        free(o);
        return 1;
    }
    if (target < self->ninflight)
        self->inflight[target]++;
    self->st.copies++;
    return 0;
}

/*  Copies not reported in time are ordered again; so are those of a
    target that died (its inflight count is then dropped too). */
static void expire_orders(spm_dataplane_t *self, uint64_t now)
{
    uint64_t late[64];
    size_t n = 0, pos = 0;
    uint64_t key;
    void *value;
    while (n < 64 && spm_hmap_next(self->orders, &pos, &key, &value)) {
        order_t *o = value;
        int dead =
            o->target != SPM_NODE_STORE && !spm_directory_node(self->dir, o->target, NULL, NULL);
        if (now > o->deadline_us || dead)
            late[n++] = key;
    }
    for (size_t i = 0; i < n; i++) {
        order_t *o = spm_hmap_remove(self->orders, late[i]);
        if (o->target < self->ninflight && self->inflight[o->target])
            self->inflight[o->target]--;
        spm_directory_short_again(self->dir, o->sdb, o->version);
        free(o);
    }
}

void spm_dataplane_turn(spm_dataplane_t *self, uint64_t now_us)
{
    store_collect(self, now_us);
    for (size_t node = 0; node < self->ndrops; node++) {
        if (!self->drops[node].n)
            continue;
        if (spm_directory_node(self->dir, (uint32_t)node, NULL, NULL))
            send_drops(self, (uint32_t)node, &self->drops[node]);
        self->drops[node].n = 0;
    }
    if (self->drop_all.n) {
        uint32_t up[256];
        size_t n = spm_directory_nodes(self->dir, up, 256);
        for (size_t i = 0; i < n && i < 256; i++)
            send_drops(self, up[i], &self->drop_all);
        self->drop_all.n = 0;
    }
    if (spm_hmap_size(self->orders))
        expire_orders(self, now_us);
    spm_sdb_t id;
    uint64_t version;
    for (int k = 0; k < COPIES_PER_TURN && spm_directory_short_take(self->dir, &id, &version); k++)
        if (order_copy(self, id, version, now_us) != 0) {
            spm_directory_short_again(self->dir, id, version);
            break; /* the nodes are busy with copies: the next turns go on */
        }
}

/* ------------------------------------------------------------------ stats */

void spm_dataplane_stats(spm_dataplane_t *self, spm_dataplane_stats_t *out)
{
    *out = self->st;
    out->store_pending = self->gc_failing ? self->store_gone.n : 0;
    spm_directory_stats(self->dir, &out->dir);
}

int spm_dataplane_node_stats(spm_dataplane_t *self, uint32_t node, spm_dp_node_stats_t *out)
{
    if (node >= self->nnodes) {
        *out = (spm_dp_node_stats_t){0};
        return 0;
    }
    *out = self->nodes[node];
    spm_directory_node_bytes(self->dir, node, &out->kept_blocks);
    return 1;
}
