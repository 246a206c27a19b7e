/*  =========================================================================
    commit - an IEU's commit of an SI: checked, counted, handed to its SF

    A commit is checked against the SI's lease first (spm_idu_lookup): one
    from another holder or attempt is stale. A transient failure is retried
    (lease.c puts the SI back), another fails the job. A success counts in
    the job's figures and its IEU's, marks the versions the SI wrote
    committed (scoreboard.c), and is handed to the SF's commit callback.
    With the pump (pool.c), this is the center's hot path.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "runtime/registry.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/clock.h"

#include <stdlib.h>

#define MAX_TRANSIENT_FAILURES 3

/* --------------------------------------------------------------- commit */

const spm_idu_si_t *spm_idu_lookup(spm_idu_t *self, uint32_t ieu, uint64_t id, uint32_t attempt)
{
    si_t *si = spm_hmap_get(self->issued, id);
    int spec = si && si->spec_ieu == (int32_t)ieu && si->spec_attempt == attempt;
    if (si && spec && si->job->state == 0)
        return &si->pub;
    if (!si || si->pub.attempt != attempt || si->ieu != (int32_t)ieu || si->job->state != 0) {
        job_t *job = si ? si->job : NULL;
        if (job)
            job->stale++;
        if (si && si->ieu == (int32_t)ieu && si->job->state != 0) {
            /* The holder is done with an SI of an ended job: forget it. */
            spm_hmap_remove(self->issued, id);
            if (self->ieus[ieu].held)
                self->ieus[ieu].held--;
            si_drop(self, si);
        }
        return NULL;
    }
    return &si->pub;
}

static int transient(int status)
{
    return status == SPM_ETIMEOUT || status == SPM_EUNREACH || status == SPM_ESTORE ||
           status == SPM_EDEAD || status == SPM_ENOMEM || status == SPM_EFULL;
}

static void op_stats_add(job_t *job, uint32_t opcode, const spm_idu_commit_t *c)
{
    size_t i = 0;
    while (i < job->nop_stats && job->op_stats[i].opcode != opcode)
        i++;
    if (i == job->nop_stats) {
        spm_idu_op_stats_t *v = realloc(job->op_stats, (i + 1) * sizeof *v);
        if (!v)
            return;
        job->op_stats = v;
        v[i] = (spm_idu_op_stats_t){.opcode = opcode};
        job->nop_stats++;
    }
    job->op_stats[i].sis++;
    job->op_stats[i].busy_us += c->exec_us;
    job->op_stats[i].wait_us += c->wait_us;
}

static ieu_job_stats_t *job_ieu_stats(job_t *job, uint32_t ieu)
{
    if (spm_grow_zeroed(&job->ieu_stats, &job->nieu_stats, (size_t)ieu + 1,
                        sizeof *job->ieu_stats) != 0)
        return NULL;
    return &job->ieu_stats[ieu];
}

void spm_idu_commit_apply(spm_idu_t *self, si_t *si, const spm_idu_commit_t *c,
                          const spm_ieu_t *who)
{
    job_t *job = si->job;
    spm_sf_t *sf = si->sf;
    spm_ev_commit(self, si, c, who);
    job->l1_hits += c->l1_hits;
    job->l2_hits += c->l2_hits;
    job->store_reads += c->store_reads;
    job->bytes_l2 += c->bytes_l2;
    job->bytes_store += c->bytes_store;
    job->evictions += c->evictions;
    job->bytes_pushed += c->bytes_pushed;
    job->corrupt += c->corrupt;
    si->state = SI_DONE;
    spm_sb_commit(self, si);
    if (!job->replay) /* commits taken from the journal say nothing of the rate */
        spm_idu_rate_commit(job, spm_now_us());
    job->committed++;
    job->exec_us += c->exec_us;
    op_stats_add(job, si->pub.opcode, c);
    sf->outstanding--;
    if (!si->internal && sf->cls->commit && job->state == 0) {
        spm_result_t r = {.kind = SPM_RESULT_SI,
                          .tag = si->tag,
                          .reply = c->reply,
                          .reply_len = c->reply_len,
                          .ieu = who};
        call_t t0 = enter(sf);
        sf->cls->commit(sf, &r);
        leave(sf, "commit", t0);
    }
    spm_idu_si_free(si);
    spm_idu_sf_maybe_finish(self, sf);
    notify(self);
}

void spm_idu_commit(spm_idu_t *self, uint32_t ieu, uint64_t id, const spm_idu_commit_t *c)
{
    si_t *si = spm_hmap_get(self->issued, id);
    if (!si)
        return;
    job_t *job = si->job;
    held_dec(self, si->ieu);
    if (ieu < self->nieus)
        self->ieus[ieu].last_commit_us = spm_now_us();
    if (si->spec_ieu >= 0) {
        /* the other copy's commit, when it comes, is stale */
        held_dec(self, si->spec_ieu);
        if (si->spec_ieu == (int32_t)ieu)
            job->spec_wins++;
        si->spec_ieu = -1;
    }
    ieu_job_stats_t *st = job_ieu_stats(job, ieu);
    if (st) {
        st->sis++;
        st->busy_us += c->exec_us;
        st->wait_us += c->wait_us;
        st->localize_us += c->localize_us;
        st->bytes_l2 += c->bytes_l2;
        st->bytes_store += c->bytes_store;
        st->bytes_pushed += c->bytes_pushed;
    }
    if (c->status != 0) {
        char name[160];
        spm_idu_si_name(si, name, sizeof name);
        const char *why =
            c->error && *c->error ? spm_idu_si_detail(si, c->error) : spm_strerror(c->status);
        if (transient(c->status) && ++si->failures < MAX_TRANSIENT_FAILURES) {
            spm_log_warn("%s on IEU %u failed (%s); retrying", name, ieu, why);
            spm_lease_reissue(self, si);
        } else {
            spm_hmap_remove(self->issued, id);
            spm_idu_failf(job, c->status, "%s failed on IEU %u: %s", name, ieu, why);
            si_drop(self, si);
        }
        notify(self);
        return;
    }
    spm_hmap_remove(self->issued, id);
    ieu_t *e = ieu < self->nieus ? &self->ieus[ieu] : NULL;
    spm_ieu_t who = {.ieu = ieu, .node = e ? e->node : 0, .slots = e ? e->slots : 1};
    spm_idu_commit_apply(self, si, c, &who);
}
