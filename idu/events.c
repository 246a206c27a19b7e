/*  =========================================================================
    events - what a job's super-functions see, recorded, and run again

    A super-function is a deterministic function of what reaches it: its
    job's arguments, the feed calls made on it (and who asked), the
    commits of its SIs in the order they were applied (with their replies
    and who ran them), failures from outside (a cancel, IEU deaths), and
    the values of the few queries whose answers come from the world
    (spm_sf_ieus, spm_sf_nodes, spm_sf_bytes_to, spm_sdb_holders). The IDU
    hands each of these, as it happens and before any SF code runs on it,
    to a recorder as a small record of this module's encoding; a restarted
    center hands a job's records back (spm_idu_replay), and the job is run
    again into fresh super-functions: the same calls in the same order
    make the same SIs and SDBs with the same ids, and each SI whose commit
    was recorded takes that commit instead of running. What was not
    recorded (the SIs in flight at the crash) is issued again.

    A record: one type byte, then its fields as unsigned LEB128 varints or
    varint-prefixed bytes. Types from 100 up belong to the caller (the
    center adds where outputs live) and are handed back to it in order.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "runtime/sfproto.h"
#include "base/grow.h"
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    EV_SUBMIT = 1, /* job, priority, wall clock, program, args */
    EV_FEED = 2,   /* sf, who */
    EV_COMMIT = 3, /* si, who, figures, reply */
    EV_INPUT = 4,  /* a query's answer */
    EV_FAIL = 5,   /* code, message */
    EV_PUT = 6,    /* job 0: a client's put (id, type, its owner when there is one) */
    EV_GONE = 7,   /* job 0: a put discarded (id) */
    EV_KEPT = 8, /* an ended job whose report was delivered: its SDBs (id, type, version, floor) */
    EV_NEXT = 9, /* job 0: the puts' counter (ids below it are never given again) */
    EV_RESUMED = 10,    /* the job was resumed after a restart of the center */
    EV_ISSUED = 11,     /* SIs issued for the first time in a turn (count, then id deltas) */
    EV_QUARANTINE = 12, /* the job crashed the center: failed, its code never run again */
    EV_ACTIONS = 13,    /* what a plugin job's host did: its actions, as applied (remote.c) */
};

struct replay {
    const spm_idu_record_t *recs; /* the job's records */
    size_t n, pos;                /* and the next to read */
    si_t **ready;    /* SIs ready, by the job's count in their ids, until the records run out */
    size_t nready;   /* entries of ready (the largest count seen + 1) */
    uint8_t *issued; /* a bit per SI by that count: issued before the crash */
    size_t nissued;  /* bytes of issued */
    spm_idu_record_fn foreign; /* records of the caller's own types */
    void *arg;
    int bad;        /* the records do not fit the program: it cannot go on */
    char why[256];  /* ... and why */
    uint64_t taken; /* commits taken from the journal */
};

/* ------------------------------------------------------------- encoding */

/* Records are written and read with the varints and length-prefixed
   bytes of runtime/sfproto.h, which the center's talk with plugin hosts
   uses too. */
typedef sfp_buf_t wbuf_t;
typedef sfp_rd_t rbuf_t;

/* ------------------------------------------------------------ recording */

void spm_idu_set_recorder(spm_idu_t *self, spm_idu_record_fn fn, void *arg)
{
    self->record = fn;
    self->record_arg = arg;
}

/*  An empty record in the IDU's buffer, which records reuse. */
static wbuf_t wbuf_of(spm_idu_t *self)
{
    return (wbuf_t){.p = self->ev_buf, .cap = self->ev_cap};
}

/*  Gives the buffer of record B back to the IDU, for the next one. */
static void wbuf_done(spm_idu_t *self, wbuf_t *b)
{
    if (b->cap > (1u << 20)) { /* a big record (an ended job's blocks): not kept */
        free(b->p);
        b->p = NULL;
        b->cap = 0;
    }
    self->ev_buf = b->p;
    self->ev_cap = b->cap;
}

static void emit(spm_idu_t *self, uint64_t job, wbuf_t *b)
{
    if (!b->full && self->record)
        self->record(self->record_arg, job, b->p, b->n);
    else if (b->full)
        spm_log_error("job %llu: out of memory recording an event; a restart will not resume it",
                      (unsigned long long)job);
    wbuf_done(self, b);
}

/*  Whether JOB's events are to be recorded (a recorder is set and the job
    is not being run again from them). */
