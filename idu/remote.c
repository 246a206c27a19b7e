/*  =========================================================================
    remote - a plugin's job, whose super-functions run in a host process

    The center never runs a plugin's code: each plugin job has a host
    (`spm sfhost`, vm/sfhost/) that loads the plugin and runs all of the
    job's SFs, children too. In the IDU the job has one SF, a proxy, whose
    callbacks only hand the job's events to the center for its host
    (spm_idu_set_remote): its start with the args, its SIs' commits with
    their tags and replies, the feed calls, and the IEU and node counts
    when they change. The host answers with actions (runtime/sfproto.h),
    which spm_idu_remote_apply carries out on the proxy: issue, sdb_new,
    done, fail, set_result, expect, and whether it feeds. A host that
    loops or crashes therefore costs the center nothing but its job.

    Determinism: the actions arrive when the host is done, not at a point
    the job's events fix, so each batch is recorded (EV_ACTIONS) where it
    is applied, and a restarted center applies it again at the same place
    among the job's events; the counts are recorded when they change
    (spm_ev_input_changed). A new host is then given the same events in
    the same order and so makes the same actions: the center skips the
    ones the journal applied already (spm_idu_remote_info).
    =========================================================================
*/
#include "idu/idu_int.h"
#include "runtime/registry.h"
#include "runtime/sfproto.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct remote {
    spm_sf_class_t cls;   /* the proxy's class, named after the program */
    uint32_t ieus, nodes; /* the counts the host was last sent */
    int counted;          /* ... once at least */
    int feeding;          /* some SF of the host has a feed hook */
    int feed_out;         /* a feed call is with the host: not asked again until it answers */
    uint64_t applied;     /* actions applied, journal's and live */
};

static void send_ev(spm_sf_t *sf, sfp_buf_t *b)
{
    spm_idu_t *self = sf->job->idu;
    if (b->full)
        spm_idu_failf(sf->job, SPM_ENOMEM, "out of memory");
    else if (self->remote_fn)
        self->remote_fn(self->remote_arg, sf->job->id, b->p, b->n);
    sfp_buf_free(b);
}

/*  Before an event: the counts, when they changed (recorded then). */
static void put_counts(spm_sf_t *sf, sfp_buf_t *b)
{
    job_t *job = sf->job;
    struct remote *r = job->remote;
    uint8_t v[8];
    uint32_t ieus = spm_idu_ieus(job->idu), nodes = spm_idu_nodes(job->idu);
    for (int i = 0; i < 4; i++) {
        v[i] = (uint8_t)(ieus >> (8 * i));
        v[4 + i] = (uint8_t)(nodes >> (8 * i));
    }
    int changed = !r->counted || ieus != r->ieus || nodes != r->nodes;
    if (!spm_ev_input_changed(job->idu, job, v, sizeof v, job->replay ? 0 : changed))
        return;
    r->ieus = r->nodes = 0;
    for (int i = 3; i >= 0; i--) {
        r->ieus = r->ieus << 8 | v[i];
        r->nodes = r->nodes << 8 | v[4 + i];
    }
    r->counted = 1;
    sfp_put_u8(b, SFP_COUNTS);
    sfp_put_uv(b, r->ieus);
    sfp_put_uv(b, r->nodes);
}

static void put_who(sfp_buf_t *b, const spm_ieu_t *who)
{
    sfp_put_uv(b, who ? who->ieu : 0);
    sfp_put_uv(b, who ? who->node : 0);
    sfp_put_uv(b, who ? who->slots : 0);
}

static int proxy_start(spm_sf_t *sf, const void *args, size_t len)
{
    job_t *job = sf->job;
    sfp_buf_t b = {0};
    put_counts(sf, &b);
    sfp_put_u8(&b, SFP_START);
    sfp_put_bytes(&b, job->program, strlen(job->program));
    sfp_put_bytes(&b, job->scope, strlen(job->scope));
    sfp_put_uv(&b, job->seed);
    sfp_put_sv(&b, job->priority);
    sfp_put_uv(&b, job->id);
    sfp_put_bytes(&b, args, len);
    send_ev(sf, &b);
    return 0;
}

static int proxy_feed(spm_sf_t *sf, const spm_ieu_t *who)
{
    struct remote *r = sf->job->remote;
    sfp_buf_t b = {0};
    put_counts(sf, &b);
    sfp_put_u8(&b, SFP_FEED);
    put_who(&b, who);
    send_ev(sf, &b);
    r->feed_out = 1; /* asked once; again after its answer (SFA_FED) */
    spm_pool_feeder_remove(sf->job->idu, sf);
    return 0;
}

