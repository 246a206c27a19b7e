/*  =========================================================================
    matmul - `spm matmul A.mtx B.mtx -o C.mtx`: C = A x B on the VM

    The client does the file work, so it runs anywhere, with or without a
    shared file system: it streams both Matrix Market files, cuts them into
    staged raw blocks (cut.h) and puts them into the VM's store, submits the
    "matmul" program (sf.c), then fetches C's blocks one block row at a time
    and writes C.mtx through an all-or-nothing output file: a failed run
    leaves no C.mtx behind (nor a partial one in its place).

    The output is a coordinate "general" file, rows in order and columns in
    order within a row; its field is integer when both inputs are integer
    or pattern, else real. Or, by -o's name or --format, a CSR matrix as
    scipy.sparse.save_npz writes it (C.npz) or a dense array as numpy.save
    writes it (C.npy): npout.h. The inputs may be either too (npmat.h).
    =========================================================================
*/
#include "programs/matmul/cmd.h"
#include "base/textio.h"
#include "isa/matrix/block.h"
#include "isa/matrix/mmio.h"
#include "isa/matrix/raw.h"
#include "programs/matmul/cut.h"
#include "programs/matmul/job.h"
#include "programs/matmul/npout.h"
#include "programs/matmul/rows.h"
#include "programs/matmul/stage.h"
#include "base/cli.h"
#include "vm/client/progress.h"
#include "vm/client/session.h"
#include "spm/spm.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SPARSE_BLOCK 256 /* the dissertation's block side */
#define DENSE_BLOCK 512  /* fewer, larger dgemm calls: faster on dense inputs (docs/MATMUL.md) */
/* Faster still, where C has enough blocks for every IEU slot: A's blocks
   1024 x 1024, B's and C's 1024 x 2048. A one-thread dgemm is faster on
   wider calls (docs/PERFORMANCE.md). */
#define WIDE_ROWS 1024
#define WIDE_COLS 2048
#define BLOCKS_PER_SLOT 4

static const char usage_text[] =
    "usage: spm matmul A.mtx B.mtx -o C.mtx [options]\n"
    "\n"
    "Multiplies two matrices on the VM: C = A x B. A and B are Matrix Market\n"
    "files, or NumPy and SciPy files (a dense float64 .npy as numpy.save writes\n"
    "it, a sparse .npz as scipy.sparse.save_npz writes it: csr, csc or coo),\n"
    "told apart by their first bytes. They are read here (no shared file system\n"
    "is needed), cut into blocks (see --block) and put into the VM's store; C is\n"
    "written only when the job succeeded, to a temporary file renamed into\n"
    "place. Symmetric and skew-symmetric inputs are mirrored; pattern entries\n"
    "count as 1; nan and inf are refused. The run report is printed at the end.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   where C goes (required; a regular file, not A or B);\n"
    "                      its name picks the format: C.npz a CSR matrix that\n"
    "                      scipy.sparse.load_npz loads, C.npy a dense float64\n"
    "                      array that numpy.load loads, else Matrix Market\n"
    "      --format F      mtx, npz or npy, whatever -o's name is\n"
    "  -b, --block K       blocks of K x K, K from 1 to 16384\n"
    "      --block MxPxN   A cut into blocks of M x P, B into P x N (so C's are\n"
    "                      M x N), each side 1 to 16384. Default: 256; when both\n"
    "                      inputs are dense (array files, or entries filling at\n"
    "                      least 1/8 of the matrix) 512, or 1024x1024x2048 on an\n"
    "                      embedded VM where C then still has 4 blocks for each\n"
    "                      IEU slot\n"
    "  -p, --policy P      scheduling policy (default ss):\n"
    "                        ss   smart, static seed: a new task group reuses\n"
    "                             the blocks the IEU's node holds\n"
    "                        sr   smart, random seed\n"
    "                        r    random: an IEU that needs a new task group\n"
    "                             takes a random one nobody has\n"
    "                        s    static partition of task groups among IEUs\n"
    "                        syn  synchronous supersteps (BSP)\n"
    "  -u, --update U      how products reach a C block (default write):\n"
    "                        write        one SI owns C(i,j) at a time (RW chain)\n"
    "                        update       products in parallel, each added by an SI\n"
    "                        distributed  concurrent partials merged by the VM (ACC)\n"
    "                        mixture      write until no task group is left, then\n"
    "                                     distributed\n"
    "      --per-si N      products per multiply SI, 1 to 127 (default: chosen\n"
    "                      from the blocks' predicted work: about 10 ms each, and\n"
    "                      more where C's block is large, since every SI copies\n"
    "                      and stores it)\n"
    "      --seed N        seed of the random policies (default 1)\n"
    "  -h, --help          this text\n"
    "\n";

