/*  =========================================================================
    nodecache_read - readers of the node cache and what reads it: blocks
    handed out in place (each checked against its checksum first), the
    kept blocks listed, the totals
    =========================================================================
*/
#include "datacache/nodecache_int.h"
#include "base/busguard.h"
#include "base/checksum.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- reads */

spm_nodecache_reader_t *spm_nodecache_reader(spm_nodecache_t *self)
{
    assert(self);
    if (spm_nodecache_reading) {
        spm_error(SPM_EINVAL, "%s: this thread already holds a cache reader", self->dir);
        return NULL;
    }
    spm_nodecache_reader_t *r = calloc(1, sizeof *r);
    if (!r) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    int locked;
    if (spm_nodecache_read_begin(self, &r->txn, &locked) != 0) {
        free(r);
        return NULL;
    }
    r->cache = self;
    spm_nodecache_reading = self;
    return r;
}

/* A block looked up in a transaction, under a bus guard: a corrupted page number can send LMDB
   past the end of the file, and the checksum reads every byte of the block. */
typedef struct {
    MDB_txn *txn;                   /* the caller's transaction */
    MDB_dbi dbi;                    /* the blocks database */
    uint8_t key[SPM_STORE_KEY_LEN]; /* the block's key */
    int verify;                     /* 1: compare the bytes with the stored checksum */
    uint32_t type, flags;           /* from the header */
    uint64_t sum;                   /* the stored checksum */
    const void *data;               /* the bytes, in the map */
    size_t len;                     /* their length */
} lookup_t;

enum { NO_HEADER = -1, BAD_SUM = -2 }; /* lookup_body's own results; LMDB's are below -30000 */

static int lookup_body(void *arg)
{
    lookup_t *l = arg;
    MDB_val k = {sizeof l->key, l->key}, v;
    int rc = mdb_get(l->txn, l->dbi, &k, &v);
    if (rc)
        return rc;
    if (spm_nodecache_hdr_read(&v, NULL, &l->flags, &l->sum) != 0 ||
        spm_store_value_parse(&v, HDR, &l->type, &l->data, &l->len) != 0)
        return NO_HEADER;
    /* Every block is checked before it is handed out: the file is not
       durable and its disk may go bad, and LMDB notices only damage to its
       own pages. A checksum of 0 is none (a kept block of no bytes). */
    if (l->verify && l->sum && spm_checksum(l->data, l->len) != l->sum)
        return BAD_SUM;
    return 0;
}

/* Looks up (ID, VERSION) in TXN into *L, checking its bytes when VERIFY. Returns 0,
   MDB_NOTFOUND (nothing said), or an SPM_E* code with the detail set; a corrupt or unreadable
   cache goes out of service. */
static int lookup(spm_nodecache_t *self, MDB_txn *txn, spm_sdb_t id, uint64_t version, int verify,
                  lookup_t *l)
{
    memset(l, 0, sizeof *l);
    l->txn = txn;
    l->dbi = self->blocks;
    l->verify = verify;
    spm_store_key(l->key, id, version);
    int rc, faulted = spm_busguard_run(lookup_body, l, &rc);
    if (faulted)
        return spm_nodecache_bus(self, faulted, "reading the cache");
    switch (rc) {
    case 0:
    case MDB_NOTFOUND:
        return rc;
    case NO_HEADER:
        return spm_nodecache_corrupt(self, "%s: SDB %llu version %llu: stored value has no header",
                                     self->dir, (unsigned long long)id,
                                     (unsigned long long)version);
    case BAD_SUM:
        return spm_nodecache_corrupt(self,
                                     "%s: SDB %llu version %llu does not match its checksum: the "
                                     "cache is corrupt",
                                     self->dir, (unsigned long long)id,
                                     (unsigned long long)version);
    default:
        return spm_nodecache_fault(self, rc, "reading the cache");
    }
}

