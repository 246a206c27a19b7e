/*  =========================================================================
    records - the center's side of its jobs' records: who owns a job,
    what became of it, and when its blocks go

    Every job gets a record in the history (vm/center/history.h) when it is
    submitted; the center brings it up to date once a second while the job
    runs and writes its end and its report when it ends, so that `spm
    jobs`, `spm show` and `spm wait` answer from it for as long as the
    record is kept, across restarts. A restarted center counts a resumed
    job's time from what its record says it had run (the downtime is not
    the job's), and a job that ended before the restart is not logged or
    counted again.

    Ownership: a job belongs to the key that submitted it and a put block
    to the key that put it. Only that key, or an operator's (a key in the
    key directory's authorized/operators/), may cancel, discard, watch or
    fetch it; without keys (an ipc:// center, --insecure) nothing is owned.

    Blocks outlive a job only for a client that still needs them:
      - a client that discards them (the end of its session) frees them;
      - a job of `spm submit` has them freed once a client was handed its
        report (the result travels in it): `spm wait`;
      - a job nobody followed for center.abandon_s while it ran (its client
        is gone) is canceled and its blocks freed when it ends;
      - whatever is left is freed center.keep_results_s after the job
        ended.
    The record stays (its `freed` set), and goes by the history's
    retention (center.history_jobs, center.history_days).
    =========================================================================
*/
#include "base/checksum.h"
#include "base/log.h"
#include "transport/report.h"
#include "vm/center/center_int.h"
#include "vm/center/report_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TICK_US 1000000u  /* records of running jobs brought up to date this often */
#define PRUNE_EVERY 10    /* ... and the history pruned every this many ticks */
#define MAX_LISTED 100000 /* records in one JobsReply at most */
#define MAX_SAMPLES 240   /* progress samples a record keeps (JobRecord.progress_ms) */
#define MAX_EVENTS 32     /* events a record keeps (JobRecord.events) */

/*  Appends (NOW_MS, COMMITTED) to R's progress. A full series is thinned
    to every other sample, and from then on a sample is taken only once
    as much time has passed as the kept ones are apart on average, so a
    long job keeps MAX_SAMPLES spread over its whole run. FORCE (its end)
    takes the sample whatever the spacing. Out of memory, it is skipped. */
static void sample(Spm__JobRecord *r, uint64_t now_ms, uint64_t committed, int force)
{
    size_t n = r->n_progress_ms;
    if (n != r->n_progress_sis) /* a record from a newer spm, say: start again */
        n = r->n_progress_ms = r->n_progress_sis = 0;
    if (n >= MAX_SAMPLES) {
        size_t k = 0;
        for (size_t i = 0; i < n; i += 2, k++) {
            r->progress_ms[k] = r->progress_ms[i];
            r->progress_sis[k] = r->progress_sis[i];
        }
        n = r->n_progress_ms = r->n_progress_sis = k;
    }
    if (n >= 2 && !force &&
        now_ms - r->progress_ms[n - 1] <
            (r->progress_ms[n - 1] - r->progress_ms[0]) / (MAX_SAMPLES / 2))
        return;
    uint64_t *ms = realloc(r->progress_ms, (n + 1) * sizeof *ms);
    if (ms)
        r->progress_ms = ms;
    uint64_t *sis = ms ? realloc(r->progress_sis, (n + 1) * sizeof *sis) : NULL;
    if (!sis)
        return;
    r->progress_sis = sis;
    r->progress_ms[n] = now_ms;
    r->progress_sis[n] = committed;
    r->n_progress_ms = r->n_progress_sis = n + 1;
}

/*  Replaces R's figures per opcode with JOB's in the IDU now. */
static void set_opcodes(spm_center_t *c, Spm__JobRecord *r, uint64_t job)
{
    Spm__OpcodeReport **ops;
    size_t n = spm_report_build_opcodes(c->idu, job, &ops);
    if (!ops)
        return;
    for (size_t i = 0; i < r->n_opcodes; i++)
        spm__opcode_report__free_unpacked(r->opcodes[i], NULL);
    free(r->opcodes);
    r->opcodes = ops;
    r->n_opcodes = n;
}

