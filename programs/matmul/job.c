/*  =========================================================================
    job - what `spm matmul` submits to the "matmul" program, and its result
    =========================================================================
*/
#include "programs/matmul/job.h"
#include "isa/core/codec.h"
#include "isa/matrix/block.h"

#include <stdlib.h>
#include <string.h>

#define JOB_MAGIC 0x4a4d5053u    /* "SPMJ" */
#define RESULT_MAGIC 0x434d5053u /* "SPMC" */
#define MAX_GRID (1u << 24)      /* blocks per matrix */
#define JOB_VERSION 3            /* 3: a side for each dimension (2: one square side) */

static const char *policies[] = {"syn", "s", "r", "sr", "ss"};
static const char *updates[] = {"write", "update", "distributed", "mixture"};

uint32_t spm_mm_nblocks(uint32_t d, uint32_t k)
{
    return (uint32_t)(((uint64_t)d + k - 1) / k);
}

uint32_t spm_mm_block_side(uint32_t d, uint32_t k, uint32_t i)
{
    uint64_t start = (uint64_t)i * k;
    return start + k <= d ? k : (uint32_t)(d - start);
}

int spm_mm_staged_typed(uint64_t entries, uint32_t rows, uint32_t cols)
{
    return (double)entries >= SPM_MM_SPARSE_FILL * rows * (double)cols;
}

static size_t grid(uint32_t r, uint32_t c, uint32_t rk, uint32_t ck)
{
    return (size_t)spm_mm_nblocks(r, rk) * spm_mm_nblocks(c, ck);
}

/*  Blocks of A and of B. */
static size_t grid_a(const spm_mm_job_t *j)
{
    return grid(j->m, j->p, j->bm, j->bp);
}

static size_t grid_b(const spm_mm_job_t *j)
{
    return grid(j->p, j->n, j->bp, j->bn);
}

static int side_ok(uint32_t side)
{
    return side >= 1 && side <= SPM_MM_MAX_DIM;
}

int spm_mm_job_alloc(spm_mm_job_t *j)
{
    j->a = calloc(grid_a(j), sizeof(spm_sdb_t));
    j->b = calloc(grid_b(j), sizeof(spm_sdb_t));
    j->annz = calloc(grid_a(j), sizeof(uint64_t));
    j->bnnz = calloc(grid_b(j), sizeof(uint64_t));
    if (!j->a || !j->b || !j->annz || !j->bnnz) {
        spm_mm_job_free(j);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    return 0;
}

void spm_mm_job_free(spm_mm_job_t *j)
{
    free(j->a);
    free(j->b);
    free(j->annz);
    free(j->bnnz);
    j->a = j->b = NULL;
    j->annz = j->bnnz = NULL;
}

int spm_mm_job_encode(const spm_mm_job_t *j, void **data, size_t *len)
{
    spm_buf_t b = {0};
    uint32_t head[] = {JOB_MAGIC, JOB_VERSION, j->m,      j->p,      j->n,      j->bm,
                       j->bp,     j->bn,       j->policy, j->update, j->per_si, 0};
    for (size_t i = 0; i < sizeof head / sizeof *head; i++)
        spm_buf_put_u32(&b, head[i]);
    spm_buf_put_u64(&b, j->seed);
    size_t na = grid_a(j), nb = grid_b(j);
    for (size_t i = 0; i < na; i++) {
        spm_buf_put_u64(&b, j->a[i]);
        spm_buf_put_u64(&b, j->annz[i]);
    }
    for (size_t i = 0; i < nb; i++) {
        spm_buf_put_u64(&b, j->b[i]);
        spm_buf_put_u64(&b, j->bnnz[i]);
    }
    return spm_buf_take(&b, data, len) ? spm_error(SPM_ENOMEM, "out of memory") : 0;
}

int spm_mm_job_decode(const void *data, size_t len, spm_mm_job_t *j)
{
    spm_cursor_t c = spm_cursor(data, len);
    uint32_t head[12];
    memset(j, 0, sizeof *j);
    for (size_t i = 0; i < 12; i++)
        if (spm_get_u32(&c, &head[i]) != 0)
            return spm_error(SPM_EFORMAT, "matmul: truncated job");
    if (head[0] != JOB_MAGIC || head[1] != JOB_VERSION || head[11] != 0 ||
        spm_get_u64(&c, &j->seed) != 0)
        return spm_error(SPM_EFORMAT, "matmul: not a matmul job");
    j->m = head[2], j->p = head[3], j->n = head[4];
    j->bm = head[5], j->bp = head[6], j->bn = head[7];
    if (!j->m || !j->p || !j->n || !side_ok(j->bm) || !side_ok(j->bp) || !side_ok(j->bn) ||
        head[8] > SPM_MM_SS || head[9] > SPM_MM_MIXTURE || head[10] > SPM_MM_MAX_PER_SI ||
        grid_a(j) > MAX_GRID || grid_b(j) > MAX_GRID || grid(j->m, j->n, j->bm, j->bn) > MAX_GRID)
        return spm_error(SPM_EFORMAT, "matmul: job out of range");
    j->policy = (spm_mm_policy_t)head[8];
    j->update = (spm_mm_update_t)head[9];
    j->per_si = head[10];
    size_t na = grid_a(j), nb = grid_b(j);
    if (spm_cursor_left(&c) != (na + nb) * 16)
        return spm_error(SPM_EFORMAT, "matmul: job length does not match its grids");
    int rc = spm_mm_job_alloc(j);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < na; i++) {
        spm_get_u64(&c, &j->a[i]);
        spm_get_u64(&c, &j->annz[i]);
    }
    for (size_t i = 0; i < nb; i++) {
        spm_get_u64(&c, &j->b[i]);
        spm_get_u64(&c, &j->bnnz[i]);
    }
    return 0;
}

