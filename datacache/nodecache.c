/*  =========================================================================
    nodecache - the node's level-1 cache of SDB versions, shared by its IEUs:
    opening it, writing it and the use notes (see nodecache_int.h for how
    its files share the work, and for the locking)
    =========================================================================
*/
#include "datacache/nodecache_int.h"
#include "base/busguard.h"
#include "base/checksum.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

_Thread_local spm_nodecache_t *spm_nodecache_reading;
int spm_nodecache_is_lmdb(int rc)
{
    return rc > 0 || rc < SPM_ELAST;
}

uint64_t spm_nodecache_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A stamp later than every earlier one of this process. */
uint64_t spm_nodecache_next_stamp(spm_nodecache_t *self)
{
    uint64_t now = spm_nodecache_now_ns(), last = atomic_load(&self->clock), next;
    do
        next = now > last ? now : last + 1;
    while (!atomic_compare_exchange_weak(&self->clock, &last, next));
    return next;
}

/* ------------------------------------------------------- value header */

/* Reads the type (may be NULL), flags and checksum (may be NULL) from the header of the stored
   value V. Returns 0, or -1 when V is shorter than a header. */
int spm_nodecache_hdr_read(const MDB_val *v, uint32_t *type, uint32_t *flags, uint64_t *sum)
{
    if (v->mv_size < HDR)
        return -1;
    const uint8_t *p = v->mv_data;
    uint64_t x = 0;
    for (int i = 15; i >= 8; i--)
        x = x << 8 | p[i];
    if (sum)
        *sum = x;
    uint32_t f = 0, t = 0;
    for (int i = 3; i >= 0; i--) {
        t = t << 8 | p[i];
        f = f << 8 | p[4 + i];
    }
    if (type)
        *type = t;
    *flags = f;
    return 0;
}

/* Writes FLAGS and SUM into the header at P (the type id is already there). */
static void hdr_write(uint8_t *p, uint32_t flags, uint64_t sum)
{
    for (int i = 0; i < 4; i++, flags >>= 8)
        p[4 + i] = (uint8_t)flags;
    for (int i = 0; i < 8; i++, sum >>= 8)
        p[8 + i] = (uint8_t)sum;
}

int spm_nodecache_not_found(spm_nodecache_t *self, spm_sdb_t id, uint64_t version)
{
    return spm_error(SPM_ENOTFOUND, "%s: no SDB %llu version %llu in the cache", self->dir,
                     (unsigned long long)id, (unsigned long long)version);
}

/* ------------------------------------------------------------- map lock */

static int map_enter(spm_nodecache_t *self)
{
    if (spm_nodecache_reading == self)
        return 0;
    pthread_rwlock_rdlock(&self->maplock);
    return 1;
}

void spm_nodecache_map_leave(spm_nodecache_t *self, int locked)
{
    if (locked)
        pthread_rwlock_unlock(&self->maplock);
}

/* Grows the map (GROW) or adopts the size another process grew it to. SEEN is the map size
   the caller failed with: if another thread remapped since, there is nothing left to do. */
static int remap(spm_nodecache_t *self, size_t seen, int grow)
{
    if (spm_nodecache_reading == self)
        return spm_error(SPM_EFULL,
                         "%s: the cache map must be resized while this thread holds a reader; "
                         "end the reader before writing",
                         self->dir);
    pthread_rwlock_wrlock(&self->maplock);
    int rc = 0, dead = 0;
    if (self->mapsize == seen && grow) {
        /* Readers of dead processes pin old pages; freeing their slots may be enough. */
        if (mdb_reader_check(self->env, &dead) != 0 || dead == 0)
            rc = spm_store_env_grow(self->env, self->dir, &self->mapsize);
    } else if (self->mapsize == seen) {
        rc = mdb_env_set_mapsize(self->env, 0);
        MDB_envinfo info;
        if (rc == 0 && (rc = mdb_env_info(self->env, &info)) == 0)
            self->mapsize = info.me_mapsize;
        if (rc)
            rc = spm_store_lmdb_error(rc, self->dir, "adopting the grown map");
    }
    pthread_rwlock_unlock(&self->maplock);
    return rc;
}