/*  Adds an event (printf-style, cut to 255 bytes) at this moment to JOB's
    record, for its page: the first MAX_EVENTS are kept, the rest counted.
    Does nothing for a job without a record. */
void center_record_event(spm_center_t *c, uint64_t job, const char *fmt, ...)
{
    Spm__JobRecord *r = spm_history_get(c->history, job);
    if (!r)
        return;
    spm_history_touch(c->history, r);
    if (r->n_events >= MAX_EVENTS) {
        r->events_dropped++;
        return;
    }
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    Spm__JobEvent **all = realloc(r->events, (r->n_events + 1) * sizeof *all);
    Spm__JobEvent *e = all ? malloc(sizeof *e) : NULL;
    if (all)
        r->events = all;
    if (!e)
        return;
    spm__job_event__init(e);
    e->at_ms = spm_history_now() / 1000;
    if (!(e->text = strdup(text))) {
        free(e);
        return;
    }
    r->events[r->n_events++] = e;
}

/*  Fills up to MAX entries of OUT with the running jobs (the first 256)
    and their re-issued SIs now; returns how many. With
    center_record_reissues after an event, tells each job it touched. */
size_t center_reissued_now(spm_center_t *c, center_reissued_t *out, size_t max)
{
    uint64_t ids[256];
    size_t n = spm_idu_jobs(c->idu, ids, 256), k = 0;
    for (size_t i = 0; i < n && i < 256 && k < max; i++) {
        spm_idu_job_info_t info;
        if (spm_idu_job_info(c->idu, ids[i], &info) == 0 && info.state == 0)
            out[k++] = (center_reissued_t){ids[i], info.reissued};
    }
    return k;
}

/*  For each job of BEFORE (N, from center_reissued_now) whose re-issued
    SIs grew since, records the event "WHAT: K SIs re-issued". */
void center_record_reissues(spm_center_t *c, const center_reissued_t *before, size_t n,
                            const char *what)
{
    for (size_t i = 0; i < n; i++) {
        spm_idu_job_info_t info;
        if (spm_idu_job_info(c->idu, before[i].job, &info) == 0 &&
            info.reissued > before[i].reissued)
            center_record_event(c, before[i].job, "%s: %llu SIs re-issued", what,
                                (unsigned long long)(info.reissued - before[i].reissued));
    }
}

int center_records_open(spm_center_t *c, const spm_center_opts_t *o)
{
    spm_history_opts_t h = {.max_jobs = (uint64_t)o->history_jobs,
                            .max_age_s = (uint64_t)o->history_days * 86400u,
                            .no_sync = o->no_sync};
    /* Without a journal nothing outlives the center, its records neither. */
    if (!(c->history = spm_history_open(o->journal ? o->store : NULL, &h)))
        return SPM_EIO;
    c->status.history = c->history;
    c->keep_results_us = (uint64_t)o->keep_results_s * 1000000u;
    c->abandon_us = (uint64_t)o->abandon_s * 1000000u;
    spm_idu_job_floor(c->idu, spm_history_max_job(c->history));
    return 0;
}

uint64_t center_owner_hash(const char *user)
{
    return user && *user ? spm_checksum(user, strlen(user)) | 1 : 0;
}

/*  Whether USER's key is an operator's. */
static int operator(spm_center_t *c, const char *user)
{
    return user && *user && spm_security_listed(c->security, "operators", user);
}

int center_may(spm_center_t *c, const char *user, uint64_t job, const char *what)
{
    Spm__JobRecord *r = spm_history_get(c->history, job);
    if (!r || !r->owner_key[0] || (user && strcmp(user, r->owner_key) == 0) || operator(c, user))
        return 0;
    return spm_error(SPM_EDENIED,
                     "job %llu is not yours: it belongs to key '%s'; only that key or an "
                     "operator's may %s it",
                     (unsigned long long)job, r->owner[0] ? r->owner : "(not in authorized/)",
                     what);
}

