/*  =========================================================================
    test_formats - the binary files NumPy and SciPy read, as a user gets them

    `spm matmul -o C.npz / C.npy` and `spm mine -o rules.npz --itemsets
    sets.npz`, run as the real binary ($SPM_BIN) on an embedded VM. The
    files are read here by a reader of our own (a zip's directory and a
    .npy header parsed plainly, CRC-32 by zlib), which shares no code with
    isa/core, and checked against the independent references
    (tests/ref/matmul_ref.h, tests/ref/apriori_ref.h), never against spm's
    own text output. Inputs in the binary formats are written by a writer
    of our own (stored or deflated members, int32 or int64 indices) and
    must give the product the same matrices give as Matrix Market files.
    Bad binary inputs (truncated, a header claiming 2^40 elements, a dtype
    that is not read) give one line and a non-zero exit. Where Debian's
    python3-numpy and python3-scipy are installed, numpy.load and
    scipy.sparse.load_npz load every file and compare it with the
    reference; without them that test says so and passes.
    =========================================================================
*/
#include "tests/check_main.h"
#include "tests/ref/apriori_ref.h"
#include "tests/ref/matmul_ref.h"
#include "tests/scratch.h"
#include "tests/spm_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/*  Runs spm with the NULL-terminated ARGV; *ERR its stderr (may be NULL). */
static int spm(const char *const *argv, char **err)
{
    return spm_test_run(argv, 120, NULL, err);
}

/*  Reads the whole file at P into a malloc'd buffer and *LEN (NULL: none). */
static unsigned char *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* ------------------------------------------------ our own reader */

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/*  An array as a .npy header describes it; DATA points into a buffer. */
typedef struct {
    char descr[16];
    int fortran, ndim;
    uint64_t shape[2];
    const unsigned char *data;
    size_t bytes; /* what follows the header */
} arr_t;

/*  Parses the .npy of N bytes at P into A: magic, version 1.0 header,
    descr, fortran_order, shape. */
static void parse_npy(const unsigned char *p, size_t n, arr_t *a)
{
    ck_assert(n >= 10 && memcmp(p, "\x93NUMPY\x01\x00", 8) == 0);
    size_t hlen = 10 + le(p + 8, 2);
    ck_assert_msg(hlen % 64 == 0, "header of %zu bytes is not padded to 64", hlen);
    ck_assert(hlen <= n && p[hlen - 1] == '\n');
    char head[1024];
    ck_assert(hlen - 10 < sizeof head);
    memcpy(head, p + 10, hlen - 10);
    head[hlen - 10] = '\0';
    memset(a, 0, sizeof *a);
    const char *d = strstr(head, "'descr': '"), *f = strstr(head, "'fortran_order': "),
               *s = strstr(head, "'shape': (");
    ck_assert_msg(d && f && s, "header %s", head);
    ck_assert_int_eq(sscanf(d + 10, "%15[^']", a->descr), 1);
    a->fortran = strncmp(f + 17, "True", 4) == 0;
    unsigned long long x, y;
    a->ndim = sscanf(s + 10, "%llu, %llu", &x, &y);
    if (s[10] == ')')
        a->ndim = 0;
    a->shape[0] = x;
    a->shape[1] = a->ndim == 2 ? y : 0;
    a->data = p + hlen;
    a->bytes = n - hlen;
}

/*  Finds member NAME.npy in the zip archive Z (N bytes) through its end
    record and central directory, checks that it is stored and that its
    CRC-32 (zlib's) holds, and parses it into A. */
static void npz_member(const unsigned char *z, size_t n, const char *name, arr_t *a)
{
    size_t e = n - 22;
    while (e > 0 && le(z + e, 4) != 0x06054b50)
        e--;
    ck_assert_msg(le(z + e, 4) == 0x06054b50, "no end record");
    uint64_t count = le(z + e + 10, 2), at = le(z + e + 16, 4);
    if (at == 0xffffffff) { /* ZIP64: the locator before the end record */
        ck_assert(le(z + e - 20, 4) == 0x07064b50);
        const unsigned char *e64 = z + le(z + e - 12, 8);
        count = le(e64 + 32, 8);
        at = le(e64 + 48, 8);
    }
    char want[64];
    snprintf(want, sizeof want, "%s.npy", name);
    for (uint64_t i = 0; i < count; i++) {
        const unsigned char *c = z + at;
        ck_assert(le(c, 4) == 0x02014b50);
        size_t nl = le(c + 28, 2), xl = le(c + 30, 2), cl = le(c + 32, 2);
        uint64_t size = le(c + 24, 4), off = le(c + 42, 4);
        for (size_t x = 0; x + 4 <= xl && (size == 0xffffffff || off == 0xffffffff);) {
            const unsigned char *f = c + 46 + nl + x;
            if (le(f, 2) == 1) {
                size_t k = 4;
                if (size == 0xffffffff) {
                    size = le(f + k, 8);
                    k += 16;
                }
                if (off == 0xffffffff)
                    off = le(f + k, 8);
            }
            x += 4 + le(f + 2, 2);
        }
        if (nl == strlen(want) && memcmp(c + 46, want, nl) == 0) {
            const unsigned char *l = z + off;
            ck_assert(le(l, 4) == 0x04034b50 && le(l + 8, 2) == 0); /* stored */
            const unsigned char *data = l + 30 + le(l + 26, 2) + le(l + 28, 2);
            ck_assert(data + size <= z + n);
            ck_assert_msg(crc32(0, data, (uInt)size) == le(c + 16, 4), "%s: CRC-32", want);
            parse_npy(data, size, a);
            ck_assert_msg(a->bytes == size - (a->data - data), "%s", want);
            return;
        }
        at += 46 + nl + xl + cl;
    }
    ck_abort_msg("no member %s", want);
}

