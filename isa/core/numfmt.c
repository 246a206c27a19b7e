/*  =========================================================================
    numfmt - numbers to text, byte for byte as printf writes them, faster

    The exactness argument is in numfmt.h. What is not covered by the
    128-bit fast path goes to snprintf, so the result is never a guess:
    either exact integer arithmetic or printf itself wrote it.
    =========================================================================
*/
#include "isa/core/numfmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

#define E16 UINT64_C(10000000000000000)  /* the smallest 17-digit number */
#define E17 UINT64_C(100000000000000000) /* the smallest 18-digit number */
#define MAX_SCALE 22                     /* 2^53 * 10^22 < 2^127 */

static const uint64_t pow10_64[20] = {1u,
                                      10u,
                                      100u,
                                      1000u,
                                      10000u,
                                      100000u,
                                      1000000u,
                                      10000000u,
                                      100000000u,
                                      1000000000u,
                                      10000000000u,
                                      100000000000u,
                                      1000000000000u,
                                      10000000000000u,
                                      100000000000000u,
                                      1000000000000000u,
                                      10000000000000000u,
                                      100000000000000000u,
                                      1000000000000000000u,
                                      10000000000000000000u};

/*  "00" "01" ... "99": two digits per division by 100. */
static const char pairs[201] = "00010203040506070809"
                               "10111213141516171819"
                               "20212223242526272829"
                               "30313233343536373839"
                               "40414243444546474849"
                               "50515253545556575859"
                               "60616263646566676869"
                               "70717273747576777879"
                               "80818283848586878889"
                               "90919293949596979899";

/*  M * 10^K exactly (K <= 38 and the product below 2^128). */
static u128 times_pow10(uint64_t m, int k)
{
    if (k <= 19)
        return (u128)m * pow10_64[k];
    return (u128)m * pow10_64[19] * pow10_64[k - 19];
}

/*  Writes the decimal digits of V so that they end just before END;
    returns where they start. */
static char *digits_back(char *end, uint64_t v)
{
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        end -= 2;
        memcpy(end, pairs + 2 * r, 2);
    }
    if (v >= 10) {
        end -= 2;
        memcpy(end, pairs + 2 * v, 2);
    } else {
        *--end = (char)('0' + v);
    }
    return end;
}

/*  Writes V < 10^8 as exactly eight digits at D (with leading zeros). */
static void eight_digits(char *d, uint32_t v)
{
    uint32_t hi = v / 10000, lo = v % 10000;
    memcpy(d, pairs + 2 * (hi / 100), 2);
    memcpy(d + 2, pairs + 2 * (hi % 100), 2);
    memcpy(d + 4, pairs + 2 * (lo / 100), 2);
    memcpy(d + 6, pairs + 2 * (lo % 100), 2);
}

/*  Rounds Q + R / D (0 <= R < D) to an integer, ties to even. 2 * R must
    not overflow, which holds for every D below 2^127. */
static u128 round_even(u128 q, u128 r, u128 d)
{
    return q + (2 * r > d || (2 * r == d && (q & 1)));
}

/*  Sets *N to M * 2^E * 10^S rounded to an integer, ties to even, using
    exact 128-bit arithmetic only. Returns 0, or -1 when an intermediate
    would not fit in 128 bits (the caller falls back to snprintf). */
static int scaled(uint64_t m, int e, int s, u128 *n)
{
    if (s >= 0) {
        if (s > MAX_SCALE)
            return -1;
        u128 p = times_pow10(m, s);
        if (e >= 0) { /* an integer: nothing to round */
            if (e >= 128 || p > (~(u128)0 >> e))
                return -1;
            *n = p << e;
            return 0;
        }
        if (e <= -127) /* 2^-E would not fit in 128 bits */
            return -1;
        int sh = -e;
        u128 q = p >> sh;
        *n = round_even(q, p - (q << sh), (u128)1 << sh);
        return 0;
    }
    if (e < 0 || e > 75 || -s > 38) /* m * 2^e must be an integer below 2^128 */
        return -1;
    u128 v = (u128)m << e, d = times_pow10(1, -s), q = v / d;
    *n = round_even(q, v - q * d, d);
    return 0;
}