int spm_nodecache_get(spm_nodecache_reader_t *r, spm_sdb_t id, uint64_t version, uint32_t *type,
                      const void **data, size_t *len)
{
    assert(r);
    spm_nodecache_t *self = r->cache;
    int rc = spm_nodecache_refuse(self);
    if (rc)
        return rc; /* a reader begun before the cache went out of service reads no more */
    lookup_t l;
    rc = lookup(self, r->txn, id, version, 1, &l);
    if (rc == MDB_NOTFOUND) {
        atomic_fetch_add(&self->misses, 1);
        return spm_nodecache_not_found(self, id, version);
    }
    if (rc)
        return rc;
    if (type)
        *type = l.type;
    *data = l.data;
    *len = l.len;
    atomic_fetch_add(&self->hits, 1);
    if (!(l.flags & SPM_NODECACHE_KEPT))
        spm_nodecache_note_use(self, id, version, spm_nodecache_next_stamp(self));
    return 0;
}

int spm_nodecache_copy(spm_nodecache_t *self, spm_sdb_t id, uint64_t version, uint32_t *type,
                       void **data, size_t *len)
{
    assert(self);
    *data = NULL;
    *len = 0;
    MDB_txn *txn;
    int locked;
    int rc = spm_nodecache_read_begin(self, &txn, &locked);
    if (rc)
        return rc;
    lookup_t l;
    rc = lookup(self, txn, id, version, 1, &l); /* as spm_nodecache_get checks */
    if (rc == MDB_NOTFOUND)
        rc = spm_nodecache_not_found(self, id, version);
    else if (rc == 0 && !(*data = malloc(l.len ? l.len : 1)))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    else if (rc == 0) {
        memcpy(*data, l.data, l.len);
        *len = l.len;
        if (type)
            *type = l.type;
    }
    mdb_txn_abort(txn);
    spm_nodecache_map_leave(self, locked);
    if (rc == 0 && !(l.flags & SPM_NODECACHE_KEPT))
        spm_nodecache_note_use(self, id, version, spm_nodecache_next_stamp(self));
    return rc;
}

int spm_nodecache_meta(spm_nodecache_reader_t *r, spm_sdb_t id, uint64_t version,
                       uint64_t *checksum, unsigned *flags)
{
    assert(r);
    spm_nodecache_t *self = r->cache;
    lookup_t l;
    int rc = lookup(self, r->txn, id, version, 0, &l);
    if (rc == MDB_NOTFOUND)
        return spm_nodecache_not_found(self, id, version);
    if (rc)
        return rc;
    if (checksum)
        *checksum = l.flags & SPM_NODECACHE_NOSUM ? 0 : l.sum; /* a copy's is the cache's own */
    if (flags)
        *flags = l.flags;
    return 0;
}

void spm_nodecache_reader_end(spm_nodecache_reader_t **r)
{
    if (!r || !*r)
        return;
    spm_nodecache_t *self = (*r)->cache;
    mdb_txn_abort((*r)->txn);
    free(*r);
    *r = NULL;
    spm_nodecache_reading = NULL;
    pthread_rwlock_unlock(&self->maplock);
    pthread_mutex_lock(&self->notelock);
    int due = self->nnotes >= FLUSH_NOTES ||
              (self->nnotes && spm_nodecache_now_ns() - self->oldest > FLUSH_AGE_NS);
    pthread_mutex_unlock(&self->notelock);
    if (due)
        spm_nodecache_flush(self);
}

int spm_nodecache_has(spm_nodecache_t *self, spm_sdb_t id, uint64_t version)
{
    assert(self);
    MDB_txn *txn;
    int locked;
    if (spm_nodecache_read_begin(self, &txn, &locked) != 0)
        return 0;
    lookup_t l;
    int found = lookup(self, txn, id, version, 0, &l) == 0;
    mdb_txn_abort(txn);
    spm_nodecache_map_leave(self, locked);
    return found;
}