static int recording(const spm_idu_t *self, const job_t *job)
{
    return self->record && !job->replay;
}

void spm_ev_submit(spm_idu_t *self, const job_t *job, const void *args, size_t len)
{
    if (!recording(self, job))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    wbuf_t b = wbuf_of(self);
    uint8_t t = EV_SUBMIT;
    sfp_put_raw(&b, &t, 1);
    sfp_put_uv(&b, job->id);
    sfp_put_sv(&b, job->priority);
    sfp_put_uv(&b, (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
    sfp_put_uv(&b, job->seed);
    sfp_put_bytes(&b, job->program, strlen(job->program));
    sfp_put_bytes(&b, args, len);
    sfp_put_uv(&b, job->plugin);
    sfp_put_bytes(&b, job->scope, strlen(job->scope));
    emit(self, job->id, &b);
}

static void put_who(wbuf_t *b, const spm_ieu_t *who)
{
    sfp_put_uv(b, who->ieu);
    sfp_put_uv(b, who->node);
    sfp_put_uv(b, who->slots);
}

void spm_ev_feed(spm_idu_t *self, const spm_sf_t *sf, const spm_ieu_t *who)
{
    if (!recording(self, sf->job))
        return;
    wbuf_t b = wbuf_of(self);
    uint8_t t = EV_FEED;
    sfp_put_raw(&b, &t, 1);
    sfp_put_uv(&b, sf->id);
    put_who(&b, who);
    emit(self, sf->job->id, &b);
}

void spm_ev_commit(spm_idu_t *self, const si_t *si, const spm_idu_commit_t *c, const spm_ieu_t *who)
{
    if (!recording(self, si->job))
        return;
    wbuf_t b = wbuf_of(self);
    uint8_t t = EV_COMMIT;
    sfp_put_raw(&b, &t, 1);
    sfp_put_uv(&b, si->pub.id);
    put_who(&b, who);
    uint64_t figures[] = {c->exec_us,  c->wait_us,     c->localize_us,
                          c->bytes_l2, c->bytes_store, c->bytes_pushed,
                          c->l1_hits,  c->l2_hits,     c->store_reads};
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++)
        sfp_put_uv(&b, figures[i]);
    sfp_put_bytes(&b, c->reply, c->reply_len);
    emit(self, si->job->id, &b);
}

void spm_ev_fail(spm_idu_t *self, const job_t *job, int code, const char *msg)
{
    if (!recording(self, job))
        return;
    wbuf_t b = wbuf_of(self);
    uint8_t t = EV_FAIL;
    sfp_put_raw(&b, &t, 1);
    sfp_put_sv(&b, code);
    sfp_put_bytes(&b, msg, strlen(msg));
    emit(self, job->id, &b);
}

void spm_ev_put(spm_idu_t *self, spm_sdb_t id, uint32_t type, uint64_t owner, int gone)
{
    if (!self->record)
        return;
    wbuf_t b = wbuf_of(self);
    uint8_t t = gone ? EV_GONE : EV_PUT;
    sfp_put_raw(&b, &t, 1);
    sfp_put_uv(&b, id);
    if (!gone)
        sfp_put_uv(&b, type);
    if (!gone && owner) /* an older journal's puts end after the type: no owner */
        sfp_put_uv(&b, owner);
    emit(self, 0, &b);
}

size_t spm_idu_job_kept(spm_idu_t *self, uint64_t job)
{
    wbuf_t b = wbuf_of(self);
    uint8_t t = EV_KEPT;
    sfp_put_raw(&b, &t, 1);
    size_t n = 0, pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->sdbs, &pos, &key, &value)) {
        const sdb_t *s = value;
        if (s->job != job || s->hidden || !s->committed)
            continue;
        sfp_put_uv(&b, s->id);
        sfp_put_uv(&b, s->type);
        sfp_put_uv(&b, s->committed);
        sfp_put_uv(&b, s->gc_floor);
        n++;
    }
    if (n && self->record)
        emit(self, job, &b);
    else
        wbuf_done(self, &b);
    return n;
}

size_t spm_idu_record_puts(spm_idu_t *self)
{
    wbuf_t b = wbuf_of(self);
    uint8_t t = EV_NEXT;
    sfp_put_raw(&b, &t, 1);
    sfp_put_uv(&b, self->next_sdb);
    emit(self, 0, &b);
    size_t n = 1, pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->sdbs, &pos, &key, &value)) {
        const sdb_t *s = value;
        if (s->job == 0 && !s->hidden) {
            spm_ev_put(self, s->id, s->type, s->owner, 0);
            n++;
        }
    }
    return n;
}

