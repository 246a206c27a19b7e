/*  =========================================================================
    typed - the built-in SDB types every program may use: arrays of doubles
    (spm.f64), of 64-bit integers (spm.i64) and of bytes (spm.bytes)

    @discuss
    Most programs hold arrays, so spm.h names three types and the helpers
    an SI body reads and writes them with (spm_si_f64, spm_si_put_f64, ...),
    and a program defines no encode, decode, validate or merge for them.
    An array is its elements little-endian, with no header: every machine
    spm runs on is little-endian (the plugin loader refuses others), so
    the bytes are the C array and a read is a pointer, copied only when a
    block does not lie on an 8-byte boundary (a block read in place from
    the store may not). The merges add element by element (a histogram or
    a sum accumulated with ACC); bytes append, in issue order.
    isa/core/kcount.c is the fourth built-in type, a key-count table.
    @end
    =========================================================================
*/
#include "runtime/si.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int array_validate(const void *data, size_t len)
{
    (void)data;
    return len % 8 == 0 ? 0 : SPM_EFORMAT;
}

static int bytes_validate(const void *data, size_t len)
{
    (void)data;
    (void)len;
    return 0;
}

/*  The longer of A and B, the other added into it element by element by
    ADD (which knows the element type). */
static int merge_arrays(const void *a, size_t alen, const void *b, size_t blen, void **out,
                        size_t *outlen, void (*add)(void *into, const void *from, size_t n))
{
    if (alen % 8 || blen % 8)
        return spm_error(SPM_EFORMAT, "an array of %zu bytes: not whole 8-byte elements",
                         alen % 8 ? alen : blen);
    size_t n = alen > blen ? alen : blen;
    unsigned char *m = malloc(n ? n : 1);
    if (!m)
        return spm_error(SPM_ENOMEM, "out of memory");
    const void *longer = alen >= blen ? a : b, *shorter = alen >= blen ? b : a;
    if (n)
        memcpy(m, longer, n);
    add(m, shorter, (alen < blen ? alen : blen) / 8);
    *out = m;
    *outlen = n;
    return 0;
}

static void add_f64(void *into, const void *from, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double x, y;
        memcpy(&x, (char *)into + 8 * i, 8);
        memcpy(&y, (const char *)from + 8 * i, 8);
        x += y;
        memcpy((char *)into + 8 * i, &x, 8);
    }
}

static void add_i64(void *into, const void *from, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x, y; /* unsigned: wraps instead of overflowing */
        memcpy(&x, (char *)into + 8 * i, 8);
        memcpy(&y, (const char *)from + 8 * i, 8);
        x += y;
        memcpy((char *)into + 8 * i, &x, 8);
    }
}

static int f64_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                     size_t *outlen)
{
    return merge_arrays(a, alen, b, blen, out, outlen, add_f64);
}

static int i64_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                     size_t *outlen)
{
    return merge_arrays(a, alen, b, blen, out, outlen, add_i64);
}

static int bytes_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                       size_t *outlen)
{
    unsigned char *m = malloc(alen + blen ? alen + blen : 1);
    if (!m)
        return spm_error(SPM_ENOMEM, "out of memory");
    if (alen)
        memcpy(m, a, alen);
    if (blen)
        memcpy(m + alen, b, blen);
    *out = m;
    *outlen = alen + blen;
    return 0;
}

static void f64_summary(const void *data, size_t len, char *buf, size_t size)
{
    (void)data;
    snprintf(buf, size, "%zu doubles", len / 8);
}

static void i64_summary(const void *data, size_t len, char *buf, size_t size)
{
    (void)data;
    snprintf(buf, size, "%zu 64-bit integers", len / 8);
}

static void bytes_summary(const void *data, size_t len, char *buf, size_t size)
{
    (void)data;
    snprintf(buf, size, "%zu bytes", len);
}

/*  Input I of CTX as 8-byte elements, aligned (copied when it is not). */
static int array_input(spm_si_ctx_t *ctx, size_t i, const void **v, size_t *n)
{
    const void *d;
    size_t len;
    if (spm_si_input(ctx, i, &d, &len) != 0)
        return spm_error(SPM_ERANGE, "operand %zu is not one the SI reads", i);
    if (len % 8)
        return spm_error(SPM_EFORMAT, "operand %zu: %zu bytes, not an array of 8-byte elements", i,
                         len);
    *n = len / 8;
    *v = d;
    if (len && (uintptr_t)d % 8) {
        void *copy = malloc(len);
        if (!copy)
            return spm_error(SPM_ENOMEM, "out of memory");
        memcpy(copy, d, len);
        if (spm_si_hold(ctx, copy, free) != 0)
            return SPM_ENOMEM;
        *v = copy;
    }
    if (!len)
        *v = "";
    return 0;
}

int spm_si_f64(spm_si_ctx_t *ctx, size_t i, const double **v, size_t *n)
{
    return array_input(ctx, i, (const void **)v, n);
}

int spm_si_i64(spm_si_ctx_t *ctx, size_t i, const int64_t **v, size_t *n)
{
    return array_input(ctx, i, (const void **)v, n);
}

static int array_output(spm_si_ctx_t *ctx, size_t i, const void *v, size_t n)
{
    void *copy = malloc(n ? n * 8 : 1);
    if (!copy)
        return spm_error(SPM_ENOMEM, "out of memory");
    if (n)
        memcpy(copy, v, n * 8);
    if (spm_si_output(ctx, i, copy, n * 8) != 0)
        return spm_error(SPM_ERANGE, "operand %zu is not one the SI writes", i);
    return 0;
}

int spm_si_put_f64(spm_si_ctx_t *ctx, size_t i, const double *v, size_t n)
{
    return array_output(ctx, i, v, n);
}

int spm_si_put_i64(spm_si_ctx_t *ctx, size_t i, const int64_t *v, size_t n)
{
    return array_output(ctx, i, v, n);
}

SPM_CONSTRUCTOR(typed)
{
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = SPM_F64, .validate = array_validate, .merge = f64_merge, .summary = f64_summary});
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = SPM_I64, .validate = array_validate, .merge = i64_merge, .summary = i64_summary});
    spm_sdb_type_register(&(spm_sdb_type_t){.name = SPM_BYTES,
                                            .validate = bytes_validate,
                                            .merge = bytes_merge,
                                            .summary = bytes_summary});
}
