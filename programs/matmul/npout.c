/*  =========================================================================
    npout - C written as SciPy's sparse .npz or NumPy's dense .npy
    =========================================================================
*/
#include "programs/matmul/npout.h"
#include "isa/core/codec.h"
#include "isa/core/npz.h"
#include "spm/spm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entries (and row pointers) gathered before they are put: 1 MiB of values. */
#define BATCH 131072
#define LITTLE (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

struct spm_mm_npout {
    spm_mm_out_format_t format; /* NPZ or NPY */
    FILE *f;                    /* .npy: the output's stream */
    double *seg;                /* .npy: one block's part of a row */
    uint64_t m, n;              /* C's shape */
    uint64_t nnz;               /* .npz: the entries declared */
    spm_npz_writer_t *w;        /* .npz: the archive */
    int mptr, midx, mval;       /* its members: indptr, indices, data */
    int wide;                   /* int64 indices (else int32) */
    uint64_t done;              /* entries added (put, or in the batch) */
    unsigned char *idx, *val;   /* a batch of entries: indices, values (little-endian) */
    unsigned char *ptr;         /* a batch of row pointers */
    size_t fill, pfill;         /* entries, pointers in them */
};

spm_mm_out_format_t spm_mm_out_format(const char *path)
{
    size_t n = strlen(path);
    if (n >= 4 && strcmp(path + n - 4, ".npz") == 0)
        return SPM_MM_OUT_NPZ;
    if (n >= 4 && strcmp(path + n - 4, ".npy") == 0)
        return SPM_MM_OUT_NPY;
    return SPM_MM_OUT_MTX;
}

int spm_mm_out_format_parse(const char *s, spm_mm_out_format_t *f)
{
    if (strcmp(s, "mtx") == 0)
        *f = SPM_MM_OUT_MTX;
    else if (strcmp(s, "npz") == 0)
        *f = SPM_MM_OUT_NPZ;
    else if (strcmp(s, "npy") == 0)
        *f = SPM_MM_OUT_NPY;
    else
        return spm_error(SPM_EINVAL, "--format: '%s' is not mtx, npz or npy", s);
    return 0;
}

/*  N doubles from SRC to DST, little-endian. */
static void store_f64(unsigned char *dst, const double *src, size_t n)
{
#if LITTLE
    memcpy(dst, src, n * 8);
#else
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, src + i, 8);
        spm_put_le64(dst + 8 * i, v);
    }
#endif
}

/*  Index V at slot I of a batch of int32 or int64. */
static inline void store_index(unsigned char *batch, int wide, size_t i, uint64_t v)
{
#if LITTLE
    if (wide) {
        int64_t x = (int64_t)v;
        memcpy(batch + 8 * i, &x, 8);
    } else {
        int32_t x = (int32_t)v;
        memcpy(batch + 4 * i, &x, 4);
    }
#else
    if (wide)
        spm_put_le64(batch + 8 * i, v);
    else
        spm_put_le32(batch + 4 * i, (uint32_t)v);
#endif
}

static int put_entries(spm_mm_npout_t *o)
{
    int rc = 0;
    if (o->fill &&
        (rc = spm_npz_writer_put(o->w, o->midx, o->idx, o->fill * (o->wide ? 8 : 4))) == 0)
        rc = spm_npz_writer_put(o->w, o->mval, o->val, o->fill * 8);
    o->fill = 0;
    return rc;
}

static int put_pointers(spm_mm_npout_t *o)
{
    int rc = o->pfill ? spm_npz_writer_put(o->w, o->mptr, o->ptr, o->pfill * (o->wide ? 8 : 4)) : 0;
    o->pfill = 0;
    return rc;
}

/*  Ends a row: its pointer, the entries so far. */
static int end_row(spm_mm_npout_t *o)
{
    store_index(o->ptr, o->wide, o->pfill++, o->done);
    return o->pfill == BATCH ? put_pointers(o) : 0;
}

