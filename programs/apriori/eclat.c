/*  =========================================================================
    eclat - the depth-first miner's super-function (`--algorithm eclat`)

    After the initial stage (P1 and the shrunk transaction blocks), the
    itemsets whose first item is a given rank form a class that no other
    class needs: Eclat mines each with tidsets, depth first. This SF cuts
    the ranks into about four classes per IEU and issues one
    MineClassBlock per class, at most three per IEU out at a time, as
    IEUs ask (see plan() on why the runs are of equal length, eclat_feed()
    on the window).

    A class block is bounded: past a soft bound (a sixteenth of
    SPM_MINING_CLASS_CAP) its SI stops after the 2-item prefix it is in and
    says where the rest of the class starts; this SF issues the rest as two
    new classes after it, so large classes spread over the IEUs with no
    work done twice. A block whose first 2-item prefix alone passes the
    hard bound replies "too big": the class is split in two, by first items
    or, for one first item, by second items, and issued again; a class of
    one 2-item prefix still too big becomes the class of that prefix (see
    split()), and so on down to SPM_MINING_MAX_DEPTH items. (join_cap x
    512 bytes replaces the hard bound when a job asks for smaller join
    blocks: a test hook.)

    A job that wants the itemsets alone gives each class SI the frequent
    items too, so that its block holds items in output order; the class
    blocks are then the job's result (after P1), and the client merges
    them. With at most 128 frequent items the SI then walks by the items'
    positions (by number) rather than by rank, and a class's range is of
    positions: the blocks, in class order, follow one another in each
    length, and the client's merge reads them almost as one run.
    Otherwise, when every class has replied with its counts per length,
    CutFrequentSetBlock SIs cut the class blocks, in order, into the
    level-wise path's full BlockOfFrequentSet blocks of each length, whose
    replies fill the job's levels. The SF then finishes, and the root
    starts find_rules for each length and finish_job exactly as after the
    level-wise stages. Every callback does work in proportion to the
    classes and blocks, never to the sets.
    =========================================================================
*/
#include "programs/apriori/sf.h"
#include "base/grow.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

/*  Classes planned per IEU. Each reads every transaction block and builds
    its bitsets, so fewer means less of that (T25I10D100K at 0.25%, whole
    command: 0.33 s with 4, 0.36 s with 8); the classes of the most
    frequent items, which take longest on sparse data, are issued first. */
#define PER_IEU 4

/*  Bytes of pair counts a class is planned to take (rows of its first
    items over all F1 partners, 8 bytes each), so that two IEUs hold well
    under the memory bound; MineClassBlock itself allows 64 MiB, beyond
    which it tries every partner. Enough classes are planned for it (at
    most MAX_CLASSES; PER_IEU per IEU at least): a retail-like set of
    6,190 frequent items needs five. */
#define CLASS_PAIRS_BYTES (32ull << 20)

/*  KiB of bitsets a class of several first items may build: past it the
    SI replies "too big" and the class is split, since fewer first items
    need fewer partners. A class of one first item builds what it needs
    (MineClassBlock refuses only past 1 GiB). Jobs with join blocks under
    65,536 candidates (a test hook) allow join_cap / 16 + 1 KiB. */
#define CLASS_BITS_KB (64u << 10)
#define MAX_CLASSES 256

/*  Classes whose pair counts fit CLASS_PAIRS_BYTES with F1 frequent items. */
static uint64_t classes_for_pairs(uint64_t f1)
{
    uint64_t rows = CLASS_PAIRS_BYTES / (8 * (f1 ? f1 : 1));
    rows = rows ? rows : 1;
    return f1 > 1 ? (f1 - 1 + rows - 1) / rows : 0;
}

typedef struct {
    uint32_t lo, hi;   /* first items of the class */
    uint32_t slo, shi; /* second items (0, NONE: any); of a prefix class, next items */
    uint32_t depth;    /* a prefix class: its prefix's items (0: none) */
    uint32_t pre[SPM_MINING_MAX_DEPTH]; /* its prefix (pre[0] = lo) */
    uint32_t own;                       /* and the shortest of its first items it emits (0: none) */
    int quiet;                          /* its (depth + 1)-sets are emitted already (a deep stop) */
    spm_sdb_t id;                       /* its BlockOfItemsets */
    uint32_t next;                      /* the next class in class order (NONE: last) */
    int done;                           /* its counts are in */
    uint32_t nlen;                      /* lengths it holds */
    uint32_t *len;                      /* nlen x (k, sets) */
} piece_t;

