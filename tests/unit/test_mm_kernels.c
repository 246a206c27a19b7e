/*  The matrix SIs run in-process (spm_si_exec_local), every kernel checked
    against the plain triple loop of tests/ref/matmul_ref.h. */
#include "runtime/si.h"
#include "isa/matrix/block.h"
#include "isa/matrix/kernels.h"
#include "isa/matrix/raw.h"
#include "tests/check_main.h"
#include "tests/ref/matmul_ref.h"

static void encode(const double *a, uint32_t m, uint32_t n, void **data, size_t *len)
{
    double *copy = malloc((size_t)m * n * sizeof(double) + 1);
    memcpy(copy, a, (size_t)m * n * sizeof(double));
    ck_assert_int_eq(spm_mm_encode_dense(copy, m, n, data, len), 0);
}

static double *decode(const void *data, size_t len, spm_mm_kind_t *kind)
{
    spm_mm_block_t *b = NULL;
    ck_assert_int_eq(spm_mm_block_decode(data, len, &b), 0);
    if (kind)
        *kind = b->m.kind;
    double *d = spm_mm_block_to_dense(b);
    spm_mm_block_destroy(&b);
    return d;
}

/*  Densities that give dense and CSR operands (CSR below 1/8 fill; at 0.1
    the rows of a wide B hold more than the eight entries of one AVX-512
    step). */
static const double fills[] = {1.0, 0.1};

/*  mm.multiply with C in mode W, RW (C0 given) and ACC on every pair of
    operand forms, for shape m x p times p x n. */
static void check_multiply(int m, int p, int n)
{
    for (int fa = 0; fa < 2; fa++)
        for (int fb = 0; fb < 2; fb++)
            for (int mode = 0; mode < 3; mode++) {
                double *a = ref_random(m, p, fills[fa], 100 + fa, REF_REAL);
                double *b = ref_random(p, n, fills[fb], 200 + fb, REF_REAL);
                double *c0 = ref_random(m, n, 0.3, 300, REF_REAL);
                double *r = ref_matmul(m, p, n, a, b);
                spm_si_operand_t ops[3] = {{.mode = SPM_R, 0}, {.mode = SPM_R, 0}};
                void *ca = NULL, *cb = NULL, *cc = NULL;
                encode(a, m, p, &ca, &ops[0].in_len);
                encode(b, p, n, &cb, &ops[1].in_len);
                ops[0].in = ca;
                ops[1].in = cb;
                ops[2].mode = mode == 0 ? SPM_W : mode == 1 ? SPM_RW : SPM_ACC;
                if (mode == 1) {
                    encode(c0, m, n, &cc, &ops[2].in_len);
                    ops[2].in = cc;
                    for (size_t i = 0; i < (size_t)m * n; i++)
                        r[i] += c0[i];
                }
                ck_assert_int_eq(spm_si_exec_local("mm.multiply", ops, 3, NULL, 0, NULL, NULL), 0);
                ck_assert_int_eq(spm_mm_block_validate(ops[2].out, ops[2].out_len), 0);
                double *c = decode(ops[2].out, ops[2].out_len, NULL);
                double err = ref_rel_err(m, n, c, r);
                ck_assert_msg(err < 1e-13, "%s %dx%dx%d mode %d: error %g",
                              spm_mm_kernel_name(fa ? SPM_MM_CSR : SPM_MM_DENSE,
                                                 fb ? SPM_MM_CSR : SPM_MM_DENSE),
                              m, p, n, mode, err);
                free(c);
                free(ops[2].out);
                free(ca);
                free(cb);
                free(cc);
                free(a);
                free(b);
                free(c0);
                free(r);
            }
}

START_TEST(multiply_square)
{
    check_multiply(64, 64, 64);
}
END_TEST

START_TEST(multiply_rectangular)
{
    check_multiply(31, 7, 50);
    check_multiply(1, 40, 1);
    check_multiply(45, 1, 9);
    check_multiply(20, 150, 260);
}
END_TEST

