/*  =========================================================================
    mmio - Matrix Market files: a streaming reader and a writer

    @header
    Reads and writes the NIST Matrix Market exchange format: coordinate and
    array layouts; real, integer and pattern fields; general, symmetric and
    skew-symmetric symmetry (complex and hermitian are refused with a clear
    message). The reader streams, so a file of
    any size passes through a fixed amount of memory: its entries are
    parsed in chunks of whole lines on every core (mmtext.h) and handed
    out in file order. It also reads the
    binary files of NumPy and SciPy (a dense .npy, a sparse .npz), which it
    recognizes by their first bytes or their name (npmat.h).
    @discuss
    The reader hands out entries one at a time, 0-based, already mirrored:
    an off-diagonal entry (i, j, v) of a symmetric file also yields (j, i, v),
    of a skew-symmetric one (j, i, -v). Pattern entries have the value 1.
    Array files yield every stored entry, zeros included, in column-major
    order. Every error names the file and line: "A.mtx:12: ...". A file
    that ends before the entries its size line declares is an error, and so
    is one with more.

        spm_mmio_t *r = spm_mmio_open("A.mtx");       // banner and size line
        const spm_mmio_header_t *h = spm_mmio_header(r);
        uint64_t i, j; double v; int rc;
        while ((rc = spm_mmio_next(r, &i, &j, &v)) == 1) ...
        spm_mmio_destroy(&r);

    The writer puts the banner and size line first. When the number of
    entries is not known in advance it reserves a padded size line and
    rewrites it on close, which needs a seekable stream (a regular file).
    @end
    =========================================================================
*/
#ifndef SPM_MMIO_H_INCLUDED
#define SPM_MMIO_H_INCLUDED

#include <stdint.h>
#include <stdio.h>

typedef enum { SPM_MMIO_COORDINATE = 0, SPM_MMIO_ARRAY = 1 } spm_mmio_format_t;
typedef enum { SPM_MMIO_REAL = 0, SPM_MMIO_INTEGER = 1, SPM_MMIO_PATTERN = 2 } spm_mmio_field_t;
typedef enum {
    SPM_MMIO_GENERAL = 0,
    SPM_MMIO_SYMMETRIC = 1,
    SPM_MMIO_SKEW = 2
} spm_mmio_symmetry_t;

/*  The order a reader hands out entries in, as far as the file promises
    one: a reader that knows it lets its user hand over what is complete
    (a column of blocks, a row of blocks) before the end. */
typedef enum {
    SPM_MMIO_ANY = 0,       /* any order (a coordinate file) */
    SPM_MMIO_BY_COLUMN = 1, /* column after column (an array file, general) */
    SPM_MMIO_BY_ROW = 2     /* row after row (a C-order .npy, a CSR .npz) */
} spm_mmio_order_t;

typedef struct {
    spm_mmio_format_t format;     /* coordinate or array */
    spm_mmio_field_t field;       /* real, integer or pattern */
    spm_mmio_symmetry_t symmetry; /* general, symmetric or skew-symmetric */
    uint64_t rows;                /* matrix rows */
    uint64_t cols;                /* matrix columns */
    uint64_t entries;             /* stored entries the size line declares */
} spm_mmio_header_t;

typedef struct spm_mmio spm_mmio_t;

/*  Opens PATH and reads the banner, comments and size line (of a NumPy
    or SciPy file: its shape, npmat.h). Returns the reader (caller closes
    it) or NULL with the detail set: SPM_EIO (cannot open) or SPM_EFORMAT
    ("PATH:LINE: what is wrong", "PATH: what is wrong"). */
spm_mmio_t *spm_mmio_open(const char *path);

/*  The header read by open (owned by the reader). */
const spm_mmio_header_t *spm_mmio_header(const spm_mmio_t *r);

/*  The path given to open. */
const char *spm_mmio_path(const spm_mmio_t *r);

/*  The order R hands out its entries in. */
spm_mmio_order_t spm_mmio_order(const spm_mmio_t *r);

