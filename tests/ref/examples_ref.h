/*  =========================================================================
    examples_ref - independent sequential references for the example plugins

    @discuss
    Plain loops that compute what examples/montecarlo and examples/kmeans
    compute on the VM, written from the specification in those files'
    header comments, not from their code (this header must not include
    them): the same generators, the same block partition, the same initial
    centres. Header-only: tests include it.

    ref_montecarlo counts exactly what the plugin counts: the arithmetic is
    integer, so a test asserts equal hits.

    ref_kmeans runs plain k-means on the same points. Its sums go point by
    point into one accumulator per cluster, while the plugin sums each
    block into a partial and then the partials in block order (through
    km.reduce groups of 255 past 255 blocks): the floating-point sums are
    added in another order, so centres agree to about 1e-15 relative, not
    bit for bit. A test compares them within a relative 1e-9 and expects
    the same number of iterations and the same counts (a point exactly
    between two centres, or a shift within rounding of --tol, could in
    principle differ; on generated data it does not).

    ref_mandel draws examples/mandel's image from the arithmetic
    examples/README.md specifies, whole and in one pass (no tiles, no
    merge): its doubles are computed in the same order, so a test asserts
    the same bytes.

    The parsers read the plugins' result texts:
        pi 3.1421460000 from 10000000 samples (7855365 inside, seed 1)
    and
        iterations 12, shift 4.1e-07, seed 1
        centre 0: 25013 points at 1.234567 -2.345678 0.123456 4.000000
        ...one line per centre
    (coordinates with --digits decimals, 6 by default; give --digits 17 to
    compare within 1e-9.)
    @end
    =========================================================================
*/
#ifndef SPM_EXAMPLES_REF_H_INCLUDED
#define SPM_EXAMPLES_REF_H_INCLUDED

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- common */

/*  The splitmix64 finalizer. */
static inline uint64_t ref_mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z;
}

/*  One step of splitmix64: advances *STATE and returns its next output. */
static inline uint64_t ref_splitmix64(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return ref_mix64(*state);
}

/* ----------------------------------------------------------- montecarlo */

/*  Counts in *HITS the points inside the quarter circle among SAMPLES
    points split into BLOCKS blocks, seeded with SEED: block b runs
    xoshiro256** seeded with four splitmix64 outputs from
    mix(seed ^ mix(b + 1)) and draws samples / blocks points (one more for
    b < samples % blocks); a draw r is the cell (r >> 34, (r >> 4) mod 2^30)
    of a 2^30 x 2^30 grid, inside when (2x+1)^2 + (2y+1)^2 < 2^62. Returns 0,
    or -1 when BLOCKS is 0. */
static inline int ref_montecarlo(uint64_t samples, uint64_t blocks, uint64_t seed, uint64_t *hits)
{
    if (blocks == 0)
        return -1;
    *hits = 0;
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t sm = ref_mix64(seed ^ ref_mix64(b + 1)), s[4];
        for (int i = 0; i < 4; i++)
            s[i] = ref_splitmix64(&sm);
        uint64_t n = samples / blocks + (b < samples % blocks ? 1 : 0);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t m = s[1] * 5;
            uint64_t r = ((m << 7) | (m >> 57)) * 9;
            uint64_t t = s[1] << 17;
            s[2] ^= s[0];
            s[3] ^= s[1];
            s[1] ^= s[2];
            s[0] ^= s[3];
            s[2] ^= t;
            s[3] = (s[3] << 45) | (s[3] >> 19);
            uint64_t x = (r >> 34) * 2 + 1;
            uint64_t y = ((r >> 4) & ((1ull << 30) - 1)) * 2 + 1;
            if (x * x + y * y < (1ull << 62))
                (*hits)++;
        }
    }
    return 0;
}

/*  Reads the montecarlo plugin's result TEXT into *PI, *SAMPLES and
 *HITS. Returns 0, or -1 when TEXT is not of that form. */
static inline int ref_montecarlo_parse(const char *text, double *pi, uint64_t *samples,
                                       uint64_t *hits)
{
    return sscanf(text, "pi %lf from %" SCNu64 " samples (%" SCNu64 " inside", pi, samples, hits) ==
                   3
               ? 0
               : -1;
}

