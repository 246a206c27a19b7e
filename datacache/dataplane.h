/*  =========================================================================
    dataplane - the center's side of where blocks live

    @header
    The center is the control plane: blocks stay on the nodes that made or
    were given them, and the center only knows where they are. This module
    owns that knowledge (the directory, datacache/directory.h) and every
    decision about block bytes the center takes: which nodes a client
    stages a block on, what a committed output's holders are, where an IEU
    or a client fetches a block from, which blocks are garbage on which
    node, and which copies to order when a node dies so that every live
    block keeps its replicas. The center's own store holds a block only
    when no node can (a lone node's second copy), or when the VM runs in
    place on the center's host (the embedded VM), where it is every node's
    level 1.
    @discuss
    The center's loop calls in with what arrived (nodes joining and dying,
    commits, GET, PUT, STORE, PLACED, PUBLISH, DROP, garbage from the IDU)
    and once per turn (spm_dataplane_turn), which sends the drops and copy
    orders of the turn through the SEND callback. Not thread-safe: the
    center's loop owns it.
    @end
    =========================================================================
*/
#ifndef SPM_DATAPLANE_H_INCLUDED
#define SPM_DATAPLANE_H_INCLUDED

#include "datacache/directory.h"
#include "datacache/store.h"
#include "transport/wire.h"

typedef struct spm_dataplane spm_dataplane_t;

/*  Sends ENV to NODE's agent (DROP, COPY). Returns 0 or an SPM_E* code. */
typedef int (*spm_dp_send_fn)(void *arg, uint32_t node, Spm__Envelope *env);

/*  Returns a data plane over STORE (not owned) that keeps REPLICAS copies
    of every block, sending to agents through SEND with ARG; NULL when out
    of memory. */
spm_dataplane_t *spm_dataplane_new(spm_store_t *store, uint32_t replicas, spm_dp_send_fn send,
                                   void *arg);
void spm_dataplane_destroy(spm_dataplane_t **self_p);

/*  The directory (owned by the data plane), for the IDU's locality. */
spm_directory_t *spm_dataplane_directory(spm_dataplane_t *self);

/* ----------------------------------------------------------------- nodes */

/*  NODE's data agent serves at ENDPOINT with KEY. Returns 0 or SPM_ENOMEM. */
int spm_dataplane_node_up(spm_dataplane_t *self, uint32_t node, const char *endpoint,
                          const char *key);

/*  NODE died: it holds nothing from now on; copies of what it kept are
    ordered from the next turn on. */
void spm_dataplane_node_down(spm_dataplane_t *self, uint32_t node);

/*  Fills NODES (with PTRS pointing at them, for a NODES message) with up
    to MAX data agents that are up; the strings stay the directory's.
    Returns how many. */
size_t spm_dataplane_node_list(spm_dataplane_t *self, Spm__Node *nodes, Spm__Node **ptrs,
                               size_t max);

/*  NODE's agent reported its counters (HB). */
void spm_dataplane_node_report(spm_dataplane_t *self, uint32_t node, const Spm__Heartbeat *hb);

/* ------------------------------------------------------------- operands */

/*  Fills the HOLDERS (up to MAX), CHECKSUM and BYTES an IEU on node FOR
    needs to fetch (ID, VERSION) itself; returns how many holders (0: it
    asks the center, whose store may have it). */
size_t spm_dataplane_locate(spm_dataplane_t *self, spm_sdb_t id, uint64_t version,
                            uint32_t *holders, size_t max, uint64_t *checksum, uint64_t *bytes);

/*  Whether the store holds block (ID, VERSION), for a reader of it in
    place (Get.in_place): 1 with *TYPE, else 0. */
int spm_dataplane_in_store(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t *type);

/*  GET (ID, VERSION) from a peer on node FOR (SPM_NODE_STORE: a client):
    fills *R with the holders to fetch from (unless STORE_ONLY), else
    returns the block's bytes from the store in *DATA (malloc'd, the
    caller's) and *LEN. Returns 0, or SPM_ENOTFOUND with the detail set
    (unknown, or lost: every node that kept it died). R's strings stay the
    directory's until the next call; R->holders etc. point into the data
    plane's buffers. */
int spm_dataplane_get(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t requester,
                      int store_only, Spm__GetReply *r, void **data, size_t *len);

/* -------------------------------------------------------------- commits */

/*  The center's store batch for the outputs whose bytes came to it: opens
    it on the first put of a turn. Returns 0 or the store's failure (the
    whole batch then fails). */
int spm_dataplane_store_put(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                            const void *data, size_t len);

