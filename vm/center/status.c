/*  =========================================================================
    status - what `spm status` shows: nodes, IEUs, jobs, caches, failures
    =========================================================================
*/
#include "vm/center/status.h"
#include "spm/spm.h"
#include "base/grow.h"
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LISTED 1024 /* jobs and IEUs listed at most */
#define RECENT 10       /* ended jobs listed, the last ones (spm jobs lists them all) */

/*  The line is escaped (base/log.h): it may carry a peer's strings (a
    node's name, an IEU's error text), and `spm status` prints it to a
    terminal. */
void spm_status_failure(spm_status_t *s, const char *fmt, ...)
{
    char line[sizeof s->failures[0]];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    spm_log_escape(line, s->failures[s->nfailures % SPM_STATUS_FAILURES], sizeof s->failures[0]);
    s->nfailures++;
}

int spm_status_node_name(spm_status_t *s, uint32_t node, const char *name)
{
    if (spm_grow_zeroed(&s->node_names, &s->nnode_names, (size_t)node + 1, sizeof *s->node_names) !=
        0)
        return SPM_ENOMEM;
    spm_log_escape(name, s->node_names[node], SPM_STATUS_NAME);
    return 0;
}

/*  NODE's entry of S->node_use, grown as needed, or NULL. */
static spm_status_node_t *node_use(spm_status_t *s, uint32_t node)
{
    if (node >= s->nnode_use &&
        spm_grow_zeroed(&s->node_use, &s->nnode_use, (size_t)node + 1, sizeof *s->node_use) != 0)
        return NULL;
    return &s->node_use[node];
}

int spm_status_node_heard(spm_status_t *s, uint32_t node, const Spm__Heartbeat *hb, uint64_t now_us)
{
    spm_status_node_t *u = node_use(s, node);
    if (!u)
        return SPM_ENOMEM;
    /* A rate over the interval since the last heartbeat. An IEU that was
       restarted counts from 0 again, so the sum can go down: that interval
       shows no rate rather than a negative one. */
    if (u->heard_us && now_us > u->heard_us)
        u->cpu_pct = hb->cpu_us >= u->cpu_us
                         ? (double)(hb->cpu_us - u->cpu_us) * 100.0 / (double)(now_us - u->heard_us)
                         : 0;
    u->cpu_us = hb->cpu_us;
    u->rss_bytes = hb->rss_bytes;
    u->processes = hb->processes;
    u->heard_us = now_us;
    return 0;
}

int spm_status_node_fetched(spm_status_t *s, uint32_t node, uint64_t bytes)
{
    spm_status_node_t *u = bytes ? node_use(s, node) : NULL;
    if (u)
        u->fetched_bytes += bytes;
    return !bytes || u ? 0 : SPM_ENOMEM;
}

int spm_status_ieu_left(spm_status_t *s, uint32_t index)
{
    if (spm_grow_zeroed(&s->ieu_left, &s->nieu_left, (size_t)index + 1, 1) != 0)
        return SPM_ENOMEM;
    s->ieu_left[index] = 1;
    return 0;
}

const char *spm_status_name_of(const spm_status_t *s, uint32_t node)
{
    return node < s->nnode_names ? s->node_names[node] : "";
}

void spm_status_free(spm_status_t *s)
{
    free(s->node_names);
    free(s->ieu_left);
    free(s->node_use);
    s->node_use = NULL;
    s->nnode_use = 0;
    s->node_names = NULL;
    s->ieu_left = NULL;
    s->nnode_names = s->nieu_left = 0;
}

static const char *job_state(int state)
{
    return state == 0 ? "running" : state == 1 ? "done" : state == 3 ? "canceled" : "failed";
}

/*  Seconds left at the job's rate lately (idu.h: not since its start, which
    a starved or resumed job's is not), 0 once it ended, or -1 when there is
    no telling: the rate is not known yet, or nothing was committed lately
    (then the text says "waiting"), or the number of SIs is not known. */
static double eta_s(const spm_idu_job_info_t *j, uint64_t known)
{
    if (j->state != 0)
        return 0;
    if (j->rate <= 0 || known <= j->committed)
        return -1;
    return (double)(known - j->committed) / j->rate;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

/*  N bytes for a person, in at most 10 characters ("1023.9 MiB"), into
    BUF (16 bytes); returns BUF. */
static const char *human(char *buf, uint64_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)n;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof unit / sizeof *unit) {
        v /= 1024;
        u++;
    }
    if (u)
        snprintf(buf, 16, "%.1f %s", v, unit[u]);
    else
        snprintf(buf, 16, "%llu B", (unsigned long long)n);
    return buf;
}