/*  Sparse x sparse with little fill stays CSR; dense x dense stays dense. */
START_TEST(result_form_by_fill)
{
    double *a = ref_random(100, 100, 0.01, 1, REF_REAL),
           *b = ref_random(100, 100, 0.01, 2, REF_REAL);
    spm_si_operand_t ops[3] = {{.mode = SPM_R, 0}, {.mode = SPM_R, 0}, {.mode = SPM_W, 0}};
    void *ca, *cb;
    encode(a, 100, 100, &ca, &ops[0].in_len);
    encode(b, 100, 100, &cb, &ops[1].in_len);
    ops[0].in = ca;
    ops[1].in = cb;
    ck_assert_int_eq(spm_si_exec_local("mm.multiply", ops, 3, NULL, 0, NULL, NULL), 0);
    spm_mm_kind_t kind;
    double *c = decode(ops[2].out, ops[2].out_len, &kind);
    ck_assert_int_ne(kind, SPM_MM_DENSE);
    double *r = ref_matmul(100, 100, 100, a, b);
    ck_assert(ref_rel_err(100, 100, c, r) < 1e-14);
    free(c);
    free(r);
    free(ops[2].out);
    free(ca);
    free(cb);
    free(a);
    free(b);
}
END_TEST

/*  One SI, three products of mixed forms and inner sizes, added to C. */
START_TEST(multiply_several_products)
{
    int m = 40, n = 30, ps[3] = {20, 35, 9};
    double dens[3][2] = {{1.0, 1.0}, {0.05, 1.0}, {0.1, 0.03}};
    spm_si_operand_t ops[7];
    memset(ops, 0, sizeof ops);
    void *bufs[7] = {0};
    double *c0 = ref_random(m, n, 1.0, 9, REF_REAL);
    double *r = calloc((size_t)m * n, sizeof(double));
    memcpy(r, c0, (size_t)m * n * sizeof(double));
    for (int q = 0; q < 3; q++) {
        double *a = ref_random(m, ps[q], dens[q][0], 10 + q, REF_REAL);
        double *b = ref_random(ps[q], n, dens[q][1], 20 + q, REF_REAL);
        double *ab = ref_matmul(m, ps[q], n, a, b);
        for (int i = 0; i < m * n; i++)
            r[i] += ab[i];
        encode(a, m, ps[q], &bufs[2 * q], &ops[2 * q].in_len);
        encode(b, ps[q], n, &bufs[2 * q + 1], &ops[2 * q + 1].in_len);
        ops[2 * q].in = bufs[2 * q];
        ops[2 * q + 1].in = bufs[2 * q + 1];
        ops[2 * q].mode = ops[2 * q + 1].mode = SPM_R;
        free(a);
        free(b);
        free(ab);
    }
    encode(c0, m, n, &bufs[6], &ops[6].in_len);
    ops[6].in = bufs[6];
    ops[6].mode = SPM_RW;
    ck_assert_int_eq(spm_si_exec_local("mm.multiply", ops, 7, NULL, 0, NULL, NULL), 0);
    double *c = decode(ops[6].out, ops[6].out_len, NULL);
    ck_assert(ref_rel_err(m, n, c, r) < 1e-14);
    /* an even operand count is refused */
    ck_assert_int_eq(spm_si_exec_local("mm.multiply", ops + 1, 6, NULL, 0, NULL, NULL), SPM_EINVAL);
    free(c);
    free(ops[6].out);
    for (int i = 0; i < 7; i++)
        free(bufs[i]);
    free(c0);
    free(r);
}
END_TEST

