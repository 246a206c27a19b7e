/*  =========================================================================
    jobapi - the dashboard's jobs, answered on the HTTP server's thread

    Why handlers rather than published texts: a page per job for every job
    of the history would cost the loop a text per job per tick, nearly all
    for nobody. A handler builds the one asked for, on the server's thread,
    from the records the loop writes anyway. It shares nothing with the
    loop but the history's LMDB environment (read transactions of its own)
    and the kept traces below, whose lock the loop only tries.
    =========================================================================
*/
#include "vm/center/jobapi.h"
#include "base/clock.h"
#include "base/json.h"
#include "spm/spm.h"
#include "transport/report.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIST_DEFAULT 500
#define LIST_MAX 5000

/*  An ended job's trace. The server thread may print it while the loop
    replaces it in the list: then it is ORPHANED and whoever lets go of it
    last frees it. */
typedef struct {
    uint64_t job;
    char program[64];
    spm_trace_t *t;
    int refs;     /* the server thread is printing it */
    int orphaned; /* no longer in the list */
} kept_t;

struct spm_jobapi {
    spm_history_t *h;
    pthread_mutex_t lock;            /* guards kept; the loop only tries it */
    kept_t *kept[SPM_JOBAPI_TRACES]; /* ring of the last ended jobs' traces */
    size_t next;                     /* the slot the next one takes */
    /* A running job's trace: the server thread asks, the loop copies.
       WANT, UNTRACED, LIVE and LIVE_US are under the lock. */
    pthread_cond_t answered; /* the loop answered a request */
    uint64_t want;           /* the job whose copy the server thread waits for (0: none) */
    uint64_t untraced;       /* the loop's answer: this job runs without a trace */
    kept_t *live;            /* the last copy of a running job's trace */
    uint64_t live_us;        /* when the loop made it (spm_now_us) */
    uint64_t copied_us;      /* the loop's own: when it last made a copy */
};

static void kept_free(kept_t *k)
{
    if (k) {
        spm_trace_destroy(&k->t);
        free(k);
    }
}

void spm_jobapi_keep_trace(spm_jobapi_t *self, uint64_t job, const char *program, spm_trace_t **t)
{
    kept_t *k = calloc(1, sizeof *k), *old = NULL;
    if (!k || pthread_mutex_trylock(&self->lock) != 0) {
        free(k);
        spm_trace_destroy(t);
        return;
    }
    k->job = job;
    snprintf(k->program, sizeof k->program, "%s", program ? program : "");
    k->t = *t;
    *t = NULL;
    old = self->kept[self->next];
    self->kept[self->next] = k;
    self->next = (self->next + 1) % SPM_JOBAPI_TRACES;
    if (old && old->refs) {
        old->orphaned = 1;
        old = NULL;
    }
    pthread_mutex_unlock(&self->lock);
    kept_free(old); /* outside the lock: a large trace takes a while to free */
}

/*  JOB's kept trace with a reference taken (spm_jobapi_release), or NULL. */
static kept_t *take(spm_jobapi_t *self, uint64_t job)
{
    kept_t *k = NULL;
    pthread_mutex_lock(&self->lock);
    for (size_t i = 0; i < SPM_JOBAPI_TRACES && !k; i++)
        if (self->kept[i] && self->kept[i]->job == job)
            k = self->kept[i];
    if (k)
        k->refs++;
    pthread_mutex_unlock(&self->lock);
    return k;
}

static void release(spm_jobapi_t *self, kept_t *k)
{
    pthread_mutex_lock(&self->lock);
    int last = --k->refs == 0 && k->orphaned;
    pthread_mutex_unlock(&self->lock);
    if (last)
        kept_free(k);
}

/*  A copy of running JOB's trace made less than SPM_JOBAPI_COPY_US before
    the request or after it, with a reference taken (release), or NULL
    with *CODE: 404 when the loop says JOB runs without a trace, 503 when
    no copy came within SPM_JOBAPI_TRACE_WAIT_S. The lock is let go while
    it waits. */