int center_may_sdb(spm_center_t *c, const char *user, spm_sdb_t sdb)
{
    if (sdb >> 32)
        return center_may(c, user, sdb >> 32, "fetch the blocks of");
    uint64_t owner = spm_idu_sdb_owner(c->idu, sdb);
    if (!owner || owner == center_owner_hash(user) || operator(c, user))
        return 0;
    return spm_error(SPM_EDENIED,
                     "block %llu is not yours: another key put it; only that key or an "
                     "operator's may fetch or discard it",
                     (unsigned long long)sdb);
}

void center_record_submit(spm_center_t *c, uint64_t job, const spm_msg_t *m)
{
    const Spm__Submit *s = m->env->submit;
    /* A job whose start failed ended inside the submit: it has a record */
    Spm__JobRecord *r = spm_history_get(c->history, job);
    if (!r)
        r = spm_history_add(c->history, job);
    if (!r) {
        spm_log_warn("job %llu: out of memory for its record", (unsigned long long)job);
        return;
    }
    char name[256] = "";
    if (m->user[0] && !spm_security_key_name(c->security, m->user, name, sizeof name))
        snprintf(name, sizeof name, "?");
    spm_history_set_str(&r->program, s->program);
    spm_history_set_str(&r->owner, name);
    spm_history_set_str(&r->owner_key, m->user);
    r->priority = s->priority;
    r->detached = s->detach;
    spm_idu_job_info_t info; /* it began in the IDU: its start call may have taken a while */
    uint64_t now = spm_history_now();
    if (!r->submit_us)
        r->submit_us = spm_idu_job_info(c->idu, job, &info) == 0 && info.wall_us < now
                           ? now - info.wall_us
                           : now;
    spm_history_touch(c->history, r);
    spm_history_write(c->history, 1); /* the client learns of it: a restart must too */
}

void center_records_resumed(spm_center_t *c)
{
    uint64_t now = spm_history_now();
    uint64_t ids[4096];
    size_t n = spm_idu_jobs(c->idu, ids, 4096);
    for (size_t i = 0; i < n && i < 4096; i++) {
        spm_idu_job_info_t info;
        if (spm_idu_job_info(c->idu, ids[i], &info) != 0 || info.state != 0)
            continue;
        Spm__JobRecord *r = spm_history_get(c->history, ids[i]);
        if (!r &&
            (r = spm_history_add(c->history, ids[i])) != NULL) { /* journaled before records */
            spm_history_set_str(&r->program, info.program);
            r->submit_us = now;
        }
        if (!r)
            continue;
        spm_idu_job_ran(c->idu, ids[i], r->run_us);
        r->updated_us = now; /* its time runs again from here */
        r->restarts = info.restarts;
        spm_history_touch(c->history, r);
    }
    /* A record running that the journal did not bring back (its file was
       lost, or the center ran without one): it ended with the center. */
    Spm__JobRecord **all = calloc(MAX_LISTED, sizeof *all);
    size_t k = all ? spm_history_list(c->history, all, MAX_LISTED) : 0;
    for (size_t i = 0; i < k && i < MAX_LISTED; i++) {
        spm_idu_job_info_t info;
        if (spm_history_ended(all[i]) || spm_idu_job_info(c->idu, all[i]->job, &info) == 0)
            continue;
        spm_history_set_str(&all[i]->state, "failed");
        spm_history_set_str(&all[i]->error, "lost: the center restarted without its journal");
        all[i]->status = SPM_EFORMAT;
        all[i]->end_us = now;
        all[i]->freed = 1;
        spm_history_touch(c->history, all[i]);
    }
    free(all);
    spm_history_write(c->history, 1);
}

