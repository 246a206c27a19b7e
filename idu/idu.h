/*  =========================================================================
    idu - the instruction dispatch unit: jobs, super-functions, the task
    pool, the scoreboard, leases

    @header
    The IDU is the center's brain, kept free of sockets and files so that it
    can be driven directly by unit tests. The center feeds it events (a job
    submitted, an IEU joined, asked for work, committed, died) and sends
    whatever the IDU emits.
    @discuss
    Pull with credits: an IEU's PULL adds credits; spm_idu_pump() hands ready
    SIs to IEUs that hold credits, highest SF priority first, round-robin
    among SFs of equal priority, consulting SF feed hooks when nothing is
    ready. An IEU with credits and nothing to do is parked: it costs nothing
    until an SI becomes ready (long poll).

    Leases: an issued SI belongs to one IEU and one attempt number until it
    commits. When the IEU dies or the lease times out the SI goes back to the
    pool with attempt + 1; a later commit for the old attempt is stale and
    discarded, so each SI's result is applied exactly once.

    The scoreboard (idu/scoreboard.c) gives every SDB write a new version, so
    only true read-after-write dependences make an SI wait.
    @end
    =========================================================================
*/
#ifndef SPM_IDU_H_INCLUDED
#define SPM_IDU_H_INCLUDED

#include <stdint.h>

#include "spm/spm.h"

typedef struct spm_idu spm_idu_t;

/*  A super-function callback (start, commit, feed) that runs this long or
    longer is named in the log, once per SF: the center's thread answers
    nobody while it runs. */
#define SPM_IDU_SLOW_US 100000u

/*  One operand of an issued SI, as it goes on the wire. */
typedef struct {
    spm_sdb_t sdb;       /* SDB the IEU reads or writes (ACC: the partial) */
    uint64_t version;    /* version written (W, RW, ACC) or read (R) */
    uint64_t in_version; /* RW: version read */
    spm_mode_t mode;     /* as the IEU sees it (ACC stays ACC) */
    uint32_t type;       /* SDB type id */
    uint32_t flags;      /* SPM_NOCACHE or 0, as the SF issued it */
} spm_idu_op_t;

/*  An SI handed to an IEU. Owned by the IDU; valid until the SI commits or
    the IEU dies. */
typedef struct {
    uint64_t id;
    uint32_t attempt;
    uint32_t opcode; /* spm_name_id of the opcode */
    uint64_t job;
    const spm_idu_op_t *ops;
    size_t nops;
    const void *params;
    size_t params_len;
    const char *sf;      /* class name of the SF that issued it (traces) */
    spm_sdb_t plugin;    /* its job's plugin (the block of its bytes), or 0 */
    uint64_t plugin_sum; /* ... and the checksum of those bytes (its scope) */
} spm_idu_si_t;

/*  Called by spm_idu_pump for every SI assigned to IEU. */
typedef void (*spm_idu_emit_fn)(void *arg, uint32_t ieu, const spm_idu_si_t *si);

/*  Called when a job ends (done or failed). */
typedef void (*spm_idu_job_fn)(void *arg, uint64_t job);

/*  Per-IEU figures of one job, for its report. */
typedef struct {
    uint32_t ieu, node, slots;
    uint64_t sis, busy_us, wait_us, localize_us, idle_us;
    uint64_t bytes_l2;     /* operand bytes fetched from other nodes */
    uint64_t bytes_store;  /* operand bytes fetched from the center's store */
    uint64_t bytes_pushed; /* output bytes pushed to other nodes (replicas) */
    int dead;
} spm_idu_ieu_stats_t;

typedef struct {
    uint64_t job;
    const char *program;
    int state; /* 0 running, 1 done, 2 failed, 3 canceled (failed with SPM_ECANCELED) */
    int status;
    const char *error;
    uint64_t wall_us, issued, committed, reissued, stale, expected, merges, ready;
    uint64_t speculated, spec_wins;
    uint64_t l1_hits, l2_hits, store_reads, bytes_l2, bytes_store, evictions;
    uint64_t bytes_pushed, corrupt;
    uint64_t resumed;        /* commits taken from the journal after center restarts */
    uint32_t restarts;       /* center restarts it was resumed from */
    uint64_t since_issue_us; /* from its first SI issued to an IEU (since the last restart)
                                until now, or its end; 0: none issued */
    double rate;             /* SIs committed per second lately (over the last 10 to 20 s):
                                0 when none in the last 10 s (starved: no IEU free for it,
                                or SIs longer than that), -1 when too soon to tell */
    const void *result;
    size_t result_len;
    spm_sdb_t plugin; /* a plugin's job: the block of its bytes (its result is text) */
} spm_idu_job_info_t;

