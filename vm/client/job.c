/*  =========================================================================
    job - a session following a job: submit, progress, report, result

    Submits a program (or one of a plugin's) and follows it to its end:
    the progress bar on a terminal, the trace, the report, the result
    bytes; a center that restarted and resumed the job is followed there.
    =========================================================================
*/
#include "vm/client/session_int.h"

#include "base/grow.h"
#include "base/log.h"
#include "vm/client/progress.h"
#include "transport/report.h"
#include "transport/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_AGAIN_US 3000000 /* a watcher says it is still there this often */

static void draw_progress(FILE *out, const Spm__Progress *p)
{
    double el = p->elapsed_us / 1e6;
    double rate = el > 0 ? p->committed / el : 0;
    char bar[SPM_PROGRESS_BAR + 1];
    spm_progress_bar(bar, p->known ? (double)p->committed / (double)p->known : 0);
    fprintf(out, "\r[%s] %llu/%llu SIs  %.0f SI/s  %.1f s  %u IEUs ", bar,
            (unsigned long long)p->committed, (unsigned long long)p->known, rate, el, p->ieus);
    fflush(out);
}

int spm_session_run(spm_session_t *s, const char *program, const void *args, size_t len,
                    void **result, size_t *result_len)
{
    return spm_session_run_plugin(s, 0, program, args, len, result, result_len);
}

int spm_session_run_plugin(spm_session_t *s, spm_sdb_t plugin, const char *program,
                           const void *args, size_t len, void **result, size_t *result_len)
{
    if (result)
        *result = NULL;
    Spm__Submit sub = SPM__SUBMIT__INIT;
    sub.plugin = plugin;
    sub.program = (char *)program;
    sub.args.data = (uint8_t *)args;
    sub.args.len = len;
    sub.priority = s->o.priority;
    sub.trace = s->o.trace != NULL && !s->o.detach;
    sub.detach = s->o.detach != 0;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_SUBMIT;
    env.submit = &sub;
    spm_msg_t m;
    int rc = spm_client_ask(s, &env, SPM__ENVELOPE__BODY_SUBMITTED, 0, &m);
    if (rc != 1)
        return rc;
    uint64_t job = m.env->submitted->job;
    if (!job) {
        rc = m.env->submitted->status ? m.env->submitted->status : SPM_EPROTO;
        spm_error(rc, "%s", m.env->submitted->error);
        spm_msg_close(&m);
        return rc;
    }
    spm_msg_close(&m);
    if (!s->o.detach && !spm_client_embedded(s) &&
        spm_grow(&s->jobs, s->njobs, &s->capjobs, sizeof *s->jobs, 4) == 0)
        s->jobs[s->njobs++] = job;
    if (s->o.detach) {
        s->nmine = 0; /* what it put is the job's now: closing must not discard it */
        if (s->o.json)
            printf("{\"job\": %llu}\n", (unsigned long long)job);
        else
            printf("%llu\n", (unsigned long long)job);
        return 0;
    }
    return spm_session_wait(s, job, result, result_len);
}

int spm_session_text_result(const spm_session_t *s)
{
    return s->text_result;
}

