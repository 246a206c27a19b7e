/*  =========================================================================
    cut - the client's side of input: a matrix cut into staged raw blocks

    @header
    `spm matmul` runs where the files are, which need not be a machine of
    the VM. It streams a Matrix Market file once, sorts each entry into the
    raw block (mm.raw) of its tile (rk rows by ck columns), and hands every finished non-empty
    block to a callback that puts it into the VM's store. Memory holds the
    entries of the blocks not yet handed over, never the file's text: an
    array (dense, general) file is handed over one column of blocks at a
    time, a file read row by row (a C-order .npy, a CSR .npz) one row of
    blocks at a time; a coordinate file, whose entries come in any order,
    at the end.
    @discuss
        spm_mm_cutter_t *c = spm_mm_cutter_new(rows, cols, rk, ck);
        spm_mm_cutter_add(c, i, j, v);      // 0-based; zeros are dropped
        spm_mm_cutter_flush(c, put, arg);   // every block still held
        spm_mm_cutter_destroy(&c);

    spm_mm_cut_file() does all of it for a file.
    @end
    =========================================================================
*/
#ifndef SPM_MM_CUT_H_INCLUDED
#define SPM_MM_CUT_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#include "isa/matrix/mmio.h"

/*  Receives finished block (BI, BJ) of ENTRIES entries: the LEN malloc'd
    bytes at DATA, which it takes (frees or hands on) whatever it returns,
    so that a block reaches the VM without a copy in this process.
    Returns 0, or an SPM_E* code that stops the cutting. */
typedef int (*spm_mm_emit_fn)(void *arg, uint32_t bi, uint32_t bj, void *data, size_t len,
                              uint64_t entries);

/*  Told DONE, the stored entries read so far, now and then while a file
    is cut (every 65536 entries). Returns 0 to go on, or an SPM_E* code
    that stops the cutting. */
typedef int (*spm_mm_tick_fn)(void *arg, uint64_t done);

typedef struct spm_mm_cutter spm_mm_cutter_t;

/*  A cutter for a ROWS x COLS matrix into blocks of at most RK x CK.
    Returns it (caller destroys it) or NULL when out of memory. */
spm_mm_cutter_t *spm_mm_cutter_new(uint32_t rows, uint32_t cols, uint32_t rk, uint32_t ck);
void spm_mm_cutter_destroy(spm_mm_cutter_t **self_p);

/*  Keeps each tile as a dense array of its values (row-major, 8 bytes an
    entry) instead of a raw block of entries (16 bytes each), for an input
    that holds every entry (an array file, a .npy); call before the first
    add. What is handed over is the same: a typed block where
    spm_mm_staged_typed says so, else the raw block the entries would have
    made (in row-major order; duplicates summed). Returns 0 or SPM_ENOMEM. */
int spm_mm_cutter_dense(spm_mm_cutter_t *self);

/*  Adds entry (ROW, COL, V), 0-based and in range; V == 0 is dropped.
    Returns 0 or SPM_ENOMEM. */
int spm_mm_cutter_add(spm_mm_cutter_t *self, uint32_t row, uint32_t col, double v);

/*  Hands over (and forgets) every non-empty block of block columns below
    BJ_END, in column-major block order. Returns 0 or the first error. */
int spm_mm_cutter_flush_cols(spm_mm_cutter_t *self, uint32_t bj_end, spm_mm_emit_fn emit,
                             void *arg);

/*  Hands over (and forgets) every non-empty block of block rows below
    BI_END, in row-major block order. Returns 0 or the first error. */
int spm_mm_cutter_flush_rows(spm_mm_cutter_t *self, uint32_t bi_end, spm_mm_emit_fn emit,
                             void *arg);

/*  Hands over every block still held. Returns 0 or the first error. */
int spm_mm_cutter_flush(spm_mm_cutter_t *self, spm_mm_emit_fn emit, void *arg);

/*  Entries added (zeros not counted). */
uint64_t spm_mm_cutter_entries(const spm_mm_cutter_t *self);

/*  Reads R to its end, cut into blocks of at most RK x CK, and hands
    every non-empty block to EMIT; TICK (may
    be NULL) hears how far it got, first before the first entry. Both get
    ARG. Returns 0, TICK's code,
    the reader's SPM_EFORMAT / SPM_EIO (detail "file:line: ..."), EMIT's
    error, SPM_ERANGE (a dimension over 2^32 - 1), or SPM_ENOMEM. */
int spm_mm_cut_file(spm_mmio_t *r, uint32_t rk, uint32_t ck, spm_mm_emit_fn emit,
                    spm_mm_tick_fn tick, void *arg);

#endif
