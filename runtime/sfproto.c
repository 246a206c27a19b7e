/*  =========================================================================
    sfproto - the encoding of the center's talk with a super-function host
    (see sfproto.h)
    =========================================================================
*/
#include "runtime/sfproto.h"

#include "base/grow.h"

#include <stdlib.h>
#include <string.h>

const spm_sf_ops_t *spm_sf_ops;

void sfp_put_raw(sfp_buf_t *b, const void *d, size_t n)
{
    while (!b->full && b->cap < b->n + n)
        b->full = spm_grow(&b->p, b->cap, &b->cap, 1, 256) != 0;
    if (b->full || !n)
        return;
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

void sfp_put_u8(sfp_buf_t *b, uint8_t v)
{
    sfp_put_raw(b, &v, 1);
}

void sfp_put_uv(sfp_buf_t *b, uint64_t v)
{
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        v >>= 7;
    } while (v);
    sfp_put_raw(b, t, k);
}

void sfp_put_sv(sfp_buf_t *b, int64_t v)
{
    sfp_put_uv(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void sfp_put_bytes(sfp_buf_t *b, const void *d, size_t n)
{
    sfp_put_uv(b, n);
    sfp_put_raw(b, d, n);
}

size_t sfp_frame_begin(sfp_buf_t *b)
{
    size_t at = b->n;
    sfp_put_raw(b, "\0\0\0\0", 4);
    return at;
}

void sfp_frame_end(sfp_buf_t *b, size_t at)
{
    if (b->full)
        return;
    uint32_t len = (uint32_t)(b->n - at - 4);
    for (int i = 0; i < 4; i++)
        b->p[at + (size_t)i] = (uint8_t)(len >> (8 * i));
}

void sfp_buf_free(sfp_buf_t *b)
{
    free(b->p);
    *b = (sfp_buf_t){0};
}

uint8_t sfp_get_u8(sfp_rd_t *r)
{
    if (r->pos >= r->n) {
        r->bad = 1;
        return 0;
    }
    return r->p[r->pos++];
}

uint64_t sfp_get_uv(sfp_rd_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->pos >= r->n) {
            r->bad = 1;
            return 0;
        }
        uint8_t c = r->p[r->pos++];
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

int64_t sfp_get_sv(sfp_rd_t *r)
{
    uint64_t u = sfp_get_uv(r);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

size_t sfp_get_bytes(sfp_rd_t *r, const void **d)
{
    uint64_t n = sfp_get_uv(r);
    if (r->bad || n > r->n - r->pos) {
        r->bad = 1;
        *d = NULL;
        return 0;
    }
    *d = r->p + r->pos;
    r->pos += n;
    return (size_t)n;
}

size_t sfp_frame_next(const uint8_t *p, size_t len, const uint8_t **payload, size_t *plen)
{
    if (len < 4)
        return 0;
    uint32_t n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (len - 4 < n)
        return 0;
    *payload = p + 4;
    *plen = n;
    return 4 + (size_t)n;
}