/* --------------------------------------------------------------- kmeans */

/*  Writes point I of the kmeans plugin's data (K clusters, DIMS
    dimensions, seed SEED) into X. The generated centres and the noise are
    integers in units of 2^-20; see examples/kmeans/kmeans.c. */
static inline void ref_kmeans_point(uint64_t seed, uint32_t k, uint32_t dims, uint64_t i, double *x)
{
    const uint64_t gamma = 0x9e3779b97f4a7c15ull, span = 20ull << 20;
    uint64_t ckey = ref_mix64(seed ^ 0x6b6d2e63656e7472ull);
    uint64_t pkey = ref_mix64(seed ^ 0x6b6d2e706f696e74ull);
    uint64_t n = i * (4 * (uint64_t)dims + 1);
    uint64_t cluster = ref_mix64(pkey + (n + 1) * gamma) % k;
    for (uint32_t d = 0; d < dims; d++) {
        uint64_t cn = cluster * dims + d;
        int64_t centre = (int64_t)(ref_mix64(ckey + (cn + 1) * gamma) % span) - (int64_t)(span / 2);
        uint64_t sum = 0;
        for (uint64_t j = 0; j < 4; j++)
            sum += ref_mix64(pkey + (n + 1 + 4 * (uint64_t)d + j + 1) * gamma) >> 40;
        int64_t v = centre + (int64_t)(sum / 8) - ((int64_t)1 << 22);
        x[d] = (double)v / 1048576.0;
    }
}

/*  Plain k-means on the POINTS points of the kmeans plugin (DIMS
    dimensions, K clusters, seed SEED): the first K points are the initial
    centres; each iteration assigns every point to its nearest centre
    (squared distance, lowest index on a tie), moves each centre to the
    mean of its points (an empty cluster keeps its centre) and stops when
    no centre moved farther than TOL (Euclidean) or after MAX_ITER
    iterations. Fills CENTRES (K x DIMS, row by row) and COUNTS (K: the
    points of the last assignment) and *ITERATIONS, and *SHIFT when not
    NULL. Returns 0, or -1 (bad arguments, out of memory). */
static inline int ref_kmeans(uint64_t points, uint32_t dims, uint32_t k, uint32_t max_iter,
                             double tol, uint64_t seed, double *centres, uint64_t *counts,
                             uint32_t *iterations, double *shift)
{
    if (k == 0 || dims == 0 || k > points || max_iter == 0)
        return -1;
    double *x = malloc(points * dims * sizeof *x);
    double *sums = malloc((size_t)k * dims * sizeof *sums);
    if (!x || !sums) {
        free(x);
        free(sums);
        return -1;
    }
    for (uint64_t i = 0; i < points; i++)
        ref_kmeans_point(seed, k, dims, i, x + i * dims);
    memcpy(centres, x, (size_t)k * dims * sizeof *x);
    double moved = 0;
    uint32_t it = 0;
    while (it < max_iter) {
        it++;
        memset(sums, 0, (size_t)k * dims * sizeof *sums);
        memset(counts, 0, k * sizeof *counts);
        for (uint64_t i = 0; i < points; i++) {
            const double *p = x + i * dims;
            uint32_t best = 0;
            double best_d2 = 0;
            for (uint32_t c = 0; c < k; c++) {
                double d2 = 0;
                for (uint32_t d = 0; d < dims; d++)
                    d2 += (p[d] - centres[c * dims + d]) * (p[d] - centres[c * dims + d]);
                if (c == 0 || d2 < best_d2) {
                    best = c;
                    best_d2 = d2;
                }
            }
            for (uint32_t d = 0; d < dims; d++)
                sums[best * dims + d] += p[d];
            counts[best]++;
        }
        moved = 0;
        for (uint32_t c = 0; c < k; c++) {
            if (counts[c] == 0)
                continue;
            double d2 = 0;
            for (uint32_t d = 0; d < dims; d++) {
                double m = sums[c * dims + d] / (double)counts[c];
                d2 += (m - centres[c * dims + d]) * (m - centres[c * dims + d]);
                centres[c * dims + d] = m;
            }
            if (sqrt(d2) > moved)
                moved = sqrt(d2);
        }
        if (!(moved > tol))
            break;
    }
    free(x);
    free(sums);
    *iterations = it;
    if (shift)
        *shift = moved;
    return 0;
}

