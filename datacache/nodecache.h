/*  =========================================================================
    nodecache - the node's store of SDB versions, shared by its IEUs

    @header
    One LMDB environment on the node's local disk, opened by the agent and by
    every IEU process of the node. Readers get pointers straight into the
    memory map: a block read by an SI is never copied through a socket or a
    buffer. It holds two kinds of blocks:

    * Kept blocks (spm_nodecache_keep): the VM's copy of record of a block
      this node holds (one an IEU produced, a replica another node pushed,
      an input a client staged). A kept block is never evicted; it leaves
      only when it is dropped (spm_nodecache_drop, spm_nodecache_drop_all),
      which the node does when the center says it is garbage. Each carries
      its checksum (base/checksum.h), stored beside it for whoever the
      node serves it to.
    * Evictable copies (spm_nodecache_put): blocks fetched only to be read.
      They live within a byte BUDGET: the least recently used ones are
      evicted to make room, each handed to a callback first.

    The budget counts the bytes of both kinds, and kept blocks come first:
    keeping a block evicts copies to make room. A keep that would take the
    kept bytes alone past the budget is refused (SPM_EFULL): the node is
    full, and whoever wanted it kept hands it on to another node (the
    center's store at last), so the job slows but nothing is lost. A copy
    that does not fit beside the kept blocks even once every other copy is
    gone is refused too, and its reader keeps a private copy instead.
    @discuss
        spm_nodecache_t *nc = spm_nodecache_open("/tmp/spm-node", 8ull << 30, 0);
        spm_nodecache_keep(nc, id, version, type, spm_checksum(bytes, len), bytes, len);
        spm_nodecache_put(nc, id2, version2, type2, copy, copy_len);  // evictable
        spm_nodecache_reader_t *r = spm_nodecache_reader(nc);
        const void *p; size_t n; uint32_t t;
        if (spm_nodecache_get(r, id, version, &t, &p, &n) == 0)
            ... use p[0..n) read-only ...
        spm_nodecache_reader_end(&r);                 // p is invalid from here

    Processes: each process opens its own handle (a handle must not cross a
    fork, and a process must not open the same DIR twice: LMDB's locks are
    per process). Writers of all processes are serialized by LMDB's own
    write lock; readers never wait for writers. A reader sees the cache as it
    was when the reader began.

    Recency, and why it is kept this way: marking a block used on every read
    would turn each read into a write transaction, serializing all readers of
    the node behind LMDB's write lock. Instead a get of an evictable copy
    only notes (block, time) in a small table in the process's memory (a
    mutex, a hash insert); a get of a kept block notes nothing. The notes are
    written to the LRU index in the writer path: at every put, keep and drop
    of this process (before it evicts, so its own reads count), at
    spm_nodecache_flush, at close, and when a reader ends while the table
    holds many notes or notes older than 100 ms. A note is written only for a
    block that is still an evictable copy then. Times come from
    CLOCK_MONOTONIC, which all processes of a node share. Known limit: reads
    another process has not flushed yet (at most about 100 ms of them, while
    it keeps ending readers) do not count when this process evicts.

    Layout: database "blocks" maps the 16-byte key of datacache/lmdbenv.h to a
    16-byte header then the bytes. The header holds the type id (u32), the
    flags (u32: bit 0 SPM_NODECACHE_KEPT, bit 1 SPM_NODECACHE_NOSUM) and the
    checksum (u64: the producer's, or the cache's own hash when NOSUM), all
    little-endian. A block larger than
    about 2 KiB sits on its own LMDB pages, and the header keeps its bytes
    8-byte aligned in the map, so an SI may read doubles in place (smaller
    blocks have no alignment guarantee). Only evictable copies are in the LRU
    index, so an eviction never walks over kept blocks: "atime" maps the key
    to its last-use stamp, "lru" holds (stamp, key) with no value, oldest
    first. "meta" holds the node-wide totals. BUDGET counts the bytes of
    blocks, not LMDB's pages.

    The cache is not durable (MDB_NOSYNC): a process that dies loses
    nothing, but a crash of the machine may lose or damage the last writes.
    Today the agent opens it with FRESH=1 at start, which wipes what a
    crashed node left, kept blocks included. The map starts as large as the
    filesystem holding DIR (address space, not disk: the file only grows as
    blocks are written), so growing it, which must wait until no thread of
    the process holds a reader, happens in practice only with a small
    explicit map (spm_nodecache_open_map).
    @end
    =========================================================================
*/
#ifndef SPM_NODECACHE_H_INCLUDED
#define SPM_NODECACHE_H_INCLUDED

