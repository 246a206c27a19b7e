/*  =========================================================================
    ieu - `spm ieu`: an execution unit that pulls SIs and runs them

    The main thread owns the DEALER socket to the center: it asks for work
    (PULL with credits: slots + prefetch SIs in hand), localizes each SI's
    operands as soon as the SI arrives (node cache, else straight from the
    nodes the ISSUE names as holders, else through the center), so the
    operands of prefetched SIs load while earlier ones run, and commits
    results in batches. `slots` worker threads execute SI bodies on
    operands read zero-copy from the node cache's memory map. Workers and
    the main thread meet at two mutex-guarded queues; an eventfd wakes the
    main thread's poll when a result is done.

    Outputs stay on the nodes (write-back): the IEU keeps each in its
    node's cache, where LRU never evicts it, and has replicas-1 other nodes
    keep a copy (pushed peer to peer) before the COMMIT, which carries only
    where each output lives, its size and checksum. With no other node to
    push to (a lone node), the output's bytes ride with the COMMIT to the
    center's store, its second copy.

    On the center's host (an ipc:// center) the IEU opens the center's store,
    reads operands straight from its memory map and writes its outputs into
    it before the COMMIT (which then carries no frames and says so): the
    store is this node's level 1, nothing is copied through a socket or into
    the node cache, and the center's directory does not list this node as a
    holder.
    =========================================================================
*/
#include "datacache/blockclient.h"
#include "base/checksum.h"
#include "datacache/directory.h"
#include "datacache/nodecache.h"
#include "datacache/storeview.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "runtime/si.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/grow.h"
#include "base/heap.h"
#include "base/hmap.h"
#include "base/log.h"
#include "transport/security.h"

#include "transport/wire.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct {
    spm_sdb_t sdb;
    uint64_t version;    /* written (W, RW, ACC) or read (R) */
    uint64_t in_version; /* RW: read */
    spm_mode_t mode;
    uint32_t type;
    int nocache;       /* SPM_NOCACHE: this node keeps no copy of it */
    int in_store;      /* read from the center's store on this host, not the node cache */
    uint32_t *holders; /* R, RW: the nodes the ISSUE names as holding it */
    size_t nholders;
    uint64_t checksum, bytes; /* ... and its checksum and size */
    int step;                 /* where it was looked for so far (localize_next) */
} op_t;

/*  One output while it is being kept. */
typedef struct {
    spm_blockbuf_t *buf; /* its bytes, shared with the pushes in flight */
    uint64_t checksum;
    uint32_t holders[8]; /* nodes that keep it */
    size_t nholders;
    int framed; /* its bytes go to the center with the COMMIT */
} out_t;

typedef struct task {
    uint64_t id;
    uint32_t attempt;
    const spm_opcode_t *op; /* NULL until its plugin is loaded */
    uint32_t opcode;        /* the opcode's wire id */
    int plugin_op;          /* its last operand is its plugin's bytes, to load first */
    spm_sdb_t plugin;       /* its plugin (0: a built-in program's) */
    op_t *ops;
    size_t nops;
    void *params;
    size_t params_len;
    uint32_t missing;  /* operand fetches outstanding */
    uint64_t recv_us;  /* arrived */
    uint64_t local_us; /* all operands local */
    uint32_t l1_hits, l2_hits, store_reads, evictions;
    uint64_t bytes_l2, bytes_store;
    uint32_t relocalized; /* times an operand was evicted before the SI ran */
    void **own;           /* private copies of operands (after an eviction), or NULL */
    size_t *own_len;
    int missing_operand; /* set by the worker: localize again */
    /* filled by the worker */
    spm_si_operand_t *cops;
    int status;
    char *error;
    unsigned char *reply;
    size_t reply_len;
    uint64_t wait_us, exec_us;
    uint64_t t_start; /* when the body started (monotonic us) */
    out_t *outs;      /* outputs being kept (remote nodes), or NULL */
    size_t nouts;
    uint32_t keeping;      /* outputs not yet kept */
    uint64_t bytes_pushed; /* replica bytes sent to other nodes */
    uint64_t out_bytes;    /* its outputs' bytes, counted in the IEU's unsent */
    uint32_t corrupt;      /* corrupt copies met while fetching operands */
    struct task *next;
} task_t;

typedef struct {
    task_t *head, *tail;
} queue_t;

typedef struct {
    task_t *task;     /* the SI waiting for this block */
    size_t op;        /* operand index */
    uint64_t version; /* the version fetched */
} fetch_t;

typedef struct {
    Spm__BlockRef *v; /* blocks to PUBLISH or DROP in the next message */
    size_t n, cap;
} refs_t;

#define AHEAD_US 2000.0        /* short SIs: hold about this much work ahead */
#define AHEAD_BATCH_US 48000.0 /* ... or this much while the center has more ready */
#define AHEAD_MAX 48           /* ... but never more than this many SIs */
#define HOLD_US 48000          /* a result waits at most this long for others to join it */
#define COMMIT_BATCH 64        /* ... and no longer once this many are waiting */
#define HOLD_BYTES (4u << 20)  /* ... or their outputs take this many bytes */
#define UNSENT_MAX (8u << 20)  /* no SI starts while outputs of 2+ SIs not committed take this */
#define MAX_RELOCALIZE 3
#define UNMAP_BYTES ((uint64_t)8 << 20) /* store bytes read before they are unmapped */

typedef struct {
    void *ctx, *dealer;
    spm_nodecache_t *cache;
    spm_blockclient_t *bc; /* fetches from and pushes to other nodes */
    uint32_t replicas;     /* copies of every output to make */
    uint32_t *nodes;       /* data agents up, from WELCOME and NODES */
    size_t nnodes;
    queue_t kept;            /* executed, outputs kept: the next COMMIT's, in order */
    uint32_t nkept;          /* SIs in kept */
    uint64_t kept_since;     /* when the first of them joined kept */
    uint64_t kept_bytes;     /* the bytes of their outputs, held until the COMMIT */
    uint32_t backlog;        /* SIs the center had ready beyond the last ISSUE */
    uint32_t keeping;        /* SIs whose outputs are still being kept */
    spm_store_view_t *store; /* the center's store, when it is on this host; else NULL */
    int store_reads;         /* may read the store directly (an ipc:// center, not refused) */
    uint32_t index, node, slots, prefetch;
    double exec_ema_us;       /* moving average of SI execution times, 0 before the first */
    uint32_t held;            /* SIs received and not yet committed */
    uint32_t requested;       /* credits asked for and not yet used */
    spm_hmap_t *fetches;      /* GET req -> fetch_t */
    spm_hmap_t *plugins;      /* SDBs of the plugins loaded, -> 1 */
    spm_security_t *security; /* CurveZMQ keys of this node */
    refs_t publish, drop;     /* directory updates not yet sent */
    uint32_t evictions;       /* node-cache evictions since the last commit */
    uint32_t corrupt;         /* corrupt copies met since the last commit */
    uint64_t next_req;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    queue_t ready;       /* operands local, waiting for a slot */
    queue_t done;        /* executed, waiting to be committed */
    uint64_t unsent;     /* bytes of the outputs of done, keeping and kept SIs */
    uint32_t unsent_sis; /* those SIs, with outputs */
    int stop;
    int draining;       /* SIGTERM: finish running SIs, start no new ones */
    uint32_t executing; /* SIs in workers' hands */
    int efd;            /* eventfd: workers -> main thread */
    pthread_t *workers;
    spm_wire_stats_t wire;
    uint32_t heartbeat_ms, dead_ms;
    size_t heap_bytes;       /* memory each thread touches at start, for its SIs (base/heap.h) */
    _Atomic uint64_t mapped; /* store bytes read since its map was last given back */
} ieu_t;

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void push(queue_t *q, task_t *t)
{
    t->next = NULL;
    if (q->tail)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
}

