/*  =========================================================================
    store - the VM's durable memory: every committed SDB version, in LMDB

    Why the batch keeps a copy of its operations: LMDB reports a full map
    (MDB_MAP_FULL) in the middle of a write transaction, which must then be
    aborted; the map can only be resized with no transaction open. To make
    growing invisible to the caller, the store aborts, doubles the map and
    replays the batch so far into a fresh transaction. Outside a batch the
    single operation is replayed from the caller's own buffer (no copy).

    Why the store has an identity record: IEUs on the center's host read it
    in place (datacache/storeview.c) given only its path, and a path outlives
    what was at it. The random identity, which the center hands out with the
    path, makes sure they read this store and no other; its magic makes sure
    no store of an older layout (4-byte headers, whose blocks would start
    misaligned and 4 bytes off) is ever read as this one.

    The LMDB plumbing the store shares with its views and the node cache
    (keys, values, opening and growing the environment, errors) is in
    datacache/lmdbenv.c.
    =========================================================================
*/
#include "datacache/store.h"
#include "datacache/lmdbenv.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAP ((size_t)64 << 20)

/* One put or delete, as applied to a write transaction. */
typedef struct {
    int del;          /* 1: delete (every version when version is 0), 0: put */
    int ident;        /* 1: a put of the identity record (data is the whole value), not a block */
    spm_sdb_t id;     /* the block's SDB id */
    uint64_t version; /* the block's version */
    uint32_t type;    /* type id of a put */
    const void *data; /* bytes of a put (owned by the log in a batch) */
    size_t len;       /* number of bytes at data */
    int wrote;        /* set by apply: the put stored a new version */
} op_t;

struct spm_store {
    MDB_env *env;                 /* the LMDB environment */
    MDB_dbi dbi;                  /* its main database: key -> type + bytes */
    char *dir;                    /* the directory, for error details */
    size_t mapsize;               /* current map size in bytes */
    spm_store_map_t map;          /* where the map lies (spm_store_unmap) */
    size_t touched;               /* bytes mapped by looking at blocks since the last unmap */
    MDB_txn *rtxn;                /* read txn reused (reset) by gets outside batches, or NULL */
    int in_batch;                 /* 1 between begin and commit or abort */
    MDB_txn *wtxn;                /* the batch's write txn, opened at its first operation */
    int batch_err;                /* the failure that spoiled the batch, or 0 */
    op_t *log;                    /* the batch's accepted operations, replayed after growing */
    size_t nlog;                  /* operations in log */
    size_t caplog;                /* operations allocated in log */
    spm_store_stats_t stats;      /* counters for reports */
    uint8_t id[SPM_STORE_ID_LEN]; /* the identity: random bytes written when the store was made */
};

static int identity_load(spm_store_t *self);

static spm_store_t *open_store(const char *dir, size_t map_bytes, unsigned flags);

spm_store_t *spm_store_open(const char *dir)
{
    return open_store(dir, DEFAULT_MAP, 0);
}

spm_store_t *spm_store_open_lazy(const char *dir)
{
    return open_store(dir, DEFAULT_MAP, MDB_NOSYNC);
}

spm_store_t *spm_store_open_map(const char *dir, size_t map_bytes)
{
    return open_store(dir, map_bytes, 0);
}

/*  FLAGS: 0 or MDB_NOSYNC (lazy). */
static spm_store_t *open_store(const char *dir, size_t map_bytes, unsigned flags)
{
    spm_store_t *self = calloc(1, sizeof *self);
    if (!self || !(self->dir = strdup(dir))) {
        spm_error(SPM_ENOMEM, "out of memory");
        goto err;
    }
    if (spm_store_env_open(&self->env, dir, map_bytes, 0, SPM_STORE_READERS, MDB_NOTLS | flags) !=
        0)
        goto err;
    int dead;
    mdb_reader_check(self->env, &dead); /* free the slots of readers that died */
    MDB_txn *txn;
    int rc = mdb_txn_begin(self->env, NULL, MDB_RDONLY, &txn);
    if (!rc) {
        rc = mdb_dbi_open(txn, NULL, 0, &self->dbi);
        mdb_txn_abort(txn);
    }
    if (rc) {
        spm_store_lmdb_error(rc, dir, "opening the database");
        goto err;
    }
    MDB_envinfo info;
    mdb_env_info(self->env, &info);
    self->mapsize = info.me_mapsize;
    if (identity_load(self) != 0)
        goto err;
    return self;
err:
    spm_store_destroy(&self);
    return NULL;
}

