/*  =========================================================================
    numparse - text to numbers, exactly as strtod and strtoull read them, faster

    The exactness argument is in numparse.h. Whatever the fast paths cannot
    settle with certainty goes to the C library, so a result is never a
    guess: either exact integer arithmetic, one correctly rounded IEEE
    operation on exact operands, or the C library itself produced it.
    =========================================================================
*/
#include "isa/core/numparse.h"

#include <float.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

#define Q_MIN (-342)   /* below, every w * 10^q underflows (w < 10^19) */
#define Q_MAX 308      /* above, every w * 10^q overflows (w >= 1) */
#define MAX_DIGITS 19  /* significant digits kept: 10^19 - 1 < 2^64 */
#define MAX_EXP 100000 /* an exponent beyond is strtod's: far out of range */
#define LIMBS 33       /* 2^1024 has 1025 bits, 5^308 has 716 */

/*  5^q = (T + d) * 2^e with T = hi * 2^64 + lo, 2^127 <= T < 2^128 and
    0 <= d < 1. */
typedef struct {
    uint64_t hi, lo; /* T */
    int32_t e;       /* the power of two */
    int32_t exact;   /* d = 0 */
} pow5_t;

static pow5_t pow5[Q_MAX - Q_MIN + 1]; /* 5^q at pow5[q - Q_MIN] */
static pthread_once_t pow5_once = PTHREAD_ONCE_INIT;

/*  Bit I of the number A (little-endian limbs); 0 for I < 0. */
static unsigned bit_at(const uint32_t *a, int i)
{
    return i >= 0 && (a[i / 32] >> (i % 32) & 1);
}

/*  Sets T, e and exact of *P from the number A > 0: T = floor(A / 2^e)
    with T of exactly 128 bits (e < 0 shifts A left). */
static void top128(const uint32_t *a, pow5_t *p)
{
    int n = LIMBS - 1;
    while (a[n] == 0)
        n--;
    int bits = 32 * n + 32 - __builtin_clz(a[n]);
    u128 t = 0;
    for (int i = bits - 1; i >= bits - 128; i--)
        t = t << 1 | bit_at(a, i);
    p->exact = 1;
    for (int i = bits - 129; i >= 0; i--)
        if (bit_at(a, i))
            p->exact = 0;
    p->hi = (uint64_t)(t >> 64);
    p->lo = (uint64_t)t;
    p->e = bits - 128;
}

static void times5(uint32_t *a)
{
    uint64_t carry = 0;
    for (int i = 0; i < LIMBS; i++) {
        carry += (uint64_t)a[i] * 5;
        a[i] = (uint32_t)carry;
        carry >>= 32;
    }
}

/*  A = floor(A / 5). */
static void div5(uint32_t *a)
{
    uint64_t rem = 0;
    for (int i = LIMBS - 1; i >= 0; i--) {
        rem = rem << 32 | a[i];
        a[i] = (uint32_t)(rem / 5);
        rem %= 5;
    }
}

static void pow5_init(void)
{
    uint32_t a[LIMBS] = {1};
    for (int q = 0; q <= Q_MAX; q++) {
        top128(a, &pow5[q - Q_MIN]);
        times5(a);
    }
    /* a = floor(2^1024 / 5^n) after n divisions; its top 128 bits are
       floor(2^(1024 - e) / 5^n) = T, and 5^-n = (T + d) * 2^(e - 1024) */
    memset(a, 0, sizeof a);
    a[LIMBS - 1] = 1;
    for (int n = 1; n <= -Q_MIN; n++) {
        div5(a);
        pow5_t *p = &pow5[-n - Q_MIN];
        top128(a, p);
        p->e -= 1024;
        p->exact = 0; /* 5^n divides no power of two */
    }
}

/*  A number as read: [-] w * 10^q, and more digits when truncated. */
typedef struct {
    uint64_t w;    /* the first MAX_DIGITS significant digits */
    int64_t q;     /* the power of ten */
    int truncated; /* a digit after them was not 0 */
    int neg;       /* a '-' sign */
} decimal_t;

static int is_digit(char c)
{
    return (unsigned char)(c - '0') < 10;
}

/*  Reads [+-]digits[.digits][(e|E)[+-]digits] at S into *D. Returns where
    the number ends, or NULL when S holds no such number or one that is
    only strtod's to read (hexadecimal, a huge exponent). */
