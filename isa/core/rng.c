/*  =========================================================================
    rng - a small, seeded, portable random number generator
    =========================================================================
*/
#include "isa/core/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t spm_rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void spm_rng_seed(spm_rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

uint64_t spm_rng_next(spm_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double spm_rng_uniform(spm_rng_t *r)
{
    return (double)(spm_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t spm_rng_below(spm_rng_t *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = spm_rng_next(r);
    while (x >= limit);
    return x % n;
}

double spm_rng_exponential(spm_rng_t *r, double mean)
{
    return -mean * log(1.0 - spm_rng_uniform(r));
}

double spm_rng_normal(spm_rng_t *r)
{
    double u1 = 1.0 - spm_rng_uniform(r), u2 = spm_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t spm_rng_poisson(spm_rng_t *r, double mean)
{
    if (mean <= 0)
        return 0;
    if (mean > 60) { /* normal approximation keeps this O(1) for large means */
        double x = floor(mean + sqrt(mean) * spm_rng_normal(r) + 0.5);
        return x < 0 ? 0 : (uint64_t)x;
    }
    double limit = exp(-mean), p = 1.0;
    uint64_t k = 0;
    do {
        k++;
        p *= spm_rng_uniform(r);
    } while (p > limit);
    return k - 1;
}
