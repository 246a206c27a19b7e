/*  =========================================================================
    sf - the super-functions of the apriori program (dissertation 4.1.4-5)

    The root runs Figure 4.1:

        P1 = initial(DS, smin)
        for (k = 2; P(k-1) != {}; k++)
            Ck = gen_candidate(P(k-1))      -- join, then filter
            Pk = gen_frequentSet(Ck, smin)
            Rk = find_rules(P1 .. P(k-1), Pk)

    Overlap comes from dataflow, not from waiting. gen_candidate plans and
    issues every join and filter SI in its start, and the root spawns
    gen_frequentSet for the same candidates at once: its counting SIs read
    the filter outputs and simply wait in the scoreboard, so they run the
    moment each candidate block is ready, while later joins still run. The
    only barrier is the end of gen_frequentSet: planning the next joins needs
    the family sizes its GetFrequentSetBlock SIs reply. find_rules(k) is
    spawned then at a lower priority, so its SIs fill IEUs that would idle
    through the tail of stage k + 1 and never delay the critical path.

    All SFs of a job share one spm_apriori_job_t, owned by the root; a child gets a
    pointer to it in its (copied) arguments. SFs run in the center's single
    thread, so the sharing needs no lock.
    =========================================================================
*/
#include "programs/apriori/sf.h"
#include "base/grow.h"
#include "isa/core/codec.h"
#include "isa/mining/isa.h"

#include <stdlib.h>
#include <string.h>

static const spm_sf_class_t initial_class, gen_freq_class;

/*  Issues OPCODE on N operands built from IDS and MODES; fails the job on error. */
int spm_apriori_issue(spm_sf_t *sf, const char *opcode, const spm_operand_t *ops, size_t n,
                      const spm_buf_t *params, uint64_t tag)
{
    int rc = spm_sf_issue(sf, opcode, ops, n, params ? params->data : NULL,
                          params ? params->len : 0, tag);
    if (rc != 0)
        spm_sf_fail(sf, rc, "%s: issue failed: %s", opcode, spm_strerror(rc));
    return rc;
}

spm_apriori_job_t *spm_apriori_child_job(spm_sf_t *sf, const void *args, size_t len, uint32_t *k)
{
    spm_apriori_child_t c;
    if (len != sizeof c)
        return NULL;
    memcpy(&c, args, sizeof c);
    spm_sf_set_state(sf, c.job);
    if (k)
        *k = c.k;
    return c.job;
}

static int spawn(spm_sf_t *sf, spm_apriori_job_t *job, const spm_sf_class_t *cls, uint32_t k,
                 int kind, int prio)
{
    spm_apriori_child_t c = {job, k};
    int rc = spm_sf_spawn(sf, cls, &c, sizeof c, spm_sf_priority(sf) + prio, TAG(kind, k));
    if (rc == 0)
        job->live++;
    else
        spm_sf_fail(sf, rc, "apriori: cannot start a super-function: %s", spm_strerror(rc));
    return rc;
}

int spm_apriori_check(spm_sf_t *sf, const spm_result_t *r)
{
    if (r->status != 0)
        spm_sf_fail(sf, r->status, "apriori: an SI failed: %s", spm_strerror(r->status));
    return r->status;
}

/* ----------------------------------------------------------------- initial */

/*  Issues a LoadDataBlock per staged block: text or transactions. The
    item domain (the counting SIs' partitions) is known from their
    replies, since a client that stages text has not parsed it. */
