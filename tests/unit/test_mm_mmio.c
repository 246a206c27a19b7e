/*  Matrix Market: round trips for every layout, field and symmetry through
    the reader and the writer (each checked against the independent
    reference reader/writer), and one clear "file:line: ..." per bad file. */
#include "isa/core/npy.h"
#include "isa/matrix/mmio.h"
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "tests/ref/matmul_ref.h"
#include "spm/spm.h"

#include <math.h>
#include <unistd.h>

static double *source(int m, int n, int field, int sym)
{
    double *a = ref_random(m, n, 0.4, 42 + field * 3 + sym, field);
    if (sym != REF_GENERAL)
        ref_symmetrize(n, a, sym);
    return a;
}

/*  Reads PATH with the product reader into a dense array. */
static double *read_all(const char *path, uint64_t *m, uint64_t *n)
{
    spm_mmio_t *r = spm_mmio_open(path);
    ck_assert_msg(r != NULL, "%s", spm_error_detail());
    *m = spm_mmio_header(r)->rows;
    *n = spm_mmio_header(r)->cols;
    double *a = calloc(*m * *n, sizeof(double));
    uint64_t i, j;
    double v;
    int rc;
    while ((rc = spm_mmio_next(r, &i, &j, &v)) == 1)
        a[i * *n + j] += v;
    ck_assert_msg(rc == 0, "%s", spm_error_detail());
    spm_mmio_destroy(&r);
    ck_assert_ptr_null(r);
    return a;
}

/*  Kind I of 18 (layout x field x symmetry); 0 for the combinations the
    format does not have (array pattern, skew-symmetric pattern). */
static int kind(int i, int *array, int *field, int *sym, int *m, int *n)
{
    *array = i / 9;
    *field = i / 3 % 3;
    *sym = i % 3;
    *m = *sym ? 6 : 7;
    *n = 6;
    return !(*field == REF_PATTERN && (*array || *sym == REF_SKEW));
}

/*  The reference writes every kind; the product reads it back exactly. */
START_TEST(read_every_kind)
{
    int array, field, sym, m, n;
    if (!kind(_i, &array, &field, &sym, &m, &n))
        return;
    double *a = source(m, n, field, sym);
    char path[256];
    snprintf(path, sizeof path, "%s/in.mtx", base);
    ck_assert_int_eq(ref_write_mtx(path, m, n, a, array, field, sym), 0);
    uint64_t rm, rn;
    double *b = read_all(path, &rm, &rn);
    ck_assert_uint_eq(rm, m);
    ck_assert_uint_eq(rn, n);
    ck_assert_msg(memcmp(a, b, (size_t)m * n * sizeof(double)) == 0,
                  "array %d field %d symmetry %d differs", array, field, sym);
    free(a);
    free(b);
}
END_TEST

/*  The product writes every kind; the reference and the product read it
    back exactly. */
START_TEST(write_every_kind)
{
    int array, field, sym, m, n;
    if (!kind(_i, &array, &field, &sym, &m, &n))
        return;
    double *a = source(m, n, field, sym);
    char path[256];
    snprintf(path, sizeof path, "%s/out.mtx", base);
    FILE *f = fopen(path, "w+");
    spm_mmio_header_t h = {array, field, sym, m, n, array ? 0 : UINT64_MAX};
    spm_mmio_writer_t *w = spm_mmio_writer_open(f, &h);
    ck_assert_ptr_nonnull(w);
    for (int j = 0; j < n; j++)
        for (int i = sym == REF_GENERAL ? 0 : j + (sym == REF_SKEW); i < m; i++)
            if (array || a[i * n + j] != 0.0)
                ck_assert_int_eq(spm_mmio_writer_put(w, i, j, a[i * n + j]), 0);
    ck_assert_int_eq(spm_mmio_writer_close(&w), 0);
    fclose(f);
    int rm, rn;
    double *b = ref_read_mtx(path, &rm, &rn);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(rm, m);
    ck_assert_int_eq(rn, n);
    ck_assert_msg(memcmp(a, b, (size_t)m * n * sizeof(double)) == 0,
                  "array %d field %d symmetry %d differs", array, field, sym);
    uint64_t pm, pn;
    double *c = read_all(path, &pm, &pn);
    ck_assert_mem_eq(a, c, (size_t)m * n * sizeof(double));
    free(a);
    free(b);
    free(c);
}
END_TEST

