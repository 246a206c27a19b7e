/*  =========================================================================
    isa - helpers shared by the mining SI bodies and their super-functions
    =========================================================================
*/
#include "isa/mining/isa.h"
#include "isa/core/codec.h"

#include <stdlib.h>
#include <string.h>

/*  Fetches input I, or fails naming the operand. */
static int input(spm_si_ctx_t *ctx, size_t i, const void **data, size_t *len)
{
    int rc = spm_si_input(ctx, i, data, len);
    if (rc != 0)
        return spm_error(rc, "operand %zu is not readable", i);
    return 0;
}

int spm_mining_in_trans(spm_si_ctx_t *ctx, size_t i, spm_mining_trans_t *b)
{
    const void *d;
    size_t l;
    int rc = input(ctx, i, &d, &l);
    return rc ? rc : spm_mining_trans_decode(d, l, b);
}

int spm_mining_in_trans_view(spm_si_ctx_t *ctx, size_t i, spm_mining_trans_t *b)
{
    const void *d;
    size_t l;
    int rc = input(ctx, i, &d, &l);
    return rc ? rc : spm_mining_trans_view(d, l, b);
}

int spm_mining_in_items(spm_si_ctx_t *ctx, size_t i, spm_mining_items_t *b)
{
    const void *d;
    size_t l;
    int rc = input(ctx, i, &d, &l);
    return rc ? rc : spm_mining_items_decode(d, l, b);
}

int spm_mining_in_sets(spm_si_ctx_t *ctx, size_t i, spm_mining_kind_t kind, spm_mining_sets_t *b)
{
    const void *d;
    size_t l;
    int rc = input(ctx, i, &d, &l);
    return rc ? rc : spm_mining_sets_decode(kind, d, l, b);
}

/*  Sets encoded bytes as output I; RC is the encoder's result. */
static int output(spm_si_ctx_t *ctx, size_t i, int rc, void *data, size_t len)
{
    if (rc != 0)
        return spm_error(rc, "out of memory encoding operand %zu", i);
    if ((rc = spm_si_output(ctx, i, data, len)) != 0)
        return spm_error(rc, "operand %zu is not writable", i);
    return 0;
}

int spm_mining_out_trans(spm_si_ctx_t *ctx, size_t i, const spm_mining_trans_t *b)
{
    void *d = NULL;
    size_t l = 0;
    int rc = spm_mining_trans_encode(b, &d, &l);
    return output(ctx, i, rc, d, l);
}

int spm_mining_out_items(spm_si_ctx_t *ctx, size_t i, const spm_mining_items_t *b)
{
    void *d = NULL;
    size_t l = 0;
    int rc = spm_mining_items_encode(b, &d, &l);
    return output(ctx, i, rc, d, l);
}

int spm_mining_out_sets(spm_si_ctx_t *ctx, size_t i, const spm_mining_sets_t *b)
{
    void *d = NULL;
    size_t l = 0;
    int rc = spm_mining_sets_encode(b, &d, &l);
    return output(ctx, i, rc, d, l);
}

int spm_mining_out_rules(spm_si_ctx_t *ctx, size_t i, const spm_mining_rules_t *b)
{
    void *d = NULL;
    size_t l = 0;
    int rc = spm_mining_rules_encode(b, &d, &l);
    return output(ctx, i, rc, d, l);
}

spm_cursor_t spm_mining_params(spm_si_ctx_t *ctx)
{
    size_t len;
    const void *p = spm_si_params(ctx, &len);
    return spm_cursor(p, len);
}

int spm_mining_reply_u32(spm_si_ctx_t *ctx, const uint32_t *v, size_t n)
{
    spm_buf_t b = {0};
    for (size_t i = 0; i < n; i++)
        spm_buf_put_u32(&b, v[i]);
    void *d;
    size_t l;
    int rc = spm_buf_take(&b, &d, &l);
    if (rc != 0)
        return rc;
    rc = spm_si_reply(ctx, d, l);
    free(d);
    return rc;
}