static int initial_start(spm_sf_t *sf, const void *args, size_t len)
{
    spm_apriori_job_t *job = spm_apriori_child_job(sf, args, len, NULL);
    if (!job)
        return SPM_EINVAL;
    uint32_t n = job->a.nstaged;
    spm_operand_t ops[2];
    spm_buf_t p = {0};
    int rc = 0;
    if (!(job->raw = calloc((size_t)n + 1, sizeof *job->raw)) ||
        !(job->raw_node = calloc((size_t)n + 1, sizeof *job->raw_node)))
        return SPM_ENOMEM;
    spm_buf_put_u32(&p, job->a.block);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        job->raw[i] = spm_sdb_new(sf, SPM_MINING_TRANS);
        ops[0] = (spm_operand_t){job->a.staged[i], SPM_R, SPM_NOCACHE}; /* read once */
        ops[1] = (spm_operand_t){job->raw[i], SPM_W, 0};
        rc = spm_apriori_issue(sf, SPM_MINING_LOAD, ops, 2, &p, TAG(TAG_LOAD, i));
    }
    spm_buf_free(&p);
    return rc;
}

/*  Every block is loaded: counts the items, finds the frequent ones and
    shrinks the transactions. */
static int count_and_shrink(spm_sf_t *sf, spm_apriori_job_t *job)
{
    uint32_t width = job->domain / 32 + 1 > 1024 ? job->domain / 32 + 1 : 1024;
    uint32_t n = job->a.nstaged, np = job->domain / width + 1;
    spm_sdb_t *raw = job->raw, items[np];
    spm_operand_t ops[MAX_OPS];
    spm_buf_t p = {0};
    int rc = 0;
    for (uint32_t q = 0; q < np; q++)
        items[q] = spm_sdb_new(sf, SPM_MINING_ITEMS);
    spm_buf_put_u32(&p, np);
    spm_buf_put_u32(&p, width);
    /* About four counting SIs per IEU (fewer partials to merge than one
       SI per block), each over raw blocks of one node, in order, so that
       it runs where they are and no block crosses a link to be counted.
       Over consecutive blocks of both nodes, counting T25I10D500K on 2
       nodes at 100 Mbit/s fetched 19 MB of raw blocks, a second of a 4.9 s
       job, and the IEU that fetched less idled at the barrier after it.
       (One SI per IEU over its node's 50 blocks took 0.3-1.7 s against
       10-80 ms for the four, in traces under a load of 10-14 on 2 cores;
       not understood, not kept.) A node that has counted its own may still
       take its peer's last one (2 of 4 runs, 0.4-0.5 s at the barrier). */
    uint32_t ieus = spm_sf_ieus(sf) ? spm_sf_ieus(sf) : 1, nodes = spm_sf_nodes(sf);
    uint32_t per_node = 4 * (nodes > 1 ? (ieus + nodes - 1) / nodes : ieus);
    uint32_t *mine = malloc(((size_t)n + 1) * sizeof *mine), top = 0;
    if (!mine) {
        spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
        return SPM_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        top = job->raw_node[i] > top ? job->raw_node[i] : top;
    for (uint32_t h = 0; h <= top && rc == 0; h++) {
        uint32_t nh = 0;
        for (uint32_t i = 0; i < n; i++)
            if (job->raw_node[i] == h)
                mine[nh++] = i;
        uint32_t groups = per_node < nh ? per_node : nh;
        if (groups < (nh + MAX_OPS - np - 1) / (MAX_OPS - np))
            groups = (nh + MAX_OPS - np - 1) / (MAX_OPS - np);
        for (uint32_t g = 0; g < groups && rc == 0; g++) {
            uint32_t a = (uint32_t)((uint64_t)nh * g / groups),
                     e = (uint32_t)((uint64_t)nh * (g + 1) / groups), k = 0;
            for (uint32_t i = a; i < e; i++)
                ops[k++] = (spm_operand_t){raw[mine[i]], SPM_R, 0};
            for (uint32_t q = 0; q < np; q++)
                ops[k++] = (spm_operand_t){items[q], SPM_ACC, 0};
            rc = spm_apriori_issue(sf, SPM_MINING_COUNT_ITEMS, ops, k, &p, 0);
        }
    }
    free(mine);
    spm_buf_free(&p);
    spm_buf_put_u64(&p, job->a.minsup);
    for (uint32_t q = 0; q < np && rc == 0; q++) {
        ops[0] = (spm_operand_t){items[q], SPM_RW, 0};
        rc = spm_apriori_issue(sf, SPM_MINING_SHRINK_ITEMS, ops, 1, &p, 0);
    }
    spm_buf_free(&p);
    job->fitems = spm_sdb_new(sf, SPM_MINING_ITEMS);
    job->lv[0].id[0] = spm_sdb_new(sf, SPM_MINING_FSETS);
    for (uint32_t q = 0; q < np; q++)
        ops[q] = (spm_operand_t){items[q], SPM_R, 0};
    ops[np] = (spm_operand_t){job->fitems, SPM_W, 0};
    ops[np + 1] = (spm_operand_t){job->lv[0].id[0], SPM_W, 0};
    if (rc == 0)
        rc = spm_apriori_issue(sf, SPM_MINING_FREQ_ITEMS, ops, np + 2, NULL, TAG(TAG_FITEMS, 0));
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        job->trans[i] = spm_sdb_new(sf, SPM_MINING_TRANS);
        ops[0] = (spm_operand_t){raw[i], SPM_R, 0};
        ops[1] = (spm_operand_t){job->fitems, SPM_R, 0};
        ops[2] = (spm_operand_t){job->trans[i], SPM_W, 0};
        rc = spm_apriori_issue(sf, SPM_MINING_SHRINK_TRANS, ops, 3, NULL, TAG(TAG_SHRINK, i));
    }
    return rc;
}

