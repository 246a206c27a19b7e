/*  numfmt: every function writes exactly what snprintf writes, compared on
    millions of seeded random values (all exponents, the fast range, exact
    halfway cases) and on the edges (zeros, subnormals, powers of ten and
    their neighbours, the switch between fixed and exponent notation,
    rounding up to the next power of ten, infinities, NaN). */
#include "isa/core/numfmt.h"
#include "isa/core/rng.h"
#include "tests/check_main.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  Compares spm_fmt_g17(V) with "%.17g". Asserts only on a mismatch: a
    Check assertion per value would cost more than the formatting. */
static void same_g17(double v)
{
    char got[SPM_FMT_G17_MAX + 8], want[SPM_FMT_G17_MAX];
    memset(got, 'x', sizeof got);
    size_t n = spm_fmt_g17(got, v);
    int w = snprintf(want, sizeof want, "%.17g", v);
    if (n != (size_t)w || memcmp(got, want, n + 1) != 0)
        ck_abort_msg("%a: spm_fmt_g17 wrote '%.*s' (%zu bytes), printf '%s'", v, (int)n, got, n,
                     want);
}

/*  Both signs of V. */
static void same_g17_pm(double v)
{
    same_g17(v);
    same_g17(-v);
}

static void same_rounded(double v)
{
    char got[SPM_FMT_ROUNDED_MAX + 8], want[SPM_FMT_ROUNDED_MAX];
    memset(got, 'x', sizeof got);
    size_t n = spm_fmt_rounded(got, v);
    int w = snprintf(want, sizeof want, "%.0f", round(v));
    if (n != (size_t)w || memcmp(got, want, n + 1) != 0)
        ck_abort_msg("%a: spm_fmt_rounded wrote '%.*s', printf '%s'", v, (int)n, got, want);
}

static void same_u64(uint64_t v)
{
    char got[SPM_FMT_U64_MAX + 8], want[SPM_FMT_U64_MAX];
    memset(got, 'x', sizeof got);
    size_t n = spm_fmt_u64(got, v);
    int w = snprintf(want, sizeof want, "%llu", (unsigned long long)v);
    if (n != (size_t)w || memcmp(got, want, n + 1) != 0)
        ck_abort_msg("%llu: spm_fmt_u64 wrote '%.*s'", (unsigned long long)v, (int)n, got);
}

static double from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/*  Two million random bit patterns: every exponent, subnormals, NaNs with
    payloads. Values beyond 1e-12 to 1e45 (well outside the range the fast
    path serves) are handed to snprintf by design, and printf needs about
    two microseconds apiece for them; one in eight of those is compared,
    every other value is. */
START_TEST(g17_random_bit_patterns)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, 1);
    for (int i = 0; i < 2000000; i++) {
        double v = from_bits(spm_rng_next(&rng));
        if ((fabs(v) >= 1e-12 && fabs(v) <= 1e45) || i % 8 == 0)
            same_g17(v);
    }
}
END_TEST

/*  Random sign and mantissa with the exponents the fast path serves
    (about 1e-9 to 2^130), so its branches see millions of values. */
START_TEST(g17_random_fast_range)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, 2);
    for (int i = 0; i < 600000; i++) {
        uint64_t r = spm_rng_next(&rng);
        uint64_t biased = 1023 - 32 + spm_rng_below(&rng, 164);
        same_g17(from_bits((r & ~(UINT64_C(0x7ff) << 52)) | biased << 52));
    }
}
END_TEST

START_TEST(g17_random_values)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, 3);
    for (int i = 0; i < 100000; i++) {
        same_g17_pm(pow(10.0, 16.0 * spm_rng_uniform(&rng) - 8.0)); /* [1e-8, 1e8] */
        same_g17(2.0 * spm_rng_uniform(&rng) - 1.0);                /* as spm gen writes */
        same_g17_pm((double)(spm_rng_next(&rng) >> spm_rng_below(&rng, 64))); /* integers */
        same_g17_pm((double)spm_rng_below(&rng, 100000));
        same_g17_pm(spm_rng_uniform(&rng) * 1e20);
    }
}
END_TEST

