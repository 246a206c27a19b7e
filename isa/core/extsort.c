/*  =========================================================================
    extsort - sorting more records than fit in memory, in a fixed budget

    Why it exists: `spm mine` must put millions of itemsets and rules into
    item order after the job, and holding them all made the client's memory
    grow with the output. This keeps a fixed budget and lets the disk take
    the rest. Records live in one arena, 8-byte aligned, and an index of
    (offset << 24 | length) words is what qsort_r moves. A run file is the
    sorted records, each as a 32-bit length and its bytes. With a key
    (spm_extsort_set_key), a parallel array of 64-bit keys is sorted with
    the index by a quicksort of its own that calls CMP only where keys tie.
    =========================================================================
*/
#include "isa/core/extsort.h"
#include "spm/spm.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/*  A sorted run in a temporary file, being written or merged. */
typedef struct {
    FILE *f;       /* the unlinked file */
    char *iobuf;   /* its stdio buffer (SPM_EXTSORT_IOBUF bytes) */
    uint64_t *rec; /* the current record, while merging */
    size_t len;    /* its length */
    size_t cap;    /* bytes allocated at rec */
    uint64_t seq;  /* creation order: breaks ties, so merges are stable */
} run_t;

struct spm_extsort {
    size_t budget;           /* bytes of records and index held at most */
    char *dir;               /* where temporary files go */
    spm_extsort_cmp_fn *cmp; /* the order */
    void *arg;               /* its argument */
    unsigned char *arena;    /* records in memory, each 8-byte aligned */
    size_t used, acap;       /* arena bytes used and allocated */
    uint64_t *idx;           /* n entries: offset << 24 | length */
    spm_extsort_key_fn *key; /* the records' keys (NULL: none) */
    void *karg;              /* its argument */
    uint64_t *keys;          /* n entries, with idx (when key is set) */
    size_t n, icap;          /* entries used and allocated */
    size_t cursor;           /* next entry to return (in memory) */
    uint64_t count;          /* records added */
    uint64_t spilled;        /* runs ever written */
    run_t **runs;            /* the live runs */
    size_t nruns, rcap;      /* live runs, slots allocated */
    run_t **heap;            /* merge heap over the runs with a record */
    size_t nheap;            /* runs in the heap */
    run_t *pending;          /* run whose record was returned last: advance first */
    int sorted;              /* spm_extsort_sort was called */
    size_t *seg, nseg, scap; /* first entries of the runs in order in the buffer */
    int in_run;              /* spm_extsort_run was called: records come in runs */
    int mixed;               /* a record of the buffer came outside a run */
};

#define LEN_MASK ((uint64_t)SPM_EXTSORT_MAX_RECORD)
#define PARALLEL_MIN 65536 /* entries from which a keyed sort takes two threads */
#define PAD8(n) (((n) + 7) & ~(size_t)7)

