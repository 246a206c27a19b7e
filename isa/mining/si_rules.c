/*  =========================================================================
    si_rules - the SIs of rule finding: CheckConfidenceInBlock, StoreResult

    A rule X => Y comes from a frequent set Z = X u Y and a subset X of it;
    its support is s(Z) and its confidence s(Z) / s(X). CheckConfidenceInBlock
    takes the sets Z of one block and the subsets X of one size that another
    block holds: as the blocks of each length partition the frequent sets,
    each (Z, X) pair is checked by exactly one SI. Lift needs s(Y) as well,
    from yet another block; the client computes it from the itemsets it
    fetches anyway.
    =========================================================================
*/
#include "isa/mining/isa.h"

#include <stdlib.h>
#include <string.h>

int spm_mining_confident(uint64_t supz, uint64_t supx, double minconf)
{
    return supx > 0 && (double)supz / (double)supx + 1e-12 >= minconf;
}

/*  CheckConfidenceInBlock (pre R, post R, rules W; f64 minconf, u32 maxcons,
    and optionally u32 zlo, u32 zhi: only the sets zlo..zhi-1 of post). */
static int confidence(spm_si_ctx_t *ctx)
{
    spm_cursor_t p = spm_mining_params(ctx);
    double minconf;
    uint32_t maxcons, zlo = 0, zhi = UINT32_MAX;
    if (spm_get_f64(&p, &minconf) || spm_get_u32(&p, &maxcons) ||
        (spm_cursor_left(&p) > 0 && (spm_get_u32(&p, &zlo) || spm_get_u32(&p, &zhi))) || zlo > zhi)
        return spm_error(SPM_EINVAL, "%s: bad parameters", SPM_MINING_CONFIDENCE);
    spm_mining_sets_t pre, post;
    spm_mining_rules_builder_t out = {0};
    int rc = spm_mining_in_sets(ctx, 0, SPM_MINING_KIND_FSETS, &pre);
    if (rc != 0)
        return rc;
    if ((rc = spm_mining_in_sets(ctx, 1, SPM_MINING_KIND_FSETS, &post)) != 0)
        goto out_pre;
    uint32_t j = pre.k, k = post.k;
    if (pre.n == 0 || post.n == 0 || j >= k || (maxcons && k - j > maxcons))
        goto store;
    uint32_t pos[SPM_MINING_MAX_K], x[SPM_MINING_MAX_K], y[SPM_MINING_MAX_K];
    const uint32_t *lo = pre.items, *hi = pre.items + ((size_t)pre.n - 1) * j;
    for (uint32_t i = zlo; i < post.n && i < zhi; i++) {
        const uint32_t *z = post.items + (size_t)i * k;
        /* Z's j-subsets lie between its first j items and its last j: none
           is in this block's range [lo, hi] when those lie outside it.
           The blocks of X partition the j-sets, so for most pairs of blocks
           this one test per Z replaces looking up all of its subsets. */
        if (spm_mining_set_cmp(z, hi, j) > 0 || spm_mining_set_cmp(z + (k - j), lo, j) < 0)
            continue;
        for (uint32_t a = 0; a < j; a++)
            pos[a] = a;
        for (;;) { /* every j-combination of z's positions, in order */
            for (uint32_t a = 0; a < j; a++)
                x[a] = z[pos[a]];
            long f = -1;
            if (spm_mining_set_cmp(x, lo, j) >= 0 && spm_mining_set_cmp(x, hi, j) <= 0)
                f = spm_mining_sets_find(&pre, x);
            if (f >= 0 && spm_mining_confident(post.counts[i], pre.counts[f], minconf)) {
                uint32_t yl = 0;
                for (uint32_t b = 0, a = 0; b < k; b++)
                    if (a < j && pos[a] == b)
                        a++;
                    else
                        y[yl++] = z[b];
                spm_mining_rules_add(&out, x, j, y, yl, post.counts[i], pre.counts[f]);
            }
            long a = (long)j - 1;
            while (a >= 0 && pos[a] == k - j + (uint32_t)a)
                a--;
            if (a < 0)
                break;
            pos[a]++;
            for (uint32_t b = (uint32_t)a + 1; b < j; b++)
                pos[b] = pos[b - 1] + 1;
        }
    }
store:
    if (out.failed)
        rc = spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_CONFIDENCE);
    else if (out.r.n > SPM_MINING_MAX_ENTRIES)
        rc = spm_error(SPM_ERANGE, "%s: over %u rules in one block", SPM_MINING_CONFIDENCE,
                       SPM_MINING_MAX_ENTRIES);
    else if ((rc = spm_mining_out_rules(ctx, 2, &out.r)) == 0)
        rc = spm_mining_reply_u32(ctx, &out.r.n, 1);
    spm_mining_rules_free(&out.r);
    spm_mining_sets_free(&post);
out_pre:
    spm_mining_sets_free(&pre);
    return rc;
}

/*  StoreResult (rules[0..m) R, store W): the rules of all operands, in
    operand order. Not sorted: the client maps ranks back to items and
    sorts in that order anyway, so an order by ranks here was lost work
    (on the dense set of bench_mine at 10%, 5.2M rules of one consequent,
    the 93 StoreResult SIs took 11.4 s of the job's 16.4 s of IEU time). */
static int store(spm_si_ctx_t *ctx)
{
    size_t m = spm_si_noperands(ctx);
    spm_mining_rules_builder_t all = {0};
    spm_mining_rules_t b;
    int rc = 0;
    if (m < 2)
        return spm_error(SPM_EINVAL, "%s: needs at least 2 operands", SPM_MINING_STORE);
    for (size_t q = 0; q + 1 < m && rc == 0; q++) {
        const void *d;
        size_t l;
        if ((rc = spm_si_input(ctx, q, &d, &l)) != 0 ||
            (rc = spm_mining_rules_decode(d, l, &b)) != 0)
            break;
        for (uint32_t i = 0; i < b.n; i++) {
            const uint32_t *x = b.items + b.off[i];
            spm_mining_rules_add(&all, x, b.xlen[i], x + b.xlen[i], b.ylen[i], b.supz[i],
                                 b.supx[i]);
        }
        spm_mining_rules_free(&b);
    }
    if (rc == 0 && all.failed)
        rc = spm_error(SPM_ENOMEM, "%s: out of memory", SPM_MINING_STORE);
    if (rc == 0 && (rc = spm_mining_out_rules(ctx, m - 1, &all.r)) == 0)
        rc = spm_mining_reply_u32(ctx, &all.r.n, 1);
    spm_mining_rules_free(&all.r);
    return rc;
}

SPM_CONSTRUCTOR(mining_si_rules)
{
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_CONFIDENCE, .exec = confidence});
    spm_opcode_register(&(spm_opcode_t){.name = SPM_MINING_STORE, .exec = store});
}
