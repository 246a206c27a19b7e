/*  =========================================================================
    center_int - the center's internal types, and the functions its files
    share: center.c (its life and the loop), workers.c (IEUs and agents),
    clients.c, blocks.c (the data side) and startup.c

    Nothing outside vm/center/ includes this file. Each function's contract
    is at its definition.
    =========================================================================
*/
#ifndef SPM_CENTER_INT_H_INCLUDED
#define SPM_CENTER_INT_H_INCLUDED

#include "base/hmap.h"
#include "datacache/dataplane.h"
#include "datacache/store.h"
#include "datacache/warmer.h"
#include "idu/idu.h"
#include "transport/security.h"
#include "transport/wire.h"
#include "vm/center/center.h"
#include "vm/center/durable.h"
#include "vm/center/history.h"
#include "transport/http.h"
#include "vm/center/jobapi.h"
#include "vm/center/metrics.h"
#include "vm/center/plugins.h"
#include "vm/center/sfhost.h"
#include "vm/center/status.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

enum {
    ROLE_IEU = SPM__HELLO__ROLE__IEU,
    ROLE_AGENT = SPM__HELLO__ROLE__AGENT,
    ROLE_CLIENT = SPM__HELLO__ROLE__CLIENT
};

typedef struct {
    zmq_msg_t id;         /* routing id */
    int role;             /* ROLE_* */
    uint32_t index;       /* IEU index or node index */
    uint32_t node;        /* node of an IEU or agent */
    uint32_t pid;         /* process id on its node */
    uint64_t last_seen;   /* monotonic us of the last message */
    int64_t clock_offset; /* our clock minus its, least seen (IEUs, traces) */
    int clock_known;
    int dead;
    Spm__Si **batch; /* SIs to send in the next ISSUE (IEUs) */
    size_t nbatch, capbatch;
    int told_backlog;           /* its last ISSUE said more SIs were ready: it may hold results */
    char name[SPM_STATUS_NAME]; /* agents: the node's name (Hello.name, else its host) */
    uint8_t identity[16];       /* agents: the node's identity (Hello.identity) */
    int has_identity;           /* ... was given */
} peer_t;

/*  What a job cost the center: the counters at its submit, then, once it
    ended, what they grew by. */
typedef struct {
    uint64_t cpu_us;     /* the center's CPU time */
    uint64_t in, out;    /* block bytes through the center's socket */
    uint64_t copies;     /* copies made after node deaths */
    int ended;           /* the fields are the job's own from here */
    uint64_t watched_us; /* when a client last followed it (or it began here): abandonment */
    int abandoned;       /* canceled as abandoned: its blocks go when it ends */
} usage_t;

typedef struct {
    uint64_t job;
    zmq_msg_t id; /* the watching client */
    uint64_t cpu_start_us;
    uint64_t last_progress_us;
    uint64_t seen_us; /* its client's last WATCH (monotonic us) */
} watch_t;

/*  A GET that came while a restarted center did not yet know where the
    block is: answered once a node reports it, or when the wait is over. */
typedef struct {
    zmq_msg_t id;       /* the asking peer */
    uint32_t requester; /* its node (SPM_NODE_STORE: a client) */
    uint64_t req;
    spm_sdb_t sdb;
    uint64_t version;
} parked_t;

/*  A COMMIT whose outputs are in the open store batch. */
typedef struct {
    spm_msg_t m;         /* the message, owned */
    void *ieu;           /* its peer_t */
    uint64_t arrived_us; /* when it arrived, to map the IEU's clock */
    uint8_t *ok;         /* per result: accepted in the first half */
} pending_t;