/*  Where the runs of a sort given DIR go. */
static const char *spill_dir(const char *dir)
{
    if (!dir)
        dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

uint64_t spm_extsort_room(const char *dir)
{
    struct statvfs st;
    if (statvfs(spill_dir(dir), &st) != 0)
        return UINT64_MAX;
    return (uint64_t)st.f_bavail * st.f_frsize;
}

spm_extsort_t *spm_extsort_new(size_t budget, const char *dir, spm_extsort_cmp_fn *cmp, void *arg)
{
    spm_extsort_t *self = calloc(1, sizeof *self);
    dir = spill_dir(dir);
    if (!self || !(self->dir = strdup(dir))) {
        free(self);
        return NULL;
    }
    self->budget = budget < 64 ? 64 : budget;
    self->cmp = cmp;
    self->arg = arg;
    return self;
}

void spm_extsort_set_key(spm_extsort_t *self, spm_extsort_key_fn *key, void *arg)
{
    assert(self && self->count == 0 && !self->idx);
    self->key = key;
    self->karg = arg;
}

static void run_free(run_t *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    free(r->iobuf);
    free(r->rec);
    free(r);
}

/*  A new empty run file, unlinked at once, into *OUT. Returns 0, SPM_ENOMEM
    or SPM_EIO. */
static int run_new(spm_extsort_t *self, run_t **out)
{
    size_t plen = strlen(self->dir) + sizeof "/spm-sort-XXXXXX";
    char *path = malloc(plen);
    run_t *r = calloc(1, sizeof *r);
    if (!path || !r || !(r->iobuf = malloc(SPM_EXTSORT_IOBUF))) {
        free(path);
        run_free(r);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    snprintf(path, plen, "%s/spm-sort-XXXXXX", self->dir);
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    free(path);
    if (fd < 0 || !(r->f = fdopen(fd, "w+"))) {
        int rc = spm_error(SPM_EIO, "cannot make a temporary file in %s: %s", self->dir,
                           strerror(errno));
        if (fd >= 0)
            close(fd);
        run_free(r);
        return rc;
    }
    setvbuf(r->f, r->iobuf, _IOFBF, SPM_EXTSORT_IOBUF);
    r->seq = self->spilled++;
    *out = r;
    return 0;
}

static int write_error(const spm_extsort_t *self)
{
    return spm_error(SPM_EIO, "cannot write a temporary file in %s: %s", self->dir,
                     strerror(errno));
}

static int run_put(run_t *r, const void *rec, size_t len)
{
    uint32_t l = (uint32_t)len;
    return fwrite_unlocked(&l, 4, 1, r->f) == 1 && fwrite_unlocked(rec, 1, len, r->f) == len ? 0
                                                                                             : -1;
}

/*  Reads the run's next record into r->rec. Returns 1, 0 at its end, or
    SPM_EIO. */
static int run_get(run_t *r)
{
    uint32_t l;
    if (fread_unlocked(&l, 4, 1, r->f) != 1)
        return ferror(r->f)
                   ? spm_error(SPM_EIO, "cannot read a temporary file back: %s", strerror(errno))
                   : 0;
    if (l > r->cap) {
        size_t cap = PAD8((size_t)l) * 2;
        uint64_t *v = realloc(r->rec, cap);
        if (!v)
            return spm_error(SPM_ENOMEM, "out of memory");
        r->rec = v;
        r->cap = cap;
    }
    if (fread_unlocked(r->rec, 1, l, r->f) != l)
        return spm_error(SPM_EIO, "a temporary file was cut short");
    r->len = l;
    return 1;
}

static int append_run(spm_extsort_t *self, run_t *r)
{
    if (self->nruns == self->rcap) {
        size_t cap = self->rcap ? self->rcap * 2 : 16;
        run_t **v = realloc(self->runs, cap * sizeof *v);
        if (!v)
            return spm_error(SPM_ENOMEM, "out of memory");
        self->runs = v;
        self->rcap = cap;
    }
    self->runs[self->nruns++] = r;
    return 0;
}

static int cmp_idx(const void *a, const void *b, void *arg)
{
    const spm_extsort_t *self = arg;
    uint64_t i = *(const uint64_t *)a, j = *(const uint64_t *)b;
    return self->cmp(self->arena + (i >> 24), self->arena + (j >> 24), self->arg);
}

/*  Orders entries I and J of the buffer: by key, then CMP (<0, 0, >0). */
static int entry_cmp(const spm_extsort_t *self, size_t i, size_t j)
{
    if (self->key && self->keys[i] != self->keys[j])
        return self->keys[i] < self->keys[j] ? -1 : 1;
    return self->cmp(self->arena + (self->idx[i] >> 24), self->arena + (self->idx[j] >> 24),
                     self->arg);
}

/*  Whether the entry of key KA and index word EA goes before that of KB
    and EB. */
static int key_before(const spm_extsort_t *self, uint64_t ka, uint64_t ea, uint64_t kb, uint64_t eb)
{
    if (ka != kb)
        return ka < kb;
    return self->cmp(self->arena + (ea >> 24), self->arena + (eb >> 24), self->arg) < 0;
}

static void swap_entries(spm_extsort_t *self, size_t i, size_t j)
{
    uint64_t k = self->keys[i], e = self->idx[i];
    self->keys[i] = self->keys[j];
    self->idx[i] = self->idx[j];
    self->keys[j] = k;
    self->idx[j] = e;
}

/*  Hoare's partition of entries [LO, HI) (over 16) around a median of
    three: returns P, with no entry of [LO, P) after any of [P, HI). */
static size_t partition(spm_extsort_t *self, size_t lo, size_t hi)
{
    uint64_t *k = self->keys, *e = self->idx;
    size_t m = lo + (hi - 1 - lo) / 2, l = hi - 1;
    if (key_before(self, k[m], e[m], k[lo], e[lo]))
        swap_entries(self, lo, m);
    if (key_before(self, k[l], e[l], k[lo], e[lo]))
        swap_entries(self, lo, l);
    if (key_before(self, k[l], e[l], k[m], e[m]))
        swap_entries(self, m, l);
    uint64_t pk = k[m], pe = e[m];
    size_t i = lo - 1, j = hi;
    for (;;) {
        do
            i++;
        while (key_before(self, k[i], e[i], pk, pe));
        do
            j--;
        while (key_before(self, pk, pe, k[j], e[j]));
        if (i >= j)
            return j + 1;
        swap_entries(self, i, j);
    }
}

/*  Sorts entries [LO, HI) by key, then CMP: quicksort, recursing into the
    smaller side; insertion sort below 16 entries. */
static void key_sort(spm_extsort_t *self, size_t lo, size_t hi)
{
    uint64_t *k = self->keys, *e = self->idx;
    while (hi - lo > 16) {
        size_t p = partition(self, lo, hi);
        if (p - lo < hi - p) {
            key_sort(self, lo, p);
            lo = p;
        } else {
            key_sort(self, p, hi);
            hi = p;
        }
    }
    for (size_t a = lo + 1; a < hi; a++) {
        uint64_t tk = k[a], te = e[a];
        size_t b = a;
        for (; b > lo && key_before(self, tk, te, k[b - 1], e[b - 1]); b--) {
            k[b] = k[b - 1];
            e[b] = e[b - 1];
        }
        k[b] = tk;
        e[b] = te;
    }
}

/*  A half of a keyed sort, on a second thread. */
typedef struct {
    spm_extsort_t *self;
    size_t lo, hi;
} half_t;

static void *sort_half(void *arg)
{
    half_t *h = arg;
    key_sort(h->self, h->lo, h->hi);
    return NULL;
}

/*  A merge of runs in order in the buffer: the next entry of a run, and
    where it ends. */
typedef struct {
    size_t at, end;
} seg_t;

/*  Whether run A's next entry goes before run B's (ties: A first when it
    came first). */
static int seg_before(const spm_extsort_t *self, const seg_t *a, const seg_t *b)
{
    int c = entry_cmp(self, a->at, b->at);
    return c < 0 || (c == 0 && a->at < b->at);
}

static void seg_sift(const spm_extsort_t *self, seg_t *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && seg_before(self, &h[l], &h[m]))
            m = l;
        if (l + 1 < n && seg_before(self, &h[l + 1], &h[m]))
            m = l + 1;
        if (m == i)
            return;
        seg_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/*  Merges the buffer's M runs (each already in order) into a new index,
    through a heap: cheaper than sorting it. Returns 0, or SPM_ENOMEM
    (the buffer is then sorted as usual). */
static int merge_memory(spm_extsort_t *self, size_t m)
{
    seg_t *h = malloc(m * sizeof *h);
    uint64_t *idx = malloc(self->icap * sizeof *idx);
    uint64_t *keys = self->key ? malloc(self->icap * sizeof *keys) : NULL;
    if (!h || !idx || (self->key && !keys)) {
        free(h);
        free(idx);
        free(keys);
        return SPM_ENOMEM;
    }
    size_t runs = m;
    m = 0;
    for (size_t i = 0; i < runs; i++) {
        h[m] = (seg_t){self->seg[i], i + 1 < runs ? self->seg[i + 1] : self->n};
        m += h[m].at < h[m].end; /* a run begun last may be empty */
    }
    for (size_t i = m; i-- > 0;)
        seg_sift(self, h, m, i);
    for (size_t out = 0; m > 0; out++) {
        idx[out] = self->idx[h[0].at];
        if (keys)
            keys[out] = self->keys[h[0].at];
        if (++h[0].at == h[0].end)
            h[0] = h[--m];
        seg_sift(self, h, m, 0);
    }
    free(h);
    free(self->idx);
    free(self->keys);
    self->idx = idx;
    self->keys = keys;
    return 0;
}

/*  Sorts the index of the records in memory. A large keyed sort is split
    at its first partition and its halves sorted on two threads: the sort
    runs while the VM has finished, so the second core is free (chess at
    60%, 254,944 itemsets: 19 ms on one). */
static void sort_memory(spm_extsort_t *self)
{
    size_t runs = self->mixed ? 0 : self->nseg;
    self->nseg = 0;
    self->mixed = 0;
    if (runs > 0 && (runs == 1 || merge_memory(self, runs) == 0))
        return;
    if (!self->key) {
        qsort_r(self->idx, self->n, sizeof *self->idx, cmp_idx, self);
        return;
    }
    pthread_t th;
    half_t h = {self, 0, self->n};
    if (self->n >= PARALLEL_MIN) {
        h.lo = partition(self, 0, self->n);
        if (pthread_create(&th, NULL, sort_half, &h) == 0) {
            key_sort(self, 0, h.lo);
            pthread_join(th, NULL);
            return;
        }
        h.lo = 0; /* no thread: all of it here */
    }
    key_sort(self, h.lo, h.hi);
}

/*  Sorts the buffer and writes it as a new run; the buffer is then empty. */
static int spill(spm_extsort_t *self)
{
    sort_memory(self);
    run_t *r;
    int rc = run_new(self, &r);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < self->n; i++)
        if (run_put(r, self->arena + (self->idx[i] >> 24), self->idx[i] & LEN_MASK) != 0)
            break;
    rc = fflush(r->f) != 0 || ferror(r->f) ? write_error(self) : append_run(self, r);
    if (rc != 0)
        run_free(r);
    self->n = 0;
    self->used = 0;
    return rc;
}

/*  Makes room for a record of LEN bytes in memory. */
static int reserve(spm_extsort_t *self, size_t len)
{
    size_t need = self->used + PAD8(len);
    if (need > self->acap) {
        size_t cap = self->acap ? self->acap * 2 : 4096;
        cap = cap > self->budget ? self->budget : cap;
        cap = cap < need ? need : cap;
        unsigned char *v = realloc(self->arena, cap);
        if (!v)
            return spm_error(SPM_ENOMEM, "out of memory");
        self->arena = v;
        self->acap = cap;
    }
    if (self->n == self->icap) {
        size_t cap = self->icap ? self->icap * 2 : 256;
        uint64_t *v = realloc(self->idx, cap * sizeof *v);
        if (v)
            self->idx = v;
        uint64_t *kv = v && self->key ? realloc(self->keys, cap * sizeof *kv) : NULL;
        if (kv)
            self->keys = kv;
        if (!v || (self->key && !kv))
            return spm_error(SPM_ENOMEM, "out of memory");
        self->icap = cap;
    }
    return 0;
}

/*  Marks entry n as the first of a run. */
static int start_run(spm_extsort_t *self)
{
    if (self->nseg > 0 && self->seg[self->nseg - 1] == self->n)
        return 0;
    if (self->nseg == self->scap) {
        size_t cap = self->scap ? self->scap * 2 : 16;
        size_t *v = realloc(self->seg, cap * sizeof *v);
        if (!v)
            return spm_error(SPM_ENOMEM, "out of memory");
        self->seg = v;
        self->scap = cap;
    }
    self->seg[self->nseg++] = self->n;
    return 0;
}

int spm_extsort_run(spm_extsort_t *self)
{
    assert(self && !self->sorted);
    self->in_run = 1;
    return start_run(self);
}

int spm_extsort_add(spm_extsort_t *self, const void *rec, size_t len)
{
    assert(self && !self->sorted);
    if (len == 0 || len > SPM_EXTSORT_MAX_RECORD)
        return spm_error(SPM_ERANGE, "a record of %zu bytes cannot be sorted", len);
    int rc;
    size_t entry = self->key ? 16 : 8;
    if (self->n > 0 && self->used + PAD8(len) + (self->n + 1) * entry > self->budget &&
        (rc = spill(self)) != 0)
        return rc;
    if (self->in_run && self->nseg == 0 && (rc = start_run(self)) != 0)
        return rc; /* the run goes on past a spill */
    self->mixed |= !self->in_run;
    if ((rc = reserve(self, len)) != 0)
        return rc;
    memcpy(self->arena + self->used, rec, len);
    if (self->key)
        self->keys[self->n] = self->key(rec, self->karg);
    self->idx[self->n] = (uint64_t)self->used << 24 | len;
    /* A run found out of order is sorted with the rest of the buffer. */
    if (!self->mixed && self->seg[self->nseg - 1] < self->n &&
        entry_cmp(self, self->n - 1, self->n) > 0)
        self->mixed = 1;
    self->n++;
    self->used += PAD8(len);
    self->count++;
    return 0;
}

/*  Heap order: by record, then by run creation (earlier first). */
static int before(const spm_extsort_t *self, const run_t *a, const run_t *b)
{
    int c = self->cmp(a->rec, b->rec, self->arg);
    return c < 0 || (c == 0 && a->seq < b->seq);
}

static void sift_down(spm_extsort_t *self, size_t i)
{
    run_t **h = self->heap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < self->nheap && before(self, h[l], h[m]))
            m = l;
        if (l + 1 < self->nheap && before(self, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        run_t *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/*  Starts a merge of runs[0..m): each read from its start. */
static int merge_start(spm_extsort_t *self, size_t m)
{
    free(self->heap);
    self->nheap = 0;
    self->pending = NULL;
    if (!(self->heap = malloc((m + 1) * sizeof *self->heap)))
        return spm_error(SPM_ENOMEM, "out of memory");
    for (size_t i = 0; i < m; i++) {
        run_t *r = self->runs[i];
        if (fseek(r->f, 0, SEEK_SET) != 0)
            return spm_error(SPM_EIO, "cannot read a temporary file back: %s", strerror(errno));
        int rc = run_get(r);
        if (rc < 0)
            return rc;
        if (rc == 1)
            self->heap[self->nheap++] = r;
    }
    for (size_t i = self->nheap / 2; i-- > 0;)
        sift_down(self, i);
    return 0;
}

/*  The merge's next record. Returns 1, 0 or SPM_EIO. */
static int merge_next(spm_extsort_t *self, const void **rec, size_t *len)
{
    if (self->pending) {
        int rc = run_get(self->pending);
        if (rc < 0)
            return rc;
        if (rc == 0)
            self->heap[0] = self->heap[--self->nheap];
        sift_down(self, 0);
        self->pending = NULL;
    }
    if (self->nheap == 0)
        return 0;
    self->pending = self->heap[0];
    *rec = self->pending->rec;
    *len = self->pending->len;
    return 1;
}

/*  Merges the first SPM_EXTSORT_FANIN runs into one new run at the end. */
static int merge_pass(spm_extsort_t *self)
{
    run_t *out;
    int rc = run_new(self, &out);
    if (rc != 0)
        return rc;
    rc = merge_start(self, SPM_EXTSORT_FANIN);
    const void *rec;
    size_t len;
    while (rc == 0 && (rc = merge_next(self, &rec, &len)) == 1)
        rc = run_put(out, rec, len) != 0 ? write_error(self) : 0;
    if (rc == 0 && (fflush(out->f) != 0 || ferror(out->f)))
        rc = write_error(self);
    if (rc == 0)
        rc = append_run(self, out);
    if (rc != 0) {
        run_free(out);
        return rc;
    }
    for (size_t i = 0; i < SPM_EXTSORT_FANIN; i++)
        run_free(self->runs[i]);
    self->nruns -= SPM_EXTSORT_FANIN;
    memmove(self->runs, self->runs + SPM_EXTSORT_FANIN, self->nruns * sizeof *self->runs);
    self->nheap = 0;
    self->pending = NULL;
    return 0;
}

int spm_extsort_sort(spm_extsort_t *self)
{
    assert(self && !self->sorted);
    self->sorted = 1;
    if (self->spilled == 0) {
        if (self->n > 0) /* no index is allocated before the first record */
            sort_memory(self);
        self->cursor = 0;
        return 0;
    }
    int rc = self->n > 0 ? spill(self) : 0;
    free(self->arena);
    free(self->idx);
    free(self->keys);
    self->arena = NULL;
    self->idx = NULL;
    self->keys = NULL;
    self->acap = self->icap = 0;
    while (rc == 0 && self->nruns > SPM_EXTSORT_FANIN)
        rc = merge_pass(self);
    return rc ? rc : merge_start(self, self->nruns);
}

int spm_extsort_next(spm_extsort_t *self, const void **rec, size_t *len)
{
    assert(self && self->sorted);
    if (self->spilled)
        return merge_next(self, rec, len);
    if (self->cursor == self->n)
        return 0;
    uint64_t e = self->idx[self->cursor++];
    *rec = self->arena + (e >> 24);
    *len = e & LEN_MASK;
    return 1;
}

int spm_extsort_rewind(spm_extsort_t *self)
{
    assert(self && self->sorted);
    self->cursor = 0;
    return self->spilled ? merge_start(self, self->nruns) : 0;
}

const void *spm_extsort_find(const spm_extsort_t *self, const void *key)
{
    assert(self && self->sorted && !self->spilled);
    size_t lo = 0, hi = self->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const void *rec = self->arena + (self->idx[mid] >> 24);
        int c = self->cmp(rec, key, self->arg);
        if (c == 0)
            return rec;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

uint64_t spm_extsort_count(const spm_extsort_t *self)
{
    assert(self);
    return self->count;
}

uint64_t spm_extsort_runs(const spm_extsort_t *self)
{
    assert(self);
    return self->spilled;
}

size_t spm_extsort_memory(const spm_extsort_t *self)
{
    assert(self);
    size_t bytes = self->acap + self->icap * sizeof *self->idx * (self->key ? 2 : 1);
    for (size_t i = 0; i < self->nruns; i++)
        bytes += SPM_EXTSORT_IOBUF + self->runs[i]->cap;
    return bytes;
}

void spm_extsort_destroy(spm_extsort_t **self_p)
{
    spm_extsort_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    for (size_t i = 0; i < self->nruns; i++)
        run_free(self->runs[i]);
    free(self->runs);
    free(self->heap);
    free(self->arena);
    free(self->idx);
    free(self->keys);
    free(self->seg);
    free(self->dir);
    free(self);
    *self_p = NULL;
}