START_TEST(write_count_checked)
{
    char path[256];
    snprintf(path, sizeof path, "%s/c.mtx", base);
    FILE *f = fopen(path, "w");
    spm_mmio_header_t h = {SPM_MMIO_COORDINATE, SPM_MMIO_REAL, SPM_MMIO_GENERAL, 2, 2, 1};
    spm_mmio_writer_t *w = spm_mmio_writer_open(f, &h);
    ck_assert_int_eq(spm_mmio_writer_put(w, 0, 0, 1.0), 0);
    ck_assert_int_eq(spm_mmio_writer_put(w, 1, 1, 1.0), SPM_ERANGE);
    ck_assert_int_eq(spm_mmio_writer_close(&w), 0);
    w = spm_mmio_writer_open(f, &h);
    ck_assert_int_eq(spm_mmio_writer_close(&w), SPM_EFORMAT);
    fclose(f);
}
END_TEST

/*  Each bad file must fail with "PATH:LINE: " and a word of what is wrong. */
static const struct {
    const char *text;
    int line;
    const char *says;
} bad[] = {
    {"hello\n1 1 1\n1 1 1\n", 1, "banner"},
    {"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "complex"},
    {"%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", 1, "hermitian"},
    {"%%MatrixMarket vector coordinate real general\n1 1 1\n1 1 1\n", 1, "vector"},
    {"%%MatrixMarket matrix coordinate real general\n% c\n4 4\n", 3, "size line"},
    {"%%MatrixMarket matrix coordinate real general\n2 x 1\n1 1 1\n", 2, "size line"},
    {"%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n", 2, "square"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 5\n", 2, "cannot fit"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 1 abc\n", 4, "abc"},
    {"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", 3, "integer"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n", 3, "outside"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 1\n", 3, "outside"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1\n", 3, "row col"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\n", 3, "missing value"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1 7\n", 3, "after the entry"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n", 4, "truncated"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 1\n", 4, "more entries"},
    {"%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n", 3, "diagonal"},
    {"%%MatrixMarket matrix array real general\n2 1\n1\n", 3, "truncated"},
    {"%%MatrixMarket matrix array real general\n1 1\n1e999\n", 3, "out of range"},
    {"%%MatrixMarket matrix array pattern general\n1 1\n", 1, "pattern"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 nan\n", 4, "finite"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n\n% c\n1 1 inf\n", 5, "finite"},
    {"%%MatrixMarket matrix array real general\n2 1\n1\r\n-inf\r\n", 4, "finite"},
    {"%%MatrixMarket matrix array real general\n2 1\n1\n-1e400", 4, "out of range"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 1\n% a\n\n2 2 1\n% b\n1 x", 7,
     "more entries"},
    {"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n% end\n", 4, "truncated"},
    {"", 0, "empty"},
};

/*  ... whatever chunks its entries are parsed in (1 byte: every line
    cut; 0: the default, one chunk). */
START_TEST(bad_files)
{
    char path[256];
    snprintf(path, sizeof path, "%s/bad.mtx", base);
    FILE *f = fopen(path, "w");
    fputs(bad[_i].text, f);
    fclose(f);
    static const size_t chunks[] = {0, 1, 2, 3, 5, 8};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        spm_mmio_t *r = spm_mmio_open(path);
        int rc = SPM_EFORMAT;
        if (r) {
            spm_mmio_set_chunk(r, chunks[c]);
            uint64_t i, j;
            double v;
            while ((rc = spm_mmio_next(r, &i, &j, &v)) == 1)
                ;
            spm_mmio_destroy(&r);
        }
        ck_assert_int_eq(rc, SPM_EFORMAT);
        char want[300];
        snprintf(want, sizeof want, "%s:%d: ", path, bad[_i].line);
        const char *d = spm_error_detail();
        ck_assert_msg(strncmp(d, want, strlen(want)) == 0, "case %d, chunk %zu: '%s' lacks '%s'",
                      _i, chunks[c], d, want);
        ck_assert_msg(strstr(d, bad[_i].says) != NULL, "case %d, chunk %zu: '%s' lacks '%s'", _i,
                      chunks[c], d, bad[_i].says);
    }
}
END_TEST

/*  One entry as read. */
typedef struct {
    uint64_t i, j;
    double v;
} entry_t;

/*  Reads PATH with its entries parsed in chunks of CHUNK bytes into
    OUT (at most MAX); returns how many, asserting a clean end. */
static size_t read_entries(const char *path, size_t chunk, entry_t *out, size_t max)
{
    spm_mmio_t *r = spm_mmio_open(path);
    ck_assert_msg(r != NULL, "%s", spm_error_detail());
    spm_mmio_set_chunk(r, chunk);
    size_t n = 0;
    int rc;
    entry_t e;
    while ((rc = spm_mmio_next(r, &e.i, &e.j, &e.v)) == 1) {
        ck_assert_uint_lt(n, max);
        out[n++] = e;
    }
    ck_assert_msg(rc == 0, "chunk %zu: %s", chunk, spm_error_detail());
    spm_mmio_destroy(&r);
    return n;
}

/*  Text with a chunk boundary at every byte: CRLF and LF lines, comments
    and blank lines between entries, blanks and tabs, values numparse and
    strtod read, and no newline after the last line. Every chunk size
    gives the same entries, in the same order, as the expected list. */
START_TEST(chunks_in_awkward_places)
{
    static const char text[] = "%%MatrixMarket matrix coordinate real symmetric\r\n"
                               "% a comment\r\n"
                               "4 4 6\r\n"
                               "1 1 0.5\r\n"
                               "\r\n"
                               "% between entries, with a 9 9 9 in it\n"
                               "  2\t1   -1.25e-3  \n"
                               "\n"
                               "3 2 +7\r\n"
                               "4 1 1e308\n"
                               "4 3 4.9406564584124654e-324\n"
                               "% the last line has no newline\n"
                               "4 4 -0.10000000000000001";
    static const entry_t want[] = {{0, 0, 0.5},
                                   {1, 0, -1.25e-3},
                                   {0, 1, -1.25e-3},
                                   {2, 1, 7},
                                   {1, 2, 7},
                                   {3, 0, 1e308},
                                   {0, 3, 1e308},
                                   {3, 2, 4.9406564584124654e-324},
                                   {2, 3, 4.9406564584124654e-324},
                                   {3, 3, -0.1}};
    size_t nwant = sizeof want / sizeof *want;
    char path[256];
    snprintf(path, sizeof path, "%s/awkward.mtx", base);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    for (size_t chunk = 0; chunk <= sizeof text; chunk++) {
        entry_t got[16];
        size_t n = read_entries(path, chunk, got, 16);
        ck_assert_msg(n == nwant, "chunk %zu: %zu entries", chunk, n);
        for (size_t k = 0; k < n; k++)
            ck_assert_msg(got[k].i == want[k].i && got[k].j == want[k].j &&
                              memcmp(&got[k].v, &want[k].v, sizeof(double)) == 0,
                          "chunk %zu, entry %zu: (%llu, %llu, %a)", chunk, k,
                          (unsigned long long)got[k].i, (unsigned long long)got[k].j, got[k].v);
    }
}
END_TEST

/*  An array file cut anywhere: every value lands at its position. */
START_TEST(array_chunks_keep_positions)
{
    char path[256];
    snprintf(path, sizeof path, "%s/array.mtx", base);
    FILE *f = fopen(path, "w");
    fputs("%%MatrixMarket matrix array integer general\n3 4\n", f);
    for (int k = 0; k < 12; k++)
        fprintf(f, k % 3 ? "%d\n" : "%% col\n%d\r\n", k - 5);
    fclose(f);
    for (size_t chunk = 0; chunk < 64; chunk++) {
        entry_t got[16];
        ck_assert_uint_eq(read_entries(path, chunk, got, 16), 12);
        for (int k = 0; k < 12; k++) {
            ck_assert_uint_eq(got[k].i, (uint64_t)(k % 3));
            ck_assert_uint_eq(got[k].j, (uint64_t)(k / 3));
            ck_assert(got[k].v == k - 5);
        }
    }
}
END_TEST

/*  Values that must come back bit for bit through the writer and the
    chunked reader on every core: subnormals, the extremes, -0, integers,
    and many random doubles of every magnitude. */
START_TEST(values_round_trip_through_chunks)
{
    enum { N = 200000 };
    char path[256];
    snprintf(path, sizeof path, "%s/values.mtx", base);
    double *v = malloc(N * sizeof *v);
    static const double special[] = {4.9406564584124654e-324,
                                     -4.9406564584124654e-324,
                                     2.2250738585072009e-308,
                                     2.2250738585072014e-308,
                                     1.7976931348623157e308,
                                     -1.7976931348623157e308,
                                     1e308,
                                     -0.0,
                                     1.0,
                                     -1.0,
                                     123456789.0,
                                     9007199254740993.0,
                                     0.1,
                                     1e-5,
                                     1e22,
                                     1e23};
    uint64_t x = 88172645463325252u;
    for (int k = 0; k < N; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t bits = x;
        if (k % 4 == 0) /* any finite double */
            bits &= ~(UINT64_C(0x7ff) << 52) | ((x >> 7) % 0x7ff) << 52;
        else if (k % 4 == 1) /* an integer */
            bits = 0, v[k] = (double)(int64_t)(x >> 20) - (double)(x >> 44);
        else /* a moderate value, as in matrices */
            bits = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) + (x >> 60) - 8) << 52;
        if (k % 4 != 1)
            memcpy(&v[k], &bits, sizeof bits);
        if (k < (int)(sizeof special / sizeof *special))
            v[k] = special[k];
    }
    FILE *f = fopen(path, "w+");
    spm_mmio_header_t h = {SPM_MMIO_ARRAY, SPM_MMIO_REAL, SPM_MMIO_GENERAL, N, 1, 0};
    spm_mmio_writer_t *w = spm_mmio_writer_open(f, &h);
    for (int k = 0; k < N; k++)
        ck_assert_int_eq(spm_mmio_writer_put(w, (uint64_t)k, 0, v[k]), 0);
    ck_assert_int_eq(spm_mmio_writer_close(&w), 0);
    fclose(f);
    entry_t *got = malloc(N * sizeof *got);
    static const size_t chunks[] = {0, 4096, 777};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        ck_assert_uint_eq(read_entries(path, chunks[c], got, N), N);
        for (int k = 0; k < N; k++)
            ck_assert_msg(memcmp(&got[k].v, &v[k], sizeof(double)) == 0 && got[k].i == (uint64_t)k,
                          "entry %d: wrote %a, read %a", k, v[k], got[k].v);
    }
    free(got);
    free(v);
}
END_TEST

