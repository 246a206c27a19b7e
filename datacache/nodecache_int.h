/*  =========================================================================
    nodecache_int - the node cache's insides, shared by its files

    Nothing outside datacache/nodecache*.c includes this file. The cache is
    one concept in three files: nodecache.c (open, the writes, the use
    notes), nodecache_read.c (readers and what reads the cache) and
    nodecache_fault.c (a cache found corrupt or unwritable is out of
    service, and the node's other processes hear of it).

    Locking inside one process: LMDB may remap the environment only while no
    transaction of the process is open, and a remap would pull the map from
    under every reader. So every transaction holds MAPLOCK shared (a reader
    from its start to its end) and a remap takes it exclusively. The lock
    prefers writers, so a waiting remap is not starved by a stream of new
    readers; a thread that holds a reader does not take MAPLOCK again (it
    could deadlock behind the waiting remap), and cannot remap itself.
    =========================================================================
*/
#ifndef SPM_NODECACHE_INT_H_INCLUDED
#define SPM_NODECACHE_INT_H_INCLUDED

#include "datacache/nodecache.h"
#include "datacache/lmdbenv.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define MIN_MAP ((size_t)64 << 20)
#define MAX_MAP ((size_t)1 << 40)
#define MAX_READERS 1024
#define FLUSH_NOTES 1024                   /* notes that make reader_end flush */
#define FLUSH_AGE_NS ((uint64_t)100000000) /* note age that makes reader_end flush */
#define LRU_KEY_LEN (8 + SPM_STORE_KEY_LEN)
#define HDR 16 /* value header: type id, flags, checksum; large blocks stay 8-byte aligned */

/* One pending note that a block was used. */
typedef struct {
    spm_sdb_t id;     /* 0: empty slot */
    uint64_t version; /* the block's version */
    uint64_t stamp;   /* when it was last used */
} note_t;

/* Node-wide totals, kept in the "meta" database (native byte order: the file never leaves
   the node). */
typedef struct {
    uint64_t blocks;        /* blocks in the cache, kept or not */
    uint64_t bytes;         /* bytes of those blocks */
    uint64_t evictions;     /* blocks evicted so far */
    uint64_t bytes_evicted; /* bytes evicted so far */
    uint64_t kept_blocks;   /* kept blocks among BLOCKS */
    uint64_t kept_bytes;    /* bytes of those kept blocks */
} totals_t;

struct spm_nodecache {
    MDB_env *env;                 /* the node's shared environment */
    MDB_dbi blocks;               /* key -> header (type, flags, checksum) + bytes */
    MDB_dbi atime;                /* key -> stamp of last use, evictable copies only */
    MDB_dbi lru;                  /* (stamp, key) -> nothing, oldest first, copies only */
    MDB_dbi meta;                 /* "totals" -> totals_t */
    char *dir;                    /* the directory, for error details */
    uint64_t budget;              /* bytes of blocks allowed, 0: unlimited */
    size_t mapsize;               /* this process's map size; changed under maplock held
                                     exclusively */
    pthread_rwlock_t maplock;     /* shared by open transactions, exclusive to remap */
    pthread_mutex_t notelock;     /* guards notes, nnotes, capnotes, oldest */
    note_t *notes;                /* pending use notes, open addressing by key */
    size_t nnotes;                /* used slots in notes */
    size_t capnotes;              /* slots in notes (a power of two, or 0) */
    uint64_t oldest;              /* stamp of the oldest pending note */
    _Atomic uint64_t clock;       /* last stamp handed out by this process */
    _Atomic uint64_t hits;        /* gets of this handle that found the block */
    _Atomic uint64_t misses;      /* gets of this handle that did not */
    spm_nodecache_evict_fn evict; /* called before a block is evicted, or NULL */
    void *evict_arg;              /* its argument */
    int locks_ready;              /* 1 once maplock and notelock are initialized */
    _Atomic int broken;           /* 0; 2 while WHY is written; 1: out of service */
    char why[512];                /* why it is out of service, once BROKEN is 1 */
};

struct spm_nodecache_reader {
    spm_nodecache_t *cache; /* the cache read */
    MDB_txn *txn;           /* the read transaction */
};

/* The cache on which this thread holds a reader (and so MAPLOCK shared), or NULL. */
extern _Thread_local spm_nodecache_t *spm_nodecache_reading;

