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

#define SPM_STATUS_FAILURES 8

/*  The center's own counters that the status shows. */
typedef struct {
    uint64_t uptime_us;
    uint64_t refused;                        /* connections refused by the allow-list */
    uint64_t dropped;                        /* malformed or unexpected messages dropped */
    uint64_t gc_versions;                    /* block versions deleted as garbage */
    uint64_t discarded;                      /* blocks deleted on clients' DISCARD */
    uint64_t store_blocks;                   /* blocks in the store now */
    uint64_t store_bytes;                    /* bytes of the pages holding them */
    uint32_t agents;                         /* agents that joined */
    uint64_t center_in, center_out;          /* block bytes through the center's socket */
    char failures[SPM_STATUS_FAILURES][160]; /* ring of recent failures */
    uint64_t nfailures;                      /* failures recorded in all */
} spm_status_t;

/*  Records a failure line (printf-style) in S's ring. */
void spm_status_failure(spm_status_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*  Builds the status as JSON and as text (both malloc'd, caller frees),
    with where the blocks are from DP. Returns 0 or SPM_ENOMEM. */
int spm_status_build(spm_idu_t *idu, spm_dataplane_t *dp, const spm_status_t *s, char **json,
                     char **text);

#endif