/*  Element I of integer array A (int32, int64 or uint32). */
static uint64_t elem(const arr_t *a, uint64_t i)
{
    if (strcmp(a->descr, "<i8") == 0)
        return le(a->data + 8 * i, 8);
    ck_assert(strcmp(a->descr, "<i4") == 0 || strcmp(a->descr, "<u4") == 0);
    return le(a->data + 4 * i, 4);
}

static double real(const arr_t *a, uint64_t i)
{
    ck_assert_str_eq(a->descr, "<f8");
    uint64_t v = le(a->data + 8 * i, 8);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static uint64_t count_of(const arr_t *a)
{
    return a->ndim == 0 ? 1 : a->ndim == 1 ? a->shape[0] : a->shape[0] * a->shape[1];
}

/*  C.npz read as SciPy would: a dense M x N array (caller frees) and its
    number of stored entries. The CSR structure is checked as SciPy
    expects it: indptr from 0 to nnz, never decreasing, indices in range
    and increasing within a row. */
static double *read_csr(const char *p, int *m, int *n, uint64_t *nnz)
{
    size_t len;
    unsigned char *z = slurp(p, &len);
    ck_assert_ptr_nonnull(z);
    arr_t fmt, shape, ptr, idx, val;
    npz_member(z, len, "format", &fmt);
    ck_assert(fmt.ndim == 0 && strcmp(fmt.descr, "|S3") == 0 && memcmp(fmt.data, "csr", 3) == 0);
    npz_member(z, len, "shape", &shape);
    ck_assert(shape.ndim == 1 && shape.shape[0] == 2);
    *m = (int)elem(&shape, 0);
    *n = (int)elem(&shape, 1);
    npz_member(z, len, "indptr", &ptr);
    npz_member(z, len, "indices", &idx);
    npz_member(z, len, "data", &val);
    ck_assert_str_eq(ptr.descr, idx.descr);
    ck_assert(count_of(&ptr) == (uint64_t)*m + 1);
    *nnz = count_of(&val);
    ck_assert(count_of(&idx) == *nnz && elem(&ptr, 0) == 0 && elem(&ptr, (uint64_t)*m) == *nnz);
    double *c = calloc((size_t)*m * (size_t)*n + 1, sizeof *c);
    for (int i = 0; i < *m; i++) {
        ck_assert(elem(&ptr, (uint64_t)i) <= elem(&ptr, (uint64_t)i + 1));
        for (uint64_t q = elem(&ptr, (uint64_t)i); q < elem(&ptr, (uint64_t)i + 1); q++) {
            uint64_t j = elem(&idx, q);
            ck_assert(j < (uint64_t)*n);
            ck_assert(q == elem(&ptr, (uint64_t)i) || elem(&idx, q - 1) < j);
            c[(size_t)i * *n + j] = real(&val, q);
        }
    }
    free(z);
    return c;
}

/*  C.npy read as NumPy would: a dense C-order float64 M x N array. */
static double *read_dense(const char *p, int *m, int *n)
{
    size_t len;
    unsigned char *b = slurp(p, &len);
    ck_assert_ptr_nonnull(b);
    arr_t a;
    parse_npy(b, len, &a);
    ck_assert(a.ndim == 2 && !a.fortran && strcmp(a.descr, "<f8") == 0);
    *m = (int)a.shape[0];
    *n = (int)a.shape[1];
    ck_assert(a.bytes == (size_t)*m * *n * 8);
    double *c = malloc(a.bytes + 8);
    for (size_t i = 0; i < (size_t)*m * *n; i++)
        c[i] = real(&a, i);
    free(b);
    return c;
}

/*  Stored entries of a Matrix Market file: its size line's last number. */
static uint64_t mtx_entries(const char *p)
{
    FILE *f = fopen(p, "r");
    char line[256];
    unsigned long long r = 0, c = 0, e = 0;
    while (f && fgets(line, sizeof line, f))
        if (line[0] != '%' && sscanf(line, "%llu %llu %llu", &r, &c, &e) == 3)
            break;
    if (f)
        fclose(f);
    return e;
}

/* ------------------------------------------------ our own writer */

typedef struct {
    const char *name;
    const char *descr;
    int ndim;
    uint64_t shape[2];
    int fortran;
    const void *data; /* little-endian elements */
    size_t bytes;
} member_t;

/*  The .npy of M into a malloc'd buffer and *LEN. */
static unsigned char *make_npy(const member_t *m, size_t *len)
{
    char dict[256];
    int n = m->ndim == 0
                ? snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (), }",
                           m->descr, m->fortran ? "True" : "False")
            : m->ndim == 1
                ? snprintf(dict, sizeof dict,
                           "{'descr': '%s', 'fortran_order': %s, 'shape': (%llu,), }", m->descr,
                           m->fortran ? "True" : "False", (unsigned long long)m->shape[0])
                : snprintf(dict, sizeof dict,
                           "{'descr': '%s', 'fortran_order': %s, 'shape': (%llu, %llu), }",
                           m->descr, m->fortran ? "True" : "False", (unsigned long long)m->shape[0],
                           (unsigned long long)m->shape[1]);
    size_t head = (10 + (size_t)n + 1 + 63) / 64 * 64;
    unsigned char *b = malloc(head + m->bytes + 1);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)((head - 10) & 0xff);
    b[9] = (unsigned char)((head - 10) >> 8);
    memcpy(b + 10, dict, (size_t)n);
    memset(b + 10 + n, ' ', head - 10 - (size_t)n - 1);
    b[head - 1] = '\n';
    memcpy(b + head, m->data, m->bytes);
    *len = head + m->bytes;
    return b;
}