/*  Merges runs of consecutive small transaction blocks (MergeTransactionBlock)
    so that counting SIs see blocks of about the block size, and lists the
    non-empty blocks. */
static void merge_small(spm_sf_t *sf, spm_apriori_job_t *job)
{
    spm_operand_t ops[MAX_OPS];
    uint32_t i = 0, n = job->a.nstaged;
    while (i < n) {
        if (job->trans_n[i] == 0) {
            i++;
            continue;
        }
        uint64_t total = job->trans_n[i];
        uint32_t j = i + 1, m = 1;
        ops[0] = (spm_operand_t){job->trans[i], SPM_RW, 0};
        for (; j < n && m < MAX_OPS; j++) {
            if (job->trans_n[j] == 0)
                continue;
            if (total + job->trans_n[j] > job->a.block)
                break;
            total += job->trans_n[j];
            ops[m++] = (spm_operand_t){job->trans[j], SPM_R, 0};
        }
        if (m > 1 && spm_apriori_issue(sf, SPM_MINING_MERGE_TRANS, ops, m, NULL, 0) != 0)
            return;
        job->tlist[job->ntlist++] = job->trans[i];
        i = j;
    }
}

static void initial_commit(spm_sf_t *sf, const spm_result_t *r)
{
    spm_apriori_job_t *job = spm_sf_state(sf);
    if (spm_apriori_check(sf, r) != 0 || r->kind != SPM_RESULT_SI)
        return;
    spm_cursor_t c = spm_cursor(r->reply, r->reply_len);
    uint32_t v, items, hi;
    if (TAG_KIND(r->tag) == TAG_LOAD) {
        if (spm_get_u32(&c, &v) || spm_get_u32(&c, &items) || spm_get_u32(&c, &hi)) {
            spm_sf_fail(sf, SPM_EPROTO, "apriori: malformed reply of %s", SPM_MINING_LOAD);
            return;
        }
        job->domain = hi > job->domain ? hi : job->domain;
        job->raw_node[TAG_N(r->tag)] = r->ieu ? r->ieu->node : 0;
        if (++job->loaded == job->a.nstaged && count_and_shrink(sf, job) != 0)
            return; /* the job has failed */
    } else if (TAG_KIND(r->tag) == TAG_FITEMS && spm_get_u32(&c, &v) == 0) {
        job->f1 = v;
    } else if (TAG_KIND(r->tag) == TAG_SHRINK && spm_get_u32(&c, &v) == 0) {
        job->trans_n[TAG_N(r->tag)] = v;
        job->ntrans_shrunk += v; /* the reply's item count is not needed */
        if (++job->shrunk == job->a.nstaged) {
            merge_small(sf, job);
            spm_sf_done(sf);
        }
    }
}

