/*  =========================================================================
    status - what `spm status` shows: nodes, IEUs, jobs, caches, failures

    @discuss
    The center builds the status (JSON for scripts, text for people) from
    the IDU and its own counters; `spm status` fetches and prints it, once
    or every second with --watch. Recent failures are kept in a small ring
    that the center fills as they happen.
    @end
    =========================================================================
*/
#ifndef SPM_STATUS_H_INCLUDED
#define SPM_STATUS_H_INCLUDED

#include <stdint.h>

#include "datacache/dataplane.h"
#include "idu/idu.h"
#include "vm/center/history.h"

#define SPM_STATUS_FAILURES 8
#define SPM_STATUS_NAME 64 /* bytes of a node's name kept, with its NUL */

/*  What a node's agent last said of its spm processes, and what its IEUs
    fetched: the dashboard's table of nodes. */
typedef struct {
    uint64_t cpu_us;        /* CPU time of the agent and its IEUs so far (Heartbeat.cpu_us) */
    uint64_t rss_bytes;     /* their resident memory (Heartbeat.rss_bytes) */
    uint32_t processes;     /* how many of them were read */
    double cpu_pct;         /* their CPU use between the last two heartbeats, % of one core */
    uint64_t heard_us;      /* monotonic us of its last heartbeat (0: none yet) */
    uint64_t fetched_bytes; /* operand bytes its IEUs fetched, from other nodes and the store */
} spm_status_node_t;

/*  The center's own counters that the status shows. */
typedef struct {
    uint64_t uptime_us;
    uint64_t now_us;                     /* monotonic us the status is built at */
    uint64_t refused;                    /* connections refused by the allow-list */
    uint64_t dropped;                    /* malformed or unexpected messages dropped */
    uint64_t gc_versions;                /* block versions deleted as garbage */
    uint64_t discarded;                  /* blocks deleted on clients' DISCARD */
    uint64_t store_blocks;               /* blocks in the store now */
    uint64_t store_bytes;                /* bytes of the pages holding them */
    uint32_t agents;                     /* agents that joined */
    uint64_t center_in, center_out;      /* block bytes through the center's socket */
    char (*node_names)[SPM_STATUS_NAME]; /* node index -> its name, nnode_names of them */
    size_t nnode_names;
    spm_status_node_t *node_use; /* node index -> its processes, nnode_use of them */
    size_t nnode_use;
    uint8_t *ieu_left; /* IEU index -> 1: it drained (not a death) */
    size_t nieu_left;
    char failures[SPM_STATUS_FAILURES][160]; /* ring of recent failures */
    uint64_t nfailures;                      /* failures recorded in all */
    spm_history_t *history;                  /* the jobs' records: the last ended are listed */
} spm_status_t;

/*  Records NAME (escaped, cut to SPM_STATUS_NAME - 1 bytes) as the name of
    NODE. Returns 0 or SPM_ENOMEM. */
int spm_status_node_name(spm_status_t *s, uint32_t node, const char *name);

/*  Records heartbeat HB of NODE's agent, heard at NOW_US (monotonic):
    its processes' CPU time and memory, and their CPU use since the one
    before. Returns 0 or SPM_ENOMEM. */
int spm_status_node_heard(spm_status_t *s, uint32_t node, const Spm__Heartbeat *hb,
                          uint64_t now_us);

/*  Adds BYTES to what NODE's IEUs fetched. Returns 0 or SPM_ENOMEM. */
int spm_status_node_fetched(spm_status_t *s, uint32_t node, uint64_t bytes);

/*  Records that IEU INDEX drained: the status shows it as "left", not
    dead. Returns 0 or SPM_ENOMEM. */
int spm_status_ieu_left(spm_status_t *s, uint32_t index);

/*  The name of NODE, or "" when none is known. */
const char *spm_status_name_of(const spm_status_t *s, uint32_t node);

/*  Frees what S holds (the names and the IEUs that left). */
void spm_status_free(spm_status_t *s);

/*  Records a failure line (printf-style) in S's ring. */
void spm_status_failure(spm_status_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*  Builds the status as JSON and as text (both malloc'd, caller frees),
    with where the blocks are from DP. Returns 0 or SPM_ENOMEM. */
int spm_status_build(spm_idu_t *idu, spm_dataplane_t *dp, const spm_status_t *s, char **json,
                     char **text);

#endif
