/*  Blocks: encode/decode round trips of every form, the best-form choice,
    merge, and validation refusing every truncated or forged block. */
#include "isa/core/codec.h"
#include "isa/matrix/block.h"
#include "isa/matrix/raw.h"
#include "tests/check_main.h"
#include "tests/ref/matmul_ref.h"
#include "spm/spm.h"

/*  Encodes the best form of a copy of dense A (m x n). */
static void encode(const double *a, uint32_t m, uint32_t n, void **data, size_t *len)
{
    double *copy = malloc((size_t)m * n * sizeof(double));
    memcpy(copy, a, (size_t)m * n * sizeof(double));
    ck_assert_int_eq(spm_mm_encode_dense(copy, m, n, data, len), 0);
}

static void check_same(const void *data, size_t len, const double *a, uint32_t m, uint32_t n)
{
    spm_mm_block_t *b = NULL;
    ck_assert_int_eq(spm_mm_block_decode(data, len, &b), 0);
    double *d = spm_mm_block_to_dense(b);
    ck_assert_mem_eq(d, a, (size_t)m * n * sizeof(double));
    free(d);
    spm_mm_block_destroy(&b);
    ck_assert_ptr_null(b);
}

START_TEST(round_trip_by_fill)
{
    static const struct {
        double density;
        spm_mm_kind_t kind;
    } cases[] = {{0.0, SPM_MM_ZERO}, {0.05, SPM_MM_CSR}, {0.5, SPM_MM_DENSE}, {1.0, SPM_MM_DENSE}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint32_t m = 37, n = 53;
        double *a = ref_random(m, n, cases[c].density, 11 + c, REF_REAL);
        void *data;
        size_t len;
        encode(a, m, n, &data, &len);
        spm_mm_meta_t meta;
        ck_assert_int_eq(spm_mm_block_meta(data, len, &meta), 0);
        ck_assert_int_eq(meta.kind, cases[c].kind);
        ck_assert_uint_eq(meta.rows, m);
        ck_assert_uint_eq(meta.cols, n);
        ck_assert_int_eq(spm_mm_block_validate(data, len), 0);
        check_same(data, len, a, m, n);
        if (cases[c].kind == SPM_MM_ZERO)
            ck_assert_uint_eq(len, SPM_MM_HEADER); /* a flag, no payload */
        char sum[128];
        spm_mm_block_summary(data, len, sum, sizeof sum);
        ck_assert_ptr_nonnull(strstr(sum, "37x53"));
        free(data);
        free(a);
    }
}
END_TEST

/*  Every proper prefix of a valid block is refused, and so is one byte more. */
START_TEST(truncated_refused)
{
    for (int d = 0; d < 2; d++) {
        double *a = ref_random(9, 7, d ? 0.9 : 0.08, 5, REF_REAL);
        void *data;
        size_t len;
        encode(a, 9, 7, &data, &len);
        for (size_t l = 0; l < len; l++)
            ck_assert_int_eq(spm_mm_block_validate(data, l), SPM_EFORMAT);
        unsigned char *longer = malloc(len + 1);
        memcpy(longer, data, len);
        longer[len] = 0;
        ck_assert_int_eq(spm_mm_block_validate(longer, len + 1), SPM_EFORMAT);
        spm_mm_block_t *b = NULL;
        ck_assert_int_eq(spm_mm_block_decode(data, len - 1, &b), SPM_EFORMAT);
        ck_assert_ptr_null(b);
        free(longer);
        free(data);
        free(a);
    }
}
END_TEST

/*  A CSR block with its parts forged one at a time. */
START_TEST(forged_refused)
{
    /* 3 x 10: row 0 = {1: 1.0, 3: 2.0}, row 1 empty, row 2 = {0: 3.0} */
    double a[30] = {0};
    a[1] = 1, a[3] = 2, a[20] = 3;
    void *data;
    size_t len;
    encode(a, 3, 10, &data, &len);
    unsigned char *p = data;
    ck_assert_int_eq(spm_le32(p + 4), SPM_MM_CSR);
    const size_t rp = SPM_MM_HEADER, ci = rp + 4 * 4;
    struct {
        size_t at;
        uint32_t v;
        int is64;
    } forged[] = {
        {0, 0x12345678, 0},          /* magic */
        {4, 7, 0},                   /* kind */
        {8, 0, 0},                   /* zero rows */
        {12, SPM_MM_MAX_DIM + 1, 0}, /* too many columns */
        {16, 31, 1},                 /* nnz beyond rows*cols */
        {rp, 1, 0},                  /* first row pointer not 0 */
        {rp + 8, 1, 0},              /* row pointers decrease */
        {rp + 12, 2, 0},             /* last row pointer not nnz */
        {ci, 10, 0},                 /* column out of range */
        {ci + 4, 1, 0},              /* columns not increasing */
        {ci + 12, 1, 0},             /* padding before the values not zero */
    };
    for (size_t f = 0; f < sizeof forged / sizeof *forged; f++) {
        unsigned char *q = malloc(len);
        memcpy(q, data, len);
        if (forged[f].is64)
            spm_put_le64(q + forged[f].at, forged[f].v);
        else
            spm_put_le32(q + forged[f].at, forged[f].v);
        ck_assert_msg(spm_mm_block_validate(q, len) == SPM_EFORMAT, "forgery %zu accepted", f);
        ck_assert_str_ne(spm_error_detail(), "");
        free(q);
    }
    free(data);
    /* a dense block whose nnz lies, and a zero block with a payload */
    double d[4] = {1, 2, 3, 4};
    encode(d, 2, 2, &data, &len);
    spm_put_le64((unsigned char *)data + 16, 3);
    ck_assert_int_eq(spm_mm_block_validate(data, len), SPM_EFORMAT);
    spm_put_le32((unsigned char *)data + 4, SPM_MM_ZERO);
    spm_put_le64((unsigned char *)data + 16, 0);
    ck_assert_int_eq(spm_mm_block_validate(data, len), SPM_EFORMAT);
    free(data);
}
END_TEST

