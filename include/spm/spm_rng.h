/*  =========================================================================
    rng - a small, seeded, portable random number generator

    @discuss
    xoshiro256** seeded through splitmix64: the same seed gives the same
    stream on every machine, which is what generators (`spm gen`) and the
    synthetic workload need to be reproducible, and what a plugin's SIs
    need to draw the same numbers wherever they run. Not for cryptography.
    Installed with spm.h (make install); a plugin includes "spm_rng.h" and
    its calls are resolved against the spm binary that loads it.
    @end
    =========================================================================
*/
#ifndef SPM_RNG_H_INCLUDED
#define SPM_RNG_H_INCLUDED

#include <stdint.h>

typedef struct {
    uint64_t s[4]; /* generator state */
} spm_rng_t;

/*  The splitmix64 finalizer: a bijection on 64 bits that mixes every bit
    into every other, to derive one seed from several numbers (a job's seed
    and a block's index: spm_rng_seed(r, spm_rng_mix(seed ^ spm_rng_mix(b)))). */
uint64_t spm_rng_mix(uint64_t x);

/*  Seeds R: its four words are the first four outputs of splitmix64
    started at SEED. */
void spm_rng_seed(spm_rng_t *r, uint64_t seed);
uint64_t spm_rng_next(spm_rng_t *r);
/*  Uniform in [0, 1). */
double spm_rng_uniform(spm_rng_t *r);
/*  Uniform integer in [0, n) (n > 0), without modulo bias. */
uint64_t spm_rng_below(spm_rng_t *r, uint64_t n);
/*  Exponential with the given mean. */
double spm_rng_exponential(spm_rng_t *r, double mean);
/*  Standard normal (mean 0, deviation 1). */
double spm_rng_normal(spm_rng_t *r);
/*  Poisson with the given mean (mean >= 0). */
uint64_t spm_rng_poisson(spm_rng_t *r, double mean);

#endif