/*  Everything one run holds, released in one place. */
typedef struct {
    const char *a_path, *b_path, *out_path;
    spm_mm_out_format_t format; /* C's */
    int sync;                   /* --sync: C is made durable */
    int bar;                    /* progress meters (vm/client/progress.h) */
    spm_mm_job_t job;
    spm_mmio_t *ra, *rb;
    spm_outfile_t *out;
    spm_session_t *s;
    spm_sdb_t *cids;
} run_t;

typedef struct {
    spm_session_t *s;
    spm_sdb_t *grid;
    uint64_t *entries;
    uint32_t nbj;
} put_t;

static int put_block(void *arg, uint32_t bi, uint32_t bj, void *data, size_t len, uint64_t entries)
{
    put_t *p = arg;
    size_t at = (size_t)bi * p->nbj + bj;
    p->entries[at] = entries;
    return spm_session_put_take(p->s,
                                spm_mm_raw_is(data, len) ? SPM_MM_RAW_TYPE : SPM_MM_BLOCK_TYPE,
                                data, len, &p->grid[at]);
}

/*  Puts the blocks of both inputs into the store, their ids into the
    job's grids and their entry counts into its counts; both files are
    read at once (stage.h). */
static int put_inputs(run_t *r)
{
    const spm_mmio_header_t *ha = spm_mmio_header(r->ra), *hb = spm_mmio_header(r->rb);
    const spm_mm_job_t *j = &r->job;
    put_t pa = {r->s, j->a, j->annz, spm_mm_nblocks((uint32_t)ha->cols, j->bp)};
    put_t pb = {r->s, j->b, j->bnnz, spm_mm_nblocks((uint32_t)hb->cols, j->bn)};
    spm_mm_input_t a = {r->ra, j->bm, j->bp, put_block, &pa};
    spm_mm_input_t b = {r->rb, j->bp, j->bn, put_block, &pb};
    char label[256];
    snprintf(label, sizeof label, "reading %s and %s", r->a_path, r->b_path);
    spm_progress_t meter;
    spm_progress_begin(&meter, r->bar, label, ha->entries + hb->entries);
    int rc = spm_mm_stage_pair(&a, &b, &meter);
    int done = spm_session_put_flush(r->s);
    spm_progress_end(&meter);
    return rc ? rc : done;
}

/*  C's blocks as the writers take them. An embedded VM's blocks
    are read where its store keeps them (file pages, mapped: keeping them
    costs the client no memory of its own), so the first pass, which
    counts C's entries, keeps each block where it lies and the writing
    takes it from there; a block from a VM elsewhere came as a message and
    is let go, to be fetched again with its row (docs/MATMUL.md). */
typedef struct {
    spm_session_t *s;
    size_t n;            /* blocks of C, row-major */
    const spm_sdb_t *id; /* their ids (0: all zero) */
    spm_kept_t **kept;   /* a block kept where it lies (NULL: fetched with its row) */
    const void **data;   /* and its bytes */
    size_t *len;
    const size_t *at;     /* first pass: the block of each id asked for */
    uint64_t nnz;         /* the entries of C, from the blocks' headers */
    spm_mm_block_t **row; /* a block row: views of its blocks (NULL: all zero) */
    spm_kept_t **held;    /* what holds the bytes of each view fetched with the row */
    uint32_t *col;        /* the block column of each block fetched with the row */
} cblocks_t;