/*  Reads the next entry into *ROW, *COL (0-based) and *V. Returns 1 for an
    entry, 0 after the last declared entry (having checked that nothing but
    blank lines follows), or SPM_EFORMAT / SPM_EIO with "PATH:LINE: ..."
    in the detail: a non-numeric or out-of-range value, an index out of
    range, an entry of a skew-symmetric file on the diagonal, a file that
    ends early (truncated) or holds more entries than declared. */
int spm_mmio_next(spm_mmio_t *r, uint64_t *row, uint64_t *col, double *v);

/*  spm_mmio_next, a run at a time: *N values at *V (R's, valid until the
    next call) from (*ROW, *COL) on, along the file's order (down a column
    where spm_mmio_order is SPM_MMIO_BY_COLUMN, else along a row), where a
    dense .npy hands them out so (spm_npmat_next_run); one entry of any
    other file. Returns 1, 0 after the last, or an error as spm_mmio_next. */
int spm_mmio_next_run(spm_mmio_t *r, uint64_t *row, uint64_t *col, const double **v, size_t *n);

/*  Has R's text entries parsed in chunks of about BYTES (0: the default,
    1 MiB), for tests that put chunk boundaries in awkward places; call
    before the first spm_mmio_next. The entries are the same whatever
    the chunks. */
void spm_mmio_set_chunk(spm_mmio_t *r, size_t bytes);

/*  Stored entries read so far (of the header's entries). */
uint64_t spm_mmio_done(const spm_mmio_t *r);

/*  Closes *R (safe on NULL) and sets it to NULL. */
void spm_mmio_destroy(spm_mmio_t **self_p);

/*  Names for messages and banners: "coordinate", "real", "symmetric", ... */
const char *spm_mmio_format_name(spm_mmio_format_t f);
const char *spm_mmio_field_name(spm_mmio_field_t f);
const char *spm_mmio_symmetry_name(spm_mmio_symmetry_t s);

typedef struct spm_mmio_writer spm_mmio_writer_t;

/*  Starts writing a matrix described by H to OUT (not owned; stays open).
    H->entries is the number of entries the caller will put, or UINT64_MAX
    when unknown (coordinate only: then OUT must be seekable). For the
    array format the caller puts every stored entry in column-major order
    (for symmetric files only the lower triangle, for skew-symmetric only
    the strict lower triangle). Returns the writer or NULL with the detail. */
spm_mmio_writer_t *spm_mmio_writer_open(FILE *out, const spm_mmio_header_t *h);

/*  Writes entry (ROW, COL, V), 0-based (the array format ignores ROW and
    COL). Integer fields write V rounded to an integer, pattern fields no
    value. Returns 0, or SPM_EIO, or SPM_ERANGE for more entries than
    declared. */
int spm_mmio_writer_put(spm_mmio_writer_t *w, uint64_t row, uint64_t col, double v);

/*  The longest line spm_mmio_writer_format writes (newline included). */
#define SPM_MMIO_LINE_MAX 384

/*  Formats entry (ROW, COL, V) into LINE (at least SPM_MMIO_LINE_MAX
    bytes) exactly as spm_mmio_writer_put writes it, newline included, and
    returns its length. It reads only W's header, so other threads may
    format while one thread writes. */
size_t spm_mmio_writer_format(const spm_mmio_writer_t *w, char *line, uint64_t row, uint64_t col,
                              double v);

/*  Writes LEN bytes of TEXT: ENTRIES lines made by spm_mmio_writer_format.
    Returns as spm_mmio_writer_put. */
int spm_mmio_writer_put_text(spm_mmio_writer_t *w, const char *text, size_t len, uint64_t entries);

/*  Finishes the file: checks the count and, when it was unknown, rewrites
    the size line. Frees *W and sets it to NULL. Returns 0, SPM_EIO, or
    SPM_EFORMAT when fewer entries were put than declared. */
int spm_mmio_writer_close(spm_mmio_writer_t **w);

#endif
