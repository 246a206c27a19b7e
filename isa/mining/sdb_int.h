/*  =========================================================================
    sdb_int - what the two files of mining block types share: each type's
    magic number and the checked readers and writers of their fields

    Static inline, so that each file keeps its hot loops (decoding a block
    of transactions, walking the front-coded sets) free of calls across
    files.
    =========================================================================
*/
#ifndef SPM_MINING_SDB_INT_H_INCLUDED
#define SPM_MINING_SDB_INT_H_INCLUDED

#include "isa/core/codec.h"
#include "spm/spm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC_ITEMS 0x4d49544du /* "MITM" */
#define MAGIC_TRANS 0x4d545243u /* "MTRC" (columnar) */
#define MAGIC_JOIN 0x4d4a4f4eu  /* "MJON" */
#define MAGIC_CANDS 0x4d43414eu /* "MCAN" */
#define MAGIC_FSETS 0x4d465354u /* "MFST" */
#define MAGIC_RULES 0x4d52554cu /* "MRUL" */
#define MAGIC_ISETS 0x4d495354u /* "MIST" */
#define MAGIC_TEXT 0x4d545854u  /* "MTXT" */
#define MAGIC_FILE 0x4d46494cu  /* "MFIL" */

/*  Reads the magic and a count field, checking both. */
static inline int get_head(spm_cursor_t *c, uint32_t magic, const char *type)
{
    uint32_t m;
    if (spm_get_u32(c, &m) != 0 || m != magic)
        return spm_error(SPM_EFORMAT, "%s: bad magic (not a block of this type)", type);
    return 0;
}

static inline int get_count(spm_cursor_t *c, const char *type, const char *what, uint32_t max,
                            uint32_t *v)
{
    if (spm_get_u32(c, v) != 0)
        return spm_error(SPM_EFORMAT, "%s: truncated block", type);
    if (*v > max)
        return spm_error(SPM_EFORMAT, "%s: %u %s, over the bound of %u", type, *v, what, max);
    return 0;
}

/*  Copies N little-endian u32 from P into A: one memcpy on a little-endian
    host, which is where block decoding spends its time. */
static inline void copy_le32(uint32_t *a, const unsigned char *p, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(a, p, n * 4);
#else
    for (size_t i = 0; i < n; i++)
        a[i] = spm_le32(p + 4 * i);
#endif
}

/*  Reads N u32 into A (allocated here, N may be 0). */
static inline int get_u32s(spm_cursor_t *c, const char *type, size_t n, uint32_t **a)
{
    if (spm_cursor_left(c) / 4 < n)
        return spm_error(SPM_EFORMAT, "%s: truncated block", type);
    *a = malloc((n ? n : 1) * sizeof **a);
    if (!*a)
        return spm_error(SPM_ENOMEM, "%s: out of memory", type);
    copy_le32(*a, c->p, n);
    c->p += n * 4;
    return 0;
}

static inline int get_u64s(spm_cursor_t *c, const char *type, size_t n, uint64_t **a)
{
    if (spm_cursor_left(c) / 8 < n)
        return spm_error(SPM_EFORMAT, "%s: truncated block", type);
    *a = malloc((n ? n : 1) * sizeof **a);
    if (!*a)
        return spm_error(SPM_ENOMEM, "%s: out of memory", type);
    for (size_t i = 0; i < n; i++, c->p += 8)
        (*a)[i] = spm_le64(c->p);
    return 0;
}

static inline int get_end(const spm_cursor_t *c, const char *type)
{
    if (spm_cursor_left(c) != 0)
        return spm_error(SPM_EFORMAT, "%s: %zu trailing bytes", type, spm_cursor_left(c));
    return 0;
}

static inline void put_u32s(spm_buf_t *b, const uint32_t *a, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    spm_buf_put(b, a, n * 4);
#else
    for (size_t i = 0; i < n; i++)
        spm_buf_put_u32(b, a[i]);
#endif
}

static inline void put_u64s(spm_buf_t *b, const uint64_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spm_buf_put_u64(b, a[i]);
}

/*  1 when the N items at A are strictly increasing. */
static inline int increasing(const uint32_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (a[i - 1] >= a[i])
            return 0;
    return 1;
}

/*  How many of the N - 1 neighbours in A do not increase: four pairs at a
    time, with no branch on them. */
static inline size_t not_increasing(const uint32_t *a, size_t n)
{
    typedef uint32_t v4_t __attribute__((vector_size(16)));
    v4_t down = {0};
    size_t i = 1, k = 0;
    for (; i + 4 <= n; i += 4) {
        v4_t x, y;
        memcpy(&x, a + i - 1, sizeof x);
        memcpy(&y, a + i, sizeof y);
        down -= (v4_t)(x >= y); /* a true lane is all ones: -1 */
    }
    for (; i < n; i++)
        k += a[i - 1] >= a[i];
    return k + down[0] + down[1] + down[2] + down[3];
}

#endif