static const spm_sf_class_t initial_class = {
    .name = "apriori.initial", .start = initial_start, .commit = initial_commit};

/* --------------------------------------------------------- gen_frequentSet */

/*  gen_frequentSet's own state: the pruned blocks waiting to be gathered. */
typedef struct {
    spm_apriori_job_t *job;
    uint32_t k;
    spm_sdb_t *pruned; /* per candidate block: its pruned counts */
    int64_t *left;     /* per candidate block: sets left after pruning, -1 until known */
    uint32_t next;     /* first candidate block not yet gathered */
    uint64_t skip;     /* sets of it already gathered */
    uint32_t nc;       /* candidate blocks */
} freq_t;

static int gen_freq_start(spm_sf_t *sf, const void *args, size_t len)
{
    uint32_t k;
    spm_apriori_job_t *job = spm_apriori_child_job(sf, args, len, &k);
    if (!job)
        return SPM_EINVAL;
    spm_apriori_level_t *l = &job->lv[k - 1];
    uint32_t nc = job->ncands, nt = job->ntlist;
    freq_t *fs = calloc(1, sizeof *fs);
    if (!fs)
        return SPM_ENOMEM;
    spm_sf_set_state(sf, fs);
    fs->job = job;
    fs->k = k;
    fs->nc = nc;
    fs->pruned = calloc((size_t)nc + 1, sizeof *fs->pruned);
    fs->left = calloc((size_t)nc + 1, sizeof *fs->left);
    l->id = calloc((size_t)nc + 1, sizeof *l->id);
    l->info = calloc((size_t)nc + 1, sizeof *l->info);
    if (!fs->pruned || !fs->left || !l->id || !l->info)
        return SPM_ENOMEM;
    l->cap = (size_t)nc + 1;
    /* Enough counting SIs to keep every IEU busy a few times over, each
       reading a consecutive share of the transaction blocks. */
    uint32_t ieus = spm_sf_ieus(sf) ? spm_sf_ieus(sf) : 1;
    uint32_t groups = nc ? (4 * ieus + nc - 1) / nc : 1;
    if (groups > nt)
        groups = nt;
    if (groups < (nt + MAX_OPS - 3) / (MAX_OPS - 2))
        groups = (nt + MAX_OPS - 3) / (MAX_OPS - 2);
    spm_operand_t ops[MAX_OPS];
    spm_buf_t dom = {0}, sup = {0};
    spm_buf_put_u32(&dom, job->f1);
    spm_buf_put_u64(&sup, job->a.minsup);
    int rc = 0;
    for (uint32_t m = 0; m < nc && rc == 0; m++) {
        spm_sdb_t counts = spm_sdb_new(sf, SPM_MINING_CANDS);
        fs->left[m] = -1;
        fs->pruned[m] = counts;
        for (uint32_t g = 0; g < groups && rc == 0; g++) {
            uint32_t a = (uint32_t)((uint64_t)nt * g / groups);
            uint32_t e = (uint32_t)((uint64_t)nt * (g + 1) / groups), n = 0;
            ops[n++] = (spm_operand_t){job->cands[m], SPM_R, 0};
            for (uint32_t t = a; t < e; t++)
                ops[n++] = (spm_operand_t){job->tlist[t], SPM_R, 0};
            ops[n++] = (spm_operand_t){counts, SPM_ACC, 0};
            rc = spm_apriori_issue(sf, SPM_MINING_COUNT_CANDS, ops, n, &dom, 0);
        }
        ops[0] = (spm_operand_t){counts, SPM_RW, 0};
        if (rc == 0)
            rc = spm_apriori_issue(sf, SPM_MINING_PRUNE, ops, 1, &sup, TAG(TAG_PRUNE, m));
    }
    spm_buf_free(&dom);
    spm_buf_free(&sup);
    if (nc == 0)
        spm_sf_done(sf);
    return rc;
}

