/*  =========================================================================
    si_sets - the SIs over candidate and frequent itemsets

    GenLarge/Middle/SmallCandidatesFamilyBlock (the join), FilterCandidates
    (the Apriori screen), CountBlockCandidatesSupport, PruneCandidatesBlock
    and GetFrequentSetBlock (see isa.h for their operands).

    A family is a run of k-itemsets sharing their first k-1 items; joining a
    set with each later member of its family gives the (k+1)-candidates in
    sorted order, so a join result needs no sort. The three join opcodes run
    one body: the super-function picks the variant from the family sizes it
    learned from GetFrequentSetBlock replies, and the variant fixes how the
    source range was cut (part of one family, whole families, a whole block).
    =========================================================================
*/
#include "isa/mining/count.h"
#include "isa/mining/isa.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/*  Longest frequent sets FilterCandidates screens against (params carry
    two bounds of this many items). */
#define FILTER_MAX_K 64u

/*  Decodes operands [A, B) as KIND and concatenates them into *OUT, checking
    that the whole stays sorted. An empty range yields an empty set of K0. */
static int concat(spm_si_ctx_t *ctx, size_t a, size_t b, spm_mining_kind_t kind,
                  spm_mining_sets_t *out)
{
    spm_mining_sets_t s;
    size_t cap = 0;
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->kind = kind;
    for (size_t q = a; q < b && rc == 0; q++) {
        if ((rc = spm_mining_in_sets(ctx, q, kind, &s)) != 0)
            break;
        if (q > a && s.k != out->k)
            rc = spm_error(SPM_EFORMAT, "operand %zu: sets of %u items, not %u", q, s.k, out->k);
        out->k = s.k;
        size_t n = (size_t)out->n + s.n;
        if (rc == 0 && n > SPM_MINING_MAX_ENTRIES)
            rc = spm_error(SPM_ERANGE, "operands hold over %u sets", SPM_MINING_MAX_ENTRIES);
        if (rc == 0 && n > cap) {
            cap = n * 2;
            uint32_t *it = realloc(out->items, cap * s.k * 4);
            uint64_t *c = kind == SPM_MINING_KIND_JOIN ? NULL : realloc(out->counts, cap * 8);
            out->items = it ? it : out->items;
            out->counts = c ? c : out->counts;
            if (!it || (kind != SPM_MINING_KIND_JOIN && !c))
                rc = spm_error(SPM_ENOMEM, "out of memory");
        }
        if (rc == 0 && s.n > 0 && out->n > 0 &&
            spm_mining_set_cmp(out->items + ((size_t)out->n - 1) * s.k, s.items, s.k) >= 0)
            rc = spm_error(SPM_EFORMAT, "operand %zu: blocks out of order", q);
        if (rc == 0) {
            memcpy(out->items + (size_t)out->n * s.k, s.items, (size_t)s.n * s.k * 4);
            if (s.counts)
                memcpy(out->counts + out->n, s.counts, (size_t)s.n * 8);
            out->n += s.n;
        }
        spm_mining_sets_free(&s);
    }
    if (rc != 0)
        spm_mining_sets_free(out);
    return rc;
}

/*  Grows a join result to room for N sets of K items. */
static int reserve(spm_mining_sets_t *j, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < n)
        c *= 2;
    uint32_t *it = realloc(j->items, c * j->k * 4);
    if (!it)
        return spm_error(SPM_ENOMEM, "out of memory");
    j->items = it;
    *cap = c;
    return 0;
}

