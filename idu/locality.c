/*  =========================================================================
    locality - what moving an SI's operands to a node would cost

    The IDU asks the center's directory (datacache/directory.h) which nodes
    hold the versions an SI reads: of a few ready SIs it issues the one
    that moves the fewest bytes to the requester's node, and SF policies
    ask the same through spm_sf_bytes_to and spm_sdb_holders. Without a
    directory (unit tests of the IDU alone) every cost is 0.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "runtime/sfproto.h"

void spm_idu_set_directory(spm_idu_t *self, spm_directory_t *dir)
{
    self->dir = dir;
}

static uint64_t cost(spm_idu_t *self, spm_sdb_t id, uint64_t version, uint32_t node)
{
    return self->dir ? spm_directory_cost(self->dir, id, version, node) : 0;
}

uint64_t spm_dir_si_cost(spm_idu_t *self, const si_t *si, uint32_t node)
{
    uint64_t bytes = 0;
    for (size_t i = 0; self->dir && i < si->pub.nops; i++) {
        const spm_idu_op_t *o = &si->ops[i];
        if (o->mode == SPM_R)
            bytes += cost(self, o->sdb, o->version, node);
        else if (o->mode == SPM_RW && o->in_version)
            bytes += cost(self, o->sdb, o->in_version, node);
    }
    return bytes;
}

/* ------------------------------------------------- the SF locality API */

/* The answers below come from the world, not from the job's events: they
   are recorded, and a job run again from its journal gets the recorded
   ones (spm_ev_input). */

uint64_t spm_sf_bytes_to(spm_sf_t *sf, const spm_operand_t *ops, size_t n, const spm_ieu_t *who)
{
    if (spm_sf_ops)
        return spm_sf_ops->bytes_to(sf, ops, n, who);
    spm_idu_t *self = sf->job->idu;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        sdb_t *s = spm_sb_sdb(self, ops[i].sdb);
        if (s && ops[i].mode != SPM_W && ops[i].mode != SPM_ACC && s->last)
            bytes += cost(self, s->id, s->last, who->node);
    }
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(bytes >> (8 * i));
    if (spm_ev_input(self, sf->job, b, sizeof b, sizeof b) != sizeof b)
        return bytes;
    bytes = 0;
    for (int i = 7; i >= 0; i--)
        bytes = bytes << 8 | b[i];
    return bytes;
}

size_t spm_sdb_holders(spm_sf_t *sf, spm_sdb_t sdb, uint32_t *nodes, size_t max)
{
    if (spm_sf_ops)
        return spm_sf_ops->holders(sf, sdb, nodes, max);
    spm_idu_t *self = sf->job->idu;
    sdb_t *s = spm_sb_sdb(self, sdb);
    /* the answer: how many hold it, then the first MAX of them (at most 64 kept) */
    uint32_t v[1 + 64] = {0};
    size_t k = max < 64 ? max : 64;
    if (self->dir && s && s->committed)
        v[0] = (uint32_t)spm_directory_holders(self->dir, sdb, s->committed, v + 1, k);
    size_t got = v[0] < k ? v[0] : k;
    size_t len = spm_ev_input(self, sf->job, v, (1 + got) * sizeof *v, sizeof v);
    got = len / sizeof *v ? len / sizeof *v - 1 : 0;
    for (size_t i = 0; i < got && i < max; i++)
        nodes[i] = v[1 + i];
    return v[0];
}