/*  Writes the M x N array A (row-major) to PATH as a .npy, in Fortran
    order when FORTRAN is set. */
static void write_npy(const char *path, const double *a, uint64_t m, uint64_t n, int fortran)
{
    spm_npy_t h;
    ck_assert_int_eq(spm_npy_set(&h, "<f8", 2, (uint64_t[]){m, n}), 0);
    h.fortran = fortran;
    char head[SPM_NPY_WRITTEN_MAX];
    size_t len = spm_npy_header(&h, 0, head);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(head, 1, len, f), len);
    for (uint64_t k = 0; k < m * n; k++) { /* little-endian host */
        const double *v = &a[fortran ? k % m * n + k / m : k];
        ck_assert_uint_eq(fwrite(v, sizeof *v, 1, f), 1);
    }
    ck_assert_int_eq(fclose(f), 0);
}

/*  A dense .npy read a run at a time (how the product's cutter reads it)
    gives every entry once, in the file's order, each run within one row
    (C order) or column (Fortran order), runs of more than one value, and
    a nan refused at its place. Arrays of 7 x 1000 and 1000 x 7 put the
    reader's batches of 4096 values across a row or a column. */
START_TEST(npy_runs_are_the_entries_in_order)
{
    int fortran = _i;
    uint64_t m = fortran ? 1000 : 7, n = fortran ? 7 : 1000;
    double *a = malloc(m * n * sizeof *a);
    for (uint64_t k = 0; k < m * n; k++)
        a[k] = k % 5 == 0 ? 0.0 : (double)k + 0.5; /* zeros too: they are entries */
    write_npy(path("A.npy"), a, m, n, fortran);
    spm_mmio_t *r = spm_mmio_open(path("A.npy"));
    ck_assert_msg(r != NULL, "%s", spm_error_detail());
    ck_assert_int_eq(spm_mmio_order(r), fortran ? SPM_MMIO_BY_COLUMN : SPM_MMIO_BY_ROW);
    uint64_t i, j, seen = 0, runs = 0, longest = 0;
    const double *v;
    size_t len;
    int rc;
    while ((rc = spm_mmio_next_run(r, &i, &j, &v, &len)) == 1) {
        ck_assert_uint_ge(len, 1);
        /* the next entry in the file's order starts the run */
        ck_assert_uint_eq(fortran ? j * m + i : i * n + j, seen);
        ck_assert_uint_le(fortran ? i + len : j + len, fortran ? m : n);
        for (size_t q = 0; q < len; q++)
            ck_assert(v[q] == a[fortran ? (i + q) * n + j : i * n + j + q]);
        seen += len;
        runs++;
        longest = len > longest ? len : longest;
    }
    ck_assert_msg(rc == 0, "%s", spm_error_detail());
    ck_assert_uint_eq(seen, m * n);
    ck_assert_uint_eq(spm_mmio_done(r), m * n);
    ck_assert_uint_gt(longest, 1);
    ck_assert_uint_lt(runs, m * n / 100);
    spm_mmio_destroy(&r);
    /* a nan in the second batch: refused with its row and column */
    a[fortran ? 600 * n + 5 : 5 * n + 600] = NAN;
    write_npy(path("A.npy"), a, m, n, fortran);
    ck_assert_ptr_nonnull(r = spm_mmio_open(path("A.npy")));
    while ((rc = spm_mmio_next_run(r, &i, &j, &v, &len)) == 1)
        ;
    ck_assert_int_eq(rc, SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), fortran ? "the entry at row 600, column 5"
                                                             : "the entry at row 5, column 600"));
    spm_mmio_destroy(&r);
    free(a);
}
END_TEST