/*  When the 8 bytes at P are all digits, their value into *V; else 0.
    The multiplications are fast_float's (Lemire): pairs, then fours, then
    eight, in three multiplications instead of eight steps. */
static inline int eight_digits(const char *p, uint64_t *v)
{
    uint64_t x;
    memcpy(&x, p, 8);
    if (((x & UINT64_C(0xF0F0F0F0F0F0F0F0)) |
         (((x + UINT64_C(0x0606060606060606)) & UINT64_C(0xF0F0F0F0F0F0F0F0)) >> 4)) !=
        UINT64_C(0x3333333333333333))
        return 0;
    x = (x & UINT64_C(0x0F0F0F0F0F0F0F0F)) * 2561 >> 8; /* little-endian: first digit lowest */
    x = (x & UINT64_C(0x00FF00FF00FF00FF)) * 6553601 >> 16;
    *v = (uint64_t)(uint32_t)((x & UINT64_C(0x0000FFFF0000FFFF)) * UINT64_C(42949672960001) >> 32);
    return 1;
}

/*  scan, taking digits eight at a time where PADDED says that 8 bytes
    past any byte of the number may be read. */
static inline __attribute__((always_inline)) const char *scan_digits(const char *s, decimal_t *d,
                                                                     int padded)
{
    const char *p = s;
    d->neg = *p == '-';
    p += *p == '-' || *p == '+';
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        return NULL;
    uint64_t w = 0;
    int64_t q = 0;
    int n = 0, truncated = 0;
    const char *start = p;
    while (*p == '0')
        p++;
    uint64_t eight;
    while (padded && n + 8 <= MAX_DIGITS && eight_digits(p, &eight)) {
        w = w * 100000000 + eight;
        n += 8;
        p += 8;
    }
    for (; is_digit(*p); p++) {
        if (n < MAX_DIGITS) {
            w = 10 * w + (uint64_t)(*p - '0');
            n++;
        } else {
            q++;
            truncated |= *p != '0';
        }
    }
    int digits = p != start;
    if (*p == '.') {
        const char *frac = ++p;
        if (n == 0) { /* zeros after the point only scale what follows */
            while (*p == '0')
                p++;
            q -= p - frac;
        }
        while (padded && n + 8 <= MAX_DIGITS && eight_digits(p, &eight)) {
            w = w * 100000000 + eight;
            n += 8;
            q -= 8;
            p += 8;
        }
        for (; is_digit(*p); p++) {
            if (n < MAX_DIGITS) {
                w = 10 * w + (uint64_t)(*p - '0');
                n++;
                q--;
            } else {
                truncated |= *p != '0';
            }
        }
        digits |= p != frac;
    }
    if (!digits)
        return NULL;
    if ((*p | 0x20) == 'e') { /* an exponent only when digits follow */
        const char *e = p + 1;
        int neg = *e == '-';
        e += *e == '-' || *e == '+';
        if (is_digit(*e)) {
            int64_t x = 0;
            for (; is_digit(*e); e++)
                if (x <= MAX_EXP)
                    x = 10 * x + (*e - '0');
            if (x > MAX_EXP)
                return NULL;
            q += neg ? -x : x;
            p = e;
        }
    }
    d->w = w;
    d->q = q;
    d->truncated = truncated;
    return p;
}

static const char *scan(const char *s, decimal_t *d)
{
    return scan_digits(s, d, 0);
}

static const char *scan_padded(const char *s, decimal_t *d)
{
    return scan_digits(s, d, 1);
}

/*  Sets *BITS to the double nearest w * 10^q (ties to even), which must be
    normal with a biased exponent of 2 to 2046. Returns 0, or -1 when the
    carry from the unknown bits is undecided or the exponent out of range.
    W > 0 and Q_MIN <= Q <= Q_MAX. */
