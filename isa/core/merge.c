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

#include <stdlib.h>
#include <string.h>

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
    void *acc = NULL;
    size_t acc_len = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        const void *in;
        size_t len;
        if (spm_si_input(ctx, i, &in, &len) != 0) {
            free(acc);
            return spm_error(SPM_EINVAL, "spm.merge: operand %zu is not an input", i);
        }
        void *out;
        size_t out_len;
        int rc = type->merge(acc, acc_len, in, len, &out, &out_len);
        free(acc);
        if (rc != 0)
            return rc;
        acc = out;
        acc_len = out_len;
    }
    return spm_si_output(ctx, n - 1, acc, acc_len);
}

SPM_CONSTRUCTOR(merge)
{
    spm_opcode_register(&(spm_opcode_t){.name = "spm.merge", .exec = merge_exec});
}
