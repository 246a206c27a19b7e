/*  =========================================================================
    pull - work asked for with credits, and the SIs that come

    The IEU holds slots + ahead SIs: those running, and those whose
    operands load meanwhile. It asks the center for credits to make up
    the difference (PULL, or with a COMMIT), and reads the ISSUE that
    answers into tasks, each of which starts localizing at once.
    =========================================================================
*/
#include "ieu/ieu_int.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"

#include <stdlib.h>
#include <string.h>

/*  SIs to hold ahead of the running ones: --prefetch, or more while SIs
    are short, enough to keep the slots busy for AHEAD_US. A short SI ends
    before the center could answer for the next one, so with one SI ahead
    the slots would wait on every round trip; a long one keeps its slot
    busy, and holding more would only take work from other IEUs. */
static uint32_t ahead(const ieu_t *ieu)
{
    if (ieu->prefetch == 0 || ieu->exec_ema_us <= 0)
        return ieu->prefetch;
    double cover = (ieu->backlog ? AHEAD_BATCH_US : AHEAD_US) * ieu->slots / ieu->exec_ema_us;
    if (ieu->backlog && cover > ieu->backlog / 2.0)
        cover = ieu->backlog / 2.0; /* near a stage's end: leave the last SIs to others */
    if (cover <= ieu->prefetch)
        return ieu->prefetch;
    return cover >= AHEAD_MAX ? AHEAD_MAX : (uint32_t)cover;
}

/*  Credits to ask for now: enough to hold slots + ahead() SIs. */
uint32_t spm_ieu_wanted(const ieu_t *ieu)
{
    uint32_t want = ieu->slots + ahead(ieu);
    return ieu->held + ieu->requested >= want ? 0 : want - ieu->held - ieu->requested;
}

void spm_ieu_pull(ieu_t *ieu)
{
    uint32_t credits = spm_ieu_wanted(ieu);
    if (!credits)
        return;
    Spm__Pull p = SPM__PULL__INIT;
    p.credits = credits;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PULL;
    env.pull = &p;
    if (spm_ieu_send(ieu, &env, NULL, 0) == 0)
        ieu->requested += p.credits;
}

void spm_ieu_on_issue(ieu_t *ieu, Spm__Issue *is)
{
    uint64_t now = spm_now_us();
    ieu->backlog = is->backlog;
    for (size_t k = 0; k < is->n_sis; k++) {
        Spm__Si *s = is->sis[k];
        task_t *t = calloc(1, sizeof *t);
        if (!t)
            continue;
        ieu->held++;
        if (ieu->requested)
            ieu->requested--;
        t->id = s->id;
        t->attempt = s->attempt;
        t->recv_us = now;
        t->opcode = s->opcode;
        t->op = spm_opcode_by_id(s->opcode);
        plugin_t *pl = s->plugin ? spm_ieu_plugin_of(ieu, s->plugin->sdb) : NULL;
        if (s->plugin && !pl) {
            spm_ieu_fail_task(ieu, t, SPM_ENOMEM, "out of memory");
            continue;
        }
        t->plugin = s->plugin ? s->plugin->sdb : 0;
        if (pl && !pl->loaded && s->plugin->checksum) {
            /* The same bytes under another SDB (put again by a later run) */
            char scope[SPM_SCOPE_LEN];
            spm_plugin_scope(s->plugin->checksum, scope);
            pl->loaded = spm_plugin_loaded(scope);
        }
        t->plugin_op = pl && !pl->loaded && !pl->fetching;
        int wait = pl && !pl->loaded && !t->plugin_op; /* another SI fetches it */
        if (t->plugin_op)
            pl->fetching = 1;
        t->nops = s->n_ops + (size_t)t->plugin_op;
        t->ops = calloc(t->nops ? t->nops : 1, sizeof *t->ops);
        t->params = malloc(s->params.len ? s->params.len : 1);
        t->params_len = s->params.len;
        if (!t->ops || !t->params) {
            spm_ieu_fail_task(ieu, t, SPM_ENOMEM, "out of memory");
            continue;
        }
        if (s->params.len)
            memcpy(t->params, s->params.data, s->params.len);
        if (!t->op && (!pl || pl->loaded)) {
            spm_ieu_fail_task(ieu, t, SPM_ENOTFOUND,
                              s->plugin ? "unknown opcode (not in its plugin)"
                                        : "unknown opcode (IEU binary differs from center's)");
            continue;
        }
        int bad = 0;
        for (size_t i = 0; i < t->nops; i++) {
            Spm__Operand *o = i < s->n_ops ? s->ops[i] : s->plugin;
            t->ops[i] = (op_t){.sdb = o->sdb,
                               .version = o->version,
                               .in_version = o->in_version,
                               .mode = (spm_mode_t)o->mode,
                               .type = o->type,
                               .nocache = o->nocache,
                               .checksum = o->checksum,
                               .bytes = o->bytes};
            if (o->n_holders && (t->ops[i].holders = malloc(o->n_holders * sizeof(uint32_t)))) {
                memcpy(t->ops[i].holders, o->holders, o->n_holders * sizeof(uint32_t));
                t->ops[i].nholders = o->n_holders;
            }
            bad |= o->mode < SPM_R || o->mode > SPM_ACC;
        }
        if (bad) {
            spm_ieu_fail_task(ieu, t, SPM_EPROTO, "invalid operand mode");
            continue;
        }
        if (wait)
            push(&pl->waiting, t); /* localized once the plugin is loaded */
        else
            spm_ieu_localize(ieu, t);
    }
}
