/*  =========================================================================
    idu - the instruction dispatch unit: its life, its jobs and their
    super-functions

    Runs inside the center's single thread: no locks. SF callbacks run from
    here and may re-enter the SF API (issue, spawn, done, fail); anything
    that would tear down state in the middle of such a call (a job ending) is
    deferred to the end of the public entry point (notify()).

    The rest of the IDU is beside it, one concept a file: the ready SIs and
    the pump (pool.c), the IEUs and their leases (lease.c), commits
    (commit.c), the SDB table (sdbs.c), the figures of reports (stats.c),
    dependences (scoreboard.c), recording and replay (events.c), locality
    (locality.c).
    =========================================================================
*/
#include "idu/idu_int.h"
#include "runtime/registry.h"
#include "runtime/sfproto.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ----------------------------------------------------------------- life */

spm_idu_t *spm_idu_new(spm_idu_emit_fn emit, spm_idu_job_fn done, void *arg)
{
    spm_idu_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->emit = emit;
    self->job_done = done;
    self->arg = arg;
    self->sdbs = spm_hmap_new();
    self->issued = spm_hmap_new();
    self->jobs = spm_hmap_new();
    if (!self->sdbs || !self->issued || !self->jobs) {
        spm_idu_destroy(&self);
        return NULL;
    }
    return self;
}

static void sf_free(spm_sf_t *sf)
{
    for (si_t *si = sf->ready_head, *next; si; si = next) {
        next = si->next;
        spm_idu_si_free(si);
    }
    free(sf->next_label);
    free(sf);
}

static void job_free(job_t *job)
{
    for (spm_sf_t *sf = job->sfs, *next; sf; sf = next) {
        next = sf->job_next;
        if (!sf->finished && sf->cls->finish) {
            call_t t0 = enter(sf);
            sf->cls->finish(sf);
            leave(sf, "finish", t0);
        }
        sf_free(sf);
    }
    free(job->program);
    free(job->error);
    free(job->acc_open);
    free(job->result);
    free(job->op_stats);
    free(job->ieu_stats);
    free(job->ev_issued);
    free(job->op_seen);
    free(job->op_count);
    spm_remote_free(job);
    free(job);
}

void spm_idu_destroy(spm_idu_t **self_p)
{
    spm_idu_t *self = *self_p;
    if (!self)
        return;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (self->issued && spm_hmap_next(self->issued, &pos, &key, &value))
        spm_idu_si_free(value);
    pos = 0;
    while (self->jobs && spm_hmap_next(self->jobs, &pos, &key, &value))
        job_free(value);
    /* SIs still waiting for a version (a job cut short): each once, though
       it may wait for several */
    spm_hmap_t *waiting = spm_hmap_new();
    pos = 0;
    while (waiting && self->sdbs && spm_hmap_next(self->sdbs, &pos, &key, &value))
        for (pending_t *p = ((sdb_t *)value)->pending; p; p = p->next)
            for (size_t i = 0; i < p->waiters.n; i++)
                spm_hmap_put(waiting, (uint64_t)(uintptr_t)p->waiters.v[i], p->waiters.v[i]);
    pos = 0;
    while (waiting && spm_hmap_next(waiting, &pos, &key, &value))
        spm_idu_si_free(value);
    spm_hmap_destroy(&waiting);
    pos = 0;
    while (self->sdbs && spm_hmap_next(self->sdbs, &pos, &key, &value))
        spm_sb_sdb_free(value);
    for (size_t i = 0; i < self->nquarantine; i++)
        free(self->quarantine[i].why);
    free(self->quarantine);
    free(self->garbage);
    free(self->ev_jobs);
    free(self->ev_buf);
    spm_hmap_destroy(&self->sdbs);
    spm_hmap_destroy(&self->issued);
    spm_hmap_destroy(&self->jobs);
    for (size_t i = 0; i < self->nlevels; i++)
        free(self->levels[i].feeders);
    free(self->levels);
    free(self->ieus);
    free(self->notify);
    free(self);
    *self_p = NULL;
}

/* ------------------------------------------------------- SF callbacks */

/*  A super-function's callbacks run in the center's thread: while one runs,
    nobody is answered, and heartbeats lapse. One that took SPM_IDU_SLOW_US
    or longer (since T0) is named in the log, once per SF. */