static kept_t *take_live(spm_jobapi_t *self, uint64_t job, unsigned *code)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += SPM_JOBAPI_TRACE_WAIT_S;
    kept_t *k = NULL;
    int rc = 0;
    pthread_mutex_lock(&self->lock);
    uint64_t asked = spm_now_us();
    if (self->untraced == job)
        self->untraced = 0; /* an answer to an earlier request */
    for (;;) {
        kept_t *l = self->live;
        if (l && l->job == job && self->live_us + SPM_JOBAPI_COPY_US > asked) {
            k = l;
            k->refs++;
            break;
        }
        if (self->untraced == job) {
            *code = 404;
            break;
        }
        if (rc == ETIMEDOUT) {
            *code = 503;
            break;
        }
        self->want = job;
        rc = pthread_cond_timedwait(&self->answered, &self->lock, &deadline);
    }
    if (self->want == job)
        self->want = 0;
    pthread_mutex_unlock(&self->lock);
    return k;
}

void spm_jobapi_turn(spm_jobapi_t *self, uint64_t now_us, spm_jobapi_copy_fn *copy, void *arg)
{
    if (self->copied_us && now_us - self->copied_us < SPM_JOBAPI_COPY_US)
        return;
    if (pthread_mutex_trylock(&self->lock) != 0)
        return;
    uint64_t job = self->want;
    pthread_mutex_unlock(&self->lock);
    kept_t *k = job ? calloc(1, sizeof *k) : NULL, *old = NULL;
    if (!k)
        return;
    k->job = job;
    k->t = copy(arg, job, k->program, sizeof k->program); /* outside the lock: it takes a while */
    self->copied_us = now_us;
    if (pthread_mutex_trylock(&self->lock) != 0) {
        kept_free(k);
        return;
    }
    if (k->t) {
        old = self->live;
        self->live = k;
        self->live_us = now_us;
        k = NULL;
        if (old && old->refs) {
            old->orphaned = 1;
            old = NULL;
        }
    } else {
        self->untraced = job;
    }
    if (self->want == job)
        self->want = 0;
    pthread_cond_broadcast(&self->answered);
    pthread_mutex_unlock(&self->lock);
    kept_free(old);
    kept_free(k);
}

/*  Whether JOB's trace is kept (without a reference: the answer may be
    out of date by the time it is read, which only the page's text sees). */
static int trace_kept(spm_jobapi_t *self, uint64_t job, size_t *events, size_t *dropped)
{
    kept_t *k = take(self, job);
    if (!k)
        return 0;
    *events = spm_trace_count(k->t);
    *dropped = spm_trace_dropped(k->t);
    release(self, k);
    return 1;
}

/*  A text answer: CODE with the line WHY. */
static int say(spm_http_answer_t *out, unsigned code, const char *why)
{
    out->code = code;
    out->type = SPM_HTTP_TEXT;
    out->len = strlen(why);
    out->body = strdup(why);
    return out->body ? 0 : -1;
}

/*  Hands the memory stream's text (F over *BUF) to OUT as TYPE. */
static int answer_stream(FILE *f, char **buf, size_t *len, const char *type, spm_http_answer_t *out)
{
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(*buf);
        return -1;
    }
    out->code = 200;
    out->type = type;
    out->body = *buf;
    out->len = *len;
    return 0;
}

static const char *NO_RECORDS =
    "this center keeps no job records another thread can read (it runs without a journal)\n";

/*  The fields of the history's table, for /api/jobs and a job's page. A
    running job's time is that of its record (up to a second old) plus
    the time since the record was brought up to date. */
