/*  =========================================================================
    agent_int - the agent's internal types, shared by agent.c and ieus.c

    Nothing outside vm/agent/ includes this file.
    =========================================================================
*/
#ifndef SPM_AGENT_INT_H_INCLUDED
#define SPM_AGENT_INT_H_INCLUDED

#include "vm/agent/agent.h"
#include "datacache/blockclient.h"
#include "datacache/dataagent.h"
#include "datacache/nodecache.h"
#include "transport/security.h"

#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;           /* 0 when not running */
    uint32_t restarts;   /* since the last death after a healthy run */
    uint64_t started_at; /* monotonic us when it was started */
    uint64_t restart_at; /* monotonic us when to start it again (0: not pending) */
} child_t;

struct spm_agent {
    const char *center;                       /* the center's endpoint */
    const char *cache_dir;                    /* the node cache's directory */
    const char *data_listen, *data_advertise; /* the data agent's endpoints */
    const char *keys;                         /* key directory given with --keys, or NULL */
    int insecure;                             /* plain TCP allowed */
    int store_reads;                          /* IEUs may read an ipc:// center's store directly */
    int local_files;                          /* IEUs may read clients' files by path */
    spm_security_t *security;                 /* this node's CurveZMQ keys */
    long slots, prefetch;                     /* each IEU's --slots and --prefetch */
    long cache_mb;                            /* node cache budget, MiB (0: none) */
    long heap_mb;          /* memory each IEU thread touches at start (base/heap.h) */
    long drain_s;          /* how long running SIs may take to finish on SIGTERM */
    const char *log_level; /* the IEUs' --log-level */
    uint32_t node;         /* this node's index, from the WELCOME */
    int node_fd;           /* IEUs started before the WELCOME read the node from it; else -1 */
    child_t *kids;         /* the IEUs, one per --ieus */
    long nkids;
    int node_pipe;           /* the node index to IEUs started before WELCOME (write end), or -1 */
    void *ctx;               /* the ZeroMQ context */
    void *dealer;            /* to the center */
    void *data;              /* the data agent's ROUTER */
    void *monitor;           /* the DEALER's connects, to say HELLO at once */
    spm_dataagent_t *served; /* serves this node's blocks on DATA */
    spm_blockclient_t *copier; /* fetches the copies the center orders */
    spm_nodecache_t *cache;    /* this node's cache */
    char advertise[512];       /* the endpoint peers reach DATA at */
    char host[256];            /* this host's name, for HELLO */
    char default_cache[128];   /* the cache directory made for this run, or "" */
    uint32_t hb_ms, dead_ms;   /* the center's heartbeat and dead times, from the WELCOME */
    uint8_t store_id[16];      /* of the center's store: a restarted one knows our blocks */
};

typedef struct spm_agent agent_t;

/* ieus.c */
/*  Starts every IEU (the first time). */
void spm_ieus_start_all(agent_t *a);
/*  Reaps dead IEUs, reports them on DEALER, schedules restarts; starts due ones. */
void spm_ieus_supervise(agent_t *a, void *dealer);
/*  After a rejoin: every IEU is stopped and started again at once under the
    node's index; the restart does not count against the cap. Unless
    SAME_STORE, CACHE is emptied in between. */
void spm_ieus_restart_all(agent_t *a, spm_nodecache_t *cache, int same_store);
/*  SIGTERM to every IEU: each finishes its running SIs, commits them and
    exits. Whoever is still there after drain_s seconds is killed. */
void spm_ieus_stop_all(agent_t *a);

#endif