typedef struct {
    spm_apriori_job_t *job;
    piece_t *p;         /* every class issued, in issue order */
    size_t cap;         /* entries of p */
    uint32_t np;        /* classes */
    uint32_t first;     /* the first class in rank order */
    uint32_t pending;   /* classes issued without their counts */
    uint32_t unissued;  /* planned classes 0 .. unissued-1 not issued yet */
    uint32_t window;    /* planned classes issued at once, at most */
    uint32_t *held;     /* by IEU: planned classes fed to it, not yet committed */
    uint32_t nheld;     /* entries of held */
    uint32_t cuts;      /* CutFrequentSetBlock SIs without their reply */
    uint32_t class_cap; /* bytes per class block */
    int item_order;     /* itemsets only: class blocks in item order, not cut */
    uint32_t bits_kb;   /* bitsets a class of several first items may build */
} eclat_t;

/*  Issues MineClassBlock for class I (a new output block). */
static int issue_class(spm_sf_t *sf, eclat_t *e, uint32_t i)
{
    spm_apriori_job_t *job = e->job;
    piece_t *c = &e->p[i];
    spm_operand_t ops[MAX_OPS];
    uint32_t n = 0;
    for (uint32_t t = 0; t < job->ntlist; t++)
        ops[n++] = (spm_operand_t){job->tlist[t], SPM_R, 0};
    if (e->item_order)
        ops[n++] = (spm_operand_t){job->fitems, SPM_R, 0};
    c->id = spm_sdb_new(sf, SPM_MINING_ITEMSETS);
    ops[n++] = (spm_operand_t){c->id, SPM_W, 0};
    spm_buf_t p = {0};
    spm_buf_put_u32(&p, job->f1);
    spm_buf_put_u64(&p, job->a.minsup);
    spm_buf_put_u32(&p, job->a.maxlen);
    spm_buf_put_u32(&p, c->lo);
    spm_buf_put_u32(&p, c->hi);
    spm_buf_put_u32(&p, c->slo);
    spm_buf_put_u32(&p, c->shi);
    spm_buf_put_u32(&p, e->class_cap);
    spm_buf_put_u32(&p, e->class_cap / 16);
    spm_buf_put_u32(&p, e->item_order ? 1 : 0);
    spm_buf_put_u32(&p, e->bits_kb);
    spm_buf_put_u32(&p, c->depth);
    for (uint32_t k = 0; k < c->depth; k++)
        spm_buf_put_u32(&p, c->pre[k]);
    spm_buf_put_u32(&p, c->own);
    /* Stops inside a top prefix only for blocks the client merges: each
       makes up to four classes, and a level cut for rules reads at most
       MAX_OPS - 1 of them per block of sets. */
    spm_buf_put_u32(&p, (e->item_order ? SPM_MINING_CLASS_DEEP : 0) |
                            (c->quiet ? SPM_MINING_CLASS_QUIET : 0));
    int rc = spm_apriori_issue(sf, SPM_MINING_MINE_CLASS, ops, n, &p, TAG(TAG_CLASS, i));
    spm_buf_free(&p);
    if (rc == 0)
        e->pending++;
    return rc;
}

/*  Adds class C after class AFTER (NONE: as the last) and issues it.
    Returns its index, or NONE when the job failed. */
static uint32_t add_piece(spm_sf_t *sf, eclat_t *e, uint32_t after, const piece_t *c)
{
    if (spm_grow(&e->p, e->np, &e->cap, sizeof *e->p, 64) != 0) {
        spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
        return NONE;
    }
    uint32_t i = e->np++;
    e->p[i] = *c;
    e->p[i].next = NONE;
    e->p[i].done = 0;
    e->p[i].nlen = 0;
    e->p[i].len = NULL;
    if (after != NONE) {
        e->p[i].next = e->p[after].next;
        e->p[after].next = i;
    } else if (i > 0) {
        e->p[i - 1].next = i; /* planned in rank order */
    }
    return issue_class(sf, e, i) == 0 ? i : NONE;
}