static void batch_end(spm_store_t *self)
{
    if (self->wtxn)
        mdb_txn_abort(self->wtxn);
    self->wtxn = NULL;
    for (size_t i = 0; i < self->nlog; i++)
        free((void *)self->log[i].data);
    free(self->log);
    self->log = NULL;
    self->nlog = self->caplog = 0;
    self->in_batch = 0;
    self->batch_err = 0;
}

void spm_store_destroy(spm_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_store_t *s = *self_p;
    batch_end(s);
    if (s->rtxn)
        mdb_txn_abort(s->rtxn);
    if (s->env)
        mdb_env_close(s->env);
    free(s->dir);
    free(s);
    *self_p = NULL;
}

uint64_t spm_store_data_end(spm_store_t *self)
{
    assert(self);
    MDB_envinfo info;
    MDB_stat st;
    if (mdb_env_info(self->env, &info) != 0 || mdb_env_stat(self->env, &st) != 0)
        return 0;
    return ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

size_t spm_store_mapsize(const spm_store_t *self)
{
    assert(self);
    return self->mapsize;
}

void spm_store_identity(const spm_store_t *self, uint8_t id[16])
{
    assert(self);
    memcpy(id, self->id, SPM_STORE_ID_LEN);
}

/* Doubles the map; no write transaction may be open. When readers of processes that died held
   old pages (a killed IEU's snapshot), freeing their slots comes first and may be enough. */
static int grow(spm_store_t *self)
{
    if (self->rtxn)
        mdb_txn_abort(self->rtxn);
    self->rtxn = NULL;
    int dead = 0;
    if (mdb_reader_check(self->env, &dead) == 0 && dead > 0)
        return 0; /* the caller tries again, and grows if that was not enough */
    int rc = spm_store_env_grow(self->env, self->dir, &self->mapsize);
    if (!rc)
        self->stats.map_grows++;
    return rc;
}

static int is_refusal(int rc)
{
    return rc == SPM_EINVAL || rc == SPM_ENOTFOUND;
}

/* Deletes every version of block ID in TXN (none is no error). Returns 0 or an LMDB code. */
static int delete_versions(spm_store_t *self, MDB_txn *txn, spm_sdb_t id)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, self->dbi, &c);
    if (rc)
        return rc;
    uint8_t k[SPM_STORE_KEY_LEN];
    MDB_val key, val;
    do { /* found afresh each time: a cursor's position after a delete is subtle */
        spm_store_key(k, id, 1);
        key = (MDB_val){sizeof k, k};
        rc = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
        if (rc == 0 && (key.mv_size != SPM_STORE_KEY_LEN || spm_store_be64_get(key.mv_data) != id))
            rc = MDB_NOTFOUND;
    } while (rc == 0 && (rc = mdb_cursor_del(c, 0)) == 0);
    mdb_cursor_close(c);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Applies OP to TXN. Returns 0, a refusal (SPM_EINVAL: other bytes under an existing version;
   SPM_ENOTFOUND: nothing to delete), both with the detail set and TXN still usable, or an LMDB
   code (TXN must then be aborted). */
