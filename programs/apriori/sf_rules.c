/*  =========================================================================
    sf_rules - find_rules, the super-function that derives the association
    rules of one level from the frequent sets (dissertation 4.1.5); the
    root spawns it at a lower priority, so its SIs fill IEUs that would
    otherwise idle through the tail of the next stage
    =========================================================================
*/
#include "programs/apriori/sf.h"
#include "base/grow.h"
#include "isa/core/codec.h"
#include "isa/mining/isa.h"

#include <stdlib.h>
#include <string.h>

/*  Makes room for one more rule block in JOB. Returns 0 or SPM_ENOMEM. */
static int rules_room(spm_apriori_job_t *job)
{
    if (job->nrules < job->caprules)
        return 0;
    uint32_t cap = job->caprules ? job->caprules * 2 : 64;
    spm_sdb_t *v = realloc(job->rules, cap * sizeof *v);
    if (v)
        job->rules = v;
    uint32_t *n = realloc(job->rule_n, cap * sizeof *n);
    if (n)
        job->rule_n = n;
    uint32_t *k = realloc(job->rule_k, cap * sizeof *k);
    if (k)
        job->rule_k = k;
    if (!v || !n || !k)
        return SPM_ENOMEM;
    job->caprules = cap;
    return 0;
}

/*  find_rules' own state: the next CheckConfidenceInBlock to issue, as
    (block b of Z, length j of X, block m of X, part of b's sets). Their
    number grows with the rules, so start issues WINDOW per IEU and each
    commit one more: every callback does a bounded amount. (Issued all in
    start, which runs inside the root's commit, they may be what made the
    IDU log 131 ms in that commit on the dense set at 10% with rules of any
    length.) */
typedef struct {
    spm_apriori_job_t *job;
    uint32_t k, jmin;
    uint32_t b, j, m, part; /* the next SI */
    int done;               /* every SI is issued */
} rules_t;

#define WINDOW 8

/*  C(k, j). */
static double choose(uint32_t k, uint32_t j)
{
    double c = 1;
    for (uint32_t i = 1; i <= j; i++)
        c = c * (k - i + 1) / i;
    return c;
}

/*  Every rule Z\X => X of level k. One CheckConfidenceInBlock per block of
    Z, length j of X and block of X, over a range of Z's sets so that every
    rule the range could make fits in rule_bytes: a k-set has C(k, j)
    subsets of length j, so the bound is C(k, j) (24 + 4k) bytes per set
    (loose, since the subsets spread over the X blocks and not every rule
    is confident, but it never lets a block grow past it). Issues up to MAX
    of them from where RS stands, and declares the SF done after the last.
    Returns how many it issued, or an SPM_E* code. */
