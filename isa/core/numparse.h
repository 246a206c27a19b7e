/*  =========================================================================
    numparse - text to numbers, exactly as strtod and strtoull read them, faster

    @header
    Reading two dense 4096 x 4096 Matrix Market files means 33 million
    strtod calls on 17-digit values, and glibc's strtod spends most of its
    time in multi-precision arithmetic (str_to_mpn, round_and_return). These
    functions return exactly what the C library would - the same bits, the
    same end pointer, the same errno - and handle the plain decimal forms
    that files hold in a fraction of the time. Anything else goes to the C
    library itself.
    @discuss
    spm_numparse_double reads [+-]digits[.digits][(e|E)[+-]digits] (a digit
    before or after the point). Leading zeros are skipped; the first 19
    significant digits make an integer w < 10^19 < 2^64 and the value is
    w * 10^q. Digits after the 19th only shift q and, if one is not zero,
    mark the value as truncated: it then lies strictly between w * 10^q
    and (w + 1) * 10^q.

      * Clinger: when nothing was truncated, w <= 2^53 and |q| <= 22, w and
        10^|q| are exact doubles, and one IEEE multiplication or division
        rounds their exact product or quotient once, correctly.
      * Otherwise 5^q (for -342 <= q <= 308) is written T * 2^E with
        2^127 <= T < 2^128 and T = floor(5^q / 2^E) (T + d, 0 <= d < 1, is
        5^q / 2^E exactly; d = 0 only for 0 <= q <= 55). The table of T
        and E is computed exactly at first use, with integer arithmetic on
        arrays of 32-bit limbs: 5^q by repeated multiplication, 5^-n as
        floor(2^1024 / 5^n) by n exact divisions by 5 (floor(floor(a / b)
        / c) = floor(a / (b * c))), each cut to its top 128 bits.
        With w shifted left by z so that 2^63 <= W < 2^64, the exact value
        is W * (T + d) * 2^(E + q - z). The 192-bit product P = W * T is
        computed exactly, and W * (T + d) = P + W * d with 0 <= W * d <
        2^64. Cut P into its top 54 bits M (bit 191 or 190 leads), the R
        bits below them within the top 128, and the low 64 bits L: the
        exact product is (M * 2^B + R + e) * 2^64 with B = 73 or 74 and
        e = (L + W * d) / 2^64 in [0, 2). When d = 0, e < 1 and M is the
        exact top of the product; the tail (R, L) says whether the value
        lies below, at or above the midpoint between two doubles, and a
        tie goes to the even mantissa. When d > 0, e > 0: if
        R <= 2^B - 3, M is still the exact top, the tail is strictly
        positive and there is no tie, so the 54th bit alone decides; if R
        is within 2 of 2^B the carry is unknown and strtod decides (about
        one value in 2^72).
      * A truncated value is rounded both from w and from w + 1; when the
        two give the same double, so does everything between them
        (rounding is monotone). Otherwise strtod decides.

    The fast paths only return normal doubles with biased exponents 2 to
    2046, where strtod never sets errno: zero (w = 0) with a moderate
    exponent is returned directly, and underflow (subnormal or zero
    results), overflow, hexadecimal floats, "inf" and "nan", leading
    white space and text with no digits are strtod's. The decimal point
    is '.', as in the "C" locale (spm never calls setlocale), and the
    rounding mode is the default, to nearest (spm never changes it).

    The integer readers follow the same plan: plain digits that cannot
    overflow are read directly, and everything else goes to strtoull or
    strtoll.

    The functions are safe from any thread (the table is built once,
    under pthread_once). The test (tests/unit/test_numparse.c) compares
    them with the C library on millions of strings.
    @end
    =========================================================================
*/
#ifndef SPM_NUMPARSE_H_INCLUDED
#define SPM_NUMPARSE_H_INCLUDED

#include <stdint.h>

/*  Reads a number at S (NUL-terminated, owned by the caller) exactly as
    strtod(S, END) does: *OUT gets the value strtod returns, *END (when END
    is not NULL) where strtod stops, inside S, and errno is set only when
    strtod sets it (ERANGE on overflow and underflow). Returns 0 when a
    number was read, or -1 when S holds none (*END is then S and *OUT 0). */
int spm_numparse_double(const char *s, const char **end, double *out);

/*  Bytes that must be readable past the end of the number (its NUL
    included) for spm_numparse_double_padded. */
#define SPM_NUMPARSE_PAD 8

/*  spm_numparse_double, for text where SPM_NUMPARSE_PAD bytes may be read
    past wherever the number ends (a parser's buffer of whole lines with
    padding after them): digits are taken eight at a time. The same value,
    end and errno as spm_numparse_double. */
int spm_numparse_double_padded(const char *s, const char **end, double *out);

/*  Reads an integer at S exactly as strtoull(S, END, 10) does, with *OUT,
    *END (END may be NULL) and errno (ERANGE) as strtoull leaves them.
    Returns 0 when a number was read, or -1 when S holds none. */
int spm_numparse_u64(const char *s, const char **end, uint64_t *out);

/*  Reads an integer at S exactly as strtoll(S, END, 10) does, with *OUT,
    *END (END may be NULL) and errno (ERANGE) as strtoll leaves them.
    Returns 0 when a number was read, or -1 when S holds none. */
int spm_numparse_i64(const char *s, const char **end, int64_t *out);

#endif