/*  Returns a new IDU, or NULL when out of memory. EMIT and DONE are called
    with ARG (both required). */
spm_idu_t *spm_idu_new(spm_idu_emit_fn emit, spm_idu_job_fn done, void *arg);
void spm_idu_destroy(spm_idu_t **self_p);

/*  Starts PROGRAM with ARGS at PRIORITY. Returns 0 with *JOB set, or
    SPM_ENOTFOUND (no such program), or the root SF's start failure (the job
    then exists and is failed, its error in the job info). */
int spm_idu_submit(spm_idu_t *self, const char *program, const void *args, size_t len, int priority,
                   uint64_t *job);

/*  The same for PROGRAM of a plugin loaded into SCOPE (runtime/plugin.h),
    whose bytes are SDB PLUGIN: its SFs' names are looked up in SCOPE
    first, and its SIs carry PLUGIN for the IEUs to load. */
int spm_idu_submit_plugin(spm_idu_t *self, const char *program, const char *scope, spm_sdb_t plugin,
                          const void *args, size_t len, int priority, uint64_t *job);

/*  How a restarted center gets a plugin job's object loaded again before
    its SFs are run again: LOAD loads the plugin whose bytes are SDB PLUGIN
    and copies its scope to SCOPE (17 bytes); 0 or an SPM_E* code (detail
    set), after which the job fails. */
typedef int (*spm_idu_plugin_fn)(void *arg, spm_sdb_t plugin, char *scope);
void spm_idu_set_plugin_loader(spm_idu_t *self, spm_idu_plugin_fn load, void *arg);

/*  Job ID crashed the center while its code ran: when its journal is read
    back, it is failed with WHY and none of its code runs again. Call
    before the journal is read back. Returns 0 or SPM_ENOMEM. */
int spm_idu_quarantine(spm_idu_t *self, uint64_t id, const char *why);

/*  The job whose super-function code the IDU's thread runs now (0: none),
    for a crash handler to name. */
extern volatile uint64_t spm_idu_running_job;

/*  Registers an SDB put by a client: version 1 of TYPE is committed.
    Returns the new id, or 0 when out of memory. */
spm_sdb_t spm_idu_sdb_put(spm_idu_t *self, uint32_t type);

/*  The same, for the client whose key hashes to OWNER (0: none), which
    alone may discard or fetch it (the center checks; journaled with the
    put). */
spm_sdb_t spm_idu_sdb_put_owned(spm_idu_t *self, uint32_t type, uint64_t owner);

/*  The owner of put ID as given to spm_idu_sdb_put_owned (0: none, not a
    put, or unknown). */
uint64_t spm_idu_sdb_owner(spm_idu_t *self, spm_sdb_t id);

/*  The committed block versions running JOB still needs, as far as the IDU
    can tell: those its ready SIs read, and the newest committed version of
    each of its SDBs (what its later SIs read). Fills up to MAX of them
    into OUT (sdb and version set) and returns how many there are. A
    restarted center checks them when the job's journal was cut: a version
    deleted as garbage after events the cut lost is needed again. */
size_t spm_idu_job_needs(spm_idu_t *self, uint64_t job, spm_idu_op_t *out, size_t max);

/*  Whether VERSION of ID is committed and not garbage: some SI or client
    may still read it (the hidden partials of ACC groups included). */
int spm_idu_sdb_live(spm_idu_t *self, spm_sdb_t id, uint64_t version);

/*  Newest committed version of ID with its type (0 when none or unknown). */
uint64_t spm_idu_sdb_version(spm_idu_t *self, spm_sdb_t id, uint32_t *type);