static void print_summary(FILE *f, const Spm__JobRecord *r)
{
    uint64_t now = spm_history_now(), run_us = r->run_us;
    if (strcmp(r->state, "running") == 0 && r->updated_us && now > r->updated_us)
        run_us += now - r->updated_us;
    fprintf(f, "{\"job\": %llu, \"program\": ", (unsigned long long)r->job);
    spm_json_string(f, r->program);
    fprintf(f, ", \"state\": ");
    spm_json_string(f, r->state);
    fprintf(f, ", \"error\": ");
    spm_json_string(f, r->error);
    fprintf(f, ", \"priority\": %d, \"owner\": ", r->priority);
    spm_json_string(f, r->owner);
    fprintf(f,
            ", \"submit_ms\": %llu, \"start_ms\": %llu, \"end_ms\": %llu, \"run_s\": %.3f, "
            "\"committed\": %llu, \"known\": %llu, \"restarts\": %u, \"freed\": %s",
            (unsigned long long)(r->submit_us / 1000), (unsigned long long)(r->start_us / 1000),
            (unsigned long long)(r->end_us / 1000), run_us / 1e6, (unsigned long long)r->committed,
            (unsigned long long)r->known, r->restarts, r->freed ? "true" : "false");
}

typedef struct {
    FILE *f;
    long n;
} list_t;

static void list_one(void *arg, const Spm__JobRecord *r)
{
    list_t *l = arg;
    fputs(l->n++ ? ",\n" : "\n", l->f);
    print_summary(l->f, r);
    fputc('}', l->f);
}

static int on_jobs(void *arg, const char *path, void *conn, spm_http_answer_t *out)
{
    spm_jobapi_t *self = arg;
    if (strcmp(path, "/api/jobs") != 0)
        return -1;
    const char *q = spm_http_query(conn, "limit");
    long limit = q ? atol(q) : LIST_DEFAULT;
    if (limit <= 0 || limit > LIST_MAX)
        limit = limit <= 0 ? LIST_DEFAULT : LIST_MAX;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return -1;
    list_t l = {f, 0};
    fputs("{\"jobs\": [", f);
    if (spm_history_read_each(self->h, (size_t)limit, list_one, &l) < 0) {
        fclose(f);
        free(buf);
        return say(out, 404, NO_RECORDS);
    }
    fputs("]}\n", f);
    return answer_stream(f, &buf, &len, SPM_HTTP_JSON, out);
}

/*  The page of record R: its summary, the center's clock (Unix ms), progress, opcodes, events,
   report (never its result: that is its owner's) and what of its trace is kept. */
static void print_job(spm_jobapi_t *self, FILE *f, const Spm__JobRecord *r)
{
    print_summary(f, r);
    fprintf(f, ", \"now_ms\": %llu, \"progress\": [",
            (unsigned long long)(spm_history_now() / 1000));
    for (size_t i = 0; i < r->n_progress_ms && i < r->n_progress_sis; i++)
        fprintf(f, "%s[%llu, %llu]", i ? ", " : "", (unsigned long long)r->progress_ms[i],
                (unsigned long long)r->progress_sis[i]);
    /* The report's figures are the final ones; the record's, those of the
       last second while it ran. */
    size_t nops = r->report ? r->report->n_opcodes : r->n_opcodes;
    Spm__OpcodeReport **ops = r->report ? r->report->opcodes : r->opcodes;
    fprintf(f, "], \"opcodes\": [");
    for (size_t i = 0; i < nops; i++) {
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        spm_json_string(f, ops[i]->name);
        fprintf(f, ", \"sis\": %llu, \"busy_s\": %.6f, \"wait_s\": %.6f}",
                (unsigned long long)ops[i]->sis, ops[i]->busy_us / 1e6, ops[i]->wait_us / 1e6);
    }
    fprintf(f, "], \"events\": [");
    for (size_t i = 0; i < r->n_events; i++) {
        fprintf(f, "%s{\"at_ms\": %llu, \"text\": ", i ? ", " : "",
                (unsigned long long)r->events[i]->at_ms);
        spm_json_string(f, r->events[i]->text);
        fputc('}', f);
    }
    fprintf(f, "], \"events_dropped\": %u, \"reissued\": %llu, \"report\": ", r->events_dropped,
            (unsigned long long)(r->report ? r->report->reissued : 0));
    if (r->report) {
        spm_report_print(r->report, 1, f);
        char *text = NULL;
        size_t tlen = 0;
        FILE *t = open_memstream(&text, &tlen);
        if (t) {
            spm_report_print(r->report, 0, t);
            fclose(t);
        }
        fprintf(f, ", \"report_text\": ");
        spm_json_string(f, text ? text : "");
        free(text);
    } else {
        fprintf(f, "null, \"report_text\": null");
    }
    size_t events = 0, dropped = 0;
    const char *trace = trace_kept(self, r->job, &events, &dropped) ? "kept"
                        : strcmp(r->state, "running") == 0          ? "running"
                                                                    : "gone";
    fprintf(f, ", \"trace\": \"%s\", \"trace_events\": %zu, \"trace_dropped\": %zu}\n", trace,
            events, dropped);
}

