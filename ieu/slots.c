/*  =========================================================================
    slots - the worker threads: one per slot, each runs the SI bodies of the
    SIs whose operands are local

    A worker takes an SI from the ready queue, finds its operands' bytes
    where localizing left them (its private copy, the center's store on
    this host, or the node cache, read zero-copy from its memory map), runs
    the body and puts the SI on the done queue; an eventfd wakes the main
    thread's poll. An SI that fails before it could run (malformed,
    operands not found) is put on the done queue in the same way, with its
    error, for the next COMMIT. Workers and the main thread meet at these
    two mutex-guarded queues and nowhere else.
    =========================================================================
*/
#include "ieu/ieu_int.h"
#include "base/heap.h"
#include "base/log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*  Finds the bytes of version V of operand I of T, local since it was
    localized: its private copy, the center's store (opening *SNAP) or the
    node cache (opening *RD). Returns 0, SPM_ENOTFOUND (no longer there:
    evicted since), or SPM_ESTORE (the node cache cannot be read). */
int spm_ieu_operand_bytes(ieu_t *ieu, task_t *t, size_t i, uint64_t v, spm_nodecache_reader_t **rd,
                          spm_store_snap_t **snap, const void **data, size_t *len)
{
    op_t *o = &t->ops[i];
    uint32_t type;
    if (t->own && t->own[i]) { /* a private copy, after an eviction */
        *data = t->own[i];
        *len = t->own_len[i];
        return 0;
    }
    if (o->in_store)
        return (*snap || (*snap = spm_store_view_snap(ieu->store))) &&
                       spm_store_snap_get(*snap, o->sdb, v, NULL, data, len) == 0
                   ? 0
                   : SPM_ENOTFOUND;
    if (!*rd && !(*rd = spm_nodecache_reader(ieu->cache)))
        return SPM_ESTORE;
    return spm_nodecache_get(*rd, o->sdb, v, &type, data, len) == 0 ? 0 : SPM_ENOTFOUND;
}

static void execute(ieu_t *ieu, task_t *t)
{
    spm_nodecache_reader_t *rd = NULL;
    spm_store_snap_t *snap = NULL;
    uint64_t mapped = 0; /* bytes read from the store's map */
    t->cops = calloc(t->nops ? t->nops : 1, sizeof *t->cops);
    if (!t->cops) {
        t->status = SPM_ENOMEM;
        return;
    }
    for (size_t i = 0; i < t->nops; i++) {
        op_t *o = &t->ops[i];
        t->cops[i].mode = o->mode;
        t->cops[i].type = o->type;
        uint64_t v = o->mode == SPM_R ? o->version : o->mode == SPM_RW ? o->in_version : 0;
        if (!v)
            continue;
        int rc =
            spm_ieu_operand_bytes(ieu, t, i, v, &rd, &snap, &t->cops[i].in, &t->cops[i].in_len);
        if (rc == SPM_ESTORE && !spm_nodecache_broken(ieu->cache, NULL, 0)) {
            t->status = SPM_ESTORE;
            t->error = strdup("cannot read the node cache");
            break;
        }
        if (rc != 0) {
            /* evicted since localized: fetch it again (or the cache went
               out of service: the main thread ends the IEU) */
            t->missing_operand = 1;
            break;
        }
        if (o->in_store && !(t->own && t->own[i]))
            mapped += t->cops[i].in_len;
    }
    if (t->missing_operand || t->status) {
        spm_nodecache_reader_end(&rd);
        spm_store_snap_end(&snap);
        return;
    }
    spm_si_ctx_t ctx = {.op = t->op,
                        .ops = t->cops,
                        .nops = t->nops,
                        .params = t->params,
                        .params_len = t->params_len};
    uint64_t t0 = spm_now_us();
    t->status = spm_si_ctx_run(&ctx);
    t->exec_us = spm_now_us() - t0;
    t->t_start = t0;
    if (t->status != 0) {
        t->error = strdup(spm_error_detail());
        spm_si_ctx_release(&ctx);
    } else {
        t->reply = ctx.reply;
        t->reply_len = ctx.reply_len;
    }
    /* The store's pages this IEU read go back to the page cache once they
       add up to UNMAP_BYTES: over a job they would add up to every block
       it was handed, and count in its memory. Blocks read again meanwhile
       (matmul's) stay mapped; after it, reading one maps it again (minor
       faults). */
    if (mapped && atomic_fetch_add(&ieu->mapped, mapped) + mapped >= UNMAP_BYTES) {
        atomic_store(&ieu->mapped, 0);
        spm_store_view_unmap_all(ieu->store);
    }
    spm_nodecache_reader_end(&rd);
    spm_store_snap_end(&snap);
}

/*  Touches the calling thread's share of --heap-mb; a refusal only costs
    speed (the SIs then get their memory as they go), so it is a warning. */
void spm_ieu_prepare_heap(const ieu_t *ieu)
{
    if (ieu->heap_bytes > 0 && spm_heap_prepare(ieu->heap_bytes) != 0)
        spm_log_warn("%s", spm_error_detail());
}

void *spm_ieu_worker(void *arg)
{
    ieu_t *ieu = arg;
    spm_ieu_prepare_heap(ieu);
    pthread_mutex_lock(&ieu->lock);
    for (;;) {
        uint64_t free_since = spm_now_us();
        /* Outputs wait in memory for the main thread to commit them; when
           it is held up (a write to the store waiting for another
           process's), the slots wait too rather than pile up more. One
           SI's outputs, however large, never hold up the next SI. */
        while ((!ieu->ready.head || (ieu->unsent >= UNSENT_MAX && ieu->unsent_sis > 1)) &&
               !ieu->stop && !ieu->draining)
            pthread_cond_wait(&ieu->cond, &ieu->lock);
        if (ieu->stop || ieu->draining)
            break;
        task_t *t = pop(&ieu->ready);
        ieu->executing++;
        pthread_mutex_unlock(&ieu->lock);
        /* The slot was free since FREE_SINCE; the part of that during which
           this SI was here but not yet local is communication wait. */
        uint64_t from = t->recv_us > free_since ? t->recv_us : free_since;
        t->wait_us = t->local_us > from ? t->local_us - from : 0;
        execute(ieu, t);
        for (size_t i = 0; t->status == 0 && t->cops && i < t->nops; i++)
            t->out_bytes += t->cops[i].out_len;
        pthread_mutex_lock(&ieu->lock);
        ieu->unsent += t->out_bytes;
        ieu->unsent_sis += t->out_bytes > 0;
        push(&ieu->done, t);
        ieu->executing--;
        uint64_t one = 1;
        if (write(ieu->efd, &one, sizeof one) < 0)
            spm_log_debug("eventfd write failed");
    }
    pthread_mutex_unlock(&ieu->lock);
    return NULL;
}

/*  Fails T without running it (a malformed SI): it is committed with the
    error so the center decides. */
void spm_ieu_fail_task(ieu_t *ieu, task_t *t, int code, const char *msg)
{
    if (t->plugin_op) { /* it was fetching its plugin: the SIs waiting for it fail too */
        t->plugin_op = 0;
        spm_ieu_plugin_settled(ieu, t->plugin, code, msg);
    }
    t->status = code;
    t->error = strdup(msg);
    t->cops = calloc(t->nops ? t->nops : 1, sizeof *t->cops);
    pthread_mutex_lock(&ieu->lock);
    push(&ieu->done, t);
    pthread_mutex_unlock(&ieu->lock);
    uint64_t one = 1;
    if (write(ieu->efd, &one, sizeof one) < 0)
        spm_log_debug("eventfd write failed");
}
