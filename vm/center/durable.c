/*  =========================================================================
    durable - what makes the center's work outlive the center

    The order that makes a crash harmless: an event is appended when the IDU
    records it (before any SF code runs on it), written to the journal at
    the end of the loop's turn (before the report of a job that ended in it
    leaves, and before the garbage it made is deleted), and synced with the
    store's group commit. A crash loses at most the events of the last turn
    (process crash) or of the last sync interval (operating-system crash);
    what they described is done again (SIs re-issued, commits taken anew),
    and nothing they allowed to be deleted has been.

    Why a discarded SDB's blocks do not wait: a discard (version 0 in
    spm_durable_garbage: a client's DISCARD, or the center freeing an
    ended job's results) names only SDBs no SI reads or will read: the
    blocks of jobs that have ended, whose end was written before their
    report left, and puts nothing reads (spm_idu_discard). A discarded
    job's journal is deleted at once (spm_durable_discarded), so no
    restart resumes it; a discard of puts lost in a crash leaves the IDU
    a record of SDBs whose client said it will not read them again. So
    their blocks are deleted in the turn they were discarded, without
    waiting for the journal's write and sync. Waiting could last for ever:
    on a full disk the journal cannot be written, and the space those
    blocks hold is the space it needs (a job that filled the store failed,
    and every later one failed the same way).
    =========================================================================
*/
#include "vm/center/durable.h"
#include "base/grow.h"
#include "vm/center/journal.h"
#include "base/log.h"
#include "spm/spm.h"
#include "vm/center/syncer.h"
#include "transport/wire.h"

#include <stdlib.h>
#include <string.h>

#define J0_SLACK 65536 /* job 0 records beyond twice the live ones before a compaction */
#define FLUSH_US 10000 /* write the journal at least this often while events come */

typedef struct {
    spm_sdb_t id;
    uint64_t version;
    uint64_t flush; /* the events that made it garbage are written by this flush */
    uint64_t kick;  /* ... and on disk once this sync has finished (0: not known yet) */
} held_t;

struct spm_durable {
    spm_store_t *store;
    spm_journal_t *journal; /* NULL: --no-journal */
    spm_idu_t *idu;         /* whose events are journaled (spm_durable_resume) */
    spm_syncer_t *syncer;   /* sync_us > 0 and syncing */
    spm_durable_opts_t o;
    uint64_t last_sync;    /* when a sync was done or asked for last */
    int dirty;             /* written since then (store or journal) */
    uint64_t kicks;        /* syncs asked of the syncer, or done in the loop */
    uint64_t flushes;      /* journal writes that succeeded */
    uint64_t last_flush;   /* when the journal was written last */
    uint64_t made;         /* spm_idu_made then */
    int appended;          /* events recorded since */
    uint64_t j0_records;   /* job 0 records since its last compaction */
    uint64_t j0_compact;   /* compact when there are this many */
    int append_failed;     /* an append failed since the last flush */
    uint64_t flush_warned; /* when a failing flush was last logged */
    held_t *held;          /* garbage waiting for its events to be on disk */
    size_t nheld, capheld;
    spm_durable_cut_t *cut; /* resumed jobs whose journal was cut (spm_durable_cut) */
    size_t ncut, capcut;
};

spm_durable_t *spm_durable_open(spm_store_t *store, const char *dir, const uint8_t store_id[16],
                                const spm_durable_opts_t *o)
{
    spm_durable_t *d = calloc(1, sizeof *d);
    if (!d) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    d->store = store;
    d->o = *o;
    d->j0_compact = J0_SLACK;
    if (o->journal && !(d->journal = spm_journal_open(dir, store_id))) {
        free(d);
        return NULL;
    }
    if ((o->no_sync || o->sync_us) && spm_store_set_lazy(store, 1) != 0) {
        spm_durable_destroy(&d);
        return NULL;
    }
    if (o->sync_us && !o->no_sync && !(d->syncer = spm_syncer_new(store, d->journal))) {
        spm_error(SPM_ESYS, "cannot start the thread that syncs the store");
        spm_durable_destroy(&d);
        return NULL;
    }
    return d;
}

