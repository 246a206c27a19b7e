/*  =========================================================================
    ieu_int - the IEU's internal types, shared by the files of ieu/

    Nothing outside ieu/ includes this file.
    =========================================================================
*/
#ifndef SPM_IEU_INT_H_INCLUDED
#define SPM_IEU_INT_H_INCLUDED

#include "ieu/ieu.h"
#include "datacache/blockclient.h"
#include "datacache/nodecache.h"
#include "datacache/storeview.h"
#include "runtime/si.h"
#include "base/hmap.h"
#include "transport/security.h"
#include "transport/wire.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

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

struct spm_ieu_proc {
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
    const char *center;      /* its endpoint */
    int node_fd;             /* the node's index is read from it before HELLO, or -1 */
    void *monitor;           /* the handshakes with the center, until the WELCOME; or NULL */
    size_t started;          /* worker threads started */
};

typedef struct spm_ieu_proc ieu_t;

/*  A plugin this IEU was issued SIs of: one of them fetches its bytes
    (plugin_op) while the others wait here, so that the bytes come once. */
typedef struct {
    int loaded;
    int fetching;    /* an SI of it is fetching its bytes */
    queue_t waiting; /* SIs of it that wait for that */
} plugin_t;

static inline void push(queue_t *q, task_t *t)
{
    t->next = NULL;
    if (q->tail)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
}

static inline task_t *pop(queue_t *q)
{
    task_t *t = q->head;
    if (t) {
        q->head = t->next;
        if (!q->head)
            q->tail = NULL;
    }
    return t;
}

/* ieu.c: the process and its loop */
/*  Sends ENV and the N frames F (ownership passes) to the center. Returns
    0 or SPM_ESYS. */
int spm_ieu_send(ieu_t *ieu, Spm__Envelope *env, spm_frame_t *f, size_t n);
/*  Frees T and everything it owns. Does nothing with NULL. */
void spm_ieu_task_free(task_t *t);

/* pull.c: credits and the SIs that come */
/*  Credits to ask for now: enough to hold slots + ahead SIs. */
uint32_t spm_ieu_wanted(const ieu_t *ieu);
/*  Asks the center for the credits wanted now (PULL), if any. */
void spm_ieu_pull(ieu_t *ieu);
/*  Reads the SIs of ISSUE IS into tasks and starts localizing each (or
    has it wait for its plugin, or fails it). */
void spm_ieu_on_issue(ieu_t *ieu, Spm__Issue *is);

/* localize.c: operands made local, and the directory hints */
/*  Starts localizing T; T goes to the ready queue once all its operands
    are local, or fails. */
void spm_ieu_localize(ieu_t *ieu, task_t *t);
/*  The center's answer M to one of the operand fetches asked (GET_REPLY). */
void spm_ieu_on_get_reply(ieu_t *ieu, spm_msg_t *m);
/*  Sends the pending PUBLISH and DROP messages. */
void spm_ieu_send_refs(ieu_t *ieu);
/*  Node-cache callback (ARG: the IEU): a block left this node's cache. */
void spm_ieu_on_evict(void *arg, spm_sdb_t id, uint64_t version, uint32_t type, const void *data,
                      size_t len);
/*  Block client callback (ARG: the IEU): NODE sent a corrupt copy of REF. */
void spm_ieu_on_corrupt(void *arg, uint32_t node, const spm_blockref_t *ref);

/* plugins.c: the plugins SIs name */
/*  The state of plugin SDB, made on first sight (NULL: out of memory). */
plugin_t *spm_ieu_plugin_of(ieu_t *ieu, spm_sdb_t sdb);
/*  The fetch or load of plugin SDB ended with RC (MSG when it failed): the
    SIs that waited for it go on, or fail with it. */
void spm_ieu_plugin_settled(ieu_t *ieu, spm_sdb_t sdb, int rc, const char *msg);
/*  T's plugin (its last operand) is local: loads it and takes the operand
    away. Returns 0, or fails T and returns the SPM_E* code. */
int spm_ieu_load_plugin(ieu_t *ieu, task_t *t);

/* slots.c: the worker threads */
/*  Finds the bytes of version V of operand I of T, local since it was
    localized. Returns 0, SPM_ENOTFOUND (evicted since) or SPM_ESTORE. */
int spm_ieu_operand_bytes(ieu_t *ieu, task_t *t, size_t i, uint64_t v, spm_nodecache_reader_t **rd,
                          spm_store_snap_t **snap, const void **data, size_t *len);
/*  Touches the calling thread's share of --heap-mb. */
void spm_ieu_prepare_heap(const ieu_t *ieu);
/*  A worker thread (ARG: the IEU): runs the SIs of the ready queue until
    the IEU stops or drains. */
void *spm_ieu_worker(void *arg);
/*  Fails T without running it: it is committed with CODE and MSG. */
void spm_ieu_fail_task(ieu_t *ieu, task_t *t, int code, const char *msg);

/* keep.c: outputs kept before the COMMIT */
/*  Writes the outputs of the successful SIs of LIST into the center's
    store on this host. Returns 0, or the failure. */
int spm_ieu_store_outputs(ieu_t *ieu, task_t *list);
/*  T's outputs are all kept (or framed): it joins the next COMMIT. */
void spm_ieu_kept_all(ieu_t *ieu, task_t *t);
/*  Keeps T's outputs on this node and replicas-1 others; T joins the next
    COMMIT when all are kept. */
void spm_ieu_keep_outputs(ieu_t *ieu, task_t *t);

/* commit.c: results committed in batches */
/*  Takes the SIs the workers finished (the eventfd said so). */
void spm_ieu_collect_done(ieu_t *ieu);
/*  Ends the IEU at once, committing nothing more, when its node's cache is
    out of service (datacache/nodecache.h, spm_nodecache_broken): its SIs
    are issued again elsewhere, and its agent, which hears of it from the
    cache's marker or from the exit status SPM_NODECACHE_EXIT, says so in
    one line and takes the node out of service (vm/agent/agent.c). Called
    where a cache call failed; returns when the cache is in service. */
void spm_ieu_check_cache(ieu_t *ieu);
/*  Milliseconds until the kept results are due (for the poll), or -1. */
long spm_ieu_commit_wait_ms(const ieu_t *ieu, uint64_t now);
/*  Sends the kept results in one COMMIT, when they are due. */
void spm_ieu_send_commit(ieu_t *ieu);

#endif