void spm_idu_timed(spm_sf_t *sf, const char *callback, uint64_t t0)
{
    uint64_t us = spm_now_us() - t0;
    if (us < SPM_IDU_SLOW_US || sf->slow_logged)
        return;
    sf->slow_logged = 1;
    spm_log_warn("job %llu: super-function %s spent %.0f ms in its %s call, the center's thread "
                 "meanwhile answered nobody; a program should issue many SIs from its feed "
                 "hook, as IEUs pull, or a bounded batch per call",
                 (unsigned long long)sf->job->id, sf->cls->name, (double)us / 1000, callback);
}

volatile uint64_t spm_idu_running_job;

void spm_idu_feed_call(spm_idu_t *self, spm_sf_t *sf, const spm_ieu_t *who)
{
    spm_ev_feed(self, sf, who);
    call_t t0 = enter(sf);
    sf->cls->feed(sf, who);
    leave(sf, "feed", t0);
    if (!sf->ready_head)
        spm_idu_sf_maybe_finish(self, sf); /* feed may have called done */
}

void spm_idu_notify(spm_idu_t *self)
{
    notify(self);
}

/* ------------------------------------------------------------------ SIs */

si_t *spm_idu_si_alloc(spm_sf_t *sf, uint32_t opcode, size_t nops, const void *params,
                       size_t params_len)
{
    if (sf->job->next_si == UINT32_MAX)
        return NULL; /* four billion SIs in one job */
    si_t *si = calloc(1, sizeof *si);
    if (!si)
        return NULL;
    si->ops = calloc(nops ? nops : 1, sizeof *si->ops);
    si->sdbs = calloc(nops ? nops : 1, sizeof *si->sdbs);
    si->params = malloc(params_len ? params_len : 1);
    if (!si->ops || !si->sdbs || !si->params) {
        spm_idu_si_free(si);
        return NULL;
    }
    if (params_len)
        memcpy(si->params, params, params_len);
    sf->job->idu->made++;
    si->pub = (spm_idu_si_t){.id = sf->job->id << 32 | ++sf->job->next_si,
                             .opcode = opcode,
                             .job = sf->job->id,
                             .plugin = sf->job->plugin,
                             .plugin_sum = sf->job->plugin_sum,
                             .ops = si->ops,
                             .nops = nops,
                             .params = si->params,
                             .params_len = params_len,
                             .sf = sf->cls->name};
    si->sf = sf;
    si->job = sf->job;
    si->ieu = -1;
    si->spec_ieu = -1;
    job_t *job = sf->job;
    size_t k = 0;
    while (k < job->nop_seen && job->op_seen[k] != opcode)
        k++;
    if (k == job->nop_seen) {
        size_t cap = job->capop_seen;
        if (spm_grow(&job->op_seen, job->nop_seen, &job->capop_seen, sizeof *job->op_seen, 8) ==
                0 &&
            spm_grow(&job->op_count, job->nop_seen, &cap, sizeof *job->op_count, 8) == 0) {
            job->op_seen[k] = opcode;
            job->op_count[k] = 0;
            job->nop_seen++;
        }
    }
    si->nth = k < job->nop_seen ? ++job->op_count[k] : 0;
    return si;
}

void spm_idu_si_name(const si_t *si, char *buf, size_t size)
{
    const spm_opcode_t *op = spm_opcode_by_id(si->pub.opcode);
    const char *name = op ? op->name : "?";
    if (si->label) {
        snprintf(buf, size, "%s (%s)", name, si->label);
        return;
    }
    unsigned n = si->nth % 100;
    const char *th = n >= 11 && n <= 13 ? "th"
                     : n % 10 == 1      ? "st"
                     : n % 10 == 2      ? "nd"
                     : n % 10 == 3      ? "rd"
                                        : "th";
    snprintf(buf, size, "the %u%s SI of %s", si->nth, th, name);
}

const char *spm_idu_si_detail(const si_t *si, const char *detail)
{
    const spm_opcode_t *op = spm_opcode_by_id(si->pub.opcode);
    size_t n = op ? strlen(op->name) : 0;
    if (detail && n && !strncmp(detail, op->name, n) && detail[n] == ':' && detail[n + 1] == ' ')
        return detail + n + 2;
    return detail;
}

void spm_idu_si_enter(spm_idu_t *self, si_t *si)
{
    si->sf->outstanding++;
    si->job->issued++;
    if (si->deps == 0)
        spm_idu_make_ready(self, si, 0);
}

