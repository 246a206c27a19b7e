/*  What every benchmark shares: the assertion macros that let it use
    tests/spm_test.h outside Check, repetitions and quick mode from the
    environment (SPM_BENCH_REPS, SPM_BENCH_QUICK=1), and medians.
    Header-only; include before tests/spm_test.h. */
#ifndef SPM_BENCH_H_INCLUDED
#define SPM_BENCH_H_INCLUDED

#include <stdio.h>
#include <stdlib.h>

#define SPM_TEST_ASSERT(c)                                                                         \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "bench: %s failed\n", #c);                                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define SPM_TEST_FAIL(...) (fprintf(stderr, __VA_ARGS__), exit(1))

/*  SPM_BENCH_QUICK=1: a smoke run with less work. */
static inline int bench_quick(void)
{
    const char *q = getenv("SPM_BENCH_QUICK");
    return q && *q == '1';
}

/*  Repetitions: SPM_BENCH_REPS, else 1 when quick, else 3. */
static inline int bench_reps(void)
{
    const char *r = getenv("SPM_BENCH_REPS");
    return r && atoi(r) > 0 ? atoi(r) : bench_quick() ? 1 : 3;
}

static inline int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/*  Median of V[0..N) (sorts V). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
