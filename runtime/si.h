/*  =========================================================================
    si - the execution context of one super-instruction

    @discuss
    The IEU fills an spm_si_ctx_t with the localized operand bytes and calls
    the opcode's exec; spm_si_exec_local() does the same in-process, which
    is what unit tests of SI bodies and the in-process benchmark baselines
    use. Both go through spm_si_ctx_run(), so an SI behaves identically.
    @end
    =========================================================================
*/
#ifndef SPM_SI_H_INCLUDED
#define SPM_SI_H_INCLUDED

#include "spm/spm.h"

typedef struct {
    spm_mode_t mode; /* access mode */
    const void *in;  /* input bytes (R, RW), not owned */
    size_t in_len;
    void *out; /* output bytes (W, RW, ACC), malloc'd, owned by the ctx */
    size_t out_len;
    int has_out;   /* the SI set this output */
    uint32_t type; /* the input's SDB type id (0: unknown); a file reference
                      (runtime/fileref.h) is read from its file before exec */
} spm_si_operand_t;

/*  Memory an SI's helpers hold for it until exec returns: aligned copies
    of inputs (spm_si_f64), blocks read from files. */
typedef struct spm_si_held {
    void *ptr;                  /* what is held */
    void (*release)(void *ptr); /* how it is released (free for a malloc'd copy) */
    struct spm_si_held *next;
} spm_si_held_t;

struct spm_si_ctx {
    const spm_opcode_t *op; /* what runs */
    spm_si_operand_t *ops;  /* operands, not owned */
    size_t nops;
    const void *params; /* parameter bytes, not owned */
    size_t params_len;
    unsigned char *reply; /* reply bytes, malloc'd, owned by the ctx */
    size_t reply_len;
    spm_si_held_t *held; /* released when exec returns (spm_si_ctx_run) */
};

/*  Keeps PTR until CTX's exec returns, then calls RELEASE (PTR): free for
    a malloc'd copy. Returns 0, or SPM_ENOMEM (PTR is released at once). */
int spm_si_hold(spm_si_ctx_t *ctx, void *ptr, void (*release)(void *ptr));

/*  Whether SIs in this process may read a client's input file by its path
    (spm_si_set_local_files): only an embedded VM's IEUs, which share the
    client's machine and user; elsewhere a path names another machine's
    files, and a client could read them through an SI's error message. */
int spm_si_local_files(void);
void spm_si_set_local_files(int on);

/*  Runs CTX->op on CTX, first reading every input that is a file
    reference from its file (runtime/fileref.h; a file changed since it
    was staged fails the SI without running it). Afterwards every W, RW and ACC operand must have an
    output; a missing one fails the SI with SPM_EEXEC. Returns 0 or the SPM_E*
    code of the failure (detail in spm_error_detail()). */
int spm_si_ctx_run(spm_si_ctx_t *ctx);

/*  Frees the outputs and reply still owned by CTX (not CTX itself). */
void spm_si_ctx_release(spm_si_ctx_t *ctx);

/*  Runs OPCODE in this process on N operands. Inputs are read from
    ops[i].in; outputs are left in ops[i].out (malloc'd, now owned by the
    caller). *REPLY (malloc'd, caller frees; may be NULL) receives the reply.
    Returns 0, SPM_ENOTFOUND for an unknown opcode, or the SI's failure. */
int spm_si_exec_local(const char *opcode, spm_si_operand_t *ops, size_t n, const void *params,
                      size_t params_len, void **reply, size_t *reply_len);

#endif