static int apply(spm_store_t *self, MDB_txn *txn, op_t *op)
{
    uint8_t k[SPM_STORE_KEY_LEN];
    spm_store_key(k, op->id, op->version);
    MDB_val key = {sizeof k, k};
    op->wrote = 0;
    if (op->ident) { /* a record another opener wrote first is kept: the caller reads it back */
        MDB_val val = {op->len, (void *)op->data};
        int rc = mdb_put(txn, self->dbi, &key, &val, MDB_NOOVERWRITE);
        return rc == MDB_KEYEXIST ? 0 : rc;
    }
    if (op->del && op->version == 0)
        return delete_versions(self, txn, op->id);
    if (op->del) {
        int rc = mdb_del(txn, self->dbi, &key, NULL);
        if (rc == MDB_NOTFOUND)
            return spm_error(SPM_ENOTFOUND, "%s: no SDB %llu version %llu to delete", self->dir,
                             (unsigned long long)op->id, (unsigned long long)op->version);
        return rc;
    }
    MDB_val val = {SPM_STORE_HDR + op->len, NULL};
    int rc = mdb_put(txn, self->dbi, &key, &val, MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST) {
        uint32_t type;
        const void *data;
        size_t len;
        if (spm_store_value_parse(&val, SPM_STORE_HDR, &type, &data, &len) == 0 &&
            type == op->type && len == op->len && (len == 0 || memcmp(data, op->data, len) == 0))
            return 0;
        return spm_error(SPM_EINVAL,
                         "SDB %llu version %llu is already stored with other contents "
                         "(versions are immutable)",
                         (unsigned long long)op->id, (unsigned long long)op->version);
    }
    if (rc)
        return rc;
    spm_store_value_write(val.mv_data, SPM_STORE_HDR, op->type, op->data, op->len);
    op->wrote = 1;
    return 0;
}

/* Begins a write transaction and applies the N operations, growing the map and starting over
   on MDB_MAP_FULL. Returns 0 with *TXN open; a refusal of the last operation with *TXN open
   (earlier ones were accepted before, so only the last can be refused); or another SPM_E* code
   with *TXN NULL. */
static int txn_apply(spm_store_t *self, op_t *ops, size_t n, MDB_txn **txn)
{
    for (;;) {
        int rc = mdb_txn_begin(self->env, NULL, 0, txn);
        if (rc == MDB_MAP_RESIZED && mdb_env_set_mapsize(self->env, 0) == 0)
            continue; /* another process grew the map: adopt its size */
        if (rc) {
            *txn = NULL;
            return spm_store_lmdb_error(rc, self->dir, "beginning a write");
        }
        size_t i = 0;
        while (i < n && (rc = apply(self, *txn, &ops[i])) == 0)
            i++;
        if (rc == 0 || (is_refusal(rc) && i + 1 == n))
            return rc;
        mdb_txn_abort(*txn);
        *txn = NULL;
        if (is_refusal(rc))
            return rc;
        if (rc != MDB_MAP_FULL)
            return spm_store_lmdb_error(rc, self->dir, "writing");
        rc = grow(self);
        if (rc)
            return rc;
    }
}

static void count_puts(spm_store_t *self, const op_t *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i].wrote) {
            self->stats.puts++;
            self->stats.bytes_put += ops[i].len;
        }
    }
}

/* Commits one write transaction that changes nothing in the end (a scratch key, which no
   block can have, put and deleted again). LMDB reuses the pages a commit freed only from the
   commit after next (the one in between may still be read from the older meta page), and a
   commit of nothing writes no meta page: after a deletion of garbage, every put that fails
   for lack of room commits nothing, so without this the deletion's pages would never serve.
   Returns 0 or an LMDB code. */
static int settle(spm_store_t *self)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(self->env, NULL, 0, &txn);
    if (rc)
        return rc;
    uint8_t k[SPM_STORE_KEY_LEN];
    spm_store_key(k, 0, UINT64_MAX); /* after the identity record (0, 0): never a block */
    MDB_val key = {sizeof k, k}, val = {1, (void *)"s"};
    if (!(rc = mdb_put(txn, self->dbi, &key, &val, 0)))
        rc = mdb_del(txn, self->dbi, &key, NULL);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

/* Applies the N operations and commits them as one transaction, growing the map as needed.
   When the disk is full, the pages the last commit freed are made reusable (settle) and the
   transaction is tried once more. Returns 0 or an SPM_E* code (nothing written). */
