/*  =========================================================================
    sdbs - the SDB table seen from outside the IDU: a client's puts, SDBs
    known again after a restart, discards, the versions asked about

    The scoreboard (scoreboard.c) makes and versions the SDBs that SIs
    write; this file makes and forgets those a client puts, restores
    entries from a restarted center's records, forgets what a closing
    session discards, and answers the center about versions.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "base/grow.h"

#include <stdlib.h>

/* ------------------------------------------------------------ SDB table */

spm_sdb_t spm_idu_sdb_put(spm_idu_t *self, uint32_t type)
{
    return spm_idu_sdb_put_owned(self, type, 0);
}

spm_sdb_t spm_idu_sdb_put_owned(spm_idu_t *self, uint32_t type, uint64_t owner)
{
    sdb_t *s = spm_sb_sdb_new(self, NULL, type, 0);
    if (!s)
        return 0;
    s->last = s->committed = 1;
    s->owner = owner;
    spm_ev_put(self, s->id, type, owner, 0);
    return s->id;
}

/*  Adds (ID, VERSION) to OUT (room for MAX) at *N, once. */
static void need(spm_idu_op_t *out, size_t max, size_t *n, spm_sdb_t id, uint64_t version)
{
    for (size_t i = 0; i < *n && i < max; i++)
        if (out[i].sdb == id && out[i].version == version)
            return;
    if (*n < max)
        out[*n] = (spm_idu_op_t){.sdb = id, .version = version, .mode = SPM_R};
    (*n)++;
}

size_t spm_idu_job_needs(spm_idu_t *self, uint64_t id, spm_idu_op_t *out, size_t max)
{
    size_t n = 0;
    job_t *job = spm_hmap_get(self->jobs, id);
    for (spm_sf_t *sf = job ? job->sfs : NULL; sf; sf = sf->job_next)
        for (si_t *si = sf->ready_head; si; si = si->next)
            for (size_t k = 0; k < si->pub.nops; k++) {
                const spm_idu_op_t *op = &si->ops[k];
                if (op->mode == SPM_R && op->version)
                    need(out, max, &n, op->sdb, op->version);
                else if (op->mode == SPM_RW && op->in_version)
                    need(out, max, &n, op->sdb, op->in_version);
            }
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (job && spm_hmap_next(self->sdbs, &pos, &key, &value)) {
        const sdb_t *s = value;
        if (s->job == id && s->committed)
            need(out, max, &n, s->id, s->committed);
    }
    return n;
}

uint64_t spm_idu_sdb_owner(spm_idu_t *self, spm_sdb_t id)
{
    sdb_t *s = spm_sb_sdb(self, id);
    return s && s->job == 0 ? s->owner : 0;
}

int spm_idu_sdb_restore(spm_idu_t *self, uint64_t job, spm_sdb_t id, uint32_t type,
                        uint64_t version, uint64_t gc_floor)
{
    if (!id || (id >> 32) != job || spm_sb_sdb(self, id))
        return 0; /* not an id of JOB's, or restored already */
    sdb_t *s = calloc(1, sizeof *s);
    if (!s)
        return SPM_ENOMEM;
    *s = (sdb_t){.id = id,
                 .job = job,
                 .type = type,
                 .last = version,
                 .committed = version,
                 .gc_floor = gc_floor};
    if (spm_hmap_put(self->sdbs, id, s) != 0) {
        free(s);
        return SPM_ENOMEM;
    }
    if (!job && id > self->next_sdb)
        self->next_sdb = id;
    return 0;
}

void spm_idu_put_drop(spm_idu_t *self, spm_sdb_t id)
{
    sdb_t *s = spm_sb_sdb(self, id);
    if (s && s->job == 0 && !s->hidden) {
        spm_hmap_remove(self->sdbs, id);
        spm_sb_sdb_free(s);
    }
}

/*  Whether client-put S may go: nothing reads or writes it now or later. */
static int put_unused(const sdb_t *s)
{
    return s && s->job == 0 && !s->hidden && !s->readers && !s->pending;
}

/*  Forgets S and queues every version of it as garbage (version 0). */
static void discard_one(spm_idu_t *self, sdb_t *s)
{
    spm_hmap_remove(self->sdbs, s->id);
    if (spm_grow(&self->garbage, self->ngarbage, &self->capgarbage, sizeof *self->garbage, 64) == 0)
        self->garbage[self->ngarbage++] = (spm_idu_op_t){.sdb = s->id, .version = 0};
    spm_sb_sdb_free(s);
}

int spm_idu_discard(spm_idu_t *self, const uint64_t *jobs, size_t njobs, const spm_sdb_t *puts,
                    size_t nputs, size_t *discarded)
{
    *discarded = 0;
    for (size_t i = 0; i < njobs; i++) {
        job_t *job = job_get(self, jobs[i]);
        if (job && job->state == 0)
            return spm_error(SPM_EINVAL, "job %llu is still running", (unsigned long long)jobs[i]);
    }
    spm_hmap_t *ended = spm_hmap_new(); /* the jobs, as a set */
    size_t n = 0, cap = 0, pos = 0;
    sdb_t **gone = NULL;
    int rc = ended ? 0 : SPM_ENOMEM;
    for (size_t i = 0; rc == 0 && i < njobs; i++)
        rc = jobs[i] ? spm_hmap_put(ended, jobs[i], ended) : 0;
    uint64_t key;
    void *value;
    while (rc == 0 && njobs && spm_hmap_next(self->sdbs, &pos, &key, &value)) {
        sdb_t *s = value;
        if (s->job && spm_hmap_get(ended, s->job) &&
            (rc = spm_grow(&gone, n, &cap, sizeof *gone, 64)) == 0)
            gone[n++] = s;
    }
    spm_hmap_destroy(&ended);
    if (rc != 0) {
        free(gone);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        discard_one(self, gone[i]);
    free(gone);
    for (size_t i = 0; i < nputs; i++) {
        sdb_t *s = spm_sb_sdb(self, puts[i]);
        if (put_unused(s)) {
            spm_ev_put(self, s->id, 0, 0, 1);
            discard_one(self, s);
            n++;
        }
    }
    *discarded = n;
    return 0;
}

uint64_t spm_idu_sdb_version(spm_idu_t *self, spm_sdb_t id, uint32_t *type)
{
    sdb_t *s = spm_sb_sdb(self, id);
    if (!s || s->hidden)
        return 0;
    if (type)
        *type = s->type;
    return s->committed;
}

int spm_idu_sdb_live(spm_idu_t *self, spm_sdb_t id, uint64_t version)
{
    sdb_t *s = spm_sb_sdb(self, id);
    return s && version && version <= s->committed && version >= s->gc_floor;
}

void spm_idu_sdb_floor(spm_idu_t *self, spm_sdb_t floor)
{
    if (floor > self->next_sdb)
        self->next_sdb = floor;
}