/*  Cuts the stream of pruned blocks, in order, into frequent-set blocks of
    SPM_MINING_MAX_FSETS sets (GetFrequentSetBlock with skip and take), as
    far as the prune replies are in: a level has few, full blocks however
    many candidate blocks it came from, and no block is ever too large. */
static void gather(spm_sf_t *sf, freq_t *fs)
{
    spm_apriori_level_t *l = &fs->job->lv[fs->k - 1];
    spm_operand_t ops[MAX_OPS];
    spm_buf_t p = {0};
    for (;;) {
        while (fs->next < fs->nc && fs->left[fs->next] >= 0 &&
               fs->skip == (uint64_t)fs->left[fs->next]) {
            fs->next++; /* this block is used up */
            fs->skip = 0;
        }
        if (fs->next == fs->nc)
            break;
        uint64_t avail = 0;
        uint32_t e = fs->next, n = 0;
        while (e < fs->nc && fs->left[e] >= 0 && n < MAX_OPS - 1 &&
               avail < SPM_MINING_MAX_FSETS + fs->skip) {
            avail += (uint64_t)fs->left[e];
            ops[n++] = (spm_operand_t){fs->pruned[e++], SPM_R, 0};
        }
        avail -= fs->skip;
        uint64_t take = avail < SPM_MINING_MAX_FSETS ? avail : SPM_MINING_MAX_FSETS;
        /* Issue a full block, or the rest when every reply is in. */
        if (n == 0 || (take < SPM_MINING_MAX_FSETS && e < fs->nc && n < MAX_OPS - 1))
            return;
        if (take == 0) {
            fs->next = e;
            fs->skip = 0;
            continue;
        }
        /* A candidate block can give several full frequent-set blocks. */
        size_t cap = l->cap;
        if (spm_grow_zeroed(&l->id, &l->cap, (size_t)l->n + 1, sizeof *l->id) != 0 ||
            spm_grow_zeroed(&l->info, &cap, (size_t)l->n + 1, sizeof *l->info) != 0) {
            spm_sf_fail(sf, SPM_ENOMEM, "frequent-set blocks: out of memory");
            return;
        }
        uint32_t b = l->n++;
        l->id[b] = spm_sdb_new(sf, SPM_MINING_FSETS);
        ops[n++] = (spm_operand_t){l->id[b], SPM_W, 0};
        spm_buf_put_u32(&p, (uint32_t)fs->skip);
        spm_buf_put_u32(&p, (uint32_t)take);
        int rc = spm_apriori_issue(sf, SPM_MINING_FREQ_SETS, ops, n, &p, TAG(TAG_FSET, b));
        spm_buf_free(&p);
        if (rc != 0)
            return;
        /* Advance past what was taken. */
        uint64_t used = fs->skip + take;
        while (fs->next < fs->nc && used >= (uint64_t)fs->left[fs->next] &&
               fs->left[fs->next] >= 0) {
            used -= (uint64_t)fs->left[fs->next];
            fs->next++;
        }
        fs->skip = used;
    }
    spm_sf_done(sf);
}

static void gen_freq_commit(spm_sf_t *sf, const spm_result_t *r)
{
    freq_t *fs = spm_sf_state(sf);
    if (spm_apriori_check(sf, r) != 0)
        return;
    spm_apriori_level_t *l = &fs->job->lv[fs->k - 1];
    spm_cursor_t c = spm_cursor(r->reply, r->reply_len);
    uint32_t v;
    if (TAG_KIND(r->tag) == TAG_PRUNE && spm_get_u32(&c, &v) == 0) {
        fs->left[TAG_N(r->tag)] = v;
        gather(sf, fs);
    } else if (TAG_KIND(r->tag) == TAG_FSET) {
        spm_mining_fsets_reply_t *in = &l->info[TAG_N(r->tag)];
        if (spm_mining_fsets_reply_decode(r->reply, r->reply_len, in) != 0) {
            spm_sf_fail(sf, SPM_EPROTO, "%s", spm_error_detail());
            return;
        }
        l->sets += in->n;
    }
}

