/*  =========================================================================
    sf - the "matmul" program: C = A x B by task groups of block products

    The dissertation's super-function (section 4.2.2): C(i,j) is the sum over
    k of A(i,k) x B(k,j); the SIs updating one C(i,j) form its task group
    G(i,j). Only the k with both A(i,k) and B(k,j) non-zero are in a group,
    so a multiply with a zero operand is never issued, and a group with no
    k leaves C(i,j) an all-zero block (id 0 in the result).

    Life of a job:
      start   decodes the job, creates the typed SDB of every block that
              takes part in some product, builds the task groups and cuts
              each into multiply SIs of about equal predicted work, sets the
              result (C's ids). Under syn it also issues every mm.load.
      feed    the policy: when an IEU asks and nothing is ready, hands it
              the next multiply of one of its task groups (or first the
              mm.load of an operand it lacks, so that the typed block lands
              on that IEU's node), acquiring a new group per the policy when
              it has none to continue (section 4.2.3), or helping with
              another IEU's group at the end: a group not begun, or, once
              the IEU has no group of its own left, taking over a begun
              chain for good (its version of C crosses once).
      commit  counts multiplies; when a group's last one (and, for the
              update method, its last mm.add) committed, the group is done
              (with an mm.store where ACC partials are pending); after the
              last group the SF is done.

    Locality for the smart policies is tracked here, not asked of the
    directory: the SF knows which node every load and multiply went to (the
    feed's requester gets the SI it issues, commits name the IEU), and a
    node that ran an SI holds its operands in its level-1 cache. The score
    of a candidate group for a node is how many of the group's operand
    blocks the node holds; ties go to the group nearest the IEU's previous
    one, so each IEU works along its own region of C.

    Known limit: under the static policy (s) a task group belongs to one
    IEU for good; if that IEU leaves the VM, the job waits for it. All
    other policies let an idle IEU take over work another IEU left.
    =========================================================================
*/
#include "base/grow.h"
#include "isa/core/rng.h"
#include "isa/matrix/block.h"
#include "programs/matmul/job.h"
#include "base/grow.h"
#include "spm/spm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*  Flops a multiply SI should do when the job leaves the choice to the SF:
    about 10 ms of one core, the dissertation's "milliseconds". Each SI
    also copies its C block in and out (512 KiB for a dense 256 x 256 one)
    and commits it to the store; at 5 ms that cost a quarter of the SI. */
#define SI_WORK 3e8
#define C_WORK 2000.0 /* flops per byte of C in one SI at least (see chunk) */

enum { TAG_LOAD_A = 1, TAG_LOAD_B, TAG_MUL, TAG_ADD, TAG_STORE };
enum { LOAD_ISSUED = 1, LOAD_DONE = 2 };

#define TAG(kind, group, idx) ((uint64_t)(kind) << 56 | (uint64_t)(group) << 24 | (idx))
#define TAG_KIND(t) ((unsigned)((t) >> 56))
#define TAG_GROUP(t) ((uint32_t)(((t) >> 24) & 0xffffffffu))
#define TAG_IDX(t) ((uint32_t)((t)&0xffffffu))

typedef struct {
    uint32_t i, j;      /* C block coordinates */
    uint32_t *ks;       /* the k of the group's products, ascending */
    uint32_t nprod;     /* products in the group */
    uint32_t *first;    /* multiply SI s does the products ks[first[s]] to ks[first[s+1]-1] */
    uint32_t nsi;       /* multiply SIs in the group */
    uint32_t next;      /* the next multiply SI to issue */
    uint32_t inflight;  /* multiply SIs issued, not committed */
    uint32_t committed; /* multiply SIs committed */
    uint32_t adds;      /* update method: mm.add issued, not committed */
    spm_sdb_t *parts;   /* update method: the partial SDB of each multiply SI (owned) */
    int32_t owner;      /* IEU that acquired the group, -1 none yet */
    int acc;            /* products use ACC from now on */
    int partials;       /* an ACC multiply was issued: C needs a merge */
    int stored;         /* mm.store issued */
    spm_sdb_t c;        /* C(i,j) */
} group_t;

typedef struct {
    uint32_t *own; /* groups this IEU works on */
    size_t nown, capown;
    uint32_t *plan; /* static policies: the groups planned for this IEU */
    size_t nplan, next_plan;
    int seeded;    /* has acquired a group before */
    uint32_t last; /* the group it acquired last */
} ieu_t;

