/*  =========================================================================
    report - the run report: built in the center (vm/center/report_build.c), printed by the client
    =========================================================================
*/
#include "transport/report.h"
#include "base/json.h"

#include "spm/spm.h"

#include <stdlib.h>
#include <string.h>

void spm_report_free(Spm__Report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_ieus; i++)
        free(r->ieus[i]);
    free(r->ieus);
    for (size_t i = 0; i < r->n_opcodes; i++) {
        free(r->opcodes[i]->name);
        free(r->opcodes[i]);
    }
    free(r->opcodes);
    free(r->program);
    free(r->error);
    free(r->result.data);
    free(r);
}

void spm_report_overheads(const Spm__Report *r, spm_overheads_t *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < r->n_ieus; i++) {
        o->busy_s += r->ieus[i]->busy_us / 1e6;
        o->wait_s += r->ieus[i]->wait_us / 1e6;
        o->idle_s += r->ieus[i]->idle_us / 1e6;
    }
    o->man_s = r->center_cpu_us / 1e6;
    if (o->busy_s > 0) {
        o->w_idle = o->idle_s / o->busy_s;
        o->w_comm = o->wait_s / o->busy_s;
        o->w_man = o->man_s / o->busy_s;
        o->efficiency = 1.0 / (1.0 + o->w_idle + o->w_comm + o->w_man);
    }
}

static void print_json(const Spm__Report *r, const spm_overheads_t *o, FILE *out)
{
    fprintf(out, "{\"job\": %llu, \"program\": ", (unsigned long long)r->job);
    spm_json_string(out, r->program);
    fprintf(out, ", \"status\": \"%s\", \"error\": ", spm_report_state(r->status));
    spm_json_string(out, r->error);
    fprintf(out,
            ", \"wall_s\": %.6f, \"issued\": %llu, \"committed\": %llu, \"reissued\": %llu, "
            "\"stale\": %llu, \"merges\": %llu, \"w_idle\": %.6f, \"w_comm\": %.6f, "
            "\"w_man\": %.6f, \"efficiency\": %.6f, \"busy_s\": %.6f, \"center_cpu_s\": %.6f, "
            "\"l1_hits\": %llu, \"l2_hits\": %llu, \"store_reads\": %llu, \"bytes_l2\": %llu, "
            "\"bytes_store\": %llu, \"evictions\": %llu, \"speculated\": %llu, "
            "\"spec_wins\": %llu, \"bytes_pushed\": %llu, \"corrupt\": %llu, "
            "\"center_in\": %llu, \"center_out\": %llu, \"copies\": %llu, \"restarts\": %u, "
            "\"resumed\": %llu, \"ieus\": [",
            r->wall_us / 1e6, (unsigned long long)r->issued, (unsigned long long)r->committed,
            (unsigned long long)r->reissued, (unsigned long long)r->stale,
            (unsigned long long)r->merges, o->w_idle, o->w_comm, o->w_man, o->efficiency, o->busy_s,
            o->man_s, (unsigned long long)r->l1_hits, (unsigned long long)r->l2_hits,
            (unsigned long long)r->store_reads, (unsigned long long)r->bytes_l2,
            (unsigned long long)r->bytes_store, (unsigned long long)r->evictions,
            (unsigned long long)r->speculated, (unsigned long long)r->spec_wins,
            (unsigned long long)r->bytes_pushed, (unsigned long long)r->corrupt,
            (unsigned long long)r->center_in, (unsigned long long)r->center_out,
            (unsigned long long)r->copies, r->restarts, (unsigned long long)r->resumed);
    for (size_t i = 0; i < r->n_ieus; i++) {
        const Spm__IeuReport *e = r->ieus[i];
        fprintf(out,
                "%s{\"ieu\": %u, \"node\": %u, \"slots\": %u, \"sis\": %llu, \"busy_s\": %.6f, "
                "\"wait_s\": %.6f, \"idle_s\": %.6f, \"bytes_l2\": %llu, \"bytes_store\": %llu, "
                "\"bytes_pushed\": %llu, \"dead\": %s}",
                i ? ", " : "", e->ieu, e->node, e->slots, (unsigned long long)e->sis,
                e->busy_us / 1e6, e->wait_us / 1e6, e->idle_us / 1e6,
                (unsigned long long)e->bytes_l2, (unsigned long long)e->bytes_store,
                (unsigned long long)e->bytes_pushed, e->dead ? "true" : "false");
    }
    fprintf(out, "], \"opcodes\": [");
    for (size_t i = 0; i < r->n_opcodes; i++) {
        const Spm__OpcodeReport *o = r->opcodes[i];
        fprintf(out, "%s{\"name\": ", i ? ", " : "");
        spm_json_string(out, o->name);
        fprintf(out, ", \"sis\": %llu, \"busy_s\": %.6f, \"wait_s\": %.6f}",
                (unsigned long long)o->sis, o->busy_us / 1e6, o->wait_us / 1e6);
    }
    fprintf(out, "]}\n");
}

