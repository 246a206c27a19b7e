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
    uint32_t flushed;    /* block columns below this were handed over */
    uint32_t rows_done;  /* block rows below this were handed over */
    uint64_t entries;    /* entries added */
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

void spm_mm_cutter_destroy(spm_mm_cutter_t **self)
{
    if (!self || !*self)
        return;
    spm_mm_cutter_t *c = *self;
    if (c->blocks)
        for (size_t i = 0; i < (size_t)c->nbi * c->nbj; i++)
            spm_buf_free(&c->blocks[i]);
    free(c->blocks);
    free(c);
    *self = NULL;
}

int spm_mm_cutter_add(spm_mm_cutter_t *self, uint32_t row, uint32_t col, double v)
{
    if (v == 0.0)
        return 0;
    uint32_t bi = row / self->rk, bj = col / self->ck;
    spm_buf_t *b = &self->blocks[(size_t)bj * self->nbi + bi];
    if (!b->data && spm_mm_raw_init(b, spm_mm_block_side(self->rows, self->rk, bi),
                                    spm_mm_block_side(self->cols, self->ck, bj)) != 0)
        return spm_error(SPM_ENOMEM, "out of memory");
    spm_mm_raw_add(b, row - bi * self->rk, col - bj * self->ck, v);
    self->entries++;
    return b->failed ? spm_error(SPM_ENOMEM, "out of memory") : 0;
}

/*  Hands over the finished raw block B: as a typed mm.block when
    spm_mm_staged_typed says so, else raw. */
static int emit_block(const spm_buf_t *b, uint32_t bi, uint32_t bj, spm_mm_emit_fn emit, void *arg)
{
    const unsigned char *p = b->data;
    uint64_t count = spm_mm_raw_count(b);
    if (!spm_mm_staged_typed(count, spm_le32(p + 4), spm_le32(p + 8)))
        return emit(arg, bi, bj, b->data, b->len, count);
    spm_mm_block_t *blk = NULL;
    void *data = NULL;
    size_t len;
    int rc = spm_mm_raw_to_block(b->data, b->len, &blk);
    if (rc == 0 && (rc = spm_mm_block_encode(blk, &data, &len)) == 0)
        rc = emit(arg, bi, bj, data, len, count);
    free(data);
    spm_mm_block_destroy(&blk);
    return rc;
}

int spm_mm_cutter_flush_cols(spm_mm_cutter_t *self, uint32_t bj_end, spm_mm_emit_fn emit, void *arg)
{
    if (bj_end > self->nbj)
        bj_end = self->nbj;
    for (; self->flushed < bj_end; self->flushed++)
        for (uint32_t bi = 0; bi < self->nbi; bi++) {
            spm_buf_t *b = &self->blocks[(size_t)self->flushed * self->nbi + bi];
            if (!b->data)
                continue;
            int rc = spm_mm_raw_finish(b);
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
            spm_buf_t *b = &self->blocks[(size_t)bj * self->nbi + self->rows_done];
            if (!b->data)
                continue;
            int rc = spm_mm_raw_finish(b);
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
    /* a file that comes column by column (a general array file) or row by
       row (a C-order .npy, a CSR .npz): hand over each finished column or
       row of blocks at once */
    spm_mmio_order_t order = spm_mmio_order(r);
    int by_col = order == SPM_MMIO_BY_COLUMN, by_row = order == SPM_MMIO_BY_ROW;
    uint64_t i, j;
    double v;
    int rc = tick ? tick(arg, 0) : 0;
    while (rc == 0 && (rc = spm_mmio_next(r, &i, &j, &v)) == 1) {
        rc = by_col && j / ck > c->flushed
                 ? spm_mm_cutter_flush_cols(c, (uint32_t)(j / ck), emit, arg)
             : by_row && i / rk > c->rows_done
                 ? spm_mm_cutter_flush_rows(c, (uint32_t)(i / rk), emit, arg)
                 : 0;
        if (rc == 0)
            rc = spm_mm_cutter_add(c, (uint32_t)i, (uint32_t)j, v);
        if (rc == 0 && tick && (spm_mmio_done(r) & TICK_MASK) == 0)
            rc = tick(arg, spm_mmio_done(r));
    }
    if (rc == 0)
        rc = spm_mm_cutter_flush(c, emit, arg);
    spm_mm_cutter_destroy(&c);
    return rc;
}