/*  Makes ids allocated from now on start above FLOOR (a restarted center). */
void spm_idu_sdb_floor(spm_idu_t *self, spm_sdb_t floor);

/*  An IEU joined: returns its VM-wide index (from 0). */
uint32_t spm_idu_ieu_join(spm_idu_t *self, uint32_t node, uint32_t slots);

/*  IEU asks for CREDITS more SIs. */
void spm_idu_ieu_pull(spm_idu_t *self, uint32_t ieu, uint32_t credits);

/*  IEU sent a message (any: its heartbeats go on while its SIs run) at
    NOW_US. */
void spm_idu_ieu_heard(spm_idu_t *self, uint32_t ieu, uint64_t now_us);

/*  IEU is gone (died, timed out, or left): its SIs go back to the pool.
    Returns how many SIs were re-issued. */
uint32_t spm_idu_ieu_dead(spm_idu_t *self, uint32_t ieu);

uint32_t spm_idu_ieus(const spm_idu_t *self);  /* live IEUs */
uint32_t spm_idu_nodes(const spm_idu_t *self); /* distinct nodes of live IEUs */

/*  Hands ready SIs to IEUs holding credits (through EMIT). */
void spm_idu_pump(spm_idu_t *self);

/*  Looks up SI at ATTEMPT held by IEU for a commit. Returns it, or NULL when
    the commit is stale (other attempt, other holder, unknown, job over): the
    caller then discards the commit and its outputs. */
const spm_idu_si_t *spm_idu_lookup(spm_idu_t *self, uint32_t ieu, uint64_t si, uint32_t attempt);

typedef struct {
    int status;        /* 0 or SPM_E* from the IEU */
    const char *error; /* message when status != 0 */
    const void *reply; /* SI reply bytes */
    size_t reply_len;
    uint64_t wait_us, exec_us, localize_us;
    uint32_t l1_hits, l2_hits, store_reads, evictions, corrupt;
    uint64_t bytes_l2, bytes_store, bytes_pushed;
} spm_idu_commit_t;

/*  Applies the commit of SI (as returned by spm_idu_lookup, outputs already
    durable): versions become readable, waiters wake, the SF's commit runs. */
void spm_idu_commit(spm_idu_t *self, uint32_t ieu, uint64_t si, const spm_idu_commit_t *c);

/*  ON: when an IEU asks for work, none of any job is ready, and an SI of a
    job with nothing left to issue has run more than twice its job's mean SI
    time (and over 10 ms), a copy is issued to the asking IEU; the first
    commit wins, the other is stale. An SI held by an IEU of the asking
    IEU's own node is copied only once that IEU has said nothing for
    SILENT_US (spm_idu_ieu_heard): IEUs of one node run at one speed, so
    there a copy can win only over a stopped one. Off by default. */
void spm_idu_set_speculate(spm_idu_t *self, int on, uint64_t silent_us);

/*  Re-issues SIs whose lease is older than LEASE_US at NOW_US. Returns how
    many. */
uint32_t spm_idu_expire(spm_idu_t *self, uint64_t now_us, uint64_t lease_us);

/*  Fails JOB with CODE and MESSAGE (e.g. canceled). No-op for a job over. */
void spm_idu_job_fail(spm_idu_t *self, uint64_t job, int code, const char *message);

/*  Fills INFO for JOB. Returns 0 or SPM_ENOTFOUND. Pointers stay valid until
    the job is forgotten. */
int spm_idu_job_info(spm_idu_t *self, uint64_t job, spm_idu_job_info_t *info);

typedef struct {
    uint32_t opcode; /* spm_name_id of its name */
    uint64_t sis, busy_us, wait_us;
} spm_idu_op_stats_t;

/*  Per-opcode stats of JOB's committed SIs: fills up to MAX, returns how
    many opcodes. */
size_t spm_idu_job_opcodes(spm_idu_t *self, uint64_t job, spm_idu_op_stats_t *out, size_t max);

/*  Per-IEU stats of JOB: fills up to MAX entries, returns how many IEUs. */
size_t spm_idu_job_ieus(spm_idu_t *self, uint64_t job, spm_idu_ieu_stats_t *out, size_t max);

