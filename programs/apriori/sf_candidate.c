/*  =========================================================================
    sf_candidate - gen_candidate, the super-function that makes the
    candidates of level k + 1 from the frequent k-itemsets (dissertation
    4.1.4): it plans and issues every join and filter SI in its start
    =========================================================================
*/
#include "programs/apriori/sf.h"
#include "base/grow.h"
#include "isa/core/codec.h"
#include "isa/mining/isa.h"

#include <stdlib.h>
#include <string.h>

void spm_apriori_fail_span(spm_sf_t *sf, uint32_t k)
{
    spm_sf_fail(sf, SPM_ERANGE,
                "apriori: frequent %u-itemsets span over %d blocks of %u (a higher "
                "--min-support is needed)",
                k, MAX_OPS - 1, SPM_MINING_MAX_FSETS);
}

typedef struct {
    spm_sf_t *sf;
    spm_apriori_job_t *job;
    const spm_apriori_level_t *l;
    uint32_t k;
    uint64_t *base; /* global index of each block's first set */
    int failed;
} planner_t;

/*  Issues one join of sets FROM..TO of block B (partners PFROM..PTO), reading
    blocks B..EB, and its filter. */
static void join(planner_t *pl, const char *opcode, uint32_t b, uint32_t from, uint32_t to,
                 uint32_t pfrom, uint32_t pto, uint32_t eb)
{
    spm_operand_t ops[MAX_OPS];
    const spm_apriori_level_t *l = pl->l;
    if (pl->failed)
        return;
    if (eb - b + 2 > MAX_OPS || l->n + 1 > MAX_OPS) {
        spm_apriori_fail_span(pl->sf, pl->k);
        pl->failed = 1;
        return;
    }
    spm_sdb_t cand = spm_sdb_new(pl->sf, SPM_MINING_JOIN);
    uint32_t m = 0;
    for (uint32_t q = b; q <= eb; q++)
        ops[m++] = (spm_operand_t){l->id[q], SPM_R, 0};
    ops[m++] = (spm_operand_t){cand, SPM_W, 0};
    spm_buf_t p = {0};
    spm_buf_put_u32(&p, from);
    spm_buf_put_u32(&p, to);
    spm_buf_put_u32(&p, pfrom);
    spm_buf_put_u32(&p, pto);
    pl->failed = spm_apriori_issue(pl->sf, opcode, ops, m, &p, 0) != 0;
    spm_buf_free(&p);
    if (pl->failed)
        return;
    spm_apriori_job_t *job = pl->job;
    if (job->ncands == job->capcands) {
        uint32_t cap = job->capcands ? job->capcands * 2 : 64;
        spm_sdb_t *v = realloc(job->cands, cap * sizeof *v);
        if (!v) {
            spm_sf_fail(pl->sf, SPM_ENOMEM, "apriori: out of memory");
            pl->failed = 1;
            return;
        }
        job->cands = v;
        job->capcands = cap;
    }
    job->cands[job->ncands++] = cand;
    if (pl->k < 2)
        return; /* the 1-subsets of a 2-candidate are frequent items */
    ops[0] = (spm_operand_t){cand, SPM_RW, 0};
    m = 1;
    for (uint32_t q = 0; q < l->n; q++)
        if (l->info[q].n > 0)
            ops[m++] = (spm_operand_t){l->id[q], SPM_R, 0};
    spm_buf_put_u32(&p, pl->k);
    for (int bound = 0; bound < 2; bound++) {
        spm_buf_put_u32(&p, 0); /* no bound: the operands hold every k-set */
        for (uint32_t j = 0; j < pl->k; j++)
            spm_buf_put_u32(&p, 0);
    }
    pl->failed = spm_apriori_issue(pl->sf, SPM_MINING_FILTER, ops, m, &p, 0) != 0;
    spm_buf_free(&p);
}

/*  A run of sources from one block being gathered into one join. */
typedef struct {
    int active;
    uint32_t b, from, to, eb;
    uint64_t sum;             /* candidates it will produce */
    int starts_fam, ends_fam; /* begins at a family's first set / ends at a family's end */
} run_t;

