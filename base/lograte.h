/*  =========================================================================
    lograte - routine events logged as a counted summary, not a line each

    @header
    Some events are routine after a fault and come by the thousand: a
    node's copy of a version its job has gone past, a copy that found no
    holder in time, a block a full node would not keep. A line each buried
    the one line that mattered (issue 39 saw 2 million lines in 4 minutes
    from one agent). A rate (spm_log_rate_t, one per kind of event, a static
    of the code that logs it) logs the first event of an interval in full
    and counts the others; once the interval is over, one line says how
    many more there were and shows the last of them:

        warning: node 0: SDB 7 has no version 3
        warning: 4832 more in the last 10 s: a node's copy the store did not want (the last: node 1:
   ...)

    The summary comes with the next event, or from spm_log_rate_tick, which
    every process's loop calls, so that it is not held back for good when
    the events stop.
    @discuss
        static spm_log_rate_t refused = SPM_LOG_RATE(SPM_LOG_WARN, "a block the node would not
   keep"); spm_log_rated(&refused, "refused to keep a block: %s", spm_error_detail());
    @end
    =========================================================================
*/
#ifndef SPM_LOGRATE_H_INCLUDED
#define SPM_LOGRATE_H_INCLUDED

#include "base/log.h"

#include <stdint.h>

#define SPM_LOG_RATE_S 10 /* seconds an interval lasts */

typedef struct spm_log_rate {
    spm_log_level_t level;     /* the level of its lines */
    const char *what;          /* what its events are, for the summary (static) */
    uint64_t since_us;         /* when the interval began (0: no event yet) */
    uint64_t count;            /* events of the interval not logged */
    char last[512];            /* the last of them, as it would have been logged */
    struct spm_log_rate *next; /* the rates spm_log_rate_tick looks at */
    int known;                 /* 1 once in that list */
} spm_log_rate_t;

/*  A rate for events of LEVEL described by WHAT (a static string). */
#define SPM_LOG_RATE(level, what)                                                                  \
    {                                                                                              \
        (level), (what), 0, 0, "", NULL, 0                                                         \
    }

/*  Logs the event FMT ... at R's level when it is the first of an
    interval (after the summary of the one before, if it counted any),
    else counts it. Thread-safe. Nothing is formatted when R's level is
    not logged. */
void spm_log_rated(spm_log_rate_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*  Says the summary of every interval that is over and counted events.
    Cheap (a lock and a few comparisons): call it from a process's loop. */
void spm_log_rate_tick(void);

#endif
