/*  =========================================================================
    metrics - the center's figures over its life: Prometheus text, the
    utilisation curve, and totals that outlive the jobs

    Names follow Prometheus' conventions: an `spm_` prefix, base units in
    the name (seconds, bytes), `_total` on counters. The text is checked
    by `promtool check metrics` in tests/integration/test_http.c.
    =========================================================================
*/
#include "vm/center/metrics.h"
#include "spm/spm.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES 600 /* utilisation samples kept: ten minutes at one a second */
#define SAMPLE_US 1000000
#define FINISHED 16   /* recently finished jobs kept for the dashboard */
#define MAX_JOBS 1024 /* known jobs summed at most */

/*  Counters that only grow, summed over jobs. */
typedef struct {
    uint64_t issued, committed, reissued, speculated;
    uint64_t l1_hits, l2_hits, store_reads, evictions, corrupt;
    uint64_t bytes_l2, bytes_store, bytes_pushed;
    uint64_t done, failed; /* jobs ended */
} totals_t;

typedef struct {
    double t_s;          /* seconds since the metrics began */
    float utilisation;   /* held slots over slots of live IEUs, 0..1 */
    uint32_t busy, ieus; /* IEUs holding SIs, live IEUs */
    uint64_t committed;  /* SIs committed in all, then */
} sample_t;

typedef struct {
    uint64_t job;
    char program[48];
    int state; /* 1 done, 2 failed */
    uint64_t committed;
    double wall_s;
} finished_t;

struct spm_metrics {
    uint64_t started_us;       /* first sample's time */
    uint64_t last_sample_us;   /* when the last sample was taken */
    totals_t retired;          /* of jobs the IDU forgot */
    sample_t samples[SAMPLES]; /* ring */
    uint64_t nsamples;         /* taken in all */
    finished_t done[FINISHED]; /* ring */
    uint64_t ndone;            /* finished in all */
};

spm_metrics_t *spm_metrics_new(void)
{
    return calloc(1, sizeof(spm_metrics_t));
}

void spm_metrics_destroy(spm_metrics_t **self)
{
    free(*self);
    *self = NULL;
}

static void add(totals_t *t, const spm_idu_job_info_t *j)
{
    t->issued += j->issued;
    t->committed += j->committed;
    t->reissued += j->reissued;
    t->speculated += j->speculated;
    t->l1_hits += j->l1_hits;
    t->l2_hits += j->l2_hits;
    t->store_reads += j->store_reads;
    t->evictions += j->evictions;
    t->corrupt += j->corrupt;
    t->bytes_l2 += j->bytes_l2;
    t->bytes_store += j->bytes_store;
    t->bytes_pushed += j->bytes_pushed;
    t->done += j->state == 1;
    t->failed += j->state == 2;
}

void spm_metrics_job_end(spm_metrics_t *self, const spm_idu_job_info_t *info)
{
    assert(self);
    add(&self->retired, info);
    finished_t *f = &self->done[self->ndone++ % FINISHED];
    f->job = info->job;
    snprintf(f->program, sizeof f->program, "%s", info->program ? info->program : "?");
    f->state = info->state;
    f->committed = info->committed;
    f->wall_s = info->wall_us / 1e6;
}

/*  The totals now: the forgotten jobs' and the known ones'; *RUNNING gets
    the jobs still running. */
static totals_t totals(spm_metrics_t *self, spm_idu_t *idu, uint64_t *running)
{
    totals_t t = self->retired;
    uint64_t ids[MAX_JOBS];
    size_t n = spm_idu_jobs(idu, ids, MAX_JOBS);
    *running = 0;
    for (size_t k = 0; k < n && k < MAX_JOBS; k++) {
        spm_idu_job_info_t j;
        if (spm_idu_job_info(idu, ids[k], &j) != 0)
            continue;
        add(&t, &j);
        *running += j.state == 0;
    }
    return t;
}

typedef struct {
    uint32_t busy, idle, dead;
    uint64_t slots, held; /* of live IEUs; held counted up to their slots */
} ieus_t;

static ieus_t count_ieus(spm_idu_t *idu)
{
    ieus_t c = {0};
    uint32_t total = spm_idu_ieu_total(idu);
    for (uint32_t i = 0; i < total; i++) {
        spm_idu_ieu_info_t e;
        if (spm_idu_ieu_info(idu, i, &e) != 0)
            continue;
        c.busy += e.alive && e.held;
        c.idle += e.alive && !e.held;
        c.dead += !e.alive;
        if (e.alive) {
            c.slots += e.slots;
            c.held += e.held < e.slots ? e.held : e.slots;
        }
    }
    return c;
}

