/*  =========================================================================
    kernels - C += A x B on blocks, the kernel chosen by the operands' form

    @header
    The one arithmetic routine behind mm.multiply. C is a dense row-major
    accumulator; A and B are decoded blocks of any form:

        dense  x dense   cblas_dgemm (OpenBLAS, one thread per SI)
        csr    x dense   row-wise axpy over the non-zeros of A
        dense  x csr     row-wise scatter of the rows of B
        csr    x csr     Gustavson: scatter rows of B into C's row
        zero   x any     nothing to do

    The caller turns the accumulator into its best form (dense or CSR by
    fill) with spm_mm_block_from_dense.
    @discuss
    OpenBLAS would start one thread per core inside every SI; an IEU runs
    one SI per slot and a node runs one IEU per core, so BLAS threads would
    only fight over the cores. The first dense kernel call opens OpenBLAS
    (dlopen: no other process pays for loading it) and sets it to one
    thread, once per process.
    @end
    =========================================================================
*/
#ifndef SPM_MM_KERNELS_H_INCLUDED
#define SPM_MM_KERNELS_H_INCLUDED

#include "isa/matrix/block.h"

/*  Adds A x B to the dense row-major M x N array C, where A is M x K and B
    is K x N. Returns 0, SPM_EFORMAT (with a detail) when the shapes do
    not agree, or SPM_ESYS when OpenBLAS cannot be loaded. */
int spm_mm_multiply_add(const spm_mm_block_t *a, const spm_mm_block_t *b, double *c, uint32_t m,
                        uint32_t n);

/*  Name of the kernel used for operands of kinds KA and KB ("dense*dense",
    "csr*dense", "dense*csr", "csr*csr", "zero"). */
const char *spm_mm_kernel_name(spm_mm_kind_t ka, spm_mm_kind_t kb);

#endif