static void proxy_commit(spm_sf_t *sf, const spm_result_t *res)
{
    if (res->kind != SPM_RESULT_SI)
        return;
    sfp_buf_t b = {0};
    put_counts(sf, &b);
    sfp_put_u8(&b, SFP_COMMIT);
    sfp_put_uv(&b, res->tag);
    put_who(&b, res->ieu);
    sfp_put_bytes(&b, res->reply, res->reply_len);
    send_ev(sf, &b);
}

int spm_remote_new(job_t *job)
{
    struct remote *r = calloc(1, sizeof *r);
    if (!r)
        return SPM_ENOMEM;
    r->cls = (spm_sf_class_t){
        .name = job->program, .start = proxy_start, .feed = proxy_feed, .commit = proxy_commit};
    job->remote = r;
    return 0;
}

void spm_remote_free(job_t *job)
{
    free(job->remote);
    job->remote = NULL;
}

const spm_sf_class_t *spm_remote_class(job_t *job)
{
    return &job->remote->cls;
}

void spm_idu_set_remote(spm_idu_t *self, spm_idu_remote_fn fn, void *arg)
{
    self->remote_fn = fn;
    self->remote_arg = arg;
}

int spm_idu_remote_info(spm_idu_t *self, uint64_t id, spm_sdb_t *plugin, uint64_t *applied)
{
    job_t *job = job_get(self, id);
    if (!job || !job->remote)
        return SPM_ENOTFOUND;
    *plugin = job->plugin;
    *applied = job->remote->applied;
    return 0;
}

static int elsewhere(spm_si_ctx_t *ctx)
{
    (void)ctx;
    return spm_error(SPM_EEXEC, "a plugin's opcode runs only where its plugin is loaded");
}

/*  The center does not load a plugin, but its messages and reports name
    the plugin's opcodes: a host names each the first time it issues it,
    and the name (only) is registered in the job's scope. */
static void know_opcode(job_t *job, uint32_t id, const char *name)
{
    if (spm_opcode_by_id(id) || spm_scoped_id(job->scope, name) != id)
        return;
    char *copy = strdup(name); /* the registry keeps it */
    const char *prev = spm_registry_scope(job->scope);
    if (!copy || spm_opcode_register(&(spm_opcode_t){.name = copy, .exec = elsewhere}) != 0)
        free(copy);
    spm_registry_scope(prev);
}

/*  Carries out the action at R on JOB's proxy SF. Returns 0, or
    SPM_EPROTO for a malformed one. */
static int act(spm_idu_t *self, job_t *job, spm_sf_t *sf, sfp_rd_t *r)
{
    struct remote *rem = job->remote;
    uint8_t t = sfp_get_u8(r);
    switch (t) {
    case SFA_ISSUE: {
        uint32_t id = (uint32_t)sfp_get_uv(r);
        const void *name;
        size_t nlen = sfp_get_bytes(r, &name);
        uint64_t tag = sfp_get_uv(r), n = sfp_get_uv(r);
        if (r->bad || n > SPM_MAX_OPERANDS)
            return SPM_EPROTO;
        spm_operand_t ops[n ? n : 1];
        for (uint64_t i = 0; i < n; i++) {
            ops[i].sdb = sfp_get_uv(r);
            ops[i].mode = (spm_mode_t)sfp_get_uv(r);
            ops[i].flags = (unsigned)sfp_get_uv(r);
        }
        const void *params, *label;
        size_t plen = sfp_get_bytes(r, &params);
        size_t llen = sfp_get_bytes(r, &label);
        if (r->bad)
            return SPM_EPROTO;
        if (llen) /* the host's spm_sf_label, for this SI (idu.c) */
            spm_sf_label(sf, "%.*s", (int)(llen < 63 ? llen : 63), (const char *)label);
        char opname[128];
        snprintf(opname, sizeof opname, "%.*s", (int)(nlen < 127 ? nlen : 127),
                 nlen ? (const char *)name : "");
        if (nlen)
            know_opcode(job, id, opname);
        spm_error(0, "%s", "");
        if (spm_idu_issue_id(sf, id, nlen ? opname : "its opcode", ops, (size_t)n, params, plen,
                             tag) != 0 &&
            job->state == 0)
            spm_idu_failf(job, SPM_EINVAL, "%s", spm_error_detail());
        return 0;
    }
    case SFA_SDB: {
        uint32_t type = (uint32_t)sfp_get_uv(r);
        spm_sdb_t id = sfp_get_uv(r);
        if (r->bad)
            return SPM_EPROTO;
        if (!spm_sb_sdb_new_id(self, job, type, id))
            spm_idu_failf(job, SPM_EPROTO, "its host made SDB %llu twice, or another job's",
                          (unsigned long long)id);
        return 0;
    }
    case SFA_DONE:
        spm_sf_done(sf);
        return 0;
    case SFA_FAIL: {
        int code = (int)sfp_get_sv(r);
        const void *msg;
        size_t len = sfp_get_bytes(r, &msg);
        if (r->bad || code >= 0)
            return SPM_EPROTO;
        spm_idu_fail_now(job, code, (int)len, msg);
        return 0;
    }
    case SFA_RESULT: {
        const void *d;
        size_t len = sfp_get_bytes(r, &d);
        if (r->bad)
            return SPM_EPROTO;
        return spm_sf_set_result(sf, d, len) == 0 ? 0 : SPM_ENOMEM;
    }
    case SFA_EXPECT:
        job->expected += sfp_get_uv(r);
        return r->bad ? SPM_EPROTO : 0;
    case SFA_FEEDING:
        rem->feeding = sfp_get_uv(r) != 0;
        if (r->bad)
            return SPM_EPROTO;
        if (rem->feeding && !rem->feed_out && !sf->done)
            spm_pool_feeder_add(self, sf);
        else if (!rem->feeding)
            spm_pool_feeder_remove(self, sf);
        return 0;
    case SFA_FED:
        rem->feed_out = 0;
        if (rem->feeding && !sf->done)
            spm_pool_feeder_add(self, sf);
        return 0;
    default:
        return SPM_EPROTO;
    }
}