/*  First pass: a block's header count, and the block kept where it lies. */
static int count_block(void *arg, size_t index, const void *data, size_t len)
{
    cblocks_t *c = arg;
    spm_mm_meta_t meta;
    int rc = spm_mm_block_meta(data, len, &meta);
    if (rc != 0)
        return rc;
    c->nnz += meta.nnz;
    spm_kept_t *k = spm_session_keep(c->s, &data);
    size_t b = c->at[index];
    if (k && spm_kept_in_place(k)) {
        c->kept[b] = k;
        c->data[b] = data;
        c->len[b] = len;
    } else {
        spm_kept_free(k);
    }
    return 0;
}

/*  Counts C's entries (a CSR archive's arrays are laid out before they
    are written), keeping what lies in place. */
static int count_entries(cblocks_t *c)
{
    size_t *at = malloc((c->n ? c->n : 1) * sizeof *at), k = 0;
    spm_sdb_t *ids = malloc((c->n ? c->n : 1) * sizeof *ids);
    int rc = at && ids ? 0 : spm_error(SPM_ENOMEM, "out of memory");
    for (size_t b = 0; b < c->n && rc == 0; b++)
        if (c->id[b]) {
            ids[k] = c->id[b];
            at[k++] = b;
        }
    c->at = at;
    if (rc == 0)
        rc = spm_session_get_each(c->s, ids, k, count_block, c);
    c->at = NULL;
    free(at);
    free(ids);
    return rc;
}

/*  Checks the LEN bytes at DATA, a block of C, and views them in *OUT. */
static int view(const void *data, size_t len, spm_mm_block_t **out)
{
    int rc = spm_mm_block_validate(data, len);
    return rc ? rc : spm_mm_block_view(data, len, out);
}

/*  A block fetched with its row: kept where it came and viewed there. */
static int row_block(void *arg, size_t index, const void *data, size_t len)
{
    cblocks_t *c = arg;
    uint32_t bj = c->col[index];
    spm_kept_t *k = spm_session_keep(c->s, &data);
    if (!k) /* out of memory: a copy, then */
        return spm_mm_block_decode(data, len, &c->row[bj]);
    int rc = view(data, len, &c->row[bj]);
    if (rc != 0)
        spm_kept_free(k);
    else
        c->held[bj] = k;
    return rc;
}

/*  Block row BI of C (NBJ blocks) as views into C->row: those kept in
    place, and the rest fetched. */
static int view_row(cblocks_t *c, uint32_t bi, uint32_t nbj)
{
    spm_sdb_t *ids = malloc(nbj * sizeof *ids);
    int rc = ids ? 0 : spm_error(SPM_ENOMEM, "out of memory");
    size_t n = 0;
    for (uint32_t bj = 0; bj < nbj && rc == 0; bj++) {
        size_t b = (size_t)bi * nbj + bj;
        if (c->kept[b])
            rc = view(c->data[b], c->len[b], &c->row[bj]);
        else if (c->id[b]) {
            ids[n] = c->id[b];
            c->col[n++] = bj;
        }
    }
    if (rc == 0)
        rc = spm_session_get_each(c->s, ids, n, row_block, c);
    free(ids);
    return rc;
}

/*  Lets go of block row BI's views ROW and what holds their bytes (HELD,
    and the blocks kept in place). */
static void release_row(cblocks_t *c, uint32_t bi, uint32_t nbj, spm_mm_block_t **row,
                        spm_kept_t **held)
{
    for (uint32_t bj = 0; bj < nbj; bj++) {
        spm_mm_block_destroy(&row[bj]);
        spm_kept_free(held[bj]);
        held[bj] = NULL;
        spm_kept_free(c->kept[(size_t)bi * nbj + bj]);
        c->kept[(size_t)bi * nbj + bj] = NULL;
    }
}