static int open_npz(spm_mm_npout_t *o, spm_outfile_t *out)
{
    uint64_t two = 2;
    unsigned char sides[16];
    spm_put_le64(sides, o->m);
    spm_put_le64(sides + 8, o->n);
    const char *index = o->wide ? "<i8" : "<i4";
    spm_npy_t fmt, dims, ptr, idx, val;
    int rc;
    if (!(o->w = spm_npz_writer_new(out)) || !(o->idx = malloc(BATCH * 8)) ||
        !(o->val = malloc(BATCH * 8)) || !(o->ptr = malloc(BATCH * 8)))
        return spm_error(SPM_ENOMEM, "out of memory");
    if ((rc = spm_npy_set(&fmt, "|S3", 0, NULL)) != 0 ||
        (rc = spm_npy_set(&dims, "<i8", 1, &two)) != 0 ||
        (rc = spm_npy_set(&ptr, index, 1, (uint64_t[]){o->m + 1})) != 0 ||
        (rc = spm_npy_set(&idx, index, 1, &o->nnz)) != 0 ||
        (rc = spm_npy_set(&val, "<f8", 1, &o->nnz)) != 0)
        return rc;
    if ((rc = spm_npz_writer_array(o->w, "format", &fmt, "csr")) != 0 ||
        (rc = spm_npz_writer_array(o->w, "shape", &dims, sides)) != 0)
        return rc;
    if ((o->mptr = spm_npz_writer_add(o->w, "indptr", &ptr, 0)) < 0)
        return o->mptr;
    if ((o->midx = spm_npz_writer_add(o->w, "indices", &idx, 0)) < 0)
        return o->midx;
    if ((o->mval = spm_npz_writer_add(o->w, "data", &val, 0)) < 0)
        return o->mval;
    return end_row(o); /* indptr[0] = 0 */
}

static int open_npy(spm_mm_npout_t *o, spm_outfile_t *out)
{
    spm_npy_t a;
    char head[SPM_NPY_WRITTEN_MAX];
    int rc = spm_npy_set(&a, "<f8", 2, (uint64_t[]){o->m, o->n});
    if (rc != 0)
        return rc;
    o->f = spm_outfile_stream(out);
    size_t len = spm_npy_header(&a, 0, head);
    if (fwrite(head, 1, len, o->f) != len)
        return spm_error(SPM_EIO, "writing C failed: %s", strerror(errno));
    return 0;
}

spm_mm_npout_t *spm_mm_npout_open(spm_outfile_t *out, spm_mm_out_format_t format, uint64_t m,
                                  uint64_t n, uint64_t nnz)
{
    spm_mm_npout_t *o = calloc(1, sizeof *o);
    if (!o) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    *o = (spm_mm_npout_t){.format = format, .m = m, .n = n, .nnz = nnz};
    uint64_t most = nnz > m ? nnz : m;
    o->wide = (most > n ? most : n) > INT32_MAX;
    if ((format == SPM_MM_OUT_NPZ ? open_npz(o, out) : open_npy(o, out)) != 0)
        spm_mm_npout_destroy(&o);
    return o;
}

/*  Adds the CNT entries of a CSR block's row, columns COLS (plus COL0)
    and values V, to the batch. */
static int add_sparse(spm_mm_npout_t *o, const uint32_t *cols, const double *v, size_t cnt,
                      uint64_t col0)
{
    int rc = 0;
    while (cnt > 0 && rc == 0) {
        size_t take = cnt < BATCH - o->fill ? cnt : BATCH - o->fill;
        store_f64(o->val + 8 * o->fill, v, take);
        if (o->wide)
            for (size_t k = 0; k < take; k++)
                store_index(o->idx, 1, o->fill + k, col0 + cols[k]);
        else
            for (size_t k = 0; k < take; k++)
                store_index(o->idx, 0, o->fill + k, col0 + cols[k]);
        o->fill += take;
        o->done += take;
        cols += take;
        v += take;
        cnt -= take;
        if (o->fill == BATCH)
            rc = put_entries(o);
    }
    return rc;
}

/*  Adds the non-zeros of a dense block's row of N values V (plus COL0). */
static int add_dense(spm_mm_npout_t *o, const double *v, uint32_t n, uint64_t col0)
{
    int rc = 0;
    for (uint32_t c = 0; c < n && rc == 0; c++)
        if (v[c] != 0.0) {
            store_f64(o->val + 8 * o->fill, v + c, 1);
            store_index(o->idx, o->wide, o->fill++, col0 + c);
            o->done++;
            if (o->fill == BATCH)
                rc = put_entries(o);
        }
    return rc;
}

