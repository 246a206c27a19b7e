/*  =========================================================================
    idu_int - the IDU's internal types, shared by the files of idu/

    Nothing outside idu/ includes this file. At its end, the few helpers
    that were statics of idu.c and that several files now call, inline so
    that the pump and commit paths call nothing more than they did.
    =========================================================================
*/
#ifndef SPM_IDU_INT_H_INCLUDED
#define SPM_IDU_INT_H_INCLUDED

#include "datacache/directory.h"
#include "idu/idu.h"
#include "base/clock.h"
#include "base/hmap.h"

#include <stdlib.h>

typedef struct si si_t;
typedef struct job job_t;

struct quarantined {
    uint64_t job;
    char *why;
};

typedef struct {
    si_t **v; /* SIs waiting, not owned */
    size_t n, cap;
} waitlist_t;

/*  A version being produced: readers of it wait here. */
typedef struct pending {
    uint64_t version;
    waitlist_t waiters;
    struct pending *next;
} pending_t;

/*  The scoreboard's entry for one SDB. */
typedef struct sdb {
    spm_sdb_t id;
    uint64_t job;        /* the job whose SF made it (0: put by a client) */
    uint32_t type;       /* SDB type id */
    uint64_t last;       /* newest version in program order (0: none yet) */
    uint64_t committed;  /* newest committed version */
    pending_t *pending;  /* versions issued but not committed */
    spm_sdb_t *partials; /* open ACC group: partial SDBs not yet merged */
    size_t npartials, cappartials;
    int hidden;              /* a partial of an ACC group, not visible to SFs */
    uint64_t gc_floor;       /* versions below it are deleted */
    struct readers *readers; /* versions with SIs issued to read them */
    uint64_t owner;          /* a put: its client's key, hashed (0: none) */
} sdb_t;

/*  How many issued SIs still read one version of an SDB. */
typedef struct readers {
    uint64_t version;
    uint32_t count;
    struct readers *next;
} readers_t;

enum { SI_WAITING = 0, SI_READY, SI_ISSUED, SI_DONE };

struct si {
    spm_idu_si_t pub;      /* what the IEU is sent */
    spm_idu_op_t *ops;     /* owned; pub.ops points here */
    sdb_t **sdbs;          /* scoreboard entry of each operand, not owned */
    void *params;          /* owned copy */
    struct spm_sf *sf;     /* owning SF (merge SIs: the SF that triggered them) */
    job_t *job;            /* not owned */
    uint64_t tag;          /* given back to the SF */
    int internal;          /* a merge SI: no SF commit */
    uint32_t deps;         /* versions still awaited */
    int state;             /* SI_* */
    int32_t ieu;           /* holder while issued, else -1 */
    uint64_t issued_us;    /* when the lease started */
    uint32_t failures;     /* transient failures so far */
    uint32_t deaths;       /* holders that died while it ran */
    int32_t spec_ieu;      /* holder of a speculative copy, else -1 */
    uint32_t spec_attempt; /* its attempt number */
    char *label;           /* spm_sf_label's, or NULL */
    uint32_t nth;          /* its place among its job's SIs of its opcode, from 1 */
    si_t *next;            /* ready-queue link */
};

struct spm_sf {
    const spm_sf_class_t *cls;
    uint32_t id; /* in its job, in start order (journaled feed calls name it) */
    job_t *job;
    struct spm_sf *parent; /* NULL for the root */
    uint64_t tag;          /* tag in the parent */
    int priority;
    void *state;
    int done;                             /* spm_sf_done was called */
    int finished;                         /* finish ran */
    uint32_t outstanding;                 /* SIs issued and not committed */
    uint32_t children;                    /* live child SFs */
    si_t *ready_head, *ready_tail;        /* ready SIs, FIFO */
    struct spm_sf *ring_prev, *ring_next; /* level ring while it has ready SIs */
    int in_ring;
    int feeder;              /* registered as a feeder of its level */
    int slow_logged;         /* a callback of it ran over SPM_IDU_SLOW_US: said once */
    char *next_label;        /* spm_sf_label's, for the next SI it issues */
    struct spm_sf *job_next; /* all SFs of the job */
};

