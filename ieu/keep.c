/*  =========================================================================
    keep - the outputs of an SI kept for the VM before its COMMIT

    Outputs stay on the nodes (write-back): each is kept in this node's
    cache, where LRU never evicts it, and pushed peer to peer to replicas-1
    other nodes, which keep a copy too. An output too few nodes took rides
    with the COMMIT to the center's store. On the center's host the
    outputs are written into its store instead.
    =========================================================================
*/
#include "ieu/ieu_int.h"
#include "base/checksum.h"
#include "base/log.h"
#include "base/lograte.h"

#include <stdlib.h>
#include <string.h>

/* Routine while a node is full or unreachable, and by the thousand: a
   counted line per interval. */
static spm_log_rate_t store_rate =
    SPM_LOG_RATE(SPM_LOG_WARN, "outputs that could not be sent to the center");
static spm_log_rate_t short_rate =
    SPM_LOG_RATE(SPM_LOG_INFO, "outputs kept by fewer nodes than wanted, sent to the center");
static spm_log_rate_t keep_rate = SPM_LOG_RATE(SPM_LOG_WARN, "outputs this node could not keep");

/*  Writes the outputs of the successful SIs of LIST into the center's
    store (this IEU runs on its host). Returns 0, or the failure, after
    which the outputs travel in the COMMIT as from any other node. */
int spm_ieu_store_outputs(ieu_t *ieu, task_t *list)
{
    size_t n = 0;
    for (task_t *t = list; t; t = t->next)
        for (size_t i = 0; t->status == 0 && i < t->nops; i++)
            n += t->ops[i].mode != SPM_R;
    if (n == 0)
        return 0;
    spm_store_block_t *b = malloc(n * sizeof *b);
    if (!b)
        return SPM_ENOMEM;
    n = 0;
    for (task_t *t = list; t; t = t->next)
        for (size_t i = 0; t->status == 0 && i < t->nops; i++)
            if (t->ops[i].mode != SPM_R)
                b[n++] = (spm_store_block_t){t->ops[i].sdb, t->ops[i].version, t->ops[i].type,
                                             t->cops[i].out, t->cops[i].out_len};
    int rc = spm_store_view_put(ieu->store, b, n);
    if (rc != 0)
        spm_log_rated(&store_rate, "sending outputs to the center: %s", spm_error_detail());
    free(b);
    return rc;
}

/*  An output of a task being kept on nodes. */
typedef struct {
    ieu_t *ieu;
    task_t *task;
    size_t out;
} keep_ctx_t;

/*  T's outputs are all kept (or framed): it joins the next COMMIT. */
void spm_ieu_kept_all(ieu_t *ieu, task_t *t)
{
    if (!ieu->nkept++)
        ieu->kept_since = spm_now_us();
    for (size_t i = 0; t->status == 0 && t->cops && i < t->nops; i++)
        ieu->kept_bytes += t->cops[i].out_len;
    push(&ieu->kept, t);
}

static void output_kept(void *arg, const uint32_t *holders, size_t n, int status, const char *why)
{
    keep_ctx_t *kc = arg;
    ieu_t *ieu = kc->ieu;
    task_t *t = kc->task;
    out_t *o = &t->outs[kc->out];
    free(kc);
    int others = 0;
    o->nholders = 0;
    for (size_t i = 0; i < n && o->nholders < 8; i++) {
        o->holders[o->nholders++] = holders[i];
        others |= holders[i] != ieu->node;
    }
    /* The replicas went as a chain: this node's link carried the bytes
       once, whatever the number of other nodes that keep them now. */
    if (others)
        t->bytes_pushed += spm_blockbuf_len(o->buf);
    /* Too few nodes kept it: the center's store takes a copy (it is
       reachable, or nothing is), so an unreachable or full node slows the
       job but never fails it. */
    o->framed = status != 0;
    if (status != 0 && ieu->nnodes > 1)
        spm_log_rated(&short_rate,
                      "an output is kept by %zu nodes of %u wanted (%s); its bytes go to the "
                      "center",
                      n, ieu->replicas, why);
    if (--t->keeping == 0) {
        ieu->keeping--;
        spm_ieu_kept_all(ieu, t);
    }
}