/*  Writes the .npy of M to P. */
static void write_member(const char *p, const member_t *m)
{
    size_t len;
    unsigned char *b = make_npy(m, &len);
    FILE *f = fopen(p, "wb");
    ck_assert(f && fwrite(b, 1, len, f) == len && fclose(f) == 0);
    free(b);
}

static void put16(FILE *f, unsigned v)
{
    fputc((int)(v & 0xff), f);
    fputc((int)(v >> 8 & 0xff), f);
}

static void put32(FILE *f, uint32_t v)
{
    put16(f, v & 0xffff);
    put16(f, v >> 16);
}

/*  Writes an .npz of the N members at M, each deflated when DEFLATED. */
static void write_npz(const char *p, const member_t *m, int n, int deflated)
{
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    uint32_t off[16], crc[16], csize[16], usize[16];
    for (int i = 0; i < n; i++) {
        size_t len;
        unsigned char *raw = make_npy(&m[i], &len), *out = raw;
        uLongf clen = len;
        if (deflated) {
            z_stream zs = {0};
            clen = compressBound(len);
            out = malloc(clen);
            ck_assert(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
            zs.next_in = raw;
            zs.avail_in = (uInt)len;
            zs.next_out = out;
            zs.avail_out = (uInt)clen;
            ck_assert(deflate(&zs, Z_FINISH) == Z_STREAM_END);
            clen = zs.total_out;
            deflateEnd(&zs);
        }
        char name[64];
        snprintf(name, sizeof name, "%s.npy", m[i].name);
        off[i] = (uint32_t)ftell(f);
        crc[i] = (uint32_t)crc32(0, raw, (uInt)len);
        csize[i] = (uint32_t)clen;
        usize[i] = (uint32_t)len;
        put32(f, 0x04034b50);
        put16(f, 20);
        put16(f, 0);
        put16(f, deflated ? 8 : 0);
        put32(f, 0);
        put32(f, crc[i]);
        put32(f, csize[i]);
        put32(f, usize[i]);
        put16(f, (unsigned)strlen(name));
        put16(f, 0);
        fputs(name, f);
        fwrite(out, 1, clen, f);
        if (out != raw)
            free(out);
        free(raw);
    }
    uint32_t dir_at = (uint32_t)ftell(f);
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.npy", m[i].name);
        put32(f, 0x02014b50);
        put16(f, 20);
        put16(f, 20);
        put16(f, 0);
        put16(f, deflated ? 8 : 0);
        put32(f, 0);
        put32(f, crc[i]);
        put32(f, csize[i]);
        put32(f, usize[i]);
        put16(f, (unsigned)strlen(name));
        put32(f, 0); /* extra, comment */
        put32(f, 0); /* disk, internal attributes */
        put32(f, 0); /* external attributes */
        put32(f, off[i]);
        fputs(name, f);
    }
    uint32_t dir_len = (uint32_t)ftell(f) - dir_at;
    put32(f, 0x06054b50);
    put32(f, 0);
    put16(f, (unsigned)n);
    put16(f, (unsigned)n);
    put32(f, dir_len);
    put32(f, dir_at);
    put16(f, 0);
    ck_assert_int_eq(fclose(f), 0);
}

/*  Writes the M x N dense matrix A as a .npy (FORTRAN: column-major). */
static void write_npy(const char *p, int m, int n, const double *a, int fortran)
{
    double *t = malloc((size_t)m * n * sizeof *t + 8);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            t[fortran ? (size_t)j * m + i : (size_t)i * n + j] = a[(size_t)i * n + j];
    member_t mb = {"", "<f8", 2, {(uint64_t)m, (uint64_t)n}, fortran, t, (size_t)m * n * 8};
    write_member(p, &mb);
    free(t);
}

/*  Writes the M x N matrix A as scipy.sparse.save_npz would: FORMAT csr,
    csc or coo, indices of dtype INDEX ("<i4" or "<i8"), DEFLATED or stored. */