/*  The thread that writes C's block rows while the caller's fetches and
    checks the next: a row is handed over, written, and handed back. */
typedef struct {
    spm_mm_npout_t *o;     /* the binary writer (the thread's while a row is out), or */
    spm_mmio_writer_t *mm; /* the Matrix Market one */
    spm_progress_t *meter; /* hears the rows written */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a row came, was written, or the end came */
    spm_mm_rows_t rows;  /* the row handed over */
    int full;            /* rows is to be written */
    int end;             /* no more rows */
    int rc;              /* the first failure */
    char detail[1024];   /* its detail (the thread's own) */
} writer_t;

/*  Writes block row ROWS to W's file, whichever format it is. */
static int put_rows(writer_t *w, const spm_mm_rows_t *rows)
{
    return w->mm ? spm_mm_write_rows(w->mm, rows, w->meter)
                 : spm_mm_npout_rows(w->o, rows, w->meter);
}

static void *write_rows(void *arg)
{
    writer_t *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->full && !w->end)
            pthread_cond_wait(&w->cond, &w->lock);
        if (!w->full)
            break;
        spm_mm_rows_t rows = w->rows;
        pthread_mutex_unlock(&w->lock);
        int rc = w->rc == 0 ? put_rows(w, &rows) : 0;
        pthread_mutex_lock(&w->lock);
        if (rc != 0 && w->rc == 0) {
            w->rc = rc;
            snprintf(w->detail, sizeof w->detail, "%s", spm_error_detail());
        }
        w->full = 0;
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/*  Waits until W has written the row it was handed; returns its failure. */
static int written(writer_t *w)
{
    pthread_mutex_lock(&w->lock);
    while (w->full)
        pthread_cond_wait(&w->cond, &w->lock);
    int rc = w->rc;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/*  Opens W's writer of C (M x N, NNZ entries when counted) in R's format:
    C.mtx is a coordinate file of FIELD whose count is written at the end. */
static int open_writer(run_t *r, writer_t *w, uint64_t nnz, spm_mmio_field_t field)
{
    const spm_mm_job_t *j = &r->job;
    if (r->format == SPM_MM_OUT_MTX) {
        spm_mmio_header_t h = {SPM_MMIO_COORDINATE, field, SPM_MMIO_GENERAL, j->m, j->n,
                               UINT64_MAX};
        return (w->mm = spm_mmio_writer_open(spm_outfile_stream(r->out), &h)) ? 0 : SPM_EIO;
    }
    return (w->o = spm_mm_npout_open(r->out, r->format, j->m, j->n, nnz)) ? 0 : SPM_EIO;
}

/*  Finishes W's file when RC is 0 (else only frees its writer); returns
    RC or the failure to finish. */
static int close_writer(writer_t *w, int rc)
{
    int crc = w->mm             ? spm_mmio_writer_close(&w->mm)
              : rc == 0 && w->o ? spm_mm_npout_close(&w->o)
                                : 0;
    spm_mm_npout_destroy(&w->o);
    return rc ? rc : crc;
}

/*  Fetches C block row by block row and writes it as .mtx (FIELD), .npz
    or .npy. The blocks are read where they are, not copied. A thread
    writes each row (C.mtx: formatted on two threads, rows.h) while this
    one fetches and checks the next: the 8192 product at 5% (805 MB of
    .npz) was written in 1.05-1.3 s on one thread, 0.6-0.8 s on two; the
    4096 one (201 MB) in 0.17-0.25 s, 0.13-0.14 s. C.mtx was written from
    decoded copies of each block row, fetched between rows while nothing
    was written. */
static int write_c(run_t *r, spm_mmio_field_t field)
{
    const spm_mm_job_t *j = &r->job;
    uint32_t nbi = spm_mm_nblocks(j->m, j->bm), nbj = spm_mm_nblocks(j->n, j->bn);
    cblocks_t c = {.s = r->s, .n = (size_t)nbi * nbj, .id = r->cids};
    spm_mm_block_t **rows[2] = {calloc(nbj, sizeof **rows), calloc(nbj, sizeof **rows)};
    spm_kept_t **held[2] = {calloc(nbj, sizeof **held), calloc(nbj, sizeof **held)};
    c.kept = calloc(c.n ? c.n : 1, sizeof *c.kept);
    c.data = calloc(c.n ? c.n : 1, sizeof *c.data);
    c.len = calloc(c.n ? c.n : 1, sizeof *c.len);
    c.col = calloc(nbj, sizeof *c.col);
    spm_progress_t meter;
    writer_t w = {.meter = &meter};
    pthread_t tid;
    int rc = c.kept && c.data && c.len && c.col && rows[0] && rows[1] && held[0] && held[1]
                 ? 0
                 : spm_error(SPM_ENOMEM, "out of memory");
    /* a .npy needs no count: from a VM elsewhere its blocks come once */
    if (rc == 0 && (r->format == SPM_MM_OUT_NPZ || spm_session_rundir(r->s)))
        rc = count_entries(&c);
    if (rc == 0)
        rc = open_writer(r, &w, c.nnz, field);
    char label[128];
    snprintf(label, sizeof label, "writing %s", r->out_path);
    spm_progress_begin(&meter, r->bar, label, j->m);
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    int threaded = rc == 0 && pthread_create(&tid, NULL, write_rows, &w) == 0;
    for (uint32_t bi = 0; bi < nbi && rc == 0; bi++) {
        c.row = rows[bi % 2];
        c.held = held[bi % 2];
        rc = view_row(&c, bi, nbj);
        spm_mm_rows_t next = {c.row, nbj, j->bn, (uint64_t)bi * j->bm,
                              spm_mm_block_side(j->m, j->bm, bi)};
        int wrc = threaded ? written(&w) : 0; /* row bi - 1 */
        if (bi > 0)
            release_row(&c, bi - 1, nbj, rows[(bi - 1) % 2], held[(bi - 1) % 2]);
        rc = rc ? rc : wrc;
        if (rc == 0 && threaded) {
            pthread_mutex_lock(&w.lock);
            w.rows = next;
            w.full = 1;
            pthread_cond_broadcast(&w.cond);
            pthread_mutex_unlock(&w.lock);
        } else if (rc == 0) {
            rc = put_rows(&w, &next);
        }
        if (rc != 0 || bi + 1 == nbi) { /* this row, once written */
            int last = threaded ? written(&w) : 0;
            release_row(&c, bi, nbj, rows[bi % 2], held[bi % 2]);
            rc = rc ? rc : last;
        }
    }
    if (threaded) {
        pthread_mutex_lock(&w.lock);
        w.end = 1;
        pthread_cond_broadcast(&w.cond);
        pthread_mutex_unlock(&w.lock);
        pthread_join(tid, NULL);
        if (rc != 0 && rc == w.rc)
            spm_error(rc, "%s", w.detail); /* the writer's failure, told on this thread */
    }
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    rc = close_writer(&w, rc);
    spm_progress_end(&meter);
    for (size_t b = 0; c.kept && b < c.n; b++)
        spm_kept_free(c.kept[b]);
    for (int k = 0; k < 2; k++) {
        free(rows[k]);
        free(held[k]);
    }
    free(c.kept);
    free(c.data);
    free(c.len);
    free(c.col);
    return rc;
}

/*  Whether the matrix of header H fills its blocks past the sparse
    threshold, as far as its header tells (an array file, or as many
    entries as that, mirrored ones counted twice). */
static int looks_dense(const spm_mmio_header_t *h)
{
    double entries = (double)h->entries * (h->symmetry == SPM_MMIO_GENERAL ? 1 : 2);
    return h->format == SPM_MMIO_ARRAY ||
           entries >= SPM_MM_SPARSE_FILL * (double)h->rows * (double)h->cols;
}

/*  Sets J's blocks to K x K everywhere. */
static void square(spm_mm_job_t *j, uint32_t k)
{
    j->bm = j->bp = j->bn = k;
}

/*  Sets J's blocks for dense inputs with C of M x N: the wide ones where
    C then has BLOCKS_PER_SLOT blocks for each of the VM's SLOTS IEU slots
    (0: unknown, a running VM), so that the dynamic policies can still
    balance; else DENSE_BLOCK square. */
static void dense_blocks(spm_mm_job_t *j, uint64_t m, uint64_t n, long slots)
{
    uint64_t blocks =
        (uint64_t)spm_mm_nblocks((uint32_t)m, WIDE_ROWS) * spm_mm_nblocks((uint32_t)n, WIDE_COLS);
    if (slots > 0 && blocks >= (uint64_t)slots * BLOCKS_PER_SLOT) {
        j->bm = j->bp = WIDE_ROWS;
        j->bn = WIDE_COLS;
    } else {
        square(j, DENSE_BLOCK);
    }
}

/*  Parses --block: K (blocks of K x K) or MxPxN (A's blocks M x P, B's
    P x N, C's M x N), each side 1 to SPM_MM_MAX_DIM, into J. */
static int parse_block(const char *s, spm_mm_job_t *j)
{
    unsigned long side[3];
    int n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        side[n] = isdigit((unsigned char)*p) ? strtoul(p, &end, 10) : 0;
        if (!side[n] || errno || side[n] > SPM_MM_MAX_DIM)
            break;
        n++;
        if (*end == '\0' && (n == 1 || n == 3)) {
            j->bm = (uint32_t)side[0];
            j->bp = (uint32_t)side[n == 3 ? 1 : 0];
            j->bn = (uint32_t)side[n - 1];
            return 0;
        }
        if (*end != 'x' || n == 3)
            break;
        p = end + 1;
    }
    return spm_error(SPM_EINVAL, "--block: '%s' is not K or MxPxN, sides from 1 to %d", s,
                     SPM_MM_MAX_DIM);
}