/* Begins a read transaction with MAPLOCK held shared (unless this thread holds it through a
   reader), adopting a map another process grew. Returns 0 with *TXN and *LOCKED (for
   map_leave), or an SPM_E* code. */
int spm_nodecache_read_begin(spm_nodecache_t *self, MDB_txn **txn, int *locked)
{
    *locked = 0;
    int refused = spm_nodecache_refuse(self);
    if (refused)
        return refused;
    for (;;) {
        *locked = map_enter(self);
        size_t seen = self->mapsize;
        int rc = mdb_txn_begin(self->env, NULL, MDB_RDONLY, txn);
        if (rc == 0)
            return 0;
        spm_nodecache_map_leave(self, *locked);
        if (rc != MDB_MAP_RESIZED)
            return spm_nodecache_fault(self, rc, "beginning a read");
        if ((rc = remap(self, seen, 0)) != 0)
            return rc;
    }
}

/* A write transaction's work: returns 0 to commit, or an SPM_E* or LMDB code to abort. */
typedef int (*body_fn)(spm_nodecache_t *self, MDB_txn *txn, void *arg);

/* A write transaction run under a bus guard. */
typedef struct {
    spm_nodecache_t *self; /* the cache */
    MDB_txn *txn;          /* the transaction, begun by the caller */
    body_fn body;          /* its work */
    void *arg;             /* the work's argument */
    int ended;             /* 1 once the commit returned (it ends the transaction either way) */
} txn_run_t;

static int body_commit(void *arg)
{
    txn_run_t *w = arg;
    int rc = w->body(w->self, w->txn, w->arg);
    if (rc)
        return rc;
    rc = mdb_txn_commit(w->txn);
    w->ended = 1;
    return rc;
}

/* Runs BODY in a write transaction and commits; when the map is too small, grows it (or adopts
   another process's size) and runs BODY again. Returns 0 or an SPM_E* code. A fault in BODY
   ends the process (spm_nodecache_write_fault) when it may change pages of the file (CHANGES);
   one that only names what is there (the open of a cache that has its databases) copies no
   page, and fails like a read. */
static int run_txn(spm_nodecache_t *self, body_fn body, void *arg, int changes)
{
    int refused = spm_nodecache_refuse(self);
    if (refused)
        return refused;
    for (;;) {
        int locked = map_enter(self);
        size_t seen = self->mapsize;
        txn_run_t w = {.self = self, .body = body, .arg = arg};
        int rc = mdb_txn_begin(self->env, NULL, 0, &w.txn);
        int begun = rc == 0;
        int faulted = begun ? spm_busguard_run(body_commit, &w, &rc) : 0;
        if (changes && (faulted == SIGBUS || faulted == SIGSEGV))
            spm_nodecache_write_fault(self, faulted, "writing the cache"); /* the process ends */
        if (begun && !w.ended)
            mdb_txn_abort(w.txn); /* the body failed, or the file faulted under it */
        spm_nodecache_map_leave(self, locked);
        if (faulted)
            return spm_nodecache_bus(self, faulted, "writing the cache");
        if (rc == MDB_MAP_FULL || rc == MDB_MAP_RESIZED) {
            if ((rc = remap(self, seen, rc == MDB_MAP_FULL)) != 0)
                return rc;
            continue;
        }
        return spm_nodecache_fault(self, rc, "writing the cache");
    }
}

static int write_txn(spm_nodecache_t *self, body_fn body, void *arg)
{
    return run_txn(self, body, arg, 1);
}

/* ----------------------------------------------------------- use notes */

static size_t note_slot(const note_t *notes, size_t cap, spm_sdb_t id, uint64_t version)
{
    size_t i = (size_t)((id * 0x9E3779B97F4A7C15ull) ^ (version * 0xC2B2AE3D27D4EB4Full));
    for (i &= cap - 1;; i = (i + 1) & (cap - 1))
        if (notes[i].id == 0 || (notes[i].id == id && notes[i].version == version))
            return i;
}

