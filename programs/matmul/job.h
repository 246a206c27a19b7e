/*  =========================================================================
    job - what `spm matmul` submits to the "matmul" program, and its result

    @header
    The client cuts A (m x p) into blocks of at most bm x bp and B (p x n)
    into blocks of at most bp x bn, so C's blocks are at most bm x bn, and
    puts every non-empty one into the VM's store. It then submits this job
    description: the shapes, the block sides, the policy and update method,
    the products per multiply SI (0: chosen from the predicted work), and
    the grid of block ids (0 for a block with no entries: the SF never
    issues a multiply with a zero operand) with each block's entry count,
    from which the SF predicts the work of a product. The root SF's result
    is the grid of C's block ids (0 where C has an all-zero block).
    @discuss
    Encoding (little-endian): u32 magic 'SPMJ', u32 version (3), u32 m, p,
    n, bm, bp, bn, policy, update, per_si, u32 reserved (0), u64 seed,
    then for each block of A row-major (ceil(m/bm) x ceil(p/bp)) u64 id
    and u64 entries, then the same for B (ceil(p/bp) x ceil(n/bn)).
    The result: u32 magic 'SPMC', u32 rows of blocks, u32 cols of blocks,
    u32 reserved, then the C ids row-major. Decoding checks everything: the
    center never trusts a client's bytes.
    @end
    =========================================================================
*/
#ifndef SPM_MM_JOB_H_INCLUDED
#define SPM_MM_JOB_H_INCLUDED

#include "spm/spm.h"

/*  The dissertation's scheduling policies (section 4.2.3). */
typedef enum {
    SPM_MM_SYN = 0, /* BSP supersteps: the k-th SI of every task group, then a barrier */
    SPM_MM_S,       /* static: task groups partitioned among IEUs up front */
    SPM_MM_R,       /* random: an IEU takes a random unassigned task group */
    SPM_MM_SR,      /* smart, random seed: then the group that reuses most held blocks */
    SPM_MM_SS,      /* smart, static seed */
} spm_mm_policy_t;

/*  How SIs update a C block (section 8.3). */
typedef enum {
    SPM_MM_WRITE = 0,   /* one SI owns C(i,j) at a time: a chain of RW */
    SPM_MM_UPDATE,      /* products in parallel, each added to C by an mm.add (RW) */
    SPM_MM_DISTRIBUTED, /* concurrent ACC partials merged by the type's merge */
    SPM_MM_MIXTURE,     /* write until no task group is left unassigned, then ACC */
} spm_mm_update_t;

typedef struct {
    uint32_t m, p, n;       /* A is m x p, B is p x n */
    uint32_t bm, bp, bn;    /* block sides: A's blocks bm x bp, B's bp x bn, C's bm x bn */
    spm_mm_policy_t policy; /* scheduling policy */
    spm_mm_update_t update; /* update method for C */
    uint32_t per_si;        /* products per multiply SI, 0: by predicted work */
    uint64_t seed;          /* for the random policies */
    spm_sdb_t *a;           /* A's block ids, row-major, 0 = zero block (owned) */
    spm_sdb_t *b;           /* B's block ids, row-major (owned) */
    uint64_t *annz;         /* entries of each A block (owned) */
    uint64_t *bnnz;         /* entries of each B block (owned) */
} spm_mm_job_t;

#define SPM_MM_MAX_PER_SI 127 /* products in one multiply SI (operands: 2 per product + C) */

/*  Blocks along a dimension of D elements: ceil(D / K). */
uint32_t spm_mm_nblocks(uint32_t d, uint32_t k);

/*  Side of block I along a dimension of D elements cut every K. */
uint32_t spm_mm_block_side(uint32_t d, uint32_t k, uint32_t i);

/*  Whether a block of ROWS x COLS with ENTRIES staged entries is staged as
    a typed mm.block: filled past the sparse threshold, it would be dense,
    which needs no sorting, so the client builds it (half the bytes of raw
    entries) and no mm.load runs for it. Sparser blocks are staged raw and
    sorted into CSR by mm.load on an IEU. */
int spm_mm_staged_typed(uint64_t entries, uint32_t rows, uint32_t cols);

/*  Allocates J's id grids for its shapes (zeroed). Returns 0 or SPM_ENOMEM. */
int spm_mm_job_alloc(spm_mm_job_t *j);

/*  Frees J's grids. */
void spm_mm_job_free(spm_mm_job_t *j);

/*  Encodes J. Returns 0 with *DATA (malloc'd, caller frees), or SPM_ENOMEM. */
int spm_mm_job_encode(const spm_mm_job_t *j, void **data, size_t *len);

/*  Decodes and checks LEN bytes into *J (grids owned by J). Returns 0,
    SPM_EFORMAT or SPM_ENOMEM. */
int spm_mm_job_decode(const void *data, size_t len, spm_mm_job_t *j);

/*  Names ("ss", "write", ...) and their parsing (0 or SPM_EINVAL). */
const char *spm_mm_policy_name(spm_mm_policy_t p);
const char *spm_mm_update_name(spm_mm_update_t u);
int spm_mm_policy_parse(const char *s, spm_mm_policy_t *p);
int spm_mm_update_parse(const char *s, spm_mm_update_t *u);

/*  Encodes the result grid of NR x NC ids. Returns 0 or SPM_ENOMEM. */
int spm_mm_result_encode(const spm_sdb_t *ids, uint32_t nr, uint32_t nc, void **data, size_t *len);

/*  Decodes a result that must be NR x NC ids into IDS (caller's array).
    Returns 0 or SPM_EFORMAT. */
int spm_mm_result_decode(const void *data, size_t len, uint32_t nr, uint32_t nc, spm_sdb_t *ids);

#endif