const char *spm_mm_policy_name(spm_mm_policy_t p)
{
    return (unsigned)p <= SPM_MM_SS ? policies[p] : "?";
}

const char *spm_mm_update_name(spm_mm_update_t u)
{
    return (unsigned)u <= SPM_MM_MIXTURE ? updates[u] : "?";
}

int spm_mm_policy_parse(const char *s, spm_mm_policy_t *p)
{
    for (unsigned i = 0; i <= SPM_MM_SS; i++)
        if (strcmp(s, policies[i]) == 0) {
            *p = (spm_mm_policy_t)i;
            return 0;
        }
    return spm_error(SPM_EINVAL, "--policy: '%s' is not one of ss, sr, r, s, syn", s);
}

int spm_mm_update_parse(const char *s, spm_mm_update_t *u)
{
    for (unsigned i = 0; i <= SPM_MM_MIXTURE; i++)
        if (strcmp(s, updates[i]) == 0) {
            *u = (spm_mm_update_t)i;
            return 0;
        }
    return spm_error(SPM_EINVAL, "--update: '%s' is not one of write, update, distributed, mixture",
                     s);
}

int spm_mm_result_encode(const spm_sdb_t *ids, uint32_t nr, uint32_t nc, void **data, size_t *len)
{
    spm_buf_t b = {0};
    spm_buf_put_u32(&b, RESULT_MAGIC);
    spm_buf_put_u32(&b, nr);
    spm_buf_put_u32(&b, nc);
    spm_buf_put_u32(&b, 0);
    for (size_t i = 0; i < (size_t)nr * nc; i++)
        spm_buf_put_u64(&b, ids[i]);
    return spm_buf_take(&b, data, len) ? spm_error(SPM_ENOMEM, "out of memory") : 0;
}

int spm_mm_result_decode(const void *data, size_t len, uint32_t nr, uint32_t nc, spm_sdb_t *ids)
{
    spm_cursor_t c = spm_cursor(data, len);
    uint32_t magic, r, k, pad;
    if (spm_get_u32(&c, &magic) || spm_get_u32(&c, &r) || spm_get_u32(&c, &k) ||
        spm_get_u32(&c, &pad) || magic != RESULT_MAGIC || r != nr || k != nc ||
        spm_cursor_left(&c) != (size_t)nr * nc * 8)
        return spm_error(SPM_EFORMAT, "matmul: malformed result (%zu bytes)", len);
    for (size_t i = 0; i < (size_t)nr * nc; i++)
        spm_get_u64(&c, &ids[i]);
    return 0;
}
