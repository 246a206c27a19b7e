/*  =========================================================================
    lmdbenv - the LMDB plumbing that the store, its views and the node cache
    share

    @header
    For the modules of datacache/ only: the center's store
    (datacache/store.h), its views (datacache/storeview.h) and the node
    cache (datacache/nodecache.h) are built on it. Not part of the interface
    the center uses. Its names keep the store's prefix: the keys, values and
    identity record are the store's layout, which the others read, or copy.
    @discuss
    A block's key is its (SDB id, version) as 16 big-endian bytes
    (spm_store_key), so the versions of one SDB are adjacent and sorted. A
    value is a header whose first 4 bytes are the little-endian type id,
    then the block's bytes (spm_store_value_write, spm_store_value_parse).
    An environment is opened with spm_store_env_open and grown with
    spm_store_env_grow; an LMDB or system error becomes an SPM_E* code with
    a detail that names the directory (spm_store_lmdb_error).
    @end
    =========================================================================
*/
#ifndef SPM_LMDBENV_H_INCLUDED
#define SPM_LMDBENV_H_INCLUDED

#include "spm/spm.h"

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#define SPM_STORE_KEY_LEN 16

/*  Whether DIR holds a store's data file: 0, SPM_ENOTFOUND "DIR: not a
    store (no data.mdb)", or SPM_EIO when DIR cannot be looked at. */
int spm_store_exists(const char *dir);

/*  Writes the 16-byte big-endian key of (ID, VERSION) into KEY. */
void spm_store_key(uint8_t *key, spm_sdb_t id, uint64_t version);

/*  Reads back ID and VERSION from a 16-byte key. */
void spm_store_key_parse(const uint8_t *key, spm_sdb_t *id, uint64_t *version);

/*  Writes / reads a big-endian uint64 (8 bytes at P). */
void spm_store_be64_put(uint8_t *p, uint64_t v);
uint64_t spm_store_be64_get(const uint8_t *p);

/*  Checks the arguments of a put: ID and VERSION not 0, DATA given when LEN
    is not 0. Returns 0 or SPM_EINVAL with the detail set. */
int spm_store_check_put(spm_sdb_t id, uint64_t version, const void *data, size_t len);

/*  A value is a header of HDR bytes (SPM_STORE_HDR in the store, 16 in
    the node cache, whose bytes after the type hold its flags and checksum)
    whose first 4 hold the little-endian type id (the rest are 0 here),
    then the bytes. A header of a multiple of 8 keeps large blocks, which
    LMDB puts on their own pages, 8-byte aligned in the map. */
#define SPM_STORE_HDR 8

/*  Writes the value of TYPE and the LEN bytes at DATA into DST (HDR + LEN
    bytes, e.g. space reserved with MDB_RESERVE). */
void spm_store_value_write(void *dst, size_t hdr, uint32_t type, const void *data, size_t len);

/*  Splits the stored value V with a header of HDR bytes into TYPE (may be
    NULL), *DATA (pointing into V) and *LEN. Returns 0, or SPM_EFORMAT when V
    is shorter than a header. */
int spm_store_value_parse(const MDB_val *v, size_t hdr, uint32_t *type, const void **data,
                          size_t *len);

/*  Creates DIR (and its parents, 0700) when missing, checks it is a
    writable directory, creates an environment with MAPSIZE, MAXDBS named
    databases and MAXREADERS reader slots, and opens it with FLAGS. With
    MDB_RDONLY in FLAGS, DIR is neither created nor checked for writing: it
    must hold an LMDB data file (nothing is created in a directory that is
    no store). Returns 0 with *ENV set (owned by the caller: mdb_env_close),
    or SPM_EIO "DIR: reason", SPM_ENOTFOUND "DIR: not a store" (MDB_RDONLY
    only), SPM_ENOMEM, SPM_ESTORE. */
int spm_store_env_open(MDB_env **env, const char *dir, size_t mapsize, unsigned maxdbs,
                       unsigned maxreaders, unsigned flags);