static void write_sparse(const char *p, int m, int n, const double *a, const char *format,
                         const char *index, int deflated)
{
    int wide = strcmp(index, "<i8") == 0, csc = strcmp(format, "csc") == 0,
        coo = strcmp(format, "coo") == 0;
    size_t nnz = 0, w = wide ? 8 : 4;
    for (size_t i = 0; i < (size_t)m * n; i++)
        nnz += a[i] != 0;
    int major = csc ? n : m, minor = csc ? m : n;
    unsigned char *idx = malloc(nnz * w + 8), *ptr = malloc(((size_t)major + 1) * w + 8),
                  *row = malloc(nnz * w + 8);
    double *val = malloc(nnz * 8 + 8);
    size_t k = 0;
    for (int x = 0; x < major; x++) {
        uint64_t at = k;
        memcpy(ptr + (size_t)x * w, &at, w); /* little-endian host */
        for (int y = 0; y < minor; y++) {
            double v = csc ? a[(size_t)y * n + x] : a[(size_t)x * n + y];
            if (v == 0)
                continue;
            uint64_t yy = (uint64_t)y, xx = (uint64_t)x;
            memcpy(idx + k * w, &yy, w);
            memcpy(row + k * w, &xx, w);
            val[k++] = v;
        }
    }
    uint64_t at = k;
    memcpy(ptr + (size_t)major * w, &at, w);
    int64_t shape[2] = {m, n};
    member_t mb[5] = {{coo ? "row" : "indices", index, 1, {nnz, 0}, 0, coo ? row : idx, nnz * w},
                      {coo ? "col" : "indptr",
                       index,
                       1,
                       {coo ? nnz : (uint64_t)major + 1, 0},
                       0,
                       coo ? idx : ptr,
                       coo ? nnz * w : ((size_t)major + 1) * w},
                      {"format", "|S3", 0, {0, 0}, 0, format, 3},
                      {"shape", "<i8", 1, {2, 0}, 0, shape, 16},
                      {"data", "<f8", 1, {nnz, 0}, 0, val, nnz * 8}};
    write_npz(p, mb, 5, deflated);
    free(idx);
    free(ptr);
    free(row);
    free(val);
}

/* ------------------------------------------------------------ matmul */

/*  spm matmul A B -o C with --block 32 and EXTRA (may be NULL). Returns
    the exit status; *ERR its stderr (NULL: discarded). */
static int matmul(const char *a, const char *b, const char *c, const char *extra, char **err)
{
    const char *argv[16] = {"matmul", a,         b,         "-o", c,     "--ieus",
                            "2",      "--quiet", "--block", "32", extra, NULL};
    return spm(argv, err);
}

/*  Random A (M x P) and B (P x N) at DENSITY as A.mtx and B.mtx, and
    their reference product (caller frees *A, *B, *R). */
static void inputs(int m, int p, int n, double density, double **a, double **b, double **r)
{
    *a = ref_random(m, p, density, 11 + m, REF_REAL);
    *b = ref_random(p, n, density, 13 + n, REF_REAL);
    ck_assert_int_eq(ref_write_mtx(path("A.mtx"), m, p, *a, 0, REF_REAL, REF_GENERAL), 0);
    ck_assert_int_eq(ref_write_mtx(path("B.mtx"), p, n, *b, 0, REF_REAL, REF_GENERAL), 0);
    *r = ref_matmul(m, p, n, *a, *b);
}

static const int shapes[][3] = {{96, 64, 80}, {150, 40, 30}, {20, 90, 130}, {70, 70, 70}};
static const double densities[] = {1.0, 0.2, 0.05, 0.3};

/*  C.npz and C.npy of products of every shape, against the reference:
    the .npz a CSR matrix with the entries C.mtx has, the .npy every
    element. */
START_TEST(binary_outputs_match_the_reference)
{
    int m = shapes[_i][0], p = shapes[_i][1], n = shapes[_i][2];
    double *a, *b, *r;
    inputs(m, p, n, densities[_i], &a, &b, &r);
    char *err = NULL;
    ck_assert_msg(matmul(path("A.mtx"), path("B.mtx"), path("C.npz"), NULL, &err) == 0, "%s", err);
    free(err);
    ck_assert_int_eq(matmul(path("A.mtx"), path("B.mtx"), path("C.npy"), NULL, NULL), 0);
    ck_assert_int_eq(matmul(path("A.mtx"), path("B.mtx"), path("C.mtx"), NULL, NULL), 0);
    int cm, cn;
    uint64_t nnz;
    double *c = read_csr(path("C.npz"), &cm, &cn, &nnz);
    ck_assert(cm == m && cn == n);
    ck_assert_msg(ref_rel_err(m, n, c, r) < 1e-12, "C.npz err %g", ref_rel_err(m, n, c, r));
    ck_assert_uint_eq(nnz, mtx_entries(path("C.mtx"))); /* the entries C.mtx has */
    free(c);
    c = read_dense(path("C.npy"), &cm, &cn);
    ck_assert(cm == m && cn == n);
    ck_assert_msg(ref_rel_err(m, n, c, r) < 1e-12, "C.npy err %g", ref_rel_err(m, n, c, r));
    free(c);
    /* --format overrides the name */
    ck_assert_int_eq(matmul(path("A.mtx"), path("B.mtx"), path("C.out"), "--format=npz", NULL), 0);
    ck_assert(same_bytes(path("C.out"), path("C.npz")));
    free(a);
    free(b);
    free(r);
}
END_TEST

/*  Inputs as NumPy and SciPy write them give the product the same
    matrices give as Matrix Market files, byte for byte. */
