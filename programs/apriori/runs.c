/*  =========================================================================
    runs - the depth-first miner's class blocks, merged into output order

    Why it exists: the dense set at 5% has 8,020,425 itemsets in 162 class
    blocks. Decoding them into sort records, copying those into an external
    sort that spilled and merging its runs back cost the client 1.5 s; the
    blocks themselves, front coded, take 41 MB and are already runs in
    output order. With them, fetching and writing take 0.8 s.
    =========================================================================
*/
#include "programs/apriori/runs.h"
#include "isa/mining/sdb.h"
#include "vm/spm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*  A run: one block, in memory or in the file, and its reader. */
typedef struct {
    const void *mem; /* the bytes, while in memory (else NULL) */
    void *owner;     /* and what holds them, released by release() */
    void (*release)(void *owner);
    uint64_t off;          /* else their place in the file */
    size_t len;            /* bytes */
    uint32_t maxk;         /* its longest set */
    uint32_t *set;         /* maxk items: the set read last */
    uint64_t key;          /* its key (spm_mine_list_key) */
    spm_mining_setrd_t rd; /* the reader */
} run_t;

/*  A place in the merge heap: a run and its set's key, side by side so
    that the heap's comparisons stay in one array while keys differ. */
typedef struct {
    uint64_t key;
    uint32_t run;
} entry_t;

struct spm_mine_runs {
    size_t budget, held; /* bytes in memory allowed, and held */
    char *dir;           /* where the file goes */
    unsigned bits;       /* items are below 2^bits */
    run_t *run;
    uint32_t nrun, rcap;
    entry_t *heap; /* runs with a set, by their set */
    uint32_t nheap;
    int fd;             /* the file (-1: none yet) */
    uint64_t fsize;     /* its bytes */
    unsigned char *map; /* mapped while merging */
    uint64_t count;     /* sets in all */
    uint64_t since;     /* sets merged since the mapping's pages were dropped */
    int pending;        /* the top run's set was returned: advance it first */
};

uint64_t spm_mine_list_key(const uint32_t *s, uint32_t k, unsigned b)
{
    uint64_t key = (uint64_t)k << 51;
    for (uint32_t j = 0, shift = 51; j < k && shift >= b; j++) {
        shift -= b;
        key |= (uint64_t)s[j] << shift;
    }
    return key;
}

spm_mine_runs_t *spm_mine_runs_new(size_t budget, const char *dir, unsigned bits)
{
    spm_mine_runs_t *r = calloc(1, sizeof *r);
    if (!dir)
        dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (!r || !(r->dir = strdup(dir))) {
        free(r);
        return NULL;
    }
    r->budget = budget;
    r->bits = bits ? bits : 1;
    r->fd = -1;
    return r;
}

/*  Appends LEN bytes at DATA to the file (made at the first call). */
static int spill(spm_mine_runs_t *r, const void *data, size_t len)
{
    if (r->fd < 0) {
        size_t plen = strlen(r->dir) + sizeof "/spm-runs-XXXXXX";
        char *path = malloc(plen);
        if (!path)
            return spm_error(SPM_ENOMEM, "out of memory");
        snprintf(path, plen, "%s/spm-runs-XXXXXX", r->dir);
        if ((r->fd = mkstemp(path)) >= 0)
            unlink(path);
        free(path);
        if (r->fd < 0)
            return spm_error(SPM_EIO, "cannot make a temporary file in %s: %s", r->dir,
                             strerror(errno));
    }
    for (size_t done = 0; done < len;) {
        ssize_t n = write(r->fd, (const char *)data + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return spm_error(SPM_EIO, "cannot write a temporary file in %s: %s", r->dir,
                             n < 0 ? strerror(errno) : "no space");
        done += (size_t)n;
    }
    r->fsize += len;
    return 0;
}

int spm_mine_runs_add(spm_mine_runs_t *r, const void *data, size_t len, void (*release)(void *),
                      void *owner)
{
    spm_mining_setrd_t rd;
    int rc = spm_mining_setrd_open(&rd, data, len, NULL);
    if (rc == 0 && r->nrun == r->rcap) {
        uint32_t cap = r->rcap ? 2 * r->rcap : 64;
        run_t *v = realloc(r->run, cap * sizeof *v);
        rc = v ? 0 : spm_error(SPM_ENOMEM, "out of memory");
        r->run = v ? v : r->run;
        r->rcap = v ? cap : r->rcap;
    }
    if (rc != 0) {
        release(owner);
        return rc;
    }
    run_t *u = &r->run[r->nrun];
    *u = (run_t){.mem = data,
                 .owner = owner,
                 .release = release,
                 .off = r->fsize,
                 .len = len,
                 .maxk = rd.maxk};
    if (r->held + len > r->budget) {
        u->mem = NULL;
        u->owner = NULL;
        rc = spill(r, data, len);
        release(owner);
        if (rc != 0)
            return rc;
    } else {
        r->held += len;
    }
    r->nrun++;
    r->count += rd.total;
    return 0;
}

/*  1 when entry A's set goes before entry B's. */
static int before(const spm_mine_runs_t *r, const entry_t *a, const entry_t *b)
{
    if (a->key != b->key)
        return a->key < b->key;
    const run_t *x = &r->run[a->run], *y = &r->run[b->run];
    return spm_mining_set_cmp(x->set, y->set, x->rd.g.k) < 0;
}

/*  Moves entry I down to its place: the smaller child moves up into the
    hole until neither goes before it. */
static void sift_down(spm_mine_runs_t *r, uint32_t i)
{
    entry_t e = r->heap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= r->nheap)
            break;
        if (c + 1 < r->nheap && before(r, &r->heap[c + 1], &r->heap[c]))
            c++;
        if (!before(r, &r->heap[c], &e))
            break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    r->heap[i] = e;
}

