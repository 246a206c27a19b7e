/*  =========================================================================
    cut - the client's side of input: a matrix cut into staged raw blocks
    =========================================================================
*/
#include "programs/matmul/cut.h"
#include "isa/core/codec.h"
#include "isa/matrix/block.h"
#include "isa/matrix/raw.h"
#include "programs/matmul/job.h"
#include "spm/spm.h"

#include <stdlib.h>

#define TICK_MASK 0xffff /* tick every 65536 entries */

struct spm_mm_cutter {
    uint32_t rows, cols; /* matrix shape */
    uint32_t rk, ck;     /* block sides: rows, columns */
    uint32_t nbi, nbj;   /* blocks down and across */
    spm_buf_t *blocks;   /* raw block being built per tile, column-major */
    double **dense;      /* with spm_mm_cutter_dense: each tile's values instead, row-major,
                            with room for a block's header in front (spm_mm_acc_new: a dense
                            tile is handed over in place); NULL until its first entry */
    uint64_t *counts;    /* with spm_mm_cutter_dense: each tile's entries added */
    uint32_t flushed;    /* block columns below this were handed over */
    uint32_t rows_done;  /* block rows below this were handed over */
    uint64_t entries;    /* entries added */
    /* with spm_mm_cutter_dense: the tile the last entry went to, so that
       the next one in it (a column of an array file runs down a tile)
       skips the divisions that find it */
    double *last;              /* its values (NULL: none) */
    uint64_t *last_count;      /* its entry count */
    uint32_t last_r0, last_c0; /* its first row and column */
    uint32_t last_rows, last_cols;
};

spm_mm_cutter_t *spm_mm_cutter_new(uint32_t rows, uint32_t cols, uint32_t rk, uint32_t ck)
{
    spm_mm_cutter_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    *self = (spm_mm_cutter_t){.rows = rows, .cols = cols, .rk = rk, .ck = ck};
    self->nbi = spm_mm_nblocks(rows, rk);
    self->nbj = spm_mm_nblocks(cols, ck);
    self->blocks = calloc((size_t)self->nbi * self->nbj, sizeof(spm_buf_t));
    if (!self->blocks)
        spm_mm_cutter_destroy(&self);
    return self;
}

void spm_mm_cutter_destroy(spm_mm_cutter_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_mm_cutter_t *c = *self_p;
    if (c->blocks)
        for (size_t i = 0; i < (size_t)c->nbi * c->nbj; i++)
            spm_buf_free(&c->blocks[i]);
    if (c->dense)
        for (size_t i = 0; i < (size_t)c->nbi * c->nbj; i++)
            spm_mm_acc_free(c->dense[i]);
    free(c->blocks);
    free(c->dense);
    free(c->counts);
    free(c);
    *self_p = NULL;
}

int spm_mm_cutter_dense(spm_mm_cutter_t *self)
{
    size_t n = (size_t)self->nbi * self->nbj;
    if (!self->dense && !(self->dense = calloc(n, sizeof *self->dense)))
        return spm_error(SPM_ENOMEM, "out of memory");
    if (!self->counts && !(self->counts = calloc(n, sizeof *self->counts)))
        return spm_error(SPM_ENOMEM, "out of memory");
    return 0;
}

/*  spm_mm_cutter_add into the tile's dense array: one store, where a raw
    entry took 16 bytes, a growing buffer's copies and a scatter at the
    end (most of the client's time in cutting a dense file). */
static int add_dense(spm_mm_cutter_t *self, uint32_t row, uint32_t col, double v)
{
    if (self->last && row - self->last_r0 < self->last_rows &&
        col - self->last_c0 < self->last_cols) {
        self->last[(size_t)(row - self->last_r0) * self->last_cols + (col - self->last_c0)] += v;
        (*self->last_count)++;
        self->entries++;
        return 0;
    }
    uint32_t bi = row / self->rk, bj = col / self->ck;
    size_t t = (size_t)bj * self->nbi + bi;
    uint32_t cols = spm_mm_block_side(self->cols, self->ck, bj);
    if (!self->dense[t] &&
        !(self->dense[t] = spm_mm_acc_new(spm_mm_block_side(self->rows, self->rk, bi), cols, NULL)))
        return spm_error(SPM_ENOMEM, "out of memory");
    self->dense[t][(size_t)(row - bi * self->rk) * cols + (col - bj * self->ck)] += v;
    self->counts[t]++;
    self->entries++;
    self->last = self->dense[t];
    self->last_count = &self->counts[t];
    self->last_r0 = bi * self->rk;
    self->last_c0 = bj * self->ck;
    self->last_rows = spm_mm_block_side(self->rows, self->rk, bi);
    self->last_cols = cols;
    return 0;
}

/*  Adds the N values at V from (ROW, COL) on, down a column when DOWN is
    set, else along a row, to the dense tiles they fall in: a loop over
    each tile's part of the run instead of a call an entry. */