typedef struct {
    uint64_t sis, busy_us, wait_us, localize_us;
    uint64_t bytes_l2, bytes_store, bytes_pushed;
} ieu_job_stats_t;

struct job {
    uint64_t id;
    char *program;
    int priority;
    int state; /* 0 running, 1 done, 2 failed, 3 canceled */
    int status;
    char *error;
    uint64_t start_us, end_us;
    uint64_t first_issue_us; /* when its first SI went to an IEU (0: none yet, since a restart) */
    uint64_t issued, committed, reissued, stale, expected, merges;
    uint64_t ready;      /* SIs ready and not issued */
    uint64_t exec_us;    /* time in SI bodies, all committed SIs */
    uint64_t speculated; /* speculative copies issued */
    uint64_t spec_wins;  /* of which committed first */
    uint64_t l1_hits, l2_hits, store_reads, bytes_l2, bytes_store, evictions;
    uint64_t bytes_pushed, corrupt;
    uint64_t cpu_us;
    uint32_t live_sfs;
    struct spm_sf *root;
    struct spm_sf *sfs;  /* every SF of the job, live or finished */
    spm_sdb_t *acc_open; /* SDBs with an open ACC group written by this job */
    size_t nacc, capacc;
    void *result;
    size_t result_len;
    spm_idu_op_stats_t *op_stats; /* per opcode, in first-commit order */
    size_t nop_stats;
    ieu_job_stats_t *ieu_stats; /* indexed by IEU */
    size_t nieu_stats;
    int notified;
    spm_idu_t *idu;
    uint32_t next_si;      /* SIs made: the low 32 bits of their ids */
    uint32_t next_sdb;     /* SDBs made: the low 32 bits of their ids */
    uint32_t next_sf;      /* SFs started */
    struct replay *replay; /* being run again from its journal, or NULL */
    uint64_t replayed;     /* commits taken from the journal after center restarts */
    uint32_t restarts;     /* center restarts it was resumed from */
    uint64_t seed;         /* spm_sf_seed: drawn at submit, journaled */
    /* Its commit rate lately, for the ETA (spm_idu_job_rate): commits
       counted since two moments 10 to 20 s apart, and the last commit. */
    uint64_t rate_prev_us, rate_prev_n, rate_cur_us, rate_cur_n, rate_last_us;
    char scope[17];      /* its plugin's registry scope ("": a built-in program) */
    spm_sdb_t plugin;    /* the SDB of its plugin's bytes (0: none) */
    uint64_t plugin_sum; /* their checksum, which the scope spells */
    uint32_t *op_seen;   /* opcodes it issued, with op_count: SIs of each so far */
    uint32_t *op_count;
    size_t nop_seen, capop_seen;
    struct remote *remote; /* a plugin's job whose SFs run in a host (remote.c), or NULL */
    uint32_t *ev_issued;   /* SIs issued for the first time since the last record of them */
    size_t nev_issued, capev_issued;
};

typedef struct {
    int priority;
    struct spm_sf *ring;     /* SFs with ready SIs (circular) */
    struct spm_sf **feeders; /* SFs with a feed hook, not done */
    size_t nfeeders, capfeeders, feed_next;
} level_t;

typedef struct {
    uint32_t node, slots;
    uint32_t credits;
    uint32_t held; /* SIs issued to it and not committed */
    int alive;
    uint64_t joined_us, left_us;
    uint64_t last_commit_us; /* its last commit of any job, 0 before the first */
    uint64_t heard_us;       /* the last message it sent (spm_idu_ieu_heard) */
} ieu_t;