/*  Blocks a grid may have whatever its files hold (about 60 MiB of grids
    in the client and the center). */
#define MIN_GRID ((uint64_t)1 << 20)

/*  Bytes of the file at PATH (0: not a regular file, stdin). */
static uint64_t file_bytes(const char *path)
{
    struct stat st;
    return strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)
               ? (uint64_t)st.st_size
               : 0;
}

/*  Refuses a grid of NAME (ROWS x COLS in blocks of RK x CK) of more
    blocks than LIMIT. What a job holds in the client and the center grows
    with its grids of blocks (ids, counts, C's task groups), and they grow
    with the shapes the headers claim, not with the entries: a 66-byte
    file claiming 2147483648 x 2 made 8 million blocks of 256 x 256, and
    the client's peak reached 1 GiB. The limit follows what the files hold
    (a block per byte of input, or MIN_GRID), so memory does too. */
static int check_grid(const char *name, uint64_t rows, uint64_t cols, uint32_t rk, uint32_t ck,
                      uint64_t limit, uint64_t bytes)
{
    uint64_t blocks =
        (uint64_t)spm_mm_nblocks((uint32_t)rows, rk) * spm_mm_nblocks((uint32_t)cols, ck);
    if (blocks <= limit)
        return 0;
    return spm_error(SPM_EINVAL,
                     "%s: %" PRIu64 "x%" PRIu64 " in blocks of %ux%u makes %" PRIu64
                     " blocks, more than %" PRIu64 " bytes of input can fill (at most %" PRIu64
                     "); give a larger --block",
                     name, rows, cols, rk, ck, blocks, bytes, limit);
}

