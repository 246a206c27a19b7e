/*  =========================================================================
    flight - the loop that moves a session's puts and gets in flight on

    One poll of the center's connection and the nodes' (datacache/
    blockclient.h) hands each answer to stage.c or results.c; a center
    that restarted is joined again, and one that stays silent ends them.
    =========================================================================
*/
#include "vm/client/session_int.h"

#include "base/clock.h"

/*  Whether a put or get waits for the center's answer. */
static int waits_for_center(const spm_session_t *s)
{
    for (size_t i = 0; i < s->nputs; i++)
        if (s->puts[i]->state != PUT_KEEPING)
            return 1;
    for (size_t i = 0; i < s->ngets; i++)
        if (!s->gets[i]->done)
            return 1;
    return 0;
}

/*  The center restarted and forgot this session: joins it again and asks
    again for the blocks it had not answered for. Puts it had not answered
    for fail (their ids are lost with the request): staging is redone by
    running the command again. */
static int rejoin(spm_session_t *s)
{
    int rc = spm_client_hello(s);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < s->nputs;) {
        if (s->puts[i]->state != PUT_KEEPING)
            spm_client_put_failed(
                s, s->puts[i], SPM_EUNREACH,
                "the center restarted while this block was staged; run the command again");
        else
            i++;
    }
    for (size_t i = 0; i < s->ngets; i++) {
        if (!s->gets[i]->done && (rc = spm_client_send_get(s, s->gets[i])) != 0)
            return rc;
    }
    s->last_heard = spm_now_us();
    return 0;
}

/*  Moves the puts and gets in flight on: waits up to 100 ms for answers
    from the center or from nodes and handles them. Returns 0, or the
    failure that ends them all (the center silent for the timeout, dead,
    or Ctrl-C). */
int spm_client_progress(spm_session_t *s)
{
    if (spm_session_interrupted() && !s->closing)
        return spm_error(SPM_ECANCELED, "interrupted");
    int rc = spm_client_alive(s);
    if (rc != 0)
        return rc;
    zmq_pollitem_t items[1 + 64] = {{s->dealer, 0, ZMQ_POLLIN, 0}};
    int n = 1 + spm_blockclient_items(s->bc, items + 1, 64);
    zmq_poll(items, n, 100);
    spm_blockclient_process(s->bc);
    spm_blockclient_expire(s->bc, spm_now_us());
    spm_msg_t m;
    int r, restarted = 0;
    while ((r = spm_wire_recv(s->dealer, 0, 1, &m, NULL)) > 0) {
        if (r != 1)
            continue;
        s->last_heard = spm_now_us();
        switch (m.env->body_case) {
        case SPM__ENVELOPE__BODY_ERROR:
            restarted |= m.env->error->status == SPM_ESTRANGER;
            break;
        case SPM__ENVELOPE__BODY_PUT_REPLY:
            spm_client_on_put_reply(s, m.env->put_reply);
            break;
        case SPM__ENVELOPE__BODY_STORE_REPLY:
            spm_client_on_store_reply(s, m.env->store_reply);
            break;
        case SPM__ENVELOPE__BODY_GET_REPLY:
            spm_client_on_get_reply(s, &m);
            break;
        default: /* stray progress and the like */
            break;
        }
        spm_msg_close(&m);
    }
    if (restarted && (rc = rejoin(s)) != 0)
        return rc;
    uint64_t now = spm_now_us();
    if (waits_for_center(s) && now - s->last_heard > 1000000 && now - s->last_ping > 1000000) {
        /* Quiet for a second: a live center answers this at once, and a
           restarted one says it does not know us. */
        Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
        env.heartbeat = &hb;
        spm_client_send(s, &env, NULL, 0);
        s->last_ping = now;
    }
    if (waits_for_center(s) && spm_now_us() - s->last_heard > (uint64_t)s->o.timeout_ms * 1000) {
        s->silent = 1;
        return spm_error(SPM_EUNREACH, "%s: the center did not answer within %ld ms", s->endpoint,
                         s->o.timeout_ms);
    }
    return 0;
}

/*  Forgets every put and get in flight (no answer will come). */
void spm_client_abandon(spm_session_t *s)
{
    while (s->nputs)
        spm_client_put_done(s, s->puts[0]);
    while (s->ngets)
        spm_client_get_done(s, s->gets[0]);
}
