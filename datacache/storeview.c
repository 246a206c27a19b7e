/*  =========================================================================
    storeview - the center's store, used in place by other processes of its host

    Why there is no lock here, unlike the node cache: LMDB may remap only
    while no transaction of the process is open, and the node cache takes a
    lock so that it can grow. A view never remaps. Its map is made as large
    as the filesystem at open, and a snapshot that meets a larger store
    (MDB_MAP_RESIZED) simply fails; the IEU then asks the center, as a node
    without the store does. So the environment handle is only read after
    open, and LMDB's own reader table makes snapshots safe in any thread.
    =========================================================================
*/
#include "datacache/storeview.h"
#include "datacache/lmdbenv.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define MIN_MAP ((size_t)64 << 20)
#define MAX_MAP ((size_t)1 << 40)

struct spm_store_view {
    MDB_env *env;        /* handle on the center's environment (never synced here) */
    MDB_dbi dbi;         /* its main database: key -> header + bytes */
    spm_store_map_t map; /* where its map lies (never remapped) */
    char *dir;           /* the directory, for error details */
};

struct spm_store_snap {
    spm_store_view_t *view; /* the view read */
    MDB_txn *txn;           /* the read transaction */
};

/* Begins a read transaction of SELF. Returns 0 with *TXN, or an SPM_E* code. */
static int read_begin(spm_store_view_t *self, MDB_txn **txn)
{
    int rc = mdb_txn_begin(self->env, NULL, MDB_RDONLY, txn);
    if (rc == MDB_MAP_RESIZED)
        return spm_error(SPM_ESTORE,
                         "%s: the store outgrew this process's map of it; read through the "
                         "center",
                         self->dir);
    return rc ? spm_store_lmdb_error(rc, self->dir, "beginning a read") : 0;
}

/* Checks that the store open in SELF has identity ID. Returns 0, SPM_ENOTFOUND, or the code
   of an LMDB failure. */
static int check_identity(spm_store_view_t *self, const uint8_t id[16])
{
    MDB_txn *txn;
    int rc = read_begin(self, &txn);
    if (rc)
        return rc;
    uint8_t found[SPM_STORE_ID_LEN];
    rc = mdb_dbi_open(txn, NULL, 0, &self->dbi);
    if (rc)
        rc = spm_store_lmdb_error(rc, self->dir, "opening the database");
    else
        rc = spm_store_identity_read(txn, self->dbi, self->dir, found);
    mdb_txn_abort(txn);
    if (rc == SPM_EFORMAT) /* the detail names the layout */
        return SPM_ENOTFOUND;
    if (rc == 0 && memcmp(found, id, SPM_STORE_ID_LEN) != 0)
        return spm_error(SPM_ENOTFOUND, "%s: holds another store than the one asked for",
                         self->dir);
    return rc; /* SPM_ENOTFOUND "no identity record" stays as it is */
}

spm_store_view_t *spm_store_view_open(const char *dir, const uint8_t id[16])
{
    spm_store_view_t *self = calloc(1, sizeof *self);
    if (!self || !(self->dir = strdup(dir))) {
        spm_error(SPM_ENOMEM, "out of memory");
        goto err;
    }
    /* Writable (spm_store_view_put), never synced here: the center syncs. */
    if (spm_store_exists(dir) != 0 ||
        spm_store_env_open(&self->env, dir, spm_store_fs_map(dir, MIN_MAP, MAX_MAP), 0,
                           SPM_STORE_READERS, MDB_NOTLS | MDB_NOSYNC) != 0)
        goto err;
    int dead;
    mdb_reader_check(self->env, &dead); /* free the slots of readers that died */
    if (check_identity(self, id) != 0)
        goto err;
    spm_store_map_find(self->env, self->dbi, &self->map);
    return self;
err:
    spm_store_view_destroy(&self);
    return NULL;
}

void spm_store_view_destroy(spm_store_view_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_store_view_t *v = *self_p;
    if (v->env)
        mdb_env_close(v->env);
    free(v->dir);
    free(v);
    *self_p = NULL;
}