static int rules_issue(spm_sf_t *sf, rules_t *rs, uint32_t max)
{
    spm_apriori_job_t *job = rs->job;
    const spm_apriori_level_t *post = &job->lv[rs->k - 1];
    int issued = 0, rc = 0;
    while (rs->b < post->n && (uint32_t)issued < max) {
        const spm_mining_fsets_reply_t *z = &post->info[rs->b];
        if (rs->j >= rs->k || z->n == 0) {
            rs->b++;
            rs->j = rs->jmin;
            rs->m = rs->part = 0;
            continue;
        }
        const spm_apriori_level_t *pre = &job->lv[rs->j - 1];
        const spm_mining_fsets_reply_t *x = rs->m < pre->n ? &pre->info[rs->m] : NULL;
        double parts = choose(rs->k, rs->j) * (double)spm_apriori_rules_size(1, rs->k) * z->n /
                       (double)spm_apriori_rule_bytes(job);
        uint32_t nparts = parts >= z->n ? z->n : parts <= 1 ? 1 : (uint32_t)parts + 1;
        if (!x) {
            rs->j++;
            rs->m = rs->part = 0;
            continue;
        }
        /* Every subset X of a set Z starts at or after Z's first item. */
        if (x->n == 0 || x->last[0] < z->first[0] || rs->part >= nparts) {
            rs->m++;
            rs->part = 0;
            continue;
        }
        uint32_t lo = (uint32_t)((uint64_t)z->n * rs->part / nparts);
        uint32_t hi = (uint32_t)((uint64_t)z->n * (rs->part + 1) / nparts);
        if ((rc = rules_room(job)) != 0)
            return rc;
        spm_buf_t p = {0};
        spm_buf_put_f64(&p, job->a.minconf);
        spm_buf_put_u32(&p, job->a.maxcons);
        if (nparts > 1) {
            spm_buf_put_u32(&p, lo);
            spm_buf_put_u32(&p, hi);
        }
        spm_sdb_t out = spm_sdb_new(sf, SPM_MINING_RULES);
        spm_operand_t ops[3] = {
            {pre->id[rs->m], SPM_R, 0}, {post->id[rs->b], SPM_R, 0}, {out, SPM_W, 0}};
        rc = spm_apriori_issue(sf, SPM_MINING_CONFIDENCE, ops, 3, &p, job->nrules);
        spm_buf_free(&p);
        if (rc != 0)
            return rc;
        job->rule_n[job->nrules] = UINT32_MAX;
        job->rule_k[job->nrules] = rs->k;
        job->rules[job->nrules++] = out;
        rs->part++;
        issued++;
    }
    if (rs->b >= post->n && !rs->done) {
        rs->done = 1;
        spm_sf_done(sf);
    }
    return issued;
}

static int find_rules_start(spm_sf_t *sf, const void *args, size_t len)
{
    uint32_t k;
    spm_apriori_job_t *job = spm_apriori_child_job(sf, args, len, &k);
    rules_t *rs = job ? calloc(1, sizeof *rs) : NULL;
    if (!rs)
        return job ? SPM_ENOMEM : SPM_EINVAL;
    rs->job = job;
    rs->k = k;
    rs->jmin = rs->j = job->a.maxcons && job->a.maxcons < k ? k - job->a.maxcons : 1;
    spm_sf_set_state(sf, rs);
    uint32_t ieus = spm_sf_ieus(sf) ? spm_sf_ieus(sf) : 1;
    int rc = rules_issue(sf, rs, WINDOW * ieus);
    return rc < 0 ? rc : 0;
}

/*  Keeps the number of rules each CheckConfidenceInBlock replies, and
    issues the next. */
static void find_rules_commit(spm_sf_t *sf, const spm_result_t *r)
{
    rules_t *rs = spm_sf_state(sf);
    spm_cursor_t c = spm_cursor(r->reply, r->reply_len);
    uint32_t n;
    if (spm_apriori_check(sf, r) != 0 || !rs)
        return;
    spm_apriori_job_t *job = rs->job;
    if (r->kind == SPM_RESULT_SI && r->tag < job->nrules && spm_get_u32(&c, &n) == 0) {
        job->rule_n[r->tag] = n;
        job->rule_bytes += spm_apriori_rules_size(n, job->rule_k[r->tag]);
    }
    if (job->a.rule_room && job->rule_bytes > job->a.rule_room) {
        spm_sf_fail(sf, SPM_EFULL,
                    "apriori: the rules found so far pass the %.0f MB the client has room for "
                    "on its disks; ask for fewer (a higher --min-confidence or --min-support, "
                    "--max-consequent 1)",
                    (double)job->a.rule_room / 1e6);
        return;
    }
    int rc = rs->done ? 0 : rules_issue(sf, rs, 1);
    if (rc < 0)
        spm_sf_fail(sf, rc, "apriori: find_rules: %s", spm_strerror(rc));
}

static void find_rules_finish(spm_sf_t *sf)
{
    free(spm_sf_state(sf));
    spm_sf_set_state(sf, NULL);
}

const spm_sf_class_t spm_apriori_find_rules_class = {.name = "apriori.find_rules",
                                                     .start = find_rules_start,
                                                     .commit = find_rules_commit,
                                                     .finish = find_rules_finish};
