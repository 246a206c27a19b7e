/*  =========================================================================
    npy - NumPy's .npy format: the header that describes an array

    The dict is a Python literal, which NumPy writes with repr() and reads
    with ast.literal_eval. The parser here takes what NumPy and other
    writers put there (either quote, blanks anywhere, a trailing comma,
    Python 2's 'L' suffix on a shape's numbers) and nothing else: a header
    it cannot read is refused, never guessed at.
    =========================================================================
*/
#include "isa/core/npy.h"
#include "spm/spm.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

#define LIMIT (UINT64_C(1) << 63) /* counts and sizes stay below this */

/*  The kind and element size of dtype D (NUL-terminated). */
static void descr_kind(const char *d, spm_npy_kind_t *kind, uint64_t *itemsize)
{
    *kind = SPM_NPY_OTHER;
    *itemsize = 0;
    char order = d[0], type = order ? d[1] : 0;
    uint64_t n = 0;
    const char *p = order && type ? d + 2 : d;
    if (!order || !type || *p < '0' || *p > '9')
        return;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (uint64_t)(*p - '0')) > UINT32_MAX)
            return;
    if (*p || n == 0)
        return;
    int little = order == '<' || (order == '=' && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
    if (type == 'S' && (order == '|' || little)) {
        *kind = SPM_NPY_BYTES;
        *itemsize = n;
    } else if (type == 'U' && little) {
        *kind = SPM_NPY_UNICODE;
        *itemsize = 4 * n;
    } else if (little && n == 8 && (type == 'f' || type == 'i' || type == 'u')) {
        *kind = type == 'f' ? SPM_NPY_F8 : type == 'i' ? SPM_NPY_I8 : SPM_NPY_U8;
        *itemsize = 8;
    } else if (little && n == 4 && (type == 'i' || type == 'u')) {
        *kind = type == 'i' ? SPM_NPY_I4 : SPM_NPY_U4;
        *itemsize = 4;
    }
}

int spm_npy_set(spm_npy_t *a, const char *descr, uint32_t ndim, const uint64_t *shape)
{
    memset(a, 0, sizeof *a);
    if (ndim > SPM_NPY_MAX_DIM || strlen(descr) >= sizeof a->descr)
        return spm_error(SPM_EINVAL, "npy: %u dimensions of '%s'", ndim, descr);
    snprintf(a->descr, sizeof a->descr, "%s", descr);
    descr_kind(descr, &a->kind, &a->itemsize);
    if (a->kind == SPM_NPY_OTHER)
        return spm_error(SPM_EINVAL, "npy: dtype '%s' is not written here", descr);
    a->ndim = ndim;
    for (uint32_t i = 0; i < ndim; i++)
        a->shape[i] = shape[i];
    return 0;
}