/*  Syncs the store and the journal in this thread. */
static void sync_now(spm_durable_t *self)
{
    if (spm_store_sync(self->store) != 0 || (self->journal && spm_journal_sync(self->journal) != 0))
        spm_log_error("%s", spm_error_detail());
}

void spm_durable_destroy(spm_durable_t **self_p)
{
    spm_durable_t *d = *self_p;
    if (!d)
        return;
    spm_durable_flush(d);
    spm_syncer_destroy(&d->syncer);
    if (!d->o.no_sync)
        sync_now(d);
    spm_journal_destroy(&d->journal);
    free(d->held);
    free(d->cut);
    free(d);
    *self_p = NULL;
}

/* -------------------------------------------------------------- resume */

/*  One job's records, read back and copied. */
typedef struct {
    spm_durable_t *d;
    spm_idu_t *idu;
    spm_durable_resume_t *r;
    uint64_t job; /* the job whose records are gathered; UINT64_MAX: none yet */
    uint8_t *bytes;
    size_t nbytes, capbytes;
    size_t *ends; /* where each record ends in bytes */
    size_t n, cap;
    spm_idu_record_t *recs;
    size_t caprecs;
    int nomem;
    const spm_journal_report_t *jr; /* the replay's report so far */
    uint64_t seen_damaged;          /* its damaged files and skipped bytes when the */
    uint64_t seen_skipped;          /* ... job before this one was gathered */
} gather_t;

/*  Notes whether the job gathered was cut. The journal adds a file's
    damage to the report once it has handed over the file's records, so
    the report's growth since the job before is this job's: its records
    are all here, the tail after them is gone. (A damaged file with no
    intact record at all is read between two jobs and counted with the
    next: that one is then checked for nothing, and the file's job, with
    not even its submit left, is not resumed.) */
static void note_cut(gather_t *g)
{
    uint64_t damaged = g->jr->damaged_files - g->seen_damaged;
    uint64_t skipped = g->jr->bytes_skipped - g->seen_skipped;
    g->seen_damaged = g->jr->damaged_files;
    g->seen_skipped = g->jr->bytes_skipped;
    spm_durable_t *d = g->d;
    if (!damaged || g->job == 0 || g->job == UINT64_MAX ||
        spm_grow(&d->cut, d->ncut, &d->capcut, sizeof *d->cut, 8) != 0)
        return;
    d->cut[d->ncut++] = (spm_durable_cut_t){g->job, skipped, g->n};
}

/*  Runs the job gathered so far again. */
static void resume_gathered(gather_t *g)
{
    if (g->job == UINT64_MAX || (!g->n && g->job != 0))
        return;
    note_cut(g);
    int rc = 0;
    while (!g->nomem && rc == 0 && g->caprecs < g->n)
        rc = spm_grow(&g->recs, g->caprecs, &g->caprecs, sizeof *g->recs, 1024);
    if (g->nomem || rc != 0) {
        spm_log_error("job %llu: out of memory reading its journal; it is not resumed",
                      (unsigned long long)g->job);
        g->r->jobs += g->job != 0;
        g->r->failed += g->job != 0;
        g->nbytes = g->n = 0;
        return;
    }
    for (size_t i = 0, at = 0; i < g->n; at = g->ends[i++])
        g->recs[i] = (spm_idu_record_t){g->bytes + at, g->ends[i] - at};
    spm_error(0, "%s", "");
    rc = spm_idu_replay(g->idu, g->job, g->recs, g->n, NULL, NULL);
    spm_idu_job_info_t info;
    g->r->jobs += g->job != 0;
    if (g->job == 0) {
        if (rc != 0)
            spm_log_error("%s", spm_error_detail());
    } else if (spm_idu_job_info(g->idu, g->job, &info) != 0) {
        if (rc == 0) {
            g->r->kept++;
        } else {
            g->r->failed++;
            spm_log_error("%s", spm_error_detail());
        }
    } else {
        g->r->taken += info.resumed;
        g->r->reissued += info.reissued;
        if (rc != 0) {
            g->r->failed++;
            spm_log_error("%s", spm_error_detail());
        } else if (info.state == 0) {
            g->r->resumed++;
        } else {
            g->r->ended++;
        }
    }
    g->nbytes = g->n = 0;
}

