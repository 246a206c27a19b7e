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
    SPM_JOBAPI_TRACE_EVENTS events each; a client's --trace has no bound).
    A running job's trace lives in the loop: a request for it asks the
    loop for a copy (spm_jobapi_turn, once a tick), which it makes at most
    once a second; a copy less than a second old is served again, and a
    request that gets none within SPM_JOBAPI_TRACE_WAIT_S answers 503. The
    server thread waits meanwhile (one thread serves all requests: other
    requests wait as long, a tick, 0.1 s, as a rule). When a job ends the
    loop hands its whole trace here; the last SPM_JOBAPI_TRACES are kept
    in memory. An older one, and any of a job that ended before a restart,
    are not served (the page says so). A job resumed after a restart is
    traced from the restart; its trace says so (otherData.note).
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
#define SPM_JOBAPI_TRACE_WAIT_S 3      /* a request waits for a running job's trace */
#define SPM_JOBAPI_COPY_US 1000000     /* the loop copies a running job's trace at most so often */

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

/*  Called by the loop for a copy of running JOB's trace, its clocks
    mapped to the center's, with its program's name written into PROGRAM
    (SIZE bytes). Returns the copy (the API owns it from here), or NULL
    when JOB is not running with a trace. */
typedef spm_trace_t *(spm_jobapi_copy_fn)(void *arg, uint64_t job, char *program, size_t size);

/*  The loop's turn, at NOW_US (spm_now_us): when the server thread waits
    for a running job's trace and no copy was made in the last
    SPM_JOBAPI_COPY_US, makes one with COPY(ARG, ...) and hands it over.
    Never waits for the lock: when the server thread holds it, the copy
    comes a turn later. */
void spm_jobapi_turn(spm_jobapi_t *self, uint64_t now_us, spm_jobapi_copy_fn *copy, void *arg);

#endif
