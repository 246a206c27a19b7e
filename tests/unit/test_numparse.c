/*  numparse: every function returns exactly what the C library returns -
    the same bits, the same end pointer, the same errno - compared on
    millions of seeded random strings (doubles as printf writes them in
    several formats, random digit strings with points and exponents far out
    of range) and on the hard cases (exact ties between two doubles, the
    limits of the normal range, underflow and overflow, forms only strtod
    reads). */
#include "isa/core/numfmt.h"
#include "isa/core/numparse.h"
#include "isa/core/rng.h"
#include "tests/check_main.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  Compares spm_numparse_double(S) and spm_numparse_double_padded(S)
    with strtod(S). Asserts only on a
    mismatch: a Check assertion per string would cost more than the
    parsing. */
static void same_double(const char *s)
{
    char *want_end;
    errno = 0;
    double want = strtod(s, &want_end);
    int want_errno = errno;
    const char *end = NULL;
    double got = 42.0;
    errno = 0;
    int rc = spm_numparse_double(s, &end, &got);
    int got_errno = errno;
    if (memcmp(&got, &want, sizeof got) != 0 || end != want_end || got_errno != want_errno ||
        rc != (want_end == s ? -1 : 0))
        ck_abort_msg(
            "'%s': spm_numparse_double read %a (%td chars, errno %d, rc %d), strtod %a (%td "
            "chars, errno %d)",
            s, got, end - s, got_errno, rc, want, want_end - s, want_errno);
    /* the padded reader, with digits after the NUL that it must not take */
    char buf[512];
    size_t n = strlen(s);
    if (n + 1 + SPM_NUMPARSE_PAD > sizeof buf)
        return;
    memcpy(buf, s, n + 1);
    memset(buf + n + 1, '7', SPM_NUMPARSE_PAD);
    double padded = 42.0;
    errno = 0;
    rc = spm_numparse_double_padded(buf, &end, &padded);
    got_errno = errno;
    if (memcmp(&padded, &want, sizeof padded) != 0 || end - buf != want_end - s ||
        got_errno != want_errno || rc != (want_end == s ? -1 : 0))
        ck_abort_msg("'%s': spm_numparse_double_padded read %a (%td chars, errno %d, rc %d), "
                     "strtod %a (%td chars, errno %d)",
                     s, padded, end - buf, got_errno, rc, want, want_end - s, want_errno);
}

/*  Compares spm_numparse_u64(S) with strtoull(S, 10) and
    spm_numparse_i64(S) with strtoll(S, 10). */
static void same_integer(const char *s)
{
    char *want_end, *want_end_i;
    errno = 0;
    unsigned long long want = strtoull(s, &want_end, 10);
    int want_errno = errno;
    errno = 0;
    long long want_i = strtoll(s, &want_end_i, 10);
    int want_errno_i = errno;
    const char *end = NULL, *end_i = NULL;
    uint64_t got = 42;
    int64_t got_i = 42;
    errno = 0;
    int rc = spm_numparse_u64(s, &end, &got), got_errno = errno;
    errno = 0;
    int rc_i = spm_numparse_i64(s, &end_i, &got_i), got_errno_i = errno;
    if (got != want || end != want_end || got_errno != want_errno || rc != (want_end == s ? -1 : 0))
        ck_abort_msg("'%s': spm_numparse_u64 read %llu (%td chars), strtoull %llu (%td chars)", s,
                     (unsigned long long)got, end - s, want, want_end - s);
    if (got_i != want_i || end_i != want_end_i || got_errno_i != want_errno_i ||
        rc_i != (want_end_i == s ? -1 : 0))
        ck_abort_msg("'%s': spm_numparse_i64 read %lld (%td chars), strtoll %lld (%td chars)", s,
                     (long long)got_i, end_i - s, want_i, want_end_i - s);
}

static double from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/*  A random double: every bit pattern, values as spm gen writes them,
    and values spread over the normal range by their decimal exponent. */
static double random_double(spm_rng_t *rng)
{
    switch (spm_rng_below(rng, 4)) {
    case 0:
        return from_bits(spm_rng_next(rng));
    case 1:
        return spm_rng_uniform(rng);
    case 2:
        return 2.0 * spm_rng_uniform(rng) - 1.0;
    default:
        return (spm_rng_uniform(rng) - 0.5) * pow(10.0, (double)spm_rng_below(rng, 600) - 300);
    }
}

/*  Doubles as printf and spm_fmt_g17 write them, in the formats a Matrix
    Market file may hold: 400000 values, 2.4 million strings. */
START_TEST(double_printf_formats)
{
    static const char *formats[] = {"%.17g", "%.15g", "%.6g", "%.20g", "%e"};
    spm_rng_t rng;
    spm_rng_seed(&rng, 1);
    char buf[64];
    for (int i = 0; i < 400000; i++) {
        double v = random_double(&rng);
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
            snprintf(buf, sizeof buf, formats[f], v);
            same_double(buf);
        }
        spm_fmt_g17(buf, v);
        same_double(buf);
    }
}
END_TEST

