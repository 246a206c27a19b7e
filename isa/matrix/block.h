/*  =========================================================================
    block - a sub-matrix block, the SDB type of the matrix instruction set

    @header
    A block is a bounded piece of a matrix of at most SPM_MM_MAX_DIM rows and
    columns, held in the form that suits its fill: dense (row-major doubles),
    sparse (CSR with sorted, unique column indices per row), or zero (no data
    at all: an all-zero block is a flag in the header, never a payload).
    Its header carries the metadata (kind, rows, cols, nnz, hence density),
    so the IDU and the IEU can tell what kind of block it is from the first
    24 bytes, without decoding it.
    @discuss
    Encoding (all little-endian, no padding), registered as type "mm.block":

        u32 magic 'SPMB'  u32 kind (0 zero, 1 dense, 2 csr)
        u32 rows  u32 cols  u64 nnz
        dense: rows*cols f64 values, row-major (nnz = number of non-zeros)
        csr:   (rows+1) u32 row pointers, nnz u32 column indices, zero bytes
               up to a multiple of 8 from the block's start, nnz f64 values

    spm_mm_block_validate() refuses every block that is not exactly this:
    bad magic or kind, sizes out of range, a length that does not match,
    row pointers that do not start at 0, decrease or do not end at nnz,
    column indices out of range or not strictly increasing within a row,
    non-zero padding, a dense nnz that does not match the values.

    SI bodies do not copy their operands: spm_mm_block_view() points into
    the operand's bytes (8-byte aligned on a little-endian host; otherwise
    it decodes a copy), and a result is computed in an accumulator that has
    room for the header in front of it (spm_mm_acc_new), so a dense result
    leaves as it is, without an encoding copy.

    A staged input block (type "mm.raw", see mm_raw.h) is what a client puts;
    mm.load turns it into a "mm.block".
    @end
    =========================================================================
*/
#ifndef SPM_MM_BLOCK_H_INCLUDED
#define SPM_MM_BLOCK_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define SPM_MM_BLOCK_TYPE "mm.block"
#define SPM_MM_MAX_DIM 16384     /* largest block side (--block) */
#define SPM_MM_HEADER 24         /* bytes of the block header */
#define SPM_MM_SPARSE_FILL 0.125 /* below this fill a block is kept as CSR */

typedef enum { SPM_MM_ZERO = 0, SPM_MM_DENSE = 1, SPM_MM_CSR = 2 } spm_mm_kind_t;

/*  What the header says about a block. */
typedef struct {
    spm_mm_kind_t kind; /* storage form */
    uint32_t rows;      /* block rows */
    uint32_t cols;      /* block columns */
    uint64_t nnz;       /* non-zeros (stored entries for CSR) */
} spm_mm_meta_t;

/*  A decoded block. A plain struct: the kernels walk its arrays directly. */
typedef struct {
    spm_mm_meta_t m;  /* kind, shape, nnz */
    double *val;      /* dense: rows*cols row-major; csr: nnz values; zero: NULL */
    uint32_t *rowptr; /* csr: rows+1 row pointers; else NULL */
    uint32_t *colidx; /* csr: nnz column indices; else NULL */
    int borrowed;     /* the arrays point into someone else's bytes (a view) */
} spm_mm_block_t;

/*  Allocates a block of KIND and shape with room for NNZ entries (CSR) or
    rows*cols zeros (dense). Returns the block (caller owns it; destroy with
    spm_mm_block_destroy) or NULL when out of memory or the shape is invalid. */
spm_mm_block_t *spm_mm_block_new(spm_mm_kind_t kind, uint32_t rows, uint32_t cols, uint64_t nnz);

/*  Frees *SELF and sets it to NULL. Safe on NULL. */
void spm_mm_block_destroy(spm_mm_block_t **self_p);

/*  Density of a block: nnz / (rows * cols). */
double spm_mm_density(const spm_mm_meta_t *m);

/*  Reads the header of LEN bytes at DATA into *META without checking the
    payload. Returns 0, or SPM_EFORMAT (too short, bad magic, kind or shape). */
