/*  =========================================================================
    dataagent - serves a node's cached blocks to the IEUs of other nodes

    @discuss
    The agent of every node runs one, on its own ROUTER socket: a FETCH
    (sdb, version) is answered with the block straight from the node
    cache's memory map, as a zero-copy frame. The LMDB read transaction
    that keeps the bytes valid is shared by the replies of one batch and
    ended, on the agent's thread, once ZeroMQ has released all of them.
    @end
    =========================================================================
*/
#ifndef SPM_DATAAGENT_H_INCLUDED
#define SPM_DATAAGENT_H_INCLUDED

#include "datacache/nodecache.h"

typedef struct spm_dataagent spm_dataagent_t;

/*  Serves FETCHes arriving on ROUTER from CACHE (neither owned). NULL when
    out of memory. */
spm_dataagent_t *spm_dataagent_new(void *router, spm_nodecache_t *cache);

/*  Answers the FETCHes waiting on the socket (a bounded batch) and ends the
    read transactions ZeroMQ no longer needs. Call whenever the socket is
    readable, and now and then. */
void spm_dataagent_serve(spm_dataagent_t *self);

/*  Blocks served so far, and bytes. */
uint64_t spm_dataagent_served(const spm_dataagent_t *self, uint64_t *bytes);

/*  Frees the agent. Call after the socket is closed and its context
    terminated (ZeroMQ has then released every frame). */
void spm_dataagent_destroy(spm_dataagent_t **self);

#endif