/* Notes that (ID, VERSION) was used at STAMP. A note that finds no memory is dropped: recency
   is advice. */
void spm_nodecache_note_use(spm_nodecache_t *self, spm_sdb_t id, uint64_t version, uint64_t stamp)
{
    pthread_mutex_lock(&self->notelock);
    if (2 * (self->nnotes + 1) > self->capnotes) {
        size_t cap = self->capnotes ? 2 * self->capnotes : 64;
        note_t *notes = calloc(cap, sizeof *notes);
        if (!notes)
            goto out;
        for (size_t i = 0; i < self->capnotes; i++)
            if (self->notes[i].id)
                notes[note_slot(notes, cap, self->notes[i].id, self->notes[i].version)] =
                    self->notes[i];
        free(self->notes);
        self->notes = notes;
        self->capnotes = cap;
    }
    note_t *n = &self->notes[note_slot(self->notes, self->capnotes, id, version)];
    if (n->id == 0) {
        if (self->nnotes++ == 0)
            self->oldest = stamp;
        *n = (note_t){id, version, stamp};
    } else if (n->stamp < stamp) {
        n->stamp = stamp;
    }
out:
    pthread_mutex_unlock(&self->notelock);
}

/* The pending notes, taken out of the process's table. */
typedef struct {
    note_t *notes; /* owned: free() */
    size_t cap;    /* slots in notes */
} taken_t;

static taken_t take_notes(spm_nodecache_t *self)
{
    pthread_mutex_lock(&self->notelock);
    taken_t t = {self->notes, self->capnotes};
    self->notes = NULL;
    self->nnotes = self->capnotes = 0;
    pthread_mutex_unlock(&self->notelock);
    return t;
}

static void lru_key(uint8_t *k, uint64_t stamp, const uint8_t *key)
{
    spm_store_be64_put(k, stamp);
    memcpy(k + 8, key, SPM_STORE_KEY_LEN);
}

/* Records STAMP as the last use of the block KEY: moves its entry in the LRU index. OLD is
   its previous stamp, or 0 for a new block. Returns 0 or an LMDB code. */
static int set_stamp(spm_nodecache_t *self, MDB_txn *txn, const uint8_t *key, uint64_t old,
                     uint64_t stamp)
{
    uint8_t lk[LRU_KEY_LEN];
    MDB_val k = {sizeof lk, lk}, none = {0, NULL};
    int rc = 0;
    if (old) {
        lru_key(lk, old, key);
        rc = mdb_del(txn, self->lru, &k, NULL);
        if (rc == MDB_NOTFOUND)
            rc = 0;
    }
    lru_key(lk, stamp, key);
    if (!rc)
        rc = mdb_put(txn, self->lru, &k, &none, 0);
    MDB_val ak = {SPM_STORE_KEY_LEN, (void *)key}, av = {sizeof stamp, &stamp};
    if (!rc)
        rc = mdb_put(txn, self->atime, &ak, &av, 0);
    return rc;
}