static int txn_run(spm_store_t *self, op_t *ops, size_t n)
{
    for (int settled = 0;;) {
        MDB_txn *txn;
        int rc = txn_apply(self, ops, n, &txn);
        if (rc) {
            if (txn)
                mdb_txn_abort(txn);
            if (rc == SPM_EFULL && !settled++ && settle(self) == 0)
                continue;
            return rc;
        }
        rc = mdb_txn_commit(txn);
        if (rc == MDB_MAP_FULL) {
            if ((rc = grow(self)) == 0)
                continue;
        } else if (rc) {
            rc = spm_store_lmdb_error(rc, self->dir, "committing");
        }
        if (rc == SPM_EFULL && !settled++ && settle(self) == 0)
            continue;
        if (rc)
            return rc;
        count_puts(self, ops, n);
        return 0;
    }
}

/* Adds OP to the open batch: copies its bytes into the log and applies it to the batch's
   transaction, replaying the whole log after growing the map. */
static int batch_add(spm_store_t *self, const op_t *op)
{
    if (self->batch_err)
        return spm_error(self->batch_err, "%s: the open batch failed earlier: %s", self->dir,
                         spm_strerror(self->batch_err));
    if (self->nlog == self->caplog) {
        size_t cap = self->caplog ? 2 * self->caplog : 16;
        op_t *log = realloc(self->log, cap * sizeof *log);
        if (!log)
            return spm_error(SPM_ENOMEM, "out of memory");
        self->log = log;
        self->caplog = cap;
    }
    op_t *last = &self->log[self->nlog];
    *last = *op;
    if (op->len) {
        void *copy = malloc(op->len);
        if (!copy)
            return spm_error(SPM_ENOMEM, "out of memory for a block of %zu bytes", op->len);
        last->data = memcpy(copy, op->data, op->len);
    } else {
        last->data = NULL;
    }
    self->nlog++;
    int rc;
    if (!self->wtxn) {
        rc = txn_apply(self, self->log, self->nlog, &self->wtxn);
    } else if ((rc = apply(self, self->wtxn, last)) != 0 && !is_refusal(rc)) {
        mdb_txn_abort(self->wtxn);
        self->wtxn = NULL;
        if (rc == MDB_MAP_FULL && (rc = grow(self)) == 0)
            rc = txn_apply(self, self->log, self->nlog, &self->wtxn);
        else if (rc != MDB_MAP_FULL)
            rc = spm_store_lmdb_error(rc, self->dir, "writing");
    }
    if (is_refusal(rc)) {
        free((void *)last->data);
        self->nlog--;
    } else if (rc) {
        self->batch_err = rc;
    }
    return rc;
}

int spm_store_begin(spm_store_t *self)
{
    assert(self);
    if (self->in_batch)
        return spm_error(SPM_EINVAL, "%s: a batch is already open", self->dir);
    self->in_batch = 1;
    return 0;
}

int spm_store_commit(spm_store_t *self)
{
    assert(self);
    if (!self->in_batch)
        return spm_error(SPM_EINVAL, "%s: no batch is open", self->dir);
    int rc = self->batch_err;
    if (rc) {
        spm_error(rc, "%s: batch not stored: one of its writes failed (%s)", self->dir,
                  spm_strerror(rc));
    } else if (self->wtxn) {
        rc = mdb_txn_commit(self->wtxn);
        self->wtxn = NULL;
        if (rc == MDB_MAP_FULL && (rc = grow(self)) == 0)
            rc = txn_run(self, self->log, self->nlog);
        else if (rc == 0)
            count_puts(self, self->log, self->nlog);
        else if (rc != MDB_MAP_FULL)
            rc = spm_store_lmdb_error(rc, self->dir, "committing");
        if (rc == SPM_EFULL && settle(self) == 0) /* see settle: once more, as txn_run does */
            rc = txn_run(self, self->log, self->nlog);
    }
    batch_end(self);
    return rc;
}

int spm_store_set_lazy(spm_store_t *self, int lazy)
{
    assert(self);
    int rc = mdb_env_set_flags(self->env, MDB_NOSYNC, lazy ? 1 : 0);
    return rc ? spm_store_lmdb_error(rc, self->dir, "setting the sync mode") : 0;
}

int spm_store_sync(spm_store_t *self)
{
    assert(self);
    int rc = mdb_env_sync(self->env, 1);
    if (rc == ENOSPC || rc == EDQUOT)
        return spm_error(SPM_EFULL, "%s: disk full while syncing", self->dir);
    return rc ? spm_store_lmdb_error(rc, self->dir, "syncing") : 0;
}

