/*  =========================================================================
    raw - a staged input block: the entries of one block as a client cut them
    =========================================================================
*/
#include "isa/matrix/raw.h"
#include "spm/spm.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC 0x524d5053u /* "SPMR" */

int spm_mm_raw_init(spm_buf_t *b, uint32_t rows, uint32_t cols)
{
    spm_buf_put_u32(b, MAGIC);
    spm_buf_put_u32(b, rows);
    spm_buf_put_u32(b, cols);
    spm_buf_put_u32(b, 0);
    spm_buf_put_u64(b, 0);
    return b->failed ? SPM_ENOMEM : 0;
}

void spm_mm_raw_add(spm_buf_t *b, uint32_t row, uint32_t col, double v)
{
    if (spm_buf_reserve(b, SPM_MM_RAW_ENTRY) != 0)
        return;
    unsigned char *p = b->data + b->len;
    uint64_t bits;
    memcpy(&bits, &v, 8);
    spm_put_le32(p, row);
    spm_put_le32(p + 4, col);
    spm_put_le64(p + 8, bits);
    b->len += SPM_MM_RAW_ENTRY;
}

uint64_t spm_mm_raw_count(const spm_buf_t *b)
{
    return b->len < SPM_MM_RAW_HEADER ? 0 : (b->len - SPM_MM_RAW_HEADER) / SPM_MM_RAW_ENTRY;
}

int spm_mm_raw_finish(spm_buf_t *b)
{
    if (b->failed || b->len < SPM_MM_RAW_HEADER)
        return spm_error(SPM_ENOMEM, "mm.raw: out of memory");
    spm_put_le64(b->data + 16, spm_mm_raw_count(b));
    return 0;
}

int spm_mm_raw_is(const void *data, size_t len)
{
    return data && len >= 4 && spm_le32(data) == MAGIC;
}

int spm_mm_raw_validate(const void *data, size_t len)
{
    const unsigned char *p = data;
    if (!data || len < SPM_MM_RAW_HEADER || spm_le32(p) != MAGIC)
        return spm_error(SPM_EFORMAT, "mm.raw: bad header");
    uint32_t rows = spm_le32(p + 4), cols = spm_le32(p + 8);
    uint64_t count = spm_le64(p + 16);
    if (rows == 0 || cols == 0 || rows > SPM_MM_MAX_DIM || cols > SPM_MM_MAX_DIM ||
        spm_le32(p + 12) != 0)
        return spm_error(SPM_EFORMAT, "mm.raw: bad shape");
    if ((len - SPM_MM_RAW_HEADER) % SPM_MM_RAW_ENTRY != 0 ||
        (len - SPM_MM_RAW_HEADER) / SPM_MM_RAW_ENTRY != count)
        return spm_error(SPM_EFORMAT, "mm.raw: length does not match %" PRIu64 " entries", count);
    for (uint64_t i = 0; i < count; i++) {
        const unsigned char *e = p + SPM_MM_RAW_HEADER + i * SPM_MM_RAW_ENTRY;
        if (spm_le32(e) >= rows || spm_le32(e + 4) >= cols)
            return spm_error(SPM_EFORMAT, "mm.raw: entry %" PRIu64 " out of range", i);
    }
    return 0;
}

/*  One entry of a row being built: its column and value. */
typedef struct {
    uint32_t col;
    double v;
} entry_t;

/*  Sorts a row's N entries by column: insertion sort for the short rows
    sparse blocks have, qsort beyond. */
static int cmp_entry(const void *a, const void *b)
{
    uint32_t x = ((const entry_t *)a)->col, y = ((const entry_t *)b)->col;
    return x < y ? -1 : x > y;
}

static void sort_row(entry_t *e, uint32_t n)
{
    if (n > 32) {
        qsort(e, n, sizeof *e, cmp_entry);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        entry_t x = e[i];
        uint32_t j = i;
        for (; j > 0 && e[j - 1].col > x.col; j--)
            e[j] = e[j - 1];
        e[j] = x;
    }
}

/*  The CSR form of COUNT entries that fill less than a block: bucketed by
    row, each row sorted by column, duplicates summed and zeros dropped. */
static spm_mm_block_t *raw_to_csr(const unsigned char *p, uint32_t rows, uint32_t cols,
                                  uint64_t count)
{
    spm_mm_block_t *b = spm_mm_block_new(SPM_MM_CSR, rows, cols, count);
    entry_t *e = malloc((size_t)count * sizeof *e + 1);
    uint32_t *at = calloc((size_t)rows + 1, 4);
    if (!b || !e || !at) {
        spm_mm_block_destroy(&b);
        free(e);
        free(at);
        return NULL;
    }
    for (uint64_t i = 0; i < count; i++)
        at[spm_le32(p + SPM_MM_RAW_HEADER + i * SPM_MM_RAW_ENTRY) + 1]++;
    for (uint32_t r = 0; r < rows; r++)
        at[r + 1] += at[r];
    for (uint64_t i = 0; i < count; i++) {
        const unsigned char *x = p + SPM_MM_RAW_HEADER + i * SPM_MM_RAW_ENTRY;
        uint64_t bits = spm_le64(x + 8);
        entry_t *y = &e[at[spm_le32(x)]++];
        y->col = spm_le32(x + 4);
        memcpy(&y->v, &bits, 8);
    }
    uint32_t q = 0, start = 0; /* at[r] is now the end of row r */
    for (uint32_t r = 0; r < rows; r++) {
        sort_row(e + start, at[r] - start);
        for (uint32_t i = start; i < at[r];) {
            uint32_t c = e[i].col;
            double v = 0;
            for (; i < at[r] && e[i].col == c; i++)
                v += e[i].v;
            if (v != 0.0) {
                b->colidx[q] = c;
                b->val[q++] = v;
            }
        }
        b->rowptr[r + 1] = q;
        start = at[r];
    }
    free(e);
    free(at);
    b->m.nnz = q;
    if (q == 0)
        b->m.kind = SPM_MM_ZERO;
    return b;
}

int spm_mm_raw_to_block(const void *data, size_t len, spm_mm_block_t **out)
{
    int rc = spm_mm_raw_validate(data, len);
    if (rc != 0)
        return rc;
    const unsigned char *p = data;
    uint32_t rows = spm_le32(p + 4), cols = spm_le32(p + 8);
    uint64_t count = spm_le64(p + 16);
    if ((double)count < SPM_MM_SPARSE_FILL * (double)rows * (double)cols) {
        *out = raw_to_csr(p, rows, cols, count);
        return *out ? 0 : spm_error(SPM_ENOMEM, "mm.raw: out of memory");
    }
    double *acc = calloc((size_t)rows * cols, sizeof(double));
    if (!acc)
        return spm_error(SPM_ENOMEM, "mm.raw: out of memory");
    for (uint64_t i = 0; i < count; i++) {
        const unsigned char *e = p + SPM_MM_RAW_HEADER + i * SPM_MM_RAW_ENTRY;
        uint64_t bits = spm_le64(e + 8);
        double v;
        memcpy(&v, &bits, 8);
        acc[(size_t)spm_le32(e) * cols + spm_le32(e + 4)] += v;
    }
    *out = spm_mm_block_from_dense(acc, rows, cols);
    return *out ? 0 : spm_error(SPM_ENOMEM, "mm.raw: out of memory");
}
