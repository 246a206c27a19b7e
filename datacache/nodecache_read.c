/*  =========================================================================
    nodecache_read - readers of the node cache and what reads it: blocks
    handed out in place (each checked against its checksum first), the
    kept blocks listed, the totals
    =========================================================================
*/
#include "datacache/nodecache_int.h"
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

static int no_header(spm_nodecache_t *self, spm_sdb_t id, uint64_t version)
{
    return spm_nodecache_corrupt(self, "%s: SDB %llu version %llu: stored value has no header",
                                 self->dir, (unsigned long long)id, (unsigned long long)version);
}

int spm_nodecache_get(spm_nodecache_reader_t *r, spm_sdb_t id, uint64_t version, uint32_t *type,
                      const void **data, size_t *len)
{
    assert(r);
    spm_nodecache_t *self = r->cache;
    int rc = spm_nodecache_refuse(self);
    if (rc)
        return rc; /* a reader begun before the cache went out of service reads no more */
    uint8_t key[SPM_STORE_KEY_LEN];
    spm_store_key(key, id, version);
    MDB_val k = {sizeof key, key}, v;
    rc = mdb_get(r->txn, self->blocks, &k, &v);
    if (rc == MDB_NOTFOUND) {
        atomic_fetch_add(&self->misses, 1);
        return spm_nodecache_not_found(self, id, version);
    }
    if (rc)
        return spm_nodecache_fault(self, rc, "reading the cache");
    uint32_t flags;
    uint64_t sum;
    if (spm_nodecache_hdr_read(&v, NULL, &flags, &sum) != 0 ||
        spm_store_value_parse(&v, HDR, type, data, len) != 0)
        return no_header(self, id, version);
    /* Every block is checked before it is handed out: the file is not
       durable and its disk may go bad, and LMDB notices only damage to its
       own pages. A checksum of 0 is none (a kept block of no bytes). */
    if (sum && spm_checksum(*data, *len) != sum)
        return spm_nodecache_corrupt(self,
                                     "%s: SDB %llu version %llu does not match its checksum: the "
                                     "cache is corrupt",
                                     self->dir, (unsigned long long)id,
                                     (unsigned long long)version);
    atomic_fetch_add(&self->hits, 1);
    if (!(flags & SPM_NODECACHE_KEPT))
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
    uint8_t key[SPM_STORE_KEY_LEN];
    spm_store_key(key, id, version);
    MDB_val k = {sizeof key, key}, v;
    uint32_t flags = 0;
    uint64_t sum;
    const void *bytes;
    size_t n;
    rc = mdb_get(txn, self->blocks, &k, &v);
    if (rc == MDB_NOTFOUND)
        rc = spm_nodecache_not_found(self, id, version);
    else if (rc)
        rc = spm_nodecache_fault(self, rc, "reading the cache");
    else if (spm_nodecache_hdr_read(&v, NULL, &flags, &sum) != 0 ||
             spm_store_value_parse(&v, HDR, type, &bytes, &n) != 0)
        rc = no_header(self, id, version);
    else if (sum && spm_checksum(bytes, n) != sum) /* as spm_nodecache_get checks */
        rc = spm_nodecache_corrupt(self,
                                   "%s: SDB %llu version %llu does not match its checksum: the "
                                   "cache is corrupt",
                                   self->dir, (unsigned long long)id, (unsigned long long)version);
    else if (!(*data = malloc(n ? n : 1)))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    else {
        memcpy(*data, bytes, n);
        *len = n;
    }
    mdb_txn_abort(txn);
    spm_nodecache_map_leave(self, locked);
    if (rc == 0 && !(flags & SPM_NODECACHE_KEPT))
        spm_nodecache_note_use(self, id, version, spm_nodecache_next_stamp(self));
    return rc;
}

int spm_nodecache_meta(spm_nodecache_reader_t *r, spm_sdb_t id, uint64_t version,
                       uint64_t *checksum, unsigned *flags)
{
    assert(r);
    spm_nodecache_t *self = r->cache;
    uint8_t key[SPM_STORE_KEY_LEN];
    spm_store_key(key, id, version);
    MDB_val k = {sizeof key, key}, v;
    int rc = mdb_get(r->txn, self->blocks, &k, &v);
    if (rc == MDB_NOTFOUND)
        return spm_nodecache_not_found(self, id, version);
    if (rc)
        return spm_nodecache_fault(self, rc, "reading the cache");
    uint32_t f;
    uint64_t sum;
    if (spm_nodecache_hdr_read(&v, NULL, &f, &sum) != 0)
        return no_header(self, id, version);
    if (checksum)
        *checksum = f & SPM_NODECACHE_NOSUM ? 0 : sum; /* a copy's is the cache's own */
    if (flags)
        *flags = f;
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
    uint8_t key[SPM_STORE_KEY_LEN];
    spm_store_key(key, id, version);
    MDB_val k = {sizeof key, key}, v;
    int found = mdb_get(txn, self->blocks, &k, &v) == 0;
    mdb_txn_abort(txn);
    spm_nodecache_map_leave(self, locked);
    return found;
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
    MDB_cursor *c;
    if ((rc = mdb_cursor_open(txn, self->blocks, &c)) == 0) {
        MDB_val k, v;
        MDB_cursor_op op = MDB_FIRST;
        while ((rc = mdb_cursor_get(c, &k, &v, op)) == 0) {
            op = MDB_NEXT;
            uint32_t type, flags;
            uint64_t sum;
            spm_sdb_t id;
            uint64_t version;
            if (k.mv_size != SPM_STORE_KEY_LEN ||
                spm_nodecache_hdr_read(&v, &type, &flags, &sum) != 0) {
                rc = spm_nodecache_corrupt(self, "%s: malformed block in the cache", self->dir);
                break;
            }
            spm_store_key_parse(k.mv_data, &id, &version);
            if (flags & SPM_NODECACHE_KEPT)
                fn(arg, id, version, type, sum, v.mv_size - HDR);
        }
        mdb_cursor_close(c);
    }
    mdb_txn_abort(txn);
    spm_nodecache_map_leave(self, locked);
    if (rc == MDB_NOTFOUND)
        return 0;
    return spm_nodecache_fault(self, rc, "listing the kept blocks");
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
    totals_t t;
    int rc = spm_nodecache_totals_get(self, txn, &t);
    mdb_txn_abort(txn);
    spm_nodecache_map_leave(self, locked);
    if (rc) {
        spm_nodecache_fault(self, rc, "reading the totals");
        return;
    }
    out->blocks = t.blocks;
    out->bytes = t.bytes;
    out->evictions = t.evictions;
    out->bytes_evicted = t.bytes_evicted;
    out->kept_blocks = t.kept_blocks;
    out->kept_bytes = t.kept_bytes;
}
