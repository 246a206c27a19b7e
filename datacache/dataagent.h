/*  =========================================================================
    dataagent - a node's blocks, served to and taken from the rest of the
    VM

    @discuss
    The agent of every node runs one, on its own ROUTER socket (the node's
    data endpoint). It answers:
    - FETCH (sdb, version) with the block straight from the node cache's
      memory map, as a zero-copy frame. The LMDB read transaction that
      keeps the bytes valid is shared by the replies of one batch and ended,
      on the agent's thread, once ZeroMQ has released all of them;
    - STORE: a block this node is to keep for the VM (an IEU's replica, a
      client's staged input). It is checked (the type's validate, the
      checksum) and kept in the node cache, where LRU never evicts it, then
      acknowledged; when the sender wants more keepers, it is first passed
      on to the nodes the STORE names (a chain, so the sender's link
      carries it once), and the answer lists every node that keeps it.
    On the agent's connection to the center it also carries out DROP (the
    center found blocks garbage) and COPY (a block fell short of its
    replicas when a node died: fetch it from a holder and keep it, or send
    the copy this node keeps to the center's store).
    @end
    =========================================================================
*/
#ifndef SPM_DATAAGENT_H_INCLUDED
#define SPM_DATAAGENT_H_INCLUDED

#include "datacache/blockclient.h"
#include "datacache/nodecache.h"
#include "transport/wire.h"

typedef struct spm_dataagent spm_dataagent_t;

/*  Checks that LEN bytes at DATA are a well-formed block of TYPE (a type
    id); returns 0 or SPM_EFORMAT (also for an unknown type). */
typedef int (*spm_block_check_fn)(uint32_t type, const void *data, size_t len);

/*  Serves the node cache CACHE on ROUTER, checking blocks it is asked to
    keep with CHECK (none of them owned). NULL when out of memory. */
spm_dataagent_t *spm_dataagent_new(void *router, spm_nodecache_t *cache, spm_block_check_fn check);

/*  Lets the agent pass blocks on (a STORE that wants more than one
    keeper) with BC (not owned), as node NODE. Without it such a STORE is
    kept here alone. */
void spm_dataagent_forwarding(spm_dataagent_t *self, spm_blockclient_t *bc, uint32_t node);

/*  Answers the FETCHes and STOREs waiting on the socket (a bounded batch)
    and ends the read transactions ZeroMQ no longer needs. Call whenever
    the socket is readable, and now and then. */
void spm_dataagent_serve(spm_dataagent_t *self);

/*  DROP from the center: deletes the N blocks REFS (version 0: every
    version of the SDB) from the node cache, kept or not. Returns how many
    versions were found. */
size_t spm_dataagent_drop(spm_dataagent_t *self, Spm__BlockRef *const *refs, size_t n);

/*  COPY from the center, carried out with BC (fetches) and CENTER (the
    agent's DEALER to the center, for the PUBLISH that reports the new
    copy, or the STORE of a TO_STORE copy). Returns at once; the fetch
    ends in a later spm_blockclient_process. A copy that fails is logged
    and left: the center orders it again elsewhere. */
void spm_dataagent_copy(spm_dataagent_t *self, spm_blockclient_t *bc, void *center,
                        const Spm__Copy *c);

/*  Counters since the agent started: blocks served and their bytes,
    blocks taken (STORE and COPY) and their bytes; STOREs refused and the
    block bytes they brought for nothing; offers (a STORE with OFFER: no
    block, room asked for) and those refused as full. */
typedef struct {
    uint64_t served, served_bytes, stored, stored_bytes, refused;
    uint64_t refused_bytes;
    uint64_t offers, offers_refused;
} spm_dataagent_stats_t;

void spm_dataagent_stats(const spm_dataagent_t *self, spm_dataagent_stats_t *out);

/*  Ends the read transactions this agent lent to frames, waiting up to
    WAIT_MS for ZeroMQ to send those still out, so that the cache they read
    can be closed (a cache out of service, made again by the agent).
    Returns 0 when none is left, or SPM_ETIMEOUT when frames still point
    into the cache's map after WAIT_MS: the caller must then leave that
    cache open (its transactions are forgotten here, not ended). */
int spm_dataagent_let_go(spm_dataagent_t *self, int wait_ms);

/*  Serves CACHE (not owned) from now on, instead of the cache it served
    (after spm_dataagent_let_go). */
void spm_dataagent_use(spm_dataagent_t *self, spm_nodecache_t *cache);

/*  Frees the agent. Call after the socket is closed and its context
    terminated (ZeroMQ has then released every frame). */
void spm_dataagent_destroy(spm_dataagent_t **self_p);

#endif