/*  Gen*CandidatesFamilyBlock (fsets[0..m) R, join W; u32 from, to, pfrom, pto). */
static int join(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint32_t from, to, pfrom, pto;
    size_t m = spm_si_noperands(ctx);
    if (spm_get_u32(&p, &from) || spm_get_u32(&p, &to) || spm_get_u32(&p, &pfrom) ||
        spm_get_u32(&p, &pto) || m < 2 || from > to)
        return spm_error(SPM_EINVAL, "join: bad parameters or operands");
    spm_mining_sets_t first, all, out = {.kind = SPM_MINING_KIND_JOIN};
    int rc = spm_mining_in_sets(ctx, 0, SPM_MINING_KIND_FSETS, &first);
    if (rc != 0)
        return rc;
    uint32_t n0 = first.n;
    spm_mining_sets_free(&first);
    if (to > n0)
        return spm_error(SPM_ERANGE, "join: sets %u..%u of a block of %u", from, to, n0);
    if ((rc = concat(ctx, 0, m - 1, SPM_MINING_KIND_FSETS, &all)) != 0)
        return rc;
    uint32_t k = all.k;
    size_t cap = 0;
    out.k = k + 1;
    for (uint32_t s = from; s < to && rc == 0; s++) {
        const uint32_t *a = all.items + (size_t)s * k;
        for (uint32_t q = s + 1; q < all.n && rc == 0; q++) {
            const uint32_t *b = all.items + (size_t)q * k;
            if (spm_mining_set_cmp(a, b, k - 1) != 0)
                break;
            uint32_t r = q - s - 1;
            if (r < pfrom)
                continue;
            if (r >= pto)
                break;
            if ((rc = reserve(&out, &cap, (size_t)out.n + 1)) != 0)
                break;
            uint32_t *c = out.items + (size_t)out.n * out.k;
            memcpy(c, a, (size_t)k * 4);
            c[k] = b[k - 1];
            if (++out.n > SPM_MINING_MAX_ENTRIES)
                rc = spm_error(SPM_ERANGE, "join: over %u candidates", SPM_MINING_MAX_ENTRIES);
        }
    }
    if (rc == 0 && (rc = spm_mining_out_sets(ctx, m - 1, &out)) == 0)
        rc = spm_mining_reply_u32(ctx, &out.n, 1);
    spm_mining_sets_free(&out);
    spm_mining_sets_free(&all);
    return rc;
}

/*  FilterCandidates (join RW, fsets[0..m) R; u32 k, has_lo, lo[k], has_hi, hi[k]). */
static int filter(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint32_t k, has_lo, has_hi, bound[2][FILTER_MAX_K];
    const unsigned char *lo, *hi;
    if (spm_get_u32(&p, &k) || k == 0 || k > FILTER_MAX_K || spm_get_u32(&p, &has_lo) ||
        spm_get_bytes(&p, (size_t)k * 4, &lo) || spm_get_u32(&p, &has_hi) ||
        spm_get_bytes(&p, (size_t)k * 4, &hi) || spm_si_noperands(ctx) < 2)
        return spm_error(SPM_EINVAL, "%s: bad parameters or operands", SPM_MINING_FILTER);
    for (uint32_t j = 0; j < k; j++) {
        bound[0][j] = spm_le32(lo + 4 * j);
        bound[1][j] = spm_le32(hi + 4 * j);
    }
    spm_mining_sets_t c, f;
    int rc = spm_mining_in_sets(ctx, 0, SPM_MINING_KIND_JOIN, &c);
    if (rc != 0)
        return rc;
    if ((rc = concat(ctx, 1, spm_si_noperands(ctx), SPM_MINING_KIND_FSETS, &f)) != 0)
        goto out_c;
    if (c.k != k + 1 || (f.n > 0 && f.k != k)) {
        rc = spm_error(SPM_EFORMAT, "%s: candidates of %u items against sets of %u",
                       SPM_MINING_FILTER, c.k, k);
        goto out;
    }
    rc = 0;
    uint32_t keep = 0, sub[FILTER_MAX_K];
    for (uint32_t i = 0; i < c.n; i++) {
        const uint32_t *s = c.items + (size_t)i * c.k;
        int ok = 1;
        /* The subsets without the last or the second-to-last item are the
           two sets the candidate was joined from: frequent by construction. */
        for (uint32_t drop = 0; drop + 2 < c.k && ok; drop++) {
            for (uint32_t j = 0, w = 0; j < c.k; j++)
                if (j != drop)
                    sub[w++] = s[j];
            if ((has_lo && spm_mining_set_cmp(sub, bound[0], k) < 0) ||
                (has_hi && spm_mining_set_cmp(sub, bound[1], k) >= 0))
                continue;
            ok = spm_mining_sets_find(&f, sub) >= 0;
        }
        if (ok)
            memmove(c.items + (size_t)keep++ * c.k, s, (size_t)c.k * 4);
    }
    c.n = keep;
    if ((rc = spm_mining_out_sets(ctx, 0, &c)) == 0)
        rc = spm_mining_reply_u32(ctx, &keep, 1);
out:
    spm_mining_sets_free(&f);
out_c:
    spm_mining_sets_free(&c);
    return rc;
}

/*  CPU time of this thread, in seconds. */
static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*  Transactions per chunk of the vertical kernel: 256 words per item. */
#define VERT_CHUNK 16384

/*  Transactions of the tree's trial. */
#define TRIE_SAMPLE 256