void spm_store_abort(spm_store_t *self)
{
    assert(self);
    batch_end(self);
}

int spm_store_put(spm_store_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                  const void *data, size_t len)
{
    assert(self);
    int rc = spm_store_check_put(id, version, data, len);
    if (rc)
        return rc;
    op_t op = {.id = id, .version = version, .type = type, .data = data, .len = len};
    return self->in_batch ? batch_add(self, &op) : txn_run(self, &op, 1);
}

int spm_store_delete(spm_store_t *self, spm_sdb_t id, uint64_t version)
{
    assert(self);
    if (id == 0 || version == 0) /* no block; (0, 0) is the identity record */
        return spm_error(SPM_ENOTFOUND, "%s: no SDB %llu version %llu to delete", self->dir,
                         (unsigned long long)id, (unsigned long long)version);
    op_t op = {.del = 1, .id = id, .version = version};
    return self->in_batch ? batch_add(self, &op) : txn_run(self, &op, 1);
}

int spm_store_delete_all(spm_store_t *self, spm_sdb_t id)
{
    assert(self);
    if (id == 0) /* the identity record is not a block */
        return 0;
    op_t op = {.del = 1, .id = id, .version = 0};
    return self->in_batch ? batch_add(self, &op) : txn_run(self, &op, 1);
}

/* The transaction reads go through: the batch's, or the reused read transaction. */
static int read_begin(spm_store_t *self, MDB_txn **txn)
{
    if (self->wtxn) {
        *txn = self->wtxn;
        return 0;
    }
    int rc = self->rtxn ? mdb_txn_renew(self->rtxn)
                        : mdb_txn_begin(self->env, NULL, MDB_RDONLY, &self->rtxn);
    if (rc == MDB_MAP_RESIZED) {
        if (self->rtxn)
            mdb_txn_abort(self->rtxn);
        self->rtxn = NULL;
        rc = mdb_env_set_mapsize(self->env, 0);
        if (!rc)
            rc = mdb_txn_begin(self->env, NULL, MDB_RDONLY, &self->rtxn);
    }
    if (rc) {
        if (self->rtxn)
            mdb_txn_abort(self->rtxn);
        self->rtxn = NULL;
        return spm_store_lmdb_error(rc, self->dir, "beginning a read");
    }
    *txn = self->rtxn;
    return 0;
}

static void read_end(spm_store_t *self, MDB_txn *txn)
{
    if (txn == self->rtxn)
        mdb_txn_reset(txn);
}

/* Positions KEY and VAL on the newest version of ID: the last key below (ID + 1, 0), found
   with MDB_SET_RANGE on (ID, max) and one step back. Version 0 is no block (under id 0 it is
   the identity record). Returns 0 or an LMDB code. */
static int find_newest(MDB_txn *txn, MDB_dbi dbi, spm_sdb_t id, MDB_val *key, MDB_val *val)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, dbi, &c);
    if (rc)
        return rc;
    uint8_t k[SPM_STORE_KEY_LEN];
    spm_store_key(k, id, UINT64_MAX);
    *key = (MDB_val){sizeof k, k};
    rc = mdb_cursor_get(c, key, val, MDB_SET_RANGE);
    if (rc == 0 && memcmp(key->mv_data, k, sizeof k) != 0)
        rc = mdb_cursor_get(c, key, val, MDB_PREV);
    else if (rc == MDB_NOTFOUND)
        rc = mdb_cursor_get(c, key, val, MDB_LAST);
    if (rc == 0 && (key->mv_size != SPM_STORE_KEY_LEN || spm_store_be64_get(key->mv_data) != id ||
                    spm_store_be64_get((const uint8_t *)key->mv_data + 8) == 0))
        rc = MDB_NOTFOUND;
    mdb_cursor_close(c);
    return rc;
}

/* Finds block (ID, VERSION) in TXN (VERSION 0: the newest) and points *BYTES and *N at its bytes
   in the map, *TYPE (may be NULL) and *FOUND (may be NULL) at its type and version. Returns 0,
   SPM_ENOTFOUND, or SPM_ESTORE, with the detail set. */