static int npz_rows(spm_mm_npout_t *o, const spm_mm_rows_t *r)
{
    int rc = 0;
    for (uint32_t y = 0; y < r->rows && rc == 0; y++) {
        for (uint32_t bj = 0; bj < r->nbj && rc == 0; bj++) {
            const spm_mm_block_t *b = r->blocks[bj];
            uint64_t col0 = (uint64_t)bj * r->bn;
            if (!b || b->m.kind == SPM_MM_ZERO)
                continue;
            if (b->m.kind == SPM_MM_DENSE)
                rc = add_dense(o, b->val + (size_t)y * b->m.cols, b->m.cols, col0);
            else
                rc = add_sparse(o, b->colidx + b->rowptr[y], b->val + b->rowptr[y],
                                b->rowptr[y + 1] - b->rowptr[y], col0);
        }
        if (rc == 0 && o->done > o->nnz)
            rc = spm_error(SPM_ERANGE, "C has more entries than its blocks' headers count");
        if (rc == 0)
            rc = end_row(o);
    }
    return rc;
}

static int npy_rows(spm_mm_npout_t *o, const spm_mm_rows_t *r)
{
    if (!o->seg && !(o->seg = calloc(r->bn ? r->bn : 1, 8)))
        return spm_error(SPM_ENOMEM, "out of memory");
    for (uint32_t y = 0; y < r->rows; y++)
        for (uint32_t bj = 0; bj < r->nbj; bj++) {
            const spm_mm_block_t *b = r->blocks[bj];
            uint64_t col0 = (uint64_t)bj * r->bn;
            size_t w = o->n - col0 < r->bn ? (size_t)(o->n - col0) : r->bn;
            const double *row = o->seg;
            if (b && b->m.kind == SPM_MM_DENSE && LITTLE) {
                row = b->val + (size_t)y * b->m.cols; /* as it is */
            } else if (b && b->m.kind == SPM_MM_DENSE) {
                store_f64((unsigned char *)o->seg, b->val + (size_t)y * b->m.cols, w);
            } else if (b && b->m.kind == SPM_MM_CSR) {
                for (uint32_t q = b->rowptr[y]; q < b->rowptr[y + 1]; q++)
                    store_f64((unsigned char *)(o->seg + b->colidx[q]), b->val + q, 1);
            }
            fwrite_unlocked(row, 8, w, o->f);
            if (b && b->m.kind == SPM_MM_CSR) /* the segment is all zeros again */
                for (uint32_t q = b->rowptr[y]; q < b->rowptr[y + 1]; q++)
                    o->seg[b->colidx[q]] = 0.0;
        }
    return ferror(o->f) ? spm_error(SPM_EIO, "writing C failed: %s", strerror(errno)) : 0;
}

int spm_mm_npout_rows(spm_mm_npout_t *o, const spm_mm_rows_t *r, spm_progress_t *meter)
{
    int rc = o->format == SPM_MM_OUT_NPZ ? npz_rows(o, r) : npy_rows(o, r);
    if (rc == 0 && meter)
        spm_progress_set(meter, r->row0 + r->rows);
    return rc;
}

int spm_mm_npout_close(spm_mm_npout_t **op)
{
    spm_mm_npout_t *o = *op;
    int rc = 0;
    if (o->format == SPM_MM_OUT_NPZ) {
        if ((rc = put_entries(o)) == 0 && (rc = put_pointers(o)) == 0 && o->done != o->nnz)
            rc = spm_error(SPM_ERANGE, "C has %llu entries, not the %llu its blocks' headers count",
                           (unsigned long long)o->done, (unsigned long long)o->nnz);
        int crc = spm_npz_writer_close(&o->w);
        rc = rc ? rc : crc;
    } else if (fflush(o->f) != 0 || ferror(o->f)) {
        rc = spm_error(SPM_EIO, "writing C failed: %s", strerror(errno));
    }
    spm_mm_npout_destroy(op);
    return rc;
}

void spm_mm_npout_destroy(spm_mm_npout_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_mm_npout_t *o = *self_p;
    spm_npz_writer_destroy(&o->w);
    free(o->seg);
    free(o->idx);
    free(o->val);
    free(o->ptr);
    free(o);
    *self_p = NULL;
}