int spm_session_wait(spm_session_t *s, uint64_t job, void **result, size_t *result_len)
{
    if (result)
        *result = NULL;
    Spm__Watch w = SPM__WATCH__INIT;
    w.job = job;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_WATCH;
    env.watch = &w;
    int rc = spm_client_send(s, &env, NULL, 0);
    if (rc != 0)
        return rc;
    int bar = spm_run_opts_bar(&s->o);
    FILE *out = s->o.report ? s->o.report : stdout; /* the text report and the bar */
    int drawn = 0;
    uint64_t last_heard = spm_now_us(), last_watch = last_heard;
    uint64_t patience = spm_client_patience_us(s), timeout = (uint64_t)s->o.timeout_ms * 1000;
    int said = 0; /* that it waits for a silent center longer than --timeout */
    spm_msg_t m;
    spm_trace_t *trace = s->o.trace ? spm_trace_new() : NULL;
    while (!spm_session_interrupted()) {
        if ((rc = spm_client_alive(s)) != 0)
            return rc;
        zmq_pollitem_t item = {s->dealer, 0, ZMQ_POLLIN, 0};
        zmq_poll(&item, 1, 200);
        int r;
        while ((r = spm_wire_recv(s->dealer, 0, 1, &m, NULL)) > 0) {
            if (r != 1)
                continue;
            last_heard = spm_now_us();
            int body = m.env->body_case;
            if (body == SPM__ENVELOPE__BODY_ERROR && m.env->error->status == SPM_ESTRANGER) {
                /* the center restarted and resumed the job: follow it there */
                spm_msg_close(&m);
                if ((rc = spm_client_hello(s)) != 0 ||
                    (rc = spm_client_send(s, &env, NULL, 0)) != 0)
                    return rc;
                last_watch = last_heard = spm_now_us();
                continue;
            }
            if (body == SPM__ENVELOPE__BODY_ERROR) {
                rc = m.env->error->status ? m.env->error->status : SPM_EPROTO;
                spm_error(rc, "job %llu: %s", (unsigned long long)job, m.env->error->message);
                spm_msg_close(&m);
                return rc;
            }
            if (body == SPM__ENVELOPE__BODY_TRACE && trace) {
                spm_trace_unpack(trace, m.env->trace);
            } else if (body == SPM__ENVELOPE__BODY_PROGRESS && bar) {
                draw_progress(out, m.env->progress);
                drawn = 1;
            } else if (body == SPM__ENVELOPE__BODY_REPORT) {
                Spm__Report *rep = m.env->report;
                if (drawn)
                    fprintf(out, "\r\033[K");
                if (s->o.json) /* asked for on stdout: a plugin's result text is left out */
                    spm_report_print(rep, 1, stdout);
                else if (!s->o.quiet)
                    spm_report_print(rep, 0, out);
                fflush(stdout);
                fflush(out);
                rc = rep->status;
                if (trace) {
                    int wrc = spm_trace_write(trace, s->o.trace, rep->program, s->o.sync);
                    spm_trace_destroy(&trace);
                    if (wrc != 0 && rc == 0) {
                        spm_msg_close(&m);
                        return wrc;
                    }
                }
                if (rc == SPM_ECANCELED)
                    spm_error(rc, "job %llu was canceled: %s", (unsigned long long)job, rep->error);
                else if (rc != 0)
                    spm_error(rc, "job %llu failed: %s", (unsigned long long)job, rep->error);
                s->text_result = rep->text_result;
                if (rc == 0 && result && rep->result.len) {
                    *result = malloc(rep->result.len);
                    if (*result) {
                        memcpy(*result, rep->result.data, rep->result.len);
                        *result_len = rep->result.len;
                    }
                }
                spm_msg_close(&m);
                return rc;
            }
            spm_msg_close(&m);
        }
        uint64_t now = spm_now_us();
        if (patience && now - last_heard > patience) {
            s->silent = 1;
            return spm_error(SPM_EUNREACH, "%s: the center stopped answering", s->endpoint);
        }
        if (!said && now - last_heard > timeout) { /* --wait-center: a restart, say */
            said = 1;
            spm_log_warn("the center at %s stopped answering; waiting for it (--wait-center)",
                         s->endpoint);
        }
        if ((now - last_heard > 1000000 && now - last_watch > 1000000) ||
            now - last_watch > WATCH_AGAIN_US) {
            /* Silent for a second (progress comes 5 times a second): ask
               again, so that a restarted center tells us it forgot us.
               And every few seconds anyway: a job nobody watches is
               abandoned (center.abandon_s), so the center must hear that
               its watcher is still there. */
            if ((rc = spm_client_send(s, &env, NULL, 0)) != 0)
                return rc;
            last_watch = now;
        }
    }
    if (drawn)
        fprintf(out, "\n");
    spm_trace_destroy(&trace);
    return spm_error(SPM_ECANCELED, "interrupted");
}

int spm_session_jobs(spm_session_t *s, uint64_t job, const char *state, uint64_t since_us,
                     struct Spm__JobsReply **out)
{
    *out = NULL;
    Spm__JobsRequest q = SPM__JOBS_REQUEST__INIT;
    q.job = job;
    q.state = (char *)(state ? state : "");
    q.since_us = since_us;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_JOBS;
    env.jobs = &q;
    spm_msg_t m;
    int rc = spm_client_ask(s, &env, SPM__ENVELOPE__BODY_JOBS_REPLY, 1, &m);
    if (rc != 1)
        return rc;
    Spm__JobsReply *r = m.env->jobs_reply;
    if (r->status != 0) {
        rc = job ? spm_error(r->status, "job %llu: %s", (unsigned long long)job, r->error)
                 : spm_error(r->status, "%s", r->error);
        spm_msg_close(&m);
        return rc;
    }
    /* A copy of its own, to outlive the message. */
    size_t len = spm__jobs_reply__get_packed_size(r);
    uint8_t *buf = malloc(len ? len : 1);
    if (buf) {
        spm__jobs_reply__pack(r, buf);
        *out = spm__jobs_reply__unpack(NULL, len, buf);
        free(buf);
    }
    spm_msg_close(&m);
    return *out ? 0 : spm_error(SPM_ENOMEM, "out of memory");
}