int spm_mining_fsets_reply_encode(const spm_mining_sets_t *b, void **data, size_t *len)
{
    spm_buf_t buf = {0};
    spm_buf_put_u32(&buf, b->k);
    spm_buf_put_u32(&buf, b->n);
    if (b->n > 0) {
        for (uint32_t j = 0; j < b->k; j++)
            spm_buf_put_u32(&buf, b->items[j]);
        for (uint32_t j = 0; j < b->k; j++)
            spm_buf_put_u32(&buf, b->items[((size_t)b->n - 1) * b->k + j]);
    }
    /* Families: a new one starts where the first k-1 items change. */
    uint32_t nfam = 0;
    for (uint32_t i = 0; i < b->n; i++)
        if (i == 0 || spm_mining_set_cmp(b->items + (size_t)i * b->k,
                                         b->items + ((size_t)i - 1) * b->k, b->k - 1) != 0)
            nfam++;
    spm_buf_put_u32(&buf, nfam);
    uint32_t size = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        if (i > 0 && spm_mining_set_cmp(b->items + (size_t)i * b->k,
                                        b->items + ((size_t)i - 1) * b->k, b->k - 1) != 0) {
            spm_buf_put_u32(&buf, size);
            size = 0;
        }
        size++;
    }
    if (b->n > 0)
        spm_buf_put_u32(&buf, size);
    return spm_buf_take(&buf, data, len);
}

static int get_u32s(spm_cursor_t *c, uint32_t n, uint32_t **a)
{
    if (spm_cursor_left(c) / 4 < n || !(*a = malloc(((size_t)n + 1) * 4)))
        return SPM_EPROTO;
    for (uint32_t i = 0; i < n; i++)
        spm_get_u32(c, &(*a)[i]);
    return 0;
}

int spm_mining_fsets_reply_decode(const void *data, size_t len, spm_mining_fsets_reply_t *r)
{
    spm_cursor_t c = spm_cursor(data, len);
    memset(r, 0, sizeof *r);
    uint64_t sum = 0;
    if (spm_get_u32(&c, &r->k) || spm_get_u32(&c, &r->n) || r->k == 0 || r->k > SPM_MINING_MAX_K)
        goto err;
    if (r->n > 0 && (get_u32s(&c, r->k, &r->first) || get_u32s(&c, r->k, &r->last)))
        goto err;
    if (spm_get_u32(&c, &r->nfam) || r->nfam > r->n || get_u32s(&c, r->nfam, &r->fam) ||
        spm_cursor_left(&c) != 0)
        goto err;
    for (uint32_t i = 0; i < r->nfam; i++)
        sum += r->fam[i];
    if (sum != r->n)
        goto err;
    return 0;
err:
    spm_mining_fsets_reply_free(r);
    return spm_error(SPM_EPROTO, "malformed reply of %s", SPM_MINING_FREQ_SETS);
}

void spm_mining_fsets_reply_free(spm_mining_fsets_reply_t *r)
{
    free(r->first);
    free(r->last);
    free(r->fam);
    memset(r, 0, sizeof *r);
}

/*  Orders two lists: shorter first, then by items. */
static int list_cmp(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
    if (na != nb)
        return na < nb ? -1 : 1;
    return spm_mining_set_cmp(a, b, na);
}

int spm_mining_rule_cmp(const uint32_t *x1, uint32_t xl1, const uint32_t *y1, uint32_t yl1,
                        const uint32_t *x2, uint32_t xl2, const uint32_t *y2, uint32_t yl2)
{
    int c = list_cmp(x1, xl1, x2, xl2);
    return c ? c : list_cmp(y1, yl1, y2, yl2);
}

static int cmp_rank(const void *a, const void *b, void *arg)
{
    const spm_mining_items_t *f = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    if (f->counts[i] != f->counts[j])
        return f->counts[i] < f->counts[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

int spm_mining_rank_order(const spm_mining_items_t *f, uint32_t **order)
{
    if (!(*order = malloc(((size_t)f->n + 1) * sizeof **order)))
        return spm_error(SPM_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < f->n; i++)
        (*order)[i] = i;
    qsort_r(*order, f->n, sizeof **order, cmp_rank, (void *)f);
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/*  Insertion sort for the short lists transactions mostly are (qsort's
    indirect compare dominates there), qsort beyond. */
void spm_mining_sort_items(uint32_t *a, uint32_t n)
{
    if (n > 64) {
        qsort(a, n, 4, cmp_u32);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        uint32_t v = a[i], j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}