/*  Opens both inputs and checks that they can be multiplied; picks the
    block sides when --block did not (SLOTS: the embedded VM's IEU slots, 0
    for a running VM). */
static int open_inputs(run_t *r, long slots)
{
    if (!(r->ra = spm_mmio_open(r->a_path)) || !(r->rb = spm_mmio_open(r->b_path)))
        return SPM_EFORMAT;
    const spm_mmio_header_t *a = spm_mmio_header(r->ra), *b = spm_mmio_header(r->rb);
    if (a->cols != b->rows)
        return spm_error(SPM_EINVAL,
                         "inner dimensions do not match: %s is %" PRIu64 "x%" PRIu64
                         ", %s is %" PRIu64 "x%" PRIu64,
                         r->a_path, a->rows, a->cols, r->b_path, b->rows, b->cols);
    if (r->job.bm == 0 && looks_dense(a) && looks_dense(b))
        dense_blocks(&r->job, a->rows, b->cols, slots);
    else if (r->job.bm == 0)
        square(&r->job, SPARSE_BLOCK);
    uint64_t bytes = file_bytes(r->a_path) + file_bytes(r->b_path);
    uint64_t limit = bytes > MIN_GRID ? bytes : MIN_GRID;
    const spm_mm_job_t *j = &r->job;
    int rc;
    if ((rc = check_grid(r->a_path, a->rows, a->cols, j->bm, j->bp, limit, bytes)) != 0 ||
        (rc = check_grid(r->b_path, b->rows, b->cols, j->bp, j->bn, limit, bytes)) != 0 ||
        (rc = check_grid("C", a->rows, b->cols, j->bm, j->bn, limit, bytes)) != 0)
        return rc;
    r->job.m = (uint32_t)a->rows;
    r->job.p = (uint32_t)a->cols;
    r->job.n = (uint32_t)b->cols;
    return spm_mm_job_alloc(&r->job);
}