void spm_ev_issued(spm_idu_t *self, si_t *si)
{
    job_t *job = si->job;
    if (!recording(self, job) || si->pub.attempt != 0 || si->internal)
        return;
    if (!job->nev_issued &&
        spm_grow(&self->ev_jobs, self->nev_jobs, &self->capev_jobs, sizeof *self->ev_jobs, 16) == 0)
        self->ev_jobs[self->nev_jobs++] = job->id;
    if (spm_grow(&job->ev_issued, job->nev_issued, &job->capev_issued, sizeof *job->ev_issued,
                 64) == 0)
        job->ev_issued[job->nev_issued++] = (uint32_t)si->pub.id;
}

void spm_idu_record_turn(spm_idu_t *self)
{
    for (size_t i = 0; i < self->nev_jobs; i++) {
        job_t *job = spm_hmap_get(self->jobs, self->ev_jobs[i]);
        if (!job || !job->nev_issued)
            continue;
        wbuf_t b = wbuf_of(self);
        uint8_t t = EV_ISSUED;
        sfp_put_raw(&b, &t, 1);
        sfp_put_uv(&b, job->nev_issued);
        uint32_t prev = 0;
        for (size_t k = 0; k < job->nev_issued; k++) {
            sfp_put_sv(&b, (int64_t)job->ev_issued[k] - (int64_t)prev);
            prev = job->ev_issued[k];
        }
        job->nev_issued = 0;
        if (self->record)
            emit(self, job->id, &b);
        else
            wbuf_done(self, &b);
    }
    self->nev_jobs = 0;
}

/*  The answer to a query of JOB from outside its event stream: LIVE (LEN
    bytes at LIVE, written by the caller) is recorded, or, while the job
    is run again, replaced by the recorded one. Returns the length of the
    answer in LIVE (at most CAP). */
size_t spm_ev_input(spm_idu_t *self, job_t *job, void *live, size_t len, size_t cap)
{
    struct replay *rp = job->replay;
    if (!rp) {
        if (self->record) {
            wbuf_t b = wbuf_of(self);
            uint8_t t = EV_INPUT;
            sfp_put_raw(&b, &t, 1);
            sfp_put_bytes(&b, live, len);
            emit(self, job->id, &b);
        }
        return len;
    }
    if (rp->bad)
        return len;
    const spm_idu_record_t *r = rp->pos < rp->n ? &rp->recs[rp->pos] : NULL;
    rbuf_t rd = {r ? r->data : NULL, r ? r->len : 0, 1, 0};
    const void *v = NULL;
    size_t n =
        r && r->len && ((const uint8_t *)r->data)[0] == EV_INPUT ? sfp_get_bytes(&rd, &v) : 0;
    if (!r || !r->len || ((const uint8_t *)r->data)[0] != EV_INPUT || rd.bad || n > cap) {
        rp->bad = 1;
        snprintf(rp->why, sizeof rp->why,
                 "record %zu is not the answer the program asks for there (changed program?)",
                 rp->pos);
        return len;
    }
    rp->pos++;
    memcpy(live, v, n);
    return n;
}

void spm_ev_actions(spm_idu_t *self, const job_t *job, const void *data, size_t len)
{
    if (!recording(self, job))
        return;
    wbuf_t b = wbuf_of(self);
    uint8_t t = EV_ACTIONS;
    sfp_put_raw(&b, &t, 1);
    sfp_put_raw(&b, data, len);
    emit(self, job->id, &b);
}

int spm_ev_input_changed(spm_idu_t *self, job_t *job, void *live, size_t len, int changed)
{
    struct replay *rp = job->replay;
    if (!rp) {
        if (changed)
            spm_ev_input(self, job, live, len, len);
        return changed;
    }
    const spm_idu_record_t *r = rp->pos < rp->n ? &rp->recs[rp->pos] : NULL;
    if (rp->bad || !r || !r->len || ((const uint8_t *)r->data)[0] != EV_INPUT)
        return 0;
    spm_ev_input(self, job, live, len, len);
    return 1;
}

/* -------------------------------------------------------------- replay */