/* The kept blocks listed from a cursor, under a bus guard (see lookup_t). */
typedef struct {
    MDB_cursor *cursor;       /* over the blocks database */
    spm_nodecache_list_fn fn; /* called for each kept block */
    void *arg;                /* its argument */
} listing_t;

/* Returns MDB_NOTFOUND at the end, NO_HEADER on a malformed record, or LMDB's code. */
static int list_body(void *arg)
{
    listing_t *g = arg;
    MDB_val k, v;
    MDB_cursor_op op = MDB_FIRST;
    int rc;
    while ((rc = mdb_cursor_get(g->cursor, &k, &v, op)) == 0) {
        op = MDB_NEXT;
        uint32_t type, flags;
        uint64_t sum;
        spm_sdb_t id;
        uint64_t version;
        if (k.mv_size != SPM_STORE_KEY_LEN || spm_nodecache_hdr_read(&v, &type, &flags, &sum) != 0)
            return NO_HEADER;
        spm_store_key_parse(k.mv_data, &id, &version);
        if (flags & SPM_NODECACHE_KEPT) {
            void *guard = spm_busguard_pause(); /* the callback's faults are its own */
            g->fn(g->arg, id, version, type, sum, v.mv_size - HDR);
            spm_busguard_resume(guard);
        }
    }
    return rc;
}

int spm_nodecache_list_kept(spm_nodecache_t *self, spm_nodecache_list_fn fn, void *arg)
{
    assert(self);
    assert(fn);
    MDB_txn *txn;
    int locked;
    int rc = spm_nodecache_read_begin(self, &txn, &locked);
    if (rc)
        return rc;
    listing_t g = {.fn = fn, .arg = arg};
    int faulted = 0;
    if ((rc = mdb_cursor_open(txn, self->blocks, &g.cursor)) == 0) {
        faulted = spm_busguard_run(list_body, &g, &rc);
        mdb_cursor_close(g.cursor);
    }
    mdb_txn_abort(txn);
    spm_nodecache_map_leave(self, locked);
    if (faulted)
        return spm_nodecache_bus(self, faulted, "listing the kept blocks");
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc == NO_HEADER)
        return spm_nodecache_corrupt(self, "%s: malformed block in the cache", self->dir);
    return spm_nodecache_fault(self, rc, "listing the kept blocks");
}

/* The totals read under a bus guard (see lookup_t). */
typedef struct {
    spm_nodecache_t *self; /* the cache */
    MDB_txn *txn;          /* the caller's transaction */
    totals_t totals;       /* what was read */
} totals_read_t;

static int totals_body(void *arg)
{
    totals_read_t *g = arg;
    return spm_nodecache_totals_get(g->self, g->txn, &g->totals);
}

void spm_nodecache_stats(spm_nodecache_t *self, spm_nodecache_stats_t *out)
{
    assert(self);
    memset(out, 0, sizeof *out);
    out->budget = self->budget;
    out->hits = atomic_load(&self->hits);
    out->misses = atomic_load(&self->misses);
    MDB_txn *txn;
    int locked;
    if (spm_nodecache_read_begin(self, &txn, &locked) != 0)
        return;
    totals_read_t g = {.self = self, .txn = txn};
    int rc, faulted = spm_busguard_run(totals_body, &g, &rc);
    mdb_txn_abort(txn);
    spm_nodecache_map_leave(self, locked);
    if (faulted) {
        spm_nodecache_bus(self, faulted, "reading the totals");
        return;
    }
    if (rc) {
        spm_nodecache_fault(self, rc, "reading the totals");
        return;
    }
    const totals_t *t = &g.totals;
    out->blocks = t->blocks;
    out->bytes = t->bytes;
    out->evictions = t->evictions;
    out->bytes_evicted = t->bytes_evicted;
    out->kept_blocks = t->kept_blocks;
    out->kept_bytes = t->kept_bytes;
}