static int locate(spm_store_t *self, MDB_txn *txn, spm_sdb_t id, uint64_t version, uint64_t *found,
                  uint32_t *type, const void **bytes, size_t *n)
{
    uint8_t k[SPM_STORE_KEY_LEN];
    spm_store_key(k, id, version);
    MDB_val key = {sizeof k, k}, val;
    int rc =
        version ? mdb_get(txn, self->dbi, &key, &val) : find_newest(txn, self->dbi, id, &key, &val);
    if (rc == MDB_NOTFOUND)
        return version ? spm_error(SPM_ENOTFOUND, "%s: no SDB %llu version %llu", self->dir,
                                   (unsigned long long)id, (unsigned long long)version)
                       : spm_error(SPM_ENOTFOUND, "%s: no version of SDB %llu", self->dir,
                                   (unsigned long long)id);
    if (rc)
        return spm_store_lmdb_error(rc, self->dir, "reading");
    if (spm_store_value_parse(&val, SPM_STORE_HDR, type, bytes, n) != 0)
        return spm_error(SPM_ESTORE, "%s: SDB %llu: stored value has no type header", self->dir,
                         (unsigned long long)id);
    if (found)
        *found = spm_store_be64_get((const uint8_t *)key.mv_data + 8);
    return 0;
}

#define TOUCH_MAX ((size_t)16 << 20) /* looked-at bytes that stay mapped at most */

/*  SELF's map, found again after a remap. */
static const spm_store_map_t *store_map(spm_store_t *self)
{
    MDB_envinfo info;
    if (mdb_env_info(self->env, &info) == 0 && info.me_mapsize != self->map.size)
        spm_store_map_find(self->env, self->dbi, &self->map);
    return &self->map;
}

void spm_store_unmap_all(spm_store_t *self)
{
    assert(self);
    const spm_store_map_t *m = store_map(self);
    self->touched = 0;
    if (m->size)
        spm_store_unmap(self->env, m, (const void *)m->lo, m->hi - m->lo);
}

/*  A block was looked at (its header read): the page fault mapped the
    whole folio around it, as much as SPM_STORE_UNMAP_ALIGN, however small the block
    (LMDB writes many small blocks' pages in one go). Those add up, over a
    job's commits checked, to every output written; they go back every
    TOUCH_MAX, each look counted as SPM_STORE_UNMAP_ALIGN. Counted as the block's
    own bytes, level-wise mining of 6,190 frequent items had the center at
    196 MiB of the store mapped, checking thousands of small blocks between
    two ticks; now 35 MiB, its CPU no higher. */
static void touched(spm_store_t *self)
{
    self->touched += SPM_STORE_UNMAP_ALIGN;
    if (self->touched >= TOUCH_MAX)
        spm_store_unmap_all(self);
}

int spm_store_get(spm_store_t *self, spm_sdb_t id, uint64_t version, uint64_t *found_version,
                  uint32_t *type, void **data, size_t *len)
{
    assert(self);
    MDB_txn *txn;
    int rc = read_begin(self, &txn);
    if (rc)
        return rc;
    const void *bytes;
    size_t n;
    rc = locate(self, txn, id, version, found_version, type, &bytes, &n);
    if (rc == 0 && !(*data = malloc(n ? n : 1))) {
        rc = spm_error(SPM_ENOMEM, "out of memory for a block of %zu bytes", n);
    } else if (rc == 0) {
        memcpy(*data, bytes, n);
        spm_store_unmap(self->env, store_map(self), bytes, n); /* read once: the caller copied it */
        *len = n;
        self->stats.gets++;
        self->stats.bytes_get += n;
    }
    read_end(self, txn);
    return rc;
}

int spm_store_stat(spm_store_t *self, spm_sdb_t id, uint64_t version, uint32_t *type, size_t *len)
{
    assert(self);
    if (version == 0) /* no block; under id 0 it is the identity record */
        return spm_error(SPM_ENOTFOUND, "%s: no SDB %llu version 0", self->dir,
                         (unsigned long long)id);
    MDB_txn *txn;
    int rc = read_begin(self, &txn);
    if (rc)
        return rc;
    const void *bytes;
    size_t n;
    rc = locate(self, txn, id, version, NULL, type, &bytes, &n);
    if (rc == 0 && len)
        *len = n;
    read_end(self, txn);
    if (rc == 0)
        touched(self);
    return rc;
}