/*  Job 0's records: the clients' puts, and those discarded since. */
static int replay_puts(spm_idu_t *self, const spm_idu_record_t *recs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rbuf_t r = {recs[i].data, recs[i].len, 1, 0};
        uint8_t t = recs[i].len ? ((const uint8_t *)recs[i].data)[0] : 0;
        spm_sdb_t id = sfp_get_uv(&r);
        uint32_t type = t == EV_PUT ? (uint32_t)sfp_get_uv(&r) : 0;
        uint64_t owner = t == EV_PUT && r.pos < r.n ? sfp_get_uv(&r) : 0;
        if (r.bad || id >> 32 || (t != EV_PUT && t != EV_GONE && t != EV_NEXT))
            continue; /* a damaged record: the put it names stays or goes */
        if (t == EV_NEXT && id > self->next_sdb)
            self->next_sdb = id;
        else if (t == EV_PUT && spm_idu_sdb_restore(self, 0, id, type, 1, 0) != 0)
            return spm_error(SPM_ENOMEM, "out of memory");
        else if (t == EV_PUT && spm_sb_sdb(self, id))
            spm_sb_sdb(self, id)->owner = owner;
        else if (t == EV_GONE)
            spm_idu_put_drop(self, id);
    }
    return 0;
}

/*  An ended job's record of its SDBs (spm_idu_job_kept): they are known
    again, for the clients that read them, until they are discarded. */
static int replay_kept(spm_idu_t *self, uint64_t job, const spm_idu_record_t *rec)
{
    rbuf_t r = {rec->data, rec->len, 1, 0};
    while (r.pos < r.n) {
        spm_sdb_t id = sfp_get_uv(&r);
        uint32_t type = (uint32_t)sfp_get_uv(&r);
        uint64_t version = sfp_get_uv(&r), floor = sfp_get_uv(&r);
        if (r.bad || (id >> 32) != job)
            return spm_error(SPM_EFORMAT, "job %llu: a damaged record of its blocks",
                             (unsigned long long)job);
        if (spm_idu_sdb_restore(self, job, id, type, version, floor) != 0)
            return spm_error(SPM_ENOMEM, "out of memory");
    }
    return 0;
}

static int bad(struct replay *rp, const char *fmt, ...)
{
    if (rp->bad)
        return SPM_EFORMAT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rp->why, sizeof rp->why, fmt, ap);
    va_end(ap);
    rp->bad = 1;
    return SPM_EFORMAT;
}

static void get_who(rbuf_t *r, spm_ieu_t *who)
{
    who->ieu = (uint32_t)sfp_get_uv(r);
    who->node = (uint32_t)sfp_get_uv(r);
    who->slots = (uint32_t)sfp_get_uv(r);
}

