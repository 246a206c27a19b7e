/*  =========================================================================
    stage - both inputs of a product cut at once, one file on each core

    @header
    Parsing the two Matrix Market files is most of what `spm matmul` does
    before its job can start (about 2.5 s of one core for two dense 4096²
    array files). spm_mm_stage_pair cuts B on a second thread while the
    caller's thread cuts A. Only the caller's thread hands blocks on (the
    session is not shared between threads): B's finished blocks wait in a
    bounded queue, which the caller empties between A's entries and after
    A's end.
    @discuss
    A failure on either side stops the other. When both files are bad,
    A's error is the one returned, so a bad input always gives the same
    line.
    @end
    =========================================================================
*/
#ifndef SPM_MM_STAGE_H_INCLUDED
#define SPM_MM_STAGE_H_INCLUDED

#include "programs/matmul/cut.h"
#include "vm/client/progress.h"

/*  One input: its open reader, its block sides (at most RK rows by CK
    columns) and where its blocks go (the callback runs on the caller's
    thread, with ARG). */
typedef struct {
    spm_mmio_t *in;
    uint32_t rk, ck;
    spm_mm_emit_fn emit;
    void *arg;
} spm_mm_input_t;

/*  Cuts A and B into their blocks, at once, handing every
    non-empty block to its input's callback on this thread; METER (may be
    NULL; begun by the caller) hears the entries read of both. Returns 0,
    or the first error (A's before B's), with the detail set. */
int spm_mm_stage_pair(const spm_mm_input_t *a, const spm_mm_input_t *b, spm_progress_t *meter);

#endif
