/*  =========================================================================
    clients - the center's side of its clients: SUBMIT, WATCH, STATUS,
    CANCEL and DISCARD, and what watchers are sent (progress, traces, the
    report once a job ends) with what each job cost the center

    Part of the center (vm/center/center.h).
    =========================================================================
*/
#include "base/log.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "transport/trace.h"
#include "vm/center/center_int.h"
#include "vm/center/report_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- reports */

/*  Sends report R to the client routed by ID. */
static void send_report(spm_center_t *c, zmq_msg_t *id, Spm__Report *r)
{
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_REPORT;
    env.report = r;
    center_send_to(c, id, &env, NULL, 0);
}

/*  Sends watcher W its job's progress. */
void center_send_progress(spm_center_t *c, watch_t *w)
{
    spm_idu_job_info_t info;
    if (spm_idu_job_info(c->idu, w->job, &info) != 0)
        return;
    Spm__Progress p = SPM__PROGRESS__INIT;
    p.job = w->job;
    p.committed = info.committed;
    p.known = info.expected > info.issued ? info.expected : info.issued;
    p.ieus = spm_idu_ieus(c->idu);
    p.elapsed_us = info.wall_us;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PROGRESS;
    env.progress = &p;
    center_send_to(c, &w->id, &env, NULL, 0);
}

/*  Copies the data plane made so far after node deaths. */
uint64_t center_copies_done(spm_center_t *c)
{
    spm_dataplane_stats_t d;
    spm_dataplane_stats(c->dp, &d);
    return d.copies_done;
}

/*  JOB ended: what it cost from its submit to now. */
static void record_usage(spm_center_t *c, uint64_t job)
{
    usage_t *u = spm_hmap_get(c->usage, job);
    if (!u || u->ended)
        return;
    u->cpu_us = center_cpu_us() - u->cpu_us;
    u->in = c->wire.bytes_in - u->in;
    u->out = c->wire.bytes_out - u->out;
    u->copies = center_copies_done(c) - u->copies;
    u->ended = 1;
    spm_idu_job_set_cpu(c->idu, job, u->cpu_us);
}

/*  Clock offset of IEU, for spm_trace_map_clocks. */
static int64_t clock_of(void *arg, uint32_t ieu)
{
    spm_center_t *c = arg;
    peer_t *p = spm_hmap_get(c->ieus, (uint64_t)ieu + 1);
    return p ? p->clock_offset : 0;
}

/*  For the dashboard (spm_jobapi_copy_fn): a copy of running JOB's trace,
    its clocks mapped to the center's and a note that it is a copy, with
    its program's name in PROGRAM; NULL when JOB runs without a trace. */
spm_trace_t *center_trace_copy(void *arg, uint64_t job, char *program, size_t size)
{
    spm_center_t *c = arg;
    spm_trace_t *t = spm_hmap_get(c->traces, job), *copy = NULL;
    spm_idu_job_info_t info;
    if (!t || spm_idu_job_info(c->idu, job, &info) != 0 || info.state != 0 ||
        !(copy = spm_trace_copy(t)))
        return NULL;
    spm_trace_map_clocks(copy, clock_of, c);
    snprintf(program, size, "%s", info.program);
    char note[512];
    const char *was = spm_trace_note(t);
    snprintf(note, sizeof note, "a copy made while the job ran, %.3f s into it%s%s",
             (double)info.wall_us / 1e6, *was ? "; " : "", was);
    spm_trace_set_note(copy, note);
    return copy;
}

/*  With --http: a trace for every job a restart resumed, which has none
    (a trace is not journaled). Its note says what it lacks. */
void center_trace_resumed(spm_center_t *c)
{
    uint64_t ids[4096];
    size_t n = c->jobapi ? spm_idu_jobs(c->idu, ids, 4096) : 0;
    for (size_t i = 0; i < n && i < 4096; i++) {
        spm_idu_job_info_t info;
        if (spm_idu_job_info(c->idu, ids[i], &info) != 0 || info.state != 0 ||
            spm_hmap_get(c->traces, ids[i]))
            continue;
        spm_trace_t *t = spm_trace_new();
        if (t)
            spm_trace_set_limit(t, SPM_JOBAPI_TRACE_EVENTS);
        if (t && (spm_trace_set_note(t, "traced from the center's restart: the SIs it ran before "
                                        "the restart are not in it") != 0 ||
                  spm_hmap_put(c->traces, ids[i], t) != 0))
            spm_trace_destroy(&t);
    }
}