/*  The class (LO, HI, SLO, SHI) of no prefix, after AFTER (see add_piece). */
static uint32_t add_class(spm_sf_t *sf, eclat_t *e, uint32_t after, uint32_t lo, uint32_t hi,
                          uint32_t slo, uint32_t shi)
{
    piece_t c = {.lo = lo, .hi = hi, .slo = slo, .shi = shi};
    return add_piece(sf, e, after, &c);
}

/*  The first of C's next items (its second, or past its prefix). */
static uint32_t next_from(const piece_t *c)
{
    uint32_t last = c->depth ? c->pre[c->depth - 1] : c->lo;
    return c->slo > last + 1 ? c->slo : last + 1;
}

/*  Adds class C after class AFTER in two halves (by first items, else by
    next items) so that the rest of a large class runs on two IEUs. Returns
    the last class added (AFTER when none), or NONE when the job failed. */
static uint32_t add_halves(spm_sf_t *sf, eclat_t *e, uint32_t after, piece_t c)
{
    uint32_t f1 = e->job->f1;
    if (c.lo >= c.hi)
        return after;
    if (c.depth == 0 && c.hi - c.lo >= 2) {
        uint32_t mid = c.lo + (c.hi - c.lo) / 2;
        after = add_class(sf, e, after, c.lo, mid, 0, NONE);
        return after == NONE ? NONE : add_class(sf, e, after, mid, c.hi, 0, NONE);
    }
    uint32_t s0 = next_from(&c), s1 = c.shi < f1 ? c.shi : f1;
    if (s0 >= s1)
        return after;
    c.slo = s0;
    if (s1 - s0 < 2)
        return add_piece(sf, e, after, &c);
    piece_t b = c;
    c.shi = b.slo = s0 + (s1 - s0) / 2;
    b.own = 0; /* the first half emits the prefix's own sets */
    after = add_piece(sf, e, after, &c);
    return after == NONE ? NONE : add_piece(sf, e, after, &b);
}

/*  Per-IEU window of planned classes: an IEU holding them all local
    holds up to three, one that still fetches blocks one. */
#define PER_IEU_OUT 3

/*  The feed hook: gives IEU WHO the next planned class, the last first,
    while fewer than the window (three per IEU) are out and WHO holds
    fewer than its share, so that the IEUs pull them as they finish one.
    (Issued at once, the classes were dealt out evenly, sizes unknown, to
    IEUs that had asked for many SIs ahead while the initial stage's were
    short: T25I10 at 0.6%, whole command, 171 -> 162 ms, medians of 9;
    with two per IEU also 162; chess unchanged.) An IEU whose node lacks
    some of the transaction blocks, which every class reads, gets one
    class to fetch them for, not three: on 2 nodes at 100 Mbit/s
    (T25I10D500K) a node fetched its peer's blocks for 2-3 s, and the
    classes queued behind its first waited there while the other IEU,
    which had every block, had run out of classes (idle 0.4-1.2 s). */
static int eclat_feed(spm_sf_t *sf, const spm_ieu_t *who)
{
    eclat_t *e = spm_sf_state(sf);
    if (!e || e->unissued == 0 || e->pending >= e->window)
        return 0;
    if (who->ieu >= e->nheld) {
        uint32_t n = who->ieu + 1, *h = realloc(e->held, (size_t)n * sizeof *h);
        if (!h)
            return 0; /* no more for WHO now; the others still take classes */
        memset(h + e->nheld, 0, (size_t)(n - e->nheld) * sizeof *h);
        e->held = h;
        e->nheld = n;
    }
    uint32_t mine = e->held[who->ieu];
    if (mine >= PER_IEU_OUT)
        return 0;
    if (mine > 0) {
        spm_apriori_job_t *job = e->job;
        spm_operand_t ops[MAX_OPS];
        for (uint32_t t = 0; t < job->ntlist; t++)
            ops[t] = (spm_operand_t){job->tlist[t], SPM_R, 0};
        if (spm_sf_bytes_to(sf, ops, job->ntlist, who) > 0)
            return 0;
    }
    if (issue_class(sf, e, --e->unissued) != 0)
        return 0; /* the job has failed */
    e->held[who->ieu]++;
    return 1;
}