/*  Three kernels: the pair matrix for 2-itemsets; for longer sets the
    prefix tree, whose cost grows with the subsets of each transaction, and
    vertical bitsets over chunks of several blocks, whose cost grows with
    the candidates. For sets of 3 and more, the first transaction block is
    counted with the bitsets (TRY_VERT), a strided sample of TRIE_SAMPLE
    transactions of the second with the tree (TRY_TRIE), and the cheaper in
    thread CPU time per transaction counts the rest. */
typedef struct {
    enum { PAIRS, TRIE, VERT, TRY_VERT, TRY_TRIE } kernel;
    spm_mining_sets_t *c; /* the candidates; their counts are summed here */
    uint32_t domain;
    spm_mining_pairs_t *pairs;
    spm_mining_trie_t *trie;
    spm_mining_vert_t *vert; /* made at first use */
    double per[2];           /* seconds per transaction: bitsets, tree */
} counter_t;

static void tree_count(counter_t *k, const spm_mining_trans_t *t, uint32_t i)
{
    spm_mining_trie_count(k->trie, t->items + t->off[i], t->off[i + 1] - t->off[i], t->weight[i],
                          k->c->counts);
}

/*  Adds transactions [FROM, TO) of T to the bitsets' chunk, counting each
    chunk that fills. */
static int vert_count(counter_t *k, const spm_mining_trans_t *t, uint32_t from, uint32_t to)
{
    if (!k->vert &&
        !(k->vert = spm_mining_vert_new(k->c->items, k->c->k, k->c->n, k->domain, VERT_CHUNK)))
        return SPM_ENOMEM;
    while (from < to)
        if ((from += spm_mining_vert_add(k->vert, t->off + from, t->items, t->weight + from,
                                         to - from)) < to)
            spm_mining_vert_flush(k->vert, k->c->counts);
    return 0;
}

/*  Counts the transaction block T with the current kernel. */
static int count_block(counter_t *k, const spm_mining_trans_t *t)
{
    double t0 = cpu_seconds();
    int rc = 0;
    switch (k->kernel) {
    case PAIRS:
        for (uint32_t i = 0; i < t->n && rc == 0; i++)
            rc = spm_mining_pairs_count(k->pairs, t->items + t->off[i], t->off[i + 1] - t->off[i],
                                        t->weight[i]);
        return rc;
    case TRIE:
        for (uint32_t i = 0; i < t->n; i++)
            tree_count(k, t, i);
        return 0;
    case VERT:
        return vert_count(k, t, 0, t->n);
    case TRY_VERT:
        if ((rc = vert_count(k, t, 0, t->n)) == 0) {
            spm_mining_vert_flush(k->vert, k->c->counts);
            k->per[0] = (cpu_seconds() - t0) / (t->n + 1);
            k->kernel = TRY_TRIE;
        }
        return rc;
    case TRY_TRIE: {
        /* transactions come sorted by length: the sample is strided */
        uint32_t stride = t->n / TRIE_SAMPLE + 1, done = 0;
        for (uint32_t i = 0; i < t->n; i += stride, done++)
            tree_count(k, t, i);
        k->per[1] = (cpu_seconds() - t0) / (done + 1);
        k->kernel = k->per[1] < k->per[0] ? TRIE : VERT;
        for (uint32_t i = 0; i < t->n && rc == 0; i++)
            if (i % stride != 0) {
                if (k->kernel == TRIE)
                    tree_count(k, t, i);
                else
                    rc = vert_count(k, t, i, i + 1);
            }
        return rc;
    }
    }
    return 0;
}

