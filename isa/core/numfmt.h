/*  =========================================================================
    numfmt - numbers to text, byte for byte as printf writes them, faster

    @header
    Writing a dense 8192 x 8192 result matrix means 67 million "%.17g"
    conversions, and glibc's printf spends most of a run on them (its
    multi-precision digit generation). These functions write exactly the
    bytes printf would, so files stay the same and still round-trip, at a
    fraction of the cost.
    @discuss
    spm_fmt_g17 writes what snprintf(buf, 32, "%.17g", v) writes. A finite
    double is v = m * 2^e with m < 2^53. Its 17 significant digits are
    N = round(|v| * 10^s) for the scale s = 16 - X, X = floor(log10 |v|),
    rounded half to even on the exact value as glibc does in the default
    rounding mode. Every step below is exact integer arithmetic:

      * s >= 0, e < 0: m * 10^s < 2^53 * 10^22 < 2^127 for s <= 22, so
        P = m * 10^s is exact in 128 bits, and N = P / 2^-e is a shift
        whose remainder (the bits shifted out) decides the rounding.
      * s >= 0, e >= 0: |v| is an integer and N = m * 2^e * 10^s exactly.
      * s < 0, e <= 75: V = m * 2^e < 2^128 is exact, and N = V / 10^-s is
        one 128-bit division whose remainder decides the rounding.

    X is first estimated from the binary exponent b (2^b <= |v| < 2^(b+1))
    as floor(b * log10 2), which is X or X - 1. When N falls outside
    [10^16, 10^17) - also when rounding carried it up to 10^17 - the scale
    is corrected and N computed again from the exact value, so there is no
    double rounding.
    That covers 1e-6 <= |v| < 2^128, everything a matrix normally holds.
    Zero is written directly; smaller, larger, subnormal, infinite and NaN
    values fall back to snprintf. The layout is %g's: exponent form
    "d.ddde-XX" when X < -4 or X >= 17, fixed notation otherwise, trailing
    zeros and a trailing '.' removed, and '-' for any negative sign, "-0"
    included. The decimal point is '.', as in the "C" locale (spm never
    calls setlocale).

    The functions keep no state and are safe from any thread. The test
    (tests/unit/test_numfmt.c) compares them with snprintf on millions of
    values.
    @end
    =========================================================================
*/
#ifndef SPM_NUMFMT_H_INCLUDED
#define SPM_NUMFMT_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/*  Room for any spm_fmt_g17 result ("-1.2345678901234567e-308" is 24
    bytes) and its NUL. */
#define SPM_FMT_G17_MAX 32

/*  Room for any spm_fmt_u64 result (20 digits) and its NUL. */
#define SPM_FMT_U64_MAX 21

/*  Room for any spm_fmt_rounded result (-DBL_MAX has 309 digits) and its
    NUL. */
#define SPM_FMT_ROUNDED_MAX 320

/*  Writes V into BUF (at least SPM_FMT_G17_MAX bytes, owned by the
    caller) exactly as snprintf(BUF, SPM_FMT_G17_MAX, "%.17g", V) does,
    NUL-terminated. Returns the length without the NUL. Cannot fail. */
size_t spm_fmt_g17(char *buf, double v);

/*  Writes V in decimal into BUF (at least SPM_FMT_U64_MAX bytes, owned by
    the caller), NUL-terminated, as "%" PRIu64 does. Returns the length
    without the NUL. Cannot fail. */
size_t spm_fmt_u64(char *buf, uint64_t v);

/*  Writes round(V) into BUF (at least SPM_FMT_ROUNDED_MAX bytes, owned by
    the caller) exactly as snprintf(BUF, SPM_FMT_ROUNDED_MAX, "%.0f",
    round(V)) does, NUL-terminated: "-0" for a V in (-0.5, -0], "nan" and
    "inf" as printf writes them. Returns the length without the NUL. Cannot
    fail. */
size_t spm_fmt_rounded(char *buf, double v);

#endif
