/*  =========================================================================
    inproc - a whole VM in one process: the IDU and one sequential executor

    @header
    Runs a program exactly as the VM would (the real IDU: scoreboard,
    versions, ACC groups closed by spm.merge SIs, SF commits and children)
    but executes every SI in the calling thread, one at a time, against an
    in-memory store. For unit tests of super-functions and for in-process
    baselines in benchmarks; no sockets, no child processes.
    @discuss
        spm_inproc_t *vm = spm_inproc_new();
        spm_inproc_put(vm, "mining.transactions", bytes, len, &id);
        spm_inproc_run(vm, "mine", args, alen, &result, &rlen);
        spm_inproc_get(vm, out_id, &bytes, &len);
        spm_inproc_destroy(&vm);
    The store keeps every version ever written until destroy.
    @end
    =========================================================================
*/
#ifndef SPM_INPROC_H_INCLUDED
#define SPM_INPROC_H_INCLUDED

#include "spm/spm.h"

typedef struct spm_inproc spm_inproc_t;

/*  Returns a new in-process VM, or NULL when out of memory. */
spm_inproc_t *spm_inproc_new(void);

/*  Frees *SELF and everything it stores; sets *SELF to NULL. */
void spm_inproc_destroy(spm_inproc_t **self_p);

/*  Stores LEN bytes (copied) as version 1 of a new SDB of TYPE. Returns 0
    with *ID set, SPM_ENOTFOUND (unknown type), SPM_EFORMAT (the type's
    validate refused the bytes) or SPM_ENOMEM. */
int spm_inproc_put(spm_inproc_t *self, const char *type, const void *data, size_t len,
                   spm_sdb_t *id);

/*  Copies the newest committed version of ID into *DATA (malloc'd, caller
    frees) and *LEN. Returns 0 or SPM_ENOTFOUND. */
int spm_inproc_get(spm_inproc_t *self, spm_sdb_t id, void **data, size_t *len);

/*  Runs PROGRAM with ARGS to its end. *RESULT (malloc'd, caller frees; may
    be NULL) receives the root SF's result bytes. Returns 0, or the job's
    SPM_E* code with its message in spm_error_detail() (SPM_ENOTFOUND for
    an unknown program, SPM_EEXEC when the job stalls with nothing ready). */
int spm_inproc_run(spm_inproc_t *self, const char *program, const void *args, size_t len,
                   void **result, size_t *result_len);

/*  SIs executed by the last run (spm.merge SIs included). */
uint64_t spm_inproc_sis(const spm_inproc_t *self);

#endif