typedef struct {
    uint8_t *a, *b; /* which A and B blocks the node holds */
} node_t;

typedef struct {
    spm_mm_job_t job;
    uint32_t ni, nk, nj; /* block grid: C is ni x nj, the inner dimension nk */
    spm_sdb_t *la, *lb;  /* loaded (typed) A and B blocks, 0 where not needed */
    uint8_t *a_loaded;   /* per A block: 0 not loaded, LOAD_ISSUED, LOAD_DONE */
    uint8_t *b_loaded;   /* the same for B */
    group_t *g;          /* task groups */
    uint32_t ng;
    uint32_t *free;    /* groups no IEU acquired yet (unordered) */
    uint32_t *freepos; /* position of each group in free */
    uint32_t nfree;
    uint32_t unstored; /* groups whose mm.store is not issued yet */
    ieu_t *ieus;
    size_t nieus;
    int planned; /* the static plan exists */
    node_t *nodes;
    size_t nnodes;
    spm_rng_t rng;
    uint32_t step;      /* syn: current superstep */
    uint32_t step_left; /* syn: products of the superstep not committed */
    spm_sdb_t *cids;    /* the result grid */
} mm_t;

/* ------------------------------------------------------------ bookkeeping */

static void free_remove(mm_t *st, uint32_t g)
{
    uint32_t pos = st->freepos[g];
    if (pos >= st->nfree || st->free[pos] != g)
        return;
    uint32_t last = st->free[--st->nfree];
    st->free[pos] = last;
    st->freepos[last] = pos;
    st->freepos[g] = UINT32_MAX;
}

static ieu_t *ieu_get(mm_t *st, uint32_t ieu)
{
    if (spm_grow_zeroed(&st->ieus, &st->nieus, (size_t)ieu + 1, sizeof *st->ieus) != 0)
        return NULL;
    return &st->ieus[ieu];
}

static node_t *node_get(mm_t *st, uint32_t node)
{
    if (spm_grow_zeroed(&st->nodes, &st->nnodes, (size_t)node + 1, sizeof *st->nodes) != 0)
        return NULL;
    node_t *nd = &st->nodes[node];
    if (!nd->a) {
        nd->a = calloc((size_t)st->ni * st->nk, 1);
        nd->b = calloc((size_t)st->nk * st->nj, 1);
        if (!nd->a || !nd->b)
            return NULL; /* freed in finish; locality is only a hint */
    }
    return nd;
}

/*  Records that NODE now holds A(i,k) (IS_A) or B(k,j). */
static void held(mm_t *st, uint32_t node, int is_a, uint32_t r, uint32_t c)
{
    node_t *nd = node_get(st, node);
    if (!nd || !nd->a || !nd->b)
        return;
    if (is_a)
        nd->a[(size_t)r * st->nk + c] = 1;
    else
        nd->b[(size_t)r * st->nj + c] = 1;
}

/* ---------------------------------------------------------------- issuing */

static int issue(spm_sf_t *sf, const char *op, const spm_operand_t *ops, size_t n, uint64_t tag)
{
    int rc = spm_sf_issue(sf, op, ops, n, NULL, 0, tag);
    if (rc != 0)
        spm_sf_fail(sf, rc, "matmul: issuing %s failed: %s", op, spm_strerror(rc));
    return rc;
}

static int concurrent(const mm_t *st, const group_t *g)
{
    return st->job.update == SPM_MM_DISTRIBUTED || st->job.update == SPM_MM_UPDATE || g->acc;
}

/*  Whether the operands of G's next multiply SI are loaded. An SI issued
    before its operands are ready would go to whichever IEU asks first when
    they become ready, not to the IEU the policy chose. */
static int loaded(const mm_t *st, const group_t *g)
{
    for (uint32_t x = g->first[g->next]; x < g->first[g->next + 1]; x++) {
        uint32_t k = g->ks[x];
        if (st->a_loaded[(size_t)g->i * st->nk + k] != LOAD_DONE ||
            st->b_loaded[(size_t)k * st->nj + g->j] != LOAD_DONE)
            return 0;
    }
    return 1;
}

static int can_issue(const mm_t *st, const group_t *g)
{
    return g->next < g->nsi && (g->inflight == 0 || concurrent(st, g)) && loaded(st, g);
}

