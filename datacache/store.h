/*  =========================================================================
    store - the VM's durable memory: every committed SDB version, in LMDB

    @header
    The center keeps every input block, every committed output and every
    written-back eviction in one LMDB environment on its local disk. A block
    is addressed by (SDB id, version); a version is immutable once written.
    A restarted center reopens the store and resumes with its contents.
    Other processes on the same host (the IEUs there) may read it in place,
    read-only, through datacache/storeview.h.
    @discuss
    Keys are 16 bytes, big-endian (id, version), so the versions of one SDB
    are adjacent and sorted: a cursor positioned with MDB_SET_RANGE finds the
    newest version of an id. A value is an 8-byte header (the little-endian
    type id, then 4 zero bytes) followed by the block's bytes: LMDB keeps a
    value over about 2 KiB on its own pages, and the header keeps the block's
    bytes 8-byte aligned there, so that a process reading the map in place
    (datacache/storeview.h) may read doubles without a copy.

    The key of (0, 0), which no block can have, holds the store's identity
    record: the 8 bytes "spmstor2" (this layout) then 16 random bytes written
    when the store was created (spm_store_identity). A reader in another
    process checks both before it trusts the map, and a store written by an
    older spm (4-byte headers, no identity record) is refused at open rather
    than misread.

        spm_store_t *st = spm_store_open("/var/lib/spm/store");
        spm_store_begin(st);
        spm_store_put(st, id, 1, type, bytes, len);   // part of the batch
        spm_store_put(st, marker, 1, type, "", 0);
        if (spm_store_commit(st) != 0)                 // all or nothing
            ... spm_error_detail() says why ...

    Outside a batch each put or delete is its own transaction. The map (the
    address space LMDB may use) starts small and doubles whenever it is full,
    transparently: the write transaction is started again with the puts of
    the batch so far, which the store keeps for that purpose (a batch holds a
    copy of its blocks in memory until it commits). Growing stops when the
    disk could not hold a larger store: the put then fails with SPM_EFULL.
    Before growing, the store frees the reader slots of processes that died
    holding a snapshot (their old pages could not be reused otherwise).

    A write that fails for lack of room commits nothing; before it gives
    up, the store commits one transaction of nothing, so that the pages
    the last commit freed (a deletion's) may serve the write tried again.

    The center is single-threaded and so is this class: one thread uses a
    store. The environment is synced at every commit (durable).
    @end
    =========================================================================
*/
#ifndef SPM_STORE_H_INCLUDED
#define SPM_STORE_H_INCLUDED

#include "spm/spm.h"

#include <stddef.h>
#include <stdint.h>

typedef struct spm_store spm_store_t;

/*  Opens (creating DIR and its missing parents with mode 0700) the LMDB
    environment in DIR, with a map of 64 MiB to start with. A store that
    already exists is reopened with its contents. Returns the store, owned by
    the caller (spm_store_destroy), or NULL with the detail set: SPM_EIO
    "DIR: Permission denied" (or another system reason) when DIR cannot be
    created or written, SPM_ENOMEM, SPM_EFULL when the identity record of a
    new store finds no room on the disk, SPM_ESTORE for an LMDB failure (with
    the message of mdb_strerror), and SPM_ESTORE "DIR: written by an older
    spm (different block layout); move it away to start a new store" when
    DIR holds blocks but no identity record of this layout (nothing is
    written into it then). An empty store gets its identity record here, in
    one write transaction. */
spm_store_t *spm_store_open(const char *dir);

/*  As spm_store_open, with the first map size MAP_BYTES (rounded up to the
    page size; a store that is already larger keeps its size). Tests and
    benchmarks use a small map to exercise growing. */
spm_store_t *spm_store_open_map(const char *dir, size_t map_bytes);

/*  As spm_store_open, lazy from the start (spm_store_set_lazy): not even a
    new store's identity record is flushed. For a store nothing will
    reopen, as an embedded VM's (the center's --no-sync): its first flush
    cost 5-10 ms of a 75 ms job. */
spm_store_t *spm_store_open_lazy(const char *dir);

/*  LAZY=1: commits no longer wait for the disk (LMDB's MDB_NOSYNC); what
    they wrote is in the operating system's cache, safe from a crash of the
    process, and reaches the disk at the next spm_store_sync. A crash of the
    operating system before that sync can lose those commits. LAZY=0 (the
    default) syncs at every commit. Returns 0 or SPM_ESTORE. */
int spm_store_set_lazy(spm_store_t *self, int lazy);

/*  Flushes everything committed so far to disk. Returns 0 or SPM_ESTORE
    (SPM_EFULL when the disk is full). */
int spm_store_sync(spm_store_t *self);

/*  How far into the data file the store's data reaches, in bytes: the end
    of LMDB's last page in use as of the newest commit, by this process or
    another on the host. 0 when it cannot be read. */
uint64_t spm_store_data_end(spm_store_t *self);

/*  Aborts an open batch, closes the environment, frees the store and sets
 *SELF to NULL. Does nothing when *SELF is NULL. */
void spm_store_destroy(spm_store_t **self_p);

/*  Starts a batch: every put and delete until spm_store_commit is one LMDB
    write transaction, so a crash at any moment leaves either all or none of
    them. Gets during a batch see its puts. Returns 0, or SPM_EINVAL when a
    batch is already open. */
int spm_store_begin(spm_store_t *self);

/*  Commits the open batch (synced to disk). Returns 0, SPM_EINVAL when no
    batch is open, SPM_EFULL when the disk is full, SPM_EIO, SPM_ESTORE, or
    the error with which a put or delete of the batch failed earlier (other
    than the refusals SPM_EINVAL and SPM_ENOTFOUND, which change nothing and
    leave the batch usable). On any failure nothing of the batch is stored.
    The batch is closed either way. */