/*  Plans and issues the first classes: runs of first items, PER_IEU per
    IEU so that pulling SIs balances the load. Item F1 - 1 has no class.
    No weighting by rank predicts the classes' sizes: a rare first item
    (low rank) has the most partners but few of them stay frequent with it,
    and on chess at 60% the middle ranks hold most of the sets. */
static int plan(spm_sf_t *sf, eclat_t *e)
{
    uint32_t f1 = e->job->f1, ieus = spm_sf_ieus(sf) ? spm_sf_ieus(sf) : 1;
    uint64_t want = classes_for_pairs(f1) > PER_IEU * ieus ? classes_for_pairs(f1) : PER_IEU * ieus;
    want = want < MAX_CLASSES ? want : MAX_CLASSES;
    uint32_t n = want < f1 - 1 ? (uint32_t)want : f1 - 1;
    if (n > 0 && spm_grow(&e->p, 0, &e->cap, sizeof *e->p, n) != 0) {
        spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
        return 0;
    }
    for (uint32_t g = 0; g < n; g++)
        e->p[g] = (piece_t){.lo = (uint32_t)((uint64_t)(f1 - 1) * g / n),
                            .hi = (uint32_t)((uint64_t)(f1 - 1) * (g + 1) / n),
                            .shi = NONE,
                            .next = g + 1 < n ? g + 1 : NONE};
    e->np = n;
    e->unissued = n;
    e->window = PER_IEU_OUT * ieus;
    return 0; /* eclat_feed issues them */
}

/*  Class I was too big: its first half is issued again in its place, the
    second as a new class after it. A class of one prefix (a first item
    and one second item, or a prefix and one next item) becomes the class
    of that longer prefix, which emits the prefix itself too: a prefix
    whose sets pass the bound is mined a level deeper, so a job fails only
    past SPM_MINING_MAX_DEPTH items. */
static void split(spm_sf_t *sf, eclat_t *e, uint32_t i)
{
    piece_t c = e->p[i];
    uint32_t f1 = e->job->f1;
    if (c.depth == 0 && c.hi - c.lo >= 2) {
        uint32_t mid = c.lo + (c.hi - c.lo) / 2;
        e->p[i].hi = mid;
        if (issue_class(sf, e, i) == 0)
            add_class(sf, e, i, mid, c.hi, 0, NONE);
        return;
    }
    uint32_t s0 = next_from(&c), s1 = c.shi < f1 ? c.shi : f1;
    if (s1 > s0 + 1) {
        piece_t b = c;
        e->p[i].slo = s0;
        e->p[i].shi = b.slo = s0 + (s1 - s0) / 2;
        b.own = 0;
        if (issue_class(sf, e, i) == 0)
            add_piece(sf, e, i, &b);
        return;
    }
    if (s0 >= s1 || (c.depth ? c.depth + 1 : 2) > SPM_MINING_MAX_DEPTH) {
        spm_sf_fail(sf, SPM_ERANGE,
                    "apriori: the frequent itemsets sharing their first %u items exceed %u "
                    "bytes (a higher --min-support is needed)",
                    SPM_MINING_MAX_DEPTH, e->class_cap);
        return;
    }
    piece_t *d = &e->p[i];
    if (d->depth == 0) {
        d->pre[d->depth++] = c.lo;
        d->own = 2;
    } else if (d->own == 0 && !d->quiet) {
        d->own = d->depth + 1;
    }
    d->quiet = 0; /* the longer prefix (emitted already when quiet) has its next sets to emit */
    d->pre[d->depth++] = s0;
    d->slo = s0 + 1;
    d->shi = NONE;
    issue_class(sf, e, i);
}

/*  Class I stopped early at (RA, RB), or inside its top prefix ending in
    RB before next item RN (DEEP): it keeps what it found, and the rest
    becomes new classes after it, the longer prefix's first. */
