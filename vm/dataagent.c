/*  =========================================================================
    dataagent - serves a node's cached blocks to the IEUs of other nodes
    =========================================================================
*/
#include "vm/dataagent.h"
#include "vm/wire.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 256 /* FETCHes answered per call */

/*  A read transaction lent to the frames of one batch. */
typedef struct lease {
    spm_nodecache_reader_t *reader;
    uint64_t opened_us; /* when its snapshot was taken */
    int shared;         /* serves batches after the one it was opened for */
    atomic_int refs;    /* frames ZeroMQ still holds, + 1 while the batch runs */
    struct lease *next;
} lease_t;

struct spm_dataagent {
    void *router;           /* not owned */
    spm_nodecache_t *cache; /* not owned */
    lease_t *leases;        /* outstanding read transactions */
    uint64_t served, bytes; /* counters */
};

spm_dataagent_t *spm_dataagent_new(void *router, spm_nodecache_t *cache)
{
    spm_dataagent_t *self = calloc(1, sizeof *self);
    if (self) {
        self->router = router;
        self->cache = cache;
    }
    return self;
}

/*  zmq_free_fn: ZeroMQ is done with a frame of the lease HINT. */
static void release(void *data, void *hint)
{
    (void)data;
    atomic_fetch_sub(&((lease_t *)hint)->refs, 1);
}

/*  Ends, on this thread, the read transactions nobody uses any more. */
static void reap(spm_dataagent_t *self)
{
    for (lease_t **pl = &self->leases; *pl;) {
        lease_t *l = *pl;
        if (atomic_load(&l->refs) == 0) {
            *pl = l->next;
            spm_nodecache_reader_end(&l->reader);
            free(l);
        } else {
            pl = &l->next;
        }
    }
}

static lease_t *lease(spm_dataagent_t *self, int fresh);

/*  Answers the FETCH M from the batch's lease *LP; a block missing from a
    shared (older) snapshot is looked up again in a new one. */
static void answer(spm_dataagent_t *self, lease_t **lp, spm_msg_t *m)
{
    Spm__Fetch *f = m->env->fetch;
    Spm__FetchReply r = SPM__FETCH_REPLY__INIT;
    r.req = f->req;
    spm_frame_t frame = {0};
    const void *data;
    size_t len;
    uint32_t type;
    lease_t *l = *lp;
    r.status = l && l->reader ? spm_nodecache_get(l->reader, f->sdb, f->version, &type, &data, &len)
                              : SPM_ESTORE;
    if (r.status == SPM_ENOTFOUND && l && l->shared) {
        atomic_fetch_sub(&l->refs, 1);
        *lp = l = lease(self, 1);
        r.status = l && l->reader
                       ? spm_nodecache_get(l->reader, f->sdb, f->version, &type, &data, &len)
                       : SPM_ESTORE;
    }
    if (r.status == 0) {
        atomic_fetch_add(&l->refs, 1);
        frame = (spm_frame_t){(void *)data, len, release, l};
        self->served++;
        self->bytes += len;
    }
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_FETCH_REPLY;
    env.fetch_reply = &r;
    spm_wire_send(self->router, &m->id, &env, &frame, r.status == 0 ? 1 : 0, NULL);
}

#define FRESH_US 20000 /* a snapshot younger than this serves new batches too */

/*  The read transaction for a new batch. The node cache allows one reader
    per thread: while frames of earlier batches are out, a batch shares the
    newest transaction if its snapshot is fresh; an older one is let go
    (waiting up to 20 ms for ZeroMQ to release its frames) so that blocks
    cached since become visible; so is a snapshot that misses a block (see
    answer). Should the old frames outlive the wait, the new batch shares
    the old snapshot after all, and a block it lacks is answered "not
    found": the peer then reads it from the store. */
static lease_t *lease(spm_dataagent_t *self, int fresh)
{
    reap(self);
    if (!fresh && self->leases && spm_now_us() - self->leases->opened_us < FRESH_US) {
        atomic_fetch_add(&self->leases->refs, 1);
        self->leases->shared = 1;
        return self->leases;
    }
    for (int i = 0; i < 20 && self->leases; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        reap(self);
    }
    if (self->leases) {
        atomic_fetch_add(&self->leases->refs, 1);
        return self->leases;
    }
    lease_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    atomic_init(&l->refs, 1);
    l->reader = spm_nodecache_reader(self->cache);
    l->opened_us = spm_now_us();
    l->next = self->leases;
    self->leases = l;
    return l;
}

void spm_dataagent_serve(spm_dataagent_t *self)
{
    lease_t *l = NULL;
    spm_msg_t m;
    int r;
    for (int k = 0; k < BATCH && (r = spm_wire_recv(self->router, 1, 1, &m, NULL)) > 0; k++) {
        if (r != 1)
            continue;
        if (m.env->body_case == SPM__ENVELOPE__BODY_FETCH) {
            if (!l)
                l = lease(self, 0);
            answer(self, &l, &m);
        }
        spm_msg_close(&m);
    }
    if (l)
        atomic_fetch_sub(&l->refs, 1); /* the batch is over */
    reap(self);
}

uint64_t spm_dataagent_served(const spm_dataagent_t *self, uint64_t *bytes)
{
    if (bytes)
        *bytes = self->bytes;
    return self->served;
}

void spm_dataagent_destroy(spm_dataagent_t **selfp)
{
    spm_dataagent_t *self = *selfp;
    if (!self)
        return;
    reap(self);
    /* Leases still referenced here would mean ZeroMQ kept frames past its
       context: end them anyway, the memory map is about to go. */
    for (lease_t *l = self->leases, *n; l; l = n) {
        n = l->next;
        spm_nodecache_reader_end(&l->reader);
        free(l);
    }
    free(self);
    *selfp = NULL;
}
