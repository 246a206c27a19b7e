/*  =========================================================================
    npmat - a matrix in NumPy's or SciPy's binary files, read as entries

    A sparse matrix is three arrays read side by side, each through a
    batch of its own (isa/core/nparray.h): for CSR the row pointers, the
    column indices and the values. What scipy.sparse.save_npz writes
    (scipy/sparse/_matrix_io.py): the members 'format' (the format's name
    as a 0-d bytes array, or str from old versions), 'shape' (2 integers),
    'data', and 'indices' with 'indptr' (csr, csc, bsr) or 'row' with 'col'
    (coo) or 'offsets' (dia). bsr and dia are refused by name.
    =========================================================================
*/
#include "isa/matrix/npmat.h"
#include "isa/core/codec.h"
#include "isa/core/nparray.h"
#include "isa/core/npz.h"
#include "spm/spm.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH 4096                  /* elements read from an array at a time */
#define MAX_DIM (UINT64_C(1) << 31) /* rows or columns, as for Matrix Market */

typedef enum { DENSE, CSR, CSC, COO } layout_t;

/*  One array read a batch at a time. */
typedef struct {
    spm_nparray_t *a; /* the array (owned) */
    int real;         /* float64 values, else integers */
    union {
        uint64_t u[BATCH];
        double d[BATCH];
    } buf;           /* the batch */
    size_t at, fill; /* next in it, how many it holds */
    uint64_t left;   /* elements not yet in a batch */
} stream_t;

struct spm_npmat {
    char *path;          /* as given */
    spm_npz_t *z;        /* the archive (NULL for a .npy) */
    layout_t layout;     /* how the entries are stored */
    uint64_t rows, cols; /* the shape */
    uint64_t nnz;        /* entries stored */
    uint64_t done;       /* entries handed out */
    int fortran;         /* dense: column-major */
    uint64_t r, c;       /* dense: the next entry's place */
    uint64_t nmajor;     /* csr, csc: rows or columns */
    uint64_t major;      /* runs begun */
    uint64_t run_end;    /* the current run ends before this entry */
    stream_t val;        /* the values */
    stream_t idx;        /* csr, csc: the minor indices; coo: the rows */
    stream_t ptr;        /* csr, csc: the pointers; coo: the columns */
    double one;          /* spm_npmat_next_run of a sparse matrix: its entry */
};

spm_npmat_kind_t spm_npmat_kind(const char *path)
{
    if (strcmp(path, "-") == 0)
        return SPM_NPMAT_NONE;
    unsigned char b[6] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return SPM_NPMAT_NONE;
    ssize_t n = read(fd, b, sizeof b);
    close(fd);
    if (n == 6 && memcmp(b, "\x93NUMPY", 6) == 0)
        return SPM_NPMAT_NPY;
    if (n >= 4 && b[0] == 'P' && b[1] == 'K' &&
        ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6)))
        return SPM_NPMAT_NPZ;
    size_t len = strlen(path);
    if (len >= 4 && strcmp(path + len - 4, ".npy") == 0)
        return SPM_NPMAT_NPY;
    if (len >= 4 && strcmp(path + len - 4, ".npz") == 0)
        return SPM_NPMAT_NPZ;
    return SPM_NPMAT_NONE;
}

static void stream_set(stream_t *s, spm_nparray_t *a, int real)
{
    s->a = a;
    s->real = real;
    s->left = spm_nparray_count(a);
}

/*  Fills S's batch. */
static int refill(stream_t *s)
{
    if (s->left == 0)
        return spm_error(SPM_EFORMAT, "%s: ends before the other arrays", spm_nparray_label(s->a));
    size_t n = s->left < BATCH ? (size_t)s->left : BATCH;
    int rc = s->real ? spm_nparray_real(s->a, s->buf.d, n) : spm_nparray_index(s->a, s->buf.u, n);
    if (rc != 0)
        return rc;
    s->left -= n;
    s->fill = n;
    s->at = 0;
    return 0;
}

static inline int next_index(stream_t *s, uint64_t *v)
{
    int rc = s->at == s->fill ? refill(s) : 0;
    if (rc == 0)
        *v = s->buf.u[s->at++];
    return rc;
}

static inline int next_real(stream_t *s, double *v)
{
    int rc = s->at == s->fill ? refill(s) : 0;
    if (rc == 0)
        *v = s->buf.d[s->at++];
    return rc;
}

/*  Opens member NAME of the archive as a 1-D array of the kind its role
    takes (REAL: float64 values; else int32 or int64 indices). */