static task_t *pop(queue_t *q)
{
    task_t *t = q->head;
    if (t) {
        q->head = t->next;
        if (!q->head)
            q->tail = NULL;
    }
    return t;
}

static void task_free(task_t *t)
{
    if (!t)
        return;
    if (t->cops) {
        for (size_t i = 0; i < t->nops; i++)
            free(t->cops[i].out);
        free(t->cops);
    }
    for (size_t i = 0; t->own && i < t->nops; i++)
        free(t->own[i]);
    free(t->own);
    free(t->own_len);
    for (size_t i = 0; t->ops && i < t->nops; i++)
        free(t->ops[i].holders);
    for (size_t i = 0; i < t->nouts; i++)
        spm_blockbuf_unref(t->outs[i].buf);
    free(t->outs);
    free(t->ops);
    free(t->params);
    free(t->error);
    free(t->reply);
    free(t);
}

/* -------------------------------------------------------------- workers */

/*  Finds the bytes of version V of operand I of T, local since it was
    localized: its private copy, the center's store (opening *SNAP) or the
    node cache (opening *RD). Returns 0, SPM_ENOTFOUND (no longer there:
    evicted since), or SPM_ESTORE (the node cache cannot be read). */
static int operand_bytes(ieu_t *ieu, task_t *t, size_t i, uint64_t v, spm_nodecache_reader_t **rd,
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
        uint64_t v = o->mode == SPM_R ? o->version : o->mode == SPM_RW ? o->in_version : 0;
        if (!v)
            continue;
        int rc = operand_bytes(ieu, t, i, v, &rd, &snap, &t->cops[i].in, &t->cops[i].in_len);
        if (rc == SPM_ESTORE) {
            t->status = SPM_ESTORE;
            t->error = strdup("cannot read the node cache");
            break;
        }
        if (rc != 0) {
            t->missing_operand = 1; /* evicted since localized: fetch it again */
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
static void prepare_heap(const ieu_t *ieu)
{
    if (ieu->heap_bytes > 0 && spm_heap_prepare(ieu->heap_bytes) != 0)
        spm_log_warn("%s", spm_error_detail());
}

static void *worker(void *arg)
{
    ieu_t *ieu = arg;
    prepare_heap(ieu);
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

static void fail_task(ieu_t *ieu, task_t *t, int code, const char *msg);
static void localize(ieu_t *ieu, task_t *t);

/*  A plugin this IEU was issued SIs of: one of them fetches its bytes
    (plugin_op) while the others wait here, so that the bytes come once. */
typedef struct {
    int loaded;
    int fetching;    /* an SI of it is fetching its bytes */
    queue_t waiting; /* SIs of it that wait for that */
} plugin_t;

/*  The state of plugin SDB, made on first sight (NULL: out of memory). */
static plugin_t *plugin_of(ieu_t *ieu, spm_sdb_t sdb)
{
    plugin_t *pl = spm_hmap_get(ieu->plugins, sdb);
    if (!pl && (pl = calloc(1, sizeof *pl)) && spm_hmap_put(ieu->plugins, sdb, pl) != 0) {
        free(pl);
        pl = NULL;
    }
    return pl;
}

/*  The fetch or load of plugin SDB ended with RC (MSG when it failed): the
    SIs that waited for it go on, or fail with it. */
static void plugin_settled(ieu_t *ieu, spm_sdb_t sdb, int rc, const char *msg)
{
    plugin_t *pl = spm_hmap_get(ieu->plugins, sdb);
    if (!pl)
        return;
    pl->fetching = 0;
    pl->loaded |= rc == 0;
    task_t *t;
    while ((t = pop(&pl->waiting))) {
        if (rc != 0)
            fail_task(ieu, t, rc, msg);
        else if (!(t->op = spm_opcode_by_id(t->opcode)))
            fail_task(ieu, t, SPM_ENOTFOUND, "unknown opcode (not in its plugin)");
        else
            localize(ieu, t);
    }
}

/*  T's plugin (its last operand) is local: loads it and takes the
    operand away. Returns 0, or fails T (and the SIs that waited for the
    plugin) and returns the SPM_E* code. */
static int load_plugin(ieu_t *ieu, task_t *t)
{
    size_t i = t->nops - 1;
    op_t *o = &t->ops[i];
    spm_sdb_t sdb = t->plugin;
    const void *data = NULL;
    size_t len = 0;
    spm_nodecache_reader_t *rd = NULL;
    spm_store_snap_t *snap = NULL;
    int rc = operand_bytes(ieu, t, i, 1, &rd, &snap, &data, &len);
    if (rc != 0)
        rc = spm_error(SPM_ESTORE, "its plugin (SDB %llu) is no longer in the %s",
                       (unsigned long long)sdb, o->in_store ? "store" : "node cache");
    char scope[SPM_SCOPE_LEN];
    if (rc == 0)
        rc = spm_plugin_load(data, len, scope);
    spm_nodecache_reader_end(&rd);
    spm_store_snap_end(&snap);
    free(o->holders);
    if (t->own) {
        free(t->own[i]);
        t->own[i] = NULL;
    }
    t->nops--;
    t->plugin_op = 0;
    char msg[600] = "";
    if (rc != 0)
        snprintf(msg, sizeof msg, "loading its plugin: %s", spm_error_detail());
    plugin_settled(ieu, sdb, rc, msg);
    if (rc == 0 && !(t->op = spm_opcode_by_id(t->opcode))) {
        rc = SPM_ENOTFOUND;
        snprintf(msg, sizeof msg, "unknown opcode (not in its plugin)");
    }
    if (rc != 0)
        fail_task(ieu, t, rc, msg);
    return rc;
}

static void make_local(ieu_t *ieu, task_t *t)
{
    if (t->plugin_op && load_plugin(ieu, t) != 0)
        return;
    t->local_us = spm_now_us();
    pthread_mutex_lock(&ieu->lock);
    push(&ieu->ready, t);
    pthread_cond_signal(&ieu->cond);
    pthread_mutex_unlock(&ieu->lock);
}

/* ---------------------------------------------------------- main thread */

static int send_env(ieu_t *ieu, Spm__Envelope *env, spm_frame_t *f, size_t n)
{
    return spm_wire_send(ieu->dealer, NULL, env, f, n, &ieu->wire);
}

/*  SIs to hold ahead of the running ones: --prefetch, or more while SIs
    are short, enough to keep the slots busy for AHEAD_US. A short SI ends
    before the center could answer for the next one, so with one SI ahead
    the slots would wait on every round trip; a long one keeps its slot
    busy, and holding more would only take work from other IEUs. */
static uint32_t ahead(const ieu_t *ieu)
{
    if (ieu->prefetch == 0 || ieu->exec_ema_us <= 0)
        return ieu->prefetch;
    double cover = (ieu->backlog ? AHEAD_BATCH_US : AHEAD_US) * ieu->slots / ieu->exec_ema_us;
    if (ieu->backlog && cover > ieu->backlog / 2.0)
        cover = ieu->backlog / 2.0; /* near a stage's end: leave the last SIs to others */
    if (cover <= ieu->prefetch)
        return ieu->prefetch;
    return cover >= AHEAD_MAX ? AHEAD_MAX : (uint32_t)cover;
}

/*  Credits to ask for now: enough to hold slots + ahead() SIs. */
static uint32_t wanted(const ieu_t *ieu)
{
    uint32_t want = ieu->slots + ahead(ieu);
    return ieu->held + ieu->requested >= want ? 0 : want - ieu->held - ieu->requested;
}

static void pull(ieu_t *ieu)
{
    uint32_t credits = wanted(ieu);
    if (!credits)
        return;
    Spm__Pull p = SPM__PULL__INIT;
    p.credits = credits;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PULL;
    env.pull = &p;
    if (send_env(ieu, &env, NULL, 0) == 0)
        ieu->requested += p.credits;
}

/*  Fails T without running it (a malformed SI): it is committed with the
    error so the center decides. */
static void fail_task(ieu_t *ieu, task_t *t, int code, const char *msg)
{
    if (t->plugin_op) { /* it was fetching its plugin: the SIs waiting for it fail too */
        t->plugin_op = 0;
        plugin_settled(ieu, t->plugin, code, msg);
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

static void refs_add(refs_t *r, spm_sdb_t sdb, uint64_t version, uint64_t bytes)
{
    if (spm_grow(&r->v, r->n, &r->cap, sizeof *r->v, 32) != 0)
        return; /* the directory is a hint: a missed update costs a fetch */
    Spm__BlockRef *b = &r->v[r->n++];
    spm__block_ref__init(b);
    b->sdb = sdb;
    b->version = version;
    b->bytes = bytes;
}

/*  Sends the pending PUBLISH and DROP messages. */
static void send_refs(ieu_t *ieu)
{
    refs_t *lists[2] = {&ieu->publish, &ieu->drop};
    for (int k = 0; k < 2; k++) {
        refs_t *r = lists[k];
        if (!r->n)
            continue;
        Spm__BlockRef **ptrs = malloc(r->n * sizeof *ptrs);
        if (!ptrs)
            return;
        for (size_t i = 0; i < r->n; i++)
            ptrs[i] = &r->v[i];
        Spm__Publish pub = SPM__PUBLISH__INIT;
        Spm__Drop drop = SPM__DROP__INIT;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        if (k == 0) {
            pub.n_blocks = r->n;
            pub.blocks = ptrs;
            env.body_case = SPM__ENVELOPE__BODY_PUBLISH;
            env.publish = &pub;
        } else {
            drop.n_blocks = r->n;
            drop.blocks = ptrs;
            env.body_case = SPM__ENVELOPE__BODY_DROP;
            env.drop = &drop;
        }
        send_env(ieu, &env, NULL, 0);
        free(ptrs);
        r->n = 0;
    }
}

/*  Node-cache callback: a block left this node's cache. */
static void on_evict(void *arg, spm_sdb_t id, uint64_t version, uint32_t type, const void *data,
                     size_t len)
{
    (void)type;
    (void)data;
    ieu_t *ieu = arg;
    refs_add(&ieu->drop, id, version, len);
    ieu->evictions++;
}

/*  Asks the center for operand I of T at VERSION: the center answers
    with the nodes that hold it or, with STORE_ONLY or when only its store
    has it, with the block. */
static void request(ieu_t *ieu, task_t *t, size_t i, uint64_t version, int store_only)
{
    fetch_t *f = malloc(sizeof *f);
    if (!f)
        return;
    *f = (fetch_t){t, i, version};
    uint64_t req = ++ieu->next_req;
    spm_hmap_put(ieu->fetches, req, f);
    Spm__Get g = SPM__GET__INIT;
    g.req = req;
    g.sdb = t->ops[i].sdb;
    g.version = version;
    g.store_only = store_only;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_GET;
    env.get = &g;
    send_env(ieu, &env, NULL, 0);
}

/*  The version operand O reads (0: none). */
static uint64_t read_version(const op_t *o)
{
    return o->mode == SPM_R ? o->version : o->mode == SPM_RW ? o->in_version : 0;
}

/*  One operand fetch of T ended with STATUS (WHY when it failed). */
static void fetched(ieu_t *ieu, task_t *t, int status, const char *why)
{
    if (status != 0 && !t->status) {
        t->status = status;
        t->error = strdup(why);
    }
    if (--t->missing > 0)
        return;
    if (t->status) {
        int st = t->status;
        char *err = t->error;
        t->status = 0;
        t->error = NULL;
        fail_task(ieu, t, st == SPM_EFORMAT ? SPM_ESTORE : st, err);
        free(err);
    } else {
        make_local(ieu, t);
    }
}

/*  Checks and caches the block BYTES (LEN) that arrived for operand I of
    T, from another node (PEER) or the center. Returns 0, or SPM_EFORMAT
    (malformed: the caller tries elsewhere) or SPM_ENOMEM. */
static int accept_block(ieu_t *ieu, task_t *t, size_t i, const void *bytes, size_t len, int peer)
{
    op_t *o = &t->ops[i];
    uint64_t v = read_version(o);
    if (spm_sdb_check(o->type, bytes, len) != 0)
        return SPM_EFORMAT;
    /* A copy to read: evictable, and refused when the node's budget is
       taken by the blocks it keeps for the VM. The SI then keeps its own,
       as it does after an eviction or for a block read once. */
    int cached = !o->nocache && !t->relocalized &&
                 spm_nodecache_put(ieu->cache, o->sdb, v, o->type, bytes, len) == 0;
    if (!cached) {
        if (!t->own && (!(t->own = calloc(t->nops, sizeof *t->own)) ||
                        !(t->own_len = calloc(t->nops, sizeof *t->own_len))))
            return SPM_ENOMEM;
        free(t->own[i]);
        if (!(t->own[i] = malloc(len ? len : 1)))
            return SPM_ENOMEM;
        memcpy(t->own[i], bytes, len);
        t->own_len[i] = len;
    } else {
        refs_add(&ieu->publish, o->sdb, v, len);
    }
    if (peer) {
        t->l2_hits++;
        t->bytes_l2 += len;
    } else {
        t->store_reads++;
        t->bytes_store += len;
    }
    return 0;
}

static void localize_next(ieu_t *ieu, task_t *t, size_t i, const char *why);

/*  A fetch from other nodes asked for operand I of T. */
typedef struct {
    ieu_t *ieu;
    task_t *task;
    size_t op;
} peer_fetch_t;

static void peer_fetched(void *arg, int status, zmq_msg_t *block, uint32_t node, const char *why)
{
    (void)node;
    peer_fetch_t *pf = arg;
    ieu_t *ieu = pf->ieu;
    task_t *t = pf->task;
    size_t i = pf->op;
    free(pf);
    if (status == 0 && accept_block(ieu, t, i, zmq_msg_data(block), zmq_msg_size(block), 1) == 0) {
        fetched(ieu, t, 0, NULL);
        return;
    }
    localize_next(ieu, t, i, status == 0 ? "a copy from another node is malformed" : why);
}

/*  Fetches operand I of T from the N HOLDERS. Returns 0 when asked. */
static int fetch_from(ieu_t *ieu, task_t *t, size_t i, const uint32_t *holders, size_t n)
{
    op_t *o = &t->ops[i];
    spm_blockref_t ref = {o->sdb, read_version(o), o->type, o->checksum, o->bytes};
    peer_fetch_t *pf = malloc(sizeof *pf);
    if (!pf)
        return SPM_ENOMEM;
    *pf = (peer_fetch_t){ieu, t, i};
    int rc = spm_blockclient_fetch(ieu->bc, &ref, holders, n, peer_fetched, pf);
    if (rc != 0)
        free(pf);
    return rc;
}

/*  Looks for operand I of T in the next place: the holders the ISSUE
    named; then the center, which names the holders it knows now or sends
    the block from its store; then its store alone. WHY says why the last
    place failed; after the last, the SI fails with it. */
static void localize_next(ieu_t *ieu, task_t *t, size_t i, const char *why)
{
    op_t *o = &t->ops[i];
    int step = o->step++;
    if (step == 0 && o->nholders && fetch_from(ieu, t, i, o->holders, o->nholders) == 0)
        return;
    if (step <= 1) { /* no holder named, or none could give it */
        o->step = 2;
        request(ieu, t, i, read_version(o), 0);
    } else if (step == 2) { /* the center's holders failed too: its store is the last place */
        request(ieu, t, i, read_version(o), 1);
    } else {
        char msg[768];
        snprintf(msg, sizeof msg, "SDB %llu v%llu: %s", (unsigned long long)o->sdb,
                 (unsigned long long)read_version(o), why && *why ? why : "not found");
        fetched(ieu, t, SPM_ESTORE, msg);
    }
}

#define TO_FETCH -1 /* op_t.step of an operand localize is about to look for */

/*  Starts localizing T: operands already in the node cache (or, on the
    center's host, its store) are level-1 hits; the others are fetched. T
    goes to the ready queue once all are local. */
static void localize(ieu_t *ieu, task_t *t)
{
    for (size_t i = 0; i < t->nops; i++) {
        op_t *o = &t->ops[i];
        uint64_t v = read_version(o);
        o->step = 0;
        if (!v)
            continue;
        if (t->own && t->own[i])
            continue; /* kept from an earlier localization */
        o->in_store =
            ieu->store && !t->relocalized && spm_store_view_has(ieu->store, o->sdb, v) == 1;
        if (o->in_store || (!t->relocalized && spm_nodecache_has(ieu->cache, o->sdb, v))) {
            t->l1_hits++;
        } else {
            t->missing++;
            o->step = TO_FETCH;
        }
    }
    if (t->missing == 0) {
        make_local(ieu, t);
        return;
    }
    /* Asked only once every operand is counted: a fetch may end at once. */
    for (size_t i = 0; i < t->nops; i++)
        if (t->ops[i].step == TO_FETCH) {
            t->ops[i].step = 0;
            localize_next(ieu, t, i, NULL);
        }
}

static void on_get_reply(ieu_t *ieu, spm_msg_t *m)
{
    Spm__GetReply *r = m->env->get_reply;
    fetch_t *f = spm_hmap_remove(ieu->fetches, r->req);
    if (!f)
        return; /* a reply nobody asked for */
    task_t *t = f->task;
    size_t i = f->op;
    free(f);
    op_t *o = &t->ops[i];
    if (r->status == 0 && r->n_holders > 0 && m->nframes == 0) {
        /* The center names the nodes that hold it now. */
        uint32_t nodes[16];
        size_t n = 0;
        for (size_t k = 0; k < r->n_holders && k < r->n_holder_nodes && n < 16; k++)
            if (spm_blockclient_node(ieu->bc, r->holder_nodes[k], r->holders[k],
                                     k < r->n_holder_keys ? r->holder_keys[k] : "") == 0)
                nodes[n++] = r->holder_nodes[k];
        o->checksum = r->checksum;
        o->bytes = r->bytes;
        if (n && fetch_from(ieu, t, i, nodes, n) == 0)
            return;
        localize_next(ieu, t, i, "no holder could be reached");
        return;
    }
    if (r->status != 0) {
        localize_next(ieu, t, i, r->error && *r->error ? r->error : spm_strerror(r->status));
        return;
    }
    int rc =
        m->nframes == 1 && r->type == o->type
            ? accept_block(ieu, t, i, zmq_msg_data(&m->frames[0]), zmq_msg_size(&m->frames[0]), 0)
            : SPM_EFORMAT;
    if (rc == 0)
        fetched(ieu, t, 0, NULL);
    else
        localize_next(ieu, t, i, "a block from the store is malformed");
}

/*  Block client callback: NODE sent a corrupt copy of REF. The center
    hears of it (it stops naming that node and has it delete the copy). */
static void on_corrupt(void *arg, uint32_t node, const spm_blockref_t *ref)
{
    ieu_t *ieu = arg;
    spm_log_warn("node %u sent a corrupt copy of SDB %llu v%llu; trying another holder", node,
                 (unsigned long long)ref->sdb, (unsigned long long)ref->version);
    size_t n = ieu->drop.n;
    refs_add(&ieu->drop, ref->sdb, ref->version, ref->bytes);
    if (ieu->drop.n > n) {
        ieu->drop.v[n].corrupt = 1;
        ieu->drop.v[n].node = node;
    }
    ieu->corrupt++;
}

static void on_issue(ieu_t *ieu, Spm__Issue *is)
{
    uint64_t now = spm_now_us();
    ieu->backlog = is->backlog;
    for (size_t k = 0; k < is->n_sis; k++) {
        Spm__Si *s = is->sis[k];
        task_t *t = calloc(1, sizeof *t);
        if (!t)
            continue;
        ieu->held++;
        if (ieu->requested)
            ieu->requested--;
        t->id = s->id;
        t->attempt = s->attempt;
        t->recv_us = now;
        t->opcode = s->opcode;
        t->op = spm_opcode_by_id(s->opcode);
        plugin_t *pl = s->plugin ? plugin_of(ieu, s->plugin->sdb) : NULL;
        if (s->plugin && !pl) {
            fail_task(ieu, t, SPM_ENOMEM, "out of memory");
            continue;
        }
        t->plugin = s->plugin ? s->plugin->sdb : 0;
        if (pl && !pl->loaded && s->plugin->checksum) {
            /* The same bytes under another SDB (put again by a later run) */
            char scope[SPM_SCOPE_LEN];
            spm_plugin_scope(s->plugin->checksum, scope);
            pl->loaded = spm_plugin_loaded(scope);
        }
        t->plugin_op = pl && !pl->loaded && !pl->fetching;
        int wait = pl && !pl->loaded && !t->plugin_op; /* another SI fetches it */
        if (t->plugin_op)
            pl->fetching = 1;
        t->nops = s->n_ops + (size_t)t->plugin_op;
        t->ops = calloc(t->nops ? t->nops : 1, sizeof *t->ops);
        t->params = malloc(s->params.len ? s->params.len : 1);
        t->params_len = s->params.len;
        if (!t->ops || !t->params) {
            fail_task(ieu, t, SPM_ENOMEM, "out of memory");
            continue;
        }
        if (s->params.len)
            memcpy(t->params, s->params.data, s->params.len);
        if (!t->op && (!pl || pl->loaded)) {
            fail_task(ieu, t, SPM_ENOTFOUND,
                      s->plugin ? "unknown opcode (not in its plugin)"
                                : "unknown opcode (IEU binary differs from center's)");
            continue;
        }
        int bad = 0;
        for (size_t i = 0; i < t->nops; i++) {
            Spm__Operand *o = i < s->n_ops ? s->ops[i] : s->plugin;
            t->ops[i] = (op_t){.sdb = o->sdb,
                               .version = o->version,
                               .in_version = o->in_version,
                               .mode = (spm_mode_t)o->mode,
                               .type = o->type,
                               .nocache = o->nocache,
                               .checksum = o->checksum,
                               .bytes = o->bytes};
            if (o->n_holders && (t->ops[i].holders = malloc(o->n_holders * sizeof(uint32_t)))) {
                memcpy(t->ops[i].holders, o->holders, o->n_holders * sizeof(uint32_t));
                t->ops[i].nholders = o->n_holders;
            }
            bad |= o->mode < SPM_R || o->mode > SPM_ACC;
        }
        if (bad) {
            fail_task(ieu, t, SPM_EPROTO, "invalid operand mode");
            continue;
        }
        if (wait)
            push(&pl->waiting, t); /* localized once the plugin is loaded */
        else
            localize(ieu, t);
    }
}

/*  Writes the outputs of the successful SIs of LIST into the center's
    store (this IEU runs on its host). Returns 0, or the failure, after
    which the outputs travel in the COMMIT as from any other node. */
static int store_outputs(ieu_t *ieu, task_t *list)
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
        spm_log_warn("sending outputs to the center: %s", spm_error_detail());
    free(b);
    return rc;
}

/* ------------------------------------------------------ keeping outputs */

/*  An output of a task being kept on nodes. */
typedef struct {
    ieu_t *ieu;
    task_t *task;
    size_t out;
} keep_ctx_t;

/*  T's outputs are all kept (or framed): it joins the next COMMIT. */
static void kept_all(ieu_t *ieu, task_t *t)
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
        spm_log_info("an output is kept by %zu nodes of %u wanted (%s); its bytes go to the "
                     "center",
                     n, ieu->replicas, why);
    if (--t->keeping == 0) {
        ieu->keeping--;
        kept_all(ieu, t);
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
static void keep_outputs(ieu_t *ieu, task_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nops; i++)
        n += t->ops[i].mode != SPM_R;
    uint32_t *cand = malloc((ieu->nnodes ? ieu->nnodes : 1) * sizeof *cand);
    if (!(t->outs = calloc(n ? n : 1, sizeof *t->outs)) || !cand) {
        free(cand);
        t->status = SPM_ENOMEM;
        t->error = strdup("out of memory keeping outputs");
        kept_all(ieu, t);
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
            spm_log_warn("this node cannot keep SDB %llu v%llu: %s", (unsigned long long)op->sdb,
                         (unsigned long long)op->version, spm_error_detail());
        uint32_t self = ieu->node;
        size_t nc = candidates(ieu, op->sdb, op->version, cand);
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
                kept_all(ieu, t);
            }
        }
        k++;
    }
    free(cand);
}

/*  Takes the SIs the workers finished: an SI whose operand was evicted
    between localizing and running is localized again (a few times), not
    failed; the others have their outputs kept, or go straight to the next
    COMMIT (failed SIs, and outputs written into the center's store on its
    host). */
static void collect_done(ieu_t *ieu)
{
    uint64_t junk;
    if (read(ieu->efd, &junk, sizeof junk) < 0 && errno != EAGAIN)
        spm_log_debug("eventfd read failed");
    pthread_mutex_lock(&ieu->lock);
    task_t *all = ieu->done.head;
    ieu->done.head = ieu->done.tail = NULL;
    pthread_mutex_unlock(&ieu->lock);
    for (task_t *t = all, *next; t; t = next) {
        next = t->next;
        if (t->missing_operand && t->relocalized < MAX_RELOCALIZE) {
            t->missing_operand = 0;
            t->relocalized++;
            free(t->cops);
            t->cops = NULL;
            localize(ieu, t);
            continue;
        }
        if (t->missing_operand && !t->status) {
            t->status = SPM_ESTORE;
            t->error = strdup("operands keep leaving the node cache: budget too small?");
        }
        if (t->status == 0) {
            ieu->exec_ema_us = ieu->exec_ema_us > 0
                                   ? 0.8 * ieu->exec_ema_us + 0.2 * (double)t->exec_us
                                   : (double)t->exec_us + 1.0;
        }
        int outputs = 0;
        for (size_t i = 0; t->status == 0 && i < t->nops; i++)
            outputs |= t->ops[i].mode != SPM_R;
        if (outputs && !ieu->store)
            keep_outputs(ieu, t);
        else
            kept_all(ieu, t);
    }
}

/*  Fills result R for T; its outputs' metadata points into T. */
static void fill_result(ieu_t *ieu, task_t *t, Spm__Result *r, int first)
{
    spm__result__init(r);
    r->si = t->id;
    r->attempt = t->attempt;
    r->status = t->status;
    r->error = t->error ? t->error : "";
    r->wait_us = t->wait_us;
    r->exec_us = t->exec_us;
    r->localize_us = t->local_us > t->recv_us ? t->local_us - t->recv_us : 0;
    r->reply.data = t->reply;
    r->reply.len = t->reply_len;
    r->l1_hits = t->l1_hits;
    r->l2_hits = t->l2_hits;
    r->store_reads = t->store_reads;
    r->bytes_l2 = t->bytes_l2;
    r->bytes_store = t->bytes_store;
    r->bytes_in = t->bytes_l2 + t->bytes_store;
    r->bytes_pushed = t->bytes_pushed;
    r->evictions = first ? ieu->evictions : 0;
    r->corrupt = first ? ieu->corrupt : 0;
    r->t_recv = t->recv_us;
    r->t_local = t->local_us;
    r->t_start = t->t_start;
    r->t_end = t->t_start + t->exec_us;
}

/*  Whether the kept results should go now (NOW: spm_now_us()). They wait,
    to share one COMMIT (and the center's one wake-up, and the next ISSUE)
    with the results that follow, only while nothing can be waiting for
    them: the center had a batch's worth (AHEAD_MAX) of other SIs ready at
    its last ISSUE, this IEU still has more SIs in hand than slots (it
    needs nothing yet), fewer than COMMIT_BATCH wait, with outputs of less
    than HOLD_BYTES, the oldest for less than HOLD_US, and no drain is under
    way. A lone SI, or the last ones of a job or a stage, go at once: the
    center deals the last SIs by what each IEU still holds (spm_idu_pump),
    and results held back would make it count them as work still to do. */
static int commit_due(const ieu_t *ieu, uint64_t now)
{
    if (!ieu->nkept)
        return 0;
    return ieu->draining || ieu->backlog < AHEAD_MAX || ieu->held - ieu->nkept <= ieu->slots ||
           ieu->nkept >= COMMIT_BATCH || ieu->kept_bytes >= HOLD_BYTES ||
           now - ieu->kept_since >= HOLD_US;
}

/*  Milliseconds until the kept results are due (for the poll), or -1. */
static long commit_wait_ms(const ieu_t *ieu, uint64_t now)
{
    if (!ieu->nkept)
        return -1;
    uint64_t due = ieu->kept_since + HOLD_US;
    return due <= now ? 0 : (long)((due - now + 999) / 1000);
}

/*  Sends every SI whose outputs are kept in one COMMIT: where each output
    lives, plus the bytes of those that go to the center's store. On the
    center's host the outputs are written into its store first and the
    COMMIT carries nothing but results. */
static void send_commit(ieu_t *ieu)
{
    task_t *list = ieu->kept.head;
    if (!list || !commit_due(ieu, spm_now_us()))
        return;
    ieu->kept.head = ieu->kept.tail = NULL;
    ieu->nkept = 0;
    ieu->kept_bytes = 0;
    size_t n = 0, nouts = 0;
    for (task_t *t = list; t; t = t->next) {
        n++;
        for (size_t i = 0; t->status == 0 && i < t->nops; i++)
            nouts += t->ops[i].mode != SPM_R;
    }
    int stored = ieu->store && store_outputs(ieu, list) == 0;
    Spm__Result *res = calloc(n, sizeof *res);
    Spm__Result **resp = calloc(n, sizeof *resp);
    Spm__BlockMeta *metas = calloc(nouts ? nouts : 1, sizeof *metas);
    Spm__BlockMeta **pmetas = calloc(nouts ? nouts : 1, sizeof *pmetas);
    spm_frame_t *frames = calloc(nouts ? nouts : 1, sizeof *frames);
    if (!res || !resp || !metas || !pmetas || !frames)
        goto done; /* leases bring these SIs back */
    size_t k = 0, f = 0, b = 0;
    for (task_t *t = list; t; t = t->next, k++) {
        Spm__Result *r = &res[k];
        fill_result(ieu, t, r, k == 0);
        resp[k] = r;
        if (t->status != 0)
            continue;
        if (stored) { /* the center checks that many are in its store */
            for (size_t i = 0; i < t->nops; i++)
                r->outputs += t->ops[i].mode != SPM_R;
            continue;
        }
        r->blocks = &pmetas[b];
        for (size_t i = 0, o = 0; i < t->nops; i++) {
            if (t->ops[i].mode == SPM_R)
                continue;
            Spm__BlockMeta *m = &metas[b];
            spm__block_meta__init(m);
            pmetas[b++] = m;
            r->n_blocks++;
            if (t->outs) { /* kept on nodes */
                out_t *out = &t->outs[o++];
                m->bytes = spm_blockbuf_len(out->buf);
                m->checksum = out->checksum;
                m->holders = out->holders;
                m->n_holders = out->nholders;
                m->framed = out->framed;
                if (out->framed)
                    frames[f++] = spm_blockbuf_frame(out->buf);
            } else { /* the center's store on this host refused them: send them */
                spm_si_operand_t *c = &t->cops[i];
                m->bytes = c->out_len;
                m->checksum = spm_checksum(c->out, c->out_len);
                m->framed = 1;
                frames[f++] = (spm_frame_t){c->out, c->out_len, spm_wire_free, NULL};
                c->out = NULL;
            }
            r->outputs += m->framed;
        }
    }
    ieu->evictions = ieu->corrupt = 0;
    for (task_t *t = list; t; t = t->next)
        ieu->held--;
    Spm__Commit cm = SPM__COMMIT__INIT;
    cm.n_results = n;
    cm.results = resp;
    cm.credits = wanted(ieu); /* the next PULL rides on the COMMIT */
    cm.sent_us = spm_now_us();
    cm.uncached = ieu->store != NULL;
    cm.stored = stored;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_COMMIT;
    env.commit = &cm;
    if (send_env(ieu, &env, frames, f) == 0)
        ieu->requested += cm.credits;
done:;
    uint64_t sent = 0;
    uint32_t sent_sis = 0;
    for (task_t *t = list, *next; t; t = next) {
        next = t->next;
        sent += t->out_bytes;
        sent_sis += t->out_bytes > 0;
        task_free(t);
    }
    if (sent) {
        pthread_mutex_lock(&ieu->lock);
        ieu->unsent -= sent;
        ieu->unsent_sis -= sent_sis;
        pthread_cond_broadcast(&ieu->cond);
        pthread_mutex_unlock(&ieu->lock);
    }
    free(res);
    free(resp);
    free(metas);
    free(pmetas);
    free(frames);
}

/*  NODES: the data agents up now. Nodes gone are forgotten (their fetches
    and pushes move on), new ones learned. */
static void on_nodes(ieu_t *ieu, Spm__Node **nodes, size_t n)
{
    uint32_t *now = malloc((n ? n : 1) * sizeof *now);
    if (!now)
        return;
    for (size_t i = 0; i < n; i++) {
        now[i] = nodes[i]->index;
        if (spm_blockclient_node(ieu->bc, nodes[i]->index, nodes[i]->endpoint, nodes[i]->key) != 0)
            spm_log_warn("node %u: out of memory", nodes[i]->index);
    }
    for (size_t i = 0; i < ieu->nnodes; i++) {
        int up = 0;
        for (size_t k = 0; k < n && !up; k++)
            up = now[k] == ieu->nodes[i];
        if (!up)
            spm_blockclient_node_down(ieu->bc, ieu->nodes[i]);
    }
    free(ieu->nodes);
    ieu->nodes = now;
    ieu->nnodes = n;
}

/*  Opens the center's store named in welcome W for direct reads, when this
    IEU may (an ipc:// center is on this host) and it is the store W names. */
static void open_store(ieu_t *ieu, const Spm__Welcome *w)
{
    if (!ieu->store_reads || !w->store_dir || !*w->store_dir || w->store_id.len != 16)
        return;
    ieu->store = spm_store_view_open(w->store_dir, w->store_id.data);
    if (!ieu->store)
        spm_log_info("reading blocks through the center: %s", spm_error_detail());
}

/*  Reads the node index the agent writes on FD once the center has
    welcomed the node, then closes FD. The agent writes one 4-byte record
    per IEU, atomically, and every reader takes 4 bytes, so IEUs sharing
    the pipe each get a whole one. Returns 0, or -1 when the pipe closed
    first (the agent could not join and says why) or a signal came. */
static int await_node(int fd, uint32_t *node)
{
    uint8_t b[4];
    ssize_t n = -1;
    while (!stop_flag) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue; /* a timeout, or a signal: stop_flag is looked at */
        n = read(fd, b, sizeof b);
        if (n >= 0 || errno != EINTR)
            break;
    }
    close(fd);
    if (n != (ssize_t)sizeof b)
        return -1;
    memcpy(node, b, sizeof b);
    return 0;
}

/*  Says HELLO and waits for the WELCOME. MONITOR (may be NULL) reports
    the handshakes with CENTER: a refused key ends the wait at once.
    Returns 0, SPM_EDENIED (detail set) or SPM_EUNREACH. */
static int hello(ieu_t *ieu, long timeout_ms, void *monitor, const char *center)
{
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__IEU;
    h.node_index = ieu->node;
    h.slots = ieu->slots;
    h.pid = (uint32_t)getpid();
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    if (send_env(ieu, &env, NULL, 0) != 0)
        return SPM_EUNREACH;
    zmq_pollitem_t items[2] = {{ieu->dealer, 0, ZMQ_POLLIN, 0}, {monitor, 0, ZMQ_POLLIN, 0}};
    uint64_t deadline = spm_now_us() + (uint64_t)timeout_ms * 1000;
    while (!stop_flag && spm_now_us() < deadline) {
        if (zmq_poll(items, monitor ? 2 : 1, 100) <= 0)
            continue;
        if (monitor && spm_security_monitor_read(ieu->security, monitor, center) != 0)
            return SPM_EDENIED;
        spm_msg_t m;
        if (spm_wire_recv(ieu->dealer, 0, 1, &m, &ieu->wire) != 1)
            continue;
        int ok = m.env->body_case == SPM__ENVELOPE__BODY_WELCOME;
        if (ok) {
            ieu->index = m.env->welcome->index;
            ieu->heartbeat_ms = m.env->welcome->heartbeat_ms;
            ieu->dead_ms = m.env->welcome->dead_ms;
            ieu->replicas = m.env->welcome->replicas ? m.env->welcome->replicas : 1;
            open_store(ieu, m.env->welcome);
            on_nodes(ieu, m.env->welcome->nodes, m.env->welcome->n_nodes);
        }
        spm_msg_close(&m);
        if (ok)
            return 0;
    }
    return SPM_EUNREACH;
}

static int run(ieu_t *ieu)
{
    uint64_t last_heard = spm_now_us(), last_beat = 0;
    pull(ieu);
    for (;;) {
        if (stop_flag && !ieu->draining) {
            /* SIGTERM drains: running SIs finish and commit, queued ones
               go back to the center with the BYE below. */
            pthread_mutex_lock(&ieu->lock);
            ieu->draining = 1;
            pthread_cond_broadcast(&ieu->cond);
            pthread_mutex_unlock(&ieu->lock);
        }
        if (ieu->draining) {
            pthread_mutex_lock(&ieu->lock);
            int idle = ieu->executing == 0 && !ieu->done.head && !ieu->keeping && !ieu->kept.head;
            pthread_mutex_unlock(&ieu->lock);
            if (idle)
                break;
        }
        /* The center, the workers' eventfd, and the nodes asked for blocks. */
        zmq_pollitem_t items[2 + 256];
        int nitems = 2;
        items[0] = (zmq_pollitem_t){ieu->dealer, 0, ZMQ_POLLIN, 0};
        items[1] = (zmq_pollitem_t){NULL, ieu->efd, ZMQ_POLLIN, 0};
        nitems += spm_blockclient_items(ieu->bc, items + 2, 256);
        int busy = spm_hmap_size(ieu->fetches) || spm_blockclient_pending(ieu->bc);
        long wait = busy ? 100 : (long)ieu->heartbeat_ms, due = commit_wait_ms(ieu, spm_now_us());
        int n = zmq_poll(items, nitems, due >= 0 && due < wait ? due : wait);
        if (n < 0 && zmq_errno() != EINTR)
            return SPM_ESYS;
        if (items[1].revents & ZMQ_POLLIN)
            collect_done(ieu);
        if (nitems > 2)
            spm_blockclient_process(ieu->bc);
        for (int k = 0; (items[0].revents & ZMQ_POLLIN) && k < 1024; k++) {
            spm_msg_t m;
            int r = spm_wire_recv(ieu->dealer, 0, 1, &m, &ieu->wire);
            if (r == 2)
                continue;
            if (r != 1)
                break;
            last_heard = spm_now_us();
            switch (m.env->body_case) {
            case SPM__ENVELOPE__BODY_ISSUE:
                on_issue(ieu, m.env->issue);
                break;
            case SPM__ENVELOPE__BODY_GET_REPLY:
                on_get_reply(ieu, &m);
                break;
            case SPM__ENVELOPE__BODY_NODES:
                on_nodes(ieu, m.env->nodes->nodes, m.env->nodes->n_nodes);
                break;
            case SPM__ENVELOPE__BODY_SHUTDOWN:
                spm_msg_close(&m);
                return 0;
            default:
                break;
            }
            spm_msg_close(&m);
        }
        spm_blockclient_expire(ieu->bc, spm_now_us());
        send_commit(ieu);
        send_refs(ieu);
        if (!ieu->draining)
            pull(ieu);
        uint64_t now = spm_now_us();
        if (now - last_beat >= (uint64_t)ieu->heartbeat_ms * 1000) {
            Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
            Spm__Envelope env = SPM__ENVELOPE__INIT;
            env.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
            env.heartbeat = &hb;
            send_env(ieu, &env, NULL, 0);
            last_beat = now;
        }
        if (now - last_heard > 2 * (uint64_t)ieu->dead_ms * 1000) {
            spm_log_warn("the center has been silent for %u ms; exiting", 2 * ieu->dead_ms);
            return SPM_EUNREACH;
        }
    }
    /* Drained: tell the center, which re-issues what is still held here. */
    Spm__Bye bye = SPM__BYE__INIT;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_BYE;
    env.bye = &bye;
    send_env(ieu, &env, NULL, 0);
    return 0;
}

/*  Its options that are not settings; spm_config_help prints the settings'. */
static const char ieu_help[] =
    "usage: spm ieu --center ENDPOINT (--node N | --node-fd FD) --cache-dir DIR [OPTIONS]\n\n"
    "Runs one execution unit. Normally started by `spm agent`, not by hand.\n\n"
    "  --center ENDPOINT   the center to pull SIs from\n"
    "  --node N            this node's index, as the center gave it to the agent\n"
    "  --node-fd FD        read the index from FD (4 bytes) before joining: how an\n"
    "                      agent starts its IEUs while the center welcomes it\n"
    "  --cache-dir DIR     the node cache (shared by all IEUs of the node)\n"
    "  --local-files       SIs may read a client's input file by its path (an\n"
    "                      embedded VM's IEUs: same machine, same user)\n";

static int ieu_main(int argc, char **argv)
{
    static const struct option opts[] = {{"center", required_argument, 0, 'c'},
                                         {"node", required_argument, 0, 'n'},
                                         {"node-fd", required_argument, 0, 'N'},
                                         {"cache-dir", required_argument, 0, 'd'},
                                         {"slots", required_argument, 0, 's'},
                                         {"prefetch", required_argument, 0, 'p'},
                                         {"log-level", required_argument, 0, 'v'},
                                         {"cache-mb", required_argument, 0, 'm'},
                                         {"heap-mb", required_argument, 0, 'H'},
                                         {"keys", required_argument, 0, 'k'},
                                         {"insecure", no_argument, 0, 'I'},
                                         {"no-store-reads", no_argument, 0, 'S'},
                                         {"local-files", no_argument, 0, 'L'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *center = NULL, *cache_dir = NULL, *keys = NULL;
    int insecure = 0, store_reads = 1;
    long node = 0, node_fd = -1; /* the agent gives an IEU the rest: defaults as the table's */
    long slots = spm_config_default_long("agent", "slots");
    long prefetch = spm_config_default_long("agent", "prefetch");
    long cache_mb = spm_config_default_long("agent", "cache_mb");
    long heap_mb = spm_config_default_long("agent", "heap_mb");
    spm_log_level_t level;
    spm_log_parse_level(spm_config_log_level("warn"), &level);
    int ch, rc;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        rc = 0;
        switch (ch) {
        case 'c':
            center = optarg;
            break;
        case 'd':
            cache_dir = optarg;
            break;
        case 'n':
            rc = spm_parse_long("--node", optarg, 0, UINT32_MAX, &node);
            break;
        case 'N':
            rc = spm_parse_long("--node-fd", optarg, 0, INT_MAX, &node_fd);
            break;
        case 's':
            rc = spm_config_arg("agent", "slots", optarg, &slots);
            break;
        case 'p':
            rc = spm_config_arg("agent", "prefetch", optarg, &prefetch);
            break;
        case 'v':
            rc = spm_config_arg_level(optarg, &level);
            break;
        case 'k':
            keys = optarg;
            break;
        case 'I':
            insecure = 1;
            break;
        case 'S':
            store_reads = 0;
            break;
        case 'L':
            spm_si_set_local_files(1);
            break;
        case 'm':
            rc = spm_config_arg("agent", "cache_mb", optarg, &cache_mb);
            break;
        case 'H':
            rc = spm_config_arg("agent", "heap_mb", optarg, &heap_mb);
            break;
        case 'h':
            fputs(ieu_help, stdout);
            spm_config_help(stdout, SPM_PROC_IEU);
            return 0;
        default:
            return spm_cli_usage("ieu", "invalid option");
        }
        if (rc != 0)
            return spm_cli_fail("ieu", rc);
    }
    if (!center || !cache_dir)
        return spm_cli_usage("ieu", "--center and --cache-dir are required");
    spm_log_init("ieu", level);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    ieu_t ieu = {.node = (uint32_t)node,
                 .slots = (uint32_t)slots,
                 .prefetch = (uint32_t)prefetch,
                 .store_reads = store_reads && strncmp(center, "ipc://", 6) == 0,
                 .heartbeat_ms = (uint32_t)spm_config_default_long("center", "heartbeat_ms"),
                 .dead_ms = (uint32_t)spm_config_default_long("center", "dead_ms"),
                 .heap_bytes = (size_t)heap_mb << 20,
                 .efd = -1};
    pthread_mutex_init(&ieu.lock, NULL);
    pthread_cond_init(&ieu.cond, NULL);
    int status = 1;
    size_t started = 0;
    ieu.cache = spm_nodecache_open(cache_dir, (uint64_t)cache_mb << 20, 0);
    if (ieu.cache)
        spm_nodecache_on_evict(ieu.cache, on_evict, &ieu);
    ieu.fetches = spm_hmap_new();
    ieu.plugins = spm_hmap_new();
    ieu.security = spm_security_new(keys, "agent", insecure);
    ieu.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ieu.ctx = zmq_ctx_new();
    ieu.workers = calloc((size_t)slots, sizeof *ieu.workers);
    if (ieu.ctx && ieu.security && (ieu.bc = spm_blockclient_new(ieu.ctx, ieu.security)))
        spm_blockclient_on_corrupt(ieu.bc, on_corrupt, &ieu);
    if (!ieu.cache || !ieu.fetches || !ieu.plugins || !ieu.bc || !ieu.security || ieu.efd < 0 ||
        !ieu.ctx || !ieu.workers) {
        spm_cli_fail("ieu", SPM_ESYS);
        goto done;
    }
    ieu.dealer = spm_wire_socket(ieu.ctx, ZMQ_DEALER);
    void *monitor = ieu.dealer ? spm_security_monitor(ieu.ctx, ieu.dealer, 0) : NULL;
    if (node_fd >= 0) /* started with its agent: an embedded center may still be starting */
        spm_wire_await_ipc(center, 2000);
    if (!ieu.dealer || (rc = spm_security_connect(ieu.security, ieu.dealer, center, NULL)) != 0) {
        spm_cli_fail("ieu", rc ? rc : SPM_ESYS);
        if (monitor)
            zmq_close(monitor);
        goto done;
    }
    /* Connected (the handshake goes on meanwhile), it waits for its node. */
    if (node_fd >= 0 && await_node((int)node_fd, &ieu.node) != 0) {
        status = stop_flag ? 0 : 1; /* the agent did not join, and says why */
        if (monitor)
            zmq_close(monitor);
        goto done;
    }
    rc = hello(&ieu, 10000, monitor, center);
    if (monitor)
        zmq_close(monitor);
    if (rc != 0) {
        if (!stop_flag && rc != SPM_EDENIED)
            spm_error(SPM_EUNREACH, "%s: the center did not answer", center);
        if (!stop_flag)
            spm_cli_fail("ieu", rc);
        goto done;
    }
    prepare_heap(&ieu); /* the main thread's: the store's copies of outputs */
    for (; started < (size_t)slots; started++)
        if (pthread_create(&ieu.workers[started], NULL, worker, &ieu) != 0)
            break;
    rc = run(&ieu);
    status = rc == 0 ? 0 : 1;
done:
    pthread_mutex_lock(&ieu.lock);
    ieu.stop = 1;
    pthread_cond_broadcast(&ieu.cond);
    pthread_mutex_unlock(&ieu.lock);
    for (size_t i = 0; i < started; i++)
        pthread_join(ieu.workers[i], NULL);
    free(ieu.workers);
    for (task_t *t; (t = pop(&ieu.ready)) || (t = pop(&ieu.done));)
        task_free(t);
    for (task_t *t; (t = pop(&ieu.kept));)
        task_free(t);
    if (ieu.fetches) {
        size_t pos = 0;
        uint64_t key;
        void *value;
        while (spm_hmap_next(ieu.fetches, &pos, &key, &value))
            free(value); /* their tasks are freed with the queues or leak at exit */
        spm_hmap_destroy(&ieu.fetches);
    }
    if (ieu.plugins) {
        size_t pos = 0;
        uint64_t key;
        void *value;
        while (spm_hmap_next(ieu.plugins, &pos, &key, &value))
            free(value); /* SIs still waiting leak at exit, as those being fetched */
        spm_hmap_destroy(&ieu.plugins);
    }
    spm_blockclient_destroy(&ieu.bc); /* tasks still being kept leak at exit */
    free(ieu.nodes);
    free(ieu.publish.v);
    free(ieu.drop.v);
    if (ieu.dealer)
        zmq_close(ieu.dealer);
    spm_security_destroy(&ieu.security);
    if (ieu.ctx)
        zmq_ctx_term(ieu.ctx);
    if (ieu.efd >= 0)
        close(ieu.efd);
    spm_nodecache_close(&ieu.cache);
    spm_store_view_close(&ieu.store);
    return status;
}

SPM_CONSTRUCTOR(ieu_cmd)
{
    spm_command_register(
        &(spm_command_t){.name = "ieu",
                         .summary = "run one execution unit (started by the agent)",
                         .main = ieu_main});
}