START_TEST(binary_inputs_give_the_same_product)
{
    const int m = 75, p = 60, n = 50;
    double *a, *b, *r;
    inputs(m, p, n, 0.25, &a, &b, &r);
    ck_assert_int_eq(matmul(path("A.mtx"), path("B.mtx"), path("ref.mtx"), NULL, NULL), 0);
    static const struct {
        const char *a_fmt, *index; /* A as: csr/csc/coo with this index, or npy */
        int deflated, b_fortran;
    } cases[] = {{"csr", "<i4", 1, 0},
                 {"csc", "<i8", 0, 1},
                 {"coo", "<i4", 1, 0},
                 {"npy", NULL, 0, 1},
                 {"csr", "<i8", 0, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *ap = strcmp(cases[k].a_fmt, "npy") == 0 ? path("A.npy") : path("A.npz");
        if (strcmp(cases[k].a_fmt, "npy") == 0)
            write_npy(ap, m, p, a, 0);
        else
            write_sparse(ap, m, p, a, cases[k].a_fmt, cases[k].index, cases[k].deflated);
        write_npy(path("B.npy"), p, n, b, cases[k].b_fortran);
        char *err = NULL;
        int rc = matmul(ap, path("B.npy"), path("C.mtx"), NULL, &err);
        ck_assert_msg(rc == 0, "case %zu: %s", k, err);
        free(err);
        ck_assert_msg(same_bytes(path("C.mtx"), path("ref.mtx")), "case %zu differs", k);
        /* and the other way round: B as a sparse archive */
        write_sparse(path("B.npz"), p, n, b, "csr", "<i4", 1);
        ck_assert_int_eq(matmul(path("A.mtx"), path("B.npz"), path("C.mtx"), NULL, NULL), 0);
        ck_assert(same_bytes(path("C.mtx"), path("ref.mtx")));
    }
    int cm, cn;
    double *c = ref_read_mtx(path("ref.mtx"), &cm, &cn);
    ck_assert(ref_rel_err(m, n, c, r) < 1e-12);
    free(c);
    free(a);
    free(b);
    free(r);
}
END_TEST

/*  Bad binary inputs: one line on stderr naming the file and what is
    wrong, exit 1, no output file; never a crash. */
static const struct {
    const char *name;   /* the case */
    const char *expect; /* a piece of its line */
} bad[] = {
    {"truncated npz", "truncated"},
    {"npy claiming 2^40 elements", "1048576 x 1048576"},
    {"npz claiming 2^40 entries", "truncated or forged"},
    {"float32 data", "'<f4'"},
    {"int16 indices", "'<i2'"},
    {"integer npy", "'<i8'"},
    {"a corrupt member", "CRC-32"},
    {"bsr format", "'bsr'"},
    {"index out of range", "outside"},
    {"decreasing indptr", "decreases"},
    {"1-d npy", "2 dimensions"},
};

START_TEST(bad_binary_input)
{
    const int m = 6, n = 5;
    double a[30];
    for (int i = 0; i < 30; i++)
        a[i] = i % 3 ? i : 0;
    const char *in = path("A.npz");
    uint32_t idx[2] = {0, 9}, ptr[7] = {0, 1, 2, 2, 2, 2, 2}, bad_ptr[7] = {0, 2, 1, 2, 2, 2, 2};
    double v2[2] = {1, 2};
    float f2[2] = {1, 2};
    int16_t i2[2] = {0, 1};
    int64_t shape[2] = {m, n};
    member_t mb[5] = {{"indices", "<i4", 1, {2, 0}, 0, idx, 8},
                      {"indptr", "<i4", 1, {7, 0}, 0, ptr, 28},
                      {"format", "|S3", 0, {0, 0}, 0, "csr", 3},
                      {"shape", "<i8", 1, {2, 0}, 0, shape, 16},
                      {"data", "<f8", 1, {2, 0}, 0, v2, 16}};
    switch (_i) {
    case 0: { /* a valid archive cut short */
        write_sparse(in, m, n, a, "csr", "<i4", 1);
        ck_assert_int_eq(truncate(in, 300), 0);
        break;
    }
    case 1: { /* a header claiming 2^20 x 2^20 doubles, 16 bytes of data */
        member_t f = {"", "<f8", 2, {1u << 20, 1u << 20}, 0, v2, 16};
        in = path("A.npy");
        write_member(in, &f);
        break;
    }
    case 2: /* data and indices claiming 2^40 entries, with 2 */
        mb[0].shape[0] = mb[4].shape[0] = UINT64_C(1) << 40;
        write_npz(in, mb, 5, 0);
        break;
    case 3:
        mb[4] = (member_t){"data", "<f4", 1, {2, 0}, 0, f2, 8};
        write_npz(in, mb, 5, 1);
        break;
    case 4:
        mb[0] = (member_t){"indices", "<i2", 1, {2, 0}, 0, i2, 4};
        write_npz(in, mb, 5, 0);
        break;
    case 5: {
        int64_t ints[30] = {0};
        member_t f = {"", "<i8", 2, {m, n}, 0, ints, sizeof ints};
        in = path("A.npy");
        write_member(in, &f);
        break;
    }
    case 6: { /* a byte of the data member flipped: its CRC-32 fails */
        write_npz(in, mb, 5, 0);
        size_t len;
        unsigned char *z = slurp(in, &len);
        unsigned char *d = memmem(z, len, "data.npy", 8);
        ck_assert_ptr_nonnull(d);
        d[8 + 128 + 3] ^= 0x40; /* past the name, in the .npy's values */
        FILE *o = fopen(in, "wb");
        ck_assert(o && fwrite(z, 1, len, o) == len && fclose(o) == 0);
        free(z);
        break;
    }
    case 7:
        mb[2].data = "bsr";
        write_npz(in, mb, 5, 0);
        break;
    case 8: /* column 9 of 5 */
        write_npz(in, mb, 5, 1);
        break;
    case 9:
        idx[1] = 1;
        mb[1].data = bad_ptr;
        write_npz(in, mb, 5, 0);
        break;
    case 10: {
        member_t f = {"", "<f8", 1, {30, 0}, 0, a, sizeof a};
        in = path("A.npy");
        write_member(in, &f);
        break;
    }
    }
    double ident[25] = {0};
    for (int i = 0; i < 5; i++)
        ident[i * 6] = 1;
    write_npy(path("B.npy"), 5, 5, ident, 0);
    char *err = NULL;
    int rc = matmul(in, path("B.npy"), path("C.npz"), NULL, &err);
    ck_assert_msg(rc == 1, "%s: exit %d, %s", bad[_i].name, rc, err);
    ck_assert_msg(strstr(err, in) && strstr(err, bad[_i].expect), "%s: %s", bad[_i].name, err);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "%s: not one line: %s", bad[_i].name,
                  err);
    ck_assert_int_eq(access(path("C.npz"), F_OK), -1);
    free(err);
}
END_TEST