static int member(spm_npmat_t *m, stream_t *s, const char *name, int real)
{
    spm_nparray_t *a = spm_nparray_member(m->z, name);
    if (!a)
        return SPM_EFORMAT;
    stream_set(s, a, real);
    const spm_npy_t *h = spm_nparray_header(a);
    char shape[128];
    if (real && h->kind != SPM_NPY_F8)
        return spm_error(SPM_EFORMAT, "%s: dtype '%s'; only float64 ('<f8') values are read",
                         spm_nparray_label(a), h->descr);
    if (!real && h->kind != SPM_NPY_I4 && h->kind != SPM_NPY_I8)
        return spm_error(SPM_EFORMAT,
                         "%s: dtype '%s'; only int32 or int64 ('<i4', '<i8') indices are read",
                         spm_nparray_label(a), h->descr);
    if (h->ndim != 1)
        return spm_error(SPM_EFORMAT, "%s: shape %s; a 1-D array was expected",
                         spm_nparray_label(a), spm_npy_shape_text(h, shape, sizeof shape));
    return 0;
}

/*  The matrix format the archive's 'format' member names, into FMT. */
static int read_format(spm_npmat_t *m, char *fmt, size_t cap)
{
    spm_nparray_t *a = spm_nparray_member(m->z, "format");
    if (!a)
        return spm_error(SPM_EFORMAT,
                         "%s: no 'format' member: not a sparse matrix as "
                         "scipy.sparse.save_npz writes one",
                         m->path);
    const spm_npy_t *h = spm_nparray_header(a);
    unsigned char raw[64];
    int rc = 0;
    if ((h->kind != SPM_NPY_BYTES && h->kind != SPM_NPY_UNICODE) || spm_nparray_count(a) != 1 ||
        h->itemsize > sizeof raw)
        rc = spm_error(SPM_EFORMAT, "%s: not a short string (dtype '%s')", spm_nparray_label(a),
                       h->descr);
    else
        rc = spm_nparray_read(a, raw, 1);
    size_t n = 0, step = h->kind == SPM_NPY_UNICODE ? 4 : 1;
    for (size_t i = 0; rc == 0 && i < h->itemsize && n + 1 < cap; i += step) {
        uint32_t c = step == 4 ? spm_le32(raw + i) : raw[i];
        if (c == 0)
            break;
        fmt[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    fmt[n] = '\0';
    spm_nparray_destroy(&a);
    return rc;
}

/*  The archive's 'shape' member: two integers, the rows and columns. */
static int read_shape(spm_npmat_t *m)
{
    spm_nparray_t *a = spm_nparray_member(m->z, "shape");
    if (!a)
        return SPM_EFORMAT;
    uint64_t v[2];
    int rc = spm_nparray_count(a) != 2
                 ? spm_error(SPM_EFORMAT, "%s: holds %" PRIu64 " numbers, not 2",
                             spm_nparray_label(a), spm_nparray_count(a))
                 : spm_nparray_index(a, v, 2);
    spm_nparray_destroy(&a);
    if (rc == 0) {
        m->rows = v[0];
        m->cols = v[1];
    }
    return rc;
}

/*  Checks that the lengths of the arrays agree: WHAT has N elements
    where WANT were expected. */
static int length(const stream_t *s, uint64_t want)
{
    uint64_t n = spm_nparray_count(s->a);
    return n == want ? 0
                     : spm_error(SPM_EFORMAT,
                                 "%s: holds %" PRIu64 " elements where %" PRIu64 " were expected",
                                 spm_nparray_label(s->a), n, want);
}

static int open_npz(spm_npmat_t *m, spm_mmio_header_t *h, spm_mmio_order_t *order)
{
    char fmt[32];
    int rc;
    if (!(m->z = spm_npz_open(m->path)))
        return SPM_EFORMAT;
    if ((rc = read_format(m, fmt, sizeof fmt)) != 0 || (rc = read_shape(m)) != 0)
        return rc;
    if (strcmp(fmt, "csr") == 0 || strcmp(fmt, "csc") == 0) {
        m->layout = fmt[2] == 'r' ? CSR : CSC;
        m->nmajor = m->layout == CSR ? m->rows : m->cols;
        if ((rc = member(m, &m->val, "data", 1)) != 0 ||
            (rc = member(m, &m->idx, "indices", 0)) != 0 ||
            (rc = member(m, &m->ptr, "indptr", 0)) != 0)
            return rc;
        m->nnz = spm_nparray_count(m->val.a);
        if ((rc = length(&m->idx, m->nnz)) != 0 ||
            (m->nmajor < MAX_DIM && (rc = length(&m->ptr, m->nmajor + 1)) != 0))
            return rc;
        *order = m->layout == CSR ? SPM_MMIO_BY_ROW : SPM_MMIO_BY_COLUMN;
    } else if (strcmp(fmt, "coo") == 0) {
        m->layout = COO;
        if ((rc = member(m, &m->val, "data", 1)) != 0 || (rc = member(m, &m->idx, "row", 0)) != 0 ||
            (rc = member(m, &m->ptr, "col", 0)) != 0)
            return rc;
        m->nnz = spm_nparray_count(m->val.a);
        if ((rc = length(&m->idx, m->nnz)) != 0 || (rc = length(&m->ptr, m->nnz)) != 0)
            return rc;
    } else {
        return spm_error(SPM_EFORMAT,
                         "%s: a sparse matrix of format '%s' (csr, csc and coo are read)", m->path,
                         fmt);
    }
    h->format = SPM_MMIO_COORDINATE;
    h->entries = m->nnz;
    if (m->layout != COO) { /* the first pointer */
        uint64_t p0;
        if ((rc = next_index(&m->ptr, &p0)) != 0)
            return rc;
        if (p0 != 0)
            return spm_error(SPM_EFORMAT, "%s: starts at %" PRIu64 ", not 0",
                             spm_nparray_label(m->ptr.a), p0);
    }
    return 0;
}

static int open_npy(spm_npmat_t *m, spm_mmio_header_t *h, spm_mmio_order_t *order)
{
    spm_nparray_t *a = spm_nparray_open(m->path);
    if (!a)
        return SPM_EFORMAT;
    stream_set(&m->val, a, 1);
    const spm_npy_t *n = spm_nparray_header(a);
    char shape[128];
    if (n->kind != SPM_NPY_F8)
        return spm_error(SPM_EFORMAT, "%s: dtype '%s'; only float64 ('<f8') matrices are read",
                         m->path, n->descr);
    if (n->ndim != 2)
        return spm_error(SPM_EFORMAT, "%s: shape %s; a matrix has 2 dimensions", m->path,
                         spm_npy_shape_text(n, shape, sizeof shape));
    m->layout = DENSE;
    m->rows = n->shape[0];
    m->cols = n->shape[1];
    m->fortran = n->fortran;
    m->nnz = spm_nparray_count(a);
    h->format = SPM_MMIO_ARRAY;
    h->entries = m->nnz;
    *order = m->fortran ? SPM_MMIO_BY_COLUMN : SPM_MMIO_BY_ROW;
    return 0;
}

spm_npmat_t *spm_npmat_open(const char *path, spm_npmat_kind_t kind, spm_mmio_header_t *h,
                            spm_mmio_order_t *order)
{
    spm_npmat_t *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    *h = (spm_mmio_header_t){.field = SPM_MMIO_REAL, .symmetry = SPM_MMIO_GENERAL};
    *order = SPM_MMIO_ANY;
    int rc = kind == SPM_NPMAT_NPY ? open_npy(m, h, order) : open_npz(m, h, order);
    if (rc == 0 && (m->rows > MAX_DIM || m->cols > MAX_DIM))
        rc = spm_error(SPM_EFORMAT,
                       "%s: %" PRIu64 " x %" PRIu64 " is too large (at most 2^31 a side)", path,
                       m->rows, m->cols);
    h->rows = m->rows;
    h->cols = m->cols;
    if (rc != 0)
        spm_npmat_destroy(&m);
    return m;
}

const char *spm_npmat_path(const spm_npmat_t *m)
{
    return m->path;
}

/*  The next entry of a CSR or CSC matrix: its major and minor index. */
static int next_compressed(spm_npmat_t *m, uint64_t *major, uint64_t *minor, double *v)
{
    int rc;
    while (m->done == m->run_end) {
        uint64_t p;
        if (m->major == m->nmajor) {
            if (m->run_end != m->nnz)
                return spm_error(SPM_EFORMAT,
                                 "%s: ends at %" PRIu64 ", but there are %" PRIu64 " entries",
                                 spm_nparray_label(m->ptr.a), m->run_end, m->nnz);
            return 0;
        }
        if ((rc = next_index(&m->ptr, &p)) != 0)
            return rc;
        if (p < m->run_end || p > m->nnz)
            return spm_error(
                SPM_EFORMAT, "%s: %s at %" PRIu64 " (%" PRIu64 " of %" PRIu64 " entries)",
                spm_nparray_label(m->ptr.a), p < m->run_end ? "decreases" : "passes the entries",
                m->major + 1, p, m->nnz);
        m->run_end = p;
        m->major++;
    }
    uint64_t bound = m->layout == CSR ? m->cols : m->rows;
    if ((rc = next_index(&m->idx, minor)) != 0 || (rc = next_real(&m->val, v)) != 0)
        return rc;
    if (*minor >= bound)
        return spm_error(SPM_EFORMAT,
                         "%s: index %" PRIu64 " outside the %" PRIu64 " x %" PRIu64 " matrix",
                         spm_nparray_label(m->idx.a), *minor, m->rows, m->cols);
    *major = m->major - 1;
    return 1;
}

/*  The refusal of V, not a finite number, at (ROW, COL): as in a text
    file (mmio.c). */
static int not_finite(const spm_npmat_t *m, uint64_t row, uint64_t col, double v)
{
    return spm_error(SPM_EFORMAT,
                     "%s: the entry at row %" PRIu64 ", column %" PRIu64
                     " (0-based) is %s, not a finite number",
                     m->path, row, col,
                     isnan(v) ? "nan"
                     : v > 0  ? "inf"
                              : "-inf");
}

int spm_npmat_next_run(spm_npmat_t *m, uint64_t *row, uint64_t *col, const double **v, size_t *n)
{
    if (m->layout != DENSE) {
        int rc = spm_npmat_next(m, row, col, &m->one);
        *v = &m->one;
        *n = rc == 1;
        return rc;
    }
    if (m->done == m->nnz)
        return 0;
    stream_t *s = &m->val;
    int rc = s->at == s->fill ? refill(s) : 0;
    if (rc != 0)
        return rc;
    uint64_t line = m->fortran ? m->rows - m->r : m->cols - m->c; /* left in this column or row */
    size_t k = s->fill - s->at < line ? s->fill - s->at : (size_t)line;
    const double *p = s->buf.d + s->at;
    int finite = 1;
    for (size_t q = 0; q < k; q++) /* no branch: it vectorizes */
        finite &= isfinite(p[q]);
    for (size_t q = 0; !finite && q < k; q++)
        if (!isfinite(p[q]))
            return not_finite(m, m->r + (m->fortran ? q : 0), m->c + (m->fortran ? 0 : q), p[q]);
    *row = m->r;
    *col = m->c;
    *v = p;
    *n = k;
    s->at += k;
    m->done += k;
    if (m->fortran && (m->r += k) == m->rows) {
        m->r = 0;
        m->c++;
    } else if (!m->fortran && (m->c += k) == m->cols) {
        m->c = 0;
        m->r++;
    }
    return 1;
}

int spm_npmat_next(spm_npmat_t *m, uint64_t *row, uint64_t *col, double *v)
{
    int rc;
    switch (m->layout) {
    case DENSE:
        if (m->done == m->nnz)
            return 0;
        if ((rc = next_real(&m->val, v)) != 0)
            return rc;
        *row = m->r;
        *col = m->c;
        if (m->fortran && ++m->r == m->rows) {
            m->r = 0;
            m->c++;
        } else if (!m->fortran && ++m->c == m->cols) {
            m->c = 0;
            m->r++;
        }
        break;
    case CSR:
        if ((rc = next_compressed(m, row, col, v)) != 1)
            return rc;
        break;
    case CSC:
        if ((rc = next_compressed(m, col, row, v)) != 1)
            return rc;
        break;
    case COO:
        if (m->done == m->nnz)
            return 0;
        if ((rc = next_index(&m->idx, row)) != 0 || (rc = next_index(&m->ptr, col)) != 0 ||
            (rc = next_real(&m->val, v)) != 0)
            return rc;
        if (*row >= m->rows || *col >= m->cols)
            return spm_error(SPM_EFORMAT,
                             "%s: entry (%" PRIu64 ", %" PRIu64 ") outside the %" PRIu64
                             " x %" PRIu64 " matrix",
                             m->path, *row, *col, m->rows, m->cols);
        break;
    }
    if (!isfinite(*v)) /* refused as in a text file (mmio.c) */
        return not_finite(m, *row, *col, *v);
    m->done++;
    return 1;
}

uint64_t spm_npmat_done(const spm_npmat_t *m)
{
    return m->done;
}

void spm_npmat_destroy(spm_npmat_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_npmat_t *m = *self_p;
    spm_nparray_destroy(&m->val.a);
    spm_nparray_destroy(&m->idx.a);
    spm_nparray_destroy(&m->ptr.a);
    spm_npz_destroy(&m->z);
    free(m->path);
    free(m);
    *self_p = NULL;
}
