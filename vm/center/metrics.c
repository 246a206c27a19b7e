/*  =========================================================================
    metrics - the center's figures over its life: Prometheus text, the
    utilisation curve, and totals that outlive the jobs

    Names and labels follow Prometheus' and the node exporter's
    conventions: an `spm_` prefix, base units in the name (seconds,
    bytes), `_total` on counters, a `node` label (the node's name) on
    per-node series, `job_id` and `program` on a running job's (not `job`:
    Prometheus gives every series the `job` of its scrape configuration
    and would rename ours `exported_job`), `opcode`
    where a figure is per opcode (base/prom.h writes the text). Every
    metric is listed in docs/METRICS.md; the text is checked by
    `promtool check metrics` in tests/integration/test_metrics.c.
    =========================================================================
*/
#include "vm/center/metrics.h"
#include "base/build.h"
#include "base/grow.h"
#include "base/prom.h"
#include "runtime/registry.h"
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
} totals_t;

/*  What the center counted of one node's commits since it started. */
typedef struct {
    uint64_t sis;                   /* SIs its IEUs committed */
    uint64_t bytes_l2, bytes_store; /* operand bytes they fetched from nodes, the store */
    uint64_t bytes_pushed;          /* output bytes they pushed to other nodes */
    uint64_t corrupt;               /* corrupt copies they found */
} node_counts_t;

/*  The durations of one opcode's committed SIs. */
typedef struct {
    uint32_t opcode; /* spm_name_id of its name */
    spm_prom_hist_t h;
} op_hist_t;

typedef struct {
    double t_s;          /* seconds since the metrics began */
    float utilisation;   /* held slots over slots of live IEUs, 0..1 */
    uint32_t busy, ieus; /* IEUs holding SIs, live IEUs */
    uint64_t committed;  /* SIs committed in all, then */
} sample_t;

typedef struct {
    uint64_t job;
    char program[48];
    int state; /* 1 done, 2 failed, 3 canceled */
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
    uint64_t ended[4];         /* jobs ended, by state (1 done, 2 failed, 3 canceled): the
                                  history's at start, then every end seen */
    node_counts_t *nodes;      /* node index -> its counts, nnodes of them */
    size_t nnodes;
    op_hist_t *ops; /* one per opcode seen, nops of them */
    size_t nops, capops;
};

/*  The state a record's text names, as spm_idu_job_info_t has it (0: running). */
static int record_state(const Spm__JobRecord *r)
{
    if (!spm_history_ended(r))
        return 0;
    return strcmp(r->state, "done") == 0 ? 1 : strcmp(r->state, "canceled") == 0 ? 3 : 2;
}

spm_metrics_t *spm_metrics_new(spm_history_t *history)
{
    spm_metrics_t *self = calloc(1, sizeof(spm_metrics_t));
    Spm__JobRecord *first;
    size_t n = history ? spm_history_list(history, &first, 0) : 0;
    Spm__JobRecord **recs = n ? calloc(n, sizeof *recs) : NULL;
    if (!self || (n && !recs)) {
        free(recs);
        free(self);
        return NULL;
    }
    n = recs ? spm_history_list(history, recs, n) : 0;
    for (size_t i = 0; i < n; i++)
        self->ended[record_state(recs[i])]++;
    free(recs);
    return self;
}

void spm_metrics_destroy(spm_metrics_t **self_p)
{
    if (!*self_p)
        return;
    free((*self_p)->nodes);
    free((*self_p)->ops);
    free(*self_p);
    *self_p = NULL;
}

void spm_metrics_node_answer(spm_metrics_t *self, uint32_t node, Spm__Heartbeat *hb)
{
    assert(self);
    if (node >= self->nnodes)
        return;
    const node_counts_t *n = &self->nodes[node];
    hb->sis = n->sis;
    hb->fetched_node_bytes = n->bytes_l2;
    hb->fetched_store_bytes = n->bytes_store;
    hb->pushed_bytes = n->bytes_pushed;
    hb->corrupt = n->corrupt;
}