struct spm_center {
    void *ctx, *router;
    pending_t *pending; /* COMMITs waiting for this turn's store batch */
    size_t npending, cappending;
    spm_idu_t *idu;
    spm_store_t *store;
    spm_dataplane_t *dp; /* where blocks live: the directory, copies, garbage */
    uint32_t replicas;   /* copies of every block the VM keeps */
    peer_t **agents;     /* node index -> its agent (or NULL) */
    size_t nagents;
    char *store_dir;          /* the store's absolute path, for IEUs on this host */
    int local;                /* listening on ipc://: every peer runs on this host */
    uint8_t store_id[16];     /* the store's identity (spm_store_identity) */
    uint8_t cache_id[16];     /* what agents' kept blocks must belong to: the store's, or new
                                 at every start without a journal (nothing is resumed) */
    spm_hmap_t *peers;        /* routing-id key -> peer_t */
    spm_hmap_t *strangers;    /* routing-id key -> when last told to HELLO (us) */
    spm_hmap_t *ieus;         /* IEU index + 1 -> peer_t */
    spm_hmap_t *watches;      /* job -> watch_t */
    spm_hmap_t *usage;        /* job -> usage_t, from submit until its report is sent */
    spm_security_t *security; /* CurveZMQ keys and the allow-list */
    spm_status_t status;      /* counters and recent failures for spm status */
    spm_hmap_t *traces;     /* job -> spm_trace_t: jobs submitted with a trace; with --http, all */
    spm_durable_t *durable; /* the journal, syncs, garbage held until they are done */
    spm_sfhosts_t *sfhosts; /* the hosts of plugin jobs' super-functions */
    uint64_t started_us;    /* when the center started */
    uint32_t next_node;
    spm_hmap_t *identities; /* hash of a node's identity -> its node index + 1 */
    uint32_t heartbeat_ms, dead_ms;
    uint64_t lease_us;
    uint64_t gc_versions; /* block versions deleted as garbage */
    uint64_t discarded;   /* SDBs deleted on clients' DISCARD */
    int dirty;            /* the store was written this turn */
    uint64_t locating_us; /* until then, GETs of blocks no node reported yet wait */
    parked_t *parked;     /* ... there */
    size_t nparked, capparked;
    int located;          /* a node reported blocks since the parked GETs were tried */
    spm_warmer_t *warmer; /* prepares the store's file ahead of its data */
    spm_wire_stats_t wire;
    spm_http_t *http;             /* --http: the dashboard and /metrics, or NULL */
    spm_jobapi_t *jobapi;         /* ... its jobs' pages, and the traces they keep */
    spm_metrics_t *metrics;       /* totals and the utilisation curve (with --http) */
    spm_plugins_policy_t plugins; /* who may send plugins (center.allow_plugins) */
    uint32_t plugin_type;         /* spm_name_id(SPM_PLUGIN_TYPE) */
    uint64_t ticks;               /* tick() calls so far */
    int trims_due;                /* malloc trims owed once no job runs (tick) */
    uint64_t trim_at;             /* ... the next not before (monotonic us) */
    int stopping;
    uint64_t last_tick;       /* when tick() last ran (monotonic us) */
    char *listen;             /* the endpoint, for the log */
    char *store_path;         /* the store's directory as given, for the log */
    spm_history_t *history;   /* every job's record (vm/center/records.c) */
    uint64_t keep_results_us; /* an ended job's blocks kept this long (0: until discarded) */
    uint64_t abandon_us;      /* a job nobody follows this long is canceled (0: never) */
    uint64_t last_records_us; /* when records_tick last ran (monotonic us) */
    int verify_cut;           /* jobs resumed from a cut journal wait for center_verify_cut */
};

/* ------------------------------------------------------------ center.c */

uint64_t center_cpu_us(void);
uint64_t center_id_key(zmq_msg_t *id);
void center_send_to(spm_center_t *c, zmq_msg_t *id, Spm__Envelope *env, spm_frame_t *f, size_t n);
void center_send_error(spm_center_t *c, zmq_msg_t *id, int code, const char *msg);

/* ----------------------------------------------------------- startup.c */