/*  Runs record REC of the job being replayed. */
static void replay_one(spm_idu_t *self, job_t *job, struct replay *rp, const spm_idu_record_t *rec)
{
    uint8_t t = rec->len ? ((const uint8_t *)rec->data)[0] : 0;
    rbuf_t r = {rec->data, rec->len, 1, 0};
    spm_ieu_t who;
    switch (t) {
    case EV_FEED: {
        uint32_t id = (uint32_t)sfp_get_uv(&r);
        get_who(&r, &who);
        spm_sf_t *sf = job->sfs;
        while (sf && sf->id != id)
            sf = sf->job_next;
        if (r.bad || !sf || sf->finished || sf->done || !sf->cls->feed) {
            bad(rp, "a feed call of SF %u, which cannot take one now", id);
            return;
        }
        spm_idu_feed_call(self, sf, &who);
        return;
    }
    case EV_COMMIT: {
        uint64_t id = sfp_get_uv(&r);
        get_who(&r, &who);
        uint64_t f[9];
        for (int i = 0; i < 9; i++)
            f[i] = sfp_get_uv(&r);
        const void *reply;
        size_t rlen = sfp_get_bytes(&r, &reply);
        uint32_t low = (uint32_t)id;
        si_t *si = NULL;
        if (!r.bad && (id >> 32) == job->id && low < rp->nready) {
            si = rp->ready[low];
            rp->ready[low] = NULL;
        }
        if (!si) {
            bad(rp, "the commit of SI %llu, which is not ready there", (unsigned long long)id);
            return;
        }
        spm_idu_commit_t c = {.exec_us = f[0],
                              .wait_us = f[1],
                              .localize_us = f[2],
                              .bytes_l2 = f[3],
                              .bytes_store = f[4],
                              .bytes_pushed = f[5],
                              .l1_hits = (uint32_t)f[6],
                              .l2_hits = (uint32_t)f[7],
                              .store_reads = (uint32_t)f[8],
                              .reply = reply,
                              .reply_len = rlen};
        rp->taken++;
        spm_idu_commit_apply(self, si, &c, &who);
        return;
    }
    case EV_QUARANTINE:
        return;
    case EV_ACTIONS:
        if (!job->remote) {
            bad(rp, "a plugin host's actions in a job that has none");
            return;
        }
        spm_remote_apply(self, job, (const uint8_t *)rec->data + 1, rec->len - 1);
        return;
    case EV_RESUMED:
        job->restarts++;
        return;
    case EV_ISSUED: {
        uint64_t n = sfp_get_uv(&r);
        int64_t low = 0;
        for (uint64_t k = 0; k < n && !r.bad; k++) {
            low += sfp_get_sv(&r);
            size_t byte = (size_t)(uint32_t)low / 8;
            if (byte >= rp->nissued && spm_grow_zeroed(&rp->issued, &rp->nissued, byte + 1, 1) != 0)
                break; /* out of memory: only the count in the report suffers */
            rp->issued[byte] |= (uint8_t)(1u << ((uint32_t)low % 8));
        }
        return;
    }
    case EV_FAIL: {
        int code = (int)sfp_get_sv(&r);
        const void *msg;
        size_t n = sfp_get_bytes(&r, &msg);
        if (r.bad) {
            bad(rp, "a damaged failure record");
            return;
        }
        spm_idu_fail_now(job, code, (int)n, msg);
        return;
    }
    default:
        if (t >= 100 && rp->foreign) {
            rp->foreign(rp->arg, job->id, rec->data, rec->len);
            return;
        }
        bad(rp, "record %zu of an unknown kind (%u)", rp->pos - 1, t);
    }
}

/*  Hands the SIs still ready at the end of the replay to the pool, in id
    (program) order: they were in flight, or not issued yet, at the crash.
    Returns how many were in flight (issued before the crash). */
static size_t release_ready(spm_idu_t *self, struct replay *rp)
{
    size_t inflight = 0;
    for (size_t i = 0; i < rp->nready; i++) {
        si_t *si = rp->ready[i];
        if (!si)
            continue;
        rp->ready[i] = NULL;
        inflight += i / 8 < rp->nissued && (rp->issued[i / 8] >> (i % 8) & 1);
        spm_idu_make_ready(self, si, 0);
    }
    return inflight;
}

void spm_ev_ready(job_t *job, si_t *si)
{
    struct replay *rp = job->replay;
    uint32_t low = (uint32_t)si->pub.id;
    if (low >= rp->nready &&
        spm_grow_zeroed(&rp->ready, &rp->nready, (size_t)low + 1, sizeof *rp->ready) != 0) {
        bad(rp, "out of memory");
        return;
    }
    rp->ready[low] = si;
}

void spm_ev_quarantine(spm_idu_t *self, const job_t *job, const char *why)
{
    if (!recording(self, job))
        return;
    wbuf_t b = wbuf_of(self);
    uint8_t t = EV_QUARANTINE;
    sfp_put_raw(&b, &t, 1);
    sfp_put_bytes(&b, why, strlen(why));
    emit(self, job->id, &b);
}

/*  Why job ID is not to be run again, or NULL: the center named it as one
    that crashed it (spm_idu_quarantine), or its journal says so. */
static const char *quarantined_why(spm_idu_t *self, uint64_t id, const spm_idu_record_t *recs,
                                   size_t n)
{
    for (size_t i = 0; i < self->nquarantine; i++)
        if (self->quarantine[i].job == id)
            return self->quarantine[i].why;
    static char why[512];
    for (size_t i = 1; i < n; i++) {
        const uint8_t *p = recs[i].data;
        if (!recs[i].len || p[0] != EV_QUARANTINE)
            continue;
        rbuf_t r = {p, recs[i].len, 1, 0};
        const void *msg;
        size_t len = sfp_get_bytes(&r, &msg);
        snprintf(why, sizeof why, "%.*s", r.bad ? 0 : (int)len, r.bad ? "" : (const char *)msg);
        return why[0] ? why : "it crashed the center";
    }
    return NULL;
}