START_TEST(shape_mismatch_fails)
{
    double *a = ref_random(4, 5, 1.0, 1, REF_REAL), *b = ref_random(6, 3, 1.0, 2, REF_REAL);
    spm_si_operand_t ops[3] = {{.mode = SPM_R, 0}, {.mode = SPM_R, 0}, {.mode = SPM_W, 0}};
    void *ca, *cb;
    encode(a, 4, 5, &ca, &ops[0].in_len);
    encode(b, 6, 3, &cb, &ops[1].in_len);
    ops[0].in = ca;
    ops[1].in = cb;
    ck_assert_int_eq(spm_si_exec_local("mm.multiply", ops, 3, NULL, 0, NULL, NULL), SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "do not agree"));
    /* a forged operand never reaches a kernel */
    ((unsigned char *)ca)[0] ^= 0xff;
    ck_assert_int_eq(spm_si_exec_local("mm.multiply", ops, 3, NULL, 0, NULL, NULL), SPM_EFORMAT);
    free(ca);
    free(cb);
    free(a);
    free(b);
}
END_TEST

START_TEST(load_add_store)
{
    /* mm.load: a raw block with duplicates becomes its best form */
    spm_buf_t raw = {0};
    ck_assert_int_eq(spm_mm_raw_init(&raw, 3, 2), 0);
    spm_mm_raw_add(&raw, 2, 1, 4.0);
    spm_mm_raw_add(&raw, 0, 0, 1.0);
    spm_mm_raw_add(&raw, 2, 1, -1.0);
    ck_assert_int_eq(spm_mm_raw_finish(&raw), 0);
    spm_si_operand_t ops[2] = {{.mode = SPM_R, .in = raw.data, .in_len = raw.len},
                               {.mode = SPM_W, 0}};
    void *reply;
    size_t rlen;
    ck_assert_int_eq(spm_si_exec_local("mm.load", ops, 2, NULL, 0, &reply, &rlen), 0);
    ck_assert_uint_eq(rlen, 12);
    ck_assert_uint_eq(spm_le64((unsigned char *)reply + 4), 2);
    free(reply);
    double *d = decode(ops[1].out, ops[1].out_len, NULL);
    double want[6] = {1, 0, 0, 0, 0, 3};
    ck_assert_mem_eq(d, want, sizeof want);
    free(d);
    /* mm.add: C = C + P */
    spm_si_operand_t add[2] = {{.mode = SPM_R, .in = ops[1].out, .in_len = ops[1].out_len},
                               {.mode = SPM_RW, .in = ops[1].out, .in_len = ops[1].out_len}};
    ck_assert_int_eq(spm_si_exec_local("mm.add", add, 2, NULL, 0, NULL, NULL), 0);
    d = decode(add[1].out, add[1].out_len, NULL);
    ck_assert(d[0] == 2.0 && d[5] == 6.0 && d[1] == 0.0);
    free(d);
    /* mm.store: the same matrix, in its best form */
    spm_si_operand_t st = {.mode = SPM_RW, .in = add[1].out, .in_len = add[1].out_len};
    ck_assert_int_eq(spm_si_exec_local("mm.store", &st, 1, NULL, 0, NULL, NULL), 0);
    ck_assert_int_eq(st.out_len, add[1].out_len);
    ck_assert_mem_eq(st.out, add[1].out, st.out_len);
    free(st.out);
    free(add[1].out);
    free(ops[1].out);
    spm_buf_free(&raw);
}
END_TEST

static Suite *mm_kernels_suite(void)
{
    Suite *s = suite_create("mm_kernels");
    const spm_test_case_t c = {.timeout_s = 30};
    SPM_TEST_ADD(s, &c, multiply_square);
    SPM_TEST_ADD(s, &c, multiply_rectangular);
    SPM_TEST_ADD(s, &c, result_form_by_fill);
    SPM_TEST_ADD(s, &c, multiply_several_products);
    SPM_TEST_ADD(s, &c, shape_mismatch_fails);
    SPM_TEST_ADD(s, &c, load_add_store);
    return s;
}

SPM_TEST_MAIN(mm_kernels_suite)
