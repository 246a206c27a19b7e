/*  =========================================================================
    codec - portable (little-endian) encoding of SDBs, and a growable buffer
    =========================================================================
*/
#include "isa/core/codec.h"
#include "spm/spm.h"

#include <stdlib.h>
#include <string.h>

int spm_buf_reserve(spm_buf_t *b, size_t n)
{
    if (b->failed)
        return SPM_ENOMEM;
    if (b->cap - b->len >= n)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n)
        cap *= 2;
    unsigned char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return SPM_ENOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void spm_buf_put(spm_buf_t *b, const void *data, size_t n)
{
    if (n == 0 || spm_buf_reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

void spm_buf_put_u32(spm_buf_t *b, uint32_t v)
{
    unsigned char tmp[4];
    spm_put_le32(tmp, v);
    spm_buf_put(b, tmp, 4);
}

void spm_buf_put_u64(spm_buf_t *b, uint64_t v)
{
    unsigned char tmp[8];
    spm_put_le64(tmp, v);
    spm_buf_put(b, tmp, 8);
}

void spm_buf_put_f64(spm_buf_t *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    spm_buf_put_u64(b, bits);
}

int spm_buf_take(spm_buf_t *b, void **data, size_t *len)
{
    if (b->failed) {
        spm_buf_free(b);
        return SPM_ENOMEM;
    }
    if (!b->data && spm_buf_reserve(b, 1) != 0)
        return SPM_ENOMEM;
    *data = b->data;
    *len = b->len;
    *b = (spm_buf_t){0};
    return 0;
}

void spm_buf_free(spm_buf_t *b)
{
    free(b->data);
    *b = (spm_buf_t){0};
}

int spm_get_bytes(spm_cursor_t *c, size_t n, const unsigned char **p)
{
    if (spm_cursor_left(c) < n)
        return SPM_EFORMAT;
    *p = c->p;
    c->p += n;
    return 0;
}

int spm_get_u32(spm_cursor_t *c, uint32_t *v)
{
    const unsigned char *p;
    if (spm_get_bytes(c, 4, &p) != 0)
        return SPM_EFORMAT;
    *v = spm_le32(p);
    return 0;
}

int spm_get_u64(spm_cursor_t *c, uint64_t *v)
{
    const unsigned char *p;
    if (spm_get_bytes(c, 8, &p) != 0)
        return SPM_EFORMAT;
    *v = spm_le64(p);
    return 0;
}

int spm_get_f64(spm_cursor_t *c, double *v)
{
    uint64_t bits;
    if (spm_get_u64(c, &bits) != 0)
        return SPM_EFORMAT;
    memcpy(v, &bits, 8);
    return 0;
}
