/*  =========================================================================
    directory - where every block version of the VM lives

    One hash entry per SDB with its versions in a short list (usually one or
    two are live), each version with an array of holders. Node deaths walk
    the whole table: O(versions), a few ms for a hundred thousand, once per
    death.
    =========================================================================
*/
#include "datacache/directory.h"
#include "base/grow.h"
#include "base/hmap.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t node; /* node index or SPM_NODE_STORE */
    uint8_t kind;  /* SPM_DIR_KEEPER or SPM_DIR_COPY */
} holder_t;

typedef struct dver {
    uint64_t version;
    uint64_t bytes;
    uint64_t checksum;
    uint32_t type; /* SDB type id (0: not recorded) */
    holder_t *h;   /* holders up now */
    size_t n, cap;
    int lost;   /* its last holder died */
    int queued; /* in the short queue */
    struct dver *next;
} dver_t;

typedef struct {
    dver_t *versions; /* newest first */
} dsdb_t;

typedef struct {
    char *endpoint;                /* its data agent */
    char *key;                     /* that endpoint's CurveZMQ key ("" for none) */
    int up;                        /* alive now */
    uint64_t kept_bytes, kept_blk; /* what it keeps, by this table */
} node_t;

typedef struct {
    spm_sdb_t id;
    uint64_t version;
} vkey_t;

struct spm_directory {
    uint32_t replicas; /* keepers wanted per block */
    spm_hmap_t *sdbs;  /* SDB id -> dsdb_t */
    node_t *nodes;     /* by node index */
    size_t nnodes;
    vkey_t *shortq; /* blocks with fewer keepers than wanted, FIFO */
    size_t nshort, capshort, shorthead;
    uint32_t turn; /* rotates holder lists */
    uint64_t lost; /* versions lost so far */
};

spm_directory_t *spm_directory_new(uint32_t replicas)
{
    spm_directory_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->replicas = replicas ? replicas : 1;
    if (!(self->sdbs = spm_hmap_new())) {
        free(self);
        return NULL;
    }
    return self;
}

static void dver_free(dver_t *v)
{
    free(v->h);
    free(v);
}

void spm_directory_destroy(spm_directory_t **self_p)
{
    spm_directory_t *self = *self_p;
    if (!self)
        return;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->sdbs, &pos, &key, &value)) {
        dsdb_t *d = value;
        for (dver_t *v = d->versions, *n; v; v = n) {
            n = v->next;
            dver_free(v);
        }
        free(d);
    }
    spm_hmap_destroy(&self->sdbs);
    for (size_t i = 0; i < self->nnodes; i++) {
        free(self->nodes[i].endpoint);
        free(self->nodes[i].key);
    }
    free(self->nodes);
    free(self->shortq);
    free(self);
    *self_p = NULL;
}

uint32_t spm_directory_replicas(const spm_directory_t *self)
{
    return self->replicas;
}

/* ----------------------------------------------------------------- nodes */

static node_t *node_get(const spm_directory_t *self, uint32_t node)
{
    return node < self->nnodes ? &self->nodes[node] : NULL;
}

static int is_up(const spm_directory_t *self, uint32_t node)
{
    if (node == SPM_NODE_STORE)
        return 1;
    const node_t *n = node_get(self, node);
    return n && n->up;
}

int spm_directory_node_up(spm_directory_t *self, uint32_t node, const char *endpoint,
                          const char *key)
{
    if (node == SPM_NODE_STORE)
        return spm_error(SPM_EINVAL, "node index %u is reserved", node);
    if (spm_grow_zeroed(&self->nodes, &self->nnodes, (size_t)node + 1, sizeof *self->nodes) != 0)
        return SPM_ENOMEM;
    node_t *n = &self->nodes[node];
    char *ep = strdup(endpoint ? endpoint : ""), *k = strdup(key ? key : "");
    if (!ep || !k) {
        free(ep);
        free(k);
        return SPM_ENOMEM;
    }
    free(n->endpoint);
    free(n->key);
    n->endpoint = ep;
    n->key = k;
    n->up = 1;
    return 0;
}

int spm_directory_node(const spm_directory_t *self, uint32_t node, const char **endpoint,
                       const char **key)
{
    const node_t *n = node_get(self, node);
    if (!n || !n->up)
        return 0;
    if (endpoint)
        *endpoint = n->endpoint;
    if (key)
        *key = n->key;
    return 1;
}

size_t spm_directory_nodes(const spm_directory_t *self, uint32_t *nodes, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < self->nnodes; i++)
        if (self->nodes[i].up) {
            if (k < max)
                nodes[k] = (uint32_t)i;
            k++;
        }
    return k;
}

static uint32_t keepers(const dver_t *v)
{
    uint32_t k = 0;
    for (size_t i = 0; i < v->n; i++)
        k += v->h[i].kind == SPM_DIR_KEEPER;
    return k;
}

static int in_store(const dver_t *v)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->h[i].node == SPM_NODE_STORE)
            return 1;
    return 0;
}