int spm_mm_block_meta(const void *data, size_t len, spm_mm_meta_t *meta);

/*  Checks that LEN bytes at DATA are exactly a well-formed block. Returns 0
    or SPM_EFORMAT with a detail naming what is wrong. */
int spm_mm_block_validate(const void *data, size_t len);

/*  Validates and decodes LEN bytes at DATA. Returns 0 with *OUT set (caller
    owns it), SPM_EFORMAT, or SPM_ENOMEM. */
int spm_mm_block_decode(const void *data, size_t len, spm_mm_block_t **out);

/*  Like decode, but without copying when it can: on a little-endian host
    with DATA 8-byte aligned, the block's arrays point into DATA, which must
    outlive the view. Checks the header and the length only: DATA must
    have passed spm_mm_block_validate or come from this module's encoders,
    as every block an SI reads has: an IEU validates each block that enters
    its node from the store or a peer, and SI outputs are encoded here.
    Re-checking a CSR block's structure on every read cost
    a sixth of a sparse multiply SI. Returns 0 with *OUT (destroy it as
    usual), SPM_EFORMAT or SPM_ENOMEM. */
int spm_mm_block_view(const void *data, size_t len, spm_mm_block_t **out);

/*  Encodes B. Returns 0 with *DATA (malloc'd, caller frees) and *LEN set,
    or SPM_ENOMEM. */
int spm_mm_block_encode(const spm_mm_block_t *b, void **data, size_t *len);

/*  Adds B into the dense row-major ROWS x COLS array ACC (ACC += B). The
    shapes must match: returns 0 or SPM_EFORMAT. */
int spm_mm_block_add_to(const spm_mm_block_t *b, double *acc, uint32_t rows, uint32_t cols);

/*  Builds the best form of the dense row-major ROWS x COLS array ACC: a zero
    block when it holds no non-zero, CSR when its fill is below
    SPM_MM_SPARSE_FILL, else dense. Takes ownership of ACC (malloc'd; it is
    reused as the dense payload or freed). Returns the block (caller owns it)
    or NULL when out of memory (ACC is freed). */
spm_mm_block_t *spm_mm_block_from_dense(double *acc, uint32_t rows, uint32_t cols);

/*  Returns a malloc'd dense ROWS x COLS array holding B (zeros where B has
    none), or NULL when out of memory. */
double *spm_mm_block_to_dense(const spm_mm_block_t *b);

/*  Encodes the best form (see spm_mm_block_from_dense) of the dense array
    ACC, taking ownership of it. Returns 0 with *DATA (malloc'd, caller
    frees) and *LEN, or SPM_ENOMEM. */
int spm_mm_encode_dense(double *acc, uint32_t rows, uint32_t cols, void **data, size_t *len);

/*  A dense ROWS x COLS accumulator with room for the block header in front
    of it, holding INIT (NULL: zeros; INIT must have that shape). Returns it
    (free with spm_mm_acc_free or hand to spm_mm_acc_finish) or NULL when
    out of memory or the shape differs. */
double *spm_mm_acc_new(uint32_t rows, uint32_t cols, const spm_mm_block_t *init);
void spm_mm_acc_free(double *acc);

/*  Encodes the best form of ACC (see spm_mm_block_from_dense) and frees
    it; a dense result is encoded in place. Returns 0 with *DATA (malloc'd,
    caller frees) and *LEN, or SPM_ENOMEM. */
int spm_mm_acc_finish(double *acc, uint32_t rows, uint32_t cols, void **data, size_t *len);

/*  The type's ACC merge: sums two encoded blocks of the same shape (A may
    be NULL with ALEN 0: the result is B in its best form). Returns 0 with
    *OUT (malloc'd) and *OUTLEN, SPM_EFORMAT for a bad block or mismatched
    shapes, or SPM_ENOMEM. */
int spm_mm_block_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                       size_t *outlen);

/*  One-line summary ("dense 256x256 nnz 65536 (100.0%)") of an encoded block. */
void spm_mm_block_summary(const void *data, size_t len, char *buf, size_t size);

#endif
