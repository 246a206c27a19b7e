/*  =========================================================================
    rows - a block row of C written to C.mtx, formatted on two threads
    =========================================================================
*/
#include "programs/matmul/rows.h"
#include "spm/spm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CHUNK_ENTRIES 65536 /* entries of C per chunk, at most (or one row) */

/*  A chunk's text, grown as it is formatted. */
typedef struct {
    char *p;
    size_t len, cap;
    uint64_t entries;
} text_t;

typedef struct {
    spm_mmio_writer_t *w;
    const spm_mm_rows_t *r;
    spm_progress_t *meter;
    uint32_t chunk, nchunks; /* rows per chunk, chunks */
    pthread_mutex_t lock;
    pthread_cond_t turn; /* a chunk was written, or a thread failed */
    uint32_t next;       /* the chunk whose text goes next */
    int rc;              /* the first error: both threads stop */
    char detail[1024];   /* its detail */
} writing_t;

/*  Room for one more line in T. Returns 0 or SPM_ENOMEM. */
static int room(text_t *t)
{
    if (t->cap - t->len >= SPM_MMIO_LINE_MAX)
        return 0;
    size_t cap = t->cap ? 2 * t->cap : (size_t)64 * SPM_MMIO_LINE_MAX;
    char *p = realloc(t->p, cap);
    if (!p)
        return spm_error(SPM_ENOMEM, "out of memory");
    t->p = p;
    t->cap = cap;
    return 0;
}

/*  Appends entry (ROW, COL, V) of C to T. */
static int line(const writing_t *x, text_t *t, uint64_t row, uint64_t col, double v)
{
    if (room(t) != 0)
        return SPM_ENOMEM;
    t->len += spm_mmio_writer_format(x->w, t->p + t->len, row, col, v);
    t->entries++;
    return 0;
}

/*  The block row's row after chunk K's last. */
static uint32_t chunk_end(const writing_t *x, uint32_t k)
{
    uint32_t end = (k + 1) * x->chunk;
    return end < x->r->rows ? end : x->r->rows;
}

/*  Formats the non-zero entries of chunk K into T (emptied first). */
static int format_chunk(const writing_t *x, uint32_t k, text_t *t)
{
    const spm_mm_rows_t *r = x->r;
    uint32_t end = chunk_end(x, k);
    int rc = 0;
    t->len = 0;
    t->entries = 0;
    for (uint32_t y = k * x->chunk; y < end && rc == 0; y++)
        for (uint32_t bj = 0; bj < r->nbj && rc == 0; bj++) {
            const spm_mm_block_t *b = r->blocks[bj];
            uint64_t row = r->row0 + y, col0 = (uint64_t)bj * r->bn;
            if (!b || b->m.kind == SPM_MM_ZERO)
                continue;
            if (b->m.kind == SPM_MM_DENSE) {
                const double *v = b->val + (size_t)y * b->m.cols;
                for (uint32_t c = 0; c < b->m.cols && rc == 0; c++)
                    if (v[c] != 0.0)
                        rc = line(x, t, row, col0 + c, v[c]);
            } else {
                for (uint32_t q = b->rowptr[y]; q < b->rowptr[y + 1] && rc == 0; q++)
                    rc = line(x, t, row, col0 + b->colidx[q], b->val[q]);
            }
        }
    return rc;
}

/*  Formats and writes the chunks FIRST, FIRST + STEP, ... in their turn. */
static void write_chunks(writing_t *x, uint32_t first, uint32_t step)
{
    text_t t = {0};
    for (uint32_t k = first; k < x->nchunks; k += step) {
        int rc = format_chunk(x, k, &t);
        pthread_mutex_lock(&x->lock);
        while (rc == 0 && x->rc == 0 && x->next != k)
            pthread_cond_wait(&x->turn, &x->lock);
        if (rc == 0 && x->rc == 0) {
            rc = spm_mmio_writer_put_text(x->w, t.p, t.len, t.entries);
            if (x->meter)
                spm_progress_set(x->meter, x->r->row0 + chunk_end(x, k));
        }
        if (rc != 0 && x->rc == 0) {
            x->rc = rc;
            snprintf(x->detail, sizeof x->detail, "%s", spm_error_detail());
        }
        x->next = k + 1;
        int stop = x->rc != 0;
        pthread_cond_broadcast(&x->turn);
        pthread_mutex_unlock(&x->lock);
        if (stop)
            break;
    }
    free(t.p);
}

static void *even_chunks(void *arg)
{
    write_chunks(arg, 0, 2);
    return NULL;
}

int spm_mm_write_rows(spm_mmio_writer_t *w, const spm_mm_rows_t *r, spm_progress_t *meter)
{
    uint64_t cols = (uint64_t)r->nbj * r->bn; /* at most */
    uint32_t chunk = cols > 0 && cols < CHUNK_ENTRIES ? (uint32_t)(CHUNK_ENTRIES / cols) : 1;
    writing_t x = {.w = w, .r = r, .meter = meter, .chunk = chunk};
    x.nchunks = (r->rows + chunk - 1) / chunk;
    pthread_mutex_init(&x.lock, NULL);
    pthread_cond_init(&x.turn, NULL);
    pthread_t even;
    int threaded = x.nchunks > 1 && pthread_create(&even, NULL, even_chunks, &x) == 0;
    if (threaded) {
        write_chunks(&x, 1, 2);
        pthread_join(even, NULL);
    } else {
        write_chunks(&x, 0, 1);
    }
    pthread_cond_destroy(&x.turn);
    pthread_mutex_destroy(&x.lock);
    return x.rc ? spm_error(x.rc, "%s", x.detail) : 0;
}