spm_sdb_t spm_store_max_id(spm_store_t *self, spm_sdb_t below)
{
    assert(self);
    MDB_txn *txn;
    if (read_begin(self, &txn) != 0)
        return 0;
    MDB_cursor *c;
    uint8_t k[SPM_STORE_KEY_LEN];
    spm_store_key(k, below, 0); /* no block has version 0: every key of BELOW sorts after */
    MDB_val key = {sizeof k, k}, val;
    spm_sdb_t id = 0;
    int rc = mdb_cursor_open(txn, self->dbi, &c);
    if (!rc) {
        /* the last key before (BELOW, 0); the identity record, (0, 0), sorts first: it is
           that key only without blocks */
        rc = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
        rc = mdb_cursor_get(c, &key, &val, rc == 0 ? MDB_PREV : MDB_LAST);
        if (rc == 0 && key.mv_size == SPM_STORE_KEY_LEN)
            id = spm_store_be64_get(key.mv_data);
        mdb_cursor_close(c);
    }
    if (rc && rc != MDB_NOTFOUND)
        spm_store_lmdb_error(rc, self->dir, "finding the largest id");
    read_end(self, txn);
    return id;
}

#define SWEEP_BATCH 64 /* deletions per transaction of a sweep */

/*  The blocks of TXN that KEEP lets go, appended to *OPS (delete ops, their
    len the block's bytes). Returns 0, SPM_ENOMEM or an LMDB code. */
static int sweep_list(spm_store_t *self, MDB_txn *txn, spm_store_keep_fn keep, void *arg,
                      op_t **ops, size_t *n, size_t *cap)
{
    MDB_cursor *c = NULL;
    int rc = mdb_cursor_open(txn, self->dbi, &c);
    MDB_val key, val;
    for (int op = MDB_FIRST; rc == 0 && (rc = mdb_cursor_get(c, &key, &val, op)) == 0;
         op = MDB_NEXT) {
        if (key.mv_size != SPM_STORE_KEY_LEN)
            continue;
        spm_sdb_t id = spm_store_be64_get(key.mv_data);
        uint64_t version = spm_store_be64_get((const uint8_t *)key.mv_data + 8);
        if (id == 0 || version == 0 || keep(arg, id, version))
            continue; /* (0, 0) is the identity record */
        if (*n == *cap) {
            size_t c2 = *cap ? 2 * *cap : 256;
            op_t *more = realloc(*ops, c2 * sizeof *more);
            if (!more) {
                rc = SPM_ENOMEM;
                break;
            }
            *ops = more;
            *cap = c2;
        }
        size_t len = val.mv_size > SPM_STORE_HDR ? val.mv_size - SPM_STORE_HDR : 0;
        (*ops)[(*n)++] = (op_t){.del = 1, .id = id, .version = version, .len = len};
    }
    if (rc == 0 || rc == MDB_NOTFOUND)
        rc = 0;
    if (c)
        mdb_cursor_close(c);
    return rc;
}

int spm_store_sweep(spm_store_t *self, spm_store_keep_fn keep, void *arg, uint64_t *freed,
                    uint64_t *bytes)
{
    assert(self);
    uint64_t nfreed = 0, nbytes = 0;
    if (freed)
        *freed = 0;
    if (bytes)
        *bytes = 0;
    if (self->in_batch)
        return spm_error(SPM_EINVAL, "%s: a sweep cannot run inside a batch", self->dir);
    MDB_txn *txn;
    int rc = read_begin(self, &txn);
    if (rc)
        return rc;
    op_t *ops = NULL;
    size_t n = 0, cap = 0;
    rc = sweep_list(self, txn, keep, arg, &ops, &n, &cap);
    read_end(self, txn);
    if (rc == SPM_ENOMEM)
        rc = spm_error(SPM_ENOMEM, "out of memory listing the store's blocks");
    else if (rc)
        rc = spm_store_lmdb_error(rc, self->dir, "listing its blocks");
    for (size_t at = 0; rc == 0 && at < n; at += SWEEP_BATCH) {
        size_t k = n - at < SWEEP_BATCH ? n - at : SWEEP_BATCH;
        /* the ops carry no data: txn_run only deletes (the lens are for the count) */
        rc = txn_run(self, ops + at, k);
        for (size_t i = at; rc == 0 && i < at + k; i++) {
            nfreed++;
            nbytes += ops[i].len;
        }
    }
    free(ops);
    if (freed)
        *freed = nfreed;
    if (bytes)
        *bytes = nbytes;
    return rc;
}

