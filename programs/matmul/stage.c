/*  =========================================================================
    stage - both inputs of a product cut at once, one file on each core
    =========================================================================
*/
#include "programs/matmul/stage.h"
#include "spm/spm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUEUE_BYTES ((size_t)64 << 20) /* B's blocks waiting, at most (or one) */
#define WAIT_MS 200                    /* the meter's pace while only B is left */

/*  A block of B, as its cutter handed it over (not copied: a dense
    product's B is 134 MB). */
typedef struct item {
    struct item *next;
    uint32_t bi, bj;
    uint64_t entries;
    size_t len;
    void *data; /* malloc'd, the item's */
} item_t;

typedef struct {
    const spm_mm_input_t *a, *b;
    spm_progress_t *meter;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* an item came or left, B ended, or stop was set */
    item_t *head, **tail;
    size_t bytes;           /* in the queue */
    int ended;              /* B's thread is done */
    int stop;               /* the caller failed: B gives up */
    int rc;                 /* B's result */
    char detail[1024];      /* its error detail */
    _Atomic uint64_t bdone; /* B's entries read */
    uint64_t adone;         /* A's entries read (the caller's thread only) */
} stage_t;

/* ------------------------------------------------------- B's own thread */

static int queue_emit(void *arg, uint32_t bi, uint32_t bj, void *data, size_t len, uint64_t entries)
{
    stage_t *st = arg;
    item_t *it = malloc(sizeof *it);
    if (!it) {
        free(data);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    *it = (item_t){NULL, bi, bj, entries, len, data};
    pthread_mutex_lock(&st->lock);
    while (st->bytes > 0 && st->bytes + len > QUEUE_BYTES && !st->stop)
        pthread_cond_wait(&st->cond, &st->lock);
    int stop = st->stop;
    if (!stop) {
        *st->tail = it;
        st->tail = &it->next;
        st->bytes += len;
        pthread_cond_broadcast(&st->cond);
    }
    pthread_mutex_unlock(&st->lock);
    if (stop) {
        free(it->data);
        free(it);
    }
    return stop ? SPM_ECANCELED : 0;
}

static int queue_tick(void *arg, uint64_t done)
{
    stage_t *st = arg;
    atomic_store(&st->bdone, done);
    pthread_mutex_lock(&st->lock);
    int stop = st->stop;
    pthread_mutex_unlock(&st->lock);
    return stop ? SPM_ECANCELED : 0;
}

static void *cut_b(void *arg)
{
    stage_t *st = arg;
    int rc = spm_mm_cut_file(st->b->in, st->b->rk, st->b->ck, queue_emit, queue_tick, st);
    pthread_mutex_lock(&st->lock);
    st->rc = rc;
    if (rc != 0)
        snprintf(st->detail, sizeof st->detail, "%s", spm_error_detail());
    st->ended = 1;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

/* ---------------------------------------------------- the caller's thread */

/*  Hands on every queued block of B. Returns 0 or the callback's error. */
static int drain(stage_t *st)
{
    pthread_mutex_lock(&st->lock);
    item_t *list = st->head;
    st->head = NULL;
    st->tail = &st->head;
    st->bytes = 0;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
    int rc = 0;
    for (item_t *it = list, *next; it; it = next) {
        next = it->next;
        if (rc == 0)
            rc = st->b->emit(st->b->arg, it->bi, it->bj, it->data, it->len, it->entries);
        else
            free(it->data);
        free(it);
    }
    return rc;
}

static void show(stage_t *st)
{
    if (st->meter)
        spm_progress_set(st->meter, st->adone + atomic_load(&st->bdone));
}

static int a_emit(void *arg, uint32_t bi, uint32_t bj, void *data, size_t len, uint64_t entries)
{
    stage_t *st = arg;
    int rc = st->a->emit(st->a->arg, bi, bj, data, len, entries);
    return rc ? rc : drain(st);
}

static int a_tick(void *arg, uint64_t done)
{
    stage_t *st = arg;
    st->adone = done;
    show(st);
    return drain(st);
}

/*  Waits up to WAIT_MS for B's thread to queue something or end; returns
    whether it has ended. */
static int wait_b(stage_t *st)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += WAIT_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&st->lock);
    while (!st->head && !st->ended && pthread_cond_timedwait(&st->cond, &st->lock, &until) == 0)
        ;
    int ended = st->ended && !st->head;
    pthread_mutex_unlock(&st->lock);
    return ended;
}

int spm_mm_stage_pair(const spm_mm_input_t *a, const spm_mm_input_t *b, spm_progress_t *meter)
{
    stage_t st = {.a = a, .b = b, .meter = meter};
    st.tail = &st.head;
    atomic_init(&st.bdone, 0);
    pthread_mutex_init(&st.lock, NULL);
    pthread_cond_init(&st.cond, NULL);
    pthread_t tid;
    int rc = pthread_create(&tid, NULL, cut_b, &st);
    if (rc != 0) {
        pthread_cond_destroy(&st.cond);
        pthread_mutex_destroy(&st.lock);
        return spm_error(SPM_ESYS, "cannot start a thread: %s", strerror(rc));
    }
    rc = spm_mm_cut_file(a->in, a->rk, a->ck, a_emit, a_tick, &st);
    while (rc == 0 && !wait_b(&st)) { /* until B has ended with its queue empty */
        show(&st);
        rc = drain(&st);
    }
    pthread_mutex_lock(&st.lock);
    st.stop = rc != 0;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
    pthread_join(tid, NULL);
    for (item_t *it = st.head, *next; it; it = next) { /* left by a failure */
        next = it->next;
        free(it->data);
        free(it);
    }
    pthread_cond_destroy(&st.cond);
    pthread_mutex_destroy(&st.lock);
    if (rc == 0 && st.rc != 0)
        rc = spm_error(st.rc, "%s", st.detail);
    return rc;
}