/*  Writes a random decimal number into BUF (at least 96 bytes): 1 to 40
    digits (uniform, mostly zeros or mostly nines), a point anywhere or
    none, an exponent from -350 to 350 or none, and now and then text
    after it that may or may not continue the number. */
static void random_decimal(spm_rng_t *rng, char *buf)
{
    static const char *signs[] = {"", "", "-", "+"};
    static const char *tails[] = {"", " 1", "e", "e+", "E-x", ".", "x", "\t", "0x1"};
    char *p = buf;
    p += sprintf(p, "%s", signs[spm_rng_below(rng, 4)]);
    int n = 1 + (int)spm_rng_below(rng, 40), point = (int)spm_rng_below(rng, (uint64_t)n + 2);
    unsigned style = (unsigned)spm_rng_below(rng, 4);
    for (int i = 0; i < n; i++) {
        if (i == point)
            *p++ = '.';
        unsigned r = (unsigned)spm_rng_below(rng, 10);
        *p++ = (char)('0' + (style == 1 && r < 8 ? 0 : style == 2 && r < 8 ? 9 : r));
    }
    if (point == n)
        *p++ = '.';
    if (spm_rng_below(rng, 4) != 0)
        p += sprintf(p, "%c%s%0*d", spm_rng_below(rng, 2) ? 'e' : 'E', signs[spm_rng_below(rng, 4)],
                     (int)spm_rng_below(rng, 4), (int)spm_rng_below(rng, 351));
    if (spm_rng_below(rng, 8) == 0)
        strcpy(p, tails[spm_rng_below(rng, sizeof tails / sizeof tails[0])]);
    else
        *p = '\0';
}

START_TEST(double_random_decimals)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, 2);
    char buf[96];
    for (int i = 0; i < 1000000; i++) {
        random_decimal(&rng, buf);
        same_double(buf);
    }
}
END_TEST

/*  Writes the exact decimal value of the long double V (a dyadic rational:
    its expansion ends) with no trailing zeros. */
static void exact_decimal(char *buf, size_t size, long double v)
{
    snprintf(buf, size, "%.1100Lf", v);
    char *p = buf + strlen(buf) - 1;
    while (*p == '0')
        *p-- = '\0';
    if (*p == '.')
        *p = '\0';
}

/*  Exact ties: the midpoint between two adjacent doubles, which rounds to
    the even one, and the decimal strings either side of it. Midpoints are
    exact in a long double (64-bit mantissa). */
START_TEST(double_ties)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, 3);
    char buf[1200];
    for (int i = 0; i < 30000; i++) {
        /* integers 2^53 + 1 to 2^64: ties with at most 20 digits */
        int k = (int)spm_rng_below(&rng, 11);
        uint64_t m = (UINT64_C(1) << 52 | spm_rng_next(&rng) >> 12) << 1 | 1; /* 54 bits, odd */
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)(m << k));
        same_double(buf);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)(m << k) - 1);
        same_double(buf);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)(m << k) + 1);
        same_double(buf);
        snprintf(buf, sizeof buf, "%llue-0", (unsigned long long)(m << k));
        same_double(buf);
        /* the same ties over small powers of two: a few fraction digits */
        exact_decimal(buf, sizeof buf, ldexpl((long double)m, -(int)spm_rng_below(&rng, 4)));
        same_double(buf);
        /* midpoints anywhere, written exactly (long) and to 17 and 25 digits */
        double v = fabs(random_double(&rng));
        if (!isfinite(v) || v == 0.0 || v >= DBL_MAX)
            continue;
        long double mid = ((long double)v + (long double)nextafter(v, INFINITY)) / 2;
        exact_decimal(buf, sizeof buf, mid);
        same_double(buf);
        snprintf(buf, sizeof buf, "%.16Le", mid);
        same_double(buf);
        snprintf(buf, sizeof buf, "%.24Le", mid);
        same_double(buf);
    }
}
END_TEST