#include "spm/spm.h"

#include <stddef.h>
#include <stdint.h>

typedef struct spm_nodecache spm_nodecache_t;

/*  Opens the cache in DIR (created with its parents, mode 0700) with a byte
    BUDGET (0: unlimited). FRESH=1 removes any earlier content first (only
    the agent does this, before the node's IEUs open with FRESH=0). Several
    processes may open the same DIR at once. Returns the handle, owned by the
    caller (spm_nodecache_destroy), or NULL with the detail set: SPM_EIO
    "DIR: reason" when DIR cannot be created or written, SPM_ENOMEM,
    SPM_ESTORE for an LMDB failure. */
spm_nodecache_t *spm_nodecache_open(const char *dir, uint64_t budget, int fresh);

/*  Removes the files of an earlier cache in DIR (its out-of-service marker
    too), as spm_nodecache_open with FRESH=1 does: for an agent that starts its IEUs before it opens
   the cache itself. Returns 0, or SPM_EIO with the detail set. */
int spm_nodecache_wipe(const char *dir);

/*  As spm_nodecache_open, with the first map size MAP_BYTES instead of the
    filesystem's size (a larger existing map is kept). For tests. */
spm_nodecache_t *spm_nodecache_open_map(const char *dir, uint64_t budget, int fresh,
                                        size_t map_bytes);

/*  Writes this process's pending recency notes, closes the handle, frees it
    and sets *SELF to NULL. Every reader must have ended. Does nothing when
    *SELF is NULL. The content stays for the node's other processes. */
void spm_nodecache_destroy(spm_nodecache_t **self_p);

/*  Inserts block (ID, VERSION) of TYPE with the LEN bytes at DATA (copied;
    DATA may be NULL when LEN is 0) as an evictable copy, flagged
    SPM_NODECACHE_NOSUM: it has no producer's checksum (the cache could
    only hash the bytes it was given, which proves nothing about where they
    came from); the cache does hash them, so that a read can tell they were
    not damaged since. A block already present,
    kept or not, is left as it is: no-op success (a put never turns a kept
    block into a copy). While the cache would hold more than the budget, the
    least recently used copies are evicted, each first passed to the evict
    callback. Returns 0, SPM_EINVAL (id or version 0), SPM_EFULL (the block
    does not fit the budget beside the kept blocks, even with every copy
    evicted: nothing is then evicted or stored, and the caller keeps its own
    copy; the disk is full; or the map must grow while the calling thread
    holds a reader: end it before putting), SPM_ENOMEM, SPM_EIO or
    SPM_ESTORE. Any thread may put. */
int spm_nodecache_put(spm_nodecache_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                      const void *data, size_t len);

/*  Stores block (ID, VERSION) of TYPE with the LEN bytes at DATA (copied;
    DATA may be NULL when LEN is 0) as a kept block with CHECKSUM (stored as
    given, not checked: the caller computed it with spm_checksum or verified
    the bytes against it). A kept block is never evicted and takes no part
    in the LRU index; it leaves only by spm_nodecache_drop or
    spm_nodecache_drop_all. A copy already present becomes kept, with these
    bytes. A kept block already present stays as it is when its checksum is
    CHECKSUM (no-op success); with another one, REPLACE decides: its type,
    bytes and checksum are replaced (an SI of this node run again may write
    the same version with other bytes; readers that began before keep
    seeing the old bytes), or the keep is refused (SPM_EINVAL: another node
    cannot change what this one keeps). Before storing, copies are evicted
    (through the evict callback) while the cache would hold more than the
    budget and copies are left. Returns 0, SPM_EINVAL (id or version 0, or
    refused as above), SPM_EFULL (the kept blocks would exceed the budget:
    nothing changes; the disk is full; or the map must grow while the
    calling thread holds a reader), SPM_ENOMEM, SPM_EIO or SPM_ESTORE. Any
    thread may keep. */
int spm_nodecache_keep(spm_nodecache_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                       uint64_t checksum, const void *data, size_t len, int replace);

/*  Called for each copy a put or keep of this handle evicts, BEFORE the
    copy is removed, with its bytes (valid during the call only); kept
    blocks are never evicted. It runs inside the write transaction, holding
    the node's write lock: it must not call into the cache, and should be
    quick. It may be called again for the same copy when the write is
    retried after growing the map, so what it does (writing the copy back to
    the store) must be idempotent. */