/*  Reads the kmeans plugin's result TEXT for K clusters of DIMS
    dimensions into *ITERATIONS, CENTRES (K x DIMS) and COUNTS (K).
    Returns 0, or -1 when TEXT is not of that form. */
static inline int ref_kmeans_parse(const char *text, uint32_t k, uint32_t dims,
                                   uint32_t *iterations, double *centres, uint64_t *counts)
{
    const char *p = text;
    if (sscanf(p, "iterations %" SCNu32 ",", iterations) != 1 || !(p = strchr(p, '\n')))
        return -1;
    for (uint32_t c = 0; c < k; c++) {
        uint32_t index;
        int used = 0;
        if (sscanf(++p, "centre %" SCNu32 ": %" SCNu64 " points at%n", &index, &counts[c], &used) !=
                2 ||
            used == 0 || index != c)
            return -1;
        p += used;
        for (uint32_t d = 0; d < dims; d++) {
            char *end;
            centres[c * dims + d] = strtod(p, &end);
            if (end == p)
                return -1;
            p = end;
        }
        if (*p != '\n')
            return -1;
    }
    return p[1] == '\0' ? 0 : -1;
}

/* --------------------------------------------------------------- mandel */

/*  The PGM examples/mandel writes for a W x H image of at most ITER
    iterations about (X, Y), SPAN wide on the real axis: "P5\nW H\n255\n"
    and a byte per pixel, row by row. Pixel (col, row) is c = X + (col +
    0.5 - W/2) SPAN/W + i (Y - (row + 0.5 - H/2) SPAN/W); its count is the
    iterations of z = z^2 + c from 0 before |z|^2 > 4, at most ITER; its
    grey 0 when the count is ITER, else 255 * (the pixels whose count is at
    most its own, ITER excluded) / (all pixels whose count is below ITER).
    Returns the bytes (malloc'd, the caller frees) and their number in
    *LEN, or NULL when out of memory. */
static inline unsigned char *ref_mandel(int64_t w, int64_t h, int64_t iter, double x, double y,
                                        double span, size_t *len)
{
    char head[64];
    int hl = snprintf(head, sizeof head, "P5\n%lld %lld\n255\n", (long long)w, (long long)h);
    int64_t *count = malloc((size_t)(w * h) * sizeof *count);
    uint64_t *below =
        calloc((size_t)iter + 1, sizeof *below); /* below[k]: pixels with count <= k */
    unsigned char *pgm = malloc((size_t)hl + (size_t)(w * h));
    if (!count || !below || !pgm) {
        free(count), free(below), free(pgm);
        return NULL;
    }
    for (int64_t row = 0; row < h; row++)
        for (int64_t col = 0; col < w; col++) {
            double cr = x + ((double)col + 0.5 - (double)w / 2.0) * span / (double)w;
            double ci = y - ((double)row + 0.5 - (double)h / 2.0) * span / (double)w;
            double zr = 0, zi = 0;
            int64_t k = 0;
            while (k < iter && zr * zr + zi * zi <= 4) {
                double next = zr * zr - zi * zi + cr;
                zi = 2 * zr * zi + ci;
                zr = next;
                k++;
            }
            count[row * w + col] = k;
            if (k < iter)
                below[k]++;
        }
    for (int64_t k = 1; k < iter; k++)
        below[k] += below[k - 1];
    memcpy(pgm, head, (size_t)hl);
    for (int64_t p = 0; p < w * h; p++)
        pgm[hl + p] =
            count[p] == iter ? 0 : (unsigned char)(255 * below[count[p]] / below[iter - 1]);
    free(count);
    free(below);
    *len = (size_t)hl + (size_t)(w * h);
    return pgm;
}

#endif