static int gather(void *arg, uint64_t job, const void *rec, size_t len)
{
    gather_t *g = arg;
    if (job != g->job) {
        resume_gathered(g);
        g->job = job;
        g->nomem = 0;
    }
    g->r->records++;
    int rc = g->nomem ? SPM_ENOMEM : spm_grow(&g->ends, g->n, &g->cap, sizeof *g->ends, 1024);
    while (rc == 0 && g->capbytes < g->nbytes + len)
        rc = spm_grow(&g->bytes, g->capbytes, &g->capbytes, 1, 1 << 16);
    if (rc != 0) {
        g->nomem = 1;
        return 1;
    }
    memcpy(g->bytes + g->nbytes, rec, len);
    g->nbytes += len;
    g->ends[g->n++] = g->nbytes;
    return 0;
}

/*  IDU recorder: an event, appended to its job's journal. */
static void record(void *arg, uint64_t job, const void *rec, size_t len)
{
    spm_durable_t *d = arg;
    if (spm_journal_append(d->journal, job, rec, len) != 0 && !d->append_failed) {
        d->append_failed = 1;
        spm_log_error("journal: job %llu: %s; a restart of the center will not resume it",
                      (unsigned long long)job, spm_error_detail());
    }
    d->j0_records += job == 0;
    d->appended = 1;
}

int spm_durable_resume(spm_durable_t *self, spm_idu_t *idu, spm_durable_resume_t *r)
{
    memset(r, 0, sizeof *r);
    if (!self->journal)
        return 0;
    uint64_t t0 = spm_now_us();
    self->idu = idu;
    spm_idu_set_recorder(idu, record, self); /* a resumed job's new events */
    spm_journal_report_t jr = {0};
    gather_t g = {.d = self, .idu = idu, .r = r, .job = UINT64_MAX, .jr = &jr};
    int rc = spm_journal_replay(self->journal, gather, &g, &jr);
    if (rc == 0)
        resume_gathered(&g);
    free(g.bytes);
    free(g.ends);
    free(g.recs);
    spm_idu_job_floor(idu, spm_journal_max_job(self->journal));
    r->damaged_files = jr.damaged_files;
    r->bytes_skipped = jr.bytes_skipped;
    r->us = spm_now_us() - t0;
    self->j0_records = 0;
    self->j0_compact = 0; /* job 0's records are rewritten at the first turn */
    return rc;
}

/* --------------------------------------------------------------- turns */

void spm_durable_flush(spm_durable_t *self)
{
    if (!self->journal)
        return;
    if (self->idu) {
        spm_idu_record_turn(self->idu);
        self->made = spm_idu_made(self->idu);
    }
    self->last_flush = spm_now_us();
    if (spm_journal_flush(self->journal) == 0) {
        self->dirty |= self->appended; /* for the next sync */
        self->appended = 0;
        self->flushes++;
        self->append_failed = 0;
        self->flush_warned = 0;
        return;
    }
    uint64_t now = spm_now_us();
    if (!self->flush_warned || now - self->flush_warned > 10000000) { /* once per 10 s */
        self->flush_warned = now;
        spm_log_error("journal: %s; jobs will not resume after a restart until it is written",
                      spm_error_detail());
    }
}

void spm_durable_garbage(spm_durable_t *self, spm_sdb_t id, uint64_t version)
{
    if (spm_grow(&self->held, self->nheld, &self->capheld, sizeof *self->held, 256) != 0) {
        spm_log_warn("out of memory: block %llu v%llu is not deleted", (unsigned long long)id,
                     (unsigned long long)version);
        return;
    }
    self->held[self->nheld++] = (held_t){id, version, self->flushes + 1, 0};
    self->appended = 1; /* the next write and sync cover what made it garbage */
}