/*  Whether V has fewer keepers than wanted (the store is enough alone). */
static int is_short(const spm_directory_t *self, const dver_t *v)
{
    return v->n > 0 && !in_store(v) && keepers(v) < self->replicas;
}

static void queue_short(spm_directory_t *self, spm_sdb_t id, dver_t *v)
{
    if (v->queued || !is_short(self, v))
        return;
    if (self->shorthead > 0 && self->shorthead == self->nshort)
        self->shorthead = self->nshort = 0;
    if (spm_grow(&self->shortq, self->nshort, &self->capshort, sizeof *self->shortq, 64) != 0)
        return; /* left short until the next death looks again */
    self->shortq[self->nshort++] = (vkey_t){id, v->version};
    v->queued = 1;
}

/*  Removes holder I of V, keeping the node's account. */
static void remove_holder(spm_directory_t *self, dver_t *v, size_t i)
{
    node_t *n = node_get(self, v->h[i].node);
    if (n && v->h[i].kind == SPM_DIR_KEEPER) {
        n->kept_bytes -= v->bytes < n->kept_bytes ? v->bytes : n->kept_bytes;
        n->kept_blk -= n->kept_blk > 0;
    }
    v->h[i] = v->h[--v->n];
}

size_t spm_directory_node_down(spm_directory_t *self, uint32_t node)
{
    node_t *nd = node_get(self, node);
    if (!nd || !nd->up)
        return 0;
    nd->up = 0;
    size_t lost = 0, pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->sdbs, &pos, &key, &value))
        for (dver_t *v = ((dsdb_t *)value)->versions; v; v = v->next)
            for (size_t i = 0; i < v->n; i++) {
                if (v->h[i].node != node)
                    continue;
                int kept = v->h[i].kind == SPM_DIR_KEEPER;
                remove_holder(self, v, i);
                if (v->n == 0) {
                    v->lost = 1;
                    lost++;
                } else if (kept) {
                    queue_short(self, key, v);
                }
                break;
            }
    nd->kept_bytes = nd->kept_blk = 0;
    self->lost += lost;
    return lost;
}

/* ---------------------------------------------------------------- blocks */

static dver_t *find(const spm_directory_t *self, spm_sdb_t id, uint64_t version)
{
    dsdb_t *d = spm_hmap_get(self->sdbs, id);
    for (dver_t *v = d ? d->versions : NULL; v; v = v->next)
        if (v->version == version)
            return v;
    return NULL;
}

static dver_t *find_or_make(spm_directory_t *self, spm_sdb_t id, uint64_t version)
{
    dver_t *v = find(self, id, version);
    if (v)
        return v;
    dsdb_t *d = spm_hmap_get(self->sdbs, id);
    if (!d) {
        if (!(d = calloc(1, sizeof *d)))
            return NULL;
        if (spm_hmap_put(self->sdbs, id, d) != 0) {
            free(d);
            return NULL;
        }
    }
    if (!(v = calloc(1, sizeof *v)))
        return NULL;
    v->version = version;
    v->next = d->versions;
    d->versions = v;
    return v;
}

int spm_directory_add(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint64_t bytes,
                      uint64_t checksum, uint32_t node, int kind)
{
    if (!is_up(self, node))
        return 0;
    dver_t *v = find_or_make(self, id, version);
    if (!v)
        return SPM_ENOMEM;
    if (bytes)
        v->bytes = bytes;
    if (checksum)
        v->checksum = checksum;
    v->lost = 0;
    node_t *n = node_get(self, node);
    for (size_t i = 0; i < v->n; i++)
        if (v->h[i].node == node) {
            if (kind == SPM_DIR_KEEPER && v->h[i].kind != SPM_DIR_KEEPER) {
                v->h[i].kind = SPM_DIR_KEEPER;
                if (n) {
                    n->kept_bytes += v->bytes;
                    n->kept_blk++;
                }
            }
            return 0;
        }
    if (spm_grow(&v->h, v->n, &v->cap, sizeof *v->h, 4) != 0)
        return SPM_ENOMEM;
    v->h[v->n++] = (holder_t){node, (uint8_t)kind};
    if (n && kind == SPM_DIR_KEEPER) {
        n->kept_bytes += v->bytes;
        n->kept_blk++;
    }
    return 0;
}

int spm_directory_expect(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint64_t bytes,
                         uint64_t checksum)
{
    dver_t *v = find_or_make(self, id, version);
    if (!v)
        return SPM_ENOMEM;
    v->bytes = bytes;
    v->checksum = checksum;
    return 0;
}

void spm_directory_set_type(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint32_t type)
{
    dver_t *v = find(self, id, version);
    if (v)
        v->type = type;
}

