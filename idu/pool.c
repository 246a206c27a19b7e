/*  =========================================================================
    pool - the ready SIs, and the pump that deals them out to the IEUs

    Levels by priority, highest first. Within a level, a ring of the SFs
    that have ready SIs, served round-robin (equal-priority jobs share the
    IEUs), then the SFs' feed hooks, asked on behalf of the requesting IEU.
    Of the first few ready SIs of the chosen SF, the one whose operands would
    move the fewest bytes to the requester's node is issued (locality.c). An
    IEU that finds nothing ready may be given a copy of a straggler instead
    (speculation), in the same step of the pump.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "base/clock.h"
#include "base/grow.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the pool */

/*  Returns the level of PRIORITY, creating it in order. NULL: no memory. */
level_t *spm_pool_level(spm_idu_t *self, int priority)
{
    size_t i = 0;
    while (i < self->nlevels && self->levels[i].priority > priority)
        i++;
    if (i < self->nlevels && self->levels[i].priority == priority)
        return &self->levels[i];
    level_t *v = realloc(self->levels, (self->nlevels + 1) * sizeof *v);
    if (!v)
        return NULL;
    self->levels = v;
    memmove(&v[i + 1], &v[i], (self->nlevels - i) * sizeof *v);
    v[i] = (level_t){.priority = priority};
    self->nlevels++;
    return &v[i];
}

static void ring_insert(spm_idu_t *self, spm_sf_t *sf)
{
    level_t *l = spm_pool_level(self, sf->priority);
    if (!l || sf->in_ring)
        return;
    if (!l->ring) {
        sf->ring_prev = sf->ring_next = sf;
        l->ring = sf;
    } else {
        spm_sf_t *head = l->ring;
        sf->ring_next = head;
        sf->ring_prev = head->ring_prev;
        head->ring_prev->ring_next = sf;
        head->ring_prev = sf;
    }
    sf->in_ring = 1;
}

void spm_pool_ring_remove(spm_idu_t *self, spm_sf_t *sf)
{
    if (!sf->in_ring)
        return;
    level_t *l = spm_pool_level(self, sf->priority);
    if (sf->ring_next == sf) {
        l->ring = NULL;
    } else {
        sf->ring_prev->ring_next = sf->ring_next;
        sf->ring_next->ring_prev = sf->ring_prev;
        if (l->ring == sf)
            l->ring = sf->ring_next;
    }
    sf->in_ring = 0;
}

void spm_pool_feeder_add(spm_idu_t *self, spm_sf_t *sf)
{
    level_t *l = spm_pool_level(self, sf->priority);
    if (sf->feeder || !l ||
        spm_grow(&l->feeders, l->nfeeders, &l->capfeeders, sizeof *l->feeders, 4) != 0)
        return;
    l->feeders[l->nfeeders++] = sf;
    sf->feeder = 1;
}

void spm_pool_feeder_remove(spm_idu_t *self, spm_sf_t *sf)
{
    if (!sf->feeder)
        return;
    level_t *l = spm_pool_level(self, sf->priority);
    for (size_t i = 0; i < l->nfeeders; i++)
        if (l->feeders[i] == sf) {
            l->feeders[i] = l->feeders[--l->nfeeders];
            break;
        }
    sf->feeder = 0;
}

void spm_idu_make_ready(spm_idu_t *self, si_t *si, int front)
{
    if (si->job->replay) { /* held until the job's records are all run */
        si->state = SI_READY;
        spm_ev_ready(si->job, si);
        return;
    }
    spm_sf_t *sf = si->sf;
    si->state = SI_READY;
    si->ieu = -1;
    if (front) {
        si->next = sf->ready_head;
        sf->ready_head = si;
        if (!sf->ready_tail)
            sf->ready_tail = si;
    } else {
        si->next = NULL;
        if (sf->ready_tail)
            sf->ready_tail->next = si;
        else
            sf->ready_head = si;
        sf->ready_tail = si;
    }
    self->ready++;
    si->job->ready++;
    ring_insert(self, sf);
}

#define LOCALITY_WINDOW 8 /* ready SIs of one SF compared for locality */
#define LOCAL_SCAN 256    /* ready SIs searched for one that moves nothing */

/*  Takes a ready SI of SF for NODE: of the first LOCALITY_WINDOW, the one
    whose operands would move the fewest bytes to NODE (the first on ties,
    so without a directory this is FIFO); but when each of those moves
    some, the first of the first LOCAL_SCAN that moves none. An IEU asks
    for many short SIs ahead, and takes them one after another: with the
    window alone it soon had only other nodes' blocks in it, although
    its own were further back. Mining T25I10D500K on 2 nodes at 100
    Mbit/s, both IEUs so took each other's raw blocks, in turns, through
    the 100 shrinks of 1-3 ms (up to 49 of them, each 0.5 MB, 43 ms on
    the link), and the nodes ended holding unequal shares of what every
    class SI then reads. */