/*  The held garbage whose events are written waits for the next sync. */
static void mark_written(spm_durable_t *self)
{
    for (size_t i = 0; i < self->nheld; i++)
        if (self->held[i].flush <= self->flushes && !self->held[i].kick)
            self->held[i].kick = self->kicks + 1; /* the first sync that begins from now */
}

/*  Hands RELEASE the held garbage whose events are written and, unless
    nothing is synced (NOSYNC), on disk: the sync DONE has finished; and
    discarded SDBs (version 0) at once (see the top of this file). */
static void release(spm_durable_t *self, int nosync, uint64_t done, spm_durable_release_fn fn,
                    void *arg)
{
    size_t k = 0;
    for (size_t i = 0; i < self->nheld; i++) {
        held_t *h = &self->held[i];
        if (h->version == 0 ||
            (h->flush <= self->flushes && (nosync || (h->kick && h->kick <= done))))
            fn(arg, h->id, h->version);
        else
            self->held[k++] = *h;
    }
    self->nheld = k;
}

/*  Job 0's records (clients' puts and their discards) are rewritten as
    the live puts alone once they are more than twice as many. */
static void compact_puts(spm_durable_t *self)
{
    if (!self->journal || self->j0_records < self->j0_compact || !self->idu)
        return;
    if (spm_journal_reset(self->journal, 0) != 0) {
        spm_log_warn("journal: out of memory compacting the puts' records");
        self->j0_compact = self->j0_records * 2;
        return;
    }
    self->j0_records = 0;
    size_t n = spm_idu_record_puts(self->idu);
    self->j0_compact = 2 * n + J0_SLACK;
}

void spm_durable_turn(spm_durable_t *self, uint64_t now, int store_dirty, spm_durable_release_fn fn,
                      void *arg)
{
    compact_puts(self);
    /* The journal is written when the IDU made SIs or ids this turn (they
       leave the center after this call), else at most every FLUSH_US: a
       turn that only took commits can wait, what it recorded is done again
       if it is lost. */
    if (self->journal && ((self->idu && spm_idu_made(self->idu) != self->made) ||
                          ((self->appended || self->nheld) && now - self->last_flush >= FLUSH_US)))
        spm_durable_flush(self);
    mark_written(self);
    self->dirty |= store_dirty;
    if (!self->o.no_sync && self->dirty && now - self->last_sync >= self->o.sync_us) {
        if (self->syncer) {
            self->kicks = spm_syncer_kick(self->syncer);
        } else {
            sync_now(self);
            self->kicks++;
        }
        self->dirty = 0;
        self->last_sync = now;
    }
    if (!self->journal) { /* no events to wait for */
        self->flushes++;
        release(self, 1, 0, fn, arg);
        return;
    }
    release(self, self->o.no_sync, self->syncer ? spm_syncer_done(self->syncer) : self->kicks, fn,
            arg);
}

void spm_durable_reported(spm_durable_t *self, spm_idu_t *idu, uint64_t job)
{
    if (!self->journal)
        return;
    int rc = spm_journal_reset(self->journal, job);
    if (rc == 0 && spm_idu_job_kept(idu, job) == 0)
        rc = spm_journal_drop(self->journal, job);
    if (rc != 0)
        spm_log_warn("journal: job %llu: %s", (unsigned long long)job, spm_error_detail());
}

void spm_durable_discarded(spm_durable_t *self, const uint64_t *jobs, size_t n)
{
    for (size_t i = 0; self->journal && i < n; i++)
        if (jobs[i] && spm_journal_drop(self->journal, jobs[i]) != 0)
            spm_log_warn("journal: job %llu: %s", (unsigned long long)jobs[i], spm_error_detail());
}

size_t spm_durable_cut(const spm_durable_t *self, const spm_durable_cut_t **cut)
{
    *cut = self->cut;
    return self->ncut;
}