/*  Issues mm.load of A(r,c) (IS_A) or B(r,c), for WHO when not NULL: the
    typed block then lands in the cache of the node that asked for it. The
    staged raw block is read this once, so no node keeps it. */
static int issue_load(spm_sf_t *sf, mm_t *st, int is_a, uint32_t r, uint32_t c,
                      const spm_ieu_t *who)
{
    size_t at = (size_t)r * (is_a ? st->nk : st->nj) + c;
    spm_operand_t ops[2] = {{(is_a ? st->job.a : st->job.b)[at], SPM_R, SPM_NOCACHE},
                            {(is_a ? st->la : st->lb)[at], SPM_W, 0}};
    (is_a ? st->a_loaded : st->b_loaded)[at] = LOAD_ISSUED;
    if (who)
        held(st, who->node, is_a, r, c);
    return issue(sf, "mm.load", ops, 2, TAG(is_a ? TAG_LOAD_A : TAG_LOAD_B, r, c));
}

/*  Issues, for WHO, every load that the next multiply SI of G still needs,
    all at once: a load is short and its input comes from the store, so
    they run in parallel on whichever slots ask next (WHO's node first)
    instead of one round trip after another ahead of the multiply.
    Returns 1 when it issued any, 0 when every load it needs is issued
    already (or issuing failed, which fails the job). */
static int feed_load(spm_sf_t *sf, mm_t *st, const group_t *g, const spm_ieu_t *who)
{
    int issued = 0;
    for (uint32_t x = g->first[g->next]; x < g->first[g->next + 1]; x++) {
        uint32_t k = g->ks[x];
        if (!st->a_loaded[(size_t)g->i * st->nk + k]) {
            if (issue_load(sf, st, 1, g->i, k, who) != 0)
                return 0;
            issued = 1;
        }
        if (!st->b_loaded[(size_t)k * st->nj + g->j]) {
            if (issue_load(sf, st, 0, k, g->j, who) != 0)
                return 0;
            issued = 1;
        }
    }
    return issued;
}

/*  Issues the next multiply SI of group GI (for WHO when not NULL). The
    version of C that the group's last SI writes in place (write, or the
    RW chain's end) is final: only the client reads it, so the node that
    computes it keeps no copy. */
static int issue_mul(spm_sf_t *sf, mm_t *st, uint32_t gi, const spm_ieu_t *who)
{
    group_t *g = &st->g[gi];
    uint32_t idx = g->next++;
    spm_operand_t ops[2 * SPM_MM_MAX_PER_SI + 1];
    size_t n = 0;
    for (uint32_t x = g->first[idx]; x < g->first[idx + 1]; x++) {
        uint32_t k = g->ks[x];
        ops[n++] = (spm_operand_t){st->la[(size_t)g->i * st->nk + k], SPM_R, 0};
        ops[n++] = (spm_operand_t){st->lb[(size_t)k * st->nj + g->j], SPM_R, 0};
        if (who) {
            held(st, who->node, 1, g->i, k);
            held(st, who->node, 0, k, g->j);
        }
    }
    spm_operand_t *c = &ops[n++];
    *c = (spm_operand_t){g->c, idx == 0 ? SPM_W : SPM_RW, 0};
    if (g->acc || st->job.update == SPM_MM_DISTRIBUTED) {
        c->mode = SPM_ACC;
        g->partials = 1;
    } else if (st->job.update == SPM_MM_UPDATE && idx > 0) {
        if (!(g->parts[idx] = spm_sdb_new(sf, SPM_MM_BLOCK_TYPE))) {
            spm_sf_fail(sf, SPM_ENOMEM, "matmul: out of SDB ids");
            return SPM_ENOMEM;
        }
        *c = (spm_operand_t){g->parts[idx], SPM_W, 0};
    } else if (idx + 1 == g->nsi) {
        c->flags = SPM_NOCACHE;
    }
    g->inflight++;
    return issue(sf, "mm.multiply", ops, n, TAG(TAG_MUL, gi, idx));
}

/*  Finishes a group whose multiplies (and adds) all committed. When its
    last version was written by an SI (write, update), C(i,j) is final:
    every SI leaves its output in its best form and every commit is
    durable. When partials are pending (ACC), mm.store reads C, which
    closes the group with a merge now, overlapped with other groups' work,
    rather than all at the end of the job, and writes the final version. */
