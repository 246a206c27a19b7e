/*  =========================================================================
    lease - the IEUs, and the SIs each of them holds

    An issued SI belongs to one IEU and one attempt number until it commits
    (commit.c). When its IEU dies or its lease runs out, the SI goes back to
    the front of its SF's queue with attempt + 1, unless a speculative copy
    of it runs on elsewhere: that copy's lease becomes the SI's. A commit
    for an older attempt is then stale and discarded.
    =========================================================================
*/
#include "idu/idu_int.h"
#include "runtime/registry.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/clock.h"

#include <stdlib.h>

/* An SI whose holders keep dying is likely what kills them (a crashing SI
   body): re-issuing it for ever would crash every IEU in turn and leave the
   job waiting with none. */
#define MAX_HOLDER_DEATHS 4

/* ----------------------------------------------------------------- IEUs */

uint32_t spm_idu_ieu_join(spm_idu_t *self, uint32_t node, uint32_t slots)
{
    ieu_t *v = realloc(self->ieus, (self->nieus + 1) * sizeof *v);
    if (!v)
        return UINT32_MAX;
    self->ieus = v;
    v[self->nieus] = (ieu_t){.node = node,
                             .slots = slots ? slots : 1,
                             .alive = 1,
                             .joined_us = spm_now_us(),
                             .heard_us = spm_now_us()};
    return (uint32_t)self->nieus++;
}

void spm_idu_ieu_heard(spm_idu_t *self, uint32_t ieu, uint64_t now_us)
{
    if (ieu < self->nieus)
        self->ieus[ieu].heard_us = now_us;
}

void spm_idu_ieu_pull(spm_idu_t *self, uint32_t ieu, uint32_t credits)
{
    if (ieu < self->nieus && self->ieus[ieu].alive)
        self->ieus[ieu].credits += credits;
}

/*  Puts issued SI back in the pool with a new attempt. */
void spm_lease_reissue(spm_idu_t *self, si_t *si)
{
    held_dec(self, si->ieu);
    if (si->spec_ieu >= 0 && self->ieus[si->spec_ieu].alive) {
        /* its speculative copy runs on: that becomes the lease */
        si->ieu = si->spec_ieu;
        si->pub.attempt = si->spec_attempt;
        si->spec_ieu = -1;
        si->issued_us = spm_now_us();
        return;
    }
    spm_hmap_remove(self->issued, si->pub.id);
    held_dec(self, si->spec_ieu);
    si->pub.attempt = (si->spec_attempt > si->pub.attempt ? si->spec_attempt : si->pub.attempt) + 1;
    si->spec_ieu = -1;
    si->job->reissued++;
    if (si->job->state != 0) {
        si_drop(self, si);
        return;
    }
    spm_idu_make_ready(self, si, 1);
}

/*  The issued SIs for which KEEP(si, ARG) holds, as a malloc'd array of *N
    (NULL when none). Built before the caller changes the map. When memory
    runs out the array is cut short: the leases bring the others back. */
si_t **spm_lease_issued_where(spm_idu_t *self, int (*keep)(const si_t *, const void *),
                              const void *arg, size_t *n)
{
    si_t **v = NULL;
    size_t cap = 0, pos = 0;
    uint64_t key;
    void *value;
    *n = 0;
    while (spm_hmap_next(self->issued, &pos, &key, &value)) {
        if (!keep(value, arg))
            continue;
        if (spm_grow(&v, *n, &cap, sizeof *v, 16) != 0)
            break;
        v[(*n)++] = value;
    }
    return v;
}

static int held_by(const si_t *si, const void *ieu)
{
    return si->ieu == (int32_t) * (const uint32_t *)ieu;
}

static int issued_before(const si_t *si, const void *since)
{
    return si->issued_us <= *(const uint64_t *)since;
}

uint32_t spm_idu_ieu_dead(spm_idu_t *self, uint32_t ieu)
{
    if (ieu >= self->nieus || !self->ieus[ieu].alive)
        return 0;
    self->ieus[ieu].alive = 0;
    self->ieus[ieu].credits = 0;
    self->ieus[ieu].left_us = spm_now_us();
    size_t pos = 0, n;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->issued, &pos, &key, &value))
        if (((si_t *)value)->spec_ieu == (int32_t)ieu)
            ((si_t *)value)->spec_ieu = -1; /* a copy dies: the original runs on */
    si_t **orphans = spm_lease_issued_where(self, held_by, &ieu, &n);
    for (size_t i = 0; i < n; i++) {
        si_t *si = orphans[i];
        if (++si->deaths >= MAX_HOLDER_DEATHS &&
            !(si->spec_ieu >= 0 && self->ieus[si->spec_ieu].alive)) {
            char name[160];
            spm_idu_si_name(si, name, sizeof name);
            spm_idu_failf(si->job, SPM_EDEAD,
                          "%s was running on %u IEUs that died; it may be what kills them", name,
                          si->deaths);
        }
        spm_lease_reissue(self, si); /* frees it when its job is over */
    }
    free(orphans);
    notify(self);
    return (uint32_t)n;
}

uint32_t spm_idu_ieus(const spm_idu_t *self)
{
    uint32_t n = 0;
    for (size_t i = 0; i < self->nieus; i++)
        n += self->ieus[i].alive ? 1 : 0;
    return n;
}

uint32_t spm_idu_nodes(const spm_idu_t *self)
{
    uint32_t n = 0;
    for (size_t i = 0; i < self->nieus; i++) {
        if (!self->ieus[i].alive)
            continue;
        size_t j = 0;
        while (j < i && !(self->ieus[j].alive && self->ieus[j].node == self->ieus[i].node))
            j++;
        n += j == i ? 1 : 0;
    }
    return n;
}

uint32_t spm_idu_expire(spm_idu_t *self, uint64_t now_us, uint64_t lease_us)
{
    uint64_t since = now_us > lease_us ? now_us - lease_us : 0;
    size_t n;
    si_t **late = spm_lease_issued_where(self, issued_before, &since, &n);
    for (size_t i = 0; i < n; i++) {
        char name[160];
        spm_idu_si_name(late[i], name, sizeof name);
        spm_log_warn("job %llu: %s on IEU %d passed its lease; re-issuing",
                     (unsigned long long)late[i]->job->id, name, late[i]->ieu);
        spm_lease_reissue(self, late[i]);
    }
    free(late);
    notify(self);
    return (uint32_t)n;
}