void spm_directory_drop(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint32_t node)
{
    dver_t *v = find(self, id, version);
    for (size_t i = 0; v && i < v->n; i++)
        if (v->h[i].node == node) {
            int kept = v->h[i].kind == SPM_DIR_KEEPER;
            remove_holder(self, v, i);
            if (v->n == 0 && kept) {
                v->lost = 1;
                self->lost++;
            } else if (kept) {
                queue_short(self, id, v);
            }
            return;
        }
}

int spm_directory_block(const spm_directory_t *self, spm_sdb_t id, uint64_t version,
                        spm_dir_block_t *out)
{
    const dver_t *v = find(self, id, version);
    if (!v)
        return SPM_ENOTFOUND;
    *out = (spm_dir_block_t){.bytes = v->bytes,
                             .checksum = v->checksum,
                             .type = v->type,
                             .keepers = keepers(v),
                             .holders = (uint32_t)v->n,
                             .lost = v->lost};
    return 0;
}

size_t spm_directory_holders(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint32_t *nodes,
                             size_t max)
{
    const dver_t *v = find(self, id, version);
    if (!v || !v->n)
        return 0;
    size_t k = 0, turn = self->turn++;
    for (int kind = SPM_DIR_KEEPER; kind >= SPM_DIR_COPY; kind--) {
        size_t m = 0;
        for (size_t i = 0; i < v->n; i++)
            m += v->h[i].kind == kind;
        for (size_t j = 0, seen = 0; m && j < v->n && k < max; j++) {
            const holder_t *h = &v->h[(turn + j) % v->n];
            if (h->kind != kind)
                continue;
            nodes[k++] = h->node;
            if (++seen == m)
                break;
        }
    }
    return v->n;
}

int spm_directory_holds(const spm_directory_t *self, spm_sdb_t id, uint64_t version, uint32_t node)
{
    const dver_t *v = find(self, id, version);
    for (size_t i = 0; v && i < v->n; i++)
        if (v->h[i].node == node)
            return v->h[i].kind == SPM_DIR_KEEPER ? SPM_DIR_HELD_KEEPER : SPM_DIR_HELD_COPY;
    return 0;
}

uint64_t spm_directory_cost(const spm_directory_t *self, spm_sdb_t id, uint64_t version,
                            uint32_t node)
{
    const dver_t *v = find(self, id, version);
    if (!v)
        return 0; /* unknown size: nothing to prefer */
    for (size_t i = 0; i < v->n; i++)
        if (v->h[i].node == node)
            return 0;
    return v->bytes;
}

/*  Calls FN for V's holders, then unlinks V from D and frees it. */
static void forget_version(spm_directory_t *self, spm_sdb_t id, dver_t **pv, spm_dir_holder_fn fn,
                           void *arg)
{
    dver_t *v = *pv;
    while (v->n > 0) {
        uint32_t node = v->h[v->n - 1].node;
        remove_holder(self, v, v->n - 1);
        if (fn)
            fn(arg, node, id, v->version);
    }
    *pv = v->next;
    dver_free(v); /* a queued entry finds no version and is skipped */
}

void spm_directory_forget(spm_directory_t *self, spm_sdb_t id, uint64_t version,
                          spm_dir_holder_fn fn, void *arg)
{
    dsdb_t *d = spm_hmap_get(self->sdbs, id);
    if (!d)
        return;
    for (dver_t **pv = &d->versions; *pv;) {
        if (version == 0 || (*pv)->version == version) {
            forget_version(self, id, pv, fn, arg);
            if (version != 0)
                break;
        } else {
            pv = &(*pv)->next;
        }
    }
    if (!d->versions) {
        spm_hmap_remove(self->sdbs, id);
        free(d);
    }
}

int spm_directory_short_take(spm_directory_t *self, spm_sdb_t *id, uint64_t *version)
{
    while (self->shorthead < self->nshort) {
        vkey_t k = self->shortq[self->shorthead++];
        dver_t *v = find(self, k.id, k.version);
        if (!v)
            continue; /* forgotten since */
        v->queued = 0;
        if (!is_short(self, v))
            continue; /* lost, or has its copies again */
        *id = k.id;
        *version = k.version;
        return 1;
    }
    self->shorthead = self->nshort = 0;
    return 0;
}

void spm_directory_short_again(spm_directory_t *self, spm_sdb_t id, uint64_t version)
{
    dver_t *v = find(self, id, version);
    if (v)
        queue_short(self, id, v);
}

void spm_directory_stats(const spm_directory_t *self, spm_dir_stats_t *out)
{
    *out = (spm_dir_stats_t){.lost = self->lost};
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->sdbs, &pos, &key, &value))
        for (const dver_t *v = ((dsdb_t *)value)->versions; v; v = v->next) {
            out->blocks++;
            out->bytes += v->bytes;
            out->short_blocks += is_short(self, v);
        }
}

uint64_t spm_directory_node_bytes(const spm_directory_t *self, uint32_t node, uint64_t *blocks)
{
    const node_t *n = node_get(self, node);
    if (blocks)
        *blocks = n ? n->kept_blk : 0;
    return n ? n->kept_bytes : 0;
}