void spm_metrics_commit(spm_metrics_t *self, uint32_t node, uint32_t opcode,
                        const spm_idu_commit_t *c)
{
    assert(self);
    if (spm_grow_zeroed(&self->nodes, &self->nnodes, (size_t)node + 1, sizeof *self->nodes) == 0) {
        node_counts_t *n = &self->nodes[node];
        n->sis++;
        n->bytes_l2 += c->bytes_l2;
        n->bytes_store += c->bytes_store;
        n->bytes_pushed += c->bytes_pushed;
        n->corrupt += c->corrupt;
    }
    size_t i = 0;
    while (i < self->nops && self->ops[i].opcode != opcode)
        i++;
    if (i == self->nops) {
        if (spm_grow(&self->ops, self->nops, &self->capops, sizeof *self->ops, 8) != 0)
            return;
        self->ops[self->nops++] = (op_hist_t){.opcode = opcode};
    }
    spm_prom_observe(&self->ops[i].h, c->exec_us / 1e6);
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
}

void spm_metrics_job_end(spm_metrics_t *self, const spm_idu_job_info_t *info)
{
    assert(self);
    add(&self->retired, info);
    self->ended[info->state >= 1 && info->state <= 3 ? info->state : 2]++;
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

/*  A family of one label LABEL with N values V for the keys KEYS. */
static void labelled(FILE *f, const char *name, const char *type, const char *help,
                     const char *label, const char *const *keys, const double *v, size_t n)
{
    spm_prom_family(f, name, type, help);
    char l[96];
    for (size_t i = 0; i < n; i++)
        spm_prom_sample(f, name, spm_prom_labels(l, sizeof l, label, keys[i], NULL), v[i]);
}

/*  The `node` label's value of NODE: its name, or its index when it has
    none; a name that two nodes share (two agents on one host, neither
    given --name) gets "#INDEX" after it, so that no two nodes make one
    series. */
static const char *node_label(const spm_status_t *s, uint32_t node, char *buf, size_t size)
{
    const char *name = spm_status_name_of(s, node);
    if (!*name) {
        snprintf(buf, size, "%u", node);
        return buf;
    }
    for (uint32_t n = 0; n < s->nnode_names; n++)
        if (n != node && strcmp(s->node_names[n], name) == 0) {
            snprintf(buf, size, "%s#%u", name, node);
            return buf;
        }
    snprintf(buf, size, "%s", name);
    return buf;
}

/*  A node's figures, as the families below name them. */
enum {
    UP,
    BUSY,
    IDLE,
    SIS,
    FETCHED_L2,
    FETCHED_STORE,
    PUSHED,
    CORRUPT,
    SERVED,
    CACHE,
    KEPT,
    CPU,
    RSS,
    NFIELDS
};

/*  Per node: the IDU's IEUs and the center's counts of their commits (all
    nodes), what its agent last reported to the data plane (REPORTED) and
    of its processes (HEARD). */
typedef struct {
    double v[NFIELDS];
    int reported, heard;
} node_row_t;

/*  The per-node families, in order; entries of one name are one family
    (a second label KEY=VALUE tells them apart). WHEN: 0 every node, 1
    those whose agent reported its blocks, 2 those whose agent told of its
    processes. */
static const struct {
    const char *name, *type, *help, *key, *value;
    int field, when;
} node_fams[] = {
    {"spm_node_up", "gauge",
     "Whether the node's agent is in the VM (1) or not (0: dead or drained).", NULL, NULL, UP, 0},
    {"spm_node_ieus", "gauge", "The node's live IEUs: busy (holding SIs) or idle.", "state", "busy",
     BUSY, 0},
    {"spm_node_ieus", NULL, NULL, "state", "idle", IDLE, 0},
    {"spm_node_sis_total", "counter", "SIs the node's IEUs committed since the center started.",
     NULL, NULL, SIS, 0},
    {"spm_node_fetched_bytes_total", "counter",
     "Operand bytes the node's IEUs fetched, from other nodes or from the center's store, since "
     "the center started.",
     "source", "node", FETCHED_L2, 0},
    {"spm_node_fetched_bytes_total", NULL, NULL, "source", "store", FETCHED_STORE, 0},
    {"spm_node_pushed_bytes_total", "counter",
     "Output bytes the node's IEUs pushed to other nodes as replicas, since the center started.",
     NULL, NULL, PUSHED, 0},
    {"spm_node_corrupt_copies_total", "counter",
     "Corrupt copies the node's IEUs found (and fetched again), since the center started.", NULL,
     NULL, CORRUPT, 0},
    {"spm_node_served_bytes_total", "counter",
     "Block bytes the node's data agent served to other nodes and clients, as its agent last "
     "reported (since the agent started).",
     NULL, NULL, SERVED, 1},
    {"spm_node_cache_bytes", "gauge", "Bytes in the node's cache, as its agent last reported.",
     NULL, NULL, CACHE, 1},
    {"spm_node_kept_bytes", "gauge",
     "Bytes the node keeps for the VM (replicas, staged inputs), as its agent last reported.", NULL,
     NULL, KEPT, 1},
    {"spm_node_cpu_seconds_total", "counter",
     "CPU time of the node's spm processes (its agent and IEUs; an IEU started again counts from "
     "0), as its agent last reported.",
     NULL, NULL, CPU, 2},
    {"spm_node_resident_memory_bytes", "gauge",
     "Resident memory of the node's spm processes, as its agent last reported.", NULL, NULL, RSS,
     2},
};

/*  Fills *ROWS (malloc'd, caller frees) with every node the center has
    heard of; returns how many, 0 when none or out of memory. */
static size_t node_rows(spm_metrics_t *self, spm_idu_t *idu, spm_dataplane_t *dp,
                        const spm_status_t *s, node_row_t **rows)
{
    size_t n = s->nnode_names > s->agents ? s->nnode_names : s->agents;
    n = n > self->nnodes ? n : self->nnodes;
    uint32_t total = spm_idu_ieu_total(idu);
    for (uint32_t i = 0; i < total; i++) {
        spm_idu_ieu_info_t e;
        if (spm_idu_ieu_info(idu, i, &e) == 0 && e.node >= n)
            n = (size_t)e.node + 1;
    }
    *rows = n ? calloc(n, sizeof **rows) : NULL;
    if (!*rows)
        return 0;
    for (uint32_t i = 0; i < total; i++) {
        spm_idu_ieu_info_t e;
        if (spm_idu_ieu_info(idu, i, &e) != 0 || !e.alive)
            continue;
        (*rows)[e.node].v[BUSY] += e.held > 0;
        (*rows)[e.node].v[IDLE] += e.held == 0;
    }
    spm_directory_t *dir = spm_dataplane_directory(dp);
    for (uint32_t k = 0; k < n; k++) {
        node_row_t *r = &(*rows)[k];
        spm_dp_node_stats_t d;
        r->reported = spm_dataplane_node_stats(dp, k, &d);
        r->v[UP] = spm_directory_node(dir, k, NULL, NULL);
        r->v[SERVED] = (double)d.served_bytes;
        r->v[CACHE] = (double)d.cache_bytes;
        r->v[KEPT] = (double)d.kept_bytes;
        if (k < self->nnodes) {
            const node_counts_t *c = &self->nodes[k];
            r->v[SIS] = (double)c->sis;
            r->v[FETCHED_L2] = (double)c->bytes_l2;
            r->v[FETCHED_STORE] = (double)c->bytes_store;
            r->v[PUSHED] = (double)c->bytes_pushed;
            r->v[CORRUPT] = (double)c->corrupt;
        }
        if (k < s->nnode_use && s->node_use[k].heard_us) {
            r->heard = 1;
            r->v[CPU] = s->node_use[k].cpu_us / 1e6;
            r->v[RSS] = (double)s->node_use[k].rss_bytes;
        }
    }
    return n;
}

/*  The per-node families: each family's samples together, as the format
    wants. */
static void print_nodes(FILE *f, spm_metrics_t *self, spm_idu_t *idu, spm_dataplane_t *dp,
                        const spm_status_t *s)
{
    node_row_t *rows;
    size_t n = node_rows(self, idu, dp, s, &rows);
    char name[SPM_STATUS_NAME + 16], l[256];
    size_t nfams = sizeof node_fams / sizeof node_fams[0];
    for (size_t m = 0; m < nfams;) {
        spm_prom_family(f, node_fams[m].name, node_fams[m].type, node_fams[m].help);
        size_t end = m + 1; /* the entries of this family */
        while (end < nfams && strcmp(node_fams[end].name, node_fams[m].name) == 0)
            end++;
        for (size_t k = 0; k < n; k++) {
            const node_row_t *r = &rows[k];
            if ((node_fams[m].when == 1 && !r->reported) || (node_fams[m].when == 2 && !r->heard))
                continue;
            node_label(s, (uint32_t)k, name, sizeof name);
            for (size_t e = m; e < end; e++)
                spm_prom_sample(f, node_fams[e].name,
                                spm_prom_labels(l, sizeof l, "node", name, node_fams[e].key,
                                                node_fams[e].value, NULL),
                                r->v[node_fams[e].field]);
        }
        m = end;
    }
    free(rows);
}

/*  The per-job families, of the jobs running now. */
static void print_jobs(FILE *f, spm_idu_t *idu)
{
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        {"spm_job_sis_committed_total", "counter", "SIs the running job committed."},
        {"spm_job_sis_known", "gauge",
         "SIs of the running job known so far (issued, or expected by its program)."},
        {"spm_job_sis_per_second", "gauge",
         "SIs the running job committed per second, on average since it started."},
    };
    uint64_t ids[MAX_JOBS];
    size_t n = spm_idu_jobs(idu, ids, MAX_JOBS);
    for (size_t m = 0; m < sizeof fam / sizeof fam[0]; m++) {
        spm_prom_family(f, fam[m].name, fam[m].type, fam[m].help);
        for (size_t k = 0; k < n && k < MAX_JOBS; k++) {
            spm_idu_job_info_t j;
            if (spm_idu_job_info(idu, ids[k], &j) != 0 || j.state != 0)
                continue;
            char id[24], l[160];
            snprintf(id, sizeof id, "%llu", (unsigned long long)j.job);
            spm_prom_labels(l, sizeof l, "job_id", id, "program", j.program ? j.program : "", NULL);
            uint64_t known = j.expected > j.issued ? j.expected : j.issued;
            double v = m == 0   ? (double)j.committed
                       : m == 1 ? (double)known
                                : (j.wall_us ? j.committed / (j.wall_us / 1e6) : 0);
            spm_prom_sample(f, fam[m].name, l, v);
        }
    }
}