/* -------------------------------------------------------------- mine */

/*  The shell's transactions: a seeded database with patterns. */
static void write_db(const char *p)
{
    const char *argv[] = {"gen",
                          "transactions",
                          "--transactions",
                          "3000",
                          "--avg-size",
                          "8",
                          "--avg-pattern",
                          "4",
                          "--items",
                          "60",
                          "--seed",
                          "5",
                          "-o",
                          p,
                          NULL};
    ck_assert_int_eq(spm(argv, NULL), 0);
}

/*  The members of a mining .npz, as our reader sees them. */
typedef struct {
    unsigned char *z;
    size_t len;
} npz_t;

static arr_t member(const npz_t *z, const char *name)
{
    arr_t a;
    npz_member(z->z, z->len, name, &a);
    return a;
}

/*  Checks the flat list I of LIST (with OFFSETS) is the N items at WANT. */
static void list_is(const arr_t *list, const arr_t *offsets, uint64_t i, const uint32_t *want,
                    uint32_t n)
{
    uint64_t a = elem(offsets, i), b = elem(offsets, i + 1);
    ck_assert_uint_eq(b - a, n);
    for (uint32_t j = 0; j < n; j++)
        ck_assert_uint_eq(elem(list, a + j), want[j]);
}

/*  s(Y) from the reference's itemsets. */
static uint64_t support_of(const ref_result_t *r, const uint32_t *y, uint32_t k)
{
    for (size_t i = 0; i < r->nsets; i++)
        if (r->sets[i].k == k && memcmp(r->sets[i].items, y, k * 4) == 0)
            return r->sets[i].sup;
    return 0;
}

static void check_itemsets(const char *p, const ref_result_t *ref, uint64_t ntrans, uint64_t minsup)
{
    npz_t z;
    z.z = slurp(p, &z.len);
    ck_assert_ptr_nonnull(z.z);
    arr_t items = member(&z, "items"), off = member(&z, "offsets"), sup = member(&z, "support"),
          tr = member(&z, "transactions"), ms = member(&z, "min_support");
    ck_assert_str_eq(items.descr, "<u4");
    ck_assert_str_eq(off.descr, "<i8");
    ck_assert_str_eq(sup.descr, "<i8");
    ck_assert_uint_eq(elem(&tr, 0), ntrans);
    ck_assert_uint_eq(elem(&ms, 0), minsup);
    ck_assert_uint_eq(count_of(&sup), ref->nsets);
    ck_assert_uint_eq(count_of(&off), ref->nsets + 1);
    ck_assert_uint_eq(elem(&off, ref->nsets), count_of(&items));
    for (size_t i = 0; i < ref->nsets; i++) {
        list_is(&items, &off, i, ref->sets[i].items, ref->sets[i].k);
        ck_assert_uint_eq(elem(&sup, i), ref->sets[i].sup);
    }
    free(z.z);
}

static void check_rules(const char *p, const ref_result_t *ref, uint64_t ntrans)
{
    npz_t z;
    z.z = slurp(p, &z.len);
    ck_assert_ptr_nonnull(z.z);
    arr_t x = member(&z, "antecedent"), xo = member(&z, "antecedent_offsets"),
          y = member(&z, "consequent"), yo = member(&z, "consequent_offsets"),
          sup = member(&z, "support"), conf = member(&z, "confidence"), lift = member(&z, "lift");
    ck_assert_uint_eq(count_of(&sup), ref->nrules);
    ck_assert(ref->nrules > 10);
    for (size_t i = 0; i < ref->nrules; i++) {
        const ref_rule_t *r = &ref->rules[i];
        list_is(&x, &xo, i, r->x, r->xlen);
        list_is(&y, &yo, i, r->y, r->ylen);
        double c = (double)r->supz / (double)r->supx;
        double l = c * (double)ntrans / (double)support_of(ref, r->y, r->ylen);
        ck_assert_uint_eq(elem(&sup, i), r->supz);
        ck_assert(fabs(real(&conf, i) - c) < 1e-12 && fabs(real(&lift, i) - l) < 1e-12 * l);
    }
    free(z.z);
}

/*  spm mine -o rules.npz --itemsets sets.npz (level by level and depth
    first, itemsets alone) against the reference. */