/*  Values whose 18th significant digit is a 5 with nothing after it: the
    17 digits are an exact tie, which printf rounds to even. n / 4 with n
    odd in [4e15, 2^53) is such a value (n * 25 has 17 or 18 digits). */
START_TEST(g17_exact_ties)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, 4);
    uint64_t lo = UINT64_C(4000000000000001), span = (UINT64_C(1) << 53) - lo;
    for (int i = 0; i < 100000; i++) {
        uint64_t n = (lo + spm_rng_below(&rng, span)) | 1;
        same_g17_pm(ldexp((double)n, -2));
        /* and at other scales: n / 2^j for odd n of fewer digits */
        uint64_t k = (spm_rng_next(&rng) >> (11 + spm_rng_below(&rng, 40))) | 1;
        same_g17_pm(ldexp((double)k, -(int)spm_rng_below(&rng, 70)));
    }
    same_g17(1000000000000000.25); /* 1000000000000000.2 */
    same_g17(1000000000000000.75); /* 1000000000000000.8 */
}
END_TEST

START_TEST(g17_edges)
{
    static const double fixed[] = {0.0,
                                   1.0,
                                   0.1,
                                   0.2,
                                   0.3,
                                   0.5,
                                   1.0 / 3.0,
                                   2.0 / 3.0,
                                   123.456,
                                   9.9999999999999995e16,
                                   99999999999999999.0,
                                   99999999999999984.0,
                                   1e17 - 16,
                                   1e16 + 2,
                                   9007199254740991.0,
                                   9007199254740992.0,
                                   9.9999999999999999e-5,
                                   9.99999999999999999e-5,
                                   0.000099999999999999995,
                                   1e-4 * (1.0 - DBL_EPSILON),
                                   1e-5,
                                   1e-6,
                                   1e-7,
                                   0x1p-20,
                                   0x1p-21,
                                   0x1p-30,
                                   0x1p-31,
                                   0x1p52,
                                   0x1p53,
                                   0x1p63,
                                   0x1p64,
                                   0x1p127,
                                   0x1p128,
                                   0x1.fffffffffffffp127,
                                   0x1.fffffffffffffp126,
                                   3.4028236692093846e38,
                                   DBL_MIN,
                                   DBL_MAX,
                                   DBL_TRUE_MIN,
                                   DBL_MIN / 2,
                                   DBL_MIN - DBL_TRUE_MIN,
                                   DBL_EPSILON,
                                   M_PI,
                                   M_E};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        same_g17_pm(fixed[i]);
    for (int k = -30; k <= 30; k++) { /* 10^k as strtod reads it, and its neighbours */
        char s[16];
        snprintf(s, sizeof s, "1e%d", k);
        double p = strtod(s, NULL);
        same_g17_pm(p);
        same_g17_pm(nextafter(p, 0.0));
        same_g17_pm(nextafter(p, INFINITY));
        same_g17_pm(5 * p); /* 5 * 10^k: a tie in the 2nd digit, not the 18th */
    }
    for (int k = -1074; k <= 1023; k++) { /* every power of two and its neighbours */
        double p = ldexp(1.0, k);
        same_g17_pm(p);
        same_g17_pm(nextafter(p, 0.0));
        same_g17_pm(nextafter(p, INFINITY));
    }
    for (int d = 1; d <= 20; d++) /* 0.9, 0.99, ... 0.99999999999999999999 */
        for (int k = -10; k <= 25; k++) {
            char s[48];
            snprintf(s, sizeof s, "%.*se%d", d + 2, "0.99999999999999999999999", k);
            same_g17_pm(strtod(s, NULL));
        }
    same_g17_pm(INFINITY);
    same_g17(NAN);
    same_g17(-NAN);
    char buf[SPM_FMT_G17_MAX];
    ck_assert_uint_eq(spm_fmt_g17(buf, -0.0), 2);
    ck_assert_str_eq(buf, "-0");
    ck_assert_uint_eq(spm_fmt_g17(buf, 0.1), 19);
    ck_assert_str_eq(buf, "0.10000000000000001");
    spm_fmt_g17(buf, 1e-5);
    ck_assert_str_eq(buf, "1.0000000000000001e-05");
    spm_fmt_g17(buf, 1e17);
    ck_assert_str_eq(buf, "1e+17");
    spm_fmt_g17(buf, 1e16);
    ck_assert_str_eq(buf, "10000000000000000");
}
END_TEST