static void resume(spm_sf_t *sf, eclat_t *e, uint32_t i, uint32_t ra, uint32_t rb, int deep,
                   uint32_t rn)
{
    piece_t c = e->p[i];
    uint32_t after = i;
    if (ra < c.lo || ra >= c.hi || (rb > 0 && rb <= ra) ||
        (c.depth > 0 && rb <= c.pre[c.depth - 1]) || (deep && (rb == 0 || rn <= rb)) ||
        (deep && c.depth + 1 >= SPM_MINING_MAX_DEPTH)) {
        spm_sf_fail(sf, SPM_EPROTO, "apriori: %s resumes outside its class", SPM_MINING_MINE_CLASS);
        return;
    }
    c.own = 0; /* emitted already */
    if (deep) {
        piece_t d = c;
        if (d.depth == 0)
            d.pre[d.depth++] = ra;
        d.pre[d.depth++] = rb;
        d.lo = ra;
        d.hi = ra + 1;
        d.slo = rn;
        d.shi = NONE;
        d.quiet = 1;
        if ((after = add_halves(sf, e, after, d)) == NONE)
            return;
        rb++; /* then the top prefixes after rb */
        if (rb >= e->job->f1)
            rb = 0, ra++;
    }
    if (c.depth > 0) { /* the rest of the prefix's next items */
        if (rb > 0) {
            c.slo = rb;
            add_halves(sf, e, after, c);
        }
        return;
    }
    if (rb > 0) {
        piece_t r = {.lo = ra, .hi = ra + 1, .slo = rb, .shi = c.shi};
        after = add_halves(sf, e, after, r);
        ra++;
    }
    piece_t r = {.lo = ra, .hi = c.hi, .shi = NONE};
    if (after != NONE)
        add_halves(sf, e, after, r);
}

/*  Sets of length K in class I. */
static uint32_t sets_of(const piece_t *c, uint32_t k)
{
    for (uint32_t j = 0; j < c->nlen; j++)
        if (c->len[2 * j] == k)
            return c->len[2 * j + 1];
    return 0;
}

/*  Issues the CutFrequentSetBlock SIs of length K (N sets): full blocks of
    SPM_MINING_MAX_FSETS, each reading the classes it overlaps. */
static int cut_level(spm_sf_t *sf, eclat_t *e, uint32_t k, uint64_t n)
{
    spm_apriori_level_t *l = &e->job->lv[k - 1];
    uint32_t nb = (uint32_t)((n + SPM_MINING_MAX_FSETS - 1) / SPM_MINING_MAX_FSETS);
    /* The level-wise path fails when it must join such a level. */
    uint32_t maxlen = e->job->a.maxlen;
    if ((nb >= MAX_OPS && !(maxlen && k >= maxlen)) || nb >= 1u << 20) {
        spm_apriori_fail_span(sf, k);
        return SPM_ERANGE;
    }
    l->id = calloc((size_t)nb + 1, sizeof *l->id);
    l->info = calloc((size_t)nb + 1, sizeof *l->info);
    if (!l->id || !l->info) {
        spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
        return SPM_ENOMEM;
    }
    l->cap = (size_t)nb + 1;
    l->n = nb;
    uint32_t c = e->first;
    uint64_t base = 0; /* k-sets before class c */
    for (uint32_t b = 0; b < nb; b++) {
        uint64_t from = (uint64_t)b * SPM_MINING_MAX_FSETS, to = from + SPM_MINING_MAX_FSETS;
        to = to < n ? to : n;
        while (base + sets_of(&e->p[c], k) <= from) {
            base += sets_of(&e->p[c], k);
            c = e->p[c].next;
        }
        spm_operand_t ops[MAX_OPS];
        uint32_t m = 0;
        uint64_t at = base;
        for (uint32_t q = c; q != NONE && at < to; q = e->p[q].next) {
            if (sets_of(&e->p[q], k) == 0)
                continue;
            if (m == MAX_OPS - 1) {
                spm_apriori_fail_span(sf, k);
                return SPM_ERANGE;
            }
            ops[m++] = (spm_operand_t){e->p[q].id, SPM_R, 0};
            at += sets_of(&e->p[q], k);
        }
        l->id[b] = spm_sdb_new(sf, SPM_MINING_FSETS);
        ops[m++] = (spm_operand_t){l->id[b], SPM_W, 0};
        spm_buf_t p = {0};
        spm_buf_put_u32(&p, k);
        spm_buf_put_u32(&p, (uint32_t)(from - base));
        spm_buf_put_u32(&p, (uint32_t)(to - from));
        int rc = spm_apriori_issue(sf, SPM_MINING_CUT_SETS, ops, m, &p, TAG(TAG_CUT, k << 20 | b));
        spm_buf_free(&p);
        if (rc != 0)
            return rc;
        e->cuts++;
    }
    return 0;
}

