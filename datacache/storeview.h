/*  =========================================================================
    storeview - the center's store, used in place by other processes of its host

    @header
    A handle on the center's LMDB store (datacache/store.h) for
    the IEUs that run on the center's host: they read SDB blocks straight
    from the store's memory map, as they read the node cache, instead of
    asking the center over a socket. The center hands out the store's path
    and identity (spm_store_identity); a view opens only the store with that
    identity, so a stale path never leads to another store's bytes.
    @discuss
        spm_store_view_t *sv = spm_store_view_open(dir, id);  // NULL: ask the center
        spm_store_snap_t *s = spm_store_view_snap(sv);
        const void *p; size_t n; uint32_t t;
        if (s && spm_store_snap_get(s, sdb, version, &t, &p, &n) == 0)
            ... use p[0..n) read-only ...
        spm_store_snap_end(&s);                               // p is invalid from here
        spm_store_view_destroy(&sv);

    A snapshot is an LMDB read transaction: it sees the store as it was when
    it began, and the pages it reads stay untouched until it ends, even if
    the center deletes the block as garbage meanwhile. Readers never wait for
    the center, and the center never waits for them; a snapshot held long
    only keeps the pages it sees from being reused, so the store's file
    grows by what the center writes in that time.

    Limits. The view never remaps: its map is as large as the filesystem
    that holds the store (address space, not memory), so the center's map
    cannot outgrow it in practice; if it does, snapshots fail and the caller
    asks the center. Each snapshot takes one of the store's reader slots
    (1024, shared by all processes of the host); the center frees the slots
    of processes that died holding one. The lock file is shared with the
    center, so the view needs write access to it (same user). A process that
    has the store open for writing must not open a view of it as well
    (LMDB forbids opening one environment twice in a process), and a view
    must not cross a fork. Large blocks (over about 2 KiB, on their own
    pages) are 8-byte aligned in the map; smaller ones have no alignment
    guarantee.
    @end
    =========================================================================
*/
#ifndef SPM_STOREVIEW_H_INCLUDED
#define SPM_STOREVIEW_H_INCLUDED

#include "spm/spm.h"

#include <stddef.h>
#include <stdint.h>

typedef struct spm_store_view spm_store_view_t;

/*  Opens the store in DIR for reads and spm_store_view_put (LMDB
    MDB_NOTLS | MDB_NOSYNC, no
    lock-free mode: the lock file is shared with the writing center) when its
    identity record equals ID (16 bytes, from spm_store_identity). The map is
    opened as large as the filesystem holding DIR (address space, not
    memory), so that the writer's growth never makes a read fail in practice.
    Nothing is created in DIR. Returns the view, owned by the caller
    (spm_store_view_destroy), or NULL with the detail set: SPM_ENOTFOUND when
    DIR is not a store (no data file, not LMDB, no identity record of this
    layout) or holds another identity, SPM_EIO "DIR: reason" when DIR or its
    files cannot be read, SPM_ENOMEM, SPM_ESTORE for another LMDB failure. */
spm_store_view_t *spm_store_view_open(const char *dir, const uint8_t id[16]);

/*  Closes the view, frees it and sets *SELF to NULL. Every snapshot must
    have ended. Does nothing when *SELF is NULL. */
void spm_store_view_destroy(spm_store_view_t **self_p);

typedef struct spm_store_snap spm_store_snap_t;

/*  Begins a snapshot: one LMDB read transaction. Pointers it hands out stay
    valid and unchanged until it ends, even if the center deletes the block
    meanwhile. Any thread may hold one; several at once are fine, in one
    thread or many (MDB_NOTLS). Returns the snapshot, owned by the caller
    (spm_store_snap_end), or NULL with the detail set: SPM_ENOMEM,
    SPM_ESTORE when the writer's map outgrew this view's (MDB_MAP_RESIZED:
    the caller asks the center instead) or all reader slots are taken, or
    another code of spm_store_lmdb_error. */
spm_store_snap_t *spm_store_view_snap(spm_store_view_t *self);

/*  Looks up block (ID, VERSION), the exact version (version 0 finds
    nothing). Returns 0 with *TYPE (may be NULL), *DATA (read-only, in the
    map, valid until the snapshot ends; 8-byte aligned for blocks over
    2 KiB) and *LEN; or SPM_ENOTFOUND; or SPM_ESTORE (the value is
    malformed, or LMDB failed), each with the detail set. */
int spm_store_snap_get(spm_store_snap_t *s, spm_sdb_t id, uint64_t version, uint32_t *type,
                       const void **data, size_t *len);

/*  Gives back this process's mapping of every page of V's map read so
    far (spm_store_unmap): safe while other threads read, which map again
    what they touch. */
void spm_store_view_unmap_all(spm_store_view_t *v);

/*  Gives back this process's mapping of the pages under DATA[0..LEN), a
    block a snapshot of V gave (and what shares their pages): a reader
    done with it keeps the bytes it read from counting as its own. They
    stay valid; reading them maps them again. */
void spm_store_view_unmap(spm_store_view_t *v, const void *data, size_t len);

/*  Ends the snapshot (its pointers become invalid), frees it and sets *S to
    NULL. Any thread may end it. Does nothing when *S is NULL. */
void spm_store_snap_end(spm_store_snap_t **s);

/*  Whether block (ID, VERSION) (the exact version) is in the store now:
    returns 1, 0, or a negative SPM_E* code as spm_store_view_snap does. */
int spm_store_view_has(spm_store_view_t *self, spm_sdb_t id, uint64_t version);

/*  One block to write with spm_store_view_put. */
typedef struct {
    spm_sdb_t id;     /* the SDB */
    uint64_t version; /* its version (not 0) */
    uint32_t type;    /* the SDB type id */
    const void *data; /* the bytes (not taken) */
    size_t len;       /* how many */
} spm_store_block_t;

/*  Writes the N blocks in one LMDB write transaction, not synced (the
    center syncs the store as it does its own commits). A block already
    stored under its (id, version) is left as it is: an earlier attempt of
    the same SI wrote it, and any attempt's bytes are a valid result. The
    writer lock is LMDB's, shared with the center: this waits while the
    center writes. Returns 0, SPM_EINVAL (id or version 0), SPM_EFULL (the
    disk is full, or the map: nothing is written), SPM_ESTORE. */
int spm_store_view_put(spm_store_view_t *self, const spm_store_block_t *blocks, size_t n);

#endif
