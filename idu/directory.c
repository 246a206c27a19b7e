/*  =========================================================================
    directory - which node caches hold which SDB versions, and what moving
    them costs

    The center learns holders from every COMMIT (the committing IEU's node
    holds its outputs) and from PUBLISH and DROP (an IEU's node cached or
    evicted a block). The IEU's operand misses are answered from here with
    the holders, so blocks move peer to peer; policies and the IDU's default
    choice ask what an SI would cost to run on a node. The table is a hint:
    a holder that evicted a block since is found out at fetch time, and the
    IEU falls back to the store.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "vm/grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct dver {
    uint64_t version;
    uint64_t bytes;
    uint32_t *nodes; /* holders */
    size_t nnodes, cap;
    struct dver *next;
} dver_t;

typedef struct {
    dver_t *versions; /* newest first, usually one or two */
} dsdb_t;

int spm_dir_init(spm_idu_t *self)
{
    self->dir = spm_hmap_new();
    return self->dir ? 0 : SPM_ENOMEM;
}

static void dver_free(dver_t *v)
{
    free(v->nodes);
    free(v);
}

void spm_dir_free(spm_idu_t *self)
{
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (self->dir && spm_hmap_next(self->dir, &pos, &key, &value)) {
        dsdb_t *d = value;
        for (dver_t *v = d->versions, *n; v; v = n) {
            n = v->next;
            dver_free(v);
        }
        free(d);
    }
    spm_hmap_destroy(&self->dir);
}

static dver_t *find(spm_idu_t *self, spm_sdb_t id, uint64_t version, int create)
{
    dsdb_t *d = spm_hmap_get(self->dir, id);
    if (!d) {
        if (!create || !(d = calloc(1, sizeof *d)))
            return NULL;
        if (spm_hmap_put(self->dir, id, d) != 0) {
            free(d);
            return NULL;
        }
    }
    for (dver_t *v = d->versions; v; v = v->next)
        if (v->version == version)
            return v;
    if (!create)
        return NULL;
    dver_t *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->version = version;
    v->next = d->versions;
    d->versions = v;
    return v;
}

void spm_idu_dir_add(spm_idu_t *self, spm_sdb_t id, uint64_t version, uint64_t bytes, uint32_t node)
{
    dver_t *v = find(self, id, version, 1);
    if (!v)
        return;
    if (bytes)
        v->bytes = bytes;
    for (size_t i = 0; i < v->nnodes; i++)
        if (v->nodes[i] == node)
            return;
    if (spm_grow(&v->nodes, v->nnodes, &v->cap, sizeof *v->nodes, 4) != 0)
        return;
    v->nodes[v->nnodes++] = node;
}

void spm_idu_dir_drop(spm_idu_t *self, spm_sdb_t id, uint64_t version, uint32_t node)
{
    dver_t *v = find(self, id, version, 0);
    for (size_t i = 0; v && i < v->nnodes; i++)
        if (v->nodes[i] == node) {
            v->nodes[i] = v->nodes[--v->nnodes];
            return;
        }
}

void spm_idu_dir_node_gone(spm_idu_t *self, uint32_t node)
{
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->dir, &pos, &key, &value))
        for (dver_t *v = ((dsdb_t *)value)->versions; v; v = v->next)
            for (size_t i = 0; i < v->nnodes; i++)
                if (v->nodes[i] == node) {
                    v->nodes[i] = v->nodes[--v->nnodes];
                    break;
                }
}

size_t spm_idu_dir_holders(spm_idu_t *self, spm_sdb_t id, uint64_t version, uint32_t *nodes,
                           size_t max)
{
    dver_t *v = find(self, id, version, 0);
    if (!v || !v->nnodes)
        return 0;
    size_t start = self->dir_turn++ % v->nnodes;
    for (size_t i = 0; i < max && i < v->nnodes; i++)
        nodes[i] = v->nodes[(start + i) % v->nnodes];
    return v->nnodes;
}

void spm_dir_forget(spm_idu_t *self, spm_sdb_t id, uint64_t version)
{
    dsdb_t *d = spm_hmap_get(self->dir, id);
    if (!d)
        return;
    for (dver_t **pv = &d->versions; *pv; pv = &(*pv)->next)
        if ((*pv)->version == version) {
            dver_t *v = *pv;
            *pv = v->next;
            dver_free(v);
            break;
        }
    if (!d->versions) {
        spm_hmap_remove(self->dir, id);
        free(d);
    }
}

void spm_dir_forget_all(spm_idu_t *self, spm_sdb_t id)
{
    dsdb_t *d = spm_hmap_get(self->dir, id);
    if (!d)
        return;
    for (dver_t *v = d->versions, *n; v; v = n) {
        n = v->next;
        dver_free(v);
    }
    spm_hmap_remove(self->dir, id);
    free(d);
}

uint64_t spm_dir_cost(spm_idu_t *self, spm_sdb_t id, uint64_t version, uint32_t node)
{
    dver_t *v = find(self, id, version, 0);
    if (!v)
        return 0; /* unknown size: nothing to prefer */
    for (size_t i = 0; i < v->nnodes; i++)
        if (v->nodes[i] == node)
            return 0;
    return v->bytes;
}

uint64_t spm_dir_si_cost(spm_idu_t *self, const si_t *si, uint32_t node)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < si->pub.nops; i++) {
        const spm_idu_op_t *o = &si->ops[i];
        if (o->mode == SPM_R)
            bytes += spm_dir_cost(self, o->sdb, o->version, node);
        else if (o->mode == SPM_RW && o->in_version)
            bytes += spm_dir_cost(self, o->sdb, o->in_version, node);
    }
    return bytes;
}

/* ------------------------------------------------- the SF locality API */

uint64_t spm_sf_bytes_to(spm_sf_t *sf, const spm_operand_t *ops, size_t n, const spm_ieu_t *who)
{
    spm_idu_t *self = sf->job->idu;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        sdb_t *s = spm_sb_sdb(self, ops[i].sdb);
        if (s && ops[i].mode != SPM_W && ops[i].mode != SPM_ACC && s->last)
            bytes += spm_dir_cost(self, s->id, s->last, who->node);
    }
    return bytes;
}

size_t spm_sdb_holders(spm_sf_t *sf, spm_sdb_t sdb, uint32_t *nodes, size_t max)
{
    spm_idu_t *self = sf->job->idu;
    sdb_t *s = spm_sb_sdb(self, sdb);
    return s && s->committed ? spm_idu_dir_holders(self, sdb, s->committed, nodes, max) : 0;
}