static void maybe_store(spm_sf_t *sf, mm_t *st, group_t *g)
{
    if (g->stored || g->committed < g->nsi || g->adds)
        return;
    g->stored = 1;
    spm_operand_t op = {g->c, SPM_RW, SPM_NOCACHE}; /* the final version */
    if (g->partials) {
        if (st->job.update == SPM_MM_MIXTURE)
            spm_sf_expect(sf, 1);
        if (issue(sf, "mm.store", &op, 1, TAG(TAG_STORE, g - st->g, 0)) != 0)
            return;
    }
    if (--st->unstored == 0)
        spm_sf_done(sf);
}

/*  Syn: issues superstep STEP, the STEP-th multiply SI of every group that
    has one. Returns how many. */
static uint32_t superstep(spm_sf_t *sf, mm_t *st)
{
    uint32_t n = 0;
    for (uint32_t gi = 0; gi < st->ng; gi++)
        if (st->g[gi].nsi > st->step && issue_mul(sf, st, gi, NULL) == 0)
            n++;
    st->step_left = n;
    return n;
}

/* --------------------------------------------------------------- policies */

/*  The static plan: groups in row-major order cut into as many contiguous
    runs of about equal work as there are IEUs (contiguous runs share rows
    of A, so each IEU loads few of them). */
static void plan(spm_sf_t *sf, mm_t *st, uint32_t min_ieus)
{
    uint32_t n = spm_sf_ieus(sf);
    if (n < min_ieus)
        n = min_ieus;
    if (n == 0 || !ieu_get(st, n - 1))
        return;
    uint64_t total = 0, acc = 0;
    for (uint32_t gi = 0; gi < st->ng; gi++)
        total += st->g[gi].nprod;
    for (uint32_t w = 0; w < n; w++) {
        st->ieus[w].plan = malloc((st->ng ? st->ng : 1) * sizeof(uint32_t));
        if (!st->ieus[w].plan)
            return;
    }
    for (uint32_t gi = 0; gi < st->ng; gi++) {
        uint32_t w = (uint32_t)(total ? (acc * n) / total : 0);
        acc += st->g[gi].nprod;
        ieu_t *e = &st->ieus[w < n ? w : n - 1];
        e->plan[e->nplan++] = gi;
    }
    st->planned = 1;
}

/*  Next planned group of E that no one acquired yet, or -1. */
static int64_t from_plan(mm_t *st, ieu_t *e)
{
    while (e->plan && e->next_plan < e->nplan) {
        uint32_t gi = e->plan[e->next_plan++];
        if (st->g[gi].owner < 0)
            return gi;
    }
    return -1;
}

static int64_t random_free(mm_t *st)
{
    return st->nfree ? (int64_t)st->free[spm_rng_below(&st->rng, st->nfree)] : -1;
}

/*  How many of G's operand blocks node ND holds. */
static uint32_t held_score(const mm_t *st, const node_t *nd, const group_t *g)
{
    uint32_t n = 0;
    for (uint32_t x = 0; x < g->nprod; x++) {
        uint32_t k = g->ks[x];
        n += nd->a[(size_t)g->i * st->nk + k] + nd->b[(size_t)k * st->nj + g->j];
    }
    return n;
}

/*  The free group whose operands NODE holds most of (held_score). Ties go
    to the group nearest, in row-major order, to LAST, the group the IEU
    acquired before: an IEU moves on along its own region of C instead of
    converging with the others on the same rows (the static seeds start
    them apart), which is what keeps each node's set of A rows small. */
static int64_t smart_free(mm_t *st, uint32_t node, uint32_t last)
{
    node_t *nd = node < st->nnodes ? &st->nodes[node] : NULL;
    int64_t best = -1;
    uint32_t best_score = 0, best_dist = 0;
    for (uint32_t f = 0; f < st->nfree; f++) {
        uint32_t gi = st->free[f];
        uint32_t score = nd && nd->a && nd->b ? held_score(st, nd, &st->g[gi]) : 0;
        uint32_t dist = gi > last ? gi - last : last - gi;
        if (best < 0 || score > best_score ||
            (score == best_score && (dist < best_dist || (dist == best_dist && gi < best)))) {
            best = gi;
            best_score = score;
            best_dist = dist;
        }
    }
    return best;
}