/*  MiB a dense product takes in the embedded VM's store, for its warmer
    (datacache/warmer.h): A, B and C at 8 bytes an element (dense tiles are
    staged as dense blocks). Only dense products with blocks of C of 512²
    and more get a warmer: large blocks are what it speeds up, and on the sparse
    product (blocks of C of 512 KiB) it changed nothing. */
static long dense_store_mb(const spm_mm_job_t *j)
{
    double elements = (double)j->m * j->p + (double)j->p * j->n + (double)j->m * j->n;
    return (long)(elements * 8 / (1 << 20)) + 1;
}

/*  MiB each thread of the embedded VM's IEUs touches at start (base/heap.h)
    for a dense product: two blocks of C, the accumulator an SI fills and
    the one its IEU is still copying into the store. */
static long dense_heap_mb(const spm_mm_job_t *j)
{
    return (long)(2.0 * j->bm * j->bn * 8 / (1 << 20)) + 1;
}

static int run(run_t *r, const spm_run_opts_t *opts)
{
    int rc = open_inputs(r, opts->center ? 0 : (long)opts->ieus * opts->slots);
    if (rc != 0)
        return rc;
    spm_run_opts_t own = *opts, *o = &own;
    if ((double)r->job.bm * r->job.bn >= (double)DENSE_BLOCK * DENSE_BLOCK &&
        looks_dense(spm_mmio_header(r->ra)) && looks_dense(spm_mmio_header(r->rb))) {
        o->warm_mb = dense_store_mb(&r->job); /* blocks of C of 2 MiB and more */
        o->heap_mb = dense_heap_mb(&r->job);
    }
    if (!(r->out = spm_outfile_open(r->out_path)))
        return SPM_EIO;
    spm_outfile_set_sync(r->out, r->sync);
    if ((rc = spm_session_open(o, &r->s)) != 0 || (rc = put_inputs(r)) != 0)
        return rc;
    void *args = NULL, *result = NULL;
    size_t len, rlen = 0;
    if ((rc = spm_mm_job_encode(&r->job, &args, &len)) != 0)
        return rc;
    rc = spm_session_run(r->s, "matmul", args, len, &result, &rlen);
    free(args);
    uint32_t nbi = spm_mm_nblocks(r->job.m, r->job.bm), nbj = spm_mm_nblocks(r->job.n, r->job.bn);
    if (rc == 0 && !(r->cids = calloc((size_t)nbi * nbj, sizeof(spm_sdb_t))))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    if (rc == 0)
        rc = spm_mm_result_decode(result, rlen, nbi, nbj, r->cids);
    free(result);
    if (rc != 0)
        return rc;
    int integral = spm_mmio_header(r->ra)->field != SPM_MMIO_REAL &&
                   spm_mmio_header(r->rb)->field != SPM_MMIO_REAL;
    if ((rc = write_c(r, integral ? SPM_MMIO_INTEGER : SPM_MMIO_REAL)) != 0)
        return spm_outfile_failure(r->out, rc); /* "C.mtx: No space left on device" */
    return spm_outfile_commit(&r->out);
}