/*  Reads run U's next set. Returns 1, 0 at the run's end, or SPM_EFORMAT. */
static int advance(spm_mine_runs_t *r, run_t *u)
{
    int rc = spm_mining_setrd_next(&u->rd);
    if (rc == 1)
        u->key = spm_mine_list_key(u->set, u->rd.g.k, r->bits);
    return rc;
}

int spm_mine_runs_start(spm_mine_runs_t *r)
{
    if (r->fd >= 0 && !r->map && r->fsize > 0) {
        void *m = mmap(NULL, r->fsize, PROT_READ, MAP_PRIVATE, r->fd, 0);
        if (m == MAP_FAILED)
            return spm_error(SPM_EIO, "cannot map a temporary file back: %s", strerror(errno));
        r->map = m;
        madvise(m, r->fsize, MADV_SEQUENTIAL);
    }
    if (!r->heap && !(r->heap = malloc(((size_t)r->nrun + 1) * sizeof *r->heap)))
        return spm_error(SPM_ENOMEM, "out of memory");
    r->nheap = 0;
    r->pending = 0;
    for (uint32_t i = 0; i < r->nrun; i++) {
        run_t *u = &r->run[i];
        if (!u->set && !(u->set = malloc(((size_t)u->maxk + 1) * 4)))
            return spm_error(SPM_ENOMEM, "out of memory");
        const void *bytes = u->mem ? u->mem : r->map + u->off;
        int rc = spm_mining_setrd_open(&u->rd, bytes, u->len, u->set);
        if (rc == 0)
            rc = advance(r, u);
        if (rc < 0)
            return rc;
        if (rc == 1)
            r->heap[r->nheap++] = (entry_t){u->key, i};
    }
    for (uint32_t i = r->nheap / 2; i-- > 0;)
        sift_down(r, i);
    return 0;
}

int spm_mine_runs_next(spm_mine_runs_t *r, uint32_t *k, const uint32_t **items, uint64_t *count)
{
    if (r->pending) {
        run_t *u = &r->run[r->heap[0].run];
        int rc = advance(r, u);
        if (rc < 0)
            return rc;
        if (rc == 0)
            r->heap[0] = r->heap[--r->nheap];
        else
            r->heap[0].key = u->key;
        sift_down(r, 0);
        r->pending = 0;
    }
    if (r->nheap == 0)
        return 0;
    if (r->map && ++r->since >= SPM_MINE_RUNS_DROP) {
        /* The file's pages stay in the page cache; only the mapping lets
           them go, so that they are not counted as the client's. */
        madvise(r->map, r->fsize, MADV_DONTNEED);
        r->since = 0;
    }
    const run_t *u = &r->run[r->heap[0].run];
    *k = u->rd.g.k;
    *items = u->set;
    *count = u->rd.g.count;
    r->pending = 1;
    return 1;
}

uint64_t spm_mine_runs_count(const spm_mine_runs_t *r)
{
    return r ? r->count : 0;
}

void spm_mine_runs_free(spm_mine_runs_t **rp)
{
    spm_mine_runs_t *r = *rp;
    if (!r)
        return;
    for (uint32_t i = 0; i < r->nrun; i++) {
        if (r->run[i].owner)
            r->run[i].release(r->run[i].owner);
        free(r->run[i].set);
    }
    if (r->map)
        munmap(r->map, r->fsize);
    if (r->fd >= 0)
        close(r->fd);
    free(r->run);
    free(r->heap);
    free(r->dir);
    free(r);
    *rp = NULL;
}