/*  IEUs per node by state (busy, idle), for the table of nodes. */
typedef struct {
    uint32_t busy, idle;
} node_ieus_t;

/*  The data plane's part: blocks through the center, the directory's
    counts, and per node what it keeps and serves, with its IEUs (IEUS,
    by node index, NIEUS of them) and its processes. */
static void print_blocks(spm_dataplane_t *dp, const spm_status_t *s, const node_ieus_t *ieus,
                         size_t nieus, FILE *j, FILE *t)
{
    spm_dataplane_stats_t d;
    spm_dataplane_stats(dp, &d);
    fprintf(j,
            ", \"blocks\": {\"center_in\": %llu, \"center_out\": %llu, \"versions\": %llu, "
            "\"bytes\": %llu, \"short\": %llu, \"lost\": %llu, \"copies\": %llu, "
            "\"copies_done\": %llu, \"corrupt\": %llu, \"nodes\": [",
            (unsigned long long)s->center_in, (unsigned long long)s->center_out,
            (unsigned long long)d.dir.blocks, (unsigned long long)d.dir.bytes,
            (unsigned long long)d.dir.short_blocks, (unsigned long long)d.dir.lost,
            (unsigned long long)d.copies, (unsigned long long)d.copies_done,
            (unsigned long long)d.corrupt);
    fprintf(t,
            "blocks: %llu versions in %.1f MiB on the nodes; %llu short of replicas, %llu lost;\n"
            "  %llu copies ordered (%llu done), %llu corrupt copies reported;\n"
            "  %.1f MiB in and %.1f MiB out through the center\n",
            (unsigned long long)d.dir.blocks, d.dir.bytes / 1048576.0,
            (unsigned long long)d.dir.short_blocks, (unsigned long long)d.dir.lost,
            (unsigned long long)d.copies, (unsigned long long)d.copies_done,
            (unsigned long long)d.corrupt, s->center_in / 1048576.0, s->center_out / 1048576.0);
    spm_directory_t *dir = spm_dataplane_directory(dp);
    int first = 1;
    for (uint32_t n = 0; n < s->agents && n < MAX_LISTED; n++) {
        spm_dp_node_stats_t ns;
        if (!spm_dataplane_node_stats(dp, n, &ns))
            continue;
        const char *ep = "";
        int up = spm_directory_node(dir, n, &ep, NULL);
        const char *name = spm_status_name_of(s, n);
        /* In 100 columns (a name past 16 characters is cut; --json has it
           whole, and the data endpoints). */
        if (first)
            fprintf(t, "\n%4s %-16s %-5s %9s %10s %10s %21s  %s\n", "node", "name", "state",
                    "busy/idle", "cache used", "kept", "bytes in/out", "last heard");
        fprintf(j, "%s{\"node\": %u, \"up\": %s, \"name\": ", first ? "" : ", ", n,
                up ? "true" : "false");
        json_str(j, name);
        fprintf(j, ", \"endpoint\": ");
        json_str(j, ep);
        fprintf(j,
                ", \"kept_blocks\": %llu, \"kept_bytes\": %llu, \"served_bytes\": %llu, "
                "\"stored_bytes\": %llu, \"cache_bytes\": %llu",
                (unsigned long long)ns.kept_blocks, (unsigned long long)ns.kept_bytes,
                (unsigned long long)ns.served_bytes, (unsigned long long)ns.stored_bytes,
                (unsigned long long)ns.cache_bytes);
        static const spm_status_node_t none;
        const spm_status_node_t *u = n < s->nnode_use ? &s->node_use[n] : &none;
        double heard = u->heard_us && s->now_us > u->heard_us
                           ? (double)(s->now_us - u->heard_us) / 1e6
                       : u->heard_us ? 0
                                     : -1;
        fprintf(j,
                ", \"ieus_busy\": %u, \"ieus_idle\": %u, \"cpu_pct\": %.1f, \"cpu_s\": %.2f, "
                "\"rss_bytes\": %llu, \"processes\": %u, \"fetched_bytes\": %llu, "
                "\"heard_s_ago\": %.1f}",
                n < nieus ? ieus[n].busy : 0, n < nieus ? ieus[n].idle : 0, u->cpu_pct,
                u->cpu_us / 1e6, (unsigned long long)u->rss_bytes, u->processes,
                (unsigned long long)u->fetched_bytes, heard);
        char cache[16], kept[16], in[16], out[16], io[40], ieu[24], last[24], cut[20];
        snprintf(cut, sizeof cut, "%.*s%s", strlen(name) > 16 ? 15 : 16, name,
                 strlen(name) > 16 ? "~" : "");
        snprintf(ieu, sizeof ieu, "%u/%u", n < nieus ? ieus[n].busy : 0,
                 n < nieus ? ieus[n].idle : 0);
        snprintf(io, sizeof io, "%s/%s", human(in, u->fetched_bytes + ns.stored_bytes),
                 human(out, ns.served_bytes));
        if (heard < 0)
            snprintf(last, sizeof last, "never");
        else
            snprintf(last, sizeof last, "%.1f s ago", heard);
        fprintf(t, "%4u %-16s %-5s %9s %10s %10s %21s  %s\n", n, cut, up ? "up" : "down", ieu,
                human(cache, ns.cache_bytes), human(kept, ns.kept_bytes), io, last);
        first = 0;
    }
    fprintf(j, "]}");
}