/*  Every class is in, and the job wants the itemsets alone: its result
    names the class blocks that hold sets, in class order, each one run of
    the output (front coded, the client holds them as they are). */
static void keep_classes(spm_sf_t *sf, eclat_t *e)
{
    spm_apriori_job_t *job = e->job;
    uint32_t at = 0;
    if (!(job->classes = calloc((size_t)e->np + 1, sizeof *job->classes))) {
        spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
        return;
    }
    for (uint32_t c = e->np ? e->first : NONE; c != NONE; c = e->p[c].next)
        if (e->p[c].nlen > 0)
            job->classes[at++] = e->p[c].id;
    job->nclasses = at;
    spm_sf_done(sf);
}

/*  Every class is in: adds the levels and cuts each into frequent-set blocks. */
static void cut_all(spm_sf_t *sf, eclat_t *e)
{
    uint32_t maxk = 1;
    for (uint32_t i = 0; i < e->np; i++)
        for (uint32_t j = 0; j < e->p[i].nlen; j++)
            maxk = e->p[i].len[2 * j] > maxk ? e->p[i].len[2 * j] : maxk;
    for (uint32_t k = 2; k <= maxk; k++) {
        uint64_t n = 0;
        for (uint32_t i = 0; i < e->np; i++)
            n += sets_of(&e->p[i], k);
        while (e->job->nlv < k)
            if (spm_apriori_add_level(e->job) != 0) {
                spm_sf_fail(sf, SPM_ENOMEM, "apriori: out of memory");
                return;
            }
        if (n > 0 && cut_level(sf, e, k, n) != 0)
            return;
    }
    if (e->cuts == 0)
        spm_sf_done(sf);
}

/*  Reads a MineClassBlock reply into class I: its status (0 whole, 1 too
    big, 2 partial, 3 partial inside a top prefix) and resume point. */
static int class_reply(eclat_t *e, uint32_t i, const spm_result_t *r, uint32_t *status,
                       uint32_t *ra, uint32_t *rb, uint32_t *rn)
{
    spm_cursor_t c = spm_cursor(r->reply, r->reply_len);
    piece_t *p = &e->p[i];
    uint32_t nlen;
    if (spm_get_u32(&c, status) || spm_get_u32(&c, &nlen) || nlen > SPM_MINING_MAX_K ||
        *status > 3 || spm_cursor_left(&c) != (size_t)nlen * 8 + 12)
        return SPM_EPROTO;
    free(p->len);
    if (!(p->len = malloc((size_t)nlen * 8 + 8)))
        return SPM_ENOMEM;
    for (uint32_t j = 0; j < 2 * nlen; j++)
        spm_get_u32(&c, &p->len[j]);
    p->nlen = nlen;
    spm_get_u32(&c, ra);
    spm_get_u32(&c, rb);
    spm_get_u32(&c, rn);
    return 0;
}

static void eclat_commit(spm_sf_t *sf, const spm_result_t *r)
{
    eclat_t *e = spm_sf_state(sf);
    if (spm_apriori_check(sf, r) != 0 || r->kind != SPM_RESULT_SI)
        return;
    uint32_t n = TAG_N(r->tag);
    if (TAG_KIND(r->tag) == TAG_CLASS && n < e->np) {
        if (r->ieu && r->ieu->ieu < e->nheld && e->held[r->ieu->ieu] > 0)
            e->held[r->ieu->ieu]--;
        uint32_t status, ra, rb, rn;
        int rc = class_reply(e, n, r, &status, &ra, &rb, &rn);
        if (rc != 0) {
            spm_sf_fail(sf, rc, "apriori: malformed reply of %s", SPM_MINING_MINE_CLASS);
            return;
        }
        e->pending--;
        if (status == 1) {
            e->p[n].nlen = 0;
            split(sf, e, n);
            return;
        }
        e->p[n].done = 1;
        if (status >= 2)
            resume(sf, e, n, ra, rb, status == 3, rn);
        if (e->pending == 0 && e->unissued == 0 && e->item_order)
            keep_classes(sf, e);
        else if (e->pending == 0 && e->unissued == 0)
            cut_all(sf, e);
    } else if (TAG_KIND(r->tag) == TAG_CUT) {
        uint32_t k = n >> 20, b = n & 0xfffff;
        spm_apriori_level_t *l = &e->job->lv[k - 1];
        spm_mining_fsets_reply_t *in = &l->info[b];
        if (spm_mining_fsets_reply_decode(r->reply, r->reply_len, in) != 0) {
            spm_sf_fail(sf, SPM_EPROTO, "%s", spm_error_detail());
            return;
        }
        l->sets += in->n;
        if (--e->cuts == 0)
            spm_sf_done(sf);
    }
}

