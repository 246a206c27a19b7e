/*  =========================================================================
    history - the center's record of every job, kept across restarts

    Why an LMDB environment of its own rather than keys in the store: the
    store's keys are blocks (SDB id, version), which IEUs read in place and
    the status counts; records are few, small and read by the center only.
    Its own environment keeps the store's layout as it is, and costs one
    small file beside it.

    Records change a few times in a job's life (submit, once a second
    while it runs, its end, its report delivered, its blocks freed), so
    each change is written whole: a key of the job id (8 bytes, big-endian,
    so that a cursor walks the jobs in order) and the packed JobRecord. The
    center writes the turn's changes in one transaction; it asks for a
    flush to disk when a job was submitted or ended (what a client was
    told), the rest rides on the next one: a crash of the operating system
    can lose the last second of a running job's figures, nothing more.
    =========================================================================
*/
#include "vm/center/history.h"
#include "base/grow.h"
#include "base/hmap.h"
#include "base/log.h"
#include "spm/spm.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MAP_BYTES ((size_t)1 << 30) /* address space only: the file grows with the records */

struct spm_history {
    spm_history_opts_t o;
    char *path;          /* DIR/history, or NULL: in memory only */
    MDB_env *env;        /* NULL: in memory only */
    MDB_dbi dbi;         /* the records, by job id */
    spm_hmap_t *records; /* job id -> Spm__JobRecord (unpacked, owned) */
    uint64_t *touched;   /* jobs whose record changed since the last write */
    size_t ntouched, captouched;
    uint64_t *gone; /* jobs whose record was pruned since the last write */
    size_t ngone, capgone;
    uint64_t max_job; /* spm_history_max_job */
    uint64_t warned;  /* when a failed write was last logged (Unix us) */
};

uint64_t spm_history_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int spm_history_ended(const Spm__JobRecord *r)
{
    return r && r->state && strcmp(r->state, "running") != 0 && r->state[0];
}

static void key_of(uint8_t k[8], uint64_t job)
{
    for (int i = 0; i < 8; i++)
        k[i] = (uint8_t)(job >> (56 - 8 * i));
}

/*  An empty record: every field at its default, as protobuf-c unpacks one,
    so that every record is freed alike (spm__job_record__free_unpacked). */
static Spm__JobRecord *empty_record(void)
{
    static const uint8_t none[1];
    return spm__job_record__unpack(NULL, 0, none);
}

int spm_history_set_str(char **field, const char *value)
{
    if (*field && *field != protobuf_c_empty_string)
        free(*field);
    *field = strdup(value ? value : "");
    if (*field)
        return 0;
    *field = (char *)protobuf_c_empty_string;
    return SPM_ENOMEM;
}

int spm_history_set_report(Spm__JobRecord *r, const void *bytes, size_t len)
{
    if (r->report)
        spm__report__free_unpacked(r->report, NULL);
    r->report = spm__report__unpack(NULL, len, bytes);
    return r->report ? 0 : SPM_EFORMAT;
}

/*  Adds a record to the map, replacing (and freeing) one of the same job. */
static int keep(spm_history_t *self, Spm__JobRecord *r)
{
    Spm__JobRecord *old = spm_hmap_remove(self->records, r->job);
    if (old)
        spm__job_record__free_unpacked(old, NULL);
    if (spm_hmap_put(self->records, r->job, r) != 0) {
        spm__job_record__free_unpacked(r, NULL);
        return SPM_ENOMEM;
    }
    return 0;
}

static int lmdb_error(spm_history_t *self, int rc, const char *what)
{
    int code = rc == ENOSPC || rc == MDB_MAP_FULL         ? SPM_EFULL
               : rc == EACCES || rc == EROFS || rc == EIO ? SPM_EIO
                                                          : SPM_ESTORE;
    return spm_error(code, "%s: %s: %s", self->path, what, mdb_strerror(rc));
}

/*  Reads every record of the environment into the map. */
static int load(spm_history_t *self)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    int rc = mdb_txn_begin(self->env, NULL, MDB_RDONLY, &txn);
    if (rc == 0 && (rc = mdb_cursor_open(txn, self->dbi, &cur)) != 0)
        mdb_txn_abort(txn);
    if (rc != 0)
        return lmdb_error(self, rc, "reading the job records");
    MDB_val k, v;
    size_t bad = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        Spm__JobRecord *r = spm__job_record__unpack(NULL, v.mv_size, v.mv_data);
        if (!r || !r->job) {
            if (r)
                spm__job_record__free_unpacked(r, NULL);
            bad++;
            continue;
        }
        if (r->job > self->max_job)
            self->max_job = r->job;
        if (keep(self, r) != 0)
            break;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (bad)
        spm_log_warn("%s: %zu job records do not decode; they are left out", self->path, bad);
    return 0;
}