void spm_metrics_sample(spm_metrics_t *self, spm_idu_t *idu, uint64_t now_us)
{
    assert(self);
    if (!self->started_us)
        self->started_us = now_us;
    if (self->nsamples && now_us - self->last_sample_us < SAMPLE_US)
        return;
    self->last_sample_us = now_us;
    ieus_t c = count_ieus(idu);
    uint64_t running;
    totals_t t = totals(self, idu, &running);
    sample_t *s = &self->samples[self->nsamples++ % SAMPLES];
    s->t_s = (now_us - self->started_us) / 1e6;
    s->utilisation = c.slots ? (float)c.held / (float)c.slots : 0;
    s->busy = c.busy;
    s->ieus = c.busy + c.idle;
    s->committed = t.committed;
}

/*  One metric's HELP and TYPE lines. */
static void head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(FILE *f, const char *name, const char *type, const char *help, double v)
{
    head(f, name, type, help);
    fprintf(f, "%s %.17g\n", name, v);
}

/*  A metric with one label and N values. */
static void labelled(FILE *f, const char *name, const char *type, const char *help,
                     const char *label, const char *const *keys, const double *v, size_t n)
{
    head(f, name, type, help);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s{%s=\"%s\"} %.17g\n", name, label, keys[i], v[i]);
}

int spm_metrics_text(spm_metrics_t *self, spm_idu_t *idu, spm_dataplane_t *dp,
                     const spm_status_t *s, uint64_t cpu_us, char **text)
{
    assert(self);
    size_t len;
    FILE *f = open_memstream(text, &len);
    if (!f)
        return SPM_ENOMEM;
    uint64_t running;
    totals_t t = totals(self, idu, &running);
    ieus_t c = count_ieus(idu);
    spm_dataplane_stats_t d;
    spm_dataplane_stats(dp, &d);
    static const char *const ieu_states[] = {"busy", "idle", "dead"};
    static const char *const job_states[] = {"running", "done", "failed"};
    static const char *const levels[] = {"l1", "l2", "store"};
    static const char *const sources[] = {"node", "store"};
    static const char *const directions[] = {"in", "out"};
    one(f, "spm_center_uptime_seconds", "gauge", "Seconds since the center started.",
        s->uptime_us / 1e6);
    one(f, "spm_center_cpu_seconds_total", "counter",
        "CPU time of the center process (user and system), its ZeroMQ I/O thread included.",
        cpu_us / 1e6);
    one(f, "spm_nodes", "gauge", "Distinct nodes with live IEUs.", spm_idu_nodes(idu));
    one(f, "spm_agents_joined", "gauge", "Agents that joined since the center started.", s->agents);
    labelled(f, "spm_ieus", "gauge", "IEUs by state: busy (holding SIs), idle, dead.", "state",
             ieu_states, (double[]){c.busy, c.idle, c.dead}, 3);
    one(f, "spm_slots", "gauge", "Execution slots of live IEUs.", (double)c.slots);
    one(f, "spm_slots_busy", "gauge", "Slots of live IEUs holding an SI.", (double)c.held);
    labelled(f, "spm_jobs", "gauge",
             "Jobs running now, and jobs done or failed since the center started.", "state",
             job_states, (double[]){(double)running, (double)t.done, (double)t.failed}, 3);
    one(f, "spm_sis_ready", "gauge", "SIs ready and not yet issued, over all jobs.",
        (double)spm_idu_ready(idu));
    one(f, "spm_sis_issued_total", "counter", "SIs issued to IEUs.", (double)t.issued);
    one(f, "spm_sis_committed_total", "counter", "SIs committed.", (double)t.committed);
    one(f, "spm_sis_reissued_total", "counter",
        "SIs issued again after their IEU died or their lease ended.", (double)t.reissued);
    one(f, "spm_sis_speculated_total", "counter", "Copies of straggling SIs issued.",
        (double)t.speculated);
    labelled(f, "spm_cache_hits_total", "counter",
             "Operands found per level: the node's cache (l1), another node (l2), the store.",
             "level", levels,
             (double[]){(double)t.l1_hits, (double)t.l2_hits, (double)t.store_reads}, 3);
    one(f, "spm_cache_evictions_total", "counter", "Copies evicted from node caches.",
        (double)t.evictions);
    labelled(f, "spm_fetched_bytes_total", "counter",
             "Operand bytes IEUs fetched, from other nodes or from the center's store.", "source",
             sources, (double[]){(double)t.bytes_l2, (double)t.bytes_store}, 2);
    one(f, "spm_pushed_bytes_total", "counter", "Output bytes pushed to other nodes as replicas.",
        (double)t.bytes_pushed);
    labelled(f, "spm_center_block_bytes_total", "counter",
             "Block bytes through the center's socket.", "direction", directions,
             (double[]){(double)s->center_in, (double)s->center_out}, 2);
    one(f, "spm_store_bytes", "gauge", "Bytes of the store's pages holding blocks.",
        (double)s->store_bytes);
    one(f, "spm_store_blocks", "gauge", "Blocks in the center's store.", (double)s->store_blocks);
    one(f, "spm_node_block_versions", "gauge", "Block versions kept on the nodes.",
        (double)d.dir.blocks);
    one(f, "spm_node_block_bytes", "gauge", "Bytes of the block versions on the nodes.",
        (double)d.dir.bytes);
    one(f, "spm_blocks_short", "gauge", "Blocks with fewer keepers than replicas.",
        (double)d.dir.short_blocks);
    one(f, "spm_blocks_lost_total", "counter", "Blocks whose every holder died.",
        (double)d.dir.lost);
    one(f, "spm_copies_total", "counter", "Copies ordered after node deaths.", (double)d.copies);
    one(f, "spm_corrupt_copies_total", "counter", "Corrupt copies reported.", (double)d.corrupt);
    one(f, "spm_refused_connections_total", "counter",
        "Connections refused by the allow-list (keys not in authorized/).", (double)s->refused);
    one(f, "spm_dropped_messages_total", "counter", "Malformed or unexpected messages dropped.",
        (double)s->dropped);
    one(f, "spm_garbage_versions_total", "counter", "Block versions deleted as garbage.",
        (double)s->gc_versions);
    one(f, "spm_discarded_blocks_total", "counter", "Blocks deleted on clients' DISCARD.",
        (double)s->discarded);
    one(f, "spm_failures_total", "counter", "Failures recorded (deaths, failed jobs).",
        (double)s->nfailures);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(*text);
        *text = NULL;
        return SPM_ENOMEM;
    }
    return 0;
}

