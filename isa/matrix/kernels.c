/*  =========================================================================
    kernels - C += A x B on blocks, the kernel chosen by the operands' form
    =========================================================================
*/
#include "isa/matrix/kernels.h"
#include "vm/spm.h"

#include <cblas.h>
#include <inttypes.h>
#include <pthread.h>

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single_thread(void)
{
    openblas_set_num_threads(1);
}

static void dense_dense(const spm_mm_block_t *a, const spm_mm_block_t *b, double *c)
{
    pthread_once(&blas_once, blas_single_thread);
    int m = (int)a->m.rows, k = (int)a->m.cols, n = (int)b->m.cols;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a->val, k, b->val, n, 1.0,
                c, n);
}

static void csr_dense(const spm_mm_block_t *a, const spm_mm_block_t *b, double *c)
{
    uint32_t n = b->m.cols;
    for (uint32_t i = 0; i < a->m.rows; i++) {
        double *ci = c + (size_t)i * n;
        for (uint32_t q = a->rowptr[i]; q < a->rowptr[i + 1]; q++) {
            const double *bp = b->val + (size_t)a->colidx[q] * n;
            double v = a->val[q];
            for (uint32_t j = 0; j < n; j++)
                ci[j] += v * bp[j];
        }
    }
}

static void dense_csr(const spm_mm_block_t *a, const spm_mm_block_t *b, double *c)
{
    uint32_t k = a->m.cols, n = b->m.cols;
    for (uint32_t i = 0; i < a->m.rows; i++) {
        double *ci = c + (size_t)i * n;
        const double *ai = a->val + (size_t)i * k;
        for (uint32_t p = 0; p < k; p++) {
            double v = ai[p];
            if (v == 0.0)
                continue;
            for (uint32_t q = b->rowptr[p]; q < b->rowptr[p + 1]; q++)
                ci[b->colidx[q]] += v * b->val[q];
        }
    }
}

static void csr_csr(const spm_mm_block_t *a, const spm_mm_block_t *b, double *c)
{
    uint32_t n = b->m.cols;
    for (uint32_t i = 0; i < a->m.rows; i++) {
        double *ci = c + (size_t)i * n;
        for (uint32_t qa = a->rowptr[i]; qa < a->rowptr[i + 1]; qa++) {
            uint32_t p = a->colidx[qa];
            double v = a->val[qa];
            for (uint32_t q = b->rowptr[p]; q < b->rowptr[p + 1]; q++)
                ci[b->colidx[q]] += v * b->val[q];
        }
    }
}

int spm_mm_multiply_add(const spm_mm_block_t *a, const spm_mm_block_t *b, double *c, uint32_t m,
                        uint32_t n)
{
    if (a->m.cols != b->m.rows || a->m.rows != m || b->m.cols != n)
        return spm_error(SPM_EFORMAT,
                         "mm.multiply: shapes %" PRIu32 "x%" PRIu32 " * %" PRIu32 "x%" PRIu32
                         " into %" PRIu32 "x%" PRIu32 " do not agree",
                         a->m.rows, a->m.cols, b->m.rows, b->m.cols, m, n);
    if (a->m.kind == SPM_MM_ZERO || b->m.kind == SPM_MM_ZERO)
        return 0;
    if (a->m.kind == SPM_MM_DENSE)
        b->m.kind == SPM_MM_DENSE ? dense_dense(a, b, c) : dense_csr(a, b, c);
    else
        b->m.kind == SPM_MM_DENSE ? csr_dense(a, b, c) : csr_csr(a, b, c);
    return 0;
}

const char *spm_mm_kernel_name(spm_mm_kind_t ka, spm_mm_kind_t kb)
{
    if (ka == SPM_MM_ZERO || kb == SPM_MM_ZERO)
        return "zero";
    if (ka == SPM_MM_DENSE)
        return kb == SPM_MM_DENSE ? "dense*dense" : "dense*csr";
    return kb == SPM_MM_DENSE ? "csr*dense" : "csr*csr";
}
