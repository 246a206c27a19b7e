/*  =========================================================================
    syncer - flushes the center's store and journal to disk off its loop
    =========================================================================
*/
#include "vm/center/syncer.h"
#include "base/log.h"
#include "spm/spm.h"

#include <pthread.h>
#include <stdlib.h>

struct spm_syncer {
    spm_store_t *store;
    spm_journal_t *journal;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    uint64_t asked; /* requests so far */
    uint64_t begun; /* the newest request a flush began for */
    uint64_t done;  /* the newest request whose flush finished */
    int stopped;    /* destroy: finish and leave */
};

static void *run(void *arg)
{
    spm_syncer_t *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->begun == s->asked && !s->stopped)
            pthread_cond_wait(&s->wake, &s->lock);
        if (s->begun == s->asked)
            break;
        uint64_t mine = s->begun = s->asked;
        pthread_mutex_unlock(&s->lock);
        if (spm_store_sync(s->store) != 0 || (s->journal && spm_journal_sync(s->journal) != 0))
            spm_log_error("%s", spm_error_detail());
        pthread_mutex_lock(&s->lock);
        s->done = mine;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

spm_syncer_t *spm_syncer_new(spm_store_t *store, spm_journal_t *journal)
{
    spm_syncer_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->store = store;
    s->journal = journal;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->wake);
        free(s);
        return NULL;
    }
    return s;
}

uint64_t spm_syncer_kick(spm_syncer_t *self)
{
    pthread_mutex_lock(&self->lock);
    uint64_t n = ++self->asked;
    pthread_cond_signal(&self->wake);
    pthread_mutex_unlock(&self->lock);
    return n;
}

uint64_t spm_syncer_done(spm_syncer_t *self)
{
    pthread_mutex_lock(&self->lock);
    uint64_t n = self->done;
    pthread_mutex_unlock(&self->lock);
    return n;
}

void spm_syncer_destroy(spm_syncer_t **self_p)
{
    spm_syncer_t *s = *self_p;
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopped = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    free(s);
    *self_p = NULL;
}
