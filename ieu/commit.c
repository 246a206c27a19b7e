/*  =========================================================================
    commit - the SIs done, committed to the center in batches

    The main thread takes what the workers finished, sends an SI whose
    operand was evicted before it ran back to be localized, has the
    outputs of the others kept (keep.c), and commits the SIs whose outputs
    are kept in one COMMIT: where each output lives, its size and checksum,
    and the bytes of those that go to the center's store. Results wait a
    little to share a COMMIT while nothing can be waiting for them.
    =========================================================================
*/
#include "ieu/ieu_int.h"
#include "base/checksum.h"
#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*  Takes the SIs the workers finished: an SI whose operand was evicted
    between localizing and running is localized again (a few times), not
    failed; the others have their outputs kept, or go straight to the next
    COMMIT (failed SIs, and outputs written into the center's store on its
    host). */
void spm_ieu_collect_done(ieu_t *ieu)
{
    uint64_t junk;
    if (read(ieu->efd, &junk, sizeof junk) < 0 && errno != EAGAIN)
        spm_log_debug("eventfd read failed");
    pthread_mutex_lock(&ieu->lock);
    task_t *all = ieu->done.head;
    ieu->done.head = ieu->done.tail = NULL;
    pthread_mutex_unlock(&ieu->lock);
    for (task_t *t = all, *next; t; t = next) {
        next = t->next;
        if (t->missing_operand || t->status == SPM_ESTORE)
            spm_ieu_check_cache(ieu); /* a corrupt cache is not an SI's failure */
        if (t->missing_operand && t->relocalized < MAX_RELOCALIZE) {
            t->missing_operand = 0;
            t->relocalized++;
            free(t->cops);
            t->cops = NULL;
            spm_ieu_localize(ieu, t);
            continue;
        }
        if (t->missing_operand && !t->status) {
            t->status = SPM_ESTORE;
            t->error = strdup("operands keep leaving the node cache: budget too small?");
        }
        if (t->status == 0) {
            ieu->exec_ema_us = ieu->exec_ema_us > 0
                                   ? 0.8 * ieu->exec_ema_us + 0.2 * (double)t->exec_us
                                   : (double)t->exec_us + 1.0;
        }
        int outputs = 0;
        for (size_t i = 0; t->status == 0 && i < t->nops; i++)
            outputs |= t->ops[i].mode != SPM_R;
        if (outputs && !ieu->store)
            spm_ieu_keep_outputs(ieu, t);
        else
            spm_ieu_kept_all(ieu, t);
    }
}

void spm_ieu_check_cache(ieu_t *ieu)
{
    char why[512];
    if (!ieu->cache || !spm_nodecache_broken(ieu->cache, why, sizeof why))
        return;
    /* One line at debug: the agent says it to the operator, once a node. */
    spm_log_debug("the node cache is out of service (%s); this IEU ends", why);
    _exit(SPM_NODECACHE_EXIT);
}

/*  Fills result R for T; its outputs' metadata points into T. */
static void fill_result(ieu_t *ieu, task_t *t, Spm__Result *r, int first)
{
    spm__result__init(r);
    r->si = t->id;
    r->attempt = t->attempt;
    r->status = t->status;
    r->error = t->error ? t->error : "";
    r->wait_us = t->wait_us;
    r->exec_us = t->exec_us;
    r->localize_us = t->local_us > t->recv_us ? t->local_us - t->recv_us : 0;
    r->reply.data = t->reply;
    r->reply.len = t->reply_len;
    r->l1_hits = t->l1_hits;
    r->l2_hits = t->l2_hits;
    r->store_reads = t->store_reads;
    r->bytes_l2 = t->bytes_l2;
    r->bytes_store = t->bytes_store;
    r->bytes_in = t->bytes_l2 + t->bytes_store;
    r->bytes_pushed = t->bytes_pushed;
    r->evictions = first ? ieu->evictions : 0;
    r->corrupt = first ? ieu->corrupt : 0;
    r->t_recv = t->recv_us;
    r->t_local = t->local_us;
    r->t_start = t->t_start;
    r->t_end = t->t_start + t->exec_us;
}

/*  Whether the kept results should go now (NOW: spm_now_us()). They wait,
    to share one COMMIT (and the center's one wake-up, and the next ISSUE)
    with the results that follow, only while nothing can be waiting for
    them: the center had a batch's worth (AHEAD_MAX) of other SIs ready at
    its last ISSUE, this IEU still has more SIs in hand than slots (it
    needs nothing yet), fewer than COMMIT_BATCH wait, with outputs of less
    than HOLD_BYTES, the oldest for less than HOLD_US, and no drain is under
    way. A lone SI, or the last ones of a job or a stage, go at once: the
    center deals the last SIs by what each IEU still holds (spm_idu_pump),
    and results held back would make it count them as work still to do. */