/*  The size of the filesystem that holds DIR (or, while DIR does not exist,
    its nearest existing parent), within [MIN, MAX]. A map this large is
    address space, not memory (the file grows only as data is written), and
    covers any store the disk can hold. MIN when nothing can be examined. */
size_t spm_store_fs_map(const char *dir, size_t min, size_t max);

/*  Grows the map of ENV (in directory DIR) from *MAPSIZE by doubling, but
    not beyond what the disk could hold (the data file plus the free space);
    no transaction of this process may be open. Returns 0 with *MAPSIZE
    updated, or SPM_EFULL "DIR: disk full: ..." when the map already covers
    the whole free disk, SPM_ESTORE. */
int spm_store_env_grow(MDB_env *env, const char *dir, size_t *mapsize);

/*  Turns the LMDB or errno code RC, met while doing WHAT in DIR, into an
    SPM_E* code with the detail "DIR: WHAT: reason" and returns it:
    SPM_EFULL for ENOSPC/EDQUOT/MDB_MAP_FULL, SPM_EIO for EACCES/EROFS/EIO,
    SPM_ENOMEM for ENOMEM, SPM_ESTORE for the rest. */
int spm_store_lmdb_error(int rc, const char *dir, const char *what);

#define SPM_STORE_ID_LEN 16 /* bytes of a store's identity */

/*  The identity record of a store, under the key of (0, 0), which no
    block can have: the magic of this layout, then SPM_STORE_ID_LEN random
    bytes written when the store was created. */
#define SPM_STORE_MAGIC "spmstor2" /* first bytes of the identity record: this layout */
#define SPM_STORE_MAGIC_LEN 8
/* bytes of the identity record */
#define SPM_STORE_IDENT_LEN (SPM_STORE_MAGIC_LEN + SPM_STORE_ID_LEN)

/*  Reader slots of the store's lock file, sized by whichever process opens
    it first: every snapshot of a view (datacache/storeview.h) takes one. */
#define SPM_STORE_READERS 1024

/*  Reads the identity record of the store whose main database is DBI, in
    TXN, into ID. Returns 0, SPM_ENOTFOUND "DIR: no identity record" when
    there is none, SPM_EFORMAT when the record is of another layout (magic or
    length), or the SPM_E* code of an LMDB failure (spm_store_lmdb_error). */
int spm_store_identity_read(MDB_txn *txn, MDB_dbi dbi, const char *dir,
                            uint8_t id[SPM_STORE_ID_LEN]);

/*  Where an LMDB environment's map lies in this process: LMDB does not
    say (mdb_env_info's address is set only for MDB_FIXEDMAP), so it is
    found in /proc/self/maps from a value read. */
typedef struct {
    size_t size;      /* the environment's map size when found (0: unknown) */
    uintptr_t lo, hi; /* the map's addresses */
} spm_store_map_t;

/*  Finds ENV's map (DBI: its main database, which holds the identity
    record) into *M; on any failure *M says unknown. */
void spm_store_map_find(MDB_env *env, MDB_dbi dbi, spm_store_map_t *m);

/*  Gives back this process's mapping of the pages around [DATA, DATA +
    LEN), a block read from ENV's map M: the 2 MiB-aligned stretch that
    holds it (the page cache maps a file in folios of up to 2 MiB, so one
    byte read can map that much), clipped to the map. The pages stay in the
    page cache, and reading them again maps them again (a minor fault), so
    this is safe while other threads read there; without it a process that
    reads every block it is handed keeps all of them mapped, and they count
    in its memory (Pss). Does nothing when M is unknown or ENV was remapped
    since M was found. Never fails. */
void spm_store_unmap(MDB_env *env, const spm_store_map_t *m, const void *data, size_t len);

#define SPM_STORE_UNMAP_ALIGN ((uintptr_t)2 << 20) /* the largest folio a file is mapped in */

#endif