static void flush(planner_t *pl, run_t *r)
{
    if (r->active && r->sum > 0) {
        const char *op = r->from == 0 && r->to == pl->l->info[r->b].n ? SPM_MINING_GEN_SMALL
                         : r->starts_fam && r->ends_fam               ? SPM_MINING_GEN_MIDDLE
                                                                      : SPM_MINING_GEN_LARGE;
        join(pl, op, r->b, r->from, r->to, 0, UINT32_MAX, r->eb);
    }
    memset(r, 0, sizeof *r);
}

/*  Plans the joins of level K: walks the families (merged across block
    boundaries) and cuts runs of sources so each join yields at most the
    join capacity; a source with more partners than that is split by
    partner ranges. */
static void plan_joins(planner_t *pl)
{
    const spm_apriori_level_t *l = pl->l;
    uint32_t cap = pl->job->a.join_cap, k = pl->k;
    uint64_t g = 0;
    for (uint32_t b = 0; b < l->n; b++) {
        pl->base[b] = g;
        g += l->info[b].n;
    }
    run_t run = {0};
    uint32_t bp = 0, prev = UINT32_MAX; /* block of the current set; last non-empty block */
    for (uint32_t b = 0; b < l->n && !pl->failed; b++) {
        const spm_mining_fsets_reply_t *in = &l->info[b];
        uint64_t at = pl->base[b];
        for (uint32_t f = 0; f < in->nfam; f++) {
            /* A family continuing from the previous block was handled there. */
            if (f == 0 && prev != UINT32_MAX &&
                spm_mining_set_cmp(l->info[prev].last, in->first, k - 1) == 0) {
                at += in->fam[0];
                continue;
            }
            uint64_t gs = at, ge = at + in->fam[f];
            /* Extend across following blocks while they continue the family. */
            uint32_t eb = b;
            if (f + 1 == in->nfam)
                for (uint32_t q = b + 1; q < l->n; q++) {
                    if (l->info[q].n == 0)
                        continue;
                    if (spm_mining_set_cmp(in->last, l->info[q].first, k - 1) != 0)
                        break;
                    ge += l->info[q].fam[0];
                    eb = q;
                    if (l->info[q].nfam > 1)
                        break;
                }
            for (uint64_t s = gs; s < ge && !pl->failed; s++) {
                while (s >= pl->base[bp] + l->info[bp].n)
                    bp++;
                uint32_t i = (uint32_t)(s - pl->base[bp]);
                uint64_t partners = ge - s - 1;
                if (run.active && (run.b != bp || run.sum + partners > cap))
                    flush(pl, &run);
                if (partners > cap) {
                    for (uint64_t pf = 0; pf < partners; pf += cap)
                        join(pl, SPM_MINING_GEN_LARGE, bp, i, i + 1, (uint32_t)pf,
                             (uint32_t)(pf + cap < partners ? pf + cap : partners), eb);
                    continue;
                }
                if (!run.active) {
                    run = (run_t){.active = 1, .b = bp, .from = i, .eb = eb};
                    run.starts_fam = s == gs;
                }
                run.to = i + 1;
                run.sum += partners;
                run.eb = eb > run.eb ? eb : run.eb;
                run.ends_fam = s + 1 == ge;
            }
            at += in->fam[f];
        }
        flush(pl, &run);
        if (in->n > 0)
            prev = b;
    }
    flush(pl, &run);
}

static int gen_candidate_start(spm_sf_t *sf, const void *args, size_t len)
{
    uint32_t k;
    spm_apriori_job_t *job = spm_apriori_child_job(sf, args, len, &k);
    if (!job)
        return SPM_EINVAL;
    const spm_apriori_level_t *l = &job->lv[k - 1];
    planner_t pl = {.sf = sf, .job = job, .l = l, .k = k};
    job->ncands = 0;
    pl.base = malloc(((size_t)l->n + 1) * sizeof *pl.base);
    if (!pl.base) {
        free(pl.base);
        return SPM_ENOMEM;
    }
    plan_joins(&pl);
    free(pl.base);
    spm_sf_done(sf);
    return 0;
}

static void child_commit(spm_sf_t *sf, const spm_result_t *r)
{
    spm_apriori_check(sf, r);
}

const spm_sf_class_t spm_apriori_gen_candidate_class = {
    .name = "apriori.gen_candidate", .start = gen_candidate_start, .commit = child_commit};