si_t *spm_pool_pop_ready(spm_idu_t *self, spm_sf_t *sf, uint32_t node)
{
    si_t **best = &sf->ready_head, *prev = NULL, *best_prev = NULL;
    if (!*best)
        return NULL;
    uint64_t best_cost = spm_dir_si_cost(self, *best, node);
    si_t *cur = sf->ready_head;
    for (int k = 0; cur && best_cost > 0 && k < LOCALITY_WINDOW; k++) {
        uint64_t cost = k ? spm_dir_si_cost(self, cur, node) : best_cost;
        if (cost < best_cost) {
            best_cost = cost;
            best_prev = prev;
        }
        prev = cur;
        cur = cur->next;
    }
    for (int k = LOCALITY_WINDOW; cur && best_cost > 0 && k < LOCAL_SCAN; k++) {
        if (spm_dir_si_cost(self, cur, node) == 0) {
            best_cost = 0;
            best_prev = prev;
        }
        prev = cur;
        cur = cur->next;
    }
    best = best_prev ? &best_prev->next : &sf->ready_head;
    si_t *si = *best;
    *best = si->next;
    if (sf->ready_tail == si)
        sf->ready_tail = best_prev;
    si->next = NULL;
    self->ready--;
    si->job->ready--;
    return si;
}

/*  Takes the next SI for IEU WHO: the highest level first; within a level,
    round-robin over SFs with ready SIs, then the feed hooks. */
static si_t *take_ready(spm_idu_t *self, uint32_t who)
{
    for (size_t li = 0; li < self->nlevels; li++) {
        level_t *l = &self->levels[li];
        uint32_t node = self->ieus[who].node;
        if (l->ring) {
            spm_sf_t *sf = l->ring;
            si_t *si = spm_pool_pop_ready(self, sf, node);
            if (!sf->ready_head)
                spm_pool_ring_remove(self, sf);
            else
                l->ring = sf->ring_next;
            return si;
        }
        ieu_t *ieu = &self->ieus[who];
        spm_ieu_t info = {.ieu = who, .node = ieu->node, .slots = ieu->slots};
        for (size_t k = 0; k < l->nfeeders; k++) {
            spm_sf_t *sf = l->feeders[(l->feed_next + k) % l->nfeeders];
            if (sf->job->state != 0 || sf->done)
                continue;
            spm_idu_feed_call(self, sf, &info);
            l = &self->levels[li]; /* feed may have added levels */
            if (!sf->ready_head)
                continue;
            if (sf->ready_head) {
                l->feed_next = (l->feed_next + k + 1) % (l->nfeeders ? l->nfeeders : 1);
                si_t *si = spm_pool_pop_ready(self, sf, node);
                if (!sf->ready_head)
                    spm_pool_ring_remove(self, sf);
                return si;
            }
        }
    }
    return NULL;
}

void spm_idu_set_speculate(spm_idu_t *self, int on, uint64_t silent_us)
{
    self->speculate = on;
    self->silent_us = silent_us;
}

/*  Mean execution time of JOB's committed SIs of OPCODE, or 0 when none
    committed yet. */
static uint64_t opcode_mean_us(const job_t *job, uint32_t opcode)
{
    for (size_t i = 0; i < job->nop_stats; i++)
        if (job->op_stats[i].opcode == opcode)
            return job->op_stats[i].sis ? job->op_stats[i].busy_us / job->op_stats[i].sis : 0;
    return 0;
}

/*  Whether IEU runs JOB's SIs half again slower than the job's mean: a
    slow or loaded node. */
static int slow_holder(const job_t *job, int32_t ieu)
{
    if (ieu < 0 || (size_t)ieu >= job->nieu_stats || !job->committed)
        return 0;
    const ieu_job_stats_t *st = &job->ieu_stats[ieu];
    return st->sis && 2 * st->busy_us * job->committed > 3 * job->exec_us * st->sis;
}

/*  Whether IEU has committed nothing for over QUIET_US: stuck, or running
    one SI far longer than its kind takes. */
static int quiet_holder(const spm_idu_t *self, int32_t ieu, uint64_t now, uint64_t quiet_us)
{
    if (ieu < 0 || (uint32_t)ieu >= self->nieus)
        return 0;
    const ieu_t *e = &self->ieus[ieu];
    uint64_t since = e->last_commit_us > e->joined_us ? e->last_commit_us : e->joined_us;
    return now > since + quiet_us;
}

/*  Whether IEUs A and B are on one node. There a holder that keeps
    beating runs as fast as the asker: its SI is long, not slow, and a copy
    would only take the asker from work the SF is about to issue (the dense
    mining set of bench_mine: 4 copies a job, none finished first, while
    the next classes waited for them). */
static int same_node(const spm_idu_t *self, int32_t a, uint32_t b)
{
    return a >= 0 && (uint32_t)a < self->nieus && self->ieus[a].node == self->ieus[b].node;
}