START_TEST(merge_sums)
{
    uint32_t m = 20, n = 30;
    double *a = ref_random(m, n, 0.05, 1, REF_REAL), *b = ref_random(m, n, 0.7, 2, REF_REAL);
    void *x, *y, *z;
    size_t xl, yl, zl;
    encode(a, m, n, &x, &xl);
    encode(b, m, n, &y, &yl);
    ck_assert_int_eq(spm_mm_block_merge(x, xl, y, yl, &z, &zl), 0);
    for (size_t i = 0; i < (size_t)m * n; i++)
        a[i] += b[i];
    check_same(z, zl, a, m, n);
    free(z);
    /* no earlier version: the partial itself */
    ck_assert_int_eq(spm_mm_block_merge(NULL, 0, y, yl, &z, &zl), 0);
    check_same(z, zl, b, m, n);
    free(z);
    /* shapes that differ are refused */
    double *c = ref_random(n, m, 0.5, 3, REF_REAL);
    void *w;
    size_t wl;
    encode(c, n, m, &w, &wl);
    ck_assert_int_eq(spm_mm_block_merge(x, xl, w, wl, &z, &zl), SPM_EFORMAT);
    const spm_sdb_type_t *t = spm_sdb_type_find("mm.block");
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(t->merge);
    free(w);
    free(c);
    free(x);
    free(y);
    free(a);
    free(b);
}
END_TEST

/*  A result whose entries cancel to -0.0 is encoded with those entries as
    zeros: its nnz counts only the true non-zeros, in either form, and the
    block passes validation (which counts -0.0 as a zero). */
START_TEST(negative_zeros_are_zeros)
{
    for (int dense = 0; dense < 2; dense++) {
        uint32_t m = 8, n = 8, want = 0;
        double *acc = spm_mm_acc_new(m, n, NULL);
        ck_assert_ptr_nonnull(acc);
        for (uint32_t i = 0; i < m * n; i++) {
            int nz = dense ? i % 2 == 0 : i % 16 == 0;
            acc[i] = nz ? 1.0 + i : -0.0;
            want += (uint32_t)nz;
        }
        void *data;
        size_t len;
        spm_mm_meta_t meta;
        ck_assert_int_eq(spm_mm_acc_finish(acc, m, n, &data, &len), 0);
        ck_assert_int_eq(spm_mm_block_validate(data, len), 0);
        ck_assert_int_eq(spm_mm_block_meta(data, len, &meta), 0);
        ck_assert_int_eq(meta.kind, dense ? SPM_MM_DENSE : SPM_MM_CSR);
        ck_assert_uint_eq(meta.nnz, want);
        free(data);
    }
}
END_TEST

START_TEST(raw_blocks)
{
    spm_buf_t b = {0};
    ck_assert_int_eq(spm_mm_raw_init(&b, 4, 5), 0);
    spm_mm_raw_add(&b, 3, 4, 1.5);
    spm_mm_raw_add(&b, 0, 0, 2.0);
    spm_mm_raw_add(&b, 3, 4, 0.5); /* duplicate: summed */
    spm_mm_raw_add(&b, 1, 1, 0.0); /* zero: dropped */
    ck_assert_int_eq(spm_mm_raw_finish(&b), 0);
    ck_assert_int_eq(spm_mm_raw_validate(b.data, b.len), 0);
    spm_mm_block_t *blk = NULL;
    ck_assert_int_eq(spm_mm_raw_to_block(b.data, b.len, &blk), 0);
    ck_assert_uint_eq(blk->m.nnz, 2);
    double *d = spm_mm_block_to_dense(blk);
    ck_assert(d[19] == 2.0 && d[0] == 2.0);
    free(d);
    spm_mm_block_destroy(&blk);
    for (size_t l = 0; l < b.len; l++)
        ck_assert_int_eq(spm_mm_raw_validate(b.data, l), SPM_EFORMAT);
    spm_put_le32(b.data + SPM_MM_RAW_HEADER + 4, 5); /* column 5 of 5 */
    ck_assert_int_eq(spm_mm_raw_validate(b.data, b.len), SPM_EFORMAT);
    spm_buf_free(&b);
}
END_TEST

static Suite *mm_block_suite(void)
{
    Suite *s = suite_create("mm_block");
    SPM_TEST_ADD(s, NULL, round_trip_by_fill);
    SPM_TEST_ADD(s, NULL, truncated_refused);
    SPM_TEST_ADD(s, NULL, forged_refused);
    SPM_TEST_ADD(s, NULL, merge_sums);
    SPM_TEST_ADD(s, NULL, raw_blocks);
    SPM_TEST_ADD(s, NULL, negative_zeros_are_zeros);
    return s;
}

SPM_TEST_MAIN(mm_block_suite)