static int eisel_lemire(uint64_t w, int q, uint64_t *bits)
{
    const pow5_t *t = &pow5[q - Q_MIN];
    int z = __builtin_clzll(w);
    uint64_t wn = w << z;
    u128 high = (u128)wn * t->hi, low = (u128)wn * t->lo;
    u128 u = high + (low >> 64); /* W * T = u * 2^64 + (low mod 2^64) */
    uint64_t top = (uint64_t)(u >> 64), mid = (uint64_t)u, bottom = (uint64_t)low;
    int lead = (int)(top >> 63); /* bit 191 leads, else bit 190 */
    int sh = 9 + lead;           /* bits of top below the leading 54 */
    uint64_t m = top >> sh, below = top & ((UINT64_C(1) << sh) - 1);
    /* R = below * 2^64 + mid; R >= 2^(64 + sh) - 2 leaves the carry open */
    if (!t->exact && below == (UINT64_C(1) << sh) - 1 && mid >= UINT64_MAX - 1)
        return -1;
    int up = (m & 1) && (!t->exact || (below | mid | bottom) != 0 || (m & 2));
    uint64_t mant = (m >> 1) + up;
    /* mant is W * T / 2^(138 + lead), so the value is mant * 2^(138 + lead
       + e + q - z), and a double mant * 2^x has the biased exponent x + 1075 */
    int biased = 1213 + lead + t->e + q - z;
    if (mant >> 53) { /* rounded up to the next power of two */
        mant >>= 1;
        biased++;
    }
    if (biased < 2 || biased > 2046)
        return -1;
    *bits = (uint64_t)biased << 52 | (mant & ((UINT64_C(1) << 52) - 1));
    return 0;
}

/*  10^0 to 10^22: every one an exact double. */
static const double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*  Sets *V to |D| rounded as strtod rounds it. Returns 0, or -1 when
    strtod must decide. */
static int to_double(const decimal_t *d, double *v)
{
    if (d->q < Q_MIN || d->q > Q_MAX)
        return -1;
    if (d->w == 0) {
        *v = 0.0;
        return 0;
    }
    int q = (int)d->q;
#if FLT_EVAL_METHOD == 0 /* doubles are computed as doubles, not wider */
    if (!d->truncated && d->w <= UINT64_C(1) << 53 && q >= -22 && q <= 22) {
        double x = (double)d->w;
        *v = q < 0 ? x / exact_pow10[-q] : x * exact_pow10[q];
        return 0;
    }
#endif
    pthread_once(&pow5_once, pow5_init);
    uint64_t bits, above;
    if (eisel_lemire(d->w, q, &bits) != 0)
        return -1;
    if (d->truncated && (eisel_lemire(d->w + 1, q, &above) != 0 || above != bits))
        return -1;
    memcpy(v, &bits, sizeof *v);
    return 0;
}

/*  Stores P, where reading S ended, in *END (when END is not NULL).
    Returns 0 when a number was read, -1 when P is S. */
static int finish(const char *s, const char *p, const char **end)
{
    if (end)
        *end = p;
    return p == s ? -1 : 0;
}

/*  spm_numparse_double with the scanner SCAN. */
static inline __attribute__((always_inline)) int parse_double(const char *s, const char **end,
                                                              double *out, int padded)
{
    decimal_t d;
    const char *p = padded ? scan_padded(s, &d) : scan(s, &d);
    double v;
    if (p && to_double(&d, &v) == 0) {
        *out = d.neg ? -v : v;
        return finish(s, p, end);
    }
    char *e;
    *out = strtod(s, &e);
    return finish(s, e, end);
}

int spm_numparse_double(const char *s, const char **end, double *out)
{
    return parse_double(s, end, out, 0);
}

int spm_numparse_double_padded(const char *s, const char **end, double *out)
{
    return parse_double(s, end, out, 1);
}

/*  Reads 1 to MOST digits at P into *V. Returns where they end, or NULL
    when P holds no digit or more than MOST. */
static const char *few_digits(const char *p, int most, uint64_t *v)
{
    const char *start = p;
    uint64_t x = 0;
    while (is_digit(*p) && p - start < most)
        x = 10 * x + (uint64_t)(*p++ - '0');
    if (p == start || is_digit(*p))
        return NULL;
    *v = x;
    return p;
}

int spm_numparse_u64(const char *s, const char **end, uint64_t *out)
{
    uint64_t v;
    const char *p = few_digits(s, 19, &v); /* 10^19 - 1 < 2^64 */
    if (p) {
        *out = v;
        return finish(s, p, end);
    }
    char *e;
    *out = strtoull(s, &e, 10);
    return finish(s, e, end);
}

int spm_numparse_i64(const char *s, const char **end, int64_t *out)
{
    uint64_t v;
    const char *p = few_digits(s + (*s == '-' || *s == '+'), 18, &v); /* 10^18 - 1 < 2^63 */
    if (p) {
        *out = *s == '-' ? -(int64_t)v : (int64_t)v;
        return finish(s, p, end);
    }
    char *e;
    *out = strtoll(s, &e, 10);
    return finish(s, e, end);
}