/*  Ends the turn's batch: 0 when it is durable (or there was none), else
    its failure, with the detail set to its reason (a put's own, when a put
    failed it: "DIR: disk full while writing (N KiB free)"). Sets *WROTE to whether the store
   changed since the last call (the batch, STOREs, garbage deleted), for the caller's syncs. */
int spm_dataplane_store_commit(spm_dataplane_t *self, int *wrote);

/*  A committed output (ID, VERSION) of TYPE, as META says (bytes, checksum,
    keepers), is applied: the directory records its keepers (and the store
    when its bytes came framed). */
void spm_dataplane_output(spm_dataplane_t *self, spm_sdb_t id, uint64_t version, uint32_t type,
                          const Spm__BlockMeta *meta);

/* ---------------------------------------------------------------- clients */

/*  PUT with PLACE: version 1 of new SDB ID (TYPE, BYTES, CHECKSUM) is about to
    be staged; fills R's targets (nodes to STORE it on, the first
    replicas() of them wanted, the rest standing in) and replica count.
    Returns 0 or SPM_ENOMEM. */
int spm_dataplane_place(spm_dataplane_t *self, spm_sdb_t id, uint32_t type, uint64_t bytes,
                        uint64_t checksum, Spm__PutReply *r);

/*  PLACED: the N HOLDERS keep version 1 of ID (fewer than the replicas
    wanted: the missing copies are ordered as for a dead node's blocks). */
void spm_dataplane_placed(spm_dataplane_t *self, spm_sdb_t id, const uint32_t *holders, size_t n);

/*  STORE to the center (a client with no node to stage on, or an agent's
    TO_STORE copy): checks and writes the block into the store at once.
    Returns 0 or an SPM_E* code with the detail set. */
int spm_dataplane_store(spm_dataplane_t *self, const Spm__Store *st, const void *data, size_t len,
                        int (*check)(uint32_t type, const void *data, size_t len));

/*  PUBLISH (FROM_AGENT: copies it keeps for the VM; else copies an IEU
    cached to read) and DROP (evictions; with the corrupt flag, a copy an
    IEU found corrupt on the node the ref names) from NODE. */
void spm_dataplane_publish(spm_dataplane_t *self, uint32_t node, int from_agent,
                           Spm__BlockRef *const *refs, size_t n);
void spm_dataplane_drop(spm_dataplane_t *self, uint32_t node, Spm__BlockRef *const *refs, size_t n);

/*  NODE, rejoining a center that restarted on the same store, keeps block
    REF (its size, checksum and type in REF). WANTED: a version the jobs
    know (the center rebuilds its directory from these reports), unless
    the directory knows that version with another checksum (a copy made
    before a crash that lost its commit); else the node is told to delete
    it with the turn's drops. */
void spm_dataplane_held(spm_dataplane_t *self, uint32_t node, const Spm__BlockRef *ref, int wanted);

/* ---------------------------------------------------------------- garbage */

/*  (ID, VERSION) is garbage (VERSION 0: every version of a discarded
    SDB): its holders are told to delete it with the turn's drops, the
    store deletes its copy. */
void spm_dataplane_garbage(spm_dataplane_t *self, spm_sdb_t id, uint64_t version);

/*  Once per loop turn at NOW_US: sends the turn's drops, orders copies of
    blocks short of replicas, gives up on copies not done in time. */
void spm_dataplane_turn(spm_dataplane_t *self, uint64_t now_us);

/* ------------------------------------------------------------------ stats */

typedef struct {
    uint64_t store_in, store_out; /* block bytes into and out of the center's store */
    uint64_t copies, copies_done; /* copies ordered after deaths, and done */
    uint64_t corrupt;             /* copies found corrupt by their readers */
    uint64_t dropped;             /* garbage versions the nodes were told to delete */
    uint64_t store_pending;       /* garbage the store failed to delete, kept to try again */
    spm_dir_stats_t dir;          /* the directory's counts */
} spm_dataplane_stats_t;

void spm_dataplane_stats(spm_dataplane_t *self, spm_dataplane_stats_t *out);

/*  What NODE's agent last reported and what it keeps by the directory;
    0 when NODE is unknown. */
typedef struct {
    uint64_t served, served_bytes, stored, stored_bytes, kept_bytes, cache_bytes;
    uint64_t kept_blocks; /* by the directory */
} spm_dp_node_stats_t;

int spm_dataplane_node_stats(spm_dataplane_t *self, uint32_t node, spm_dp_node_stats_t *out);

#endif