static int commit_due(const ieu_t *ieu, uint64_t now)
{
    if (!ieu->nkept)
        return 0;
    return ieu->draining || ieu->backlog < AHEAD_MAX || ieu->held - ieu->nkept <= ieu->slots ||
           ieu->nkept >= COMMIT_BATCH || ieu->kept_bytes >= HOLD_BYTES ||
           now - ieu->kept_since >= HOLD_US;
}

/*  Milliseconds until the kept results are due (for the poll), or -1. */
long spm_ieu_commit_wait_ms(const ieu_t *ieu, uint64_t now)
{
    if (!ieu->nkept)
        return -1;
    uint64_t due = ieu->kept_since + HOLD_US;
    return due <= now ? 0 : (long)((due - now + 999) / 1000);
}

/*  Sends every SI whose outputs are kept in one COMMIT: where each output
    lives, plus the bytes of those that go to the center's store. On the
    center's host the outputs are written into its store first and the
    COMMIT carries nothing but results. */
void spm_ieu_send_commit(ieu_t *ieu)
{
    task_t *list = ieu->kept.head;
    if (!list || !commit_due(ieu, spm_now_us()))
        return;
    ieu->kept.head = ieu->kept.tail = NULL;
    ieu->nkept = 0;
    ieu->kept_bytes = 0;
    size_t n = 0, nouts = 0;
    for (task_t *t = list; t; t = t->next) {
        n++;
        for (size_t i = 0; t->status == 0 && i < t->nops; i++)
            nouts += t->ops[i].mode != SPM_R;
    }
    int stored = ieu->store && spm_ieu_store_outputs(ieu, list) == 0;
    Spm__Result *res = calloc(n, sizeof *res);
    Spm__Result **resp = calloc(n, sizeof *resp);
    Spm__BlockMeta *metas = calloc(nouts ? nouts : 1, sizeof *metas);
    Spm__BlockMeta **pmetas = calloc(nouts ? nouts : 1, sizeof *pmetas);
    spm_frame_t *frames = calloc(nouts ? nouts : 1, sizeof *frames);
    if (!res || !resp || !metas || !pmetas || !frames)
        goto done; /* leases bring these SIs back */
    size_t k = 0, f = 0, b = 0;
    for (task_t *t = list; t; t = t->next, k++) {
        Spm__Result *r = &res[k];
        fill_result(ieu, t, r, k == 0);
        resp[k] = r;
        if (t->status != 0)
            continue;
        if (stored) { /* the center checks that many are in its store */
            for (size_t i = 0; i < t->nops; i++)
                r->outputs += t->ops[i].mode != SPM_R;
            continue;
        }
        r->blocks = &pmetas[b];
        for (size_t i = 0, o = 0; i < t->nops; i++) {
            if (t->ops[i].mode == SPM_R)
                continue;
            Spm__BlockMeta *m = &metas[b];
            spm__block_meta__init(m);
            pmetas[b++] = m;
            r->n_blocks++;
            if (t->outs) { /* kept on nodes */
                out_t *out = &t->outs[o++];
                m->bytes = spm_blockbuf_len(out->buf);
                m->checksum = out->checksum;
                m->holders = out->holders;
                m->n_holders = out->nholders;
                m->framed = out->framed;
                if (out->framed)
                    frames[f++] = spm_blockbuf_frame(out->buf);
            } else { /* the center's store on this host refused them: send them */
                spm_si_operand_t *c = &t->cops[i];
                m->bytes = c->out_len;
                m->checksum = spm_checksum(c->out, c->out_len);
                m->framed = 1;
                frames[f++] = (spm_frame_t){c->out, c->out_len, spm_wire_free, NULL};
                c->out = NULL;
            }
            r->outputs += m->framed;
        }
    }
    ieu->evictions = ieu->corrupt = 0;
    for (task_t *t = list; t; t = t->next)
        ieu->held--;
    Spm__Commit cm = SPM__COMMIT__INIT;
    cm.n_results = n;
    cm.results = resp;
    cm.credits = spm_ieu_wanted(ieu); /* the next PULL rides on the COMMIT */
    cm.sent_us = spm_now_us();
    cm.uncached = ieu->store != NULL;
    cm.stored = stored;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_COMMIT;
    env.commit = &cm;
    if (spm_ieu_send(ieu, &env, frames, f) == 0)
        ieu->requested += cm.credits;
done:;
    uint64_t sent = 0;
    uint32_t sent_sis = 0;
    for (task_t *t = list, *next; t; t = next) {
        next = t->next;
        sent += t->out_bytes;
        sent_sis += t->out_bytes > 0;
        spm_ieu_task_free(t);
    }
    if (sent) {
        pthread_mutex_lock(&ieu->lock);
        ieu->unsent -= sent;
        ieu->unsent_sis -= sent_sis;
        pthread_cond_broadcast(&ieu->cond);
        pthread_mutex_unlock(&ieu->lock);
    }
    free(res);
    free(resp);
    free(metas);
    free(pmetas);
    free(frames);
}