static int add_run(spm_mm_cutter_t *self, uint64_t row, uint64_t col, const double *v, size_t n,
                   int down)
{
    while (n > 0) {
        uint32_t bi = (uint32_t)(row / self->rk), bj = (uint32_t)(col / self->ck);
        size_t t = (size_t)bj * self->nbi + bi;
        uint32_t rows = spm_mm_block_side(self->rows, self->rk, bi);
        uint32_t cols = spm_mm_block_side(self->cols, self->ck, bj);
        uint64_t r0 = (uint64_t)bi * self->rk, c0 = (uint64_t)bj * self->ck;
        uint64_t room = down ? r0 + rows - row : c0 + cols - col; /* left in this tile */
        size_t k = n < room ? n : (size_t)room, step = down ? cols : 1;
        uint64_t nz = 0;
        for (size_t q = 0; q < k; q++)
            nz += v[q] != 0.0;
        /* a tile of zeros is never made (not staged), as by
           spm_mm_cutter_add, which drops zeros; a -0.0 added leaves the
           tile's +0.0 as it is */
        if (nz && !self->dense[t] && !(self->dense[t] = spm_mm_acc_new(rows, cols, NULL)))
            return spm_error(SPM_ENOMEM, "out of memory");
        double *dst = nz ? self->dense[t] + (size_t)(row - r0) * cols + (col - c0) : NULL;
        for (size_t q = 0; nz && q < k; q++)
            dst[q * step] += v[q];
        self->counts[t] += nz;
        self->entries += nz;
        v += k;
        n -= k;
        if (down)
            row += k;
        else
            col += k;
    }
    return 0;
}

int spm_mm_cutter_add(spm_mm_cutter_t *self, uint32_t row, uint32_t col, double v)
{
    if (v == 0.0)
        return 0;
    if (self->dense)
        return add_dense(self, row, col, v);
    uint32_t bi = row / self->rk, bj = col / self->ck;
    spm_buf_t *b = &self->blocks[(size_t)bj * self->nbi + bi];
    if (!b->data && spm_mm_raw_init(b, spm_mm_block_side(self->rows, self->rk, bi),
                                    spm_mm_block_side(self->cols, self->ck, bj)) != 0)
        return spm_error(SPM_ENOMEM, "out of memory");
    spm_mm_raw_add(b, row - bi * self->rk, col - bj * self->ck, v);
    self->entries++;
    return b->failed ? spm_error(SPM_ENOMEM, "out of memory") : 0;
}

/*  Hands over the finished raw block B (and empties B): as a typed
    mm.block when spm_mm_staged_typed says so, else raw. */
static int emit_block(spm_buf_t *b, uint32_t bi, uint32_t bj, spm_mm_emit_fn emit, void *arg)
{
    const unsigned char *p = b->data;
    uint64_t count = spm_mm_raw_count(b);
    void *data = NULL;
    size_t len;
    if (!spm_mm_staged_typed(count, spm_le32(p + 4), spm_le32(p + 8)))
        return spm_buf_take(b, &data, &len) == 0 ? emit(arg, bi, bj, data, len, count)
                                                 : spm_error(SPM_ENOMEM, "out of memory");
    spm_mm_block_t *blk = NULL;
    int rc = spm_mm_raw_to_block(b->data, b->len, &blk);
    if (rc == 0 && (rc = spm_mm_block_encode(blk, &data, &len)) == 0)
        rc = emit(arg, bi, bj, data, len, count);
    spm_mm_block_destroy(&blk);
    return rc;
}

/*  Hands over dense tile (BI, BJ) and forgets it: typed when
    spm_mm_staged_typed says so (a dense file's tiles are), else as the raw
    block its entries would have made. */
static int emit_dense(spm_mm_cutter_t *self, uint32_t bi, uint32_t bj, spm_mm_emit_fn emit,
                      void *arg)
{
    size_t t = (size_t)bj * self->nbi + bi;
    double *acc = self->dense[t];
    uint64_t count = self->counts[t];
    self->dense[t] = NULL;
    if (acc == self->last)
        self->last = NULL; /* handed over: the next entry finds its tile anew */
    if (!acc)
        return 0;
    uint32_t rows = spm_mm_block_side(self->rows, self->rk, bi);
    uint32_t cols = spm_mm_block_side(self->cols, self->ck, bj);
    void *data = NULL;
    size_t len;
    int rc;
    if (spm_mm_staged_typed(count, rows, cols)) {
        /* the block is made where the tile lies: a dense one is the tile
           with its header written in front (16 MiB a tile of a dense
           product, copied before) */
        rc = spm_mm_acc_finish(acc, rows, cols, &data, &len); /* takes ACC */
        return rc ? rc : emit(arg, bi, bj, data, len, count);
    }
    spm_buf_t raw = {0};
    rc = spm_mm_raw_init(&raw, rows, cols);
    for (uint32_t r = 0; rc == 0 && r < rows; r++)
        for (uint32_t c = 0; c < cols; c++)
            if (acc[(size_t)r * cols + c] != 0.0)
                spm_mm_raw_add(&raw, r, c, acc[(size_t)r * cols + c]);
    spm_mm_acc_free(acc);
    if (rc == 0 && (rc = spm_mm_raw_finish(&raw)) == 0)
        rc = emit_block(&raw, bi, bj, emit, arg);
    spm_buf_free(&raw);
    return rc;
}

