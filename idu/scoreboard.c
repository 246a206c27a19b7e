/*  =========================================================================
    scoreboard - dependences inferred from operand modes on versioned SDBs

    Every write makes a new version (renaming, as in an out-of-order CPU), so
    an SI waits only for the versions it reads: read-after-write. Writers
    never wait for earlier readers (WAR) or writers (WAW): those read or
    overwrite their own versions.

    ACC operands write a fresh hidden partial SDB each, so any number of
    ACC SIs on one SDB run at once. The partials form the SDB's open group;
    the first later access of any other mode (or the end of the job) closes
    the group with one merge SI (opcode "spm.merge", run on an IEU like any
    other SI) that folds the base version and all partials with the type's
    merge into the next version. The reader then waits for that version.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "runtime/registry.h"
#include "base/grow.h"

#include <stdlib.h>
#include <string.h>

sdb_t *spm_sb_sdb(spm_idu_t *self, spm_sdb_t id)
{
    return id ? spm_hmap_get(self->sdbs, id) : NULL;
}

sdb_t *spm_sb_sdb_new(spm_idu_t *self, job_t *job, uint32_t type, int hidden)
{
    if (job ? job->next_sdb == UINT32_MAX : self->next_sdb >= UINT32_MAX) {
        spm_error(SPM_ERANGE, "out of SDB ids");
        return NULL;
    }
    sdb_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->id = job ? job->id << 32 | ++job->next_sdb : ++self->next_sdb;
    self->made++;
    s->job = job ? job->id : 0;
    s->type = type;
    s->hidden = hidden;
    if (spm_hmap_put(self->sdbs, s->id, s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

sdb_t *spm_sb_sdb_new_id(spm_idu_t *self, job_t *job, uint32_t type, spm_sdb_t id)
{
    if ((id >> 32) != job->id || spm_hmap_get(self->sdbs, id))
        return NULL;
    sdb_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->id = id;
    self->made++;
    s->job = job->id;
    s->type = type;
    if (spm_hmap_put(self->sdbs, s->id, s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void spm_sb_sdb_free(sdb_t *s)
{
    for (pending_t *p = s->pending, *n; p; p = n) {
        n = p->next;
        free(p->waiters.v);
        free(p);
    }
    for (readers_t *r = s->readers, *n; r; r = n) {
        n = r->next;
        free(r);
    }
    free(s->partials);
    free(s);
}

int spm_sb_wait_push(waitlist_t *w, si_t *si)
{
    if (spm_grow(&w->v, w->n, &w->cap, sizeof *w->v, 4) != 0)
        return SPM_ENOMEM;
    w->v[w->n++] = si;
    return 0;
}

static pending_t *pending_find(sdb_t *s, uint64_t version)
{
    for (pending_t *p = s->pending; p; p = p->next)
        if (p->version == version)
            return p;
    return NULL;
}

static int pending_add(sdb_t *s, uint64_t version)
{
    pending_t *p = calloc(1, sizeof *p);
    if (!p)
        return SPM_ENOMEM;
    p->version = version;
    p->next = s->pending;
    s->pending = p;
    return 0;
}

static readers_t *readers_of(sdb_t *s, uint64_t version)
{
    for (readers_t *r = s->readers; r; r = r->next)
        if (r->version == version)
            return r;
    return NULL;
}

/*  Counts one more issued SI reading (S, VERSION): it is not garbage. */
static int readers_inc(sdb_t *s, uint64_t version)
{
    readers_t *r = readers_of(s, version);
    if (!r) {
        if (!(r = calloc(1, sizeof *r)))
            return SPM_ENOMEM;
        r->version = version;
        r->next = s->readers;
        s->readers = r;
    }
    r->count++;
    return 0;
}

static void readers_dec(sdb_t *s, uint64_t version)
{
    for (readers_t **pr = &s->readers; *pr; pr = &(*pr)->next)
        if ((*pr)->version == version) {
            if (--(*pr)->count == 0) {
                readers_t *r = *pr;
                *pr = r->next;
                free(r);
            }
            return;
        }
}

static void garbage_push(spm_idu_t *self, spm_sdb_t id, uint64_t version)
{
    if (spm_grow(&self->garbage, self->ngarbage, &self->capgarbage, sizeof *self->garbage, 64))
        return; /* left in the store: costs space, not correctness */
    self->garbage[self->ngarbage++] = (spm_idu_op_t){.sdb = id, .version = version};
}

