/*  =========================================================================
    session - a client's connection to a VM, embedded or remote

    @discuss
    Every command that runs a job (`spm run`, `spm matmul`, `spm mine`) goes
    through a session. Without --center, spm_session_open starts an embedded
    VM: a center, an agent and its IEUs as real processes on private ipc
    endpoints in a 0700 runtime directory, all torn down by close (also on
    Ctrl-C). With --center it connects to a running VM.

        spm_run_opts_t o;
        spm_run_opts_init(&o);
        ... getopt_long with SPM_RUN_LONGOPTS; default: spm_run_opts_set(&o, c, optarg)
        spm_session_t *s;
        if ((rc = spm_session_open(&o, &s)) != 0) return spm_cli_fail("matmul", rc);
        spm_session_put(s, "mm.dense", bytes, len, &id);   -- inputs into the store
        spm_session_run(s, "matmul", args, len, &result, &rlen); -- progress, report
        spm_session_get(s, id, &bytes, &len);              -- outputs back
        spm_session_destroy(&s);
    @end
    =========================================================================
*/
#ifndef SPM_SESSION_H_INCLUDED
#define SPM_SESSION_H_INCLUDED

#include <getopt.h>
#include <stdio.h>

#include "spm/spm.h"

typedef struct {
    const char *center; /* NULL: start an embedded VM; else the center's endpoint */
    int ieus;           /* embedded VM: IEU processes (default: number of cores) */
    int slots;          /* embedded VM: SIs each IEU executes at once (1) */
    int prefetch;       /* embedded VM: SIs each IEU asks for ahead (1) */
    int json;           /* print the report as JSON on stdout */
    int quiet;          /* no progress bar or meters, no text report */
    int priority;       /* job priority (0) */
    const char *trace;  /* write a Chrome trace here (NULL: none) */
    int sync;           /* --sync: the command's files (the trace, a program's outputs)
                           are made durable before it returns */
    const char *keys;   /* directory with CurveZMQ keys (NULL: insecure) */
    long timeout_ms;    /* how long to wait for the center to answer (10000) */
    long wait_center_s; /* --wait-center: how long a session waits for a center that is
                           not up yet, saying HELLO again with backoff (base/backoff.h);
                           0: as long as it takes; -1 (the default): timeout_ms */
    int insecure;       /* plain TCP to the center */
    int detach;         /* submit, print the job id and return without waiting */
    long cache_mb;      /* embedded VM: node cache budget in MiB (0: none) */
    int no_speculate;   /* embedded VM: the center copies no stragglers */
    int no_store_reads; /* embedded VM: IEUs read through their node cache, not the store */
    long warm_mb;       /* embedded VM: MiB its store prepares ahead (0: the center's
                           default); a program that knows how much it will write sets it */
    long heap_mb;       /* embedded VM: MiB each IEU thread touches at start (0: the
                           agent's default); a program that knows its SIs' buffers sets it */
    FILE *report;       /* where the text report, the bar and the meters go (NULL:
                           stdout); a plugin's run keeps stdout for its results */
} spm_run_opts_t;

enum {
    SPM_OPT_CENTER = 1000,
    SPM_OPT_IEUS,
    SPM_OPT_SLOTS,
    SPM_OPT_PREFETCH,
    SPM_OPT_JSON,
    SPM_OPT_QUIET,
    SPM_OPT_PRIORITY,
    SPM_OPT_TRACE,
    SPM_OPT_KEYS,
    SPM_OPT_TIMEOUT,
    SPM_OPT_INSECURE,
    SPM_OPT_DETACH,
    SPM_OPT_CACHE_MB,
    SPM_OPT_SPECULATE,
    SPM_OPT_NO_SPECULATE,
    SPM_OPT_NO_STORE_READS,
    SPM_OPT_SYNC,
    SPM_OPT_WAIT_CENTER,
};

/*  getopt_long entries for the options of every command that talks to a
    center (spm status, wait, jobs ... and the job-running commands). */
/* clang-format off */
#define SPM_CENTER_LONGOPTS                                                                        \
    {"center", required_argument, 0, SPM_OPT_CENTER},                                              \
    {"timeout", required_argument, 0, SPM_OPT_TIMEOUT},                                            \
    {"wait-center", required_argument, 0, SPM_OPT_WAIT_CENTER},                                    \
    {"keys", required_argument, 0, SPM_OPT_KEYS},                                                  \
    {"insecure", no_argument, 0, SPM_OPT_INSECURE}

