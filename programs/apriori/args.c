/*  =========================================================================
    args - encoding of the apriori program's arguments and result
    =========================================================================
*/
#include "programs/apriori/apriori.h"
#include "isa/core/codec.h"
#include "isa/mining/isa.h"

#include <stdlib.h>
#include <string.h>

int spm_apriori_args_encode(const spm_apriori_args_t *a, void **data, size_t *len)
{
    spm_buf_t b = {0};
    spm_buf_put_u64(&b, a->ntrans);
    spm_buf_put_u32(&b, 0); /* once the item domain: see decode */
    spm_buf_put_u64(&b, a->minsup);
    spm_buf_put_f64(&b, a->minconf);
    spm_buf_put_u32(&b, a->maxcons);
    spm_buf_put_u32(&b, a->maxlen);
    spm_buf_put_u32(&b, a->flags);
    spm_buf_put_u32(&b, a->algorithm);
    spm_buf_put_u32(&b, a->block);
    spm_buf_put_u32(&b, a->join_cap);
    spm_buf_put_u32(&b, a->nstaged);
    for (uint32_t i = 0; i < a->nstaged; i++)
        spm_buf_put_u64(&b, a->staged[i]);
    spm_buf_put_u64(&b, a->rule_room);
    return spm_buf_take(&b, data, len);
}

/*  Reads N ids into *IDS (malloc'd). */
static int get_ids(spm_cursor_t *c, uint32_t n, spm_sdb_t **ids)
{
    if (spm_cursor_left(c) / 8 < n || !(*ids = malloc(((size_t)n + 1) * 8)))
        return -1;
    for (uint32_t i = 0; i < n; i++)
        spm_get_u64(c, &(*ids)[i]);
    return 0;
}

int spm_apriori_args_decode(const void *data, size_t len, spm_apriori_args_t *a)
{
    spm_cursor_t c = spm_cursor(data, len);
    uint32_t domain; /* the client's, before LoadDataBlock replied it: read and ignored, so
                        that the arguments of a journal kept before still decode */
    memset(a, 0, sizeof *a);
    if (spm_get_u64(&c, &a->ntrans) || spm_get_u32(&c, &domain) || spm_get_u64(&c, &a->minsup) ||
        spm_get_f64(&c, &a->minconf) || spm_get_u32(&c, &a->maxcons) ||
        spm_get_u32(&c, &a->maxlen) || spm_get_u32(&c, &a->flags) ||
        spm_get_u32(&c, &a->algorithm) || spm_get_u32(&c, &a->block) ||
        spm_get_u32(&c, &a->join_cap) || spm_get_u32(&c, &a->nstaged) ||
        get_ids(&c, a->nstaged, &a->staged) ||
        /* absent from the arguments a journal kept before it was added */
        (spm_cursor_left(&c) > 0 && spm_get_u64(&c, &a->rule_room)) || spm_cursor_left(&c) != 0 ||
        a->minsup == 0 || a->block == 0 || a->join_cap == 0 ||
        (a->flags & ~SPM_APRIORI_ITEMSETS_ONLY) || a->algorithm > SPM_APRIORI_ECLAT ||
        !(a->minconf >= 0 && a->minconf <= 1)) {
        spm_apriori_args_free(a);
        return spm_error(SPM_EINVAL, "%s: malformed arguments", SPM_APRIORI_PROGRAM);
    }
    return 0;
}

void spm_apriori_args_free(spm_apriori_args_t *a)
{
    free(a->staged);
    a->staged = NULL;
    a->nstaged = 0;
}

int spm_apriori_result_encode(const spm_apriori_result_t *r, void **data, size_t *len)
{
    spm_buf_t b = {0};
    spm_buf_put_u32(&b, r->f1);
    spm_buf_put_u64(&b, r->fitems);
    spm_buf_put_u32(&b, r->nlevels);
    for (uint32_t k = 0; k < r->nlevels; k++) {
        spm_buf_put_u32(&b, r->nblocks[k]);
        for (uint32_t i = 0; i < r->nblocks[k]; i++)
            spm_buf_put_u64(&b, r->levels[k][i]);
    }
    spm_buf_put_u32(&b, r->nstore);
    for (uint32_t i = 0; i < r->nstore; i++)
        spm_buf_put_u64(&b, r->store[i]);
    spm_buf_put_u32(&b, r->nclasses);
    for (uint32_t i = 0; i < r->nclasses; i++)
        spm_buf_put_u64(&b, r->classes[i]);
    return spm_buf_take(&b, data, len);
}

int spm_apriori_result_decode(const void *data, size_t len, spm_apriori_result_t *r)
{
    spm_cursor_t c = spm_cursor(data, len);
    memset(r, 0, sizeof *r);
    if (spm_get_u32(&c, &r->f1) || spm_get_u64(&c, &r->fitems) || spm_get_u32(&c, &r->nlevels) ||
        r->nlevels > 4096)
        goto err;
    r->nblocks = calloc((size_t)r->nlevels + 1, sizeof *r->nblocks);
    r->levels = calloc((size_t)r->nlevels + 1, sizeof *r->levels);
    if (!r->nblocks || !r->levels)
        goto err;
    for (uint32_t k = 0; k < r->nlevels; k++)
        if (spm_get_u32(&c, &r->nblocks[k]) || get_ids(&c, r->nblocks[k], &r->levels[k]))
            goto err;
    if (spm_get_u32(&c, &r->nstore) || get_ids(&c, r->nstore, &r->store) ||
        spm_get_u32(&c, &r->nclasses) || get_ids(&c, r->nclasses, &r->classes))
        goto err;
    if (spm_cursor_left(&c) != 0)
        goto err;
    return 0;
err:
    spm_apriori_result_free(r);
    return spm_error(SPM_EPROTO, "%s: malformed result", SPM_APRIORI_PROGRAM);
}

void spm_apriori_result_free(spm_apriori_result_t *r)
{
    for (uint32_t k = 0; r->levels && k < r->nlevels; k++)
        free(r->levels[k]);
    free(r->levels);
    free(r->nblocks);
    free(r->store);
    free(r->classes);
    memset(r, 0, sizeof *r);
}
