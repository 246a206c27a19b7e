/*  =========================================================================
    lograte - routine events logged as a counted summary, not a line each
    =========================================================================
*/
#include "base/lograte.h"
#include "base/clock.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#define INTERVAL_US ((uint64_t)SPM_LOG_RATE_S * 1000000)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards every rate and RATES */
static spm_log_rate_t *rates;                            /* every rate used so far */

/*  The summary of R's interval, if it counted events; the count starts
    again. Under LOCK. */
static void summary(spm_log_rate_t *r, uint64_t now)
{
    if (!r->count)
        return;
    uint64_t s = (now - r->since_us + 500000) / 1000000;
    spm_log(r->level, "%llu more in the last %llu s: %s (the last: %s)",
            (unsigned long long)r->count, (unsigned long long)(s ? s : 1), r->what, r->last);
    r->count = 0;
}

void spm_log_rated(spm_log_rate_t *r, const char *fmt, ...)
{
    if (!spm_log_enabled(r->level))
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    uint64_t now = spm_now_us();
    pthread_mutex_lock(&lock);
    if (!r->known) {
        r->known = 1;
        r->next = rates;
        rates = r;
    }
    if (r->since_us && now - r->since_us < INTERVAL_US) {
        r->count++;
        snprintf(r->last, sizeof r->last, "%s", msg);
    } else {
        summary(r, now);
        r->since_us = now;
        spm_log(r->level, "%s", msg);
    }
    pthread_mutex_unlock(&lock);
}

void spm_log_rate_tick(void)
{
    uint64_t now = spm_now_us();
    pthread_mutex_lock(&lock);
    for (spm_log_rate_t *r = rates; r; r = r->next)
        if (r->count && now - r->since_us >= INTERVAL_US) {
            summary(r, now);
            r->since_us = 0; /* the next event is logged in full */
        }
    pthread_mutex_unlock(&lock);
}