START_TEST(mine_npz_matches_the_reference)
{
    write_db(path("T.dat"));
    ref_db_t db;
    ref_result_t ref;
    ck_assert_int_eq(ref_db_load(path("T.dat"), &db), 0);
    uint64_t minsup = 90; /* 3% */
    ref_mine(&db, minsup, 0.5, 0, &ref);
    const char *argv[] = {"mine",
                          path("T.dat"),
                          "--min-support",
                          "90",
                          "--min-confidence",
                          "50%",
                          "-o",
                          path("rules.npz"),
                          "--itemsets",
                          path("sets.npz"),
                          "--quiet",
                          "--ieus",
                          "2",
                          NULL};
    char *err = NULL;
    ck_assert_msg(spm(argv, &err) == 0, "%s", err);
    free(err);
    check_itemsets(path("sets.npz"), &ref, db.ntrans, minsup);
    check_rules(path("rules.npz"), &ref, db.ntrans);
    const char *eclat[] = {"mine",
                           path("T.dat"),
                           "--min-support",
                           "90",
                           "--itemsets-only",
                           "--algorithm",
                           "eclat",
                           "--itemsets",
                           path("only.npz"),
                           "--quiet",
                           NULL};
    ck_assert_int_eq(spm(eclat, NULL), 0);
    check_itemsets(path("only.npz"), &ref, db.ntrans, minsup);
    /* to stdout: refused in one line, exit 2 */
    const char *out[] = {"mine", path("T.dat"), "--min-support", "90", "--format", "npz", NULL};
    err = NULL;
    ck_assert_int_eq(spm(out, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "npz is written to files"));
    free(err);
    ref_result_free(&ref);
    ref_db_free(&db);
}
END_TEST

/*  Named items: `names` holds each item number's name. */
START_TEST(mine_npz_names)
{
    FILE *f = fopen(path("n.dat"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("bread milk\nbread beer eggs\nmilk beer bread\nmilk eggs\n", f);
    fclose(f);
    const char *argv[] = {"mine",       path("n.dat"),
                          "--names",    "--min-support",
                          "2",          "--itemsets-only",
                          "--itemsets", path("sets.npz"),
                          "--quiet",    NULL};
    ck_assert_int_eq(spm(argv, NULL), 0);
    npz_t z;
    z.z = slurp(path("sets.npz"), &z.len);
    arr_t names = member(&z, "names"), items = member(&z, "items"), off = member(&z, "offsets");
    ck_assert_str_eq(names.descr, "|S5");
    ck_assert_uint_eq(count_of(&names), 4);
    /* bread (3), milk (3), beer (2), eggs (2), bread milk (2), bread beer (2) */
    static const char *want[] = {"bread", "milk", "beer", "eggs", "bread", "milk", "bread", "beer"};
    ck_assert_uint_eq(elem(&off, 6), 8);
    for (int i = 0; i < 8; i++) {
        char name[6] = {0};
        memcpy(name, names.data + 5 * elem(&items, (uint64_t)i), 5);
        ck_assert_str_eq(name, want[i]);
    }
    free(z.z);
}
END_TEST

/* -------------------------------------------------------------- sync */

/*  --sync changes when the bytes reach the disk, not which bytes. */
START_TEST(sync_and_default_write_the_same_bytes)
{
    double *a, *b, *r;
    inputs(64, 48, 40, 0.3, &a, &b, &r);
    static const char *const outs[][2] = {
        {"C.npz", "S.npz"}, {"C.npy", "S.npy"}, {"C.mtx", "S.mtx"}};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(matmul(path("A.mtx"), path("B.mtx"), path(outs[k][0]), NULL, NULL), 0);
        ck_assert_int_eq(matmul(path("A.mtx"), path("B.mtx"), path(outs[k][1]), "--sync", NULL), 0);
        ck_assert_msg(same_bytes(path(outs[k][0]), path(outs[k][1])), "%s", outs[k][0]);
    }
    write_db(path("T.dat"));
    for (int s = 0; s < 2; s++) {
        const char *argv[] = {"mine",
                              path("T.dat"),
                              "--min-support",
                              "3%",
                              "-o",
                              path(s ? "rs.npz" : "r.npz"),
                              "--itemsets",
                              path(s ? "ss.npz" : "s.npz"),
                              "--quiet",
                              s ? "--sync" : NULL,
                              NULL};
        ck_assert_int_eq(spm(argv, NULL), 0);
    }
    ck_assert(same_bytes(path("r.npz"), path("rs.npz")));
    ck_assert(same_bytes(path("s.npz"), path("ss.npz")));
    free(a);
    free(b);
    free(r);
}
END_TEST

/* ------------------------------------------------------ NumPy, SciPy */

/*  A Python with NumPy and SciPy: Debian's, else the one on the PATH;
    NULL when neither imports them. */
static const char *python(void)
{
    static const char *const cands[] = {"/usr/bin/python3", "python3"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "%s -c 'import numpy, scipy.sparse' >/dev/null 2>&1", cands[i]);
        if (system(cmd) == 0)
            return cands[i];
    }
    return NULL;
}

/*  numpy.load and scipy.sparse.load_npz load every file spm writes: C as
    .npz and .npy against the reference product (written as a .npy by our
    own writer), the mining columns rendered as the lines the reference
    gives. */
