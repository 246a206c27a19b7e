/*  =========================================================================
    nparray - one NumPy array read in batches, from a .npy file or an
    .npz member

    @header
    Whatever reads a NumPy array (a matrix's values, a sparse matrix's
    indices) reads it here: the header is parsed (npy.h), what it claims
    is checked against the bytes that hold it before anything is read, and
    the elements come in batches of the caller's size, converted from the
    file's little-endian layout. Memory is the caller's batch and, for a
    deflated member, the member's stream (npz.h); never what a header
    claims.
    @discuss
        spm_nparray_t *a = spm_nparray_open("A.npy");          // or
        spm_nparray_t *a = spm_nparray_member(z, "indices");   // of an archive
        const spm_npy_t *h = spm_nparray_header(a);            // dtype, shape
        double v[4096];
        rc = spm_nparray_real(a, v, n);                        // the next n
        spm_nparray_destroy(&a);

    Every error is one line naming the file (and member): "A.npz:
    indices.npy: a negative index, -3".
    @end
    =========================================================================
*/
#ifndef SPM_NPARRAY_H_INCLUDED
#define SPM_NPARRAY_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#include "isa/core/npy.h"
#include "isa/core/npz.h"

typedef struct spm_nparray spm_nparray_t;

/*  Opens the .npy file at PATH. Returns the array (caller closes it) or
    NULL with the detail: SPM_EIO (cannot open or read), SPM_EFORMAT (not
    a .npy file, a header that is not one, an array of unknown element
    size, a file that holds fewer bytes than its header declares). */
spm_nparray_t *spm_nparray_open(const char *path);

/*  Opens member NAME (or NAME.npy) of archive Z (not owned: it outlives
    the array). Returns the array or NULL with the detail, as
    spm_nparray_open, and SPM_EFORMAT when Z has no such member. */
spm_nparray_t *spm_nparray_member(spm_npz_t *z, const char *name);

/*  The array's header (owned by A). */
const spm_npy_t *spm_nparray_header(const spm_nparray_t *a);

/*  Elements the array holds (the product of its shape). */
uint64_t spm_nparray_count(const spm_nparray_t *a);

/*  "PATH", or "PATH: NAME" for a member: how messages name it. */
const char *spm_nparray_label(const spm_nparray_t *a);

/*  Reads the next N elements' bytes (N times the element size) into BUF,
    as the file has them. Returns 0, or SPM_EFORMAT (fewer than N left,
    the data ends early or is corrupt) or SPM_EIO with the detail. */
int spm_nparray_read(spm_nparray_t *a, void *buf, size_t n);

/*  Reads the next N elements, integers (int32, int64, uint32, uint64),
    into OUT. Returns 0, SPM_EFORMAT (another dtype; a negative element
    or one past 2^63), or spm_nparray_read's errors. */
int spm_nparray_index(spm_nparray_t *a, uint64_t *out, size_t n);

/*  Reads the next N elements, float64, into OUT. Returns 0, SPM_EFORMAT
    (another dtype), or spm_nparray_read's errors. */
int spm_nparray_real(spm_nparray_t *a, double *out, size_t n);

/*  Closes *A (safe on NULL) and sets it to NULL. */
void spm_nparray_destroy(spm_nparray_t **self_p);

#endif