int spm_store_commit(spm_store_t *self);

/*  Drops the open batch: nothing of it is stored. Does nothing without a
    batch. */
void spm_store_abort(spm_store_t *self);

/*  Writes block (ID, VERSION) of TYPE with the LEN bytes at DATA (copied;
    DATA may be NULL when LEN is 0). Writing the same (id, version) again
    with the same type and bytes is a no-op success; with other bytes it is
    refused with SPM_EINVAL (versions are immutable), as are id 0 and
    version 0 (0 means "no SDB" and "newest"). When the map is full it grows
    as the header says; when the disk is full, the pages the last commit
    freed are first made reusable by one more commit of nothing (LMDB
    reuses them only from the commit after next) and the write is tried
    again; then SPM_EFULL with a detail naming DIR and the free space. Returns 0, SPM_EINVAL,
   SPM_EFULL, SPM_ENOMEM, SPM_EIO or SPM_ESTORE. In a batch, a failure other than a refusal fails
    the whole batch. */
int spm_store_put(spm_store_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                  const void *data, size_t len);

/*  Gives back this process's mapping of every page of SELF's map, as
    spm_store_unmap (datacache/lmdbenv.h) does for one block: what the
    center read since the last call (b-tree pages, the headers its checks
    read). */
void spm_store_unmap_all(spm_store_t *self);

/*  Reads block (ID, VERSION); VERSION 0 means the newest stored version of
    ID, whose version is reported in *FOUND_VERSION (may be NULL; TYPE may be
    NULL too). *DATA is malloc'd (never NULL on success, even for 0 bytes)
    and owned by the caller. Returns 0, SPM_ENOTFOUND, SPM_ENOMEM or
    SPM_ESTORE. */
int spm_store_get(spm_store_t *self, spm_sdb_t id, uint64_t version, uint64_t *found_version,
                  uint32_t *type, void **data, size_t *len);

/*  Whether block (ID, VERSION) (the exact version) is stored, without
    reading its bytes: 0 with its *TYPE and *LEN (either may be NULL), or
    SPM_ENOTFOUND, or SPM_ESTORE. Sees what other processes of the host
    wrote (spm_store_view_put) and committed before the call. */
int spm_store_stat(spm_store_t *self, spm_sdb_t id, uint64_t version, uint32_t *type, size_t *len);

/*  Deletes block (ID, VERSION) (version 0 does not mean the newest here: no
    block has id 0 or version 0, so both are SPM_ENOTFOUND). Returns 0,
    SPM_ENOTFOUND, SPM_EFULL, SPM_EIO or SPM_ESTORE. */
int spm_store_delete(spm_store_t *self, spm_sdb_t id, uint64_t version);

/*  Deletes every version of block ID; none stored is no error. Returns 0,
    SPM_EFULL, SPM_EIO or SPM_ESTORE. */
int spm_store_delete_all(spm_store_t *self, spm_sdb_t id);

/*  Whether block (ID, VERSION) is still referenced (1) or may go (0). */
typedef int (*spm_store_keep_fn)(void *arg, spm_sdb_t id, uint64_t version);

/*  Deletes every block for which KEEP(ARG, ID, VERSION) returns 0: the
    blocks a crash, or a deletion whose commit failed, left behind. The
    blocks are listed in one read transaction, then deleted in
    transactions of at most 64 blocks each, so that a nearly full store,
    where one large delete finds no free pages for its own bookkeeping,
    still frees them (each commit's freed pages serve the ones after
    next). Not in a batch. *FREED (may be NULL) gets the blocks deleted
    and *BYTES (may be NULL) their bytes, also on failure. Returns 0,
    SPM_EINVAL inside a batch, SPM_ENOMEM, SPM_EFULL, SPM_EIO or
    SPM_ESTORE (the blocks deleted before the failure stay deleted). */
int spm_store_sweep(spm_store_t *self, spm_store_keep_fn keep, void *arg, uint64_t *freed,
                    uint64_t *bytes);

/*  Largest SDB id below BELOW stored (0 when the store holds none, or when
    it cannot be read: the detail is then set), so a restarted center
    allocates fresh ids in a range (client puts are numbered below 2^32). */
spm_sdb_t spm_store_max_id(spm_store_t *self, spm_sdb_t below);

/*  Counters for reports: blocks and bytes written (puts that stored a new
    version, counted when their transaction commits; the identity record is
    not a put) and read, and how often the map grew. */
typedef struct {
    uint64_t puts, gets, bytes_put, bytes_get, map_grows;
} spm_store_stats_t;

/*  The blocks stored now (*BLOCKS) and the bytes of the pages that hold
    them (*BYTES): what the store's file needs, not its size, which never
    shrinks (LMDB reuses freed pages). Returns 0 or SPM_ESTORE. */
int spm_store_usage(spm_store_t *self, uint64_t *blocks, uint64_t *bytes);

/*  Copies the counters into *OUT. */
void spm_store_stats(const spm_store_t *self, spm_store_stats_t *out);

/*  Current map size in bytes (grows as the store does). */
size_t spm_store_mapsize(const spm_store_t *self);

/*  Copies the store's identity into ID: the 16 random bytes of its identity
    record, the same for as long as the store exists (across close and
    reopen), and different for every store created. A process on the same
    host opens the store read-only with it (spm_store_view_open), so that it
    never reads another store that happens to sit at the same path. Cannot
    fail. */
void spm_store_identity(const spm_store_t *self, uint8_t id[16]);

#endif
