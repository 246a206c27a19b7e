/*  =========================================================================
    ahead - the itemsets of a mining result, merged on a thread of their own

    A ring of NBATCH batches: the thread fills the next free one with the
    sets it reads (their lengths, counts and items copied), the caller
    empties them in order. A batch is handed over whole, so the lock is
    taken once per few thousand sets.
    =========================================================================
*/
#include "programs/apriori/ahead.h"
#include "spm/spm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBATCH 4
#define BATCH_SETS 4096u
#define BATCH_ITEMS (64u << 10) /* a batch ends past this many items */

typedef struct {
    uint32_t n;      /* sets */
    uint32_t *k;     /* BATCH_SETS lengths */
    uint64_t *count; /* and counts */
    uint32_t *items; /* their items, one after the other */
    int last, rc;    /* the last batch, and what reading ended with */
    char why[256];   /* its error's detail (the thread's own, copied) */
} batch_t;

struct spm_mine_ahead {
    spm_mine_out_t *o;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t filled, emptied;
    uint64_t made, taken; /* batches filled, and handed back */
    int stop;             /* the caller wants no more */
    batch_t b[NBATCH];
    uint32_t at;    /* the caller's next set in its batch */
    uint32_t *next; /* and its items */
};

/*  Copies the K items at S to D, inline: a call to memcpy for each set
    of a few items was a third of the thread's time (the dense set at 5%). */
static void copy_items(uint32_t *d, const uint32_t *s, uint32_t k)
{
    uint32_t j = 0;
    for (; j + 8 <= k; j += 8)
        memcpy(d + j, s + j, 32);
    for (; j + 2 <= k; j += 2)
        memcpy(d + j, s + j, 8);
    if (j < k)
        d[j] = s[j];
}

static void *fill(void *arg)
{
    spm_mine_ahead_t *a = arg;
    for (int last = 0; !last;) {
        pthread_mutex_lock(&a->lock);
        while (!a->stop && a->made - a->taken == NBATCH)
            pthread_cond_wait(&a->emptied, &a->lock);
        int stop = a->stop;
        pthread_mutex_unlock(&a->lock);
        if (stop)
            break;
        batch_t *b = &a->b[a->made % NBATCH];
        uint32_t used = 0;
        b->n = 0;
        while (b->n < BATCH_SETS && used <= BATCH_ITEMS) {
            const uint32_t *s;
            int rc = spm_mine_next_itemset(a->o, &b->k[b->n], &s, &b->count[b->n]);
            if (rc != 1) {
                b->rc = rc;
                b->last = last = 1;
                if (rc < 0)
                    snprintf(b->why, sizeof b->why, "%s", spm_error_detail());
                break;
            }
            copy_items(b->items + used, s, b->k[b->n]);
            used += b->k[b->n++];
        }
        pthread_mutex_lock(&a->lock);
        a->made++;
        pthread_cond_signal(&a->filled);
        pthread_mutex_unlock(&a->lock);
    }
    return NULL;
}

spm_mine_ahead_t *spm_mine_ahead_start(spm_mine_out_t *o)
{
    spm_mine_ahead_t *a = calloc(1, sizeof *a);
    int ok = a != NULL;
    for (int i = 0; ok && i < NBATCH; i++) {
        batch_t *b = &a->b[i];
        b->k = malloc(BATCH_SETS * sizeof *b->k);
        b->count = malloc(BATCH_SETS * sizeof *b->count);
        /* a set may start at BATCH_ITEMS and hold SPM_MINING_MAX_K items */
        b->items = malloc(((size_t)BATCH_ITEMS + SPM_MINING_MAX_K + 1) * sizeof *b->items);
        ok = b->k && b->count && b->items;
    }
    if (ok) {
        a->o = o;
        pthread_mutex_init(&a->lock, NULL);
        pthread_cond_init(&a->filled, NULL);
        pthread_cond_init(&a->emptied, NULL);
        if (pthread_create(&a->thread, NULL, fill, a) != 0) {
            pthread_mutex_destroy(&a->lock);
            pthread_cond_destroy(&a->filled);
            pthread_cond_destroy(&a->emptied);
            ok = 0;
        }
    }
    if (!ok && a) {
        for (int i = 0; i < NBATCH; i++) {
            free(a->b[i].k);
            free(a->b[i].count);
            free(a->b[i].items);
        }
        free(a);
        a = NULL;
    }
    return a;
}

/*  The end of reading: 0, or its error raised again on the caller's thread. */
static int ended(const batch_t *b)
{
    return b->rc < 0 ? spm_error(b->rc, "%s", b->why) : b->rc;
}

int spm_mine_ahead_next(spm_mine_ahead_t *a, uint32_t *k, const uint32_t **items, uint64_t *count)
{
    batch_t *b = &a->b[a->taken % NBATCH];
    if (a->next && a->at == b->n) {
        if (b->last)
            return ended(b);
        pthread_mutex_lock(&a->lock); /* done with this batch */
        a->taken++;
        pthread_cond_signal(&a->emptied);
        pthread_mutex_unlock(&a->lock);
        a->next = NULL;
        b = &a->b[a->taken % NBATCH];
    }
    if (!a->next) {
        pthread_mutex_lock(&a->lock);
        while (a->made == a->taken)
            pthread_cond_wait(&a->filled, &a->lock);
        pthread_mutex_unlock(&a->lock);
        a->at = 0;
        a->next = b->items;
        if (b->n == 0)
            return ended(b);
    }
    *k = b->k[a->at];
    *items = a->next;
    *count = b->count[a->at++];
    a->next += *k;
    return 1;
}

void spm_mine_ahead_destroy(spm_mine_ahead_t **self_p)
{
    spm_mine_ahead_t *a = *self_p;
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_cond_signal(&a->emptied);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->filled);
    pthread_cond_destroy(&a->emptied);
    for (int i = 0; i < NBATCH; i++) {
        free(a->b[i].k);
        free(a->b[i].count);
        free(a->b[i].items);
    }
    free(a);
    *self_p = NULL;
}