spm_store_snap_t *spm_store_view_snap(spm_store_view_t *self)
{
    assert(self);
    spm_store_snap_t *s = malloc(sizeof *s);
    if (!s) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    s->view = self;
    if (read_begin(self, &s->txn) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* Looks up the exact (ID, VERSION) in TXN. Returns 0 with *VAL, or an LMDB code. */
static int lookup(spm_store_view_t *self, MDB_txn *txn, spm_sdb_t id, uint64_t version,
                  MDB_val *val)
{
    if (version == 0) /* no block; under id 0 it is the identity record */
        return MDB_NOTFOUND;
    uint8_t key[SPM_STORE_KEY_LEN];
    spm_store_key(key, id, version);
    MDB_val k = {sizeof key, key};
    return mdb_get(txn, self->dbi, &k, val);
}

int spm_store_snap_get(spm_store_snap_t *s, spm_sdb_t id, uint64_t version, uint32_t *type,
                       const void **data, size_t *len)
{
    assert(s);
    spm_store_view_t *self = s->view;
    MDB_val v;
    int rc = lookup(self, s->txn, id, version, &v);
    if (rc == MDB_NOTFOUND)
        return spm_error(SPM_ENOTFOUND, "%s: no SDB %llu version %llu", self->dir,
                         (unsigned long long)id, (unsigned long long)version);
    if (rc)
        return spm_error(SPM_ESTORE, "%s: reading: %s", self->dir, mdb_strerror(rc));
    if (spm_store_value_parse(&v, SPM_STORE_HDR, type, data, len) != 0)
        return spm_error(SPM_ESTORE, "%s: SDB %llu version %llu: stored value has no header",
                         self->dir, (unsigned long long)id, (unsigned long long)version);
    return 0;
}

void spm_store_view_unmap_all(spm_store_view_t *v)
{
    assert(v);
    if (v->map.size)
        spm_store_unmap(v->env, &v->map, (const void *)v->map.lo, v->map.hi - v->map.lo);
}

void spm_store_view_unmap(spm_store_view_t *v, const void *data, size_t len)
{
    assert(v);
    spm_store_unmap(v->env, &v->map, data, len);
}

void spm_store_snap_end(spm_store_snap_t **s)
{
    if (!s || !*s)
        return;
    mdb_txn_abort((*s)->txn);
    free(*s);
    *s = NULL;
}

int spm_store_view_has(spm_store_view_t *self, spm_sdb_t id, uint64_t version)
{
    assert(self);
    MDB_txn *txn;
    int rc = read_begin(self, &txn);
    if (rc)
        return rc;
    MDB_val v;
    rc = lookup(self, txn, id, version, &v);
    mdb_txn_abort(txn);
    if (rc == MDB_NOTFOUND)
        return 0;
    return rc ? spm_error(SPM_ESTORE, "%s: reading: %s", self->dir, mdb_strerror(rc)) : 1;
}

int spm_store_view_put(spm_store_view_t *self, const spm_store_block_t *blocks, size_t n)
{
    assert(self);
    for (size_t i = 0; i < n; i++)
        if (spm_store_check_put(blocks[i].id, blocks[i].version, blocks[i].data, blocks[i].len) !=
            0)
            return SPM_EINVAL;
    MDB_txn *txn;
    int rc = mdb_txn_begin(self->env, NULL, 0, &txn);
    if (rc)
        return spm_store_lmdb_error(rc, self->dir, "beginning a write");
    for (size_t i = 0; i < n && rc == 0; i++) {
        const spm_store_block_t *b = &blocks[i];
        uint8_t key[SPM_STORE_KEY_LEN];
        spm_store_key(key, b->id, b->version);
        MDB_val k = {sizeof key, key}, v = {SPM_STORE_HDR + b->len, NULL};
        rc = mdb_put(txn, self->dbi, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
        if (rc == 0)
            spm_store_value_write(v.mv_data, SPM_STORE_HDR, b->type, b->data, b->len);
        else if (rc == MDB_KEYEXIST)
            rc = 0;
    }
    if (rc) {
        mdb_txn_abort(txn);
        return spm_store_lmdb_error(rc, self->dir, "writing");
    }
    rc = mdb_txn_commit(txn); /* ends the transaction, failed or not */
    return rc ? spm_store_lmdb_error(rc, self->dir, "writing") : 0;
}
