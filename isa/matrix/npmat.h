/*  =========================================================================
    npmat - a matrix in NumPy's or SciPy's binary files, read as entries

    @header
    A dense matrix saved by numpy.save (a 2-D float64 .npy, C or Fortran
    order) or a sparse one saved by scipy.sparse.save_npz (an .npz of
    format 'csr', 'csc' or 'coo': float64 data, int32 or int64 indices,
    stored or deflated) is read here the way mmio.h reads a Matrix Market
    file: its shape first, then one entry at a time, streamed from the
    file (several arrays at once for a sparse one), never loaded whole.
    spm_mmio_open hands such a file here, so every reader of matrices
    takes both.
    @discuss
    What SciPy's own loader would take is taken; the rest is refused in
    one line naming the file, and the member where one is at fault: a
    dtype other than those above, a member missing, arrays whose lengths
    disagree with each other or with the shape, a pointer array that does
    not start at 0, decreases or passes the entries, an index outside the
    shape, a header that claims more than the file holds, a deflated
    member that is corrupt or whose CRC-32 does not match.
    Entries come in the file's order: a dense C-order or CSR matrix by
    rows, a Fortran-order or CSC one by columns (the header's order says
    which), a COO one as stored.
    @end
    =========================================================================
*/
#ifndef SPM_NPMAT_H_INCLUDED
#define SPM_NPMAT_H_INCLUDED

#include <stdint.h>

#include "isa/matrix/mmio.h"

typedef enum { SPM_NPMAT_NONE = 0, SPM_NPMAT_NPY = 1, SPM_NPMAT_NPZ = 2 } spm_npmat_kind_t;

/*  What PATH holds, by its first bytes (NumPy's magic; a zip's local
    header or end record), else by its name (.npy, .npz), so that a
    damaged binary file is refused as one. SPM_NPMAT_NONE for anything
    else, "-" and a file that cannot be read (whose reader then says why). */
spm_npmat_kind_t spm_npmat_kind(const char *path);

typedef struct spm_npmat spm_npmat_t;

/*  Opens PATH as KIND and reads its shape into *H (a dense matrix is an
    array-format, a sparse one a coordinate-format header; real, general;
    its entries the number stored) and the order its entries come in into
    *ORDER. Returns the reader (caller closes it) or NULL with the detail:
    SPM_EIO, or SPM_EFORMAT ("PATH: ..." or "PATH: MEMBER: ..."). */
spm_npmat_t *spm_npmat_open(const char *path, spm_npmat_kind_t kind, spm_mmio_header_t *h,
                            spm_mmio_order_t *order);

/*  The path given to open. */
const char *spm_npmat_path(const spm_npmat_t *m);

/*  The next entry, 0-based, into *ROW, *COL and *V. Returns 1, 0 after
    the last (having checked that the arrays end together), or SPM_EFORMAT
    / SPM_EIO with the detail. */
int spm_npmat_next(spm_npmat_t *m, uint64_t *row, uint64_t *col, double *v);

/*  The next entries as a run: *N values at *V (M's, valid until the next
    call) from (*ROW, *COL) on, along a row of a C-order dense array or
    down a column of a Fortran-order one, never past its end; one entry
    of a sparse matrix. Returns 1, 0 after the last, or an error as
    spm_npmat_next. A dense array's values are handed out from the batch
    they were read into: the cutter of a 4096 x 4096 array took 16.8
    million calls before, one an entry. */
int spm_npmat_next_run(spm_npmat_t *m, uint64_t *row, uint64_t *col, const double **v, size_t *n);

/*  Entries read so far. */
uint64_t spm_npmat_done(const spm_npmat_t *m);

/*  Closes *M (safe on NULL) and sets it to NULL. */
void spm_npmat_destroy(spm_npmat_t **self_p);

#endif