/*  A new task group for WHO per the policy, or -1. */
static int64_t acquire(mm_t *st, const spm_ieu_t *who, ieu_t *e)
{
    spm_mm_policy_t p = st->job.policy;
    int64_t gi = -1;
    if (p == SPM_MM_S)
        gi = from_plan(st, e);
    else if (p == SPM_MM_R || (p == SPM_MM_SR && !e->seeded))
        gi = random_free(st);
    else if (p == SPM_MM_SS && !e->seeded && (gi = from_plan(st, e)) >= 0)
        ;
    else if (p == SPM_MM_SR || p == SPM_MM_SS)
        gi = smart_free(st, who->node, e->last);
    return gi;
}

/*  Mixture: once every group is acquired, the rest of every group runs as
    concurrent ACC products. */
static void maybe_mix(mm_t *st)
{
    if (st->job.update != SPM_MM_MIXTURE || st->nfree > 0)
        return;
    for (uint32_t gi = 0; gi < st->ng; gi++)
        st->g[gi].acc = 1;
}

/*  The open group (any owner) to help with: one not begun first (its C has
    no version yet, so nothing but its operands moves), else the one with
    the most multiply SIs left to issue, among those that could issue now.
    A begun chain of products (not ACC) is a candidate only when CHAINS:
    its next product reads C from its owner's node, which costs a version
    of C (ten times an operand block) on the link. */
static int64_t steal(const mm_t *st, int chains)
{
    int64_t best = -1;
    uint32_t left = 0;
    int fresh = 0;
    for (uint32_t gi = 0; gi < st->ng; gi++) {
        const group_t *g = &st->g[gi];
        if (g->owner < 0 || !can_issue(st, g) || (!chains && g->next > 0 && !concurrent(st, g)))
            continue;
        int f = g->next == 0;
        if (f > fresh || (f == fresh && g->nsi - g->next > left)) {
            best = gi;
            left = g->nsi - g->next;
            fresh = f;
        }
    }
    return best;
}

static int own_add(ieu_t *e, uint32_t gi)
{
    if (spm_grow(&e->own, e->nown, &e->capown, sizeof *e->own, 4) != 0)
        return SPM_ENOMEM;
    e->own[e->nown++] = gi;
    return 0;
}

static int mm_feed(spm_sf_t *sf, const spm_ieu_t *who)
{
    mm_t *st = spm_sf_state(sf);
    if (!st || st->job.policy == SPM_MM_SYN)
        return 0;
    if ((st->job.policy == SPM_MM_S || st->job.policy == SPM_MM_SS) && !st->planned)
        plan(sf, st, who->ieu + 1); /* before taking E: the plan may grow st->ieus */
    ieu_t *e = ieu_get(st, who->ieu);
    if (!e)
        return 0;
    /* continue a group of this IEU; drop the ones fully issued */
    int waiting = 0;
    for (size_t x = 0; x < e->nown;) {
        group_t *g = &st->g[e->own[x]];
        if (g->next == g->nsi || g->owner != (int32_t)who->ieu) { /* done, or taken over */
            e->own[x] = e->own[--e->nown];
            continue;
        }
        if (can_issue(st, g))
            return issue_mul(sf, st, e->own[x], who) == 0;
        if (!loaded(st, g)) {
            if (feed_load(sf, st, g, who))
                return 1;
            waiting = 1;
        }
        x++;
    }
    if (waiting)
        return 0; /* its operands are being loaded: no more groups meanwhile */
    int64_t gi = acquire(st, who, e);
    if (gi >= 0) {
        if (own_add(e, (uint32_t)gi) != 0)
            return 0;
        e->seeded = 1;
        e->last = (uint32_t)gi;
        st->g[gi].owner = (int32_t)who->ieu;
        free_remove(st, (uint32_t)gi);
        maybe_mix(st);
        if (can_issue(st, &st->g[gi]))
            return issue_mul(sf, st, (uint32_t)gi, who) == 0;
        return feed_load(sf, st, &st->g[gi], who);
    }
    /* An IEU takes over another's begun chain only when it has none of its
       own left: one that holds SIs ahead asks while its own chains run,
       and taking one then moved a version of C for no idle slot. */
    if (st->job.policy != SPM_MM_S && (gi = steal(st, e->nown == 0)) >= 0) {
        group_t *g = &st->g[gi];
        /* A chain of products (not ACC) reads its C: the group moves to
           WHO for good, so that C crosses once, not there and back with
           every product its owner and WHO take in turn. */
        if (!concurrent(st, g) && own_add(e, (uint32_t)gi) == 0)
            g->owner = (int32_t)who->ieu;
        return issue_mul(sf, st, (uint32_t)gi, who) == 0;
    }
    return 0;
}