/*  `auto` mines depth first wherever a class SI can: every transaction
    block in one SI; the bitsets of every frequent item over every shrunk
    transaction in AUTO_BITS_BYTES (a class of several first items splits
    past CLASS_BITS_KB, so only one of one first item with most items for
    partners would need them all); and the pair counts of each class within CLASS_PAIRS_BYTES with
    at most AUTO_CLASSES classes, each of which reads every transaction
    block: at most 16,384 frequent items. Without its pair counts a class
    would try every partner of every first item, where the level-wise path
    counts candidates horizontally; and a hopeless search (far more
    frequent items) still fails at once, level-wise, in its line. (With
    at most 5,792 items, as before, a retail-like set at 0.02% with 6,190
    went level by level: 1.16 s of job against 0.26 s depth first.)
    Measured (whole command, itemsets only, 2 IEUs, medians of 3,
    docs/MINING.md): depth first is 1.3-2.2x faster on chess, a dense Quest
    set, T10I4D100K at 0.1% and 0.05% and T25I10D100K at 0.25%, and as fast
    on T25I10D100K at 0.6% (0.19 s). */
#define AUTO_BITS_BYTES (256ull << 20)
#define AUTO_CLASSES 64

int spm_apriori_auto_eclat(const spm_apriori_job_t *job)
{
    uint64_t words = (job->ntrans_shrunk + 63) / 64, f1 = job->f1;
    return job->ntlist + 1 <= MAX_OPS && job->ntrans_shrunk > 0 &&
           f1 * words * 8 <= AUTO_BITS_BYTES && classes_for_pairs(f1) <= AUTO_CLASSES;
}

static int eclat_start(spm_sf_t *sf, const void *args, size_t len)
{
    spm_apriori_job_t *job = spm_apriori_child_job(sf, args, len, NULL);
    if (!job)
        return SPM_EINVAL;
    eclat_t *e = calloc(1, sizeof *e);
    if (!e)
        return SPM_ENOMEM;
    spm_sf_set_state(sf, e);
    e->job = job;
    e->first = 0;
    uint64_t cap = (uint64_t)job->a.join_cap * 512;
    e->class_cap = cap < SPM_MINING_CLASS_CAP ? (uint32_t)cap : SPM_MINING_CLASS_CAP;
    e->bits_kb = job->a.join_cap < 65536 ? job->a.join_cap / 16 + 1 : CLASS_BITS_KB;
    /* The client merges class blocks it can read in output order; with
       rules, find_rules needs the levels in rank order. */
    e->item_order = (job->a.flags & SPM_APRIORI_ITEMSETS_ONLY) && job->ntlist + 2 <= MAX_OPS;
    if (job->ntlist + 1 > MAX_OPS) {
        spm_sf_fail(sf, SPM_ERANGE,
                    "apriori: eclat reads every transaction block in one SI, and %u blocks are "
                    "over %d (use a larger --block or --algorithm apriori)",
                    job->ntlist, MAX_OPS - 1);
        return 0;
    }
    return plan(sf, e);
}

static void eclat_finish(spm_sf_t *sf)
{
    eclat_t *e = spm_sf_state(sf);
    if (!e)
        return;
    for (uint32_t i = 0; i < e->np; i++)
        free(e->p[i].len);
    free(e->p);
    free(e->held);
    free(e);
    spm_sf_set_state(sf, NULL);
}

const spm_sf_class_t spm_apriori_eclat_class = {.name = "apriori.eclat",
                                                .start = eclat_start,
                                                .feed = eclat_feed,
                                                .commit = eclat_commit,
                                                .finish = eclat_finish};