START_TEST(missing_file)
{
    ck_assert_ptr_null(spm_mmio_open("/nonexistent/A.mtx"));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "/nonexistent/A.mtx"));
}
END_TEST

START_TEST(real_matrix)
{
    const char *path = "../shared/data/mtx/bcsstk13.mtx";
    if (access(path, R_OK) != 0)
        path = "/work/shared/data/mtx/bcsstk13.mtx";
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "skipped: %s is absent\n", path);
        return;
    }
    uint64_t m, n;
    double *a = read_all(path, &m, &n);
    int rm, rn;
    double *b = ref_read_mtx(path, &rm, &rn);
    ck_assert_uint_eq(m, 2003);
    ck_assert_mem_eq(a, b, m * n * sizeof(double));
    free(a);
    free(b);
}
END_TEST

static Suite *mm_mmio_suite(void)
{
    Suite *s = suite_create("mm_mmio");
    const spm_test_case_t c = {
        .timeout_s = 30, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD_LOOP(s, &c, read_every_kind, 0, 18);
    SPM_TEST_ADD_LOOP(s, &c, write_every_kind, 0, 18);
    SPM_TEST_ADD(s, &c, write_count_checked);
    SPM_TEST_ADD_LOOP(s, &c, bad_files, 0, sizeof bad / sizeof *bad);
    SPM_TEST_ADD(s, &c, chunks_in_awkward_places);
    SPM_TEST_ADD(s, &c, array_chunks_keep_positions);
    SPM_TEST_ADD(s, &c, values_round_trip_through_chunks);
    SPM_TEST_ADD_LOOP(s, &c, npy_runs_are_the_entries_in_order, 0, 2);
    SPM_TEST_ADD(s, &c, missing_file);
    SPM_TEST_ADD(s, &c, real_matrix);
    return s;
}

SPM_TEST_MAIN(mm_mmio_suite)
