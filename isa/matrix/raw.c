/*  =========================================================================
    raw - a staged input block: the entries of one block as a client cut them
    =========================================================================
*/
#include "isa/matrix/raw.h"
#include "vm/spm.h"

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

int spm_mm_raw_to_block(const void *data, size_t len, spm_mm_block_t **out)
{
    int rc = spm_mm_raw_validate(data, len);
    if (rc != 0)
        return rc;
    const unsigned char *p = data;
    uint32_t rows = spm_le32(p + 4), cols = spm_le32(p + 8);
    uint64_t count = spm_le64(p + 16);
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
