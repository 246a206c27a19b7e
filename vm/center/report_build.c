/*  =========================================================================
    report_build - the run report of a job, made from the IDU's counters

    @discuss
    The center builds the report (transport/report.h: what it holds and
    how a client prints it) from the IDU's per-IEU and per-opcode figures
    when a job ends.
    @end
    =========================================================================
*/
#include "vm/center/report_build.h"
#include "runtime/registry.h"

#include "spm/spm.h"

#include <stdlib.h>
#include <string.h>

#define MAX_IEUS 4096

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

Spm__Report *spm_report_build(spm_idu_t *idu, uint64_t job)
{
    spm_idu_job_info_t info;
    if (spm_idu_job_info(idu, job, &info) != 0)
        return NULL;
    Spm__Report *r = calloc(1, sizeof *r);
    spm_idu_ieu_stats_t *st = calloc(MAX_IEUS, sizeof *st);
    if (!r || !st) {
        free(r);
        free(st);
        return NULL;
    }
    spm__report__init(r);
    r->job = job;
    r->program = dup_or_empty(info.program);
    r->status =
        info.state == 1 ? 0 : (info.status ? info.status : SPM_EEXEC); /* canceled: ECANCELED */
    r->error = dup_or_empty(info.error);
    r->wall_us = info.wall_us;
    r->issued = info.issued;
    r->committed = info.committed;
    r->reissued = info.reissued;
    r->resumed = info.resumed;
    r->restarts = info.restarts;
    r->stale = info.stale;
    r->merges = info.merges;
    r->center_cpu_us = spm_idu_job_cpu(idu, job);
    r->l1_hits = info.l1_hits;
    r->l2_hits = info.l2_hits;
    r->store_reads = info.store_reads;
    r->bytes_l2 = info.bytes_l2;
    r->bytes_store = info.bytes_store;
    r->bytes_in = info.bytes_l2 + info.bytes_store;
    r->evictions = info.evictions;
    r->bytes_pushed = info.bytes_pushed;
    r->corrupt = info.corrupt;
    r->speculated = info.speculated;
    r->spec_wins = info.spec_wins;
    r->text_result = info.plugin != 0;
    if (info.result_len && (r->result.data = malloc(info.result_len))) {
        memcpy(r->result.data, info.result, info.result_len);
        r->result.len = info.result_len;
    }
    size_t n = spm_idu_job_ieus(idu, job, st, MAX_IEUS);
    if (n > MAX_IEUS)
        n = MAX_IEUS;
    r->ieus = calloc(n ? n : 1, sizeof *r->ieus);
    for (size_t i = 0; r->ieus && i < n; i++) {
        Spm__IeuReport *e = malloc(sizeof *e);
        if (!e)
            break;
        spm__ieu_report__init(e);
        e->ieu = st[i].ieu;
        e->node = st[i].node;
        e->slots = st[i].slots;
        e->sis = st[i].sis;
        e->busy_us = st[i].busy_us;
        e->wait_us = st[i].wait_us;
        e->idle_us = st[i].idle_us;
        e->localize_us = st[i].localize_us;
        e->bytes_l2 = st[i].bytes_l2;
        e->bytes_store = st[i].bytes_store;
        e->bytes_pushed = st[i].bytes_pushed;
        e->dead = st[i].dead;
        r->ieus[r->n_ieus++] = e;
    }
    free(st);
    r->n_opcodes = spm_report_build_opcodes(idu, job, &r->opcodes);
    return r;
}

size_t spm_report_build_opcodes(spm_idu_t *idu, uint64_t job, Spm__OpcodeReport ***out)
{
    spm_idu_op_stats_t ops[64];
    size_t nops = spm_idu_job_opcodes(idu, job, ops, 64), n = 0;
    *out = calloc(nops ? nops : 1, sizeof **out);
    for (size_t i = 0; *out && i < nops && i < 64; i++) {
        Spm__OpcodeReport *o = malloc(sizeof *o);
        const spm_opcode_t *op = spm_opcode_by_id(ops[i].opcode);
        if (o)
            spm__opcode_report__init(o);
        if (!o || !(o->name = strdup(op ? op->name : "?"))) {
            free(o);
            break;
        }
        o->sis = ops[i].sis;
        o->busy_us = ops[i].busy_us;
        o->wait_us = ops[i].wait_us;
        (*out)[n++] = o;
    }
    return n;
}