int spm_idu_job_note_acc(job_t *job, spm_sdb_t id)
{
    for (size_t i = 0; i < job->nacc; i++)
        if (job->acc_open[i] == id)
            return 0;
    if (spm_grow(&job->acc_open, job->nacc, &job->capacc, sizeof *job->acc_open, 16) != 0)
        return SPM_ENOMEM;
    job->acc_open[job->nacc++] = id;
    return 0;
}

/* ----------------------------------------------------------------- jobs */

static void job_end(job_t *job, int state)
{
    if (job->state != 0)
        return;
    spm_idu_t *self = job->idu;
    job->state = state;
    job->end_us = spm_now_us();
    for (spm_sf_t *sf = job->sfs; sf; sf = sf->job_next) {
        spm_pool_ring_remove(self, sf);
        spm_pool_feeder_remove(self, sf);
        while (sf->ready_head)
            si_drop(self, spm_pool_pop_ready(self, sf, 0));
    }
    if (spm_grow(&self->notify, self->nnotify, &self->capnotify, sizeof *self->notify, 8) != 0) {
        self->job_done(self->arg, job->id); /* report now rather than never */
        return;
    }
    self->notify[self->nnotify++] = job;
}

void spm_idu_fail_now(job_t *job, int code, int len, const char *msg)
{
    if (job->state != 0)
        return;
    char *m = len < 0 ? strdup(msg) : strndup(msg, (size_t)len);
    spm_ev_fail(job->idu, job, code, m ? m : "");
    job->status = code;
    free(job->error);
    job->error = m;
    job_end(job, code == SPM_ECANCELED ? 3 : 2);
}

void spm_idu_failf(job_t *job, int code, const char *fmt, ...)
{
    if (job->state != 0)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    spm_idu_fail_now(job, code, -1, msg);
}

/*  Creates an SF of CLS in JOB under PARENT and starts it. Returns 0 or the
    start failure (which fails the job). */
static int sf_start(job_t *job, spm_sf_t *parent, const spm_sf_class_t *cls, const void *args,
                    size_t len, int priority, uint64_t tag)
{
    spm_idu_t *self = job->idu;
    spm_sf_t *sf = calloc(1, sizeof *sf);
    if (!sf || !spm_pool_level(self, priority)) {
        free(sf);
        spm_idu_failf(job, SPM_ENOMEM, "out of memory");
        return SPM_ENOMEM;
    }
    *sf = (spm_sf_t){.cls = cls,
                     .id = ++job->next_sf,
                     .job = job,
                     .parent = parent,
                     .tag = tag,
                     .priority = priority};
    sf->job_next = job->sfs;
    job->sfs = sf;
    job->live_sfs++;
    if (parent)
        parent->children++;
    else
        job->root = sf;
    if (cls->feed) {
        level_t *l = spm_pool_level(self, priority);
        if (spm_grow(&l->feeders, l->nfeeders, &l->capfeeders, sizeof *l->feeders, 4) != 0) {
            spm_idu_failf(job, SPM_ENOMEM, "out of memory");
            return SPM_ENOMEM;
        }
        l->feeders[l->nfeeders++] = sf;
        sf->feeder = 1;
    }
    spm_error(0, "%s", "");
    call_t t0 = enter(sf);
    int rc = cls->start ? cls->start(sf, args, len) : 0;
    leave(sf, "start", t0);
    if (rc != 0) {
        const char *d = spm_error_detail();
        spm_idu_failf(job, rc, "%s: %s", cls->name, *d ? d : spm_strerror(rc));
        return rc;
    }
    spm_idu_sf_maybe_finish(self, sf);
    return 0;
}