/*  The last RECENT ended jobs of history H, after the running ones (MORE:
    some were listed), with their end state and error. */
static void print_recent(spm_history_t *h, int more, FILE *j, FILE *t)
{
    Spm__JobRecord *recs[MAX_LISTED];
    size_t n = h ? spm_history_list(h, recs, MAX_LISTED) : 0, listed = 0;
    for (size_t k = 0; k < n && k < MAX_LISTED && listed < RECENT; k++) {
        const Spm__JobRecord *r = recs[k];
        if (!spm_history_ended(r))
            continue;
        if (!listed)
            fprintf(t, "\nrecently ended (spm jobs lists them all):\n");
        fprintf(j, "%s{\"job\": %llu, \"program\": ", more || listed ? ", " : "",
                (unsigned long long)r->job);
        json_str(j, r->program);
        fprintf(j, ", \"state\": ");
        json_str(j, r->state);
        fprintf(j,
                ", \"committed\": %llu, \"known\": %llu, \"ready\": 0, \"reissued\": 0, "
                "\"elapsed_s\": %.3f, \"eta_s\": 0, \"error\": ",
                (unsigned long long)r->committed, (unsigned long long)r->known, r->run_us / 1e6);
        json_str(j, r->error);
        fprintf(j, "}");
        fprintf(t, "%5llu  %-12.12s %-8s %7.1f s  %s\n", (unsigned long long)r->job, r->program,
                r->state, r->run_us / 1e6, r->error);
        listed++;
    }
}