/*  Sends JOB's trace and REPORT to its watcher, if it has one. Returns
    whether it had one. */
static int deliver_report(spm_center_t *c, uint64_t job, Spm__Report *report)
{
    watch_t *w = spm_hmap_remove(c->watches, job);
    spm_trace_t *t = spm_hmap_remove(c->traces, job);
    if (t && (w || c->jobapi))
        spm_trace_map_clocks(t, clock_of, c);
    for (size_t from = 0; w && t && from < spm_trace_count(t); from += 4096) {
        Spm__TraceEvents te;
        if (!spm_trace_pack(t, from, 4096, &te))
            break;
        te.job = job;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_TRACE;
        env.trace = &te;
        center_send_to(c, &w->id, &env, NULL, 0);
        spm_trace_msg_free(&te);
    }
    spm_idu_job_info_t info;
    if (t && c->jobapi) /* for the job's page on the dashboard */
        spm_jobapi_keep_trace(c->jobapi, job,
                              spm_idu_job_info(c->idu, job, &info) == 0 ? info.program : "", &t);
    spm_trace_destroy(&t);
    if (!w)
        return 0;
    if (report)
        send_report(c, &w->id, report);
    zmq_msg_close(&w->id);
    free(w);
    return report != NULL;
}

/*  IDU callback: JOB ended. Its end and report go into its record (unless
    it ended before a restart: then it was logged, counted and recorded
    then), its watcher gets the report, and the IDU forgets it: from here
    the record answers for it. Its blocks stay for its client (see
    vm/center/records.c). */
void center_job_done(void *arg, uint64_t job)
{
    spm_center_t *c = arg;
    record_usage(c, job);
    spm_idu_job_info_t info;
    if (spm_idu_job_info(c->idu, job, &info) != 0)
        return;
    Spm__Report *built = spm_report_build(c->idu, job);
    usage_t *u = spm_hmap_remove(c->usage, job);
    if (built && u && u->ended) {
        built->center_in = u->in;
        built->center_out = u->out;
        built->copies = u->copies;
    }
    spm_durable_flush(c->durable); /* the report must not tell of events a crash would lose */
    int again = 0;
    Spm__Report *report = center_record_end(c, job, &info, built, &again);
    if (!again) {
        const char *state = info.state == 1 ? "done" : info.state == 3 ? "canceled" : "failed";
        if (info.state == 2) /* the log says why, as the client is told */
            spm_log_info("job %llu (%s) failed after %.3f s: %s", (unsigned long long)job,
                         info.program, info.wall_us / 1e6, info.error ? info.error : "");
        else
            spm_log_info("job %llu (%s) %s after %.3f s", (unsigned long long)job, info.program,
                         state, info.wall_us / 1e6);
        if (info.state == 2)
            spm_status_failure(&c->status, "job %llu (%s) failed: %s", (unsigned long long)job,
                               info.program, info.error ? info.error : "");
        spm_metrics_job_end(c->metrics, &info);
    }
    spm_sfhosts_ended(c->sfhosts, job);
    int delivered = deliver_report(c, job, report);
    spm_report_free(built);
    int abandoned = u && u->abandoned;
    free(u);
    spm_idu_job_forget(c->idu, job);
    spm_durable_reported(c->durable, c->idu, job);
    if (delivered)
        center_record_delivered(c, job);
    if (abandoned) /* nobody will fetch what it made */
        center_free_job(c, job, "abandoned");
}

/*  SUBMIT: loads the job's plugin when it comes with one (if the policy
    lets its sender), starts the job in the IDU and answers SUBMITTED. What
    the job costs the center counts from here, and so does its trace when
    one was asked for. */