typedef void (*spm_nodecache_evict_fn)(void *arg, spm_sdb_t id, uint64_t version, uint32_t type,
                                       const void *data, size_t len);

/*  Sets the evict callback FN with its ARG (NULL: none). Set it before the
    handle is used by several threads. */
void spm_nodecache_on_evict(spm_nodecache_t *self, spm_nodecache_evict_fn fn, void *arg);

/*  A reader is an LMDB read transaction: the pointers it hands out stay
    valid (and their bytes unchanged, even if the block is evicted) until it
    ends. One reader per thread at a time, ended by the thread that made it;
    many threads and processes may read at once. Returns the reader, owned by
    the caller (spm_nodecache_reader_end), or NULL with the detail set:
    SPM_EINVAL when this thread already holds a reader, SPM_ENOMEM,
    SPM_ESTORE (for example, all reader slots are taken). */
typedef struct spm_nodecache_reader spm_nodecache_reader_t;
spm_nodecache_reader_t *spm_nodecache_reader(spm_nodecache_t *self);

/*  Looks up block (ID, VERSION) (the exact version; 0 finds nothing), kept
    or not, and checks its bytes against the checksum stored beside them
    (none for a kept block whose checksum is 0). Returns 0 with *TYPE (may
    be NULL), *DATA (read-only, in the map, valid until the reader ends;
    8-byte aligned for blocks over 2 KiB) and *LEN, and notes an evictable
    copy as used now (a kept block needs no recency); or SPM_ENOTFOUND; or
    SPM_ESTORE (a block that fails its checksum, or that LMDB finds
    corrupt, takes the cache out of service: spm_nodecache_broken).
    Counts a hit or a miss. */
int spm_nodecache_get(spm_nodecache_reader_t *r, spm_sdb_t id, uint64_t version, uint32_t *type,
                      const void **data, size_t *len);

/*  Copies block (ID, VERSION), kept or not, out of the cache as it is now:
    a read transaction of its own, so a thread whose reader began earlier
    finds a block stored since (the data agent, whose reader serves a batch
    of fetches, and an IEU localizing again). The bytes are checked against
    their checksum as spm_nodecache_get does. Returns 0 with *DATA
    (malloc'd, owned by the caller: free), *LEN and *TYPE (may be NULL),
    and notes an evictable copy as used now; or SPM_ENOTFOUND (*DATA NULL),
    SPM_ENOMEM, or SPM_ESTORE (the cache is corrupt: out of service). Not
    counted as a hit or a miss. */
int spm_nodecache_copy(spm_nodecache_t *self, spm_sdb_t id, uint64_t version, uint32_t *type,
                       void **data, size_t *len);

/*  Flags of a stored block (spm_nodecache_meta), as in its header. */
#define SPM_NODECACHE_KEPT 1u  /* kept (spm_nodecache_keep): never evicted */
#define SPM_NODECACHE_NOSUM 2u /* stored without a checksum (spm_nodecache_put) */

/*  Looks up what is stored beside block (ID, VERSION), for serving it:
    returns 0 with *CHECKSUM (0 when the block has none) and *FLAGS
    (SPM_NODECACHE_KEPT, SPM_NODECACHE_NOSUM; either pointer may be NULL), or
    SPM_ENOTFOUND, or SPM_ESTORE. Not counted as a use, hit or miss. */
int spm_nodecache_meta(spm_nodecache_reader_t *r, spm_sdb_t id, uint64_t version,
                       uint64_t *checksum, unsigned *flags);

/*  Ends the reader (its pointers become invalid), frees it and sets *R to
    NULL; may write the process's recency notes (see the header). Does
    nothing when *R is NULL. */
void spm_nodecache_reader_end(spm_nodecache_reader_t **r);

/*  Returns 1 when block (ID, VERSION) is in the cache now, else 0 (also when
    the cache cannot be read). Not counted as a use, hit or miss. */
int spm_nodecache_has(spm_nodecache_t *self, spm_sdb_t id, uint64_t version);

/*  Removes block (ID, VERSION), kept or not, without calling the evict
    callback. Returns 0, SPM_ENOTFOUND, SPM_EFULL, SPM_EIO or SPM_ESTORE. */
int spm_nodecache_drop(spm_nodecache_t *self, spm_sdb_t id, uint64_t version);