struct spm_idu {
    spm_idu_emit_fn emit;
    spm_idu_job_fn job_done;
    void *arg;
    spm_hmap_t *sdbs;   /* id -> sdb_t */
    spm_hmap_t *issued; /* SI id -> si_t, issued SIs */
    spm_hmap_t *jobs;   /* job id -> job_t */
    spm_sdb_t next_sdb; /* client puts so far (their ids) */
    uint64_t made;      /* SIs and SDBs made so far (spm_idu_made) */
    uint64_t next_job;
    level_t *levels; /* sorted by priority, highest first */
    size_t nlevels;
    ieu_t *ieus;
    size_t nieus;
    size_t pump_first; /* the IEU served first by the next pump (rotates) */
    uint64_t ready;    /* SIs ready and not issued */
    job_t **notify;    /* jobs ended, to report */
    size_t nnotify, capnotify;
    spm_directory_t *dir;          /* where blocks live (not owned; NULL: no locality) */
    int speculate;                 /* copy stragglers to idle IEUs at the end of a stage */
    uint64_t silent_us;            /* ... on the holder's own node only after this silence */
    spm_idu_record_fn record;      /* takes every event (events.c), or NULL */
    spm_idu_plugin_fn load_plugin; /* loads a resumed job's plugin, or NULL */
    void *load_arg;
    struct quarantined *quarantine; /* jobs that crashed the center: not run again */
    size_t nquarantine, capquarantine;
    void *record_arg;
    spm_idu_remote_fn remote_fn; /* takes the events of plugin jobs for their hosts, or NULL */
    void *remote_arg;
    uint8_t *ev_buf; /* the buffer events are encoded in, reused */
    size_t ev_cap;
    uint64_t *ev_jobs; /* jobs with SIs in ev_issued, recorded at spm_idu_record_turn */
    size_t nev_jobs, capev_jobs;
    spm_idu_op_t *garbage; /* versions to delete from the store */
    size_t ngarbage, capgarbage, garbage_head;
};

/* scoreboard.c */
sdb_t *spm_sb_sdb(spm_idu_t *self, spm_sdb_t id);
/*  A new SDB of TYPE, made by JOB (NULL: put by a client). Its id is the
    job's id in the high 32 bits and the job's own count below, so a job
    run again from its journal makes the same ids; a client's puts count
    up from 1 below 2^32. */
sdb_t *spm_sb_sdb_new(spm_idu_t *self, job_t *job, uint32_t type, int hidden);
/*  Frees scoreboard entry S (not removed from the table). */
void spm_sb_sdb_free(sdb_t *s);
/*  Fills the operands of SI from OPS (modes of the SF's call), making it wait
    for the versions it reads; may first issue merge SIs for open ACC groups
    through spm_idu_issue_merge. Returns 0 or SPM_E* with detail. */
int spm_sb_bind(spm_idu_t *self, si_t *si, const spm_operand_t *ops, size_t n);
/*  Marks the versions SI wrote committed; waiters whose last dependence this
    was are passed to spm_idu_make_ready. */
void spm_sb_commit(spm_idu_t *self, si_t *si);
/*  SI will never commit (its job ended): the versions it was to read no
    longer count it as a reader, so that a client's put it read can go. */
void spm_sb_drop(spm_idu_t *self, si_t *si);
/*  Issues a merge SI for SDB's open ACC group, owned by SF. Returns 0 or SPM_E*. */
int spm_sb_flush(spm_idu_t *self, struct spm_sf *sf, sdb_t *sdb);
int spm_sb_wait_push(waitlist_t *w, si_t *si);

/* events.c: what a job's SFs see, recorded (spm_idu_set_recorder) and run
   again (spm_idu_replay) */
struct replay;
void spm_ev_submit(spm_idu_t *self, const job_t *job, const void *args, size_t len);
void spm_ev_feed(spm_idu_t *self, const struct spm_sf *sf, const spm_ieu_t *who);
void spm_ev_commit(spm_idu_t *self, const si_t *si, const spm_idu_commit_t *c,
                   const spm_ieu_t *who);
void spm_ev_fail(spm_idu_t *self, const job_t *job, int code, const char *msg);
void spm_ev_quarantine(spm_idu_t *self, const job_t *job, const char *why);
void spm_ev_put(spm_idu_t *self, spm_sdb_t id, uint32_t type, uint64_t owner, int gone);
/*  The answer of an outside query of JOB (LEN bytes at LIVE, at most CAP):
    recorded, or replaced by the recorded one while JOB is run again.
    Returns the answer's length. */
size_t spm_ev_input(spm_idu_t *self, job_t *job, void *live, size_t len, size_t cap);
/*  SI of a job being run again became ready: held until the end. */
void spm_ev_ready(job_t *job, si_t *si);
void spm_ev_issued(spm_idu_t *self, si_t *si);

