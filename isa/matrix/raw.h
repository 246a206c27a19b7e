/*  =========================================================================
    raw - a staged input block: the entries of one block as a client cut them

    @header
    A cluster has no shared file system, so the client that runs
    `spm matmul` reads the Matrix Market files itself, cuts them into blocks
    and puts each non-empty block into the VM's store as type "mm.raw":
    the block's entries in the order the file gave them, duplicates and all.
    mm.load turns a raw block into a "mm.block" in its best form on an IEU,
    so the sorting and compressing is spread over the VM, not done on the
    client.
    @discuss
    Encoding (little-endian, no padding):

        u32 magic 'SPMR'  u32 rows  u32 cols  u32 reserved (0)  u64 count
        count times: u32 row  u32 col  f64 value   (0-based, inside the block)

    The builder appends entries to an spm_buf_t; spm_mm_raw_finish() writes
    the count into the header. Duplicate entries are summed by mm.load.
    @end
    =========================================================================
*/
#ifndef SPM_MM_RAW_H_INCLUDED
#define SPM_MM_RAW_H_INCLUDED

#include "isa/core/codec.h"
#include "isa/matrix/block.h"

#define SPM_MM_RAW_TYPE "mm.raw"
#define SPM_MM_RAW_HEADER 24
#define SPM_MM_RAW_ENTRY 16

/*  Starts a raw block of ROWS x COLS in B (which must be empty). Returns 0
    or SPM_ENOMEM. */
int spm_mm_raw_init(spm_buf_t *b, uint32_t rows, uint32_t cols);

/*  Appends entry (ROW, COL, V) to the raw block in B; the caller checks
    the bounds. A failed allocation marks B failed (seen by finish). */
void spm_mm_raw_add(spm_buf_t *b, uint32_t row, uint32_t col, double v);

/*  Entries appended so far. */
uint64_t spm_mm_raw_count(const spm_buf_t *b);

/*  Writes the count into the header. Returns 0 or SPM_ENOMEM when an
    append failed. */
int spm_mm_raw_finish(spm_buf_t *b);

/*  Checks that LEN bytes at DATA are a well-formed raw block (header,
    length, every index inside the shape). Returns 0 or SPM_EFORMAT. */
int spm_mm_raw_validate(const void *data, size_t len);

/*  Whether the LEN bytes at DATA start like a raw block (its magic): the
    staged form that is not yet an mm.block. */
int spm_mm_raw_is(const void *data, size_t len);

/*  Validates a raw block and builds its best-form block (duplicates
    summed, zeros dropped). Returns 0 with *OUT (caller owns it),
    SPM_EFORMAT or SPM_ENOMEM. */
int spm_mm_raw_to_block(const void *data, size_t len, spm_mm_block_t **out);

#endif