int spm_idu_replay(spm_idu_t *self, uint64_t id, const spm_idu_record_t *recs, size_t n,
                   spm_idu_record_fn foreign, void *arg)
{
    if (id == 0)
        return replay_puts(self, recs, n);
    if (n && recs[0].len && ((const uint8_t *)recs[0].data)[0] == EV_KEPT)
        return replay_kept(self, id, &recs[0]);
    rbuf_t r = {n ? recs[0].data : NULL, n ? recs[0].len : 0, 1, 0};
    if (!n || !recs[0].len || ((const uint8_t *)recs[0].data)[0] != EV_SUBMIT)
        return spm_error(SPM_EFORMAT, "job %llu: its journal does not start with its submit",
                         (unsigned long long)id);
    uint64_t jid = sfp_get_uv(&r);
    int priority = (int)sfp_get_sv(&r);
    uint64_t wall = sfp_get_uv(&r);
    uint64_t seed = sfp_get_uv(&r);
    const void *prog, *args;
    size_t plen = sfp_get_bytes(&r, &prog);
    size_t alen = sfp_get_bytes(&r, &args);
    if (r.bad || jid != id || plen == 0 || plen > 200)
        return spm_error(SPM_EFORMAT, "job %llu: a damaged submit record", (unsigned long long)id);
    char program[256];
    snprintf(program, sizeof program, "%.*s", (int)plen, (const char *)prog);
    spm_sdb_t plugin = 0; /* a plugin's job: its object and scope (journals before plugins
                             end here) */
    const void *jscope = NULL;
    size_t slen = 0;
    if (r.pos < r.n) {
        plugin = sfp_get_uv(&r);
        slen = sfp_get_bytes(&r, &jscope);
        if (r.bad || slen >= SPM_SCOPE_LEN)
            return spm_error(SPM_EFORMAT, "job %llu: a damaged submit record",
                             (unsigned long long)id);
    }
    struct replay rp = {.recs = recs, .n = n, .pos = 1, .foreign = foreign, .arg = arg};

    job_t *job = NULL;
    int rc = spm_idu_job_begin(self, id, program, priority, wall, seed, &rp, &job);
    const char *quarantined = rc == 0 ? quarantined_why(self, id, recs, n) : NULL;
    char scope[SPM_SCOPE_LEN] = "";
    if (rc == 0 && quarantined) {
        job->replay = NULL; /* recorded: a later restart finds it failed */
        spm_ev_quarantine(self, job, quarantined);
        spm_idu_fail_now(job, SPM_EEXEC, -1, quarantined);
    } else if (rc == 0 && plugin && !self->load_plugin) {
        bad(&rp, "its plugin cannot be loaded here");
    } else if (rc == 0 && plugin && self->load_plugin(self->load_arg, plugin, scope) != 0) {
        bad(&rp, "its plugin cannot be loaded: %s", spm_error_detail());
    } else if (rc == 0 && plugin && (slen != strlen(scope) || memcmp(scope, jscope, slen) != 0)) {
        bad(&rp, "its plugin's bytes changed");
    } else if (rc == 0) {
        spm_idu_job_plugin(job, scope, plugin);
        if (plugin && self->remote_fn && spm_remote_new(job) != 0)
            bad(&rp, "out of memory");
        else if (!job->remote && !spm_program_find_in(scope, program))
            bad(&rp, "no program '%s' in %s", program, plugin ? "its plugin" : "this spm");
        else
            rc = spm_idu_job_start(self, job, args, alen);
    }
    while (job && job->replay && rp.pos < rp.n && !rp.bad) {
        const spm_idu_record_t *rec = &rp.recs[rp.pos++];
        replay_one(self, job, &rp, rec);
    }
    if (job) {
        job->replay = NULL;
        job->replayed = rp.taken;
        job->restarts++;
        if (!rp.bad && self->record) {
            uint8_t t = EV_RESUMED;
            self->record(self->record_arg, id, &t, 1);
        }
        job->reissued += release_ready(self, &rp);
        if (rp.bad) {
            char msg[400];
            snprintf(msg, sizeof msg, "cannot be resumed after the center's restart: %s", rp.why);
            spm_idu_fail_now(job, SPM_EFORMAT, -1, msg);
        }
    }
    free(rp.ready);
    free(rp.issued);
    spm_idu_notify(self);
    if (rp.bad)
        return spm_error(SPM_EFORMAT, "job %llu (%s) cannot be resumed: %s", (unsigned long long)id,
                         program, rp.why);
    return rc;
}