/*  Block bytes per node, from its IEUs' rows, when any moved. */
static void print_nodes(const Spm__Report *r, FILE *out)
{
    uint32_t nodes = 0;
    uint64_t moved = 0;
    for (size_t i = 0; i < r->n_ieus; i++) {
        const Spm__IeuReport *e = r->ieus[i];
        nodes = e->node + 1 > nodes ? e->node + 1 : nodes;
        moved += e->bytes_l2 + e->bytes_store + e->bytes_pushed;
    }
    if (!moved || nodes < 2 || nodes > 4096)
        return;
    fprintf(out, "  %5s %14s %14s %14s\n", "node", "MiB from peers", "MiB to peers",
            "MiB from store");
    for (uint32_t n = 0; n < nodes; n++) {
        uint64_t in = 0, pushed = 0, store = 0;
        int seen = 0;
        for (size_t i = 0; i < r->n_ieus; i++) {
            const Spm__IeuReport *e = r->ieus[i];
            if (e->node != n)
                continue;
            seen = 1;
            in += e->bytes_l2;
            pushed += e->bytes_pushed;
            store += e->bytes_store;
        }
        if (seen)
            fprintf(out, "  %5u %14.1f %14.1f %14.1f\n", n, in / 1048576.0, pushed / 1048576.0,
                    store / 1048576.0);
    }
}

const char *spm_report_state(int status)
{
    return status == 0 ? "done" : status == SPM_ECANCELED ? "canceled" : "failed";
}

static void print_text(const Spm__Report *r, const spm_overheads_t *o, FILE *out)
{
    double cap = o->busy_s + o->wait_s + o->idle_s;
    fprintf(out, "job %llu (%s) %s in %.3f s\n", (unsigned long long)r->job, r->program,
            r->status == 0               ? "done"
            : r->status == SPM_ECANCELED ? "CANCELED"
                                         : "FAILED",
            r->wall_us / 1e6);
    if (r->status != 0)
        fprintf(out, "  error: %s\n", r->error);
    if (r->restarts)
        fprintf(out,
                "  resumed after %u center restart%s: %llu committed SIs taken from the journal\n",
                r->restarts, r->restarts == 1 ? "" : "s", (unsigned long long)r->resumed);
    if (r->speculated)
        fprintf(out, "  stragglers: %llu speculative copies, %llu finished first\n",
                (unsigned long long)r->speculated, (unsigned long long)r->spec_wins);
    fprintf(out,
            "  SIs: %llu issued, %llu committed, %llu re-issued, %llu stale commits, "
            "%llu merges\n",
            (unsigned long long)r->issued, (unsigned long long)r->committed,
            (unsigned long long)r->reissued, (unsigned long long)r->stale,
            (unsigned long long)r->merges);
    if (cap > 0)
        fprintf(out, "  IEU slots: %.1f%% executing, %.1f%% waiting for data, %.1f%% idle\n",
                100 * o->busy_s / cap, 100 * o->wait_s / cap, 100 * o->idle_s / cap);
    fprintf(out, "  overheads: w_idle %.4f  w_comm %.4f  w_man %.4f  efficiency %.3f\n", o->w_idle,
            o->w_comm, o->w_man, o->efficiency);
    fprintf(out,
            "  data: %llu level-1 hits, %llu level-2 hits (%.1f MiB), %llu store reads (%.1f MiB), "
            "%llu evictions\n",
            (unsigned long long)r->l1_hits, (unsigned long long)r->l2_hits, r->bytes_l2 / 1048576.0,
            (unsigned long long)r->store_reads, r->bytes_store / 1048576.0,
            (unsigned long long)r->evictions);
    if (r->bytes_pushed || r->center_in || r->center_out || r->corrupt)
        fprintf(out,
                "  blocks: %.1f MiB node to node (%.1f MiB fetched, %.1f MiB of replicas), "
                "%.1f MiB through the center (%.1f in, %.1f out)\n",
                (r->bytes_l2 + r->bytes_pushed) / 1048576.0, r->bytes_l2 / 1048576.0,
                r->bytes_pushed / 1048576.0, (r->center_in + r->center_out) / 1048576.0,
                r->center_in / 1048576.0, r->center_out / 1048576.0);
    if (r->corrupt)
        fprintf(out, "  corrupt copies met and fetched again elsewhere: %llu\n",
                (unsigned long long)r->corrupt);
    if (r->copies)
        fprintf(out, "  blocks copied again after nodes died: %llu\n",
                (unsigned long long)r->copies);
    print_nodes(r, out);
    if (r->n_opcodes > 1) {
        fprintf(out, "  %-36s %8s %10s %10s %10s\n", "opcode", "SIs", "busy s", "mean ms",
                "wait s");
        for (size_t i = 0; i < r->n_opcodes; i++) {
            const Spm__OpcodeReport *o = r->opcodes[i];
            fprintf(out, "  %-36.36s %8llu %10.3f %10.3f %10.3f\n", o->name,
                    (unsigned long long)o->sis, o->busy_us / 1e6,
                    o->sis ? o->busy_us / 1e3 / (double)o->sis : 0.0, o->wait_us / 1e6);
        }
    }
    fprintf(out, "  %5s %5s %8s %10s %10s %10s\n", "ieu", "node", "SIs", "busy s", "wait s",
            "idle s");
    for (size_t i = 0; i < r->n_ieus; i++) {
        const Spm__IeuReport *e = r->ieus[i];
        fprintf(out, "  %5u %5u %8llu %10.3f %10.3f %10.3f%s\n", e->ieu, e->node,
                (unsigned long long)e->sis, e->busy_us / 1e6, e->wait_us / 1e6, e->idle_us / 1e6,
                e->dead ? "  (dead)" : "");
    }
}

void spm_report_print(const Spm__Report *r, int as_json, FILE *out)
{
    spm_overheads_t o;
    spm_report_overheads(r, &o);
    if (as_json)
        print_json(r, &o, out);
    else
        print_text(r, &o, out);
}