void center_on_submit(spm_center_t *c, spm_msg_t *m)
{
    Spm__Submit *s = m->env->submit;
    Spm__Submitted r = SPM__SUBMITTED__INIT;
    usage_t *u = malloc(sizeof *u);
    uint64_t job = 0;
    if (u)
        *u = (usage_t){.cpu_us = center_cpu_us(),
                       .in = c->wire.bytes_in,
                       .out = c->wire.bytes_out,
                       .copies = center_copies_done(c),
                       .watched_us = spm_now_us()};
    spm_error(0, "%s", "");
    char scope[SPM_SCOPE_LEN] = "";
    if (s->plugin && (r.status = spm_plugins_allowed(c->plugins, c->security, m->user)) == 0)
        r.status = spm_plugins_verify(c->store, s->plugin, scope);
    if (r.status == 0)
        r.status = spm_idu_submit_plugin(c->idu, s->program, scope, s->plugin, s->args.data,
                                         s->args.len, s->priority, &job);
    r.job = job;
    if (r.status != 0)
        r.error = (char *)spm_error_detail();
    /* With --http every job's trace is recorded for its page, bounded
       unless its client asked for it. */
    spm_trace_t *t = job && (s->trace || c->jobapi) ? spm_trace_new() : NULL;
    if (t && !s->trace)
        spm_trace_set_limit(t, SPM_JOBAPI_TRACE_EVENTS);
    if (t && spm_hmap_put(c->traces, job, t) != 0)
        spm_trace_destroy(&t);
    if (!job || !u || spm_hmap_put(c->usage, job, u) != 0)
        free(u);
    if (r.status != 0 && s->plugin)
        spm_log_info("a plugin's job was refused: %s", spm_error_detail());
    if (job) {
        spm_log_info("job %llu (%s%s) submitted", (unsigned long long)job, s->program,
                     s->plugin ? ", a plugin" : "");
        spm_durable_flush(c->durable); /* the client learns of it: a restart must too */
        center_record_submit(c, job, m);
    }
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_SUBMITTED;
    env.submitted = &r;
    center_send_to(c, &m->id, &env, NULL, 0);
}

/*  WATCH: the sender follows a job (one watcher per job: the newest). It
    gets progress, or the report at once when the job has ended (from its
    record, as often as it asks). A client repeats its WATCH every few
    seconds: a job nobody watches is abandoned (vm/center/records.c). */
void center_on_watch(spm_center_t *c, spm_msg_t *m)
{
    uint64_t job = m->env->watch->job;
    if (center_may(c, m->user, job, "watch") != 0) {
        center_send_error(c, &m->id, SPM_EDENIED, spm_error_detail());
        return;
    }
    spm_idu_job_info_t info;
    if (spm_idu_job_info(c->idu, job, &info) != 0) {
        Spm__JobRecord *r = spm_history_get(c->history, job);
        if (r && spm_history_ended(r) && r->report) {
            send_report(c, &m->id, r->report);
            center_record_delivered(c, job);
        } else {
            center_send_error(c, &m->id, SPM_ENOTFOUND,
                              r ? "its record keeps no report"
                                : "no such job (never submitted, or past the history's retention)");
        }
        return;
    }
    uint64_t now = spm_now_us();
    usage_t *u = spm_hmap_get(c->usage, job);
    if (u)
        u->watched_us = now;
    watch_t *w = spm_hmap_get(c->watches, job);
    if (!w || zmq_msg_size(&w->id) != zmq_msg_size(&m->id) ||
        memcmp(zmq_msg_data(&w->id), zmq_msg_data(&m->id), zmq_msg_size(&m->id)) != 0) {
        watch_t *nw = calloc(1, sizeof *nw);
        if (!nw)
            return;
        nw->job = job;
        zmq_msg_init(&nw->id);
        zmq_msg_copy(&nw->id, &m->id);
        if (w) { /* one watcher per job: the newest */
            zmq_msg_close(&w->id);
            free(w);
        }
        spm_hmap_put(c->watches, job, nw);
        w = nw;
    }
    w->seen_us = now;
    center_send_progress(c, w);
}

