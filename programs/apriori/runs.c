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
#include "spm/spm.h"

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
    spm_mining_setrd_t rd; /* the reader */
} run_t;

/*  The key of a run read to its end: above every set's (a length is at
    most SPM_MINING_MAX_K, 2^12, at bit 51). */
#define DONE UINT64_MAX

struct spm_mine_runs {
    size_t budget, held; /* bytes in memory allowed, and held */
    char *dir;           /* where the file goes */
    unsigned bits;       /* items are below 2^bits */
    run_t *run;
    uint32_t nrun, rcap;
    uint64_t *key;      /* nrun: each run's set's key (spm_mine_list_key; DONE: none) */
    uint32_t *lt;       /* nrun: the merge's tree of losers, the winner at 0 */
    int fd;             /* the file (-1: none yet) */
    uint64_t fsize;     /* its bytes */
    unsigned char *map; /* mapped while merging */
    uint64_t count;     /* sets in all */
    uint64_t since;     /* sets merged since the mapping's pages were dropped */
    int pending;        /* the winner's set was returned: advance it first */
    uint64_t bound;     /* every other run's key is at least this (0: not known) */
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

int spm_mine_runs_add(spm_mine_runs_t *r, const void *data, size_t len, unsigned flags,
                      void (*release)(void *), void *owner)
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
    int mapped = (flags & SPM_MINE_RUN_MAPPED) != 0; /* kept where it lies */
    if (!mapped && r->held + len > r->budget) {
        u->mem = NULL;
        u->owner = NULL;
        rc = spill(r, data, len);
        release(owner);
        if (rc != 0)
            return rc;
    } else if (!mapped) {
        r->held += len;
    }
    r->nrun++;
    r->count += rd.total;
    return 0;
}

/*  1 when run A's set goes before run B's. */
static int before(const spm_mine_runs_t *r, uint32_t a, uint32_t b)
{
    uint64_t x = r->key[a], y = r->key[b];
    if (x != y)
        return x < y;
    return x != DONE && spm_mining_set_cmp(r->run[a].set, r->run[b].set, r->run[a].rd.g.k) < 0;
}

/*  Reads run I's next set. Returns 1, 0 at the run's end, or SPM_EFORMAT. */
static int advance(spm_mine_runs_t *r, uint32_t i)
{
    run_t *u = &r->run[i];
    int rc = spm_mining_setrd_next(&u->rd);
    r->key[i] = rc == 1 ? spm_mine_list_key(u->set, u->rd.g.k, r->bits) : DONE;
    return rc;
}

/*  The merge is a tree of losers over the runs (Knuth, TAOCP 5.4.1):
    node j (1 <= j < nrun) keeps the run that lost the match there, leaf
    nrun + i is run i, and the overall winner sits at 0. A new set of the
    winner replays only the matches on its way up, one comparison a level,
    where a heap's sift-down makes two (the dense set at 5%: 8,020,425
    sets from 162 runs). Returns the winner of the subtree at NODE. */
static uint32_t play(spm_mine_runs_t *r, uint32_t node)
{
    if (node >= r->nrun)
        return node - r->nrun;
    uint32_t a = play(r, 2 * node), b = play(r, 2 * node + 1);
    int first = before(r, a, b);
    r->lt[node] = first ? b : a;
    return first ? a : b;
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
    if ((!r->key && !(r->key = malloc(((size_t)r->nrun + 1) * sizeof *r->key))) ||
        (!r->lt && !(r->lt = malloc(((size_t)r->nrun + 1) * sizeof *r->lt))))
        return spm_error(SPM_ENOMEM, "out of memory");
    r->pending = 0;
    r->bound = 0;
    for (uint32_t i = 0; i < r->nrun; i++) {
        run_t *u = &r->run[i];
        if (!u->set && !(u->set = malloc(((size_t)u->maxk + 1) * 4)))
            return spm_error(SPM_ENOMEM, "out of memory");
        const void *bytes = u->mem ? u->mem : r->map + u->off;
        r->key[i] = DONE;
        int rc = spm_mining_setrd_open(&u->rd, bytes, u->len, u->set);
        if (rc == 0)
            rc = advance(r, i);
        if (rc < 0)
            return rc;
    }
    r->lt[0] = r->nrun ? play(r, 1) : 0;
    return 0;
}

int spm_mine_runs_next(spm_mine_runs_t *r, uint32_t *k, const uint32_t **items, uint64_t *count)
{
    if (r->pending) {
        uint32_t w = r->lt[0];
        int rc = advance(r, w);
        if (rc < 0)
            return rc;
        r->pending = 0;
        /* Runs that follow one another (classes walked in item order) make
           long stretches of one winner: while its key stays below every
           other run's, the tree stands as it is. */
        if (r->key[w] >= r->bound) {
            uint64_t least = DONE;
            int kept = 1;
            for (uint32_t node = (w + r->nrun) / 2; node > 0; node /= 2)
                if (before(r, r->lt[node], w)) {
                    uint32_t loser = w;
                    w = r->lt[node];
                    r->lt[node] = loser;
                    kept = 0;
                } else if (r->key[r->lt[node]] < least) {
                    least = r->key[r->lt[node]];
                }
            /* A winner that kept its place beat every loser on its way:
               the least of their keys bounds all the other runs'. */
            r->bound = kept ? least : 0;
            r->lt[0] = w;
        }
    }
    if (r->nrun == 0 || r->key[r->lt[0]] == DONE)
        return 0;
    if (r->map && ++r->since >= SPM_MINE_RUNS_DROP) {
        /* The file's pages stay in the page cache; only the mapping lets
           them go, so that they are not counted as the client's. */
        madvise(r->map, r->fsize, MADV_DONTNEED);
        r->since = 0;
    }
    const run_t *u = &r->run[r->lt[0]];
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

void spm_mine_runs_destroy(spm_mine_runs_t **self_p)
{
    spm_mine_runs_t *r = *self_p;
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
    free(r->key);
    free(r->lt);
    free(r->dir);
    free(r);
    *self_p = NULL;
}
