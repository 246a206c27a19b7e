/*  =========================================================================
    npy - NumPy's .npy format: the header that describes an array

    @header
    A .npy file is a header and then the array's bytes, as NumPy's
    numpy.save writes them and numpy.load reads them: the magic
    "\x93NUMPY", a version (1.0: a 2-byte header length; 2.0 and 3.0: a
    4-byte one), and a Python dict literal such as

        {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }

    padded with spaces and ended by a newline so that the data starts at a
    multiple of 64 bytes. An .npz archive (npz.h) holds one such file per
    array. This module makes and parses headers; it reads and writes no
    file.
    @discuss
    spm writes version 1.0 and little-endian dtypes only, and reads the
    three versions. A parsed header says what the array claims to be; the
    reader of its bytes (nparray.h) checks the claim against what the file
    holds before it trusts it.

        spm_npy_t a;
        spm_npy_set(&a, "<f8", 2, (uint64_t[]){rows, cols});
        char head[SPM_NPY_HEADER_MAX];
        size_t n = spm_npy_header(&a, 0, head);     // then rows*cols doubles

        size_t len;
        spm_npy_preamble(first, 12, &len);          // the header's length
        spm_npy_parse(header, len, &a);             // descr, order, shape
    @end
    =========================================================================
*/
#ifndef SPM_NPY_H_INCLUDED
#define SPM_NPY_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define SPM_NPY_MAX_DIM 8        /* dimensions a header may have here */
#define SPM_NPY_PREAMBLE 12      /* bytes that tell the header's length (10 for 1.0) */
#define SPM_NPY_HEADER_MAX 65536 /* longest header read (NumPy's own limit is 10000) */
#define SPM_NPY_WRITTEN_MAX 512  /* longest header spm_npy_header writes */

/*  The element types spm reads and writes; the rest are SPM_NPY_OTHER. */
typedef enum {
    SPM_NPY_OTHER = 0, /* any other dtype, big-endian ones included */
    SPM_NPY_F8,        /* '<f8', float64 */
    SPM_NPY_I4,        /* '<i4', int32 */
    SPM_NPY_I8,        /* '<i8', int64 */
    SPM_NPY_U4,        /* '<u4', uint32 */
    SPM_NPY_U8,        /* '<u8', uint64 */
    SPM_NPY_BYTES,     /* '|S<n>', n bytes each */
    SPM_NPY_UNICODE    /* '<U<n>', n UCS-4 characters each */
} spm_npy_kind_t;

/*  What a header says about its array. */
typedef struct {
    char descr[32];                  /* the dtype as written: "<f8", "|S3", ... */
    spm_npy_kind_t kind;             /* its kind, SPM_NPY_OTHER when not one of ours */
    uint64_t itemsize;               /* bytes per element (0 when unknown: OTHER) */
    int fortran;                     /* 1: column-major (Fortran) order */
    uint32_t ndim;                   /* dimensions, 0 for a scalar */
    uint64_t shape[SPM_NPY_MAX_DIM]; /* their sizes */
} spm_npy_t;

/*  Fills A for an array of dtype DESCR (one of the kinds above, as
    written: "<f8", "<i4", "|S8", "<U3", ...) in C order, of NDIM
    dimensions SHAPE. Returns 0, or SPM_EINVAL (a dtype not written here,
    more than SPM_NPY_MAX_DIM dimensions). */
int spm_npy_set(spm_npy_t *a, const char *descr, uint32_t ndim, const uint64_t *shape);

/*  Writes the version 1.0 header of A into BUF (room for
    SPM_NPY_WRITTEN_MAX bytes) and returns its length: a multiple of 64,
    and at least MIN (0: as short as it can be; a header rewritten later
    with a longer shape passes the length the first one had, which it
    then keeps). */
size_t spm_npy_header(const spm_npy_t *a, size_t min, char *buf);

/*  The length of the header (preamble and dict) whose first N bytes
    (at least 10; SPM_NPY_PREAMBLE for versions 2.0 and 3.0) are at P,
    into *LEN. Returns 0, or SPM_EFORMAT with the detail: not a .npy
    (no magic), a version other than 1.0, 2.0, 3.0, a header over
    SPM_NPY_HEADER_MAX bytes, N too short. */
int spm_npy_preamble(const void *p, size_t n, size_t *len);

/*  Parses the header of LEN bytes at P (as spm_npy_preamble measured it)
    into A. Returns 0, or SPM_EFORMAT with the detail: a dict that is not
    one (its keys must be exactly 'descr', 'fortran_order' and 'shape'), a
    structured dtype, more than SPM_NPY_MAX_DIM dimensions, a size past
    2^63. A dtype that is not one of the kinds above is no error: its
    kind is SPM_NPY_OTHER, for the caller to refuse by name. */
int spm_npy_parse(const void *p, size_t len, spm_npy_t *a);

/*  The elements of A (the product of its shape) into *COUNT and their
    bytes into *BYTES. Returns 0, or SPM_ERANGE when either passes 2^63
    (a header claiming more than any file holds). */
int spm_npy_size(const spm_npy_t *a, uint64_t *count, uint64_t *bytes);

/*  The shape of A as "3 x 4" (a scalar: "scalar") into BUF of CAP bytes;
    returns BUF. */
const char *spm_npy_shape_text(const spm_npy_t *a, char *buf, size_t cap);

#endif