/* idu.c, for events.c */
int spm_idu_job_begin(spm_idu_t *self, uint64_t id, const char *program, int priority,
                      uint64_t wall_us, uint64_t seed, struct replay *replay, job_t **out);
int spm_idu_job_start(spm_idu_t *self, job_t *job, const void *args, size_t len);

/*  Makes JOB a plugin's: its names are looked up in SCOPE, its SIs name
    PLUGIN (the block of the object's bytes) for IEUs to load. */
void spm_idu_job_plugin(job_t *job, const char *scope, spm_sdb_t plugin);
void spm_idu_feed_call(spm_idu_t *self, struct spm_sf *sf, const spm_ieu_t *who);
/*  Fails JOB with CODE and the LEN bytes of MSG (-1: up to its NUL). */
void spm_idu_fail_now(job_t *job, int code, int len, const char *msg);
void spm_idu_notify(spm_idu_t *self);

/* stats.c, for commit.c */
/*  Counts a commit of JOB at NOW (spm_now_us) in its recent rate. */
void spm_idu_rate_commit(job_t *job, uint64_t now);

/* commit.c, for events.c */
void spm_idu_commit_apply(spm_idu_t *self, si_t *si, const spm_idu_commit_t *c,
                          const spm_ieu_t *who);

/* sdbs.c, for events.c */
/*  SDB ID of JOB (0: a client's put) is known again with its newest
    VERSION committed and versions below GC_FLOOR deleted (a restart).
    Nothing is done when it is known already. Returns 0 or SPM_ENOMEM. */
int spm_idu_sdb_restore(spm_idu_t *self, uint64_t job, spm_sdb_t id, uint32_t type,
                        uint64_t version, uint64_t gc_floor);
void spm_idu_put_drop(spm_idu_t *self, spm_sdb_t id);

/* remote.c: a plugin's job, whose super-functions run in a host process */
/*  Makes JOB remote: its root SF is a proxy of the host's. SPM_ENOMEM. */
int spm_remote_new(job_t *job);
void spm_remote_free(job_t *job);
/*  The proxy's class of remote JOB. */
const spm_sf_class_t *spm_remote_class(job_t *job);
/*  Applies the LEN bytes of host actions at DATA to JOB (replay: from its
    journal, unrecorded). */
void spm_remote_apply(spm_idu_t *self, job_t *job, const void *data, size_t len);

/* idu.c, for remote.c */
/*  spm_sf_issue with the opcode's wire id ID already looked up (OPCODE:
    its name, for messages, or NULL). */
int spm_idu_issue_id(struct spm_sf *sf, uint32_t id, const char *opcode, const spm_operand_t *ops,
                     size_t n, const void *params, size_t params_len, uint64_t tag);

/* events.c, for remote.c */
/*  An action batch of JOB applied: recorded. */
void spm_ev_actions(spm_idu_t *self, const job_t *job, const void *data, size_t len);
/*  An answer of an outside query that is recorded only when it changed:
    live, records the LEN bytes at LIVE when CHANGED and returns CHANGED;
    while JOB is run again, takes the next record when it is such an
    answer (into LIVE, returns 1), else returns 0. */
int spm_ev_input_changed(spm_idu_t *self, job_t *job, void *live, size_t len, int changed);

/* scoreboard.c, for remote.c */
/*  A new SDB of JOB with id ID (made by its host), or NULL (taken, not
    the job's, out of memory). */
sdb_t *spm_sb_sdb_new_id(spm_idu_t *self, job_t *job, uint32_t type, spm_sdb_t id);
/* pool.c, for remote.c */
void spm_pool_feeder_add(spm_idu_t *self, struct spm_sf *sf);

/* locality.c */
/*  Bytes SI's inputs would move to NODE (0 without a directory). */
uint64_t spm_dir_si_cost(spm_idu_t *self, const si_t *si, uint32_t node);

/* idu.c, for scoreboard.c */
/*  A new SI of SF's job running OPCODE (its wire id); its id is the job's
    id in the high 32 bits and the job's own count below (the same when the
    job is run again from its journal). NULL when out of memory. */
/*  Writes how messages name SI: its opcode and label ("mb.shade (tile
    3)"), or its place ("the 7th SI of mb.shade"), never its 64-bit id. */
