/*  =========================================================================
    rows - a block row of C written to C.mtx, formatted on two threads

    @header
    Writing C.mtx is the longest phase of `spm matmul` after the job: every
    entry of a dense 4096² product is a line of about 40 characters, made
    by spm_fmt_g17 and copied by the kernel into the page cache. The job's
    cores are free by then, so spm_mm_write_rows cuts a block row of C
    into chunks of rows and formats the even chunks on a second thread and
    the odd ones on the caller's. Each thread writes its chunk's text when
    the chunk before it is written, so the file's lines stay in order, and
    one thread's writing overlaps the other's formatting.
    @discuss
    The first error (out of memory, a failed write) stops both threads and
    is returned on the caller's thread with its detail.
    @end
    =========================================================================
*/
#ifndef SPM_MM_ROWS_H_INCLUDED
#define SPM_MM_ROWS_H_INCLUDED

#include "isa/matrix/block.h"
#include "isa/matrix/mmio.h"
#include "vm/client/progress.h"

/*  A block row of C: its blocks and where it sits. */
typedef struct {
    spm_mm_block_t *const *blocks; /* NBJ blocks, left to right; NULL: all zero */
    uint32_t nbj;                  /* blocks in the row */
    uint32_t bn;                   /* width of every block but the last */
    uint64_t row0;                 /* C's row of the block row's first row */
    uint32_t rows;                 /* rows in the block row */
} spm_mm_rows_t;

/*  Writes every non-zero entry of block row R through W, row by row and
    left to right within a row; METER (may be NULL) hears C's rows done.
    Returns 0, SPM_ENOMEM, or the writer's error, with the detail set. */
int spm_mm_write_rows(spm_mmio_writer_t *w, const spm_mm_rows_t *r, spm_progress_t *meter);

#endif