int spm_idu_job_begin(spm_idu_t *self, uint64_t id, const char *program, int priority,
                      uint64_t wall_us, uint64_t seed, struct replay *replay, job_t **out)
{
    *out = NULL;
    job_t *job = calloc(1, sizeof *job);
    if (!job || !(job->program = strdup(program))) {
        free(job);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    job->id = id ? id : ++self->next_job;
    if (job->id > self->next_job)
        self->next_job = job->id;
    job->priority = priority;
    job->idu = self;
    job->replay = replay;
    job->seed = seed;
    job->start_us = spm_now_us();
    if (wall_us) { /* started before a restart: its wall time counts from then */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
        uint64_t ago = now > wall_us ? now - wall_us : 0;
        job->start_us = job->start_us > ago ? job->start_us - ago : 0;
    }
    if (spm_hmap_put(self->jobs, job->id, job) != 0) {
        job_free(job);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    *out = job;
    return 0;
}

int spm_idu_job_start(spm_idu_t *self, job_t *job, const void *args, size_t len)
{
    if (job->remote) { /* a plugin's: its code runs in a host (remote.c) */
        spm_ev_submit(self, job, args, len);
        return sf_start(job, NULL, spm_remote_class(job), args, len, job->priority, 0);
    }
    const spm_program_t *p = spm_program_find_in(job->scope, job->program);
    if (!p) {
        spm_idu_failf(job, SPM_ENOTFOUND, "no program '%s' in %s", job->program,
                      job->scope[0] ? "its plugin" : "this spm");
        return spm_error(SPM_ENOTFOUND, "no program '%s'", job->program);
    }
    spm_ev_submit(self, job, args, len);
    return sf_start(job, NULL, p->root, args, len, job->priority, 0);
}

/*  A job's seed (spm_sf_seed): random, or from the clock and the process
    where the kernel has no randomness to give. */
static uint64_t new_seed(void)
{
    uint64_t seed;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed)
        return seed;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ (uint64_t)getpid() << 40;
}

int spm_idu_submit(spm_idu_t *self, const char *program, const void *args, size_t len, int priority,
                   uint64_t *jobid)
{
    return spm_idu_submit_plugin(self, program, NULL, 0, args, len, priority, jobid);
}

int spm_idu_submit_plugin(spm_idu_t *self, const char *program, const char *scope, spm_sdb_t plugin,
                          const void *args, size_t len, int priority, uint64_t *jobid)
{
    int remote = plugin && self->remote_fn; /* the host checks its program */
    if (!remote && !spm_program_find_in(scope, program))
        return spm_error(SPM_ENOTFOUND, "no program '%s'", program);
    job_t *job;
    int rc = spm_idu_job_begin(self, 0, program, priority, 0, new_seed(), NULL, &job);
    if (rc != 0)
        return rc;
    spm_idu_job_plugin(job, scope, plugin);
    if (remote && (rc = spm_remote_new(job)) != 0) {
        spm_idu_failf(job, rc, "out of memory");
        notify(self);
        return rc;
    }
    *jobid = job->id;
    rc = spm_idu_job_start(self, job, args, len);
    notify(self);
    return rc;
}

void spm_idu_set_plugin_loader(spm_idu_t *self, spm_idu_plugin_fn load, void *arg)
{
    self->load_plugin = load;
    self->load_arg = arg;
}

int spm_idu_quarantine(spm_idu_t *self, uint64_t id, const char *why)
{
    char *w = strdup(why);
    if (!w || spm_grow(&self->quarantine, self->nquarantine, &self->capquarantine,
                       sizeof *self->quarantine, 4) != 0) {
        free(w);
        return SPM_ENOMEM;
    }
    self->quarantine[self->nquarantine++] = (struct quarantined){id, w};
    return 0;
}

void spm_idu_job_plugin(job_t *job, const char *scope, spm_sdb_t plugin)
{
    snprintf(job->scope, sizeof job->scope, "%s", scope ? scope : "");
    job->plugin = plugin;
    job->plugin_sum = strtoull(job->scope, NULL, 16);
}

/*  Closes JOB's open ACC groups with merge SIs owned by SF. Returns how many
    merges were issued. */
static size_t job_flush_acc(spm_idu_t *self, job_t *job, spm_sf_t *sf)
{
    size_t n = 0;
    for (size_t i = 0; i < job->nacc; i++) {
        sdb_t *s = spm_sb_sdb(self, job->acc_open[i]);
        if (s && s->npartials) {
            if (spm_sb_flush(self, sf, s) != 0) {
                spm_idu_failf(job, SPM_ENOMEM, "out of memory");
                return n;
            }
            n++;
        }
    }
    job->nacc = 0;
    return n;
}

void spm_idu_sf_maybe_finish(spm_idu_t *self, spm_sf_t *sf)
{
    while (sf && !sf->finished && sf->done && sf->outstanding == 0 && sf->children == 0 &&
           sf->job->state == 0) {
        job_t *job = sf->job;
        if (!sf->parent && job_flush_acc(self, job, sf) > 0)
            return; /* the root ends once the last merges commit */
        sf->finished = 1;
        spm_pool_feeder_remove(self, sf);
        if (sf->cls->finish) {
            call_t t0 = enter(sf);
            sf->cls->finish(sf);
            leave(sf, "finish", t0);
        }
        job->live_sfs--;
        spm_sf_t *parent = sf->parent;
        if (!parent) {
            job_end(job, 1);
            return;
        }
        parent->children--;
        if (parent->cls->commit && job->state == 0) {
            spm_result_t r = {.kind = SPM_RESULT_CHILD, .tag = sf->tag};
            call_t t0 = enter(parent);
            parent->cls->commit(parent, &r);
            leave(parent, "commit", t0);
        }
        sf = parent;
    }
}

void spm_idu_job_fail(spm_idu_t *self, uint64_t id, int code, const char *message)
{
    job_t *job = job_get(self, id);
    if (job)
        spm_idu_failf(job, code, "%s", message);
    notify(self);
}

void spm_idu_job_ran(spm_idu_t *self, uint64_t id, uint64_t ran_us)
{
    job_t *job = job_get(self, id);
    uint64_t now = spm_now_us();
    if (job && job->state == 0)
        job->start_us = now > ran_us ? now - ran_us : 0;
}

void spm_idu_job_floor(spm_idu_t *self, uint64_t floor)
{
    if (floor > self->next_job)
        self->next_job = floor;
}

int spm_idu_job_lost(spm_idu_t *self, uint64_t id, const char *program, int code,
                     const char *message)
{
    job_t *job = calloc(1, sizeof *job);
    if (!job || !(job->program = strdup(program)) || !(job->error = strdup(message)) ||
        spm_hmap_put(self->jobs, id, job) != 0) {
        if (job) {
            free(job->program);
            free(job->error);
        }
        free(job);
        return SPM_ENOMEM;
    }
    job->id = id;
    job->idu = self;
    job->state = 2;
    job->status = code;
    job->start_us = job->end_us = spm_now_us();
    job->notified = 1;
    return 0;
}

static int of_job(const si_t *si, const void *job)
{
    return si->job == job;
}

void spm_idu_job_forget(spm_idu_t *self, uint64_t id)
{
    job_t *job = job_get(self, id);
    if (!job || job->state == 0)
        return;
    /* SIs of the job still issued are stale now; drop them. */
    size_t n;
    si_t **mine = spm_lease_issued_where(self, of_job, job, &n);
    for (size_t i = 0; i < n; i++) {
        spm_hmap_remove(self->issued, mine[i]->pub.id);
        if (mine[i]->ieu >= 0 && self->ieus[mine[i]->ieu].held)
            self->ieus[mine[i]->ieu].held--;
        si_drop(self, mine[i]);
    }
    free(mine);
    spm_hmap_remove(self->jobs, id);
    job_free(job);
}

/* ------------------------------------------------- the SF API (include/spm/spm.h) */

void *spm_sf_state(spm_sf_t *sf)
{
    if (spm_sf_ops)
        return spm_sf_ops->state(sf);
    return sf->state;
}

void spm_sf_set_state(spm_sf_t *sf, void *state)
{
    if (spm_sf_ops) {
        spm_sf_ops->set_state(sf, state);
        return;
    }
    sf->state = state;
}

int spm_sf_priority(const spm_sf_t *sf)
{
    if (spm_sf_ops)
        return spm_sf_ops->priority(sf);
    return sf->priority;
}

spm_sdb_t spm_sdb_new(spm_sf_t *sf, const char *type)
{
    if (spm_sf_ops)
        return spm_sf_ops->sdb_new(sf, type);
    uint32_t id = spm_sdb_type_id_in(sf->job->scope, type);
    if (!id)
        return 0;
    sdb_t *s = spm_sb_sdb_new(sf->job->idu, sf->job, id, 0);
    return s ? s->id : 0;
}

int spm_sf_issue(spm_sf_t *sf, const char *opcode, const spm_operand_t *ops, size_t n,
                 const void *params, size_t params_len, uint64_t tag)
{
    if (spm_sf_ops)
        return spm_sf_ops->issue(sf, opcode, ops, n, params, params_len, tag);
    if (sf->job->state != 0)
        return SPM_ECANCELED;
    uint32_t id = spm_opcode_id_in(sf->job->scope, opcode);
    if (!id)
        return spm_error(SPM_ENOTFOUND, "no opcode '%s'", opcode);
    return spm_idu_issue_id(sf, id, opcode, ops, n, params, params_len, tag);
}

int spm_idu_issue_id(spm_sf_t *sf, uint32_t id, const char *opcode, const spm_operand_t *ops,
                     size_t n, const void *params, size_t params_len, uint64_t tag)
{
    spm_idu_t *self = sf->job->idu;
    if (sf->job->state != 0)
        return SPM_ECANCELED;
    if (n > SPM_MAX_OPERANDS)
        return spm_error(SPM_EINVAL, "%s: %zu operands (at most %d)", opcode, n, SPM_MAX_OPERANDS);
    si_t *si = spm_idu_si_alloc(sf, id, n, params, params_len);
    if (!si)
        return spm_error(SPM_ENOMEM, "out of memory");
    si->tag = tag;
    si->label = sf->next_label;
    sf->next_label = NULL;
    /* Bind counts dependences; it may issue merges first, which is fine:
       they are ordered before this SI in program order. */
    int rc = spm_sb_bind(self, si, ops, n);
    if (rc != 0) {
        /* Versions already allocated by a partial bind stay pending; fail
           the job so nothing waits for them forever. */
        char name[160];
        spm_idu_si_name(si, name, sizeof name);
        spm_idu_failf(sf->job, rc, "%s: %s", name, spm_error_detail());
        spm_idu_si_free(si);
        return rc;
    }
    spm_idu_si_enter(self, si);
    return 0;
}

int spm_sf_spawn(spm_sf_t *sf, const spm_sf_class_t *cls, const void *args, size_t len,
                 int priority, uint64_t tag)
{
    if (spm_sf_ops)
        return spm_sf_ops->spawn(sf, cls, args, len, priority, tag);
    if (sf->job->state != 0)
        return SPM_ECANCELED;
    return sf_start(sf->job, sf, cls, args, len, priority, tag);
}

void spm_sf_label(spm_sf_t *sf, const char *fmt, ...)
{
    char label[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(label, sizeof label, fmt, ap);
    va_end(ap);
    if (spm_sf_ops) {
        spm_sf_ops->label(sf, label);
        return;
    }
    free(sf->next_label);
    sf->next_label = strdup(label); /* NULL when out of memory: the SI goes unlabeled */
}

void spm_sf_done(spm_sf_t *sf)
{
    if (spm_sf_ops) {
        spm_sf_ops->done(sf);
        return;
    }
    sf->done = 1;
    spm_pool_feeder_remove(sf->job->idu, sf);
    /* The finish check runs when control returns to the IDU (after start or
       commit), not inside the SF's own callback. */
}

void spm_sf_fail(spm_sf_t *sf, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (spm_sf_ops) {
        spm_sf_ops->fail(sf, code, msg);
        return;
    }
    spm_idu_failf(sf->job, code, "%s", msg);
}

void spm_sf_expect(spm_sf_t *sf, uint64_t n)
{
    if (spm_sf_ops) {
        spm_sf_ops->expect(sf, n);
        return;
    }
    sf->job->expected += n;
}

int spm_sf_set_result(spm_sf_t *sf, const void *data, size_t len)
{
    if (spm_sf_ops)
        return spm_sf_ops->set_result(sf, data, len);
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return SPM_ENOMEM;
    memcpy(copy, data, len);
    free(sf->job->result);
    sf->job->result = copy;
    sf->job->result_len = len;
    return 0;
}

/*  V, or what the job's journal says it was, as 32 bits on the record. */
static uint64_t input_u64(job_t *job, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    if (spm_ev_input(job->idu, job, b, sizeof b, sizeof b) != sizeof b)
        return v;
    v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

uint64_t spm_sf_seed(const spm_sf_t *sf)
{
    if (spm_sf_ops)
        return spm_sf_ops->seed(sf);
    return sf->job->seed;
}

uint32_t spm_sf_ieus(const spm_sf_t *sf)
{
    if (spm_sf_ops)
        return spm_sf_ops->ieus(sf);
    return (uint32_t)input_u64(sf->job, spm_idu_ieus(sf->job->idu));
}

uint32_t spm_sf_nodes(const spm_sf_t *sf)
{
    if (spm_sf_ops)
        return spm_sf_ops->nodes(sf);
    return (uint32_t)input_u64(sf->job, spm_idu_nodes(sf->job->idu));
}