/*  CountBlockCandidatesSupport (join R, trans[1..m-1) R, cands ACC; u32 domain). */
static int count(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint32_t domain;
    size_t m = spm_si_noperands(ctx);
    if (spm_get_u32(&p, &domain) != 0 || m < 3)
        return spm_error(SPM_EINVAL, "%s: bad parameters or operands", SPM_MINING_COUNT_CANDS);
    spm_mining_sets_t c;
    spm_mining_trans_t t;
    int rc = spm_mining_in_sets(ctx, 0, SPM_MINING_KIND_JOIN, &c);
    if (rc != 0)
        return rc;
    c.kind = SPM_MINING_KIND_CANDS;
    c.counts = calloc((size_t)c.n + 1, 8);
    counter_t k = {.kernel = TRIE, .c = &c, .domain = domain};
    if (c.k == 2 && (k.pairs = spm_mining_pairs_new(c.items, c.n, domain)))
        k.kernel = PAIRS;
    else if ((k.trie = spm_mining_trie_new(c.items, c.k, c.n, domain)) && c.k >= 3 && domain > 0)
        k.kernel = m >= 4 ? TRY_VERT : VERT;
    if (!c.counts || (!k.pairs && !k.trie))
        rc = spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_COUNT_CANDS);
    for (size_t q = 1; q + 1 < m && rc == 0; q++) {
        if ((rc = spm_mining_in_trans_view(ctx, q, &t)) != 0)
            break;
        rc = count_block(&k, &t);
        spm_mining_trans_free(&t);
        if (rc != 0)
            rc = spm_error(rc, "%s: out of memory", SPM_MINING_COUNT_CANDS);
    }
    if (rc == 0 && k.vert)
        spm_mining_vert_flush(k.vert, c.counts);
    if (rc == 0 && k.pairs)
        spm_mining_pairs_finish(k.pairs, c.items, c.n, c.counts);
    if (rc == 0)
        rc = spm_mining_out_sets(ctx, m - 1, &c);
    spm_mining_vert_destroy(&k.vert);
    spm_mining_pairs_destroy(&k.pairs);
    spm_mining_trie_destroy(&k.trie);
    spm_mining_sets_free(&c);
    return rc;
}

/*  PruneCandidatesBlock (cands RW; u64 minsup). */
static int prune(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint64_t minsup;
    if (spm_get_u64(&p, &minsup) != 0)
        return spm_error(SPM_EINVAL, "%s: missing minsup", SPM_MINING_PRUNE);
    spm_mining_sets_t c;
    int rc = spm_mining_in_sets(ctx, 0, SPM_MINING_KIND_CANDS, &c);
    if (rc != 0)
        return rc;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < c.n; i++)
        if (c.counts[i] >= minsup) {
            memmove(c.items + (size_t)keep * c.k, c.items + (size_t)i * c.k, (size_t)c.k * 4);
            c.counts[keep++] = c.counts[i];
        }
    c.n = keep;
    if ((rc = spm_mining_out_sets(ctx, 0, &c)) == 0)
        rc = spm_mining_reply_u32(ctx, &keep, 1);
    spm_mining_sets_free(&c);
    return rc;
}

/*  GetFrequentSetBlock (cands[0..m) R, fsets W; u32 skip, u32 take): the sets
    skip .. skip + take of the operands' concatenation. */
static int frequent_sets(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    uint32_t skip, take;
    size_t m = spm_si_noperands(ctx);
    if (spm_get_u32(&p, &skip) || spm_get_u32(&p, &take) || m < 2)
        return spm_error(SPM_EINVAL, "%s: bad parameters or operands", SPM_MINING_FREQ_SETS);
    if (take > SPM_MINING_MAX_FSETS)
        return spm_error(SPM_ERANGE, "%s: %u sets, over the bound of %u", SPM_MINING_FREQ_SETS,
                         take, SPM_MINING_MAX_FSETS);
    spm_mining_sets_t all;
    int rc = concat(ctx, 0, m - 1, SPM_MINING_KIND_CANDS, &all);
    if (rc != 0)
        return rc;
    if ((uint64_t)skip + take > all.n) {
        rc = spm_error(SPM_ERANGE, "%s: sets %u..%u of %u", SPM_MINING_FREQ_SETS, skip, skip + take,
                       all.n);
        goto out;
    }
    memmove(all.items, all.items + (size_t)skip * all.k, (size_t)take * all.k * 4);
    memmove(all.counts, all.counts + skip, (size_t)take * 8);
    all.n = take;
    all.kind = SPM_MINING_KIND_FSETS;
    void *reply = NULL;
    size_t len = 0;
    if ((rc = spm_mining_out_sets(ctx, m - 1, &all)) == 0 &&
        (rc = spm_mining_fsets_reply_encode(&all, &reply, &len)) == 0)
        rc = spm_si_reply(ctx, reply, len);
    free(reply);
out:
    spm_mining_sets_free(&all);
    return rc;
}

SPM_CONSTRUCTOR(mining_si_sets)
{
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_GEN_LARGE, .exec = join});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_GEN_MIDDLE, .exec = join});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_GEN_SMALL, .exec = join});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_FILTER, .exec = filter});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_COUNT_CANDS, .exec = count});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_PRUNE, .exec = prune});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_FREQ_SETS, .exec = frequent_sets});
}