size_t spm_npy_header(const spm_npy_t *a, size_t min, char *buf)
{
    char dict[SPM_NPY_WRITTEN_MAX];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (", a->descr,
                     a->fortran ? "True" : "False");
    for (uint32_t i = 0; i < a->ndim; i++)
        n +=
            snprintf(dict + n, sizeof dict - (size_t)n, i ? ", %" PRIu64 : "%" PRIu64, a->shape[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", a->ndim == 1 ? "," : "");
    /* magic, version, length, the dict, blanks, a newline: a multiple of 64 */
    size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
    if (total < min)
        total = min;
    memcpy(buf, magic, 6);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)((total - 10) & 0xff);
    buf[9] = (char)((total - 10) >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', total - 10 - (size_t)n - 1);
    buf[total - 1] = '\n';
    return total;
}

int spm_npy_preamble(const void *p, size_t n, size_t *len)
{
    const unsigned char *b = p;
    if (n < 10 || memcmp(b, magic, 6) != 0)
        return spm_error(SPM_EFORMAT, "not a .npy array (no \\x93NUMPY magic)");
    if (b[6] == 1 && b[7] == 0) {
        *len = 10 + ((size_t)b[8] | (size_t)b[9] << 8);
        return 0;
    }
    if ((b[6] != 2 && b[6] != 3) || b[7] != 0)
        return spm_error(SPM_EFORMAT, ".npy format version %u.%u is not 1.0, 2.0 or 3.0", b[6],
                         b[7]);
    if (n < 12)
        return spm_error(SPM_EFORMAT, "the .npy header is cut short");
    uint64_t h =
        (uint64_t)b[8] | (uint64_t)b[9] << 8 | (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
    if (h > SPM_NPY_HEADER_MAX)
        return spm_error(SPM_EFORMAT, "a .npy header of %" PRIu64 " bytes (at most %d are read)", h,
                         SPM_NPY_HEADER_MAX);
    *len = 12 + (size_t)h;
    return 0;
}

/* -------------------------------------------------------------- the dict */

typedef struct {
    const char *p, *end;
} cur_t;

static void blanks(cur_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/*  Takes CH (after blanks). Returns 1 when it was there. */
static int take(cur_t *c, char ch)
{
    blanks(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/*  A quoted string (either quote, no escapes) into OUT of CAP bytes. */
static int string(cur_t *c, char *out, size_t cap)
{
    blanks(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return -1;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= cap)
            return -1;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return -1;
    c->p++;
    out[n] = '\0';
    return 0;
}

/*  True or False. */
static int boolean(cur_t *c, int *out)
{
    blanks(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
        c->p += 4;
        *out = 1;
        return 0;
    }
    if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
        c->p += 5;
        *out = 0;
        return 0;
    }
    return -1;
}

/*  A tuple of non-negative integers: (), (n,), (n, m), ... */
static int tuple(cur_t *c, spm_npy_t *a)
{
    if (!take(c, '('))
        return -1;
    a->ndim = 0;
    for (;;) {
        if (take(c, ')'))
            return 0;
        blanks(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9')
            return -1;
        if (a->ndim == SPM_NPY_MAX_DIM)
            return spm_error(SPM_EFORMAT, "a .npy array of more than %d dimensions",
                             SPM_NPY_MAX_DIM);
        uint64_t v = 0;
        for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++)
            if ((v = v * 10 + (uint64_t)(*c->p - '0')) >= LIMIT)
                return spm_error(SPM_EFORMAT, "a .npy shape with a size past 2^63");
        if (c->p < c->end && *c->p == 'L') /* Python 2 */
            c->p++;
        a->shape[a->ndim++] = v;
        if (!take(c, ',')) /* the last, or (n,) */
            return take(c, ')') ? 0 : -1;
    }
}

/*  Reads one "key: value" into A, marking the key in *SEEN. Returns 0, -1
    (not what a dict holds) or SPM_EFORMAT with its own detail. */
static int entry(cur_t *c, spm_npy_t *a, unsigned *seen)
{
    char key[32];
    if (string(c, key, sizeof key) != 0 || !take(c, ':'))
        return -1;
    if (strcmp(key, "descr") == 0 && !(*seen & 1)) {
        *seen |= 1;
        if (take(c, '['))
            return spm_error(SPM_EFORMAT, "a .npy array of a structured dtype");
        if (string(c, a->descr, sizeof a->descr) != 0)
            return -1;
        descr_kind(a->descr, &a->kind, &a->itemsize);
        return 0;
    }
    if (strcmp(key, "fortran_order") == 0 && !(*seen & 2)) {
        *seen |= 2;
        return boolean(c, &a->fortran);
    }
    if (strcmp(key, "shape") == 0 && !(*seen & 4)) {
        *seen |= 4;
        return tuple(c, a);
    }
    return spm_error(SPM_EFORMAT, "the .npy header has a key '%s' it should not", key);
}

int spm_npy_parse(const void *p, size_t len, spm_npy_t *a)
{
    size_t hlen;
    int rc = spm_npy_preamble(p, len, &hlen);
    if (rc != 0)
        return rc;
    if (hlen != len)
        return spm_error(SPM_EFORMAT, "the .npy header is %zu bytes, not %zu", len, hlen);
    memset(a, 0, sizeof *a);
    const unsigned char *b = p;
    cur_t c = {(const char *)b + (b[6] == 1 ? 10 : 12), (const char *)b + len};
    unsigned seen = 0;
    if (!take(&c, '{'))
        return spm_error(SPM_EFORMAT, "the .npy header is not a dict");
    if (!take(&c, '}'))
        for (;;) {
            if ((rc = entry(&c, a, &seen)) != 0)
                return rc < -1 ? rc : spm_error(SPM_EFORMAT, "the .npy header is not a dict");
            if (take(&c, '}'))
                break;
            if (!take(&c, ','))
                return spm_error(SPM_EFORMAT, "the .npy header is not a dict");
            if (take(&c, '}'))
                break;
        }
    blanks(&c);
    if (c.p != c.end)
        return spm_error(SPM_EFORMAT, "the .npy header has bytes after its dict");
    if (seen != 7)
        return spm_error(SPM_EFORMAT, "the .npy header lacks '%s'",
                         !(seen & 1)   ? "descr"
                         : !(seen & 2) ? "fortran_order"
                                       : "shape");
    uint64_t count, bytes;
    if (spm_npy_size(a, &count, &bytes) != 0)
        return spm_error(SPM_EFORMAT, "a .npy shape of more than 2^63 elements or bytes");
    return 0;
}

int spm_npy_size(const spm_npy_t *a, uint64_t *count, uint64_t *bytes)
{
    uint64_t n = 1;
    int zero = 0;
    for (uint32_t i = 0; i < a->ndim; i++) {
        if (a->shape[i] == 0)
            zero = 1;
        else if (n > (LIMIT - 1) / a->shape[i])
            n = LIMIT; /* past the limit, unless another size is 0 */
        else
            n *= a->shape[i];
    }
    if (zero)
        n = 0;
    if (n >= LIMIT || (a->itemsize && n > (LIMIT - 1) / a->itemsize))
        return SPM_ERANGE;
    *count = n;
    *bytes = n * a->itemsize;
    return 0;
}

const char *spm_npy_shape_text(const spm_npy_t *a, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap)
        buf[0] = '\0';
    if (a->ndim == 0)
        snprintf(buf, cap, "scalar");
    for (uint32_t i = 0; i < a->ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? " x %" PRIu64 : "%" PRIu64, a->shape[i]);
    return buf;
}