START_TEST(double_edges)
{
    static const char *fixed[] = {
        "9007199254740993", /* 2^53 + 1: a tie, to 2^53 */
        "9007199254740995",
        "9007199254740993.0000000000000000001",
        "9007199254740992.9999999999999999999",
        "1.00000000000000011102230246251565404236316680908203125", /* 1 + 2^-53 */
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "2.2250738585072011e-308",
        "2.2250738585072012e-308",
        "2.2250738585072014e-308",
        "2.2250738585072009e-308",
        "4.9406564584124654e-324",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.7976931348623159e308",
        "1.797693134862315807e308",
        "4.4501477170144023e-308",
        "4.4501477170144028e-308",
        "8.98846567431158e307",
        "8.98846567431158e307",
        "1e23",
        "1e22",
        "8.589973e9",
        "1.3e-322",
        "0.1",
        "0.3",
        "123456789012345678901234567890",
        "1234567890123456789",
        "12345678901234567890",
        "18446744073709551615",
        "18446744073709551616",
        "9999999999999999999",
        "99999999999999999999",
        "0.99999999999999999999",
        "-0",
        "+0",
        "0",
        "-0.0e-5",
        "0e-342",
        "0e-343",
        "0e-400",
        "0e308",
        "0e400",
        "0e99999999999999999999",
        "-0e-99999999999999999999",
        "00000000000000000000000000000000000001",
        "0.0000000000000000000000000000000000000001e40",
        "1000000000000000000000000000000000000000e-40",
        "+1",
        "1.",
        ".5",
        "-.5e1",
        "5e-324",
        "1e-400",
        "1e400",
        "-1e400",
        "1e-99999999999999999999",
        "1e99999999999999999999",
        "1e2147483648",
        "1e-2147483649",
        "1e308",
        "1e309",
        "1e-307",
        "1e-308",
        "1e-342",
        "1e-343",
        "1e",
        "1e+",
        "1e-",
        "1ex",
        "1.5E+3",
        "1.5e+3x",
        "1..5",
        "1.5.5",
        ".",
        "-.",
        "+.e5",
        ".e5",
        "e5",
        "",
        "-",
        "+",
        "--1",
        "+-1",
        " 1",
        "\t-2.5",
        "0x1p3",
        "0X1P-3",
        "-0x.8",
        "0x",
        "0xg",
        "00x1",
        "inf",
        "-Infinity",
        "infinit",
        "nan",
        "-NAN(123)",
        "nanx",
        "1,5",
        "1_000",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        same_double(fixed[i]);
    char buf[64];
    for (int k = -350; k <= 350; k++) { /* powers of ten, their neighbours and halves */
        snprintf(buf, sizeof buf, "1e%d", k);
        same_double(buf);
        double p = strtod(buf, NULL);
        snprintf(buf, sizeof buf, "%.17g", nextafter(p, 0.0));
        same_double(buf);
        snprintf(buf, sizeof buf, "%.17g", nextafter(p, INFINITY));
        same_double(buf);
        snprintf(buf, sizeof buf, "5e%d", k);
        same_double(buf);
        snprintf(buf, sizeof buf, "9999999999999999999e%d", k);
        same_double(buf);
    }
    for (int k = -1074; k <= 1023; k++) { /* powers of two and their neighbours */
        double p = ldexp(1.0, k);
        double near[] = {p, nextafter(p, 0.0), nextafter(p, INFINITY)};
        for (int j = 0; j < 3; j++) {
            snprintf(buf, sizeof buf, "%.17g", near[j]);
            same_double(buf);
            snprintf(buf, sizeof buf, "%.25e", near[j]);
            same_double(buf);
        }
    }
    for (int d = 1; d <= 40; d++) { /* 0.9, 0.99, ... and 9, 99, ... */
        char nines[48];
        memset(nines, '9', (size_t)d);
        nines[d] = '\0';
        snprintf(buf, sizeof buf, "0.%s", nines);
        same_double(buf);
        same_double(nines);
    }
    const char *end;
    double v;
    ck_assert_int_eq(spm_numparse_double("0.1 x", &end, &v), 0);
    ck_assert(v == 0.1);
    ck_assert_str_eq(end, " x");
    ck_assert_int_eq(spm_numparse_double("-0", NULL, &v), 0);
    ck_assert(v == 0.0 && signbit(v));
    ck_assert_int_eq(spm_numparse_double("x", &end, &v), -1);
    ck_assert_str_eq(end, "x");
}
END_TEST

START_TEST(integers)
{
    static const char *fixed[] = {"0",
                                  "1",
                                  "-1",
                                  "+1",
                                  "-0",
                                  "007",
                                  "999999999999999999",
                                  "1000000000000000000",
                                  "9223372036854775807",
                                  "9223372036854775808",
                                  "-9223372036854775808",
                                  "-9223372036854775809",
                                  "9999999999999999999",
                                  "18446744073709551615",
                                  "18446744073709551616",
                                  "99999999999999999999999",
                                  "0000000000000000000000000012",
                                  "12 34",
                                  "12x",
                                  "1.5",
                                  "1e5",
                                  "0x10",
                                  " 5",
                                  "\t-5",
                                  "",
                                  "-",
                                  "+",
                                  "x"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        same_integer(fixed[i]);
    }
    spm_rng_t rng;
    spm_rng_seed(&rng, 4);
    char buf[64];
    for (int i = 0; i < 300000; i++) {
        snprintf(buf, sizeof buf, "%llu",
                 (unsigned long long)(spm_rng_next(&rng) >> spm_rng_below(&rng, 64)));
        same_integer(buf);
        snprintf(buf, sizeof buf, "%lld", (long long)spm_rng_next(&rng) >> spm_rng_below(&rng, 64));
        same_integer(buf);
    }
}
END_TEST

static Suite *numparse_suite(void)
{
    Suite *s = suite_create("numparse");
    const spm_test_case_t c = {.timeout_s = 30};
    SPM_TEST_ADD(s, &c, double_printf_formats);
    SPM_TEST_ADD(s, &c, double_random_decimals);
    SPM_TEST_ADD(s, &c, double_ties);
    SPM_TEST_ADD(s, &c, double_edges);
    SPM_TEST_ADD(s, &c, integers);
    return s;
}

SPM_TEST_MAIN(numparse_suite)
