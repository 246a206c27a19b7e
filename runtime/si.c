/*  =========================================================================
    si - the execution context of one super-instruction
    =========================================================================
*/
#include "runtime/si.h"

#include "runtime/fileref.h"
#include "runtime/registry.h"

#include <stdlib.h>
#include <string.h>

static int local_files; /* set once at the IEU's start */

int spm_si_local_files(void)
{
    return local_files;
}

void spm_si_set_local_files(int on)
{
    local_files = on;
}

size_t spm_si_noperands(const spm_si_ctx_t *ctx)
{
    return ctx->nops;
}

spm_mode_t spm_si_mode(const spm_si_ctx_t *ctx, size_t i)
{
    return i < ctx->nops ? ctx->ops[i].mode : 0;
}

int spm_si_input(const spm_si_ctx_t *ctx, size_t i, const void **data, size_t *len)
{
    if (i >= ctx->nops || (ctx->ops[i].mode != SPM_R && ctx->ops[i].mode != SPM_RW))
        return SPM_ERANGE;
    *data = ctx->ops[i].in;
    *len = ctx->ops[i].in_len;
    return 0;
}

int spm_si_output(spm_si_ctx_t *ctx, size_t i, void *data, size_t len)
{
    if (i >= ctx->nops || ctx->ops[i].mode == SPM_R) {
        free(data);
        return SPM_ERANGE;
    }
    spm_si_operand_t *op = &ctx->ops[i];
    free(op->out);
    op->out = data;
    op->out_len = len;
    op->has_out = 1;
    return 0;
}

const void *spm_si_params(const spm_si_ctx_t *ctx, size_t *len)
{
    *len = ctx->params_len;
    return ctx->params;
}

int spm_si_reply(spm_si_ctx_t *ctx, const void *data, size_t len)
{
    if (len > SPM_MAX_REPLY)
        return SPM_ERANGE;
    unsigned char *copy = malloc(len ? len : 1);
    if (!copy)
        return SPM_ENOMEM;
    memcpy(copy, data, len);
    free(ctx->reply);
    ctx->reply = copy;
    ctx->reply_len = len;
    return 0;
}

int spm_si_hold(spm_si_ctx_t *ctx, void *ptr, void (*release)(void *ptr))
{
    spm_si_held_t *h = malloc(sizeof *h);
    if (!h) {
        release(ptr);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    *h = (spm_si_held_t){ptr, release, ctx->held};
    ctx->held = h;
    return 0;
}

static void release_held(spm_si_ctx_t *ctx)
{
    while (ctx->held) {
        spm_si_held_t *h = ctx->held;
        ctx->held = h->next;
        h->release(h->ptr);
        free(h);
    }
}

/*  Reads the inputs of CTX that are file references from their files. */
static int read_files(spm_si_ctx_t *ctx)
{
    static uint32_t fileref_type;
    if (!fileref_type)
        fileref_type = spm_name_id(SPM_FILEREF_TYPE);
    for (size_t i = 0; i < ctx->nops; i++) {
        spm_si_operand_t *o = &ctx->ops[i];
        spm_fileref_t r;
        if (o->type != fileref_type || !o->in || spm_fileref_view(o->in, o->in_len, &r) != 0)
            continue;
        void *buffer;
        int rc = spm_fileref_read(&r, &o->in, &o->in_len, &buffer);
        if (rc == 0 && buffer)
            rc = spm_si_hold(ctx, buffer, spm_fileref_release);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int spm_si_ctx_run(spm_si_ctx_t *ctx)
{
    spm_error(0, "%s", "");
    int rc = read_files(ctx);
    if (rc == 0)
        rc = ctx->op->exec(ctx);
    release_held(ctx);
    if (rc != 0) {
        if (!*spm_error_detail())
            spm_error(rc, "%s", spm_strerror(rc));
        return rc;
    }
    /* The opcode is not named here: whoever reports the failure names the
       SI (the IDU: its opcode and label), once. */
    for (size_t i = 0; i < ctx->nops; i++)
        if (ctx->ops[i].mode != SPM_R && !ctx->ops[i].has_out)
            return spm_error(SPM_EEXEC, "operand %zu has no output", i);
    return 0;
}

void spm_si_ctx_release(spm_si_ctx_t *ctx)
{
    for (size_t i = 0; i < ctx->nops; i++) {
        free(ctx->ops[i].out);
        ctx->ops[i].out = NULL;
        ctx->ops[i].has_out = 0;
    }
    free(ctx->reply);
    ctx->reply = NULL;
    ctx->reply_len = 0;
}

int spm_si_exec_local(const char *opcode, spm_si_operand_t *ops, size_t n, const void *params,
                      size_t params_len, void **reply, size_t *reply_len)
{
    const spm_opcode_t *op = spm_opcode_find(opcode);
    if (!op)
        return spm_error(SPM_ENOTFOUND, "unknown opcode '%s'", opcode);
    spm_si_ctx_t ctx = {
        .op = op, .ops = ops, .nops = n, .params = params, .params_len = params_len};
    int rc = spm_si_ctx_run(&ctx);
    if (rc != 0) {
        spm_si_ctx_release(&ctx);
        return rc;
    }
    if (reply) {
        *reply = ctx.reply;
        *reply_len = ctx.reply_len;
    } else {
        free(ctx.reply);
    }
    return 0;
}