/*  A restarted center: running JOB had run RAN_US before the restart, so
    its wall time counts from RAN_US before now (the downtime between is
    not the job's). No-op for a job unknown or over. */
void spm_idu_job_ran(spm_idu_t *self, uint64_t job, uint64_t ran_us);

/*  A restarted center: job ids allocated from now on start above FLOOR. */
void spm_idu_job_floor(spm_idu_t *self, uint64_t floor);

/*  Records JOB of PROGRAM as ended with CODE and MESSAGE without running it
    (a job lost in a center restart), so that its watcher learns why.
    Returns 0 or SPM_ENOMEM. */
int spm_idu_job_lost(spm_idu_t *self, uint64_t job, const char *program, int code,
                     const char *message);

/*  Forgets a finished JOB. */
void spm_idu_job_forget(spm_idu_t *self, uint64_t job);

/*  Center CPU time used while JOB ran, as measured by the caller; stored
    for its report (w_man). */
void spm_idu_job_set_cpu(spm_idu_t *self, uint64_t job, uint64_t cpu_us);
uint64_t spm_idu_job_cpu(spm_idu_t *self, uint64_t job);

/* ------------------------------------------------------- journal, replay */

/*  One recorded event: an opaque record of the IDU's encoding (idu/events.c). */
typedef struct {
    const void *data;
    size_t len;
} spm_idu_record_t;

/*  Takes record REC (LEN bytes, valid during the call) of JOB (0: the VM's
    own, the clients' puts) to journal it. */
typedef void (*spm_idu_record_fn)(void *arg, uint64_t job, const void *rec, size_t len);

/*  Hands every event that a job's SFs see (its submit, the feed calls made
    on them, the commits applied in order, failures from outside, the
    answers of queries about the world) and every client put and discard,
    as it happens and before any SF code runs on it, to FN with ARG (NULL:
    none). A job run again from these records (spm_idu_replay) makes the
    same SIs and SDBs and takes the recorded commits. */
void spm_idu_set_recorder(spm_idu_t *self, spm_idu_record_fn fn, void *arg);

/*  A restarted center: runs job JOB again from its N records RECS, as
    recorded (job 0: restores the clients' puts). The job's root SF is
    started anew and given the recorded feed calls, commits and answers in
    order; an SI whose commit is recorded takes it instead of running, and
    the SIs still ready at the end (those in flight at the crash, and the
    ones not issued yet) go to the pool as in any job. Records of types from
    100 up are the caller's: they are handed to FOREIGN with ARG in order
    (it may be NULL). A job that ended before the crash ends again (its
    report comes as for any job). Returns 0, or SPM_EFORMAT with the detail
    set when the records do not fit the program (it changed, or the
    journal is damaged where the records were cut): the job is then failed
    with that reason and its SFs freed; other jobs are not touched. */
int spm_idu_replay(spm_idu_t *self, uint64_t job, const spm_idu_record_t *recs, size_t n,
                   spm_idu_record_fn foreign, void *arg);

/*  JOB ended and its report was delivered: records its SDBs that are still
    there (id, type, newest version, GC floor) as one record of JOB, which
    the caller journals in place of the job's events; spm_idu_replay of
    that record makes them known again, for the clients that fetch and
    discard them. Returns how many (0: nothing recorded). */
size_t spm_idu_job_kept(spm_idu_t *self, uint64_t job);

/*  Records, for each job, the SIs issued for the first time since the last
    call, as one record (a few bytes per SI): a resumed job's report then
    counts the SIs that were in flight at the crash as re-issued. Called
    once per turn of the center's loop, before the journal is written. */
void spm_idu_record_turn(spm_idu_t *self);

/*  How many SIs and SDBs the IDU has made so far: when this has not
    changed since the journal was last written, nothing the IDU sends
    (SIs, ids) depends on events not yet written. */
uint64_t spm_idu_made(const spm_idu_t *self);

/*  Records the clients' puts that are still there, and the puts' id
    counter, as job 0 records: the caller that starts job 0's journal
    afresh (to compact it) calls this to write what it must keep. Returns
    the number of records. */
