/*  =========================================================================
    jobapi - the dashboard's jobs: the history and a page per job, answered
    on the HTTP server's thread

    @discuss
    `spm center --http` answers, besides what the loop publishes each tick:

        /api/jobs              the job history, newest first (?limit=N, at
                               most 5000; 500 by default)
        /api/job/N             job N's record: state, priority, owner, times,
                               progress sampled over time, time per opcode,
                               what befell it, its run report
        /api/job/N/trace       its Chrome trace (chrome://tracing, Perfetto)

    All three read the job records (vm/center/history.h) in LMDB read
    transactions of their own, on the server's thread: the center's loop
    does nothing per request and nothing per tick for them, and a running
    job's figures are those of its record, brought up to date once a
    second. A center without a journal keeps its records in memory only,
    where another thread may not read them: it answers 404 and says so.

    Traces: with --http the center records every job's SIs (at most
    SPM_JOBAPI_TRACE_EVENTS events each; a client's --trace has no bound)
    and, when a job ends, hands its trace here; the last SPM_JOBAPI_TRACES
    are kept in memory. A running job's trace, an older one, and any
    from before a restart are not served (the page says so).
    @end
    =========================================================================
*/
#ifndef SPM_JOBAPI_H_INCLUDED
#define SPM_JOBAPI_H_INCLUDED

#include "transport/http.h"
#include "transport/trace.h"
#include "vm/center/history.h"

#include <stdint.h>

#define SPM_JOBAPI_TRACE_EVENTS 100000 /* events of a job's trace kept for its page */
#define SPM_JOBAPI_TRACES 4            /* ended jobs whose trace is kept */

typedef struct spm_jobapi spm_jobapi_t;

/*  Serves the paths above on HTTP from history H (both must outlive the
    result: destroy the server first). Returns the API, or NULL with *RC
    set to SPM_ENOMEM. */
spm_jobapi_t *spm_jobapi_new(spm_http_t *http, spm_history_t *h, int *rc);

/*  Frees the kept traces and the API, sets *SELF_P to NULL. The server
    must be stopped already. Does nothing on NULL. */
void spm_jobapi_destroy(spm_jobapi_t **self_p);

/*  The loop hands over ended JOB's trace *T (of PROGRAM; its clocks
    mapped to the center's) and *T becomes NULL: kept, or freed. Never
    waits: when the server thread holds the list at that moment, the trace
    is dropped. */
void spm_jobapi_keep_trace(spm_jobapi_t *self, uint64_t job, const char *program, spm_trace_t **t);

#endif
