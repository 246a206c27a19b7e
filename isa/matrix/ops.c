/*  =========================================================================
    ops - the matrix instruction set: its SDB types and super-instructions

    Types:
        mm.raw     a staged input block, as the client cut it (raw.h)
        mm.block   a sub-matrix block, zero, dense or CSR (block.h)

    Super-instructions (operands in order, with their modes):
        mm.load     IN (R, mm.raw or mm.block), OUT (W)
                    OUT = IN in its best form (duplicates summed, zeros
                    dropped, dense or CSR by fill). Replies u32 kind, u64 nnz.
        mm.multiply A1, B1, ..., Aq, Bq (R), C (W, RW or ACC)
                    with P = A1*B1 + ... + Aq*Bq (q >= 1): W: C = P;
                    RW: C = C + P; ACC: the partial P, which the type's
                    merge sums into C. Each product's kernel is chosen from
                    its operands' forms (kernels.h). Several products in one
                    SI share one accumulator, so small (sparse) products
                    still make an SI of milliseconds.
        mm.add      P (R), C (RW): C = C + P (the "update" method's update).
        mm.store    C (RW): the final version of C in its best form; its
                    commit makes it durable for the client to get. Replies
                    u32 kind, u64 nnz.
    =========================================================================
*/
#include "isa/matrix/block.h"
#include "isa/matrix/kernels.h"
#include "isa/matrix/raw.h"
#include "spm/spm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  A view of readable operand I, a mm.block (see spm_mm_block_view). */
static int input_block(spm_si_ctx_t *ctx, size_t i, spm_mm_block_t **out)
{
    const void *data;
    size_t len;
    if (spm_si_input(ctx, i, &data, &len) != 0)
        return spm_error(SPM_EEXEC, "operand %zu is not readable", i);
    return spm_mm_block_view(data, len, out);
}

/*  Replies a result block's kind and nnz to the SF. */
static int reply_meta(spm_si_ctx_t *ctx, const spm_mm_meta_t *meta)
{
    unsigned char r[12];
    spm_put_le32(r, (uint32_t)meta->kind);
    spm_put_le64(r + 4, meta->nnz);
    return spm_si_reply(ctx, r, sizeof r);
}

/*  Encodes the best form of ACC (taken) into output operand I; replies the
    result's kind and nnz when REPLY is set. */
static int output_acc(spm_si_ctx_t *ctx, size_t i, double *acc, uint32_t m, uint32_t n, int reply)
{
    void *data;
    size_t len;
    int rc = spm_mm_acc_finish(acc, m, n, &data, &len);
    if (rc != 0)
        return rc;
    spm_mm_meta_t meta;
    spm_mm_block_meta(data, len, &meta);
    if ((rc = spm_si_output(ctx, i, data, len)) != 0)
        return spm_error(rc, "operand %zu is not writable", i);
    return reply ? reply_meta(ctx, &meta) : 0;
}

/*  Writes block B, already in its best form, to operand I and replies its
    kind and nnz. */
static int output_best(spm_si_ctx_t *ctx, size_t i, const spm_mm_block_t *b)
{
    void *data;
    size_t len;
    int rc = spm_mm_block_encode(b, &data, &len);
    if (rc != 0)
        return rc;
    if ((rc = spm_si_output(ctx, i, data, len)) != 0)
        return spm_error(rc, "operand %zu is not writable", i);
    return reply_meta(ctx, &b->m);
}

/*  Writes the best form of block B (not taken) to operand I. */
static int output_block(spm_si_ctx_t *ctx, size_t i, const spm_mm_block_t *b, int reply)
{
    double *acc = spm_mm_acc_new(b->m.rows, b->m.cols, b);
    return acc ? output_acc(ctx, i, acc, b->m.rows, b->m.cols, reply)
               : spm_error(SPM_ENOMEM, "out of memory");
}

static int mm_load(spm_si_ctx_t *ctx)
{
    const void *data;
    size_t len;
    if (spm_si_noperands(ctx) != 2 || spm_si_input(ctx, 0, &data, &len) != 0)
        return spm_error(SPM_EINVAL, "mm.load takes IN (R) and OUT (W)");
    spm_mm_block_t *b = NULL;
    int raw = spm_mm_raw_is(data, len);
    int rc = raw ? spm_mm_raw_to_block(data, len, &b) : spm_mm_block_view(data, len, &b);
    if (rc == 0)
        rc = raw ? output_best(ctx, 1, b) : output_block(ctx, 1, b, 1);
    spm_mm_block_destroy(&b);
    return rc;
}