/*  The histogram of SI durations per opcode. */
static void print_durations(FILE *f, spm_metrics_t *self)
{
    spm_prom_family(f, "spm_si_duration_seconds", "histogram",
                    "Execution time of committed SIs, per opcode (an IEU's exec time, operand "
                    "fetching not included), since the center started.");
    for (size_t i = 0; i < self->nops; i++) {
        const spm_opcode_t *op = spm_opcode_by_id(self->ops[i].opcode);
        char id[16], l[160];
        snprintf(id, sizeof id, "0x%08x", self->ops[i].opcode); /* a plugin's, unknown here */
        spm_prom_labels(l, sizeof l, "opcode", op ? op->name : id, NULL);
        spm_prom_hist(f, "spm_si_duration_seconds", l, &self->ops[i].h);
    }
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
    static const char *const end_states[] = {"done", "failed", "canceled"};
    static const char *const levels[] = {"l1", "l2", "store"};
    static const char *const sources[] = {"node", "store"};
    static const char *const directions[] = {"in", "out"};
    spm_build_metric(f, "center");
    spm_prom_one(f, "spm_center_uptime_seconds", "gauge", "Seconds since the center started.",
                 s->uptime_us / 1e6);
    spm_prom_one(
        f, "spm_center_cpu_seconds_total", "counter",
        "CPU time of the center process (user and system), its ZeroMQ I/O thread included.",
        cpu_us / 1e6);
    spm_prom_one(f, "spm_nodes", "gauge", "Distinct nodes with live IEUs.", spm_idu_nodes(idu));
    spm_prom_one(f, "spm_agents_joined_total", "counter",
                 "Agents that joined since the center started (a rejoin counts again).", s->agents);
    labelled(f, "spm_ieus", "gauge", "IEUs by state: busy (holding SIs), idle, dead.", "state",
             ieu_states, (double[]){c.busy, c.idle, c.dead}, 3);
    spm_prom_one(f, "spm_slots", "gauge", "Execution slots of live IEUs.", (double)c.slots);
    spm_prom_one(f, "spm_slots_busy", "gauge", "Slots of live IEUs holding an SI.", (double)c.held);
    spm_prom_one(f, "spm_jobs_running", "gauge", "Jobs running now.", (double)running);
    labelled(f, "spm_jobs_ended_total", "counter",
             "Jobs ended, by end state: those of the job history as the center started, then "
             "every end since.",
             "state", end_states,
             (double[]){(double)self->ended[1], (double)self->ended[2], (double)self->ended[3]}, 3);
    spm_prom_one(f, "spm_sis_ready", "gauge", "SIs ready and not yet issued, over all jobs.",
                 (double)spm_idu_ready(idu));
    spm_prom_one(f, "spm_sis_issued_total", "counter", "SIs issued to IEUs.", (double)t.issued);
    spm_prom_one(f, "spm_sis_committed_total", "counter", "SIs committed.", (double)t.committed);
    spm_prom_one(f, "spm_sis_reissued_total", "counter",
                 "SIs issued again after their IEU died or their lease ended.", (double)t.reissued);
    spm_prom_one(f, "spm_sis_speculated_total", "counter", "Copies of straggling SIs issued.",
                 (double)t.speculated);
    labelled(f, "spm_cache_hits_total", "counter",
             "Operands found per level: the node's cache (l1), another node (l2), the store.",
             "level", levels,
             (double[]){(double)t.l1_hits, (double)t.l2_hits, (double)t.store_reads}, 3);
    spm_prom_one(f, "spm_cache_evictions_total", "counter", "Copies evicted from node caches.",
                 (double)t.evictions);
    labelled(f, "spm_fetched_bytes_total", "counter",
             "Operand bytes IEUs fetched, from other nodes or from the center's store.", "source",
             sources, (double[]){(double)t.bytes_l2, (double)t.bytes_store}, 2);
    spm_prom_one(f, "spm_pushed_bytes_total", "counter",
                 "Output bytes pushed to other nodes as replicas.", (double)t.bytes_pushed);
    labelled(f, "spm_center_block_bytes_total", "counter",
             "Block bytes through the center's socket.", "direction", directions,
             (double[]){(double)s->center_in, (double)s->center_out}, 2);
    spm_prom_one(f, "spm_store_bytes", "gauge", "Bytes of the store's pages holding blocks.",
                 (double)s->store_bytes);
    spm_prom_one(f, "spm_store_blocks", "gauge", "Blocks in the center's store.",
                 (double)s->store_blocks);
    spm_prom_one(f, "spm_node_block_versions", "gauge", "Block versions kept on the nodes.",
                 (double)d.dir.blocks);
    spm_prom_one(f, "spm_node_block_bytes", "gauge", "Bytes of the block versions on the nodes.",
                 (double)d.dir.bytes);
    spm_prom_one(f, "spm_blocks_short", "gauge", "Blocks with fewer keepers than replicas.",
                 (double)d.dir.short_blocks);
    spm_prom_one(f, "spm_blocks_lost_total", "counter", "Blocks whose every holder died.",
                 (double)d.dir.lost);
    spm_prom_one(f, "spm_copies_total", "counter", "Copies ordered after node deaths.",
                 (double)d.copies);
    spm_prom_one(f, "spm_corrupt_copies_total", "counter", "Corrupt copies reported.",
                 (double)d.corrupt);
    spm_prom_one(f, "spm_refused_connections_total", "counter",
                 "Connections refused by the allow-list (keys not in authorized/).",
                 (double)s->refused);
    spm_prom_one(f, "spm_dropped_messages_total", "counter",
                 "Malformed or unexpected messages dropped.", (double)s->dropped);
    spm_prom_one(f, "spm_garbage_versions_total", "counter", "Block versions deleted as garbage.",
                 (double)s->gc_versions);
    spm_prom_one(f, "spm_discarded_blocks_total", "counter", "Blocks deleted on clients' DISCARD.",
                 (double)s->discarded);
    spm_prom_one(f, "spm_failures_total", "counter", "Failures recorded (deaths, failed jobs).",
                 (double)s->nfailures);
    print_nodes(f, self, idu, dp, s);
    print_jobs(f, idu);
    print_durations(f, self);
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
            (unsigned long long)t.bytes_pushed, (unsigned long long)self->ended[1],
            (unsigned long long)self->ended[2]);
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
                d->state == 1   ? "done"
                : d->state == 3 ? "canceled"
                                : "failed",
                (unsigned long long)d->committed, d->wall_s);
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