/* ----------------------------------------------------------------- commit */

static void mm_commit(spm_sf_t *sf, const spm_result_t *r)
{
    mm_t *st = spm_sf_state(sf);
    if (!st || r->kind != SPM_RESULT_SI || r->status != 0)
        return; /* a failed SI fails the job in the IDU */
    uint32_t gi = TAG_GROUP(r->tag), idx = TAG_IDX(r->tag);
    switch (TAG_KIND(r->tag)) {
    case TAG_LOAD_A:
    case TAG_LOAD_B:
        /* here the group field is the block's row, idx its column */
        if (TAG_KIND(r->tag) == TAG_LOAD_A && gi < st->ni && idx < st->nk)
            st->a_loaded[(size_t)gi * st->nk + idx] = LOAD_DONE;
        else if (TAG_KIND(r->tag) == TAG_LOAD_B && gi < st->nk && idx < st->nj)
            st->b_loaded[(size_t)gi * st->nj + idx] = LOAD_DONE;
        if (r->ieu)
            held(st, r->ieu->node, TAG_KIND(r->tag) == TAG_LOAD_A, gi, idx);
        return;
    case TAG_MUL: {
        if (gi >= st->ng)
            return;
        group_t *g = &st->g[gi];
        g->inflight--;
        g->committed++;
        if (st->job.update == SPM_MM_UPDATE && idx > 0) {
            spm_operand_t ops[2] = {{g->parts[idx], SPM_R, 0}, {g->c, SPM_RW, 0}};
            if (issue(sf, "mm.add", ops, 2, TAG(TAG_ADD, gi, idx)) == 0)
                g->adds++;
        }
        maybe_store(sf, st, g);
        if (st->job.policy == SPM_MM_SYN && --st->step_left == 0 && st->unstored > 0) {
            st->step++;
            superstep(sf, st);
        }
        return;
    }
    case TAG_ADD:
        if (gi < st->ng) {
            st->g[gi].adds--;
            maybe_store(sf, st, &st->g[gi]);
        }
        return;
    default:
        return;
    }
}

/* ------------------------------------------------------------------ start */

static void mm_finish(spm_sf_t *sf)
{
    mm_t *st = spm_sf_state(sf);
    if (!st)
        return;
    for (uint32_t gi = 0; gi < st->ng; gi++) {
        free(st->g[gi].ks);
        free(st->g[gi].first);
        free(st->g[gi].parts);
    }
    for (uint32_t w = 0; w < st->nieus; w++) {
        free(st->ieus[w].own);
        free(st->ieus[w].plan);
    }
    for (uint32_t n = 0; n < st->nnodes; n++) {
        free(st->nodes[n].a);
        free(st->nodes[n].b);
    }
    spm_mm_job_free(&st->job);
    free(st->la);
    free(st->lb);
    free(st->a_loaded);
    free(st->b_loaded);
    free(st->g);
    free(st->free);
    free(st->freepos);
    free(st->ieus);
    free(st->nodes);
    free(st->cids);
    free(st);
    spm_sf_set_state(sf, NULL);
}

/*  Creates the typed SDB of every block of A (IS_A) or B that takes part
    in a product (USED says which inner index has a partner) and counts its
    load in *N; a block staged typed is its own typed SDB and needs no
    load. Under syn every load is issued now; the other policies issue a
    block's load when the first IEU that needs it asks for work
    (feed_load), so it lands on that IEU's node. */
static int load_all(spm_sf_t *sf, mm_t *st, int is_a, const uint8_t *used, uint64_t *n)
{
    uint32_t rows = is_a ? st->ni : st->nk, cols = is_a ? st->nk : st->nj;
    const spm_sdb_t *x = is_a ? st->job.a : st->job.b;
    spm_sdb_t *loaded = is_a ? st->la : st->lb;
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < cols; c++) {
            size_t at = (size_t)r * cols + c;
            if (!x[at] || !used[is_a ? c : r])
                continue;
            if (spm_mm_staged_typed((is_a ? st->job.annz : st->job.bnnz)[at],
                                    spm_mm_block_side(is_a ? st->job.m : st->job.p,
                                                      is_a ? st->job.bm : st->job.bp, r),
                                    spm_mm_block_side(is_a ? st->job.p : st->job.n,
                                                      is_a ? st->job.bp : st->job.bn, c))) {
                loaded[at] = x[at]; /* staged typed: nothing to load */
                (is_a ? st->a_loaded : st->b_loaded)[at] = LOAD_DONE;
                continue;
            }
            if (!(loaded[at] = spm_sdb_new(sf, SPM_MM_BLOCK_TYPE)))
                return spm_error(SPM_ENOMEM, "matmul: out of SDB ids");
            (*n)++;
            if (st->job.policy == SPM_MM_SYN && issue_load(sf, st, is_a, r, c, NULL) != 0)
                return SPM_EINVAL;
        }
    return 0;
}