/*  Reads past the action at R, unapplied. */
static void skip_one(sfp_rd_t *r)
{
    const void *d;
    switch (sfp_get_u8(r)) {
    case SFA_ISSUE: {
        sfp_get_uv(r);
        sfp_get_bytes(r, &d);
        sfp_get_uv(r);
        uint64_t n = sfp_get_uv(r);
        for (uint64_t i = 0; i < n && !r->bad; i++) {
            sfp_get_uv(r);
            sfp_get_uv(r);
            sfp_get_uv(r);
        }
        sfp_get_bytes(r, &d);
        sfp_get_bytes(r, &d); /* the label */
        return;
    }
    case SFA_SDB:
        sfp_get_uv(r);
        sfp_get_uv(r);
        return;
    case SFA_FAIL:
        sfp_get_sv(r);
        sfp_get_bytes(r, &d);
        return;
    case SFA_RESULT:
        sfp_get_bytes(r, &d);
        return;
    case SFA_EXPECT:
    case SFA_FEEDING:
        sfp_get_uv(r);
        return;
    case SFA_DONE:
    case SFA_FED:
        return;
    default:
        r->bad = 1;
    }
}

/*  Applies the actions of the LEN bytes at DATA to JOB, skipping the first
    *SKIP (NULL: none): a new host repeats what the journal applied.
    Returns 0 or SPM_EPROTO. */
static int apply(spm_idu_t *self, job_t *job, const uint8_t *data, size_t len, uint64_t *skip)
{
    sfp_rd_t r = {data, len, 0, 0};
    for (; skip && *skip && r.pos < r.n && !r.bad; (*skip)--)
        skip_one(&r);
    if (r.bad)
        return SPM_EPROTO;
    if (r.pos == r.n)
        return 0;
    spm_ev_actions(self, job, r.p + r.pos, r.n - r.pos);
    spm_sf_t *sf = job->root;
    while (r.pos < r.n && job->state == 0) {
        if (act(self, job, sf, &r) != 0 || r.bad)
            return SPM_EPROTO;
        job->remote->applied++;
    }
    spm_idu_sf_maybe_finish(self, sf);
    return 0;
}

void spm_remote_apply(spm_idu_t *self, job_t *job, const void *data, size_t len)
{
    if (job->state == 0 && apply(self, job, data, len, NULL) != 0)
        spm_idu_failf(job, SPM_EPROTO, "a damaged record of its host's actions");
}

int spm_idu_remote_apply(spm_idu_t *self, uint64_t id, const void *data, size_t len, uint64_t *skip)
{
    job_t *job = job_get(self, id);
    if (!job || !job->remote || job->state != 0)
        return 0;
    int rc = apply(self, job, data, len, skip);
    if (rc != 0)
        spm_idu_failf(job, rc, "its super-function host sent a malformed answer");
    notify(self);
    return rc;
}
