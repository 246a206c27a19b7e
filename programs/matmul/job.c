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

static size_t grid(uint32_t r, uint32_t c, uint32_t k)
{
    return (size_t)spm_mm_nblocks(r, k) * spm_mm_nblocks(c, k);
}

int spm_mm_job_alloc(spm_mm_job_t *j)
{
    j->a = calloc(grid(j->m, j->p, j->k), sizeof(spm_sdb_t));
    j->b = calloc(grid(j->p, j->n, j->k), sizeof(spm_sdb_t));
    j->annz = calloc(grid(j->m, j->p, j->k), sizeof(uint64_t));
    j->bnnz = calloc(grid(j->p, j->n, j->k), sizeof(uint64_t));
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
    uint32_t head[] = {JOB_MAGIC, 2, j->m, j->p, j->n, j->k, j->policy, j->update, j->per_si, 0};
    for (size_t i = 0; i < sizeof head / sizeof *head; i++)
        spm_buf_put_u32(&b, head[i]);
    spm_buf_put_u64(&b, j->seed);
    size_t na = grid(j->m, j->p, j->k), nb = grid(j->p, j->n, j->k);
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
    uint32_t head[10];
    memset(j, 0, sizeof *j);
    for (size_t i = 0; i < 10; i++)
        if (spm_get_u32(&c, &head[i]) != 0)
            return spm_error(SPM_EFORMAT, "matmul: truncated job");
    if (head[0] != JOB_MAGIC || head[1] != 2 || head[9] != 0 || spm_get_u64(&c, &j->seed) != 0)
        return spm_error(SPM_EFORMAT, "matmul: not a matmul job");
    j->m = head[2], j->p = head[3], j->n = head[4], j->k = head[5];
    if (!j->m || !j->p || !j->n || !j->k || j->k > SPM_MM_MAX_DIM || head[6] > SPM_MM_SS ||
        head[7] > SPM_MM_MIXTURE || head[8] > SPM_MM_MAX_PER_SI ||
        grid(j->m, j->p, j->k) > MAX_GRID || grid(j->p, j->n, j->k) > MAX_GRID ||
        grid(j->m, j->n, j->k) > MAX_GRID)
        return spm_error(SPM_EFORMAT, "matmul: job out of range");
    j->policy = (spm_mm_policy_t)head[6];
    j->update = (spm_mm_update_t)head[7];
    j->per_si = head[8];
    size_t na = grid(j->m, j->p, j->k), nb = grid(j->p, j->n, j->k);
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
