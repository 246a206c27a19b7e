/*  =========================================================================
    codec - portable (little-endian) encoding of SDBs, and a growable buffer

    @discuss
    Every SDB type encodes to a fixed little-endian layout so that nodes of
    any byte order can exchange blocks. Writers append to an spm_buf_t;
    readers walk an spm_cursor_t that fails (returns SPM_EFORMAT) instead
    of reading past the end, so a truncated or forged block is refused.
    Installed with spm.h (make install) for plugins' own block types.
    @end
    =========================================================================
*/
#ifndef SPM_CODEC_H_INCLUDED
#define SPM_CODEC_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct {
    unsigned char *data; /* malloc'd bytes, owned until taken */
    size_t len;          /* bytes written */
    size_t cap;          /* bytes allocated */
    int failed;          /* an allocation failed: every later put is ignored */
} spm_buf_t;

/*  Ensures room for N more bytes. Returns 0 or SPM_ENOMEM (and marks the buffer failed). */
int spm_buf_reserve(spm_buf_t *b, size_t n);
void spm_buf_put(spm_buf_t *b, const void *data, size_t n);
void spm_buf_put_u32(spm_buf_t *b, uint32_t v);
void spm_buf_put_u64(spm_buf_t *b, uint64_t v);
void spm_buf_put_f64(spm_buf_t *b, double v);

/*  Hands the bytes to the caller (malloc'd; caller frees) and resets B.
    Returns 0, or SPM_ENOMEM if any put failed (nothing is handed over). */
int spm_buf_take(spm_buf_t *b, void **data, size_t *len);

/*  Frees the bytes of B and resets it. */
void spm_buf_free(spm_buf_t *b);

typedef struct {
    const unsigned char *p;   /* next byte to read */
    const unsigned char *end; /* one past the last byte */
} spm_cursor_t;

static inline spm_cursor_t spm_cursor(const void *data, size_t len)
{
    return (spm_cursor_t){(const unsigned char *)data, (const unsigned char *)data + len};
}

/*  Each returns 0, or SPM_EFORMAT when fewer bytes remain than needed. */
int spm_get_u32(spm_cursor_t *c, uint32_t *v);
int spm_get_u64(spm_cursor_t *c, uint64_t *v);
int spm_get_f64(spm_cursor_t *c, double *v);
/*  Points *P at the next N bytes (no copy) and skips them. */
int spm_get_bytes(spm_cursor_t *c, size_t n, const unsigned char **p);

static inline size_t spm_cursor_left(const spm_cursor_t *c)
{
    return (size_t)(c->end - c->p);
}

/*  Raw little-endian accessors for fixed layouts read in place. */
static inline uint32_t spm_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t spm_le64(const unsigned char *p)
{
    return (uint64_t)spm_le32(p) | (uint64_t)spm_le32(p + 4) << 32;
}

static inline void spm_put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static inline void spm_put_le64(unsigned char *p, uint64_t v)
{
    spm_put_le32(p, (uint32_t)v);
    spm_put_le32(p + 4, (uint32_t)(v >> 32));
}

#endif