/*  Removes every version of SDB ID, kept or not, without calling the evict
    callback, in one write transaction. Returns 0 (also when there was none),
    SPM_EFULL, SPM_EIO or SPM_ESTORE. */
int spm_nodecache_drop_all(spm_nodecache_t *self, spm_sdb_t id);

/*  A block to drop: version 0 stands for every version of the SDB. */
typedef struct {
    spm_sdb_t id;
    uint64_t version;
} spm_nodecache_ref_t;

/*  Removes the N blocks REFS, kept or not, without calling the evict
    callback, in one write transaction (the IEUs of the node wait for it
    once, not once a block). Blocks not there are passed over. Sets *FOUND
    (when not NULL) to how many of REFS were there. Returns 0, SPM_EFULL,
    SPM_EIO or SPM_ESTORE. */
int spm_nodecache_drop_each(spm_nodecache_t *self, const spm_nodecache_ref_t *refs, size_t n,
                            size_t *found);

/*  Removes every block, kept or not (a node that joins a center that does
    not know its blocks), without calling the evict callback. Readers that
    began before keep their snapshot. Returns 0, SPM_EFULL, SPM_EIO or
    SPM_ESTORE. */
int spm_nodecache_clear(spm_nodecache_t *self);

/*  Called by spm_nodecache_list_kept for each kept block, with its key, type,
    checksum and length. */
typedef void (*spm_nodecache_list_fn)(void *arg, spm_sdb_t id, uint64_t version, uint32_t type,
                                      uint64_t checksum, size_t len);

/*  Calls FN with ARG for every kept block, in key order (id, then version),
    all as of one moment (one read transaction). FN must not call into the
    cache. This walks every block of the cache, copies included, reading
    each one's header: meant for rebuilding the center's directory after a
    restart, not for frequent use. Returns 0 or SPM_ESTORE. */
int spm_nodecache_list_kept(spm_nodecache_t *self, spm_nodecache_list_fn fn, void *arg);

/*  Writes this process's pending recency notes to the LRU index now, so the
    node's other processes see them when they evict. Returns 0 or an SPM_E*
    code (the notes are then lost, which only blurs recency). */
int spm_nodecache_flush(spm_nodecache_t *self);

/*  Whether this node's cache is out of service: a call of this handle, or
    of another process's handle on the same DIR, found it corrupt (LMDB's
    MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INCOMPATIBLE ..., a block that
    fails its checksum, a malformed record) or could not write it (EIO,
    EROFS, EACCES; a full disk is not a fault: SPM_EFULL). The first such
    failure leaves DIR/broken with its reason in one line; from then on
    every call of the handle that found it fails at once with SPM_ESTORE
    "DIR: the cache is out of service (REASON)", and nothing of the cache
    is handed out. The cache is made again only by removing its files
    (spm_nodecache_wipe, which removes the marker too) once no process has
    it open. Returns 1 with the reason in WHY (SIZE bytes; may be NULL),
    else 0. Reads the marker (an open) when this handle is in service. */
int spm_nodecache_broken(spm_nodecache_t *self, char *why, size_t size);

/*  The exit status of an IEU that ended because its node's cache went out
    of service (ieu/commit.c): its agent knows it so even when the marker
    could not be written. Also that of any process whose write to the
    cache (put, keep, drop, clear, flush) raised SIGBUS or SIGSEGV inside
    LMDB: LMDB copies the pages it changes by the bounds they state, so a
    corrupted page can make the copy run over the heap before the fault,
    and the process ends there, the cache marked broken, rather than go
    on with that memory (datacache/nodecache_fault.c). */
#define SPM_NODECACHE_EXIT 75

/*  Counters. BLOCKS and BYTES (all blocks, kept or not), KEPT_BLOCKS and
    KEPT_BYTES (the kept ones among them), EVICTIONS and BYTES_EVICTED are
    node-wide (all processes); HITS and MISSES count the gets of this handle;
    BUDGET is this handle's budget. */
typedef struct {
    uint64_t blocks, bytes, budget, hits, misses, evictions, bytes_evicted;
    uint64_t kept_blocks, kept_bytes;
} spm_nodecache_stats_t;

/*  Fills *OUT (the node-wide counters are 0 when the cache cannot be read,
    with the detail set). */
void spm_nodecache_stats(spm_nodecache_t *self, spm_nodecache_stats_t *out);

#endif