size_t spm_idu_record_puts(spm_idu_t *self);

/* ------------------------------------------------- plugin jobs' hosts */

/*  Takes an event of plugin job JOB for its host: LEN bytes of SFP_*
    messages (runtime/sfproto.h), valid during the call, to be sent in
    order. */
typedef void (*spm_idu_remote_fn)(void *arg, uint64_t job, const void *ev, size_t len);

/*  From now on a plugin's job (spm_idu_submit_plugin, or one resumed by
    spm_idu_replay) runs its super-functions outside the IDU: its root SF
    is a proxy that hands the job's events to FN with ARG, and what the
    host's callbacks did comes back through spm_idu_remote_apply. The IDU
    then never looks a plugin's program up itself. */
void spm_idu_set_remote(spm_idu_t *self, spm_idu_remote_fn fn, void *arg);

/*  Applies LEN bytes of SFA_* actions of JOB's host (one answer frame's
    payload), skipping first the first *SKIP actions (a new host runs again
    what the journal applied already; *SKIP counts down). They are
    recorded before they are applied, so that a restart applies them again
    at the same place in the job's events. Does nothing for a job that
    ended or is not remote. Returns 0, or SPM_EPROTO when the bytes are
    not well-formed actions (the job is then failed). */
int spm_idu_remote_apply(spm_idu_t *self, uint64_t job, const void *data, size_t len,
                         uint64_t *skip);

/*  Remote JOB: the block of its plugin's bytes, and how many host actions
    its journal applied (those a new host's answers repeat). Returns 0 or
    SPM_ENOTFOUND (no such job, or not remote). */
int spm_idu_remote_info(spm_idu_t *self, uint64_t job, spm_sdb_t *plugin, uint64_t *applied);

/* ------------------------------------------------------------ locality */

typedef struct spm_directory spm_directory_t;

/*  Uses DIR (not owned; it must outlive the IDU) to learn which nodes hold
    the versions SIs read: ready SIs go preferably to IEUs whose node holds
    their operands, and SF policies ask it (spm_sf_bytes_to,
    spm_sdb_holders). Without one every node looks alike. */
void spm_idu_set_directory(spm_idu_t *self, spm_directory_t *dir);

/*  Takes the next block version nobody can read any more (garbage) into
    *ID and *VERSION (0: every version, see spm_idu_discard). Returns 1, or
    0 when there is none. The caller deletes it wherever it is kept. */
int spm_idu_gc_take(spm_idu_t *self, spm_sdb_t *id, uint64_t *version);

/*  A client no longer needs the SDBs of the ended jobs JOBS nor the SDBs
    PUTS it put (a put SDB that an SI still reads or will read is kept).
    Forgets them and hands every version of each to the garbage, as
    version 0 (spm_idu_gc_take); sets *DISCARDED to their number. Returns 0,
    or SPM_EINVAL when one of JOBS still runs (nothing is discarded), or
    SPM_ENOMEM. */
int spm_idu_discard(spm_idu_t *self, const uint64_t *jobs, size_t njobs, const spm_sdb_t *puts,
                    size_t nputs, size_t *discarded);

typedef struct {
    uint32_t node, slots;
    int alive;
    uint32_t held;    /* SIs issued to it and not committed */
    uint32_t credits; /* SIs it asked for that are not yet sent */
} spm_idu_ieu_info_t;

/*  Fills INFO for IEU. Returns 0 or SPM_ENOTFOUND. */
int spm_idu_ieu_info(const spm_idu_t *self, uint32_t ieu, spm_idu_ieu_info_t *info);

/*  IEUs ever joined (alive or dead); their indexes are 0 .. n-1. */
uint32_t spm_idu_ieu_total(const spm_idu_t *self);

/*  Fills up to MAX ids of the jobs the IDU knows (running or not yet
    reported); returns how many there are. */
size_t spm_idu_jobs(spm_idu_t *self, uint64_t *ids, size_t max);

/*  SIs ready but not issued, over all jobs (queue depth). */
uint64_t spm_idu_ready(const spm_idu_t *self);

/*  Jobs still running. */
uint32_t spm_idu_running(const spm_idu_t *self);

#endif