static void release(run_t *r)
{
    if (r->out)
        spm_outfile_abort(&r->out);
    if (r->s)
        spm_session_destroy(&r->s);
    spm_mmio_destroy(&r->ra);
    spm_mmio_destroy(&r->rb);
    spm_mm_job_free(&r->job);
    free(r->cids);
}

int spm_cmd_matmul(int argc, char **argv)
{
    enum { OPT_SEED = 1, OPT_PER_SI, OPT_FORMAT };
    static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                             {"block", required_argument, 0, 'b'},
                                             {"policy", required_argument, 0, 'p'},
                                             {"update", required_argument, 0, 'u'},
                                             {"seed", required_argument, 0, OPT_SEED},
                                             {"per-si", required_argument, 0, OPT_PER_SI},
                                             {"format", required_argument, 0, OPT_FORMAT},
                                             {"help", no_argument, 0, 'h'},
                                             SPM_RUN_LONGOPTS,
                                             {0, 0, 0, 0}};
    run_t r = {.job = {.policy = SPM_MM_SS, .update = SPM_MM_WRITE, .seed = 1}};
    spm_run_opts_t o;
    spm_run_opts_init(&o);
    int c, rc = 0, have_format = 0;
    long v;
    while ((c = getopt_long(argc, argv, "o:b:p:u:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            r.out_path = optarg;
            break;
        case 'b':
            rc = parse_block(optarg, &r.job);
            break;
        case 'p':
            rc = spm_mm_policy_parse(optarg, &r.job.policy);
            break;
        case 'u':
            rc = spm_mm_update_parse(optarg, &r.job.update);
            break;
        case OPT_PER_SI:
            rc = spm_parse_long("--per-si", optarg, 1, SPM_MM_MAX_PER_SI, &v);
            r.job.per_si = (uint32_t)v;
            break;
        case OPT_FORMAT:
            rc = spm_mm_out_format_parse(optarg, &r.format);
            have_format = 1;
            break;
        case OPT_SEED:
            rc = spm_parse_long("--seed", optarg, 0, INT64_MAX, &v);
            r.job.seed = (uint64_t)v;
            break;
        case 'h':
            printf("%s%s", usage_text, spm_run_opts_help);
            return 0;
        case '?':
            return spm_cli_usage("matmul", "bad option");
        default:
            rc = spm_run_opts_set(&o, c, optarg);
        }
        if (rc != 0)
            return spm_cli_usage("matmul", "%s", spm_error_detail());
    }
    if (argc - optind != 2)
        return spm_cli_usage("matmul", "expected two input files, A.mtx and B.mtx");
    if (!r.out_path || strcmp(r.out_path, "-") == 0)
        return spm_cli_usage("matmul", "-o FILE is required (a regular file)");
    if (!have_format)
        r.format = spm_mm_out_format(r.out_path);
    r.a_path = argv[optind];
    r.b_path = argv[optind + 1];
    /* C over A or B would replace it when it is committed */
    if ((rc = spm_outfile_apart(r.out_path, (const char *[]){r.a_path, r.b_path}, 2)) != 0)
        return spm_cli_fail("matmul", rc);
    r.bar = spm_run_opts_bar(&o);
    r.sync = o.sync; /* --sync, a run option: C as well as the trace */
    rc = run(&r, &o);
    release(&r);
    return rc != 0 ? spm_cli_fail("matmul", rc) : 0;
}
