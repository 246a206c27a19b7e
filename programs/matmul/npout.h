/*  =========================================================================
    npout - C written as SciPy's sparse .npz or NumPy's dense .npy

    @header
    `spm matmul ... -o C.npz` writes C as scipy.sparse.save_npz would (a
    CSR matrix: members format, shape, indptr, indices, data), so that
    scipy.sparse.load_npz loads it; `-o C.npy` writes C dense, as
    numpy.save would, so that numpy.load loads it. The block rows of C
    come in order, as for C.mtx (rows.h), and their arrays are copied out
    of C's blocks without formatting: the writing goes at about the
    disk's speed. The entries of the .npz are those C.mtx would have
    (every stored entry of a sparse block, the non-zeros of a dense one),
    in the same order; the .npy holds every element.
    @discuss
    A CSR archive's arrays are sized before the first row (the archive
    lays its members out first: isa/core/npz.h), so the caller counts C's
    entries beforehand: the sum of its blocks' header counts. Indices are
    int32 when the entries and both sides fit in 2^31 - 1, as SciPy
    makes them, else int64.

        spm_mm_npout_t *o = spm_mm_npout_open(out, SPM_MM_OUT_NPZ, m, n, nnz);
        for each block row: spm_mm_npout_rows(o, &rows, meter);
        rc = spm_mm_npout_close(&o);          // then commit OUT
    @end
    =========================================================================
*/
#ifndef SPM_MM_NPOUT_H_INCLUDED
#define SPM_MM_NPOUT_H_INCLUDED

#include "base/textio.h"
#include "programs/matmul/rows.h"

typedef enum { SPM_MM_OUT_MTX = 0, SPM_MM_OUT_NPZ = 1, SPM_MM_OUT_NPY = 2 } spm_mm_out_format_t;

/*  The format the name PATH asks for: .npz, .npy, else Matrix Market. */
spm_mm_out_format_t spm_mm_out_format(const char *path);

/*  Parses --format's S (mtx, npz, npy) into *F. Returns 0 or SPM_EINVAL
    with the detail. */
int spm_mm_out_format_parse(const char *s, spm_mm_out_format_t *f);

typedef struct spm_mm_npout spm_mm_npout_t;

/*  Starts C of M x N, with NNZ entries (a CSR archive's sizes; ignored
    for .npy), in FORMAT (NPZ or NPY) into OUT (not owned). Returns the
    writer or NULL with the detail (SPM_ENOMEM, the write's SPM_EIO /
    SPM_EFULL). */
spm_mm_npout_t *spm_mm_npout_open(spm_outfile_t *out, spm_mm_out_format_t format, uint64_t m,
                                  uint64_t n, uint64_t nnz);

/*  Writes block row R of C (the next one); METER (may be NULL) hears C's
    rows done. Returns 0, SPM_ERANGE (more entries than NNZ said), or the
    write's error, with the detail. */
int spm_mm_npout_rows(spm_mm_npout_t *o, const spm_mm_rows_t *r, spm_progress_t *meter);

/*  Finishes the file (for .npz: checks the entries matched NNZ, writes the
    directory) and frees *O, setting it to NULL. Returns 0 or the first
    error. The caller then commits OUT. */
int spm_mm_npout_close(spm_mm_npout_t **o);

/*  Frees *O without finishing (safe on NULL); sets it to NULL. */
void spm_mm_npout_destroy(spm_mm_npout_t **self_p);

#endif
