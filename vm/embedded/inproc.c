/*  =========================================================================
    inproc - a whole VM in one process: the IDU and one sequential executor

    One IEU with one slot: pull a credit, pump, run what was emitted,
    commit, repeat. Since every SI runs to its end before the next is
    handed out, the order of execution is one valid schedule of the program,
    which is what tests want; concurrency is what the real VM is for.
    =========================================================================
*/
#include "vm/embedded/inproc.h"
#include "idu/idu.h"
#include "runtime/registry.h"
#include "runtime/si.h"
#include "base/hmap.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    void *data; /* the version's bytes, owned */
    size_t len;
} blob_t;

/*  A copy of an emitted SI, run after pump returns. */
typedef struct {
    uint64_t id;
    uint32_t attempt, opcode;
    spm_idu_op_t *ops; /* owned copy */
    size_t nops;
    void *params; /* owned copy */
    size_t params_len;
} task_t;

struct spm_inproc {
    spm_idu_t *idu;     /* the real dispatch unit */
    spm_hmap_t *store;  /* sdb id -> spm_hmap_t of version -> blob_t */
    spm_hmap_t *newest; /* sdb id -> newest committed version (as a pointer-sized int) */
    uint32_t ieu;       /* our one IEU */
    task_t task;        /* the SI emitted by the last pump */
    int has_task;
    uint64_t job; /* the running job */
    int job_over; /* its done callback ran */
    uint64_t sis; /* SIs executed in the last run */
};

static void emit(void *arg, uint32_t ieu, const spm_idu_si_t *si)
{
    spm_inproc_t *self = arg;
    (void)ieu;
    task_t *t = &self->task;
    t->id = si->id;
    t->attempt = si->attempt;
    t->opcode = si->opcode;
    t->nops = si->nops;
    t->ops = malloc((si->nops + 1) * sizeof *t->ops);
    t->params = malloc(si->params_len + 1);
    if (t->ops)
        memcpy(t->ops, si->ops, si->nops * sizeof *t->ops);
    if (t->params)
        memcpy(t->params, si->params, si->params_len);
    t->params_len = si->params_len;
    self->has_task = 1;
}

static void job_done(void *arg, uint64_t job)
{
    spm_inproc_t *self = arg;
    if (job == self->job)
        self->job_over = 1;
}

spm_inproc_t *spm_inproc_new(void)
{
    spm_inproc_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->idu = spm_idu_new(emit, job_done, self);
    self->store = spm_hmap_new();
    self->newest = spm_hmap_new();
    if (!self->idu || !self->store || !self->newest) {
        spm_inproc_destroy(&self);
        return NULL;
    }
    self->ieu = spm_idu_ieu_join(self->idu, 0, 1);
    return self;
}

void spm_inproc_destroy(spm_inproc_t **self_p)
{
    spm_inproc_t *self = *self_p;
    if (!self)
        return;
    size_t pos = 0, ipos;
    uint64_t key;
    void *v, *b;
    while (self->store && spm_hmap_next(self->store, &pos, &key, &v)) {
        for (ipos = 0; spm_hmap_next(v, &ipos, &key, &b);) {
            free(((blob_t *)b)->data);
            free(b);
        }
        spm_hmap_t *inner = v;
        spm_hmap_destroy(&inner);
    }
    spm_hmap_destroy(&self->store);
    spm_hmap_destroy(&self->newest);
    spm_idu_destroy(&self->idu);
    free(self->task.ops);
    free(self->task.params);
    free(self);
    *self_p = NULL;
}