/* The stamp of block KEY, or 0 when it is not in the cache. */
static int get_stamp(spm_nodecache_t *self, MDB_txn *txn, const uint8_t *key, uint64_t *stamp)
{
    MDB_val k = {SPM_STORE_KEY_LEN, (void *)key}, v;
    int rc = mdb_get(txn, self->atime, &k, &v);
    *stamp = 0;
    if (rc == 0 && v.mv_size == sizeof *stamp)
        memcpy(stamp, v.mv_data, sizeof *stamp);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Writes the taken notes into the LRU index. Blocks gone since are skipped, and so are kept
   blocks: they have no stamp, and a note never gives them one. */
static int apply_notes(spm_nodecache_t *self, MDB_txn *txn, const taken_t *t)
{
    for (size_t i = 0; i < t->cap; i++) {
        const note_t *n = &t->notes[i];
        if (n->id == 0)
            continue;
        uint8_t key[SPM_STORE_KEY_LEN];
        spm_store_key(key, n->id, n->version);
        uint64_t old;
        int rc = get_stamp(self, txn, key, &old);
        if (rc == 0 && old && old < n->stamp)
            rc = set_stamp(self, txn, key, old, n->stamp);
        if (rc)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------- totals */

int spm_nodecache_totals_get(spm_nodecache_t *self, MDB_txn *txn, totals_t *t)
{
    MDB_val k = {6, "totals"}, v;
    int rc = mdb_get(txn, self->meta, &k, &v);
    memset(t, 0, sizeof *t);
    if (rc == 0 && v.mv_size == sizeof *t)
        memcpy(t, v.mv_data, sizeof *t);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int totals_put(spm_nodecache_t *self, MDB_txn *txn, const totals_t *t)
{
    MDB_val k = {6, "totals"}, v = {sizeof *t, (void *)t};
    return mdb_put(txn, self->meta, &k, &v, 0);
}

/* Takes block KEY with stamp STAMP out of the LRU index (a kept block is not in it). Returns 0
   or an LMDB code. */
static int unindex(spm_nodecache_t *self, MDB_txn *txn, const uint8_t *key, uint64_t stamp)
{
    uint8_t lk[LRU_KEY_LEN];
    lru_key(lk, stamp, key);
    MDB_val k = {SPM_STORE_KEY_LEN, (void *)key}, lkv = {sizeof lk, lk};
    int rc = mdb_del(txn, self->atime, &k, NULL);
    if (rc == 0 || rc == MDB_NOTFOUND)
        rc = mdb_del(txn, self->lru, &lkv, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static void sub(uint64_t *x, uint64_t n)
{
    *x -= *x >= n ? n : *x;
}

/* Removes block KEY with stamp STAMP (0 for a kept block) from the three databases and the
   totals. Returns 0, MDB_NOTFOUND when the block is not there, or an LMDB code. */
static int remove_block(spm_nodecache_t *self, MDB_txn *txn, const uint8_t *key, uint64_t stamp,
                        totals_t *t)
{
    MDB_val k = {SPM_STORE_KEY_LEN, (void *)key}, v;
    int rc = mdb_get(txn, self->blocks, &k, &v);
    if (rc)
        return rc;
    size_t len = v.mv_size >= HDR ? v.mv_size - HDR : 0;
    uint32_t flags = 0;
    spm_nodecache_hdr_read(&v, NULL, &flags, NULL);
    if ((rc = mdb_del(txn, self->blocks, &k, NULL)) != 0 ||
        (rc = unindex(self, txn, key, stamp)) != 0)
        return rc;
    sub(&t->blocks, 1);
    sub(&t->bytes, len);
    if (flags & SPM_NODECACHE_KEPT) {
        sub(&t->kept_blocks, 1);
        sub(&t->kept_bytes, len);
    }
    return 0;
}

/* Removes block KEY, kept or not, looking up its stamp. Returns as remove_block. */
static int drop_key(spm_nodecache_t *self, MDB_txn *txn, const uint8_t *key, totals_t *t)
{
    uint64_t stamp;
    int rc = get_stamp(self, txn, key, &stamp);
    return rc ? rc : remove_block(self, txn, key, stamp, t);
}

/* Evicts the least recently used copy: hands it to the callback, then removes it. Returns 0,
   MDB_NOTFOUND when the LRU index is empty (no copy is left), or an LMDB or SPM_E* code. */
static int evict_one(spm_nodecache_t *self, MDB_txn *txn, totals_t *t)
{
    MDB_cursor *c;
    MDB_val lk, none;
    int rc = mdb_cursor_open(txn, self->lru, &c);
    if (rc)
        return rc;
    rc = mdb_cursor_get(c, &lk, &none, MDB_FIRST);
    uint8_t key[SPM_STORE_KEY_LEN];
    uint64_t stamp = 0;
    if (rc == 0 && lk.mv_size == LRU_KEY_LEN) {
        stamp = spm_store_be64_get(lk.mv_data);
        memcpy(key, (uint8_t *)lk.mv_data + 8, sizeof key);
    } else if (rc == 0) {
        rc = spm_nodecache_corrupt(self, "%s: malformed entry in the cache's LRU index", self->dir);
    }
    mdb_cursor_close(c);
    if (rc)
        return rc;
    MDB_val k = {sizeof key, key}, v;
    spm_sdb_t id;
    uint64_t version;
    spm_store_key_parse(key, &id, &version);
    uint32_t type, flags = 0;
    const void *data;
    size_t len;
    if ((rc = mdb_get(txn, self->blocks, &k, &v)) != 0)
        return rc;
    if (spm_nodecache_hdr_read(&v, NULL, &flags, NULL) == 0 && (flags & SPM_NODECACHE_KEPT))
        return unindex(self, txn, key, stamp); /* never evict the copy of record */
    if (spm_store_value_parse(&v, HDR, &type, &data, &len) == 0 && self->evict) {
        void *guard = spm_busguard_pause(); /* the callback's faults are its own */
        self->evict(self->evict_arg, id, version, type, data, len);
        spm_busguard_resume(guard);
    }
    if ((rc = remove_block(self, txn, key, stamp, t)) != 0)
        return rc;
    t->evictions++;
    t->bytes_evicted += len;
    return 0;
}

/* ---------------------------------------------------------- open, close */

/* The first map: the size of the filesystem that holds (or will hold) DIR, within [MIN_MAP,
   MAX_MAP]. */
static size_t default_map(const char *dir)
{
    return spm_store_fs_map(dir, MIN_MAP, MAX_MAP);
}

static int open_dbis(spm_nodecache_t *self, MDB_txn *txn, void *arg)
{
    (void)arg;
    int rc = mdb_dbi_open(txn, "blocks", MDB_CREATE, &self->blocks);
    if (!rc)
        rc = mdb_dbi_open(txn, "atime", MDB_CREATE, &self->atime);
    if (!rc)
        rc = mdb_dbi_open(txn, "lru", MDB_CREATE, &self->lru);
    if (!rc)
        rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &self->meta);
    return rc;
}

spm_nodecache_t *spm_nodecache_open(const char *dir, uint64_t budget, int fresh)
{
    return spm_nodecache_open_map(dir, budget, fresh, 0);
}

spm_nodecache_t *spm_nodecache_open_map(const char *dir, uint64_t budget, int fresh,
                                        size_t map_bytes)
{
    spm_nodecache_t *self = calloc(1, sizeof *self);
    if (!self || !(self->dir = strdup(dir))) {
        spm_error(SPM_ENOMEM, "out of memory");
        goto err;
    }
    self->budget = budget;
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&self->maplock, &attr);
    pthread_rwlockattr_destroy(&attr);
    pthread_mutex_init(&self->notelock, NULL);
    self->locks_ready = 1;
    if (fresh && spm_nodecache_wipe(dir) != 0)
        goto err;
    if (spm_store_env_open(&self->env, dir, map_bytes ? map_bytes : default_map(dir), 4,
                           MAX_READERS, MDB_NOSYNC | MDB_NOTLS) != 0)
        goto err;
    mdb_env_set_assert(self->env, spm_nodecache_on_assert);
    int dead;
    mdb_reader_check(self->env, &dead); /* free the slots of readers that died */
    MDB_envinfo info;
    mdb_env_info(self->env, &info);
    self->mapsize = info.me_mapsize;
    if (run_txn(self, open_dbis, NULL, 0) != 0)
        goto err;
    return self;
err:
    spm_nodecache_destroy(&self);
    return NULL;
}

void spm_nodecache_destroy(spm_nodecache_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_nodecache_t *s = *self_p;
    if (s->env && s->notes)
        spm_nodecache_flush(s);
    if (s->env)
        mdb_env_close(s->env);
    if (s->locks_ready) {
        pthread_rwlock_destroy(&s->maplock);
        pthread_mutex_destroy(&s->notelock);
    }
    free(s->notes);
    free(s->dir);
    free(s);
    *self_p = NULL;
}

void spm_nodecache_on_evict(spm_nodecache_t *self, spm_nodecache_evict_fn fn, void *arg)
{
    assert(self);
    self->evict = fn;
    self->evict_arg = arg;
}

/* --------------------------------------------------------------- writes */

typedef struct {
    spm_sdb_t id;        /* the block's id */
    uint64_t version;    /* its version */
    uint32_t type;       /* its type id (put, keep) */
    uint64_t checksum;   /* its checksum (keep: the producer's; put: the cache's own) */
    const void *data;    /* its bytes (put, keep) */
    size_t len;          /* number of bytes (put, keep) */
    taken_t notes;       /* the process's use notes, written first */
    int refused;         /* set by put_body: the copy does not fit beside the kept blocks */
    int replace;         /* keep: other bytes may replace a kept block's */
    uint64_t kept_bytes; /* the kept bytes that refused it */
} write_t;

/* Stores the value of W under KEY with FLAGS and SUM in its header. Returns 0 or an LMDB
   code. */
static int store_value(spm_nodecache_t *self, MDB_txn *txn, const uint8_t *key, const write_t *w,
                       uint32_t flags, uint64_t sum)
{
    MDB_val k = {SPM_STORE_KEY_LEN, (void *)key}, v = {HDR + w->len, NULL};
    int rc = mdb_put(txn, self->blocks, &k, &v, MDB_RESERVE);
    if (rc)
        return rc;
    spm_store_value_write(v.mv_data, HDR, w->type, w->data, w->len);
    hdr_write(v.mv_data, flags, sum);
    return 0;
}

static int put_body(spm_nodecache_t *self, MDB_txn *txn, void *arg)
{
    write_t *w = arg;
    w->refused = 0;
    int rc = apply_notes(self, txn, &w->notes);
    if (rc)
        return rc;
    uint8_t key[SPM_STORE_KEY_LEN];
    spm_store_key(key, w->id, w->version);
    MDB_val k = {sizeof key, key}, v;
    if ((rc = mdb_get(txn, self->blocks, &k, &v)) != MDB_NOTFOUND)
        return rc; /* 0: already there, kept or not, nothing else to do */
    totals_t t;
    if ((rc = spm_nodecache_totals_get(self, txn, &t)) != 0)
        return rc;
    if (self->budget && t.kept_bytes + w->len > self->budget) {
        w->refused = 1; /* evicting every copy would not make room: evict none */
        w->kept_bytes = t.kept_bytes;
        return 0; /* commit the notes all the same */
    }
    while (self->budget && t.bytes + w->len > self->budget)
        if ((rc = evict_one(self, txn, &t)) != 0)
            return rc != MDB_NOTFOUND
                       ? rc
                       : spm_nodecache_corrupt(
                             self, "%s: cache totals say %llu bytes of copies but none is left",
                             self->dir, (unsigned long long)(t.bytes - t.kept_bytes));
    if ((rc = store_value(self, txn, key, w, SPM_NODECACHE_NOSUM, w->checksum)) != 0 ||
        (rc = set_stamp(self, txn, key, 0, spm_nodecache_next_stamp(self))) != 0)
        return rc;
    t.blocks++;
    t.bytes += w->len;
    return totals_put(self, txn, &t);
}

int spm_nodecache_put(spm_nodecache_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                      const void *data, size_t len)
{
    assert(self);
    int rc = spm_store_check_put(id, version, data, len);
    if (rc)
        return rc;
    if (self->budget && len > self->budget)
        return spm_error(SPM_EFULL,
                         "%s: SDB %llu version %llu (%zu bytes) is larger than the cache "
                         "budget of %llu bytes",
                         self->dir, (unsigned long long)id, (unsigned long long)version, len,
                         (unsigned long long)self->budget);
    /* hashed here, by the cache, so that a read can tell the copy was not
       damaged since (it says nothing of where the bytes came from) */
    write_t w = {.id = id,
                 .version = version,
                 .type = type,
                 .checksum = len ? spm_checksum(data, len) : 0,
                 .data = data,
                 .len = len,
                 .notes = take_notes(self)};
    rc = write_txn(self, put_body, &w);
    free(w.notes.notes);
    if (rc == 0 && w.refused)
        rc = spm_error(SPM_EFULL,
                       "%s: SDB %llu version %llu (%zu bytes) does not fit the cache budget of "
                       "%llu bytes beside %llu bytes of kept blocks",
                       self->dir, (unsigned long long)id, (unsigned long long)version, len,
                       (unsigned long long)self->budget, (unsigned long long)w.kept_bytes);
    return rc;
}

static int keep_body(spm_nodecache_t *self, MDB_txn *txn, void *arg)
{
    write_t *w = arg;
    int rc = apply_notes(self, txn, &w->notes);
    if (rc)
        return rc;
    uint8_t key[SPM_STORE_KEY_LEN];
    spm_store_key(key, w->id, w->version);
    totals_t t;
    if ((rc = spm_nodecache_totals_get(self, txn, &t)) != 0)
        return rc;
    /* a block kept here already stays as it is, unless the caller may replace it (an SI of
       this node run again): another node's word does not change what this one keeps */
    MDB_val k = {sizeof key, key}, old;
    uint32_t flags;
    uint64_t sum;
    if (!w->replace && mdb_get(txn, self->blocks, &k, &old) == 0 &&
        spm_nodecache_hdr_read(&old, NULL, &flags, &sum) == 0 && (flags & SPM_NODECACHE_KEPT)) {
        if (sum == w->checksum)
            return 0; /* the same bytes: nothing to do */
        return spm_error(SPM_EINVAL, "%s: SDB %llu version %llu is kept here with other bytes",
                         self->dir, (unsigned long long)w->id, (unsigned long long)w->version);
    }
    /* an earlier block under the key goes first (out of the LRU index too, so that the
       evictions below cannot pick it) */
    if ((rc = drop_key(self, txn, key, &t)) != 0 && rc != MDB_NOTFOUND)
        return rc;
    if (self->budget && t.kept_bytes + w->len > self->budget)
        return spm_error(SPM_EFULL,
                         "%s: the node keeps %llu bytes of blocks already; SDB %llu version %llu "
                         "(%zu bytes) would exceed its budget of %llu bytes",
                         self->dir, (unsigned long long)t.kept_bytes, (unsigned long long)w->id,
                         (unsigned long long)w->version, w->len,
                         (unsigned long long)self->budget); /* nothing changes */
    while (self->budget && t.bytes + w->len > self->budget && t.bytes > t.kept_bytes)
        if ((rc = evict_one(self, txn, &t)) != 0) {
            if (rc != MDB_NOTFOUND)
                return rc;
            break;
        }
    if ((rc = store_value(self, txn, key, w, SPM_NODECACHE_KEPT, w->checksum)) != 0)
        return rc;
    t.blocks++;
    t.bytes += w->len;
    t.kept_blocks++;
    t.kept_bytes += w->len;
    return totals_put(self, txn, &t);
}

int spm_nodecache_keep(spm_nodecache_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                       uint64_t checksum, const void *data, size_t len, int replace)
{
    assert(self);
    int rc = spm_store_check_put(id, version, data, len);
    if (rc)
        return rc;
    write_t w = {.id = id,
                 .version = version,
                 .type = type,
                 .checksum = checksum,
                 .data = data,
                 .len = len,
                 .replace = replace,
                 .notes = take_notes(self)};
    rc = write_txn(self, keep_body, &w);
    free(w.notes.notes);
    return rc;
}

/*  What spm_nodecache_drop_each's transaction works on. */
typedef struct {
    const spm_nodecache_ref_t *refs;
    size_t n;
    taken_t notes; /* the process's use notes, written first */
    size_t found;  /* set: how many of REFS were there */
} drop_t;

/* Finds the first stored version of ID and writes its key into KEY. Returns 0, MDB_NOTFOUND
   when ID has none, or an LMDB code. */
static int first_version(spm_nodecache_t *self, MDB_txn *txn, spm_sdb_t id, uint8_t *key)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, self->blocks, &c);
    if (rc)
        return rc;
    spm_store_key(key, id, 0); /* no block has version 0: the range starts at the first */
    MDB_val k = {SPM_STORE_KEY_LEN, key}, v;
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (rc == 0 && (k.mv_size != SPM_STORE_KEY_LEN || spm_store_be64_get(k.mv_data) != id))
        rc = MDB_NOTFOUND;
    if (rc == 0)
        memcpy(key, k.mv_data, SPM_STORE_KEY_LEN);
    mdb_cursor_close(c);
    return rc;
}

/*  Removes REF's block (every version when its version is 0) under T.
    Returns 0, MDB_NOTFOUND when there was none, or an LMDB code. */
static int drop_ref(spm_nodecache_t *self, MDB_txn *txn, const spm_nodecache_ref_t *ref,
                    totals_t *t)
{
    uint8_t key[SPM_STORE_KEY_LEN];
    if (ref->version) {
        spm_store_key(key, ref->id, ref->version);
        return drop_key(self, txn, key, t);
    }
    int rc, any = 0;
    /* found afresh each time: a cursor's position after a delete is subtle */
    while ((rc = first_version(self, txn, ref->id, key)) == 0) {
        if ((rc = drop_key(self, txn, key, t)) != 0)
            return rc;
        any = 1;
    }
    return rc == MDB_NOTFOUND && any ? 0 : rc;
}

static int drop_body(spm_nodecache_t *self, MDB_txn *txn, void *arg)
{
    drop_t *d = arg;
    d->found = 0;
    int rc = apply_notes(self, txn, &d->notes);
    totals_t t;
    if (!rc)
        rc = spm_nodecache_totals_get(self, txn, &t);
    for (size_t i = 0; !rc && i < d->n; i++) {
        rc = drop_ref(self, txn, &d->refs[i], &t);
        d->found += rc == 0;
        if (rc == MDB_NOTFOUND)
            rc = 0; /* not there: the notes and the others are committed all the same */
    }
    return rc ? rc : totals_put(self, txn, &t);
}

int spm_nodecache_drop_each(spm_nodecache_t *self, const spm_nodecache_ref_t *refs, size_t n,
                            size_t *found)
{
    assert(self);
    drop_t d = {.refs = refs, .n = n, .notes = take_notes(self)};
    int rc = write_txn(self, drop_body, &d);
    free(d.notes.notes);
    if (found)
        *found = rc == 0 ? d.found : 0;
    return rc;
}

int spm_nodecache_drop(spm_nodecache_t *self, spm_sdb_t id, uint64_t version)
{
    spm_nodecache_ref_t ref = {id, version};
    size_t found;
    int rc = spm_nodecache_drop_each(self, &ref, 1, &found);
    return rc == 0 && !found ? spm_nodecache_not_found(self, id, version) : rc;
}

int spm_nodecache_drop_all(spm_nodecache_t *self, spm_sdb_t id)
{
    spm_nodecache_ref_t ref = {id, 0};
    return spm_nodecache_drop_each(self, &ref, 1, NULL);
}

static int clear_body(spm_nodecache_t *self, MDB_txn *txn, void *arg)
{
    (void)arg;
    totals_t t;
    int rc = spm_nodecache_totals_get(self, txn, &t);
    if (!rc && !(rc = mdb_drop(txn, self->blocks, 0)) && !(rc = mdb_drop(txn, self->atime, 0)) &&
        !(rc = mdb_drop(txn, self->lru, 0))) {
        t.blocks = t.bytes = t.kept_blocks = t.kept_bytes = 0;
        rc = totals_put(self, txn, &t);
    }
    return rc;
}

int spm_nodecache_clear(spm_nodecache_t *self)
{
    assert(self);
    taken_t notes = take_notes(self); /* of blocks about to go: dropped */
    free(notes.notes);
    return write_txn(self, clear_body, NULL);
}

static int flush_body(spm_nodecache_t *self, MDB_txn *txn, void *arg)
{
    return apply_notes(self, txn, arg);
}

int spm_nodecache_flush(spm_nodecache_t *self)
{
    assert(self);
    taken_t notes = take_notes(self);
    if (!notes.notes)
        return 0;
    int rc = write_txn(self, flush_body, &notes);
    free(notes.notes);
    return rc;
}