static size_t fallback(char *buf, double v)
{
    return (size_t)snprintf(buf, SPM_FMT_G17_MAX, "%.17g", v);
}

size_t spm_fmt_g17(char *buf, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int biased = (int)(bits >> 52 & 0x7ff);
    uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
    char *p = buf;
    if (bits >> 63)
        *p++ = '-';
    if (biased == 0 && m == 0) {
        *p++ = '0';
        *p = '\0';
        return (size_t)(p - buf);
    }
    if (biased == 0 || biased == 0x7ff) /* subnormal, infinite or NaN */
        return fallback(buf, v);
    m |= UINT64_C(1) << 52;
    int e = biased - 1075, b = e + 52; /* |v| = m * 2^e, 2^b <= |v| < 2^(b+1) */
    if (b < -30 || b > 127)
        return fallback(buf, v);
    /* floor(b * log10(2)), exact for these b (78913 / 2^18 is log10(2)
       to 6 digits; the offset keeps the shifted value positive): X or X - 1 */
    int x = ((b * 78913 + (32 << 18)) >> 18) - 32;
    u128 n;
    for (int tries = 0;; tries++) {
        if (tries == 3 || scaled(m, e, 16 - x, &n) != 0)
            return fallback(buf, v);
        if (n >= E17)
            x++;
        else if (n < E16)
            x--;
        else
            break;
    }
    char dig[17];
    uint64_t top = (uint64_t)n / 100000000; /* 9 digits, then 8 */
    dig[0] = (char)('0' + top / 100000000);
    eight_digits(dig + 1, (uint32_t)(top % 100000000));
    eight_digits(dig + 9, (uint32_t)((uint64_t)n % 100000000));
    int len = 17;
    while (dig[len - 1] == '0')
        len--;
    if (x < -4 || x >= 17) { /* d.ddde+XX */
        *p++ = dig[0];
        if (len > 1) {
            *p++ = '.';
            memcpy(p, dig + 1, (size_t)len - 1);
            p += len - 1;
        }
        *p++ = 'e';
        *p++ = x < 0 ? '-' : '+';
        unsigned ax = (unsigned)(x < 0 ? -x : x);
        if (ax >= 100) {
            *p++ = (char)('0' + ax / 100);
            ax %= 100;
        }
        memcpy(p, pairs + 2 * ax, 2);
        p += 2;
    } else if (x >= 0) { /* ddd.ddd */
        memcpy(p, dig, (size_t)x + 1);
        p += x + 1;
        if (len > x + 1) {
            *p++ = '.';
            memcpy(p, dig + x + 1, (size_t)(len - x - 1));
            p += len - x - 1;
        }
    } else { /* 0.000ddd */
        *p++ = '0';
        *p++ = '.';
        memset(p, '0', (size_t)(-x - 1));
        p += -x - 1;
        memcpy(p, dig, (size_t)len);
        p += len;
    }
    *p = '\0';
    return (size_t)(p - buf);
}

/*  Digits of V: from its bit length (1233 / 4096 is just above log10 2),
    one less where V is below that power of ten (V | 1 for 0, which has
    one digit; it moves no V across a power of ten, which is even). */
static size_t ndigits(uint64_t v)
{
    unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
    return t + 1 - ((v | 1) < pow10_64[t]);
}

/*  The digits go straight to their place, their count known first: made
    aside and copied, the copy (a call, of a varying length) was most of
    formatting a short number (writing itemsets: a line holds a few). */
size_t spm_fmt_u64(char *buf, uint64_t v)
{
    size_t len = ndigits(v);
    buf[len] = '\0';
    digits_back(buf + len, v);
    return len;
}

size_t spm_fmt_rounded(char *buf, double v)
{
    double r = round(v);
    if (!(fabs(r) < 0x1p63)) /* also NaN */
        return (size_t)snprintf(buf, SPM_FMT_ROUNDED_MAX, "%.0f", r);
    size_t sign = signbit(r) != 0; /* "-0" too, as printf writes it */
    buf[0] = '-';
    return sign + spm_fmt_u64(buf + sign, (uint64_t)fabs(r));
}