START_TEST(u64_values)
{
    static const uint64_t fixed[] = {0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, UINT64_MAX};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        same_u64(fixed[i]);
    uint64_t p = 1;
    for (int k = 0; k <= 19; k++, p *= 10) {
        same_u64(p);
        same_u64(p - 1);
        same_u64(p + 1);
    }
    for (int k = 0; k < 64; k++) {
        same_u64(UINT64_C(1) << k);
        same_u64((UINT64_C(1) << k) - 1);
    }
    spm_rng_t rng;
    spm_rng_seed(&rng, 5);
    for (int i = 0; i < 500000; i++)
        same_u64(spm_rng_next(&rng) >> spm_rng_below(&rng, 64));
    char buf[SPM_FMT_U64_MAX];
    ck_assert_uint_eq(spm_fmt_u64(buf, UINT64_MAX), 20);
    ck_assert_str_eq(buf, "18446744073709551615");
}
END_TEST

/*  The integer field of a Matrix Market file: "%.0f" of round(v). */
START_TEST(rounded_values)
{
    static const double fixed[] = {0.0,      0.3,     0.5,           0.49999999999999994,
                                   1.5,      2.5,     1e15 + 0.5,    0x1p52 + 1,
                                   0x1p53,   0x1p63,  0x1p63 - 1024, 0x1p64,
                                   1e300,    DBL_MAX, DBL_MIN,       DBL_TRUE_MIN,
                                   INFINITY, NAN};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        same_rounded(fixed[i]);
        same_rounded(-fixed[i]);
    }
    spm_rng_t rng;
    spm_rng_seed(&rng, 6);
    for (int i = 0; i < 200000; i++) {
        same_rounded(20.0 * spm_rng_uniform(&rng) - 10.0);
        same_rounded((double)spm_rng_below(&rng, 2000001) / 2 - 500000); /* halves */
        same_rounded(ldexp(spm_rng_uniform(&rng) - 0.5, (int)spm_rng_below(&rng, 70)));
        if (i % 20 == 0) /* mostly huge: each costs printf a long conversion */
            same_rounded(from_bits(spm_rng_next(&rng)));
    }
    char buf[SPM_FMT_ROUNDED_MAX];
    ck_assert_uint_eq(spm_fmt_rounded(buf, -0.3), 2);
    ck_assert_str_eq(buf, "-0");
    spm_fmt_rounded(buf, -2.5);
    ck_assert_str_eq(buf, "-3");
}
END_TEST

static Suite *numfmt_suite(void)
{
    Suite *s = suite_create("numfmt");
    const spm_test_case_t c = {.timeout_s = 30};
    SPM_TEST_ADD(s, &c, g17_random_bit_patterns);
    SPM_TEST_ADD(s, &c, g17_random_fast_range);
    SPM_TEST_ADD(s, &c, g17_random_values);
    SPM_TEST_ADD(s, &c, g17_exact_ties);
    SPM_TEST_ADD(s, &c, g17_edges);
    SPM_TEST_ADD(s, &c, u64_values);
    SPM_TEST_ADD(s, &c, rounded_values);
    return s;
}

SPM_TEST_MAIN(numfmt_suite)