void spm_idu_si_name(const si_t *si, char *buf, size_t size);

/*  DETAIL without a leading "OPCODE: " of SI's own opcode: an SI body's
    message that names its opcode, which the IDU's message names already. */
const char *spm_idu_si_detail(const si_t *si, const char *detail);

si_t *spm_idu_si_alloc(struct spm_sf *sf, uint32_t opcode, size_t nops, const void *params,
                       size_t params_len);
/*  Counts SI as outstanding for its SF and job, and queues it when ready. */
void spm_idu_si_enter(spm_idu_t *self, si_t *si);
void spm_idu_make_ready(spm_idu_t *self, si_t *si, int front);
int spm_idu_job_note_acc(job_t *job, spm_sdb_t id);

/* idu.c, for the other files of the IDU */
/*  Fails JOB (when it still runs) with CODE and the message FMT makes; the
    end is reported at the end of the IDU call (notify). */
void spm_idu_failf(job_t *job, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/*  Finishes SF when it is done and waits for nothing (no SI outstanding,
    no live child), then its parent likewise; the root's end ends the job. */
void spm_idu_sf_maybe_finish(spm_idu_t *self, struct spm_sf *sf);
/*  Names SF in the log when its CALLBACK, begun at T0, took
    SPM_IDU_SLOW_US or longer (once per SF). */
void spm_idu_timed(struct spm_sf *sf, const char *callback, uint64_t t0);

/* pool.c, for idu.c */
/*  The level of PRIORITY, made when missing. NULL: no memory. */
level_t *spm_pool_level(spm_idu_t *self, int priority);
/*  Takes SF out of its level's ring of SFs with ready SIs / its feeders. */
void spm_pool_ring_remove(spm_idu_t *self, struct spm_sf *sf);
void spm_pool_feeder_remove(spm_idu_t *self, struct spm_sf *sf);
/*  Takes a ready SI of SF for NODE (NULL: none ready). */
si_t *spm_pool_pop_ready(spm_idu_t *self, struct spm_sf *sf, uint32_t node);

/* lease.c, for idu.c and commit.c */
/*  Puts issued SI back in the pool with a new attempt (or frees it when its
    job is over). */
void spm_lease_reissue(spm_idu_t *self, si_t *si);
/*  The issued SIs for which KEEP(si, ARG) holds, as a malloc'd array of *N
    (NULL when none); owned by the caller. */
si_t **spm_lease_issued_where(spm_idu_t *self, int (*keep)(const si_t *, const void *),
                              const void *arg, size_t *n);

/* ------------------------------------------------------------------------
   Inline, for every file of the IDU: these were statics of idu.c, which the
   pump and commit paths had inlined.
   --------------------------------------------------------------------- */

typedef struct call {
    uint64_t t0, prev;
} call_t;

/*  Around every call into a super-function: the job whose code runs (for
    a crash handler), and the time it took (spm_idu_timed). */
static inline call_t enter(const struct spm_sf *sf)
{
    call_t c = {spm_now_us(), spm_idu_running_job};
    spm_idu_running_job = sf->job->id;
    return c;
}

static inline void leave(struct spm_sf *sf, const char *callback, call_t c)
{
    spm_idu_running_job = c.prev;
    spm_idu_timed(sf, callback, c.t0);
}

static inline void notify(spm_idu_t *self)
{
    while (self->nnotify) {
        job_t *job = self->notify[--self->nnotify];
        self->job_done(self->arg, job->id);
    }
}

static inline void spm_idu_si_free(si_t *si)
{
    if (!si)
        return;
    free(si->ops);
    free(si->sdbs);
    free(si->params);
    free(si->label);
    free(si);
}

/*  Frees SI, which will never commit: its job ended. */
static inline void si_drop(spm_idu_t *self, si_t *si)
{
    spm_sb_drop(self, si);
    spm_idu_si_free(si);
}

static inline void held_dec(spm_idu_t *self, int32_t ieu)
{
    if (ieu >= 0 && self->ieus[ieu].held)
        self->ieus[ieu].held--;
}

static inline job_t *job_get(spm_idu_t *self, uint64_t id)
{
    return spm_hmap_get(self->jobs, id);
}

#endif
