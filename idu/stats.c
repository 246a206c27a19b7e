/*  =========================================================================
    stats - what the IDU tells of itself: a job's figures and its IEUs',
    the IEUs, the jobs, the pool

    For the center's job reports, its status answer and its metrics. Only
    reads, but for the CPU time the center measures for a job
    (spm_idu_job_set_cpu), which the IDU keeps for the job's report.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "base/clock.h"

/* ----------------------------------------------------------- job queries */

#define RATE_WINDOW_US                                                                             \
    10000000u                /* the rate is of the last 10 to 20 s, and a                          \
                                job with no commit in 10 s has none */
#define RATE_MIN_US 1000000u /* a rate over less time than this is noise */

/*  The commits are counted from two moments (prev, cur) 10 to 20 s back
    rather than from the job's start: a job starved for an hour by jobs of
    a higher priority, or resumed after a restart, would otherwise show
    its ETA at the rate of that hour (3645.8 s for a minute's work). */
void spm_idu_rate_commit(job_t *job, uint64_t now)
{
    if (!job->rate_last_us || now - job->rate_last_us > RATE_WINDOW_US) {
        /* the first commit, or the first after a pause: count from here */
        job->rate_prev_us = job->rate_cur_us = now;
        job->rate_prev_n = job->rate_cur_n = job->committed;
    } else if (now - job->rate_cur_us >= RATE_WINDOW_US) {
        job->rate_prev_us = job->rate_cur_us;
        job->rate_prev_n = job->rate_cur_n;
        job->rate_cur_us = now;
        job->rate_cur_n = job->committed;
    }
    job->rate_last_us = now;
}

/*  JOB's rate lately at NOW, as spm_idu_job_info_t's rate says. */
static double job_rate(const job_t *job, uint64_t now)
{
    if (job->state != 0)
        return -1;
    if (!job->rate_last_us) /* nothing committed yet: waiting, once that lasts */
        return now - job->start_us > RATE_WINDOW_US ? 0 : -1;
    if (now - job->rate_last_us > RATE_WINDOW_US)
        return 0;
    uint64_t span = now - job->rate_prev_us;
    if (span < RATE_MIN_US)
        return -1;
    return (double)(job->committed - job->rate_prev_n) / (span / 1e6);
}

int spm_idu_job_info(spm_idu_t *self, uint64_t id, spm_idu_job_info_t *info)
{
    job_t *job = job_get(self, id);
    if (!job)
        return SPM_ENOTFOUND;
    uint64_t end = job->state ? job->end_us : spm_now_us();
    *info = (spm_idu_job_info_t){.job = job->id,
                                 .program = job->program,
                                 .state = job->state,
                                 .status = job->status,
                                 .error = job->error,
                                 .wall_us = end - job->start_us,
                                 .since_issue_us = job->first_issue_us && end > job->first_issue_us
                                                       ? end - job->first_issue_us
                                                       : 0,
                                 .issued = job->issued,
                                 .committed = job->committed,
                                 .reissued = job->reissued,
                                 .resumed = job->replayed,
                                 .restarts = job->restarts,
                                 .rate = job_rate(job, spm_now_us()),
                                 .stale = job->stale,
                                 .expected = job->expected,
                                 .ready = job->ready,
                                 .speculated = job->speculated,
                                 .spec_wins = job->spec_wins,
                                 .merges = job->merges,
                                 .l1_hits = job->l1_hits,
                                 .l2_hits = job->l2_hits,
                                 .store_reads = job->store_reads,
                                 .bytes_l2 = job->bytes_l2,
                                 .bytes_store = job->bytes_store,
                                 .evictions = job->evictions,
                                 .bytes_pushed = job->bytes_pushed,
                                 .corrupt = job->corrupt,
                                 .result = job->result,
                                 .result_len = job->result_len,
                                 .plugin = job->plugin};
    return 0;
}

size_t spm_idu_job_ieus(spm_idu_t *self, uint64_t id, spm_idu_ieu_stats_t *out, size_t max)
{
    job_t *job = job_get(self, id);
    if (!job)
        return 0;
    uint64_t end = job->state ? job->end_us : spm_now_us();
    size_t n = 0;
    for (size_t i = 0; i < self->nieus; i++) {
        ieu_t *e = &self->ieus[i];
        uint64_t from = e->joined_us > job->start_us ? e->joined_us : job->start_us;
        uint64_t to = e->alive || e->left_us > end ? end : e->left_us;
        if (to <= from && i >= job->nieu_stats)
            continue;
        if (n < max) {
            ieu_job_stats_t z = {0}, *st = i < job->nieu_stats ? &job->ieu_stats[i] : &z;
            uint64_t capacity = to > from ? (to - from) * e->slots : 0;
            uint64_t used = st->busy_us + st->wait_us;
            out[n] = (spm_idu_ieu_stats_t){.ieu = (uint32_t)i,
                                           .node = e->node,
                                           .slots = e->slots,
                                           .sis = st->sis,
                                           .busy_us = st->busy_us,
                                           .wait_us = st->wait_us,
                                           .localize_us = st->localize_us,
                                           .bytes_l2 = st->bytes_l2,
                                           .bytes_store = st->bytes_store,
                                           .bytes_pushed = st->bytes_pushed,
                                           .idle_us = capacity > used ? capacity - used : 0,
                                           .dead = !e->alive};
        }
        n++;
    }
    return n;
}

size_t spm_idu_job_opcodes(spm_idu_t *self, uint64_t id, spm_idu_op_stats_t *out, size_t max)
{
    job_t *job = job_get(self, id);
    if (!job)
        return 0;
    for (size_t i = 0; i < job->nop_stats && i < max; i++)
        out[i] = job->op_stats[i];
    return job->nop_stats;
}

void spm_idu_job_set_cpu(spm_idu_t *self, uint64_t id, uint64_t cpu_us)
{
    job_t *job = job_get(self, id);
    if (job)
        job->cpu_us = cpu_us;
}

uint64_t spm_idu_job_cpu(spm_idu_t *self, uint64_t id)
{
    job_t *job = job_get(self, id);
    return job ? job->cpu_us : 0;
}

int spm_idu_ieu_info(const spm_idu_t *self, uint32_t ieu, spm_idu_ieu_info_t *info)
{
    if (ieu >= self->nieus)
        return SPM_ENOTFOUND;
    const ieu_t *e = &self->ieus[ieu];
    *info = (spm_idu_ieu_info_t){.node = e->node,
                                 .slots = e->slots,
                                 .alive = e->alive,
                                 .held = e->held,
                                 .credits = e->credits};
    return 0;
}

uint32_t spm_idu_ieu_total(const spm_idu_t *self)
{
    return (uint32_t)self->nieus;
}

size_t spm_idu_jobs(spm_idu_t *self, uint64_t *ids, size_t max)
{
    size_t n = 0, pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->jobs, &pos, &key, &value)) {
        if (n < max)
            ids[n] = key;
        n++;
    }
    return n;
}

uint64_t spm_idu_ready(const spm_idu_t *self)
{
    return self->ready;
}

uint32_t spm_idu_running(const spm_idu_t *self)
{
    uint32_t n = 0;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->jobs, &pos, &key, &value))
        n += ((job_t *)value)->state == 0 ? 1 : 0;
    return n;
}

uint64_t spm_idu_made(const spm_idu_t *self)
{
    return self->made;
}