int center_lock_store(const char *dir, int *lock_fd);
void center_write_pid(int fd, const char *dir);
int center_load_plugin(void *arg, spm_sdb_t plugin, char *scope);
int center_resume_jobs(spm_center_t *c);
void center_sweep_store(spm_center_t *c);
void center_verify_cut(spm_center_t *c, uint64_t now);

/* ------------------------------------------------------------ blocks.c */

void center_collect_garbage(spm_center_t *c);
void center_release_garbage(void *arg, spm_sdb_t id, uint64_t version);
void center_on_get(spm_center_t *c, peer_t *p, spm_msg_t *m);
void center_retry_parked(spm_center_t *c, uint64_t now);
void center_on_blocks(spm_center_t *c, peer_t *p, Spm__BlockRef **refs, size_t n, int gained);
void center_on_put(spm_center_t *c, spm_msg_t *m);
void center_on_store(spm_center_t *c, peer_t *p, spm_msg_t *m);
void center_on_placed(spm_center_t *c, spm_msg_t *m);

/* ----------------------------------------------------------- clients.c */

void center_send_progress(spm_center_t *c, watch_t *w);
uint64_t center_copies_done(spm_center_t *c);
void center_job_done(void *arg, uint64_t job);
void center_on_submit(spm_center_t *c, spm_msg_t *m);
spm_trace_t *center_trace_copy(void *arg, uint64_t job, char *program, size_t size);
void center_trace_resumed(spm_center_t *c);
void center_on_watch(spm_center_t *c, spm_msg_t *m);
void center_update_status(spm_center_t *c);
void center_on_status(spm_center_t *c, spm_msg_t *m);
void center_on_cancel(spm_center_t *c, spm_msg_t *m);
void center_on_discard(spm_center_t *c, spm_msg_t *m);

/* ----------------------------------------------------------- records.c */

/*  A running job's re-issued SIs at one moment (center_reissued_now). */
typedef struct {
    uint64_t job, reissued;
} center_reissued_t;

void center_record_event(spm_center_t *c, uint64_t job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
size_t center_reissued_now(spm_center_t *c, center_reissued_t *out, size_t max);
void center_record_reissues(spm_center_t *c, const center_reissued_t *before, size_t n,
                            const char *what);

int center_records_open(spm_center_t *c, const spm_center_opts_t *o);
void center_record_submit(spm_center_t *c, uint64_t job, const spm_msg_t *m);
void center_records_resumed(spm_center_t *c);
Spm__Report *center_record_end(spm_center_t *c, uint64_t job, const spm_idu_job_info_t *info,
                               Spm__Report *built, int *again);
void center_record_delivered(spm_center_t *c, uint64_t job);
void center_records_tick(spm_center_t *c, uint64_t now);
void center_on_jobs(spm_center_t *c, spm_msg_t *m);
int center_may(spm_center_t *c, const char *user, uint64_t job, const char *what);
int center_may_sdb(spm_center_t *c, const char *user, spm_sdb_t sdb);
uint64_t center_owner_hash(const char *user);
void center_free_job(spm_center_t *c, uint64_t job, const char *why);

/* ----------------------------------------------------------- workers.c */

void center_free_si_msg(Spm__Si *s);
void center_emit(void *arg, uint32_t ieu, const spm_idu_si_t *si);
void center_send_issues(spm_center_t *c);
int center_send_agent(void *arg, uint32_t node, Spm__Envelope *env);
void center_agent_gone(spm_center_t *c, peer_t *p, const char *why);
void center_on_hello(spm_center_t *c, spm_msg_t *m);
void center_ieu_gone(spm_center_t *c, peer_t *p, const char *why);
void center_on_commit(spm_center_t *c, peer_t *p, spm_msg_t *m);
void center_flush_commits(spm_center_t *c);
void center_on_ieu_died(spm_center_t *c, peer_t *agent, spm_msg_t *m);

#endif