/*  The nodes other than this one that are up, starting at a place that
    depends on (SDB, VERSION) so that replicas spread over the VM. */
static size_t candidates(const ieu_t *ieu, spm_sdb_t sdb, uint64_t version, uint32_t *out)
{
    size_t n = 0, start = ieu->nnodes ? (size_t)((sdb * 31 + version) % ieu->nnodes) : 0;
    for (size_t i = 0; i < ieu->nnodes; i++) {
        uint32_t node = ieu->nodes[(start + i) % ieu->nnodes];
        if (node != ieu->node)
            out[n++] = node;
    }
    return n;
}

/*  Keeps T's outputs for the VM: in this node's cache, and on replicas-1
    other nodes. T joins the next COMMIT when all are kept. */
void spm_ieu_keep_outputs(ieu_t *ieu, task_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nops; i++)
        n += t->ops[i].mode != SPM_R;
    uint32_t *cand = malloc((ieu->nnodes ? ieu->nnodes : 1) * sizeof *cand);
    if (!(t->outs = calloc(n ? n : 1, sizeof *t->outs)) || !cand) {
        free(cand);
        t->status = SPM_ENOMEM;
        t->error = strdup("out of memory keeping outputs");
        spm_ieu_kept_all(ieu, t);
        return;
    }
    t->nouts = n;
    t->keeping = (uint32_t)n;
    ieu->keeping++;
    for (size_t i = 0, k = 0; i < t->nops; i++) {
        op_t *op = &t->ops[i];
        if (op->mode == SPM_R)
            continue;
        spm_si_operand_t *c = &t->cops[i];
        out_t *o = &t->outs[k];
        o->checksum = spm_checksum(c->out, c->out_len);
        o->buf = spm_blockbuf_new(c->out, c->out_len);
        c->out = NULL;
        keep_ctx_t *kc = malloc(sizeof *kc);
        if (kc)
            *kc = (keep_ctx_t){ieu, t, k};
        spm_blockref_t ref = {op->sdb, op->version, op->type, o->checksum,
                              o->buf ? spm_blockbuf_len(o->buf) : 0};
        int mine = o->buf &&
                   spm_nodecache_keep(ieu->cache, op->sdb, op->version, op->type, o->checksum,
                                      spm_blockbuf_data(o->buf), spm_blockbuf_len(o->buf), 1) == 0;
        if (!mine)
            spm_ieu_check_cache(ieu);
        if (!mine)
            spm_log_rated(&keep_rate, "this node cannot keep SDB %llu v%llu: %s",
                          (unsigned long long)op->sdb, (unsigned long long)op->version,
                          spm_error_detail());
        uint32_t self = ieu->node;
        /* With one replica, an output this node cannot keep goes with the
           COMMIT to the center's store, not to a peer: a peer keeps it
           until it is garbage, and on nodes whose caches overflow (the
           only time this happens) each one kept crowds out copies the
           peer reads. A sparse product on 4 nodes of 8 MiB moved 13-19%
           fewer bytes across all links under each policy this way
           (bench/paper/RESULTS.md, the communication section). */
        size_t nc = !mine && ieu->replicas <= 1 ? 0 : candidates(ieu, op->sdb, op->version, cand);
        if (!o->buf || !kc ||
            spm_blockclient_keep(ieu->bc, &ref, o->buf, &self, mine, ieu->replicas, cand, nc, 1,
                                 output_kept, kc) != 0) {
            free(kc);
            /* Out of memory: its bytes go to the center, if there are any. */
            o->framed = o->buf != NULL;
            if (!o->buf && !t->status) {
                t->status = SPM_ENOMEM;
                t->error = strdup("out of memory keeping outputs");
            }
            if (--t->keeping == 0) {
                ieu->keeping--;
                spm_ieu_kept_all(ieu, t);
            }
        }
        k++;
    }
    free(cand);
}
