/*  =========================================================================
    merge - the built-in "spm.merge" SI that closes an ACC group

    The IDU issues it with the base version (when there is one) and every
    partial as R operands and the next version as the last, W operand; its
    parameters are the 4-byte type id. It folds the inputs left to right with
    the type's merge. Running it on an IEU keeps the merge arithmetic (a
    whole block's worth) off the center's single thread.
    =========================================================================
*/
#include "isa/core/codec.h"
#include "runtime/registry.h"
#include "spm/spm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/*  Folds inputs FROM to TO - 1 of CTX with TYPE's merge into *ACC and
 *ACC_LEN (malloc'd; NULL and 0 when FROM == TO). Returns 0 or SPM_E*. */
static int fold(spm_si_ctx_t *ctx, const spm_sdb_type_t *type, size_t from, size_t to, void **acc,
                size_t *acc_len)
{
    *acc = NULL;
    *acc_len = 0;
    for (size_t i = from; i < to; i++) {
        const void *in;
        size_t len;
        if (spm_si_input(ctx, i, &in, &len) != 0) {
            free(*acc);
            *acc = NULL;
            return spm_error(SPM_EINVAL, "spm.merge: operand %zu is not an input", i);
        }
        void *out;
        size_t out_len;
        int rc = type->merge(*acc, *acc_len, in, len, &out, &out_len);
        free(*acc);
        *acc = NULL;
        if (rc != 0)
            return rc;
        *acc = out;
        *acc_len = out_len;
    }
    return 0;
}

/*  The first half of a fold on a thread of its own. */
typedef struct {
    spm_si_ctx_t *ctx;
    const spm_sdb_type_t *type;
    size_t to;  /* inputs 0 to TO - 1 */
    void *acc;  /* their fold, malloc'd */
    size_t len; /* its bytes */
    int rc;     /* fold's return */
} half_t;

static void *fold_half(void *arg)
{
    half_t *h = arg;
    h->rc = fold(h->ctx, h->type, 0, h->to, &h->acc, &h->len);
    return NULL;
}

/*  Key-count tables add integers, so the partials can be folded in two
    halves at once and the halves merged: the group's merge is the last SI
    of a word count, and the other IEUs are idle while it runs (128
    partials of examples/wordfreq: 0.20 s on one IEU). Other types keep
    their order of additions (a sum of doubles depends on it). */
#define SPLIT_FROM 8 /* inputs */
static int fold_split(spm_si_ctx_t *ctx, const spm_sdb_type_t *type, size_t n, void **acc,
                      size_t *acc_len)
{
    half_t h = {.ctx = ctx, .type = type, .to = n / 2};
    pthread_t th;
    if (pthread_create(&th, NULL, fold_half, &h) != 0)
        return fold(ctx, type, 0, n, acc, acc_len);
    void *b;
    size_t blen;
    int rc = fold(ctx, type, n / 2, n, &b, &blen);
    pthread_join(th, NULL);
    if (rc == 0 && h.rc != 0)
        rc = spm_error(h.rc, "spm.merge: %s", spm_strerror(h.rc)); /* its detail was the thread's */
    if (rc == 0)
        rc = type->merge(h.acc, h.len, b, blen, acc, acc_len);
    free(h.acc);
    free(b);
    return rc;
}

static int merge_exec(spm_si_ctx_t *ctx)
{
    size_t plen, n = spm_si_noperands(ctx);
    const unsigned char *params = spm_si_params(ctx, &plen);
    if (plen != 4 || n < 2)
        return spm_error(SPM_EINVAL, "spm.merge: malformed parameters");
    const spm_sdb_type_t *type = spm_sdb_type_by_id(spm_le32(params));
    if (!type || !type->merge)
        return spm_error(SPM_EINVAL, "spm.merge: type %s has no merge",
                         type ? type->name : "(unknown)");
    void *acc;
    size_t acc_len;
    int rc = n - 1 >= SPLIT_FROM && !strcmp(type->name, SPM_KCOUNT)
                 ? fold_split(ctx, type, n - 1, &acc, &acc_len)
                 : fold(ctx, type, 0, n - 1, &acc, &acc_len);
    if (rc != 0)
        return rc;
    return spm_si_output(ctx, n - 1, acc, acc_len);
}

SPM_CONSTRUCTOR(merge)
{
    spm_opcode_register(&(spm_opcode_t){.name = "spm.merge", .exec = merge_exec});
}
