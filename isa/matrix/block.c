/*  =========================================================================
    block - a sub-matrix block, the SDB type of the matrix instruction set

    The wire layout is fixed little-endian. On a little-endian host (every
    machine we build for) payload arrays are moved with memcpy; elsewhere
    they are converted element by element, so the encoding stays portable.
    =========================================================================
*/
#include "isa/matrix/block.h"
#include "isa/core/codec.h"
#include "spm/spm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC 0x424d5053u /* "SPMB" */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_LE 1
#else
#define HOST_LE 0
#endif

static void get_u32s(uint32_t *dst, const unsigned char *src, size_t n)
{
    if (HOST_LE) {
        memcpy(dst, src, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = spm_le32(src + 4 * i);
}

static void get_f64s(double *dst, const unsigned char *src, size_t n)
{
    if (HOST_LE) {
        memcpy(dst, src, n * 8);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = spm_le64(src + 8 * i);
        memcpy(&dst[i], &bits, 8);
    }
}

static void put_u32s(unsigned char *dst, const uint32_t *src, size_t n)
{
    if (HOST_LE) {
        memcpy(dst, src, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++)
        spm_put_le32(dst + 4 * i, src[i]);
}

static void put_f64s(unsigned char *dst, const double *src, size_t n)
{
    if (HOST_LE) {
        memcpy(dst, src, n * 8);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &src[i], 8);
        spm_put_le64(dst + 8 * i, bits);
    }
}

/*  Offset of the CSR values from the start of the block: after the row
    pointers and column indices, rounded up to 8 so that the values of a
    block in an aligned buffer can be used in place. */
static size_t csr_values_at(const spm_mm_meta_t *m)
{
    size_t at = SPM_MM_HEADER + ((size_t)m->rows + 1) * 4 + (size_t)m->nnz * 4;
    return (at + 7) & ~(size_t)7;
}

/*  Payload bytes of a block with META (which must have a valid shape). */
static size_t payload_bytes(const spm_mm_meta_t *m)
{
    switch (m->kind) {
    case SPM_MM_DENSE:
        return (size_t)m->rows * m->cols * 8;
    case SPM_MM_CSR:
        return csr_values_at(m) - SPM_MM_HEADER + (size_t)m->nnz * 8;
    default:
        return 0;
    }
}

spm_mm_block_t *spm_mm_block_new(spm_mm_kind_t kind, uint32_t rows, uint32_t cols, uint64_t nnz)
{
    if (rows == 0 || cols == 0 || rows > SPM_MM_MAX_DIM || cols > SPM_MM_MAX_DIM ||
        nnz > (uint64_t)rows * cols)
        return NULL;
    spm_mm_block_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->m = (spm_mm_meta_t){kind, rows, cols, kind == SPM_MM_ZERO ? 0 : nnz};
    if (kind == SPM_MM_DENSE) {
        b->val = calloc((size_t)rows * cols, sizeof(double));
        if (!b->val)
            goto err;
    } else if (kind == SPM_MM_CSR) {
        b->rowptr = calloc((size_t)rows + 1, sizeof(uint32_t));
        b->colidx = malloc((nnz ? nnz : 1) * sizeof(uint32_t));
        b->val = malloc((nnz ? nnz : 1) * sizeof(double));
        if (!b->rowptr || !b->colidx || !b->val)
            goto err;
    }
    return b;
err:
    spm_mm_block_destroy(&b);
    return NULL;
}

void spm_mm_block_destroy(spm_mm_block_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_mm_block_t *b = *self_p;
    if (!b->borrowed) {
        free(b->val);
        free(b->rowptr);
        free(b->colidx);
    }
    free(b);
    *self_p = NULL;
}

double spm_mm_density(const spm_mm_meta_t *m)
{
    return m->rows && m->cols ? (double)m->nnz / ((double)m->rows * m->cols) : 0.0;
}

int spm_mm_block_meta(const void *data, size_t len, spm_mm_meta_t *meta)
{
    if (!data || len < SPM_MM_HEADER)
        return spm_error(SPM_EFORMAT, "mm.block: %zu bytes is shorter than the header", len);
    const unsigned char *p = data;
    uint32_t kind = spm_le32(p + 4);
    meta->rows = spm_le32(p + 8);
    meta->cols = spm_le32(p + 12);
    meta->nnz = spm_le64(p + 16);
    if (spm_le32(p) != MAGIC)
        return spm_error(SPM_EFORMAT, "mm.block: bad magic");
    if (kind > SPM_MM_CSR)
        return spm_error(SPM_EFORMAT, "mm.block: unknown kind %" PRIu32, kind);
    meta->kind = (spm_mm_kind_t)kind;
    if (meta->rows == 0 || meta->cols == 0 || meta->rows > SPM_MM_MAX_DIM ||
        meta->cols > SPM_MM_MAX_DIM)
        return spm_error(SPM_EFORMAT, "mm.block: shape %" PRIu32 "x%" PRIu32 " out of range",
                         meta->rows, meta->cols);
    if (meta->nnz > (uint64_t)meta->rows * meta->cols || (kind == SPM_MM_ZERO && meta->nnz))
        return spm_error(SPM_EFORMAT, "mm.block: nnz %" PRIu64 " impossible for its shape",
                         meta->nnz);
    return 0;
}

static int check_csr(const spm_mm_meta_t *m, const unsigned char *p)
{
    const unsigned char *rp = p, *ci = p + ((size_t)m->rows + 1) * 4;
    if (spm_le32(rp) != 0)
        return spm_error(SPM_EFORMAT, "mm.block: first row pointer is not 0");
    uint32_t prev = 0;
    for (uint32_t r = 0; r < m->rows; r++) {
        uint32_t end = spm_le32(rp + 4 * ((size_t)r + 1));
        if (end < prev || end > m->nnz)
            return spm_error(SPM_EFORMAT, "mm.block: row pointer %" PRIu32 " out of order", r + 1);
        for (uint32_t q = prev; q < end; q++) {
            uint32_t c = spm_le32(ci + 4 * (size_t)q);
            if (c >= m->cols)
                return spm_error(SPM_EFORMAT, "mm.block: column index %" PRIu32 " out of range", c);
            if (q > prev && c <= spm_le32(ci + 4 * ((size_t)q - 1)))
                return spm_error(SPM_EFORMAT,
                                 "mm.block: columns of row %" PRIu32 " not strictly increasing", r);
        }
        prev = end;
    }
    if (prev != m->nnz)
        return spm_error(SPM_EFORMAT, "mm.block: last row pointer is not nnz");
    for (const unsigned char *q = ci + 4 * (size_t)m->nnz; q < p - SPM_MM_HEADER + csr_values_at(m);
         q++)
        if (*q)
            return spm_error(SPM_EFORMAT, "mm.block: padding is not zero");
    return 0;
}

static int check_dense(const spm_mm_meta_t *m, const unsigned char *p)
{
    uint64_t nz = 0;
    size_t n = (size_t)m->rows * m->cols;
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = spm_le64(p + 8 * i);
        nz += (bits << 1) != 0; /* not +0.0 or -0.0 */
    }
    if (nz != m->nnz)
        return spm_error(SPM_EFORMAT, "mm.block: dense nnz %" PRIu64 " but %" PRIu64 " non-zeros",
                         m->nnz, nz);
    return 0;
}

/*  Checks the header and that the length matches it. */
static int check_shape(const void *data, size_t len, spm_mm_meta_t *m)
{
    int rc = spm_mm_block_meta(data, len, m);
    if (rc != 0)
        return rc;
    if (len - SPM_MM_HEADER != payload_bytes(m))
        return spm_error(SPM_EFORMAT, "mm.block: %zu payload bytes, expected %zu",
                         len - SPM_MM_HEADER, payload_bytes(m));
    return 0;
}

int spm_mm_block_validate(const void *data, size_t len)
{
    spm_mm_meta_t m;
    int rc = check_shape(data, len, &m);
    if (rc != 0)
        return rc;
    const unsigned char *p = (const unsigned char *)data + SPM_MM_HEADER;
    if (m.kind == SPM_MM_CSR)
        return check_csr(&m, p);
    if (m.kind == SPM_MM_DENSE)
        return check_dense(&m, p);
    return 0;
}

int spm_mm_block_view(const void *data, size_t len, spm_mm_block_t **out)
{
    spm_mm_meta_t m;
    int rc = check_shape(data, len, &m);
    if (rc != 0)
        return rc;
    if (!HOST_LE || ((uintptr_t)data & 7) != 0)
        return spm_mm_block_decode(data, len, out);
    spm_mm_block_t *b = calloc(1, sizeof *b);
    if (!b)
        return spm_error(SPM_ENOMEM, "mm.block: out of memory");
    const unsigned char *p = data;
    b->m = m;
    b->borrowed = 1;
    if (m.kind == SPM_MM_DENSE) {
        b->val = (double *)(uintptr_t)(p + SPM_MM_HEADER);
    } else if (m.kind == SPM_MM_CSR) {
        b->rowptr = (uint32_t *)(uintptr_t)(p + SPM_MM_HEADER);
        b->colidx = b->rowptr + m.rows + 1;
        b->val = (double *)(uintptr_t)(p + csr_values_at(&m));
    }
    *out = b;
    return 0;
}

int spm_mm_block_decode(const void *data, size_t len, spm_mm_block_t **out)
{
    int rc = spm_mm_block_validate(data, len);
    if (rc != 0)
        return rc;
    spm_mm_meta_t m;
    spm_mm_block_meta(data, len, &m);
    spm_mm_block_t *b = spm_mm_block_new(m.kind, m.rows, m.cols, m.nnz);
    if (!b)
        return spm_error(SPM_ENOMEM, "mm.block: out of memory");
    const unsigned char *p = (const unsigned char *)data + SPM_MM_HEADER;
    if (m.kind == SPM_MM_DENSE) {
        get_f64s(b->val, p, (size_t)m.rows * m.cols);
    } else if (m.kind == SPM_MM_CSR) {
        get_u32s(b->rowptr, p, (size_t)m.rows + 1);
        get_u32s(b->colidx, p + ((size_t)m.rows + 1) * 4, m.nnz);
        get_f64s(b->val, (const unsigned char *)data + csr_values_at(&m), m.nnz);
    }
    *out = b;
    return 0;
}

static void put_header(unsigned char *p, const spm_mm_meta_t *m)
{
    spm_put_le32(p, MAGIC);
    spm_put_le32(p + 4, (uint32_t)m->kind);
    spm_put_le32(p + 8, m->rows);
    spm_put_le32(p + 12, m->cols);
    spm_put_le64(p + 16, m->nnz);
}

int spm_mm_block_encode(const spm_mm_block_t *b, void **data, size_t *len)
{
    size_t n = SPM_MM_HEADER + payload_bytes(&b->m);
    unsigned char *p = calloc(1, n);
    if (!p)
        return spm_error(SPM_ENOMEM, "mm.block: out of memory");
    put_header(p, &b->m);
    unsigned char *q = p + SPM_MM_HEADER;
    if (b->m.kind == SPM_MM_DENSE) {
        put_f64s(q, b->val, (size_t)b->m.rows * b->m.cols);
    } else if (b->m.kind == SPM_MM_CSR) {
        put_u32s(q, b->rowptr, (size_t)b->m.rows + 1);
        put_u32s(q + ((size_t)b->m.rows + 1) * 4, b->colidx, b->m.nnz);
        put_f64s(p + csr_values_at(&b->m), b->val, b->m.nnz);
    }
    *data = p;
    *len = n;
    return 0;
}

int spm_mm_block_add_to(const spm_mm_block_t *b, double *acc, uint32_t rows, uint32_t cols)
{
    if (b->m.rows != rows || b->m.cols != cols)
        return spm_error(SPM_EFORMAT,
                         "mm.block: adding a %" PRIu32 "x%" PRIu32 " block to %" PRIu32 "x%" PRIu32,
                         b->m.rows, b->m.cols, rows, cols);
    if (b->m.kind == SPM_MM_DENSE) {
        size_t n = (size_t)rows * cols;
        for (size_t i = 0; i < n; i++)
            acc[i] += b->val[i];
    } else if (b->m.kind == SPM_MM_CSR) {
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t q = b->rowptr[r]; q < b->rowptr[r + 1]; q++)
                acc[(size_t)r * cols + b->colidx[q]] += b->val[q];
    }
    return 0;
}

