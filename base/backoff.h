/*  =========================================================================
    backoff - patience with a peer that is not up yet: when to ask again,
    when to say so, when to give up

    @discuss
    An agent started before its center, and a client told to wait for one
    (`--wait-center SECONDS`, the same option and the same meaning for
    both), say HELLO, then again after 1, 2, 4 ... s, at most every 30 s
    (a center that restarted in between hears the next one), say once on
    stderr, after a second without an answer, that they wait and for how
    long, and give up in one line when the time is over. Both go through
    this one pacing, so that they cannot come to behave differently:

        spm_backoff_t b;
        spm_backoff_start(&b, wait_s);        -- 0: as long as it takes
        send HELLO;
        while (no answer) {
            if (spm_backoff_over(&b)) return spm_backoff_fail(&b, endpoint);
            spm_backoff_say(&b, endpoint);    -- once, after a second
            if (spm_backoff_due(&b)) send HELLO again;
            wait for an answer, at most spm_backoff_poll_ms(&b);
        }
        spm_backoff_answered(&b, endpoint);   -- "answered", if it had said
    @end
    =========================================================================
*/
#ifndef SPM_BACKOFF_H_INCLUDED
#define SPM_BACKOFF_H_INCLUDED

#include <stdint.h>

typedef struct {
    long wait_s;       /* how long to wait in all; 0: as long as it takes */
    uint64_t start;    /* when the waiting began (spm_now_us) */
    uint64_t deadline; /* when it is over; 0: never */
    uint64_t next;     /* when to ask again */
    uint64_t pause;    /* the pause before the ask after next, doubling to 30 s */
    int said;          /* whether spm_backoff_say said it waits */
} spm_backoff_t;

/*  Starts waiting now, for WAIT_S seconds (0: as long as it takes); the
    first ask again is due a second from now. */
void spm_backoff_start(spm_backoff_t *b, long wait_s);

/*  1 when the time to wait is over, else 0. */
int spm_backoff_over(const spm_backoff_t *b);

/*  1 when it is time to ask again (and the next ask is set a pause
    later: 1, 2, 4 ... s, at most 30 s), else 0. */
int spm_backoff_due(spm_backoff_t *b);

/*  How long to wait for an answer before looking again: until the next
    ask, the end of the wait or 100 ms, whichever comes first. */
long spm_backoff_poll_ms(const spm_backoff_t *b);

/*  Once the waiting has lasted a second, says once, as a warning on
    stderr (base/log.h), that it waits for the center at ENDPOINT and how
    long it will. Does nothing before that and after the first time. */
void spm_backoff_say(spm_backoff_t *b, const char *endpoint);

/*  Says the center at ENDPOINT answered, when spm_backoff_say had said it
    waits (so that a log shows how the wait ended); WHAT (may be NULL) is
    added, e.g. "node 3 joined". */
void spm_backoff_answered(const spm_backoff_t *b, const char *endpoint, const char *what);

/*  Sets the error detail to "ENDPOINT: the center did not answer within
    N s (--wait-center)" and returns SPM_EUNREACH. */
int spm_backoff_fail(const spm_backoff_t *b, const char *endpoint);

#endif