/*  Issues to IEU a copy of the longest-running straggler, if there is one
    worth it: held for over 10 ms and over twice the mean of its own opcode
    in its job, by an IEU that is slow (slow_holder) or has committed
    nothing for four such means (stuck); an IEU of the asker's own node
    only once it is silent (same_node). The mean is per opcode because a
    long opcode among short ones is not late. An SI counts from when it was
    issued, and every IEU holds SIs ahead of the one it runs: on IEUs of
    equal speed that keep committing, copies would mostly be of SIs merely
    queued, which their IEU reaches soon enough (such copies cost the
    mining benchmark 3% of its job). Returns 1 when it issued. */
static int speculate(spm_idu_t *self, uint32_t ieu)
{
    uint64_t now = spm_now_us(), worst = 0, key;
    si_t *pick = NULL;
    size_t pos = 0;
    void *value;
    while (spm_hmap_next(self->issued, &pos, &key, &value)) {
        si_t *si = value;
        job_t *job = si->job;
        if (si->spec_ieu >= 0 || si->ieu == (int32_t)ieu || job->state != 0 || job->ready ||
            !job->committed)
            continue;
        uint64_t ran = now - si->issued_us, mean = opcode_mean_us(job, si->pub.opcode);
        if (mean && ran > 10000 && ran > 2 * mean &&
            (same_node(self, si->ieu, ieu)
                 ? now > self->ieus[si->ieu].heard_us + self->silent_us
                 : slow_holder(job, si->ieu) || quiet_holder(self, si->ieu, now, 4 * mean)) &&
            ran > worst) {
            worst = ran;
            pick = si;
        }
    }
    if (!pick)
        return 0;
    pick->spec_ieu = (int32_t)ieu;
    pick->spec_attempt = pick->pub.attempt + 1;
    pick->job->speculated++;
    self->ieus[ieu].credits--;
    self->ieus[ieu].held++;
    spm_idu_si_t copy = pick->pub;
    copy.attempt = pick->spec_attempt;
    self->emit(self->arg, ieu, &copy);
    return 1;
}

/*  Gives IEU I one SI: a ready one, else a straggler's copy. Returns 1
    when it did, or when it dropped an SI of a failed job (so there may be
    more); 0 when there was nothing for I. */
static int serve_one(spm_idu_t *self, uint32_t i)
{
    ieu_t *ieu = &self->ieus[i];
    si_t *si = take_ready(self, i);
    if (!si)
        return self->speculate && speculate(self, i);
    if (si->job->state != 0) { /* its job failed: drop it */
        si->state = SI_DONE;
        si_drop(self, si);
        return 1;
    }
    si->state = SI_ISSUED;
    si->ieu = (int32_t)i;
    si->issued_us = spm_now_us();
    if (!si->job->first_issue_us)
        si->job->first_issue_us = si->issued_us;
    ieu->credits--;
    ieu->held++;
    if (spm_hmap_put(self->issued, si->pub.id, si) != 0) {
        spm_idu_failf(si->job, SPM_ENOMEM, "out of memory");
        spm_idu_si_free(si);
        return 1;
    }
    spm_ev_issued(self, si);
    self->emit(self->arg, i, &si->pub);
    return 1;
}

/*  Deals the ready SIs out one at a time to the IEUs with credits, in turn
    from a first IEU that rotates, until the SIs or the credits run out. An
    IEU asks for many SIs ahead while SIs are short; handing each its whole
    credit at once gave the first IEU every SI of a new stage of long ones
    and left the others idle. For the same reason no IEU holds more than
    its share of the work in hand (the ready SIs and those issued, over the
    IEUs alive) beyond one SI per slot and one ahead: near a stage's end
    the last SIs are spread out instead of queued at one IEU while the
    others wait. Credits not served stay for the next pump. An SF with a
    feed hook makes its SIs as IEUs ask, so the pool then says nothing of
    the work to come: while one feeds there is no cap (with it, matmul's
    0.03 ms SIs went out a few at a time, at three times the center's CPU). */
void spm_idu_pump(spm_idu_t *self)
{
    size_t n = self->nieus, first = n ? self->pump_first++ % n : 0, alive = 0;
    uint64_t in_hand = self->ready, share = UINT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (self->ieus[i].alive) {
            in_hand += self->ieus[i].held;
            alive++;
        }
    int feeding = 0;
    for (size_t li = 0; li < self->nlevels; li++)
        feeding |= self->levels[li].nfeeders > 0;
    if (alive && !feeding)
        share = (in_hand + alive - 1) / alive;
    for (int more = 1; more;) {
        more = 0;
        for (size_t k = 0; k < n; k++) {
            uint32_t i = (uint32_t)((first + k) % n);
            const ieu_t *e = &self->ieus[i];
            if (e->alive && e->credits > 0 && (e->held <= e->slots || e->held < share) &&
                serve_one(self, i))
                more = 1;
        }
    }
    notify(self);
}
