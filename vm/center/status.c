/*  =========================================================================
    status - what `spm status` shows: nodes, IEUs, jobs, caches, failures
    =========================================================================
*/
#include "vm/center/status.h"
#include "spm/spm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LISTED 1024 /* jobs and IEUs listed at most */

void spm_status_failure(spm_status_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->failures[s->nfailures % SPM_STATUS_FAILURES], sizeof s->failures[0], fmt, ap);
    va_end(ap);
    s->nfailures++;
}

static const char *job_state(int state)
{
    return state == 0 ? "running" : state == 1 ? "done" : "failed";
}

/*  Seconds left at the rate so far, or -1 when unknown. */
static double eta_s(const spm_idu_job_info_t *j, uint64_t known)
{
    if (j->state != 0 || j->committed == 0 || known <= j->committed)
        return j->state != 0 ? 0 : -1;
    return j->wall_us / 1e6 * (double)(known - j->committed) / (double)j->committed;
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

/*  The data plane's part: blocks through the center, the directory's
    counts, and per node what it keeps and serves. */
static void print_blocks(spm_dataplane_t *dp, const spm_status_t *s, FILE *j, FILE *t)
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
            "blocks: %llu versions in %.1f MiB on the nodes; %llu short of replicas, %llu lost; "
            "%llu copies ordered (%llu done), %llu corrupt copies reported; %.1f MiB in and "
            "%.1f MiB out through the center\n",
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
        if (first)
            fprintf(t, "%5s %-5s %12s %12s %14s %14s  %s\n", "node", "state", "kept blocks",
                    "kept MiB", "served MiB", "taken MiB", "data endpoint");
        fprintf(j, "%s{\"node\": %u, \"up\": %s, \"endpoint\": ", first ? "" : ", ", n,
                up ? "true" : "false");
        json_str(j, ep);
        fprintf(j,
                ", \"kept_blocks\": %llu, \"kept_bytes\": %llu, \"served_bytes\": %llu, "
                "\"stored_bytes\": %llu, \"cache_bytes\": %llu}",
                (unsigned long long)ns.kept_blocks, (unsigned long long)ns.kept_bytes,
                (unsigned long long)ns.served_bytes, (unsigned long long)ns.stored_bytes,
                (unsigned long long)ns.cache_bytes);
        fprintf(t, "%5u %-5s %12llu %12.1f %14.1f %14.1f  %s\n", n, up ? "up" : "down",
                (unsigned long long)ns.kept_blocks, ns.kept_bytes / 1048576.0,
                ns.served_bytes / 1048576.0, ns.stored_bytes / 1048576.0, ep);
        first = 0;
    }
    fprintf(j, "]}");
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
    uint32_t total = spm_idu_ieu_total(idu), busy = 0, idle = 0, dead = 0;
    fprintf(j, "{\"uptime_s\": %.3f, \"nodes\": %u, \"agents\": %u, \"ieus\": [",
            s->uptime_us / 1e6, spm_idu_nodes(idu), s->agents);
    for (uint32_t i = 0; i < total && i < MAX_LISTED; i++) {
        spm_idu_ieu_info_t e;
        spm_idu_ieu_info(idu, i, &e);
        const char *st = !e.alive ? "dead" : e.held ? "busy" : "idle";
        busy += e.alive && e.held;
        idle += e.alive && !e.held;
        dead += !e.alive;
        fprintf(j, "%s{\"ieu\": %u, \"node\": %u, \"slots\": %u, \"state\": \"%s\", \"held\": %u}",
                i ? ", " : "", i, e.node, e.slots, st, e.held);
    }
    fprintf(t, "center up %.1f s: %u nodes, %u IEUs (%u busy, %u idle, %u dead), %llu SIs ready\n",
            s->uptime_us / 1e6, spm_idu_nodes(idu), busy + idle, busy, idle, dead,
            (unsigned long long)spm_idu_ready(idu));
    fprintf(t, "refused connections %llu, dropped messages %llu, garbage versions deleted %llu\n",
            (unsigned long long)s->refused, (unsigned long long)s->dropped,
            (unsigned long long)s->gc_versions);
    fprintf(t, "store: %llu blocks in %.1f MiB; %llu blocks discarded by their clients\n",
            (unsigned long long)s->store_blocks, s->store_bytes / 1048576.0,
            (unsigned long long)s->discarded);
    fprintf(j, "]");
    print_blocks(dp, s, j, t);
    uint64_t ids[MAX_LISTED];
    size_t n = spm_idu_jobs(idu, ids, MAX_LISTED);
    fprintf(j, ", \"ready\": %llu, \"jobs\": [", (unsigned long long)spm_idu_ready(idu));
    if (n)
        fprintf(t, "\n%5s  %-12s %-8s %15s %7s %9s %8s %9s %9s %9s\n", "job", "program", "state",
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
        if (eta < 0)
            snprintf(eta_txt, sizeof eta_txt, "?");
        else
            snprintf(eta_txt, sizeof eta_txt, "%.1f s", eta);
        char progress[48];
        snprintf(progress, sizeof progress, "%llu/%llu", (unsigned long long)ji.committed,
                 (unsigned long long)known);
        fprintf(t, "%5llu  %-12.12s %-8s %15s %7llu %7.1f s %8s %9llu %9llu %9llu\n",
                (unsigned long long)ji.job, ji.program, job_state(ji.state), progress,
                (unsigned long long)ji.ready, ji.wall_us / 1e6, eta_txt,
                (unsigned long long)ji.l1_hits, (unsigned long long)ji.l2_hits,
                (unsigned long long)ji.store_reads);
    }
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