/*  Brings the center's own counters in the status up to date. */
void center_update_status(spm_center_t *c)
{
    c->status.now_us = spm_now_us();
    c->status.uptime_us = c->status.now_us - c->started_us;
    c->status.refused = spm_security_refused(c->security);
    c->status.dropped = c->wire.dropped;
    c->status.gc_versions = c->gc_versions;
    c->status.discarded = c->discarded;
    c->status.agents = c->next_node;
    if (spm_store_usage(c->store, &c->status.store_blocks, &c->status.store_bytes) != 0)
        spm_log_warn("%s", spm_error_detail());
    c->status.center_in = c->wire.bytes_in;
    c->status.center_out = c->wire.bytes_out;
}

/*  STATUS: answers with the status, as JSON and as text (spm status). */
void center_on_status(spm_center_t *c, spm_msg_t *m)
{
    center_update_status(c);
    char *json = NULL, *text = NULL;
    Spm__StatusReply r = SPM__STATUS_REPLY__INIT;
    int rc = spm_status_build(c->idu, c->dp, &c->status, &json, &text);
    r.json = rc == 0 ? json : "{}";
    r.text = rc == 0 ? text : "status unavailable: out of memory\n";
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_STATUS_REPLY;
    env.status_reply = &r;
    center_send_to(c, &m->id, &env, NULL, 0);
    free(json);
    free(text);
}

/*  CANCEL: fails a running job as canceled, and answers ACK. */
void center_on_cancel(spm_center_t *c, spm_msg_t *m)
{
    uint64_t job = m->env->cancel->job;
    spm_idu_job_info_t info;
    Spm__Ack ack = SPM__ACK__INIT;
    if ((ack.status = center_may(c, m->user, job, "cancel")) != 0) {
        ack.error = (char *)spm_error_detail();
        spm_log_warn("refused a cancel of job %llu: %s", (unsigned long long)job, ack.error);
    } else if (spm_idu_job_info(c->idu, job, &info) != 0) {
        ack.status = SPM_ENOTFOUND;
        ack.error = spm_history_get(c->history, job) ? "the job has ended already" : "no such job";
    } else if (info.state != 0) {
        ack.status = SPM_EINVAL;
        ack.error = "the job has ended already";
    } else {
        spm_idu_job_fail(c->idu, job, SPM_ECANCELED, "canceled by a client");
    }
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    center_send_to(c, &m->id, &env, NULL, 0);
}

/*  DISCARD: a client is done with the blocks of its ended jobs and with
    the blocks it put. They are deleted with the turn's garbage. */
void center_on_discard(spm_center_t *c, spm_msg_t *m)
{
    Spm__Discard *d = m->env->discard;
    Spm__Ack ack = SPM__ACK__INIT;
    size_t n = 0;
    /* Refused whole when one is another key's: a client that names what
       is not its own is not one to take half an answer from. */
    for (size_t i = 0; ack.status == 0 && i < d->n_jobs; i++)
        ack.status = center_may(c, m->user, d->jobs[i], "discard");
    for (size_t i = 0; ack.status == 0 && i < d->n_sdbs; i++)
        ack.status = center_may_sdb(c, m->user, d->sdbs[i]);
    if (ack.status != 0)
        spm_log_warn("refused a discard: %s", spm_error_detail());
    else
        ack.status = spm_idu_discard(c->idu, d->jobs, d->n_jobs, d->sdbs, d->n_sdbs, &n);
    if (ack.status != 0) {
        ack.error = (char *)spm_error_detail();
    } else {
        spm_durable_discarded(c->durable, d->jobs, d->n_jobs);
        for (size_t i = 0; i < d->n_jobs; i++) {
            Spm__JobRecord *r = spm_history_get(c->history, d->jobs[i]);
            if (r && !r->freed) {
                r->freed = 1;
                spm_history_touch(c->history, r);
            }
        }
    }
    c->discarded += n;
    spm_log_debug("discarded %zu SDBs of %zu jobs and %zu puts", n, d->n_jobs, d->n_sdbs);
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    center_send_to(c, &m->id, &env, NULL, 0);
}