/*  getopt_long entries for the options every job-running command takes. */
#define SPM_RUN_LONGOPTS                                                                           \
    SPM_CENTER_LONGOPTS,                                                                           \
    {"ieus", required_argument, 0, SPM_OPT_IEUS},                                                  \
    {"slots", required_argument, 0, SPM_OPT_SLOTS},                                                \
    {"prefetch", required_argument, 0, SPM_OPT_PREFETCH},                                          \
    {"json", no_argument, 0, SPM_OPT_JSON},                                                        \
    {"quiet", no_argument, 0, SPM_OPT_QUIET},                                                      \
    {"priority", required_argument, 0, SPM_OPT_PRIORITY},                                          \
    {"trace", required_argument, 0, SPM_OPT_TRACE},                                                \
    {"detach", no_argument, 0, SPM_OPT_DETACH},                                                    \
    {"cache-mb", required_argument, 0, SPM_OPT_CACHE_MB},                                          \
    {"speculate", no_argument, 0, SPM_OPT_SPECULATE},                                              \
    {"no-speculate", no_argument, 0, SPM_OPT_NO_SPECULATE},                                        \
    {"no-store-reads", no_argument, 0, SPM_OPT_NO_STORE_READS},                                    \
    {"sync", no_argument, 0, SPM_OPT_SYNC}
/* clang-format on */

/*  Help text for SPM_CENTER_LONGOPTS but --center, whose line each
    command words itself (a default center, or an embedded VM), in the
    column layout of every --help: a literal, joined to a command's text. */
#define SPM_CONNECT_OPTS_HELP                                                                      \
    "  --timeout MS        how long to wait for the center to answer (default 10000)\n"            \
    "  --wait-center SECONDS\n"                                                                    \
    "                      wait up to SECONDS for a named center that is not up yet,\n"            \
    "                      or stopped answering (0: as long as it takes), asking\n"                \
    "                      again after 1, 2, 4 ... s and saying once on stderr that\n"             \
    "                      it waits (default: --timeout)\n"                                        \
    "  --keys DIR          CurveZMQ keys (client.key, center.pub) for a tcp:// center\n"           \
    "                      (default $SPM_KEYS, else /etc/spm/keys)\n"                              \
    "  --insecure          connect over plain TCP without keys\n"

/*  Help text for those options, to append to a command's usage. */
extern const char spm_run_opts_help[];

void spm_run_opts_init(spm_run_opts_t *o);

/*  Applies option OPT (one of SPM_OPT_*) with ARG. Returns 0, or SPM_EINVAL
    with a detail (bad value, or OPT is not a run option). */
int spm_run_opts_set(spm_run_opts_t *o, int opt, const char *arg);

typedef struct spm_session spm_session_t;

/*  Whether a client shows progress per O: on a terminal (the report's
    stream, o->report or stdout), neither quiet nor json (the job's bar,
    and vm/client/progress.h meters). */
int spm_run_opts_bar(const spm_run_opts_t *o);

/*  Opens a session per O: starts the embedded VM or connects to O->center
    and checks that it answers (waiting for it as o->wait_center_s says). Returns 0 with *OUT set,
   or SPM_EUNREACH, SPM_EADDRINUSE, SPM_ESYS, SPM_EINVAL (detail set). */
int spm_session_open(const spm_run_opts_t *o, spm_session_t **out);

/*  The directory of an embedded VM, which holds its store and node cache
    (what the VM keeps takes space there), or NULL when S is connected to
    a running VM. */
const char *spm_session_rundir(const spm_session_t *s);

/*  Whether the VM's IEUs may read the client's files by path (an embedded
    VM's: `spm agent --local-files`), so that an input need not be staged. */
int spm_session_local_files(const spm_session_t *s);

/*  Stores a new SDB of TYPE with LEN bytes (copied) in the VM as version
    1: on a cluster, on as many nodes as the VM keeps replicas of (pushed
    to their data agents straight from here; the center only names them);
    on an embedded VM, in the center's store. Returns 0 with *ID set, or an
    SPM_E* code (SPM_EUNREACH when no node would keep it: the detail names
    each node tried and what it said). */
int spm_session_put(spm_session_t *s, const char *type, const void *data, size_t len,
                    spm_sdb_t *id);

/*  The same, pipelined: sends the put and returns without waiting for its
    answer while fewer than 16 are unanswered, so staging a file costs one
    round trip per 16 blocks, not per block. *ID (which must stay valid) and
    TYPE (a string that outlives the put) are set and checked when the
    answer arrives: by spm_session_put_flush at the latest. Returns 0 or the
    first SPM_E* code of any put so far. */
int spm_session_put_async(spm_session_t *s, const char *type, const void *data, size_t len,
                          spm_sdb_t *id);

/*  spm_session_put_async of the LEN malloc'd bytes at DATA, which the put
    takes (frees when done, whatever it returns): they go to the VM
    without a copy in this process. */
int spm_session_put_take(spm_session_t *s, const char *type, void *data, size_t len, spm_sdb_t *id);

/*  Waits for every unanswered put. Returns 0 or the first SPM_E* code. */
int spm_session_put_flush(spm_session_t *s);

/*  Fetches the newest committed version of SDB ID, from the nodes that
    hold it (or the center's store). *DATA is malloc'd and owned by the
    caller. Returns 0, SPM_ENOTFOUND (no such SDB, or every node that kept
    it died), SPM_EUNREACH (no holder answered: the detail names each), or
    another SPM_E* code. */
