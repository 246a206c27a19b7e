/*  =========================================================================
    directory - where every block version of the VM lives

    @header
    The center's map from (SDB, version) to the nodes that hold it, with
    its size and checksum, and the table of nodes (their data agents'
    endpoints and keys). A holder is either a *keeper* (a node that keeps
    the block for the VM: the IEU that produced it, the replicas it pushed,
    the nodes a client staged it on, a copy the center ordered) or a
    *copy* (a node that fetched it to read it and may evict it). Only
    keepers count towards the VM's replica target; the center's store
    (SPM_NODE_STORE) is a keeper that never dies and is durable on its
    own: a block in the store is never short of copies.
    @discuss
        spm_directory_t *d = spm_directory_new(2);      // two copies of each block
        spm_directory_node_up(d, 3, "tcp://n3:7701", key);
        spm_directory_add(d, sdb, version, bytes, sum, 3, SPM_DIR_KEEPER);
        size_t n = spm_directory_holders(d, sdb, version, nodes, 8);
        spm_directory_node_down(d, 3);    // its blocks may now be short of copies
        while (spm_directory_short_take(d, &sdb, &version)) ... order a copy
    The table is the truth for keepers (they change only by the center's
    own decisions and by node deaths) and a hint for copies (a node that
    evicted one since is found out when a fetch fails). Versions are
    forgotten when the IDU finds them garbage (spm_directory_forget).
    Not thread-safe: the center's loop owns it.
    @end
    =========================================================================
*/
#ifndef SPM_DIRECTORY_H_INCLUDED
#define SPM_DIRECTORY_H_INCLUDED

#include "spm/spm.h"

#include <stddef.h>
#include <stdint.h>

#define SPM_NODE_STORE UINT32_MAX /* the center's store, as a holder */

typedef struct spm_directory spm_directory_t;

enum { SPM_DIR_COPY = 0, SPM_DIR_KEEPER = 1 };

/*  Returns an empty directory that wants REPLICAS keepers of every block
    (at least 1), or NULL when out of memory. */
spm_directory_t *spm_directory_new(uint32_t replicas);

/*  Frees the directory and sets *SELF to NULL. */
void spm_directory_destroy(spm_directory_t **self_p);

/*  Keepers wanted per block. */
uint32_t spm_directory_replicas(const spm_directory_t *self);

/* ----------------------------------------------------------------- nodes */

/*  Node NODE's data agent serves at ENDPOINT with CurveZMQ server KEY (""
    for none); both copied. Returns 0 or SPM_ENOMEM. */
int spm_directory_node_up(spm_directory_t *self, uint32_t node, const char *endpoint,
                          const char *key);

/*  NODE is gone: it holds nothing from now on. Every block it kept that
    has fewer keepers than wanted now is queued as short
    (spm_directory_short_take); one that it alone held is lost. Returns
    how many blocks were lost. */
size_t spm_directory_node_down(spm_directory_t *self, uint32_t node);

/*  Whether NODE is up; its endpoint and key (owned by the directory, valid
    until it goes down) in *ENDPOINT and *KEY when it is. */
int spm_directory_node(const spm_directory_t *self, uint32_t node, const char **endpoint,
                       const char **key);

/*  Fills up to MAX node indexes that are up, in index order; returns how
    many are up. */
size_t spm_directory_nodes(const spm_directory_t *self, uint32_t *nodes, size_t max);

/* ---------------------------------------------------------------- blocks */

/*  What the directory knows of one version. */
typedef struct {
    uint64_t bytes;
    uint64_t checksum;
    uint32_t type;    /* its SDB type id (0: not recorded) */
    uint32_t keepers; /* keepers up now, the store included */
    uint32_t holders; /* all holders up now */
    int lost;         /* its last holder died */
} spm_dir_block_t;

/*  Records that NODE (or SPM_NODE_STORE) holds (ID, VERSION) of BYTES
    bytes with CHECKSUM, as a keeper or a copy (SPM_DIR_*). A copy never
    demotes a keeper. A node that is not up is ignored (it died while the
    message was on its way). Returns 0 or SPM_ENOMEM. */
int spm_directory_add(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint64_t bytes,
                      uint64_t checksum, uint32_t node, int kind);

/*  (ID, VERSION) of BYTES bytes with CHECKSUM is about to be placed on
    nodes (a client stages it): known, with no holder yet. Returns 0 or
    SPM_ENOMEM. */
int spm_directory_expect(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint64_t bytes,
                         uint64_t checksum);

/*  Records the SDB type id TYPE of (ID, VERSION), which copies of it are
    checked against. A no-op for a version the directory does not know. */
void spm_directory_set_type(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint32_t type);

/*  NODE no longer holds (ID, VERSION) (a copy it evicted, or one whose
    bytes were found corrupt). A keeper dropped this way leaves the block
    short, as a death does. */
void spm_directory_drop(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint32_t node);

/*  Fills *OUT for (ID, VERSION). Returns 0, or SPM_ENOTFOUND when the
    directory never heard of it. */
int spm_directory_block(const spm_directory_t *self, spm_sdb_t id, uint64_t version,
                        spm_dir_block_t *out);

/*  Fills up to MAX holders of (ID, VERSION) that are up, keepers first,
    starting each group at a rotating offset so that requests spread over
    the holders. Returns how many there are (may exceed MAX). */
size_t spm_directory_holders(spm_directory_t *self, spm_sdb_t id, uint64_t version, uint32_t *nodes,
                             size_t max);

enum { SPM_DIR_HELD_KEEPER = 1, SPM_DIR_HELD_COPY = 2 };

/*  Whether NODE holds (ID, VERSION) as a keeper (SPM_DIR_HELD_KEEPER), a
    copy (SPM_DIR_HELD_COPY), or not (0). */
int spm_directory_holds(const spm_directory_t *self, spm_sdb_t id, uint64_t version, uint32_t node);

/*  Bytes (ID, VERSION) would move to NODE: 0 when NODE holds it or the
    size is unknown. */
uint64_t spm_directory_cost(const spm_directory_t *self, spm_sdb_t id, uint64_t version,
                            uint32_t node);

/*  Called for every holder of a version being forgotten. */
typedef void (*spm_dir_holder_fn)(void *arg, uint32_t node, spm_sdb_t id, uint64_t version);

/*  Forgets (ID, VERSION) (garbage), calling FN for each of its holders
    first so that the caller can tell them. VERSION 0 forgets every
    version of ID. */
void spm_directory_forget(spm_directory_t *self, spm_sdb_t id, uint64_t version,
                          spm_dir_holder_fn fn, void *arg);

/*  Takes the next block that has fewer keepers up than wanted (but one at
    least) into *ID and *VERSION. Returns 1, or 0 when there is none. A
    block may be taken again after it was queued again. */
int spm_directory_short_take(spm_directory_t *self, spm_sdb_t *id, uint64_t *version);

/*  Queues (ID, VERSION) when it is short of keepers (a copy ordered for it
    failed, or it was placed on fewer nodes than wanted); a no-op when it
    is not. */
void spm_directory_short_again(spm_directory_t *self, spm_sdb_t id, uint64_t version);

/*  Counts over the whole table: versions, their bytes, versions with
    fewer keepers up than wanted, versions lost. */
typedef struct {
    uint64_t blocks, bytes, short_blocks, lost;
} spm_dir_stats_t;

void spm_directory_stats(const spm_directory_t *self, spm_dir_stats_t *out);

/*  Bytes and blocks NODE keeps now (by the directory's account). */
uint64_t spm_directory_node_bytes(const spm_directory_t *self, uint32_t node, uint64_t *blocks);

#endif