static int on_job(void *arg, const char *path, void *conn, spm_http_answer_t *out)
{
    (void)conn;
    spm_jobapi_t *self = arg;
    const char *p = path + strlen("/api/job/");
    char *end;
    unsigned long long job = strtoull(p, &end, 10);
    if (end == p || !job || (*end && strcmp(end, "/trace") != 0))
        return say(out, 404, "no such path: /api/job/N or /api/job/N/trace\n");
    if (*end) { /* the trace */
        unsigned code = 0;
        kept_t *k = take(self, job);
        if (!k)
            k = take_live(self, job, &code);
        if (!k && code == 404) /* it may have ended meanwhile */
            k = take(self, job);
        if (!k && code == 503)
            return say(out, 503,
                       "the center's loop made no copy of this running job's trace within 3 s; "
                       "try again\n");
        if (!k)
            return say(out, 404,
                       "no trace of this job is kept: the center keeps those of its running jobs "
                       "and of the last ended jobs since it started\n");
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f)
            spm_trace_print(k->t, f, k->program);
        release(self, k);
        return f ? answer_stream(f, &buf, &len, SPM_HTTP_JSON, out) : -1;
    }
    Spm__JobRecord *r = spm_history_read(self->h, job);
    if (!r) {
        char why[160];
        snprintf(why, sizeof why,
                 "job %llu: no record (never submitted, or past the history's retention)\n", job);
        return say(out, 404, spm_history_read_each(self->h, 0, NULL, NULL) < 0 ? NO_RECORDS : why);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f)
        print_job(self, f, r);
    spm__job_record__free_unpacked(r, NULL);
    return f ? answer_stream(f, &buf, &len, SPM_HTTP_JSON, out) : -1;
}

spm_jobapi_t *spm_jobapi_new(spm_http_t *http, spm_history_t *h, int *rc)
{
    spm_jobapi_t *self = calloc(1, sizeof *self);
    if (!self) {
        *rc = SPM_ENOMEM;
        return NULL;
    }
    self->h = h;
    pthread_mutex_init(&self->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* the deadlines of take_live */
    pthread_cond_init(&self->answered, &attr);
    pthread_condattr_destroy(&attr);
    if ((*rc = spm_http_handle(http, "/api/jobs", on_jobs, self)) != 0 ||
        (*rc = spm_http_handle(http, "/api/job/", on_job, self)) != 0) {
        spm_jobapi_destroy(&self);
        return NULL;
    }
    return self;
}

void spm_jobapi_destroy(spm_jobapi_t **self_p)
{
    spm_jobapi_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < SPM_JOBAPI_TRACES; i++)
        kept_free(self->kept[i]);
    kept_free(self->live);
    pthread_cond_destroy(&self->answered);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}
