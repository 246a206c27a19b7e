/*  =========================================================================
    matmul_ref - the independent sequential reference for matrix tests

    @discuss
    Plain loops on dense row-major arrays, written without looking at the
    product code: a seeded generator, a triple-loop product, the relative
    Frobenius error, and a small Matrix Market reader and writer of its own
    (fscanf/fprintf), so a test never checks the product against itself.
    Header-only: tests and benchmarks include it.
    @end
    =========================================================================
*/
#ifndef SPM_MATMUL_REF_H_INCLUDED
#define SPM_MATMUL_REF_H_INCLUDED

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { REF_REAL = 0, REF_INTEGER = 1, REF_PATTERN = 2 };
enum { REF_GENERAL = 0, REF_SYMMETRIC = 1, REF_SKEW = 2 };

static inline uint64_t ref_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double ref_uniform(uint64_t *s)
{
    return (double)(ref_next(s) >> 11) / 9007199254740992.0;
}

/*  An M x N matrix with about DENSITY of its entries non-zero: real values
    in [-1, 1), integers in [-5, 5] without 0, or ones (pattern). */
static inline double *ref_random(int m, int n, double density, uint64_t seed, int field)
{
    double *a = calloc((size_t)m * n + 1, sizeof(double));
    for (size_t i = 0; i < (size_t)m * n; i++) {
        if (ref_uniform(&seed) >= density)
            continue;
        if (field == REF_REAL)
            a[i] = 2.0 * ref_uniform(&seed) - 1.0;
        else if (field == REF_INTEGER)
            a[i] = (double)(1 + (int)(ref_next(&seed) % 5)) * (ref_next(&seed) & 1 ? 1 : -1);
        else
            a[i] = 1.0;
    }
    return a;
}

/*  Makes the N x N matrix A symmetric (upper = lower) or skew-symmetric
    (upper = -lower, zero diagonal). */
static inline void ref_symmetrize(int n, double *a, int symmetry)
{
    for (int i = 0; i < n; i++) {
        if (symmetry == REF_SKEW)
            a[(size_t)i * n + i] = 0.0;
        for (int j = i + 1; j < n; j++)
            a[(size_t)i * n + j] =
                symmetry == REF_SKEW ? 0.0 - a[(size_t)j * n + i] : a[(size_t)j * n + i];
    }
}

/*  C = A x B with A m x p and B p x n. */
static inline double *ref_matmul(int m, int p, int n, const double *a, const double *b)
{
    double *c = calloc((size_t)m * n + 1, sizeof(double));
    for (int i = 0; i < m; i++)
        for (int k = 0; k < p; k++) {
            double v = a[(size_t)i * p + k];
            if (v != 0.0)
                for (int j = 0; j < n; j++)
                    c[(size_t)i * n + j] += v * b[(size_t)k * n + j];
        }
    return c;
}

/*  ||C - R||_F / ||R||_F (the absolute error when R is zero). */
static inline double ref_rel_err(int m, int n, const double *c, const double *r)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < (size_t)m * n; i++) {
        d += (c[i] - r[i]) * (c[i] - r[i]);
        s += r[i] * r[i];
    }
    return s > 0 ? sqrt(d / s) : sqrt(d);
}

/*  Writes A (m x n) to PATH as Matrix Market: ARRAY or coordinate, FIELD,
    SYMMETRY (the lower triangle of a symmetric A is written). Entries of a
    coordinate file are written in a scrambled order. Returns 0 or -1. */
static inline int ref_write_mtx(const char *path, int m, int n, const double *a, int array,
                                int field, int symmetry)
{
    static const char *fields[] = {"real", "integer", "pattern"};
    static const char *syms[] = {"general", "symmetric", "skew-symmetric"};
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "%%%%MatrixMarket matrix %s %s %s\n%% written by the test reference\n",
            array ? "array" : "coordinate", fields[field], syms[symmetry]);
    size_t nnz = 0;
    for (int j = 0; j < n; j++)
        for (int i = symmetry == REF_GENERAL ? 0 : j + (symmetry == REF_SKEW); i < m; i++)
            nnz += a[(size_t)i * n + j] != 0.0;
    if (array)
        fprintf(f, "%d %d\n", m, n);
    else
        fprintf(f, "%d %d %zu\n", m, n, nnz);
    for (int pass = 0; pass < (array ? 1 : 2); pass++) /* odd columns first, then even */
        for (int j = 0; j < n; j++) {
            if (!array && (j % 2) != (pass == 0))
                continue;
            for (int i = symmetry == REF_GENERAL ? 0 : j + (symmetry == REF_SKEW); i < m; i++) {
                double v = a[(size_t)i * n + j];
                if (array)
                    fprintf(f, field == REF_INTEGER ? "%.0f\n" : "%.17g\n", v);
                else if (v != 0.0 && field == REF_PATTERN)
                    fprintf(f, "%d %d\n", i + 1, j + 1);
                else if (v != 0.0)
                    fprintf(f, field == REF_INTEGER ? "%d %d %.0f\n" : "%d %d %.17g\n", i + 1,
                            j + 1, v);
            }
        }
    return fclose(f) == 0 ? 0 : -1;
}

/*  Reads a Matrix Market file into a dense array (*M x *N), mirroring
    symmetric and skew-symmetric files and summing duplicates. Returns the
    array or NULL. */
static inline double *ref_read_mtx(const char *path, int *m, int *n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char line[1024], fmt[64] = "", field[64] = "", sym[64] = "";
    double *a = NULL;
    if (!fgets(line, sizeof line, f) ||
        sscanf(line, "%%%%MatrixMarket matrix %63s %63s %63s", fmt, field, sym) != 3)
        goto out;
    do {
        if (!fgets(line, sizeof line, f))
            goto out;
    } while (line[0] == '%');
    long nnz = 0;
    int array = strcasecmp(fmt, "array") == 0, pattern = strcasecmp(field, "pattern") == 0;
    int symmetry = strcasecmp(sym, "symmetric") == 0        ? REF_SYMMETRIC
                   : strcasecmp(sym, "skew-symmetric") == 0 ? REF_SKEW
                                                            : REF_GENERAL;
    if (sscanf(line, array ? "%d %d" : "%d %d %ld", m, n, &nnz) != (array ? 2 : 3))
        goto out;
    a = calloc((size_t)*m * *n + 1, sizeof(double));
    if (array) {
        for (int j = 0; j < *n; j++)
            for (int i = symmetry == REF_GENERAL ? 0 : j + (symmetry == REF_SKEW); i < *m; i++)
                if (fscanf(f, "%lf", &a[(size_t)i * *n + j]) != 1)
                    goto bad;
    } else {
        for (long e = 0; e < nnz; e++) {
            int i, j;
            double v = 1.0;
            if (fscanf(f, "%d %d", &i, &j) != 2 || (!pattern && fscanf(f, "%lf", &v) != 1))
                goto bad;
            a[(size_t)(i - 1) * *n + (j - 1)] += v;
        }
    }
    if (symmetry != REF_GENERAL)
        for (int i = 0; i < *m; i++)
            for (int j = 0; j < i; j++)
                a[(size_t)j * *n + i] =
                    symmetry == REF_SKEW ? 0.0 - a[(size_t)i * *n + j] : a[(size_t)i * *n + j];
    goto out;
bad:
    free(a);
    a = NULL;
out:
    fclose(f);
    return a;
}

#endif