/*  Adds the product of the operand pair (2Q, 2Q+1) to ACC (M x N). */
static int multiply_pair(spm_si_ctx_t *ctx, size_t q, double *acc, uint32_t m, uint32_t n)
{
    spm_mm_block_t *a = NULL, *b = NULL;
    int rc;
    if ((rc = input_block(ctx, 2 * q, &a)) == 0 && (rc = input_block(ctx, 2 * q + 1, &b)) == 0)
        rc = spm_mm_multiply_add(a, b, acc, m, n);
    spm_mm_block_destroy(&a);
    spm_mm_block_destroy(&b);
    return rc;
}

static int mm_multiply(spm_si_ctx_t *ctx)
{
    size_t nops = spm_si_noperands(ctx), last = nops - 1;
    if (nops < 3 || nops % 2 == 0 || spm_si_mode(ctx, last) == SPM_R)
        return spm_error(SPM_EINVAL,
                         "mm.multiply takes A1, B1, ..., Aq, Bq (R) and C (W, RW or ACC)");
    const void *data;
    size_t len;
    spm_mm_meta_t ma, mb;
    if (spm_si_input(ctx, 0, &data, &len) != 0 || spm_mm_block_meta(data, len, &ma) != 0 ||
        spm_si_input(ctx, 1, &data, &len) != 0 || spm_mm_block_meta(data, len, &mb) != 0)
        return spm_error(SPM_EFORMAT, "mm.multiply: bad first operands");
    uint32_t m = ma.rows, n = mb.cols;
    spm_mm_block_t *c = NULL;
    double *acc = NULL;
    int rc = 0;
    if (spm_si_mode(ctx, last) == SPM_RW && (rc = input_block(ctx, last, &c)) != 0)
        goto done;
    if (c && (c->m.rows != m || c->m.cols != n)) {
        rc = spm_error(SPM_EFORMAT,
                       "mm.multiply: C is %" PRIu32 "x%" PRIu32 ", not %" PRIu32 "x%" PRIu32,
                       c->m.rows, c->m.cols, m, n);
        goto done;
    }
    if (!(acc = spm_mm_acc_new(m, n, c))) {
        rc = spm_error(SPM_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t q = 0; q < last / 2 && rc == 0; q++)
        rc = multiply_pair(ctx, q, acc, m, n);
    if (rc == 0) {
        rc = output_acc(ctx, last, acc, m, n, 0);
        acc = NULL;
    }
done:
    spm_mm_acc_free(acc);
    spm_mm_block_destroy(&c);
    return rc;
}

static int mm_add(spm_si_ctx_t *ctx)
{
    const void *p, *c;
    size_t plen, clen;
    if (spm_si_noperands(ctx) != 2 || spm_si_input(ctx, 0, &p, &plen) != 0 ||
        spm_si_input(ctx, 1, &c, &clen) != 0 || spm_si_mode(ctx, 1) != SPM_RW)
        return spm_error(SPM_EINVAL, "mm.add takes P (R) and C (RW)");
    void *out;
    size_t len;
    int rc = spm_mm_block_merge(c, clen, p, plen, &out, &len);
    return rc != 0 ? rc : spm_si_output(ctx, 1, out, len);
}

static int mm_store(spm_si_ctx_t *ctx)
{
    if (spm_si_noperands(ctx) != 1 || spm_si_mode(ctx, 0) != SPM_RW)
        return spm_error(SPM_EINVAL, "mm.store takes C (RW)");
    spm_mm_block_t *c = NULL;
    int rc = input_block(ctx, 0, &c);
    if (rc == 0)
        rc = output_block(ctx, 0, c, 1);
    spm_mm_block_destroy(&c);
    return rc;
}

static void raw_summary(const void *data, size_t len, char *buf, size_t size)
{
    if (spm_mm_raw_validate(data, len) != 0) {
        snprintf(buf, size, "malformed raw block (%zu bytes)", len);
        return;
    }
    const unsigned char *p = data;
    snprintf(buf, size, "raw %" PRIu32 "x%" PRIu32 " entries %" PRIu64, spm_le32(p + 4),
             spm_le32(p + 8), spm_le64(p + 16));
}

SPM_CONSTRUCTOR(matrix_isa)
{
    spm_sdb_type_register(&(spm_sdb_type_t){.name = SPM_MM_BLOCK_TYPE,
                                            .validate = spm_mm_block_validate,
                                            .merge = spm_mm_block_merge,
                                            .summary = spm_mm_block_summary});
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = SPM_MM_RAW_TYPE, .validate = spm_mm_raw_validate, .summary = raw_summary});
    spm_opcode_register(&(spm_opcode_t){.name = "mm.load", .exec = mm_load});
    spm_opcode_register(&(spm_opcode_t){.name = "mm.multiply", .exec = mm_multiply});
    spm_opcode_register(&(spm_opcode_t){.name = "mm.add", .exec = mm_add});
    spm_opcode_register(&(spm_opcode_t){.name = "mm.store", .exec = mm_store});
}