Spm__Report *center_record_end(spm_center_t *c, uint64_t job, const spm_idu_job_info_t *info,
                               Spm__Report *built, int *again)
{
    Spm__JobRecord *r = spm_history_get(c->history, job);
    *again = r && spm_history_ended(r) && r->report;
    if (*again) /* it ended before a restart: logged, counted and recorded then */
        return r->report;
    if (!r && (r = spm_history_add(c->history, job)) != NULL) {
        spm_history_set_str(&r->program, info->program);
        r->submit_us = spm_history_now();
    }
    if (!r || !built)
        return built;
    spm_history_set_str(&r->state, info->state == 1   ? "done"
                                   : info->state == 3 ? "canceled"
                                                      : "failed");
    spm_history_set_str(&r->error, info->state == 1 ? "" : info->error);
    r->status = built->status;
    r->end_us = spm_history_now();
    r->run_us = info->wall_us;
    r->updated_us = r->end_us;
    sample(r, r->end_us / 1000, info->committed, 1);
    if (info->state != 1 && info->error && *info->error)
        center_record_event(c, job, "%s: %s", info->state == 3 ? "canceled" : "failed",
                            info->error);
    if (!r->start_us && info->since_issue_us) /* it ended before a tick saw it run */
        r->start_us = r->end_us - info->since_issue_us;
    else if (!r->start_us && info->issued)
        r->start_us = r->end_us > r->run_us ? r->end_us - r->run_us : r->end_us;
    r->committed = info->committed;
    r->known = info->expected > info->issued ? info->expected : info->issued;
    r->restarts = info->restarts;
    size_t len = spm__report__get_packed_size(built);
    uint8_t *buf = malloc(len ? len : 1);
    if (buf) {
        spm__report__pack(built, buf);
        spm_history_set_report(r, buf, len);
        free(buf);
    }
    spm_history_touch(c->history, r);
    if (spm_history_write(c->history, 1) != 0)
        spm_log_warn("%s", spm_error_detail());
    return r->report ? r->report : built;
}

void center_record_delivered(spm_center_t *c, uint64_t job)
{
    Spm__JobRecord *r = spm_history_get(c->history, job);
    if (!r)
        return;
    if (!r->delivered) {
        r->delivered = 1;
        spm_history_touch(c->history, r);
    }
    if (r->detached) /* its report carried what it made: nobody else will ask */
        center_free_job(c, job, "its report was delivered");
}

void center_free_job(spm_center_t *c, uint64_t job, const char *why)
{
    Spm__JobRecord *r = spm_history_get(c->history, job);
    if (r && r->freed)
        return;
    size_t n = 0;
    if (spm_idu_discard(c->idu, &job, 1, NULL, 0, &n) != 0)
        return; /* it still runs */
    spm_durable_discarded(c->durable, &job, 1);
    c->discarded += n;
    if (r) {
        r->freed = 1;
        spm_history_touch(c->history, r);
    }
    spm_log_debug("job %llu: %zu SDBs freed (%s)", (unsigned long long)job, n, why);
}

/*  Brings running JOB's record up to date; cancels it when nobody has
    followed it for the abandonment time. */
static void tick_running(spm_center_t *c, uint64_t job, uint64_t now)
{
    spm_idu_job_info_t info;
    Spm__JobRecord *r = spm_history_get(c->history, job);
    if (!r || spm_idu_job_info(c->idu, job, &info) != 0 || info.state != 0)
        return;
    uint64_t unix_now = spm_history_now();
    r->run_us = info.wall_us;
    r->updated_us = unix_now;
    r->committed = info.committed;
    r->known = info.expected > info.issued ? info.expected : info.issued;
    if (!r->start_us && info.since_issue_us) /* when its first SI went out, not this tick */
        r->start_us = unix_now - info.since_issue_us;
    sample(r, spm_history_now() / 1000, info.committed, 0);
    set_opcodes(c, r, job);
    spm_history_touch(c->history, r);
    usage_t *u = spm_hmap_get(c->usage, job);
    watch_t *w = spm_hmap_get(c->watches, job);
    uint64_t seen = u ? u->watched_us : now;
    if (w && w->seen_us > seen)
        seen = w->seen_us;
    if (r->detached || !c->abandon_us || !u || u->abandoned || now - seen <= c->abandon_us)
        return;
    u->abandoned = 1;
    char why[160];
    snprintf(why, sizeof why, "abandoned: no client followed it for %.0f s",
             (double)(now - seen) / 1e6);
    spm_log_info("job %llu (%s) %s; canceled, its blocks are freed", (unsigned long long)job,
                 info.program, why);
    spm_idu_job_fail(c->idu, job, SPM_ECANCELED, why);
}