int spm_mm_cutter_flush_cols(spm_mm_cutter_t *self, uint32_t bj_end, spm_mm_emit_fn emit, void *arg)
{
    if (bj_end > self->nbj)
        bj_end = self->nbj;
    for (; self->flushed < bj_end; self->flushed++)
        for (uint32_t bi = 0; bi < self->nbi; bi++) {
            int rc = self->dense ? emit_dense(self, bi, self->flushed, emit, arg) : 0;
            if (rc != 0)
                return rc;
            spm_buf_t *b = &self->blocks[(size_t)self->flushed * self->nbi + bi];
            if (!b->data)
                continue;
            rc = spm_mm_raw_finish(b);
            if (rc == 0)
                rc = emit_block(b, bi, self->flushed, emit, arg);
            spm_buf_free(b);
            if (rc != 0)
                return rc;
        }
    return 0;
}

int spm_mm_cutter_flush_rows(spm_mm_cutter_t *self, uint32_t bi_end, spm_mm_emit_fn emit, void *arg)
{
    if (bi_end > self->nbi)
        bi_end = self->nbi;
    for (; self->rows_done < bi_end; self->rows_done++)
        for (uint32_t bj = self->flushed; bj < self->nbj; bj++) {
            int rc = self->dense ? emit_dense(self, self->rows_done, bj, emit, arg) : 0;
            if (rc != 0)
                return rc;
            spm_buf_t *b = &self->blocks[(size_t)bj * self->nbi + self->rows_done];
            if (!b->data)
                continue;
            rc = spm_mm_raw_finish(b);
            if (rc == 0)
                rc = emit_block(b, self->rows_done, bj, emit, arg);
            spm_buf_free(b);
            if (rc != 0)
                return rc;
        }
    return 0;
}

int spm_mm_cutter_flush(spm_mm_cutter_t *self, spm_mm_emit_fn emit, void *arg)
{
    return spm_mm_cutter_flush_cols(self, self->nbj, emit, arg);
}

uint64_t spm_mm_cutter_entries(const spm_mm_cutter_t *self)
{
    return self->entries;
}

int spm_mm_cut_file(spm_mmio_t *r, uint32_t rk, uint32_t ck, spm_mm_emit_fn emit,
                    spm_mm_tick_fn tick, void *arg)
{
    const spm_mmio_header_t *h = spm_mmio_header(r);
    if (h->rows > UINT32_MAX || h->cols > UINT32_MAX)
        return spm_error(SPM_ERANGE, "%s: %llu x %llu is too large", spm_mmio_path(r),
                         (unsigned long long)h->rows, (unsigned long long)h->cols);
    spm_mm_cutter_t *c = spm_mm_cutter_new((uint32_t)h->rows, (uint32_t)h->cols, rk, ck);
    if (!c)
        return spm_error(SPM_ENOMEM, "out of memory");
    /* an array file (or a .npy) holds every entry: its tiles are filled
       in place */
    if (h->format == SPM_MMIO_ARRAY && spm_mm_cutter_dense(c) != 0) {
        spm_mm_cutter_destroy(&c);
        return SPM_ENOMEM;
    }
    /* a file that comes column by column (a general array file) or row by
       row (a C-order .npy, a CSR .npz): hand over each finished column or
       row of blocks at once */
    spm_mmio_order_t order = spm_mmio_order(r);
    int by_col = order == SPM_MMIO_BY_COLUMN, by_row = order == SPM_MMIO_BY_ROW;
    uint64_t i, j, next_tick = TICK_MASK + 1;
    const double *v;
    size_t n;
    int rc = tick ? tick(arg, 0) : 0;
    /* a run of entries at a time (one, but for a dense .npy), each in one
       column (by_col) or one row: what is flushed before it is known at
       its first */
    while (rc == 0 && (rc = spm_mmio_next_run(r, &i, &j, &v, &n)) == 1) {
        rc = by_col && j / ck > c->flushed
                 ? spm_mm_cutter_flush_cols(c, (uint32_t)(j / ck), emit, arg)
             : by_row && i / rk > c->rows_done
                 ? spm_mm_cutter_flush_rows(c, (uint32_t)(i / rk), emit, arg)
                 : 0;
        if (rc == 0 && c->dense && n > 1)
            rc = add_run(c, i, j, v, n, by_col);
        for (size_t q = 0; rc == 0 && !(c->dense && n > 1) && q < n; q++)
            rc = spm_mm_cutter_add(c, (uint32_t)(i + (by_col ? q : 0)),
                                   (uint32_t)(j + (by_col ? 0 : q)), v[q]);
        if (rc == 0 && tick && spm_mmio_done(r) >= next_tick) {
            next_tick = (spm_mmio_done(r) | TICK_MASK) + 1;
            rc = tick(arg, spm_mmio_done(r));
        }
    }
    if (rc == 0)
        rc = spm_mm_cutter_flush(c, emit, arg);
    spm_mm_cutter_destroy(&c);
    return rc;
}