int spm_store_usage(spm_store_t *self, uint64_t *blocks, uint64_t *bytes)
{
    assert(self);
    MDB_txn *txn;
    if (read_begin(self, &txn) != 0)
        return SPM_ESTORE;
    MDB_stat st;
    int rc = mdb_stat(txn, self->dbi, &st);
    read_end(self, txn);
    if (rc)
        return spm_store_lmdb_error(rc, self->dir, "reading its size");
    *blocks = st.ms_entries ? st.ms_entries - 1 : 0; /* not the identity record */
    *bytes = (uint64_t)st.ms_psize * (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages);
    return 0;
}

void spm_store_stats(const spm_store_t *self, spm_store_stats_t *out)
{
    assert(self);
    *out = self->stats;
}

/* ------------------------------------------------------------- identity */

/* Fills the N bytes at P with random bytes from /dev/urandom or, should that fail, with the
   clocks, the process id and a stack address mixed by splitmix64: enough to tell stores apart. */
static void random_bytes(uint8_t *p, size_t n)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, p, n) : -1;
    if (fd >= 0)
        close(fd);
    if (got == (ssize_t)n)
        return;
    struct timespec rt, mt;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    uint64_t x = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    x ^= ((uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec) << 17;
    x ^= (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)&rt;
    uint64_t z = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 8 == 0) {
            z = x += 0x9E3779B97F4A7C15ull;
            z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ z >> 27) * 0x94D049BB133111EBull;
            z ^= z >> 31;
        }
        p[i] = (uint8_t)(z >> 8 * (i % 8));
    }
}

/* Reads the identity record into SELF->id; a store without one gets one when it holds nothing
   yet, and is refused otherwise. Returns 0, SPM_ESTORE, or the code of a failed write. */
static int identity_load(spm_store_t *self)
{
    for (int wrote = 0;; wrote = 1) {
        MDB_txn *txn;
        int rc = read_begin(self, &txn);
        if (rc)
            return rc;
        rc = spm_store_identity_read(txn, self->dbi, self->dir, self->id);
        MDB_stat st = {0};
        int empty = rc == SPM_ENOTFOUND && mdb_stat(txn, self->dbi, &st) == 0 && !st.ms_entries;
        read_end(self, txn);
        if (rc == SPM_ENOTFOUND && empty && !wrote) {
            uint8_t rec[SPM_STORE_IDENT_LEN];
            memcpy(rec, SPM_STORE_MAGIC, SPM_STORE_MAGIC_LEN);
            random_bytes(rec + SPM_STORE_MAGIC_LEN, SPM_STORE_ID_LEN);
            op_t op = {.ident = 1, .data = rec, .len = sizeof rec};
            if ((rc = txn_run(self, &op, 1)) != 0)
                return rc;
            continue; /* read back what is stored: another opener may have been first */
        }
        if (rc == SPM_ENOTFOUND)
            return spm_error(SPM_ESTORE,
                             "%s: a store of layout 1, written by an older spm; this spm reads "
                             "layout %c; move it away to start a new store",
                             self->dir, SPM_STORE_MAGIC[SPM_STORE_MAGIC_LEN - 1]);
        if (rc == SPM_EFORMAT) {
            char why[512];
            snprintf(why, sizeof why, "%s", spm_error_detail());
            return spm_error(SPM_ESTORE, "%s; move it away to start a new store", why);
        }
        return rc;
    }
}