/*  Predicted flops of A(i,k) x B(k,j) from the blocks' entry counts and
    the form mm.load will give them (dense from SPM_MM_SPARSE_FILL on). */
static double product_cost(const mm_t *st, uint32_t i, uint32_t k, uint32_t j)
{
    const spm_mm_job_t *job = &st->job;
    double m = spm_mm_block_side(job->m, job->bm, i), p = spm_mm_block_side(job->p, job->bp, k),
           n = spm_mm_block_side(job->n, job->bn, j);
    double na = (double)job->annz[(size_t)i * st->nk + k],
           nb = (double)job->bnnz[(size_t)k * st->nj + j];
    int da = na >= SPM_MM_SPARSE_FILL * m * p, db = nb >= SPM_MM_SPARSE_FILL * p * n;
    if (da && db)
        return 2 * m * p * n;
    return da ? 2 * m * nb : db ? 2 * na * n : 2 * na * nb / p;
}

/*  Cuts group G's products into multiply SIs: PER_SI products each when
    the job says so, else as few SIs as make each about SI_WORK flops, and
    at least C_WORK flops per byte of a dense C block: every SI copies its
    C block in and out and commits it to the store, which costs the VM
    about 1 ns per byte (0.4 ms for a 256 x 256 block, measured), so many
    products belong in one SI. At most SPM_MM_MAX_PER_SI products per SI. */
static int chunk(mm_t *st, group_t *g)
{
    uint32_t per = st->job.per_si;
    if (!per) {
        double work = 0;
        for (uint32_t x = 0; x < g->nprod; x++)
            work += product_cost(st, g->i, g->ks[x], g->j);
        double c_bytes = 8.0 * spm_mm_block_side(st->job.m, st->job.bm, g->i) *
                         spm_mm_block_side(st->job.n, st->job.bn, g->j);
        double sis = ceil(work / fmax(SI_WORK, C_WORK * c_bytes));
        per = (uint32_t)ceil(g->nprod / (sis < 1 ? 1 : sis));
    }
    if (per > SPM_MM_MAX_PER_SI)
        per = SPM_MM_MAX_PER_SI;
    g->nsi = (g->nprod + per - 1) / per;
    if (!(g->first = malloc((g->nsi + 1) * sizeof(uint32_t))))
        return SPM_ENOMEM;
    /* spread evenly: the first (nprod % nsi) SIs take one more */
    uint32_t base = g->nprod / g->nsi, extra = g->nprod % g->nsi;
    g->first[0] = 0;
    for (uint32_t s = 0; s < g->nsi; s++)
        g->first[s + 1] = g->first[s] + base + (s < extra);
    return 0;
}