/*  Versions of S below its newest committed one that no issued SI reads
    and no SI is writing can never be read again: garbage. Versions are
    collected in order, so one still read holds back those above it. */
static void collect(spm_idu_t *self, sdb_t *s)
{
    if (s->gc_floor == 0)
        s->gc_floor = 1;
    while (s->gc_floor < s->committed && !readers_of(s, s->gc_floor) &&
           !pending_find(s, s->gc_floor))
        garbage_push(self, s->id, s->gc_floor++);
}

int spm_idu_gc_take(spm_idu_t *self, spm_sdb_t *id, uint64_t *version)
{
    if (self->garbage_head == self->ngarbage) {
        self->garbage_head = self->ngarbage = 0;
        return 0;
    }
    spm_idu_op_t *g = &self->garbage[self->garbage_head++];
    *id = g->sdb;
    *version = g->version;
    return 1;
}

/*  Makes SI wait for (S, VERSION) if that version is still being produced,
    and counts it as a reader of that version. */
static int depend(si_t *si, sdb_t *s, uint64_t version)
{
    if (readers_inc(s, version) != 0)
        return SPM_ENOMEM;
    pending_t *p = pending_find(s, version);
    if (!p)
        return 0;
    if (spm_sb_wait_push(&p->waiters, si) != 0)
        return SPM_ENOMEM;
    si->deps++;
    return 0;
}

/*  Gives operand I of SI the next version of S to write. */
static int write_next(si_t *si, size_t i, sdb_t *s)
{
    si->ops[i].version = ++s->last;
    return pending_add(s, s->last);
}

int spm_sb_flush(spm_idu_t *self, struct spm_sf *sf, sdb_t *s)
{
    if (s->npartials == 0)
        return 0;
    size_t nin = s->npartials + (s->last ? 1 : 0);
    uint32_t type = s->type;
    si_t *m = spm_idu_si_alloc(sf, spm_name_id("spm.merge"), nin + 1, &type, sizeof type);
    if (!m)
        return spm_error(SPM_ENOMEM, "out of memory");
    m->internal = 1;
    size_t k = 0;
    if (s->last) {
        m->ops[k] = (spm_idu_op_t){.sdb = s->id, .version = s->last, .mode = SPM_R, .type = type};
        m->sdbs[k] = s;
        depend(m, s, s->last);
        k++;
    }
    for (size_t j = 0; j < s->npartials; j++, k++) {
        sdb_t *p = spm_sb_sdb(self, s->partials[j]);
        m->ops[k] = (spm_idu_op_t){.sdb = p->id, .version = 1, .mode = SPM_R, .type = type};
        m->sdbs[k] = p;
        depend(m, p, 1);
    }
    m->ops[k] = (spm_idu_op_t){.sdb = s->id, .mode = SPM_W, .type = type};
    m->sdbs[k] = s;
    if (write_next(m, k, s) != 0) {
        spm_idu_si_free(m);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    s->npartials = 0;
    sf->job->merges++;
    spm_idu_si_enter(self, m);
    return 0;
}

/*  How a message names S: its type and where it came from (its id is
    the VM's, not the program's); in a static buffer (the IDU runs on one
    thread). */
static const char *spm_sb_sdb_name(const sdb_t *s)
{
    static char buf[160];
    const spm_sdb_type_t *t = spm_sdb_type_by_id(s->type);
    snprintf(buf, sizeof buf, "%s SDB of type %s", s->job ? "an" : "a staged", t ? t->name : "?");
    return buf;
}

int spm_sb_bind(spm_idu_t *self, si_t *si, const spm_operand_t *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sdb_t *s = spm_sb_sdb(self, ops[i].sdb);
        if (!s || s->hidden)
            return spm_error(SPM_ENOTFOUND,
                             "operand %zu: no SDB %llu (an id spm_sdb_new or staging gave?)", i,
                             (unsigned long long)ops[i].sdb);
        spm_mode_t mode = ops[i].mode;
        if (mode < SPM_R || mode > SPM_ACC)
            return spm_error(SPM_EINVAL, "operand %zu: invalid mode %d", i, (int)mode);
        if (ops[i].flags & ~SPM_NOCACHE)
            return spm_error(SPM_EINVAL, "operand %zu: unknown flags %#x", i, ops[i].flags);
        si->ops[i] =
            (spm_idu_op_t){.sdb = s->id, .mode = mode, .type = s->type, .flags = ops[i].flags};
        si->sdbs[i] = s;
        if (mode != SPM_ACC && spm_sb_flush(self, si->sf, s) != 0)
            return SPM_ENOMEM;
        int rc = 0;
        switch (mode) {
        case SPM_R:
            if (s->last == 0)
                return spm_error(SPM_ENOTFOUND,
                                 "operand %zu (mode R) reads %s that no SI issued before it writes",
                                 i, spm_sb_sdb_name(s));
            si->ops[i].version = s->last;
            rc = depend(si, s, s->last);
            break;
        case SPM_W:
            rc = write_next(si, i, s);
            break;
        case SPM_RW:
            si->ops[i].in_version = s->last;
            rc = s->last ? depend(si, s, s->last) : 0;
            if (rc == 0)
                rc = write_next(si, i, s);
            break;
        case SPM_ACC: {
            sdb_t *p = spm_sb_sdb_new(self, si->job, s->type, 1);
            if (!p)
                return spm_error(SPM_ENOMEM, "out of memory");
            if (spm_grow(&s->partials, s->npartials, &s->cappartials, sizeof *s->partials, 8))
                return spm_error(SPM_ENOMEM, "out of memory");
            s->partials[s->npartials++] = p->id;
            si->ops[i].sdb = p->id;
            si->sdbs[i] = p;
            rc = write_next(si, i, p);
            if (rc == 0)
                rc = spm_idu_job_note_acc(si->job, s->id);
            break;
        }
        }
        if (rc != 0)
            return spm_error(SPM_ENOMEM, "out of memory");
    }
    return 0;
}

