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
#include "transport/http.h"
#include "transport/security.h"

#include <stdint.h>
#include <sys/types.h>

/*  The counts of the node's commits the center tells the agent
    (Heartbeat.sis, fetched_node_bytes, fetched_store_bytes, pushed_bytes,
    corrupt), vm/agent/metrics.c. */
#define SPM_AGENT_COUNTED 5

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
    char name[256];            /* the node's name (--name, else the host's), for HELLO */
    uint8_t identity[16];      /* the node's identity (vm/agent/identity.h) */
    long wait_center_s;        /* how long join() waits for the center; 0: forever */
    char default_cache[128];   /* the cache directory made for this run, or "" */
    uint32_t hb_ms, dead_ms;   /* the center's heartbeat and dead times, from the WELCOME */
    uint8_t store_id[16];      /* of the center's store: a restarted one knows our blocks */
    int cache_exit;            /* an IEU ended because the cache went out of service */
    uint32_t renewals;         /* caches made again, each within RENEW_WINDOW of the last */
    uint64_t renewed_at;       /* monotonic us of the last one */
    spm_http_t *http;          /* --http: the node's /metrics, or NULL */
    uint64_t started_us;       /* monotonic us when the agent was made */
    uint64_t ieu_restarts;     /* IEUs started again after a death */
    uint64_t counted[SPM_AGENT_COUNTED];        /* the center's counts, as last heard */
    uint64_t counted_before[SPM_AGENT_COUNTED]; /* ... summed over centers before it */
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
/*  SIG to every IEU still running. */
void spm_ieus_signal_all(agent_t *a, int sig);
/*  While draining: reaps the IEUs that exited, starting none again.
    Returns how many still run. */
long spm_ieus_reap(agent_t *a);
/*  SIGTERM to every IEU: each finishes its running SIs, commits them and
    exits. Whoever is still there after drain_s seconds is killed. */
void spm_ieus_stop_all(agent_t *a);

/* cachefault.c */
/*  Whether the node cache went out of service (its marker, or an IEU that
    ended so): if so, says it in one line, tells the center the node leaves
    service (BYE with the reason: a death, its blocks are lost), kills the
    IEUs, and makes the cache again, empty. The caller then joins the
    center again, as after a restart of the center. Returns 0 when the
    cache is (again) in service and the node must join (*REJOIN set to 1)
    or nothing was wrong (*REJOIN 0); or SPM_ESTORE with the detail set
    when the cache cannot be made again or broke too often (the agent
    exits). */
int spm_agent_check_cache(agent_t *a, int *rejoin);

#endif