/*  Stores DATA (taken) as VERSION of ID. Returns 0 or SPM_ENOMEM. */
static int store(spm_inproc_t *self, spm_sdb_t id, uint64_t version, void *data, size_t len)
{
    spm_hmap_t *inner = spm_hmap_get(self->store, id);
    blob_t *b = malloc(sizeof *b);
    if (!inner && (!(inner = spm_hmap_new()) || spm_hmap_put(self->store, id, inner) != 0)) {
        spm_hmap_destroy(&inner);
        inner = NULL;
    }
    if (!inner || !b || spm_hmap_put(inner, version, b) != 0) {
        free(b);
        free(data);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    b->data = data;
    b->len = len;
    if ((uint64_t)(uintptr_t)spm_hmap_get(self->newest, id) < version)
        spm_hmap_put(self->newest, id, (void *)(uintptr_t)version);
    return 0;
}

static const blob_t *fetch(spm_inproc_t *self, spm_sdb_t id, uint64_t version)
{
    spm_hmap_t *inner = spm_hmap_get(self->store, id);
    return inner ? spm_hmap_get(inner, version) : NULL;
}

int spm_inproc_put(spm_inproc_t *self, const char *type, const void *data, size_t len,
                   spm_sdb_t *id)
{
    const spm_sdb_type_t *t = spm_sdb_type_find(type);
    if (!t)
        return spm_error(SPM_ENOTFOUND, "no SDB type %s", type);
    int rc = t->validate(data, len);
    if (rc != 0)
        return rc;
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return spm_error(SPM_ENOMEM, "out of memory");
    memcpy(copy, data, len);
    if (!(*id = spm_idu_sdb_put(self->idu, spm_name_id(type)))) {
        free(copy);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    return store(self, *id, 1, copy, len);
}

int spm_inproc_get(spm_inproc_t *self, spm_sdb_t id, void **data, size_t *len)
{
    uint64_t v = (uint64_t)(uintptr_t)spm_hmap_get(self->newest, id);
    const blob_t *b = v ? fetch(self, id, v) : NULL;
    if (!b)
        return spm_error(SPM_ENOTFOUND, "no SDB %llu", (unsigned long long)id);
    if (!(*data = malloc(b->len ? b->len : 1)))
        return spm_error(SPM_ENOMEM, "out of memory");
    memcpy(*data, b->data, b->len);
    *len = b->len;
    return 0;
}

/*  Runs the emitted task and commits it. */
static void execute(spm_inproc_t *self)
{
    task_t *t = &self->task;
    const spm_opcode_t *op = spm_opcode_by_id(t->opcode);
    spm_si_operand_t *ops = calloc(t->nops + 1, sizeof *ops);
    void *reply = NULL;
    size_t reply_len = 0;
    int rc = !op || !ops ? spm_error(SPM_ENOTFOUND, "unknown opcode") : 0;
    for (size_t i = 0; rc == 0 && i < t->nops; i++) {
        spm_idu_op_t *o = &t->ops[i];
        ops[i].mode = o->mode;
        if (o->mode == SPM_R || o->mode == SPM_RW) {
            const blob_t *b = fetch(self, o->sdb, o->mode == SPM_RW ? o->in_version : o->version);
            if (!b)
                rc = spm_error(SPM_ENOTFOUND, "%s: operand %zu: SDB %llu has no such version",
                               op->name, i, (unsigned long long)o->sdb);
            else {
                ops[i].in = b->data;
                ops[i].in_len = b->len;
            }
        }
    }
    if (rc == 0)
        rc =
            spm_si_exec_local(op->name, ops, t->nops, t->params, t->params_len, &reply, &reply_len);
    for (size_t i = 0; ops && i < t->nops; i++) {
        if (rc == 0 && t->ops[i].mode != SPM_R) {
            rc = store(self, t->ops[i].sdb, t->ops[i].version, ops[i].out, ops[i].out_len);
            ops[i].out = NULL;
        }
        free(ops[i].out);
    }
    spm_idu_commit_t c = {.status = rc, .error = rc ? spm_error_detail() : NULL};
    c.reply = reply;
    c.reply_len = reply_len;
    self->sis++;
    if (spm_idu_lookup(self->idu, self->ieu, t->id, t->attempt))
        spm_idu_commit(self->idu, self->ieu, t->id, &c);
    free(reply);
    free(ops);
    free(t->ops);
    free(t->params);
    t->ops = NULL;
    t->params = NULL;
    self->has_task = 0;
}

int spm_inproc_run(spm_inproc_t *self, const char *program, const void *args, size_t len,
                   void **result, size_t *result_len)
{
    if (result)
        *result = NULL;
    if (result_len)
        *result_len = 0;
    self->job_over = 0;
    self->sis = 0;
    int rc = spm_idu_submit(self->idu, program, args, len, 0, &self->job);
    if (rc == SPM_ENOTFOUND && !self->job)
        return spm_error(rc, "no program %s", program);
    while (!self->job_over) {
        spm_idu_ieu_pull(self->idu, self->ieu, 1);
        spm_idu_pump(self->idu);
        if (!self->has_task)
            break;
        execute(self);
    }
    spm_idu_job_info_t info;
    if (spm_idu_job_info(self->idu, self->job, &info) != 0)
        return spm_error(SPM_ENOTFOUND, "job vanished");
    if (info.state != 1) {
        rc = info.state >= 2 ? info.status : SPM_EEXEC;
        rc = spm_error(rc ? rc : SPM_EEXEC, "%s",
                       info.state >= 2 && info.error ? info.error
                                                     : "job stalled with nothing ready");
    } else if (result && info.result_len) {
        if (!(*result = malloc(info.result_len)))
            return spm_error(SPM_ENOMEM, "out of memory");
        memcpy(*result, info.result, info.result_len);
        if (result_len)
            *result_len = info.result_len;
    }
    spm_idu_job_forget(self->idu, self->job);
    return rc;
}

uint64_t spm_inproc_sis(const spm_inproc_t *self)
{
    return self->sis;
}