/*  Frees a merged partial: nobody can read it any more. */
static void drop_partial(spm_idu_t *self, sdb_t *p)
{
    garbage_push(self, p->id, 1);
    spm_hmap_remove(self->sdbs, p->id);
    free(p->partials);
    free(p);
}

void spm_sb_drop(spm_idu_t *self, si_t *si)
{
    for (size_t i = 0; si->sdbs && i < si->pub.nops; i++) {
        spm_idu_op_t *o = &si->ops[i];
        if (!si->sdbs[i] || (o->mode != SPM_R && !(o->mode == SPM_RW && o->in_version)))
            continue;
        readers_dec(si->sdbs[i], o->mode == SPM_R ? o->version : o->in_version);
        if (!si->sdbs[i]->hidden)
            collect(self, si->sdbs[i]);
    }
}

void spm_sb_commit(spm_idu_t *self, si_t *si)
{
    for (size_t i = 0; i < si->pub.nops; i++) {
        spm_idu_op_t *o = &si->ops[i];
        if (o->mode == SPM_R)
            readers_dec(si->sdbs[i], o->version);
        else if (o->mode == SPM_RW && o->in_version)
            readers_dec(si->sdbs[i], o->in_version);
    }
    for (size_t i = 0; i < si->pub.nops; i++) {
        if (si->ops[i].mode == SPM_R)
            continue;
        sdb_t *s = si->sdbs[i];
        uint64_t v = si->ops[i].version;
        if (v > s->committed)
            s->committed = v;
        pending_t **pp = &s->pending;
        while (*pp && (*pp)->version != v)
            pp = &(*pp)->next;
        pending_t *p = *pp;
        if (!p)
            continue;
        *pp = p->next;
        for (size_t j = 0; j < p->waiters.n; j++) {
            si_t *w = p->waiters.v[j];
            if (--w->deps == 0 && w->state == SI_WAITING)
                spm_idu_make_ready(self, w, 0);
        }
        free(p->waiters.v);
        free(p);
    }
    for (size_t i = 0; i < si->pub.nops; i++) {
        sdb_t *s = si->sdbs[i];
        if (s->hidden && si->ops[i].mode == SPM_R && !s->readers && !s->pending)
            drop_partial(self, s); /* this was the merge that folded it */
        else if (!s->hidden)
            collect(self, s);
    }
}