START_TEST(numpy_and_scipy_load_them)
{
    const char *py = python();
    if (!py) {
        fprintf(stderr, "test_formats: numpy_and_scipy_load_them skipped: python3 with numpy and "
                        "scipy not found (apt-get install python3-numpy python3-scipy)\n");
        return;
    }
    const int m = 90, p = 70, n = 60;
    double *a, *b, *r;
    inputs(m, p, n, 0.2, &a, &b, &r);
    write_npy(path("R.npy"), m, n, r, 0);
    ck_assert_int_eq(matmul(path("A.mtx"), path("B.mtx"), path("C.npz"), NULL, NULL), 0);
    ck_assert_int_eq(matmul(path("A.mtx"), path("B.mtx"), path("C.npy"), NULL, NULL), 0);
    write_db(path("T.dat"));
    const char *argv[] = {
        "mine",    path("T.dat"), "--min-support",   "90",         "--min-confidence",
        "50%",     "-o",          path("rules.npz"), "--itemsets", path("sets.npz"),
        "--quiet", NULL};
    ck_assert_int_eq(spm(argv, NULL), 0);
    FILE *f = fopen(path("check.py"), "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "import sys, numpy as np, scipy.sparse as sp\n"
               "d = sys.argv[1]\n"
               "R = np.load(d + '/R.npy')\n"
               "C = sp.load_npz(d + '/C.npz')\n"
               "assert C.format == 'csr' and C.shape == R.shape, (C.format, C.shape)\n"
               "assert C.has_sorted_indices\n"
               "err = np.linalg.norm(C.toarray() - R) / np.linalg.norm(R)\n"
               "assert err < 1e-12, err\n"
               "D = np.load(d + '/C.npy')\n"
               "assert D.dtype == np.float64 and D.shape == R.shape and D.flags.c_contiguous\n"
               "assert np.linalg.norm(D - R) / np.linalg.norm(R) < 1e-12\n"
               "def lists(z, name, off):\n"
               "    o = z[off]\n"
               "    return [z[name][a:b] for a, b in zip(o[:-1], o[1:])]\n"
               "out = open(d + '/py.txt', 'w')\n"
               "s = np.load(d + '/sets.npz')\n"
               "for items, sup in zip(lists(s, 'items', 'offsets'), s['support']):\n"
               "    out.write(' '.join(map(str, items)) + ' (%%d)\\n' %% sup)\n"
               "z = np.load(d + '/rules.npz')\n"
               "for x, y, su, c, l in zip(lists(z, 'antecedent', 'antecedent_offsets'),\n"
               "                          lists(z, 'consequent', 'consequent_offsets'),\n"
               "                          z['support'], z['confidence'], z['lift']):\n"
               "    out.write('%%s => %%s (%%d, %%.9f, %%.9f)\\n' %% (' '.join(map(str, x)),\n"
               "              ' '.join(map(str, y)), su, c, l))\n");
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s %s 2>%s", py, path("check.py"), base, path("py.err"));
    int rc = system(cmd);
    size_t len;
    char *perr = (char *)slurp(path("py.err"), &len);
    ck_assert_msg(rc == 0, "python: %.*s", (int)len, perr ? perr : "");
    free(perr);
    /* the lines the reference gives */
    ref_db_t db;
    ref_result_t ref;
    ck_assert_int_eq(ref_db_load(path("T.dat"), &db), 0);
    ref_mine(&db, 90, 0.5, 0, &ref);
    size_t cap = 1 << 22, at = 0;
    char *want = malloc(cap);
    for (size_t i = 0; i < ref.nsets; i++) {
        for (uint32_t j = 0; j < ref.sets[i].k; j++)
            at += (size_t)snprintf(want + at, cap - at, j ? " %u" : "%u", ref.sets[i].items[j]);
        at +=
            (size_t)snprintf(want + at, cap - at, " (%llu)\n", (unsigned long long)ref.sets[i].sup);
    }
    for (size_t i = 0; i < ref.nrules; i++) {
        const ref_rule_t *q = &ref.rules[i];
        for (uint32_t j = 0; j < q->xlen; j++)
            at += (size_t)snprintf(want + at, cap - at, j ? " %u" : "%u", q->x[j]);
        at += (size_t)snprintf(want + at, cap - at, " => ");
        for (uint32_t j = 0; j < q->ylen; j++)
            at += (size_t)snprintf(want + at, cap - at, j ? " %u" : "%u", q->y[j]);
        double c = (double)q->supz / (double)q->supx;
        at += (size_t)snprintf(want + at, cap - at, " (%llu, %.9f, %.9f)\n",
                               (unsigned long long)q->supz, c,
                               c * (double)db.ntrans / (double)support_of(&ref, q->y, q->ylen));
        ck_assert(at < cap - 4096);
    }
    char *got = (char *)slurp(path("py.txt"), &len);
    ck_assert_ptr_nonnull(got);
    ck_assert_msg(len == at && memcmp(got, want, at) == 0, "NumPy's reading differs");
    free(got);
    free(want);
    ref_result_free(&ref);
    ref_db_free(&db);
    free(a);
    free(b);
    free(r);
}
END_TEST

static Suite *formats_suite(void)
{
    Suite *s = suite_create("formats");
    const spm_test_case_t c = {
        .timeout_s = 120, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD_LOOP(s, &c, binary_outputs_match_the_reference, 0,
                      (int)(sizeof shapes / sizeof *shapes));
    SPM_TEST_ADD(s, &c, binary_inputs_give_the_same_product);
    SPM_TEST_ADD_LOOP(s, &c, bad_binary_input, 0, (int)(sizeof bad / sizeof *bad));
    SPM_TEST_ADD(s, &c, mine_npz_matches_the_reference);
    SPM_TEST_ADD(s, &c, mine_npz_names);
    SPM_TEST_ADD(s, &c, sync_and_default_write_the_same_bytes);
    SPM_TEST_ADD(s, &c, numpy_and_scipy_load_them);
    return s;
}

SPM_TEST_MAIN(formats_suite)