static void gen_freq_finish(spm_sf_t *sf)
{
    freq_t *fs = spm_sf_state(sf);
    if (!fs)
        return;
    free(fs->pruned);
    free(fs->left);
    free(fs);
    spm_sf_set_state(sf, NULL);
}

static const spm_sf_class_t gen_freq_class = {.name = "apriori.gen_frequentSet",
                                              .start = gen_freq_start,
                                              .commit = gen_freq_commit,
                                              .finish = gen_freq_finish};

/* -------------------------------------------------------------------- root */

static void job_free(spm_apriori_job_t *job)
{
    for (uint32_t k = 0; k < job->nlv; k++) {
        for (uint32_t b = 0; b < job->lv[k].n && job->lv[k].info; b++)
            spm_mining_fsets_reply_free(&job->lv[k].info[b]);
        free(job->lv[k].id);
        free(job->lv[k].info);
    }
    free(job->lv);
    free(job->raw);
    free(job->raw_node);
    free(job->trans);
    free(job->trans_n);
    free(job->tlist);
    free(job->cands);
    free(job->rules);
    free(job->rule_n);
    free(job->rule_k);
    free(job->classes);
    spm_apriori_args_free(&job->a);
    free(job);
}

/*  Issues StoreResult over the rule blocks, sets the result, declares done.
    The rule blocks are gathered in about four groups per IEU, so the last
    SIs of the job run in parallel too, and a group holds at most
    rule_bytes of rules (or one block), so that a store block stays as
    small as the blocks it gathers. Blocks without rules are left out. */
static void finish_job(spm_sf_t *sf, spm_apriori_job_t *job)
{
    uint32_t ieus = spm_sf_ieus(sf) ? spm_sf_ieus(sf) : 1;
    uint32_t group = (job->nrules + 4 * ieus - 1) / (4 * ieus);
    group = group < 1 ? 1 : group > MAX_OPS - 1 ? MAX_OPS - 1 : group;
    uint64_t cap = spm_apriori_rule_bytes(job);
    spm_sdb_t *store = calloc((size_t)job->nrules + 1, sizeof *store);
    spm_operand_t ops[MAX_OPS];
    uint32_t nstore = 0;
    if (!store) {
        spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
        return;
    }
    for (uint32_t i = 0; i < job->nrules;) {
        uint32_t n = 0;
        uint64_t bytes = 0;
        for (; i < job->nrules && n < group; i++) {
            uint32_t rules = job->rule_n[i];
            uint64_t size =
                rules == UINT32_MAX ? cap : spm_apriori_rules_size(rules, job->rule_k[i]);
            if (rules == 0)
                continue;
            if (n > 0 && bytes + size > cap)
                break;
            bytes += size;
            ops[n++] = (spm_operand_t){job->rules[i], SPM_R, SPM_NOCACHE}; /* read once */
        }
        if (n == 0)
            continue;
        store[nstore] = spm_sdb_new(sf, SPM_MINING_RULES);
        ops[n++] = (spm_operand_t){store[nstore++], SPM_W, SPM_NOCACHE}; /* only the client */
        if (spm_apriori_issue(sf, SPM_MINING_STORE, ops, n, NULL, 0) != 0) {
            free(store);
            return;
        }
    }
    uint32_t nlv = job->nlv;
    while (nlv > 0 && job->lv[nlv - 1].sets == 0)
        nlv--;
    spm_apriori_result_t r = {.f1 = job->f1,
                              .fitems = job->fitems,
                              .nlevels = nlv,
                              .nstore = nstore,
                              .store = store,
                              .nclasses = job->nclasses,
                              .classes = job->classes};
    uint32_t nblocks[nlv + 1];
    spm_sdb_t *levels[nlv + 1];
    for (uint32_t k = 0; k < nlv; k++) {
        nblocks[k] = job->lv[k].n;
        levels[k] = job->lv[k].id;
    }
    r.nblocks = nblocks;
    r.levels = levels;
    void *bytes = NULL;
    size_t len;
    int rc = spm_apriori_result_encode(&r, &bytes, &len);
    if (rc == 0)
        rc = spm_sf_set_result(sf, bytes, len);
    free(bytes);
    free(store);
    if (rc != 0) {
        spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
        return;
    }
    spm_sf_done(sf);
}

