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

/* ------------------------------------------------------------- reports */

/*  Sends watcher W its job's report, with what the job cost the center
    once it ended. */
static void send_report(spm_center_t *c, watch_t *w)
{
    Spm__Report *r = spm_report_build(c->idu, w->job);
    if (!r)
        return;
    usage_t *u = spm_hmap_remove(c->usage, w->job);
    if (u && u->ended) {
        r->center_in = u->in;
        r->center_out = u->out;
        r->copies = u->copies;
    }
    free(u);
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_REPORT;
    env.report = r;
    center_send_to(c, &w->id, &env, NULL, 0);
    spm_report_free(r);
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

/*  Sends JOB's report to its watcher, if it has one, and forgets the job. */
static void deliver_report(spm_center_t *c, uint64_t job)
{
    watch_t *w = spm_hmap_remove(c->watches, job);
    if (!w)
        return;
    spm_trace_t *t = spm_hmap_remove(c->traces, job);
    if (t)
        spm_trace_map_clocks(t, clock_of, c);
    for (size_t from = 0; t && from < spm_trace_count(t); from += 4096) {
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
    spm_trace_destroy(&t);
    send_report(c, w);
    zmq_msg_close(&w->id);
    free(w);
    spm_idu_job_info_t info;
    if (c->metrics && spm_idu_job_info(c->idu, job, &info) == 0)
        spm_metrics_job_end(c->metrics, &info);
    spm_idu_job_forget(c->idu, job);
    spm_durable_reported(c->durable, c->idu, job);
}

/*  IDU callback: JOB ended. */
void center_job_done(void *arg, uint64_t job)
{
    spm_center_t *c = arg;
    record_usage(c, job);
    spm_idu_job_info_t info;
    if (spm_idu_job_info(c->idu, job, &info) == 0) {
        spm_log_info("job %llu (%s) %s after %.3f s", (unsigned long long)job, info.program,
                     info.state == 1 ? "done" : "failed", info.wall_us / 1e6);
        if (info.state == 2)
            spm_status_failure(&c->status, "job %llu (%s) failed: %s", (unsigned long long)job,
                               info.program, info.error ? info.error : "");
    }
    spm_durable_flush(c->durable); /* the report must not tell of events a crash would lose */
    deliver_report(c, job);
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
        *u = (usage_t){center_cpu_us(), c->wire.bytes_in, c->wire.bytes_out, center_copies_done(c),
                       0};
    spm_error(0, "%s", "");
    char scope[SPM_SCOPE_LEN] = "";
    if (s->plugin && (r.status = spm_plugins_allowed(c->plugins, c->security, m->user)) == 0)
        r.status = spm_plugins_load(c->store, s->plugin, scope);
    if (s->plugin && r.status == 0 && !spm_program_find_in(scope, s->program)) {
        char names[200];
        size_t n = spm_program_names_in(scope, names, sizeof names);
        r.status = spm_error(SPM_ENOTFOUND, "the plugin has no program '%s' (%s%s)", s->program,
                             n ? "it has: " : "it registers none", names);
    }
    if (r.status == 0)
        r.status = spm_idu_submit_plugin(c->idu, s->program, scope, s->plugin, s->args.data,
                                         s->args.len, s->priority, &job);
    r.job = job;
    if (r.status != 0)
        r.error = (char *)spm_error_detail();
    spm_trace_t *t = job && s->trace ? spm_trace_new() : NULL;
    if (t)
        spm_hmap_put(c->traces, job, t);
    if (!job || !u || spm_hmap_put(c->usage, job, u) != 0)
        free(u);
    if (r.status != 0 && s->plugin)
        spm_log_info("a plugin's job was refused: %s", spm_error_detail());
    if (job) {
        spm_log_info("job %llu (%s%s) submitted", (unsigned long long)job, s->program,
                     s->plugin ? ", a plugin" : "");
        spm_durable_flush(c->durable); /* the client learns of it: a restart must too */
    }
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_SUBMITTED;
    env.submitted = &r;
    center_send_to(c, &m->id, &env, NULL, 0);
}

/*  WATCH: the sender follows a job (one watcher per job: the newest). It
    gets progress, or the report at once when the job has ended. */
void center_on_watch(spm_center_t *c, spm_msg_t *m)
{
    uint64_t job = m->env->watch->job;
    spm_idu_job_info_t info;
    if (spm_idu_job_info(c->idu, job, &info) != 0) {
        center_send_error(c, &m->id, SPM_ENOTFOUND, "no such job");
        return;
    }
    watch_t *w = calloc(1, sizeof *w);
    if (!w)
        return;
    w->job = job;
    zmq_msg_init(&w->id);
    zmq_msg_copy(&w->id, &m->id);
    watch_t *old = spm_hmap_get(c->watches, job);
    if (old) { /* one watcher per job: the newest */
        zmq_msg_close(&old->id);
        free(old);
    }
    spm_hmap_put(c->watches, job, w);
    if (info.state != 0)
        deliver_report(c, job);
    else
        center_send_progress(c, w);
}

/*  Brings the center's own counters in the status up to date. */
void center_update_status(spm_center_t *c)
{
    c->status.uptime_us = spm_now_us() - c->started_us;
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
    if (spm_idu_job_info(c->idu, job, &info) != 0) {
        ack.status = SPM_ENOTFOUND;
        ack.error = "no such job";
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
    ack.status = spm_idu_discard(c->idu, d->jobs, d->n_jobs, d->sdbs, d->n_sdbs, &n);
    if (ack.status != 0)
        ack.error = (char *)spm_error_detail();
    else
        spm_durable_discarded(c->durable, d->jobs, d->n_jobs);
    c->discarded += n;
    spm_log_debug("discarded %zu SDBs of %zu jobs and %zu puts", n, d->n_jobs, d->n_sdbs);
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    center_send_to(c, &m->id, &env, NULL, 0);
}