void center_records_tick(spm_center_t *c, uint64_t now)
{
    if (now - c->last_records_us < TICK_US)
        return;
    c->last_records_us = now;
    uint64_t ids[4096];
    size_t n = spm_idu_jobs(c->idu, ids, 4096);
    for (size_t i = 0; i < n && i < 4096; i++)
        tick_running(c, ids[i], now);
    /* malloc, not calloc: only the records listed are read, and zeroing
       800 KB every tick faulted in some 200 pages at a center's start */
    Spm__JobRecord **all = malloc(MAX_LISTED * sizeof *all);
    size_t k = all ? spm_history_list(c->history, all, MAX_LISTED) : 0;
    uint64_t unix_now = spm_history_now();
    for (size_t i = 0; i < k && i < MAX_LISTED; i++) {
        Spm__JobRecord *r = all[i];
        if (!spm_history_ended(r) || r->freed)
            continue;
        if (r->detached && r->delivered)
            center_free_job(c, r->job, "its report was delivered");
        else if (c->keep_results_us && unix_now - r->end_us > c->keep_results_us)
            center_free_job(c, r->job, "kept for center.keep_results_s");
    }
    free(all);
    if (c->ticks % PRUNE_EVERY == 0)
        spm_history_prune(c->history, unix_now);
    if (spm_history_write(c->history, 0) != 0)
        spm_log_warn("%s", spm_error_detail());
}

/*  Whether R passes the request's filters. */
static int wanted(const Spm__JobsRequest *q, const Spm__JobRecord *r)
{
    return (!q->state[0] || strcmp(q->state, r->state) == 0) && r->submit_us >= q->since_us;
}

/*  JOBS: the history's records (spm jobs), or one with its report (spm
    show), newest first. A record's report goes only to its owner or an
    operator (it holds the job's result). */
void center_on_jobs(spm_center_t *c, spm_msg_t *m)
{
    const Spm__JobsRequest *q = m->env->jobs;
    Spm__JobsReply rep = SPM__JOBS_REPLY__INIT;
    Spm__JobRecord **all = calloc(MAX_LISTED, sizeof *all);
    Spm__Report **reports = calloc(MAX_LISTED, sizeof *reports);
    size_t n = 0;
    if (!all || !reports) {
        rep.status = SPM_ENOMEM;
        rep.error = "out of memory";
    } else if (q->job) {
        Spm__JobRecord *r = spm_history_get(c->history, q->job);
        if (!r) {
            rep.status = SPM_ENOTFOUND;
            rep.error = "no such job (never submitted, or past the history's retention)";
        } else {
            all[n++] = r;
        }
    } else {
        size_t k = spm_history_list(c->history, all, MAX_LISTED);
        for (size_t i = 0; i < k && i < MAX_LISTED; i++)
            if (wanted(q, all[i]))
                all[n++] = all[i];
    }
    for (size_t i = 0; i < n; i++) { /* lists go without reports */
        reports[i] = all[i]->report;
        if (!q->job || center_may(c, m->user, all[i]->job, "read the report of") != 0)
            all[i]->report = NULL;
    }
    rep.jobs = all;
    rep.n_jobs = n;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_JOBS_REPLY;
    env.jobs_reply = &rep;
    center_send_to(c, &m->id, &env, NULL, 0);
    for (size_t i = 0; i < n; i++)
        all[i]->report = reports[i];
    free(all);
    free(reports);
}