spm_history_t *spm_history_open(const char *dir, const spm_history_opts_t *o)
{
    spm_history_t *self = calloc(1, sizeof *self);
    if (!self || !(self->records = spm_hmap_new())) {
        free(self);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    self->o = *o;
    if (!dir)
        return self;
    size_t n = strlen(dir) + sizeof "/history";
    if (!(self->path = malloc(n))) {
        spm_history_destroy(&self);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(self->path, n, "%s/history", dir);
    if (mkdir(self->path, 0700) != 0 && errno != EEXIST) {
        spm_error(SPM_EIO, "%s: %s", self->path, strerror(errno));
        spm_history_destroy(&self);
        return NULL;
    }
    MDB_txn *txn = NULL;
    int rc = mdb_env_create(&self->env);
    if (rc == 0 && (rc = mdb_env_set_mapsize(self->env, MAP_BYTES)) == 0 &&
        (rc = mdb_env_open(self->env, self->path, MDB_NOSYNC | MDB_NOTLS, 0600)) == 0 &&
        (rc = mdb_txn_begin(self->env, NULL, 0, &txn)) == 0 &&
        (rc = mdb_dbi_open(txn, NULL, 0, &self->dbi)) == 0) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (txn)
        mdb_txn_abort(txn);
    if (rc != 0 || load(self) != 0) {
        if (rc != 0)
            lmdb_error(self, rc, "opening the job records");
        spm_history_destroy(&self);
        return NULL;
    }
    return self;
}

void spm_history_destroy(spm_history_t **self_p)
{
    spm_history_t *self = *self_p;
    if (!self)
        return;
    if (self->env) {
        if (spm_history_write(self, 1) != 0)
            spm_log_warn("%s", spm_error_detail());
        mdb_env_close(self->env);
    }
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (self->records && spm_hmap_next(self->records, &pos, &key, &value))
        spm__job_record__free_unpacked(value, NULL);
    spm_hmap_destroy(&self->records);
    free(self->touched);
    free(self->gone);
    free(self->path);
    free(self);
    *self_p = NULL;
}

Spm__JobRecord *spm_history_get(spm_history_t *self, uint64_t job)
{
    return job ? spm_hmap_get(self->records, job) : NULL;
}

Spm__JobRecord *spm_history_add(spm_history_t *self, uint64_t job)
{
    Spm__JobRecord *r = empty_record();
    if (!r || spm_history_set_str(&r->state, "running") != 0) {
        if (r)
            spm__job_record__free_unpacked(r, NULL);
        return NULL;
    }
    r->job = job;
    if (keep(self, r) != 0)
        return NULL;
    spm_history_touch(self, r);
    return r;
}

void spm_history_touch(spm_history_t *self, Spm__JobRecord *r)
{
    for (size_t i = self->ntouched; i > 0; i--) /* the same job again, mostly the last */
        if (self->touched[i - 1] == r->job)
            return;
    if (spm_grow(&self->touched, self->ntouched, &self->captouched, sizeof *self->touched, 16) == 0)
        self->touched[self->ntouched++] = r->job;
}

/*  Puts (or deletes, when gone) one record in TXN. */
static int write_one(spm_history_t *self, MDB_txn *txn, uint64_t job)
{
    uint8_t k[8];
    key_of(k, job);
    MDB_val key = {sizeof k, k};
    Spm__JobRecord *r = spm_hmap_get(self->records, job);
    if (!r) {
        int rc = mdb_del(txn, self->dbi, &key, NULL);
        return rc == MDB_NOTFOUND ? 0 : rc;
    }
    MDB_val v = {spm__job_record__get_packed_size(r), NULL};
    int rc = mdb_put(txn, self->dbi, &key, &v, MDB_RESERVE);
    if (rc == 0)
        spm__job_record__pack(r, v.mv_data);
    return rc;
}

int spm_history_write(spm_history_t *self, int sync)
{
    if (!self->env) {
        self->ntouched = self->ngone = 0;
        return 0;
    }
    if (!self->ntouched && !self->ngone)
        return 0;
    MDB_txn *txn;
    int rc = mdb_txn_begin(self->env, NULL, 0, &txn);
    for (size_t i = 0; rc == 0 && i < self->ngone; i++)
        rc = write_one(self, txn, self->gone[i]);
    for (size_t i = 0; rc == 0 && i < self->ntouched; i++)
        rc = write_one(self, txn, self->touched[i]);
    if (rc == 0)
        rc = mdb_txn_commit(txn);
    else
        mdb_txn_abort(txn);
    if (rc == 0 && sync && !self->o.no_sync)
        rc = mdb_env_sync(self->env, 1);
    if (rc != 0)
        return lmdb_error(self, rc, "writing the job records");
    self->ntouched = self->ngone = 0;
    return 0;
}

static int newest_first(const void *a, const void *b)
{
    uint64_t x = (*(Spm__JobRecord *const *)a)->job, y = (*(Spm__JobRecord *const *)b)->job;
    return x < y ? 1 : x > y ? -1 : 0;
}

size_t spm_history_list(spm_history_t *self, Spm__JobRecord **out, size_t max)
{
    size_t n = spm_hmap_size(self->records);
    Spm__JobRecord **all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return 0;
    size_t k = 0, pos = 0;
    uint64_t key;
    void *value;
    while (k < n && spm_hmap_next(self->records, &pos, &key, &value))
        all[k++] = value;
    qsort(all, k, sizeof *all, newest_first);
    memcpy(out, all, (k < max ? k : max) * sizeof *out);
    free(all);
    return k;
}

size_t spm_history_prune(spm_history_t *self, uint64_t now_us)
{
    size_t n = spm_hmap_size(self->records);
    if (!n)
        return 0;
    Spm__JobRecord **all = malloc(n * sizeof *all);
    if (!all)
        return 0;
    size_t k = spm_history_list(self, all, n), went = 0, ended = 0;
    uint64_t age_us = self->o.max_age_s * 1000000u;
    for (size_t i = 0; i < k && i < n; i++) {
        Spm__JobRecord *r = all[i];
        if (!spm_history_ended(r))
            continue;
        ended++; /* newest first: this one has ENDED - 1 newer ended ones */
        int old = r->end_us && now_us > r->end_us && now_us - r->end_us > age_us;
        if (!r->freed || (!old && ended <= self->o.max_jobs))
            continue;
        if (spm_grow(&self->gone, self->ngone, &self->capgone, sizeof *self->gone, 16) != 0)
            break;
        self->gone[self->ngone++] = r->job;
        spm__job_record__free_unpacked(spm_hmap_remove(self->records, r->job), NULL);
        went++;
    }
    free(all);
    return went;
}

uint64_t spm_history_max_job(const spm_history_t *self)
{
    return self->max_job;
}

/*  The environment is opened with MDB_NOTLS: a read transaction is not
    tied to its thread's slot, so another thread may hold one while the
    center's thread writes. ENV, DBI and PATH are set at open and never
    change, so reading them here is safe. */
Spm__JobRecord *spm_history_read(spm_history_t *self, uint64_t job)
{
    if (!self->env || !job)
        return NULL;
    MDB_txn *txn;
    if (mdb_txn_begin(self->env, NULL, MDB_RDONLY, &txn) != 0)
        return NULL;
    uint8_t k[8];
    key_of(k, job);
    MDB_val key = {sizeof k, k}, v;
    Spm__JobRecord *r = NULL;
    if (mdb_get(txn, self->dbi, &key, &v) == 0)
        r = spm__job_record__unpack(NULL, v.mv_size, v.mv_data);
    mdb_txn_abort(txn);
    return r;
}

long spm_history_read_each(spm_history_t *self, size_t max,
                           void (*fn)(void *arg, const Spm__JobRecord *r), void *arg)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    if (!self->env || mdb_txn_begin(self->env, NULL, MDB_RDONLY, &txn) != 0)
        return -1;
    if (mdb_cursor_open(txn, self->dbi, &cur) != 0) {
        mdb_txn_abort(txn);
        return -1;
    }
    long n = 0;
    MDB_val k, v;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_LAST); rc == 0 && (size_t)n < max;
         rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)) {
        Spm__JobRecord *r = spm__job_record__unpack(NULL, v.mv_size, v.mv_data);
        if (!r)
            continue;
        fn(arg, r);
        spm__job_record__free_unpacked(r, NULL);
        n++;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return n;
}