spm_mm_block_t *spm_mm_block_from_dense(double *acc, uint32_t rows, uint32_t cols)
{
    size_t n = (size_t)rows * cols;
    uint64_t nnz = 0;
    for (size_t i = 0; i < n; i++)
        nnz += acc[i] != 0.0;
    spm_mm_block_t *b;
    if (nnz == 0 || (double)nnz < SPM_MM_SPARSE_FILL * (double)n) {
        b = spm_mm_block_new(nnz ? SPM_MM_CSR : SPM_MM_ZERO, rows, cols, nnz);
        if (b && nnz) {
            uint32_t q = 0;
            for (uint32_t r = 0; r < rows; r++) {
                const double *row = acc + (size_t)r * cols;
                for (uint32_t c = 0; c < cols; c++)
                    if (row[c] != 0.0) {
                        b->colidx[q] = c;
                        b->val[q++] = row[c];
                    }
                b->rowptr[r + 1] = q;
            }
        }
        free(acc);
        return b;
    }
    b = spm_mm_block_new(SPM_MM_ZERO, rows, cols, 0);
    if (!b) {
        free(acc);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (acc[i] == 0.0)
            acc[i] = 0.0; /* -0.0 would not count as a zero when validated */
    b->m.kind = SPM_MM_DENSE;
    b->m.nnz = nnz;
    b->val = acc;
    return b;
}

double *spm_mm_block_to_dense(const spm_mm_block_t *b)
{
    double *acc = calloc((size_t)b->m.rows * b->m.cols, sizeof(double));
    if (acc)
        spm_mm_block_add_to(b, acc, b->m.rows, b->m.cols);
    return acc;
}

int spm_mm_encode_dense(double *acc, uint32_t rows, uint32_t cols, void **data, size_t *len)
{
    spm_mm_block_t *b = spm_mm_block_from_dense(acc, rows, cols);
    if (!b)
        return spm_error(SPM_ENOMEM, "mm.block: out of memory");
    int rc = spm_mm_block_encode(b, data, len);
    spm_mm_block_destroy(&b);
    return rc;
}

double *spm_mm_acc_new(uint32_t rows, uint32_t cols, const spm_mm_block_t *init)
{
    size_t n = (size_t)rows * cols;
    unsigned char *buf = malloc(SPM_MM_HEADER + n * sizeof(double));
    if (!buf)
        return NULL;
    double *acc = (double *)(void *)(buf + SPM_MM_HEADER);
    if (init && init->m.kind == SPM_MM_DENSE && init->m.rows == rows && init->m.cols == cols) {
        memcpy(acc, init->val, n * sizeof(double));
        return acc;
    }
    memset(acc, 0, n * sizeof(double));
    if (init && spm_mm_block_add_to(init, acc, rows, cols) != 0) {
        free(buf);
        return NULL;
    }
    return acc;
}

void spm_mm_acc_free(double *acc)
{
    if (acc)
        free((unsigned char *)acc - SPM_MM_HEADER);
}

int spm_mm_acc_finish(double *acc, uint32_t rows, uint32_t cols, void **data, size_t *len)
{
    unsigned char *buf = (unsigned char *)acc - SPM_MM_HEADER;
    size_t n = (size_t)rows * cols;
    uint64_t nnz = 0;
    /* x + 0.0 is x, except that -0.0 becomes +0.0 (which validation counts
       as a zero); branch-free, so the loop vectorizes. */
    for (size_t i = 0; i < n; i++) {
        double x = acc[i] + 0.0;
        acc[i] = x;
        nnz += x != 0.0;
    }
    spm_mm_meta_t m = {SPM_MM_DENSE, rows, cols, nnz};
    if (nnz > 0 && (double)nnz >= SPM_MM_SPARSE_FILL * (double)n) {
        if (!HOST_LE)
            put_f64s((unsigned char *)acc, acc, n); /* in place, element by element */
        put_header(buf, &m);
        *data = buf;
        *len = SPM_MM_HEADER + n * sizeof(double);
        return 0;
    }
    m.kind = nnz ? SPM_MM_CSR : SPM_MM_ZERO;
    size_t at = csr_values_at(&m), size = nnz ? at + nnz * 8 : SPM_MM_HEADER;
    unsigned char *p = calloc(1, size);
    if (!p) {
        free(buf);
        return spm_error(SPM_ENOMEM, "mm.block: out of memory");
    }
    put_header(p, &m);
    if (nnz) {
        unsigned char *rp = p + SPM_MM_HEADER, *ci = rp + ((size_t)rows + 1) * 4, *v = p + at;
        uint32_t q = 0;
        spm_put_le32(rp, 0);
        for (uint32_t r = 0; r < rows; r++) {
            const double *row = acc + (size_t)r * cols;
            for (uint32_t c = 0; c < cols; c++)
                if (row[c] != 0.0) {
                    spm_put_le32(ci + 4 * (size_t)q, c);
                    put_f64s(v + 8 * (size_t)q++, &row[c], 1);
                }
            spm_put_le32(rp + 4 * ((size_t)r + 1), q);
        }
    }
    free(buf);
    *data = p;
    *len = size;
    return 0;
}

int spm_mm_block_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                       size_t *outlen)
{
    spm_mm_block_t *x = NULL, *y = NULL;
    double *acc = NULL;
    int rc = spm_mm_block_view(b, blen, &y);
    if (rc != 0)
        goto done;
    if (a && (rc = spm_mm_block_view(a, alen, &x)) != 0)
        goto done;
    if (!(acc = spm_mm_acc_new(y->m.rows, y->m.cols, y))) {
        rc = spm_error(SPM_ENOMEM, "mm.block: out of memory");
        goto done;
    }
    if (x && (rc = spm_mm_block_add_to(x, acc, y->m.rows, y->m.cols)) != 0)
        goto done;
    rc = spm_mm_acc_finish(acc, y->m.rows, y->m.cols, out, outlen);
    acc = NULL;
done:
    spm_mm_acc_free(acc);
    spm_mm_block_destroy(&x);
    spm_mm_block_destroy(&y);
    return rc;
}

void spm_mm_block_summary(const void *data, size_t len, char *buf, size_t size)
{
    static const char *names[] = {"zero", "dense", "csr"};
    spm_mm_meta_t m;
    if (spm_mm_block_meta(data, len, &m) != 0) {
        snprintf(buf, size, "malformed block (%zu bytes)", len);
        return;
    }
    snprintf(buf, size, "%s %" PRIu32 "x%" PRIu32 " nnz %" PRIu64 " (%.1f%%)", names[m.kind],
             m.rows, m.cols, m.nnz, 100.0 * spm_mm_density(&m));
}