/*  Builds the task groups; counts their products and multiply SIs. */
static int build_groups(spm_sf_t *sf, mm_t *st, uint64_t *products, uint64_t *sis)
{
    const spm_mm_job_t *j = &st->job;
    size_t nc = (size_t)st->ni * st->nj;
    st->g = calloc(nc ? nc : 1, sizeof *st->g);
    st->free = malloc((nc ? nc : 1) * sizeof(uint32_t));
    st->freepos = malloc((nc ? nc : 1) * sizeof(uint32_t));
    st->cids = calloc(nc ? nc : 1, sizeof(spm_sdb_t));
    if (!st->g || !st->free || !st->freepos || !st->cids)
        return spm_error(SPM_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < st->ni; i++)
        for (uint32_t jj = 0; jj < st->nj; jj++) {
            uint32_t nk = 0;
            for (uint32_t k = 0; k < st->nk; k++)
                nk += j->a[(size_t)i * st->nk + k] && j->b[(size_t)k * st->nj + jj];
            if (nk == 0)
                continue;
            group_t *g = &st->g[st->ng++];
            *g = (group_t){.i = i, .j = jj, .owner = -1};
            if (!(g->ks = malloc(nk * sizeof(uint32_t))))
                return spm_error(SPM_ENOMEM, "out of memory");
            for (uint32_t k = 0; k < st->nk; k++)
                if (j->a[(size_t)i * st->nk + k] && j->b[(size_t)k * st->nj + jj])
                    g->ks[g->nprod++] = k;
            if (chunk(st, g) != 0 ||
                (j->update == SPM_MM_UPDATE && !(g->parts = calloc(g->nsi, sizeof(spm_sdb_t)))))
                return spm_error(SPM_ENOMEM, "out of memory");
            if (!(g->c = st->cids[(size_t)i * st->nj + jj] = spm_sdb_new(sf, SPM_MM_BLOCK_TYPE)))
                return spm_error(SPM_ENOMEM, "matmul: out of SDB ids");
            st->free[st->ng - 1] = st->freepos[st->ng - 1] = st->ng - 1;
            *products += g->nprod;
            *sis += g->nsi;
        }
    st->nfree = st->unstored = st->ng;
    return 0;
}

static int mm_start(spm_sf_t *sf, const void *args, size_t len)
{
    mm_t *st = calloc(1, sizeof *st);
    if (!st)
        return spm_error(SPM_ENOMEM, "out of memory");
    spm_sf_set_state(sf, st);
    int rc = spm_mm_job_decode(args, len, &st->job);
    if (rc != 0)
        return rc;
    spm_mm_job_t *j = &st->job;
    st->ni = spm_mm_nblocks(j->m, j->bm);
    st->nk = spm_mm_nblocks(j->p, j->bp);
    st->nj = spm_mm_nblocks(j->n, j->bn);
    spm_rng_seed(&st->rng, j->seed);
    st->la = calloc((size_t)st->ni * st->nk, sizeof(spm_sdb_t));
    st->lb = calloc((size_t)st->nk * st->nj, sizeof(spm_sdb_t));
    st->a_loaded = calloc((size_t)st->ni * st->nk, 1);
    st->b_loaded = calloc((size_t)st->nk * st->nj, 1);
    uint8_t *a_used = calloc(st->nk, 1), *b_used = calloc(st->nk, 1);
    if (!st->la || !st->lb || !st->a_loaded || !st->b_loaded || !a_used || !b_used) {
        rc = spm_error(SPM_ENOMEM, "out of memory");
        goto done;
    }
    /* A(i,k) is needed when row k of B has a block, B(k,j) when column k of A has one */
    for (uint32_t k = 0; k < st->nk; k++) {
        for (uint32_t jj = 0; jj < st->nj; jj++)
            a_used[k] |= j->b[(size_t)k * st->nj + jj] != 0;
        for (uint32_t i = 0; i < st->ni; i++)
            b_used[k] |= j->a[(size_t)i * st->nk + k] != 0;
    }
    uint64_t sis = 0, products = 0, muls = 0;
    if ((rc = build_groups(sf, st, &products, &muls)) != 0 ||
        (rc = load_all(sf, st, 1, a_used, &sis)) != 0 ||
        (rc = load_all(sf, st, 0, b_used, &sis)) != 0)
        goto done;
    sis += muls; /* mixture counts its stores as it issues them */
    if (j->update == SPM_MM_DISTRIBUTED)
        sis += st->ng; /* stores */
    if (j->update == SPM_MM_UPDATE)
        sis += muls - st->ng; /* adds */
    spm_sf_expect(sf, sis);
    void *res;
    size_t rlen;
    if ((rc = spm_mm_result_encode(st->cids, st->ni, st->nj, &res, &rlen)) != 0)
        goto done;
    rc = spm_sf_set_result(sf, res, rlen);
    free(res);
    if (rc != 0)
        goto done;
    if (st->ng == 0)
        spm_sf_done(sf);
    else if (j->policy == SPM_MM_SYN)
        superstep(sf, st);
done:
    free(a_used);
    free(b_used);
    return rc;
}

static const spm_sf_class_t matmul_class = {
    .name = "matmul",
    .start = mm_start,
    .feed = mm_feed,
    .commit = mm_commit,
    .finish = mm_finish,
};

SPM_CONSTRUCTOR(matmul_program)
{
    spm_program_register(&(spm_program_t){.name = "matmul", .root = &matmul_class});
}
