/*  =========================================================================
    backoff - patience with a peer that is not up yet (base/backoff.h)
    =========================================================================
*/
#include "base/backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "spm/spm.h"

#define FIRST_PAUSE_US 1000000u /* the first ask again, a second after the first */
#define MAX_PAUSE_US                                                                               \
    30000000u                 /* asks are never further apart: a center that                       \
                                 came up hears from us within 30 s */
#define SAY_AFTER_US 1000000u /* a center that answers within this is not waited for */

void spm_backoff_start(spm_backoff_t *b, long wait_s)
{
    uint64_t now = spm_now_us();
    *b = (spm_backoff_t){.wait_s = wait_s,
                         .start = now,
                         .deadline = wait_s > 0 ? now + (uint64_t)wait_s * 1000000u : 0,
                         .next = now + FIRST_PAUSE_US,
                         .pause = FIRST_PAUSE_US};
}

int spm_backoff_over(const spm_backoff_t *b)
{
    return b->deadline && spm_now_us() >= b->deadline;
}

int spm_backoff_due(spm_backoff_t *b)
{
    uint64_t now = spm_now_us();
    if (now < b->next)
        return 0;
    b->pause = b->pause < MAX_PAUSE_US / 2 ? 2 * b->pause : MAX_PAUSE_US;
    b->next = now + b->pause;
    return 1;
}

long spm_backoff_poll_ms(const spm_backoff_t *b)
{
    uint64_t now = spm_now_us(), until = b->next;
    if (b->deadline && b->deadline < until)
        until = b->deadline;
    long ms = until > now ? (long)((until - now + 999) / 1000) : 0;
    return ms < 100 ? ms : 100;
}

void spm_backoff_say(spm_backoff_t *b, const char *endpoint)
{
    if (b->said || spm_now_us() - b->start < SAY_AFTER_US)
        return;
    b->said = 1;
    if (b->wait_s)
        spm_log_warn("waiting for the center at %s (up to %ld s)", endpoint, b->wait_s);
    else
        spm_log_warn("waiting for the center at %s (as long as it takes; "
                     "--wait-center SECONDS to give up)",
                     endpoint);
}

void spm_backoff_answered(const spm_backoff_t *b, const char *endpoint, const char *what)
{
    if (b->said)
        spm_log_warn("the center at %s answered%s%s", endpoint, what ? "; " : "", what ? what : "");
}

int spm_backoff_fail(const spm_backoff_t *b, const char *endpoint)
{
    return spm_error(SPM_EUNREACH, "%s: the center did not answer within %ld s (--wait-center)",
                     endpoint, b->wait_s);
}