/*  Adds level K (empty) to the job. */
int spm_apriori_add_level(spm_apriori_job_t *job)
{
    spm_apriori_level_t *v = realloc(job->lv, (job->nlv + 1) * sizeof *v);
    if (!v)
        return SPM_ENOMEM;
    job->lv = v;
    memset(&job->lv[job->nlv++], 0, sizeof *v);
    return 0;
}

/*  The (k+1)-candidates that joining P_k makes: C(f, 2) summed over its
    families, a family running on across blocks when a block's first set
    shares its first k-1 items with the last set of the block before. */
static uint64_t join_size(const spm_apriori_level_t *l, uint32_t k)
{
    uint64_t total = 0, f = 0;
    for (uint32_t b = 0; b < l->n; b++) {
        const spm_mining_fsets_reply_t *in = &l->info[b];
        if (in->n == 0)
            continue;
        for (uint32_t i = 0; i < in->nfam; i++) {
            int goes_on = i == 0 && f > 0 && b > 0 &&
                          memcmp(l->info[b - 1].last, in->first, (size_t)(k - 1) * 4) == 0;
            if (!goes_on) {
                total += f * (f - 1) / 2;
                f = 0;
            }
            f += in->fam[i];
        }
    }
    return total + f * (f - 1) / 2;
}

/*  Starts gen_candidate(P_k) and gen_frequentSet(C_k+1) together, unless
    the job wants no longer sets. A level of more than
    SPM_APRIORI_MAX_CANDIDATES candidates fails the job at once: it would
    run for hours and hold the center's thread while it is planned. */
static void start_stage(spm_sf_t *sf, spm_apriori_job_t *job, uint32_t k)
{
    if (job->a.maxlen && k >= job->a.maxlen)
        return;
    uint64_t c = join_size(&job->lv[k - 1], k);
    if (c > SPM_APRIORI_MAX_CANDIDATES) {
        spm_sf_fail(sf, SPM_ERANGE,
                    "apriori: %llu frequent %u-itemsets make %llu candidates of length %u, over "
                    "the limit of %llu; raise --min-support (or set --max-length %u)",
                    (unsigned long long)job->lv[k - 1].sets, k, (unsigned long long)c, k + 1,
                    (unsigned long long)SPM_APRIORI_MAX_CANDIDATES, k);
        return;
    }
    if (spm_apriori_add_level(job) != 0) {
        spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
        return;
    }
    job->stage = 1;
    if (spawn(sf, job, &spm_apriori_gen_candidate_class, k, TAG_CAND, 0) == 0)
        spawn(sf, job, &gen_freq_class, k + 1, TAG_FREQ, 0);
}

static int root_start(spm_sf_t *sf, const void *args, size_t len)
{
    spm_apriori_job_t *job = calloc(1, sizeof *job);
    if (!job)
        return SPM_ENOMEM;
    int rc = spm_apriori_args_decode(args, len, &job->a);
    if (rc != 0) {
        free(job);
        return rc;
    }
    spm_sf_set_state(sf, job);
    uint32_t n = job->a.nstaged;
    job->trans = calloc((size_t)n + 1, sizeof *job->trans);
    job->trans_n = calloc((size_t)n + 1, sizeof *job->trans_n);
    job->tlist = calloc((size_t)n + 1, sizeof *job->tlist);
    if (!job->trans || !job->trans_n || !job->tlist || spm_apriori_add_level(job) != 0 ||
        !(job->lv[0].id = calloc(1, sizeof *job->lv[0].id)))
        return SPM_ENOMEM;
    if (n == 0) {
        finish_job(sf, job);
        return 0;
    }
    job->stage = 1;
    return spawn(sf, job, &initial_class, 1, TAG_INITIAL, 0);
}