int spm_metrics_history(spm_metrics_t *self, spm_idu_t *idu, char **json)
{
    assert(self);
    size_t len;
    FILE *f = open_memstream(json, &len);
    if (!f)
        return SPM_ENOMEM;
    uint64_t running;
    totals_t t = totals(self, idu, &running);
    fprintf(f,
            "{\"interval_s\": %.1f, \"totals\": {\"issued\": %llu, \"committed\": %llu, "
            "\"reissued\": %llu, \"l1_hits\": %llu, \"l2_hits\": %llu, \"store_reads\": %llu, "
            "\"bytes_l2\": %llu, \"bytes_store\": %llu, \"bytes_pushed\": %llu, \"done\": %llu, "
            "\"failed\": %llu}, \"samples\": [",
            SAMPLE_US / 1e6, (unsigned long long)t.issued, (unsigned long long)t.committed,
            (unsigned long long)t.reissued, (unsigned long long)t.l1_hits,
            (unsigned long long)t.l2_hits, (unsigned long long)t.store_reads,
            (unsigned long long)t.bytes_l2, (unsigned long long)t.bytes_store,
            (unsigned long long)t.bytes_pushed, (unsigned long long)t.done,
            (unsigned long long)t.failed);
    uint64_t first = self->nsamples > SAMPLES ? self->nsamples - SAMPLES : 0;
    for (uint64_t k = first; k < self->nsamples; k++) {
        const sample_t *s = &self->samples[k % SAMPLES];
        fprintf(f, "%s[%.1f, %.3f, %u, %u, %llu]", k > first ? ", " : "", s->t_s, s->utilisation,
                s->busy, s->ieus, (unsigned long long)s->committed);
    }
    fprintf(f, "], \"finished\": [");
    first = self->ndone > FINISHED ? self->ndone - FINISHED : 0;
    for (uint64_t k = first; k < self->ndone; k++) {
        const finished_t *d = &self->done[k % FINISHED];
        fprintf(f, "%s{\"job\": %llu, \"program\": \"", k > first ? ", " : "",
                (unsigned long long)d->job);
        for (const char *p = d->program; *p; p++)
            if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
                fputc(*p, f);
        fprintf(f, "\", \"state\": \"%s\", \"committed\": %llu, \"wall_s\": %.3f}",
                d->state == 1 ? "done" : "failed", (unsigned long long)d->committed, d->wall_s);
    }
    fprintf(f, "]}\n");
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(*json);
        *json = NULL;
        return SPM_ENOMEM;
    }
    return 0;
}