int spm_session_get(spm_session_t *s, spm_sdb_t id, void **data, size_t *len);

/*  Fetches the newest versions of the N SDBs IDS, up to 16 at once from
    their holders, and calls FN(ARG, I, DATA, LEN) for each (I its index in
    IDS) in the order they arrive; DATA is valid during the call only. FN
    returns 0, or an SPM_E* code that stops the fetching. Returns 0, or the
    first failure (as spm_session_get, or FN's). */
int spm_session_get_each(spm_session_t *s, const spm_sdb_t *ids, size_t n,
                         int (*fn)(void *arg, size_t index, const void *data, size_t len),
                         void *arg);

/*  A block kept past spm_session_get_each's callback without a copy. */
typedef struct spm_kept spm_kept_t;

/*  Called from inside spm_session_get_each's FN: keeps the block FN was
    given, whose bytes are then at *DATA (not always where FN had them;
    the length is the same) until spm_kept_free, even after the session
    is closed. NULL when out of memory or not inside FN (copy them then). */
spm_kept_t *spm_session_keep(spm_session_t *s, const void **data);

/*  1 when kept block K lies where the center's store keeps it (an ipc://
    center's store, read in place: file pages, mapped), 0 when it is the
    message it came in (memory of this process). */
int spm_kept_in_place(const spm_kept_t *k);

/*  Frees a kept block (an spm_kept_t; NULL is a no-op). */
void spm_kept_free(void *kept);

/*  Submits PROGRAM with ARGS, shows progress on a terminal (unless quiet or
    json), waits for the end and prints the report (text, or JSON on stdout).
    With o->detach it prints the job id and returns 0 at once.
    *RESULT (malloc'd, caller frees; may be NULL) receives the result bytes
    the root SF set. Returns 0, or the job's SPM_E* code with its message in
    spm_error_detail(). */
int spm_session_run(spm_session_t *s, const char *program, const void *args, size_t len,
                    void **result, size_t *result_len);

/*  The same for PROGRAM of the plugin whose bytes this session put as SDB
    PLUGIN (type "spm.plugin", runtime/plugin.h); 0 is spm_session_run. */
int spm_session_run_plugin(spm_session_t *s, spm_sdb_t plugin, const char *program,
                           const void *args, size_t len, void **result, size_t *result_len);

/*  Follows JOB (submitted before, maybe by another client) to its end, as
    spm_session_run does after submitting. */
int spm_session_wait(spm_session_t *s, uint64_t job, void **result, size_t *result_len);

/*  Whether the result of the last job followed to its end is text for the
    user (a plugin's job: `spm wait` prints it). */
int spm_session_text_result(const spm_session_t *s);

struct Spm__JobsReply; /* transport/spm.proto */

/*  Fetches the center's job records (spm jobs): JOB's alone with its
    report when JOB is not 0 (spm show), else every record whose state is
    STATE ("" or NULL: any) submitted at or after SINCE_US (Unix us),
    newest first, into *OUT (the caller frees it with
    spm__jobs_reply__free_unpacked). Returns 0, or SPM_ENOTFOUND (no such
    job), SPM_ENOMEM, or the failure to ask. */
int spm_session_jobs(spm_session_t *s, uint64_t job, const char *state, uint64_t since_us,
                     struct Spm__JobsReply **out);

/*  Fetches the center's status as JSON and text (malloc'd, caller frees). */
int spm_session_status(spm_session_t *s, char **json, char **text);

/*  Cancels JOB. Returns 0, SPM_ENOTFOUND, or another SPM_E* code. */
int spm_session_cancel(spm_session_t *s, uint64_t job);

/*  Whether Ctrl-C or SIGTERM arrived since the session opened. */
int spm_session_interrupted(void);

/*  Says the VM is no longer needed: an embedded VM starts stopping now,
    while the caller goes on (writing its output, say); nothing may be
    asked of the session after this but close. A remote VM is untouched. */
void spm_session_release(spm_session_t *s);

/*  Tells a remote center that the blocks this session put, and those of
    the jobs it ran and followed to their end, are no longer needed: the
    center deletes them (every version), so its store does not grow with
    every run. Call it once the results are fetched; close does, too. An
    embedded VM's store goes with the VM: nothing is sent. Returns 0, or
    SPM_EINVAL when one of the jobs still runs (nothing is deleted), or
    another SPM_E* code. */
int spm_session_discard(spm_session_t *s);

/*  Closes the session. On a remote VM it cancels the jobs it ran when
    Ctrl-C or SIGTERM came (nobody would fetch their results), then
    discards (spm_session_discard; a failure is a warning). An embedded VM
    is shut down and its processes and runtime directory are gone when this
    returns. Sets *S to NULL. */
void spm_session_destroy(spm_session_t **self_p);

#endif