int spm_status_build(spm_idu_t *idu, spm_dataplane_t *dp, const spm_status_t *s, char **json,
                     char **text)
{
    size_t jlen, tlen;
    FILE *j = open_memstream(json, &jlen), *t = open_memstream(text, &tlen);
    if (!j || !t) {
        if (j)
            fclose(j);
        if (t)
            fclose(t);
        return SPM_ENOMEM;
    }
    uint32_t total = spm_idu_ieu_total(idu), busy = 0, idle = 0, dead = 0, left = 0;
    size_t nnodes = s->agents < MAX_LISTED ? s->agents : MAX_LISTED;
    node_ieus_t *per_node = calloc(nnodes ? nnodes : 1, sizeof *per_node);
    fprintf(j, "{\"uptime_s\": %.3f, \"nodes\": %u, \"agents\": %u, \"ieus\": [",
            s->uptime_us / 1e6, spm_idu_nodes(idu), s->agents);
    for (uint32_t i = 0; i < total && i < MAX_LISTED; i++) {
        spm_idu_ieu_info_t e;
        spm_idu_ieu_info(idu, i, &e);
        int drained = !e.alive && i < s->nieu_left && s->ieu_left[i];
        const char *st = drained ? "left" : !e.alive ? "dead" : e.held ? "busy" : "idle";
        busy += e.alive && e.held;
        idle += e.alive && !e.held;
        left += drained;
        dead += !e.alive && !drained;
        if (per_node && e.alive && e.node < nnodes) {
            per_node[e.node].busy += e.held > 0;
            per_node[e.node].idle += !e.held;
        }
        fprintf(j, "%s{\"ieu\": %u, \"node\": %u, \"slots\": %u, \"state\": \"%s\", \"held\": %u}",
                i ? ", " : "", i, e.node, e.slots, st, e.held);
    }
    fprintf(t,
            "center up %.1f s: %u nodes, %u IEUs (%u busy, %u idle, %u left, %u dead), %llu SIs "
            "ready\n",
            s->uptime_us / 1e6, spm_idu_nodes(idu), busy + idle, busy, idle, left, dead,
            (unsigned long long)spm_idu_ready(idu));
    fprintf(t, "refused connections %llu, dropped messages %llu, garbage versions deleted %llu\n",
            (unsigned long long)s->refused, (unsigned long long)s->dropped,
            (unsigned long long)s->gc_versions);
    spm_dataplane_stats_t ds;
    spm_dataplane_stats(dp, &ds);
    fprintf(t, "store: %llu blocks in %.1f MiB; %llu blocks discarded by their clients",
            (unsigned long long)s->store_blocks, s->store_bytes / 1048576.0,
            (unsigned long long)s->discarded);
    if (ds.store_pending) /* deletions that failed (a full disk), tried again */
        fprintf(t, "; %llu waiting to be deleted", (unsigned long long)ds.store_pending);
    fprintf(t, "\n");
    fprintf(j, "]");
    print_blocks(dp, s, per_node, per_node ? nnodes : 0, j, t);
    free(per_node);
    uint64_t ids[MAX_LISTED];
    size_t n = spm_idu_jobs(idu, ids, MAX_LISTED);
    fprintf(j, ", \"ready\": %llu, \"jobs\": [", (unsigned long long)spm_idu_ready(idu));
    if (n)
        fprintf(t, "\n%5s %-12s %-8s %15s %7s %9s %8s %9s %9s %9s\n", "job", "program", "state",
                "committed/known", "ready", "elapsed", "eta", "l1 hits", "l2 hits", "store rd");
    for (size_t k = 0; k < n && k < MAX_LISTED; k++) {
        spm_idu_job_info_t ji;
        if (spm_idu_job_info(idu, ids[k], &ji) != 0)
            continue;
        uint64_t known = ji.expected > ji.issued ? ji.expected : ji.issued;
        double eta = eta_s(&ji, known);
        fprintf(j, "%s{\"job\": %llu, \"program\": ", k ? ", " : "", (unsigned long long)ji.job);
        json_str(j, ji.program);
        fprintf(j,
                ", \"state\": \"%s\", \"committed\": %llu, \"known\": %llu, \"ready\": %llu, "
                "\"reissued\": %llu, \"elapsed_s\": %.3f, \"eta_s\": %.3f, \"l1_hits\": %llu, "
                "\"l2_hits\": %llu, \"store_reads\": %llu, \"bytes_l2\": %llu, \"bytes_store\": "
                "%llu}",
                job_state(ji.state), (unsigned long long)ji.committed, (unsigned long long)known,
                (unsigned long long)ji.ready, (unsigned long long)ji.reissued, ji.wall_us / 1e6,
                eta, (unsigned long long)ji.l1_hits, (unsigned long long)ji.l2_hits,
                (unsigned long long)ji.store_reads, (unsigned long long)ji.bytes_l2,
                (unsigned long long)ji.bytes_store);
        char eta_txt[32];
        if (eta < 0 && ji.rate == 0)
            snprintf(eta_txt, sizeof eta_txt, "waiting");
        else if (eta < 0)
            snprintf(eta_txt, sizeof eta_txt, "-");
        else
            snprintf(eta_txt, sizeof eta_txt, "%.1f s", eta);
        char progress[48];
        snprintf(progress, sizeof progress, "%llu/%llu", (unsigned long long)ji.committed,
                 (unsigned long long)known);
        fprintf(t, "%5llu %-12.12s %-8s %15s %7llu %7.1f s %8s %9llu %9llu %9llu\n",
                (unsigned long long)ji.job, ji.program, job_state(ji.state), progress,
                (unsigned long long)ji.ready, ji.wall_us / 1e6, eta_txt,
                (unsigned long long)ji.l1_hits, (unsigned long long)ji.l2_hits,
                (unsigned long long)ji.store_reads);
    }
    print_recent(s->history, n > 0, j, t);
    fprintf(j,
            "], \"refused\": %llu, \"dropped\": %llu, \"gc_versions\": %llu, \"discarded\": %llu, "
            "\"store_blocks\": %llu, \"store_bytes\": %llu, \"failures\": [",
            (unsigned long long)s->refused, (unsigned long long)s->dropped,
            (unsigned long long)s->gc_versions, (unsigned long long)s->discarded,
            (unsigned long long)s->store_blocks, (unsigned long long)s->store_bytes);
    uint64_t first = s->nfailures > SPM_STATUS_FAILURES ? s->nfailures - SPM_STATUS_FAILURES : 0;
    if (s->nfailures)
        fprintf(t, "\nrecent failures:\n");
    for (uint64_t k = first; k < s->nfailures; k++) {
        const char *f = s->failures[k % SPM_STATUS_FAILURES];
        fprintf(j, "%s", k > first ? ", " : "");
        json_str(j, f);
        fprintf(t, "  %s\n", f);
    }
    fprintf(j, "]}\n");
    int bad = ferror(j) || ferror(t);
    fclose(j);
    fclose(t);
    if (bad) {
        free(*json);
        free(*text);
        return SPM_ENOMEM;
    }
    return 0;
}