/* nodecache.c */
/*  Whether RC is an LMDB code (or an errno) rather than an SPM_E* one. */
int spm_nodecache_is_lmdb(int rc);
/*  The monotonic time in ns. */
uint64_t spm_nodecache_now_ns(void);
/*  A stamp later than every earlier one of this process. */
uint64_t spm_nodecache_next_stamp(spm_nodecache_t *self);
/*  Reads the type (may be NULL), flags and checksum (may be NULL) from the
    header of the stored value V. Returns 0, or -1 when V is shorter than a
    header. */
int spm_nodecache_hdr_read(const MDB_val *v, uint32_t *type, uint32_t *flags, uint64_t *sum);
/*  SPM_ENOTFOUND with the detail "DIR: no SDB ID version VERSION ...". */
int spm_nodecache_not_found(spm_nodecache_t *self, spm_sdb_t id, uint64_t version);
/*  Ends holding MAPLOCK when LOCKED (from spm_nodecache_read_begin). */
void spm_nodecache_map_leave(spm_nodecache_t *self, int locked);
/*  Begins a read transaction with MAPLOCK held shared (unless this thread
    holds it through a reader), adopting a map another process grew.
    Returns 0 with *TXN and *LOCKED (for spm_nodecache_map_leave), or an
    SPM_E* code. */
int spm_nodecache_read_begin(spm_nodecache_t *self, MDB_txn **txn, int *locked);
/*  Notes that (ID, VERSION) was used at STAMP. */
void spm_nodecache_note_use(spm_nodecache_t *self, spm_sdb_t id, uint64_t version, uint64_t stamp);

/*  Reads the node-wide totals into *T (zeros when there are none yet).
    Returns 0 or an LMDB code. */
int spm_nodecache_totals_get(spm_nodecache_t *self, MDB_txn *txn, totals_t *t);

/* nodecache_fault.c */
/*  Turns the LMDB, errno or SPM_E* code RC, met while doing WHAT, into the
    SPM_E* code to return (the detail names the directory); a code that
    says the cache is corrupt or cannot be written takes the handle out of
    service (spm_nodecache_broken). 0 stays 0. */
int spm_nodecache_fault(spm_nodecache_t *self, int rc, const char *what);
/*  Takes the handle out of service with the detail WHY (a corrupt block, a
    malformed record) and returns SPM_ESTORE with it. */
int spm_nodecache_corrupt(spm_nodecache_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*  SPM_ESTORE "DIR: the cache is out of service (WHY)" when the handle is
    out of service, else 0: every operation starts with it, so that a
    broken cache fails fast instead of being read or written again. */
int spm_nodecache_refuse(spm_nodecache_t *self);
/*  Takes the handle out of service because WHAT ("reading the cache")
    left its guarded call (base/busguard.h) by SIG: SIGBUS (data.mdb is
    shorter than LMDB believes, cut or a corrupted page number pointing
    past its end, or its disk failed to read), SIGSEGV (a corrupted offset
    or size in a page sent LMDB past its map) or SIGABRT (an LMDB
    assertion: its pages are inconsistent). Returns SPM_ESTORE with the
    reason, which names the signal or the assertion. */
int spm_nodecache_bus(spm_nodecache_t *self, int sig, const char *what);
/*  Takes the handle out of service as spm_nodecache_bus does, and ends
    the process (exit SPM_NODECACHE_EXIT), touching none of its memory
    again: WHAT ("writing the cache") raised SIG (SIGBUS or SIGSEGV) in a
    write transaction, where LMDB copies pages into this process's memory
    by the bounds the pages state, so the fault may end a copy that ran
    over the heap: a page whose upper bound lies past its end did it in 33
    of 100 caches with corrupted page headers, each time in the copy of
    mdb_page_touch, and carried on, each of the 33 died in the abort of
    the transaction (free() found the heap overwritten). */
_Noreturn void spm_nodecache_write_fault(spm_nodecache_t *self, int sig, const char *what);
/*  LMDB's assert callback (mdb_env_set_assert): LMDB found the file's
    pages inconsistent, which a corrupted file does, and would abort the
    process. Inside a guarded call it leaves the call instead, which then
    fails as spm_nodecache_bus says, naming the assertion. */
void spm_nodecache_on_assert(MDB_env *env, const char *msg);

#endif
