/*  =========================================================================
    metrics - the node's own /metrics: what `spm agent --http` serves
    (vm/agent/metrics.h). Every metric is listed in docs/METRICS.md.
    =========================================================================
*/
#include "vm/agent/metrics.h"
#include "base/build.h"
#include "base/clock.h"
#include "base/prom.h"
#include "base/procstat.h"
#include "transport/http.h"

#include <stdlib.h>
#include <unistd.h>

void spm_agent_metrics_heard(agent_t *a, const Spm__Heartbeat *hb)
{
    const uint64_t now[SPM_AGENT_COUNTED] = {
        hb->sis, hb->fetched_node_bytes, hb->fetched_store_bytes, hb->pushed_bytes, hb->corrupt};
    for (int i = 0; i < SPM_AGENT_COUNTED; i++) {
        if (now[i] < a->counted[i]) /* a center that started again counts from 0 */
            a->counted_before[i] += a->counted[i];
        a->counted[i] = now[i];
    }
}

/*  The count I (Heartbeat.sis ...) over every center this agent served. */
static double counted(const agent_t *a, int i)
{
    return (double)(a->counted_before[i] + a->counted[i]);
}

/*  One family of one sample labelled with the node (LABELS). */
static void node_one(FILE *f, const char *labels, const char *name, const char *type,
                     const char *help, double v)
{
    spm_prom_family(f, name, type, help);
    spm_prom_sample(f, name, labels, v);
}

static void write_text(agent_t *a, int center_up, FILE *f)
{
    char node[300], l[400];
    spm_prom_labels(node, sizeof node, "node", a->name, NULL);
    spm_build_metric(f, "agent");
    node_one(f, node, "spm_agent_uptime_seconds", "gauge", "Seconds since the agent started.",
             (spm_now_us() - a->started_us) / 1e6);
    node_one(f, node, "spm_agent_center_up", "gauge",
             "Whether the center answers the agent (1) or it waits for it (0).", center_up);
    uint32_t running = 0, waiting = 0, stopped = 0;
    pid_t pids[1 + 1024];
    int npids = 0;
    pids[npids++] = getpid();
    for (long i = 0; i < a->nkids; i++) {
        running += a->kids[i].pid > 0;
        waiting += a->kids[i].pid <= 0 && a->kids[i].restart_at;
        stopped += a->kids[i].pid <= 0 && !a->kids[i].restart_at;
        if (npids < (int)(sizeof pids / sizeof *pids))
            pids[npids++] = a->kids[i].pid;
    }
    spm_prom_family(f, "spm_node_ieus", "gauge",
                    "The node's IEU processes: running, waiting to be started again after a "
                    "death, or stopped (given up after a crash loop, or drained).");
    const char *states[] = {"running", "waiting", "stopped"};
    const uint32_t counts[] = {running, waiting, stopped};
    for (int i = 0; i < 3; i++)
        spm_prom_sample(f, "spm_node_ieus",
                        spm_prom_labels(l, sizeof l, "node", a->name, "state", states[i], NULL),
                        counts[i]);
    node_one(f, node, "spm_node_ieu_restarts_total", "counter",
             "IEU processes the agent started again after they died.", (double)a->ieu_restarts);
    node_one(f, node, "spm_node_sis_total", "counter",
             "SIs the node's IEUs committed (counted by the center, heard with its heartbeats).",
             counted(a, 0));
    spm_prom_family(f, "spm_node_fetched_bytes_total", "counter",
                    "Operand bytes the node's IEUs fetched, from other nodes or from the "
                    "center's store (counted by the center).");
    spm_prom_sample(f, "spm_node_fetched_bytes_total",
                    spm_prom_labels(l, sizeof l, "node", a->name, "source", "node", NULL),
                    counted(a, 1));
    spm_prom_sample(f, "spm_node_fetched_bytes_total",
                    spm_prom_labels(l, sizeof l, "node", a->name, "source", "store", NULL),
                    counted(a, 2));
    node_one(f, node, "spm_node_pushed_bytes_total", "counter",
             "Output bytes the node's IEUs pushed to other nodes as replicas (counted by the "
             "center).",
             counted(a, 3));
    node_one(f, node, "spm_node_corrupt_copies_total", "counter",
             "Corrupt copies the node's IEUs found and fetched again (counted by the center).",
             counted(a, 4));
    spm_dataagent_stats_t st;
    spm_dataagent_stats(a->served, &st);
    node_one(f, node, "spm_node_served_blocks_total", "counter",
             "Blocks the node's data agent served to other nodes and clients.", (double)st.served);
    node_one(f, node, "spm_node_served_bytes_total", "counter",
             "Block bytes the node's data agent served to other nodes and clients.",
             (double)st.served_bytes);
    node_one(f, node, "spm_node_stored_bytes_total", "counter",
             "Block bytes the node took to keep (replicas, staged inputs, copies).",
             (double)st.stored_bytes);
    spm_nodecache_stats_t cs;
    spm_nodecache_stats(a->cache, &cs);
    node_one(f, node, "spm_node_cache_bytes", "gauge", "Bytes in the node's cache, kept or not.",
             (double)cs.bytes);
    node_one(f, node, "spm_node_cache_blocks", "gauge", "Blocks in the node's cache.",
             (double)cs.blocks);
    node_one(f, node, "spm_node_kept_bytes", "gauge",
             "Bytes the node keeps for the VM (replicas, staged inputs).", (double)cs.kept_bytes);
    spm_prom_family(f, "spm_node_cache_capacity_bytes", "gauge",
                    "The node cache's budget (agent.cache_mb); no sample: no limit.");
    if (cs.budget)
        spm_prom_sample(f, "spm_node_cache_capacity_bytes", node, (double)cs.budget);
    node_one(f, node, "spm_node_cache_evictions_total", "counter",
             "Copies evicted from the node's cache to stay within its budget.",
             (double)cs.evictions);
    node_one(f, node, "spm_node_cache_evicted_bytes_total", "counter",
             "Bytes of the copies evicted from the node's cache.", (double)cs.bytes_evicted);
    spm_procstat_t all = {0}, self = {0};
    spm_procstat_sum(pids, npids, &all);
    spm_procstat_read(0, &self);
    node_one(f, node, "spm_node_cpu_seconds_total", "counter",
             "CPU time of the node's spm processes, the agent and its IEUs (an IEU started "
             "again counts from 0).",
             all.cpu_us / 1e6);
    node_one(f, node, "spm_node_resident_memory_bytes", "gauge",
             "Resident memory of the node's spm processes, the agent and its IEUs.",
             (double)all.rss_bytes);
    spm_prom_one(f, "process_cpu_seconds_total", "counter",
                 "CPU time of the agent process (user and system).", self.cpu_us / 1e6);
    spm_prom_one(f, "process_resident_memory_bytes", "gauge",
                 "Resident memory of the agent process.", (double)self.rss_bytes);
}

void spm_agent_metrics_publish(agent_t *a, int center_up)
{
    if (!a->http)
        return;
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    write_text(a, center_up, f);
    int bad = ferror(f);
    fclose(f);
    spm_http_snapshot_t *snap = spm_http_snapshot_new();
    if (bad || !snap) {
        free(text);
        spm_http_snapshot_destroy(&snap);
        return;
    }
    if (spm_http_snapshot_add(snap, "/metrics", SPM_HTTP_PROMETHEUS, text) == 0)
        spm_http_publish(a->http, &snap);
    else
        spm_http_snapshot_destroy(&snap);
}
