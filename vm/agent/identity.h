/*  =========================================================================
    identity - a node's identity, kept in its cache directory

    @discuss
    An agent restarted on the same cache directory is the same node: the
    center gives an agent whose HELLO carries a known identity the node
    index that identity had. The identity is 16 random bytes in
    CACHE-DIR/node.id (32 hex digits and a newline), made on the first
    start and read at every later one; the node cache's own files are
    emptied at start, this one is not.
    @end
    =========================================================================
*/
#ifndef SPM_AGENT_IDENTITY_H_INCLUDED
#define SPM_AGENT_IDENTITY_H_INCLUDED

#include <stdint.h>

/*  Reads the identity kept in DIR/node.id into ID, or makes one and keeps
    it there (written to a temporary file and renamed: a crash leaves the
    old file or the new, never half of one). Returns 0, or SPM_EIO with
    the detail naming the file and the reason (a file that holds something
    else than an identity is refused, not replaced). With SYNC the new
    file is synced to disk before the rename, so that the node keeps its
    identity across a crash of the machine; without it (a cache directory
    thrown away with its agent, an embedded VM's) it is not: that fsync
    was the longest wait of an embedded VM's start (about 20 ms, more on a
    busy disk). */
int spm_agent_identity(const char *dir, uint8_t id[16], int sync);

#endif