/*  Describes P1 (one block of ranks 0 .. F1-1, one family) for the planner. */
static int describe_p1(spm_apriori_job_t *job)
{
    spm_apriori_level_t *l = &job->lv[0];
    spm_mining_fsets_reply_t *in = calloc(1, sizeof *in);
    if (!in)
        return SPM_ENOMEM;
    l->info = in;
    l->n = 1;
    l->sets = job->f1;
    in->k = 1;
    in->n = job->f1;
    in->first = malloc(4);
    in->last = malloc(4);
    in->fam = malloc(4);
    if (!in->first || !in->last || !in->fam)
        return SPM_ENOMEM;
    in->first[0] = 0;
    in->last[0] = job->f1 ? job->f1 - 1 : 0;
    in->nfam = job->f1 ? 1 : 0;
    in->fam[0] = job->f1;
    return 0;
}

static void root_commit(spm_sf_t *sf, const spm_result_t *r)
{
    spm_apriori_job_t *job = spm_sf_state(sf);
    if (spm_apriori_check(sf, r) != 0 || r->kind != SPM_RESULT_CHILD)
        return;
    uint32_t kind = TAG_KIND(r->tag), k = TAG_N(r->tag);
    job->live--;
    if (kind == TAG_INITIAL) {
        job->stage = 0;
        if (describe_p1(job) != 0) {
            spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
            return;
        }
        if (job->f1 >= 2 && job->ntlist > 0 && job->a.maxlen != 1) {
            if (job->a.algorithm == SPM_APRIORI_ECLAT ||
                (job->a.algorithm == SPM_APRIORI_AUTO && spm_apriori_auto_eclat(job))) {
                job->stage = 1;
                spawn(sf, job, &spm_apriori_eclat_class, 2, TAG_ECLAT, 0);
            } else {
                start_stage(sf, job, 1);
            }
        }
    } else if (kind == TAG_ECLAT) {
        /* Every level is complete: the rules of each, as level-wise. */
        job->stage = 0;
        for (uint32_t j = 2; j <= job->nlv; j++)
            if (job->lv[j - 1].sets > 0 && !(job->a.flags & SPM_APRIORI_ITEMSETS_ONLY))
                spawn(sf, job, &spm_apriori_find_rules_class, j, TAG_RULES, -1);
    } else if (kind == TAG_FREQ) {
        job->stage = 0;
        const spm_apriori_level_t *l = &job->lv[k - 1];
        if (l->sets > 0 && !(job->a.flags & SPM_APRIORI_ITEMSETS_ONLY))
            spawn(sf, job, &spm_apriori_find_rules_class, k, TAG_RULES, -1);
        if (l->sets >= 2)
            start_stage(sf, job, k);
    }
    if (job->live == 0)
        finish_job(sf, job);
}

static void root_finish(spm_sf_t *sf)
{
    spm_apriori_job_t *job = spm_sf_state(sf);
    if (job)
        job_free(job);
    spm_sf_set_state(sf, NULL);
}

static const spm_sf_class_t root_class = {
    .name = "apriori", .start = root_start, .commit = root_commit, .finish = root_finish};

SPM_CONSTRUCTOR(apriori_program)
{
    spm_program_register(&(spm_program_t){.name = SPM_APRIORI_PROGRAM, .root = &root_class});
    /* Its name until jobs were listed by the command's: a center resumes
       a job journaled under it (vm/center/durable.c) by that name. */
    spm_program_register(&(spm_program_t){.name = "apriori", .root = &root_class});
}
