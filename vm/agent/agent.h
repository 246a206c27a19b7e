/*  =========================================================================
    agent - the agent of one node: its IEUs, its data agent, its link to
    the center

    @header
    One agent runs per node (`spm agent`, vm/cmd/agent.c). It empties the
    node cache, starts the node's IEUs, registers the node with the center,
    serves the node's blocks to other nodes (datacache/dataagent.h), and
    supervises the IEUs: a death is reported to the center at once and the
    IEU is started again with a growing delay (vm/agent/ieus.c).
    @discuss
    The command's main fills the options and makes, runs and destroys:

        spm_agent_opts_t o = {.center = "tcp://head:7700", .drain_s = 60, ...};
        spm_agent_t *agent;
        int rc = spm_agent_new(&o, &agent);        // IEUs started, center dialled
        if (rc == 0)
            rc = spm_agent_run(agent);             // until SIGTERM or SHUTDOWN
        ... rc != 0: spm_error_detail() says why ...
        spm_agent_destroy(&agent);                 // IEUs drained, all closed

    The agent is a whole process: spm_agent_new installs its handlers for
    SIGINT and SIGTERM (which end spm_agent_run) and ignores SIGPIPE, and
    forks the first IEUs from the calling process, which must not have a
    thread or a ZeroMQ socket yet (base/proc.h, spm_proc_fork). One agent
    per process.
    @end
    =========================================================================
*/
#ifndef SPM_AGENT_H_INCLUDED
#define SPM_AGENT_H_INCLUDED

#include "spm/spm.h"

typedef struct spm_agent spm_agent_t;

/*  What `spm agent` was asked for (its flags over the configuration's
    agent.* settings). The strings are not copied: they must outlive the
    agent. */
typedef struct {
    const char *center;         /* the center's endpoint */
    const char *cache_dir;      /* node cache directory, emptied at start; NULL or "":
                                   /tmp/spm-cache-UID-PID, removed by spm_agent_destroy */
    const char *data_listen;    /* where the data agent binds; NULL or "": ipc://CACHE-DIR/data
                                   with an ipc:// center, else a random TCP port */
    const char *data_advertise; /* the endpoint peers use; NULL or "": the bound one */
    const char *keys;           /* CurveZMQ key directory; NULL: the setting security.keys */
    int insecure;               /* plain TCP allowed */
    int store_reads;            /* IEUs may read an ipc:// center's store in place */
    int local_files;            /* IEUs may read a client's input file by its path */
    int no_sync;                /* the cache directory goes with the agent: sync nothing */
    long ieus;                  /* IEU processes (0: one per core) */
    long slots;                 /* SIs each IEU executes at once */
    long prefetch;              /* SIs each IEU asks for ahead */
    long cache_mb;              /* node cache budget, MiB (0: none) */
    long heap_mb;               /* memory each IEU thread touches at start (base/heap.h) */
    long drain_s;               /* how long running SIs may take to finish on SIGTERM */
    const char *log_level;      /* the IEUs' --log-level */
    const char *name;           /* the node's name for people; NULL or "": the host name */
    long wait_center_s;         /* how long to wait for the center to answer at start,
                                   in seconds; 0: as long as it takes */
    const char *http;           /* ADDR:PORT of the node's /metrics; NULL or "": none */
    const char *http_token;     /* the bearer token HTTP requests must carry; NULL or "": none */
} spm_agent_opts_t;

/*  Makes the agent of OPTS: installs the signal handlers, empties the node
    cache, starts the IEUs (forked copies of this process that wait for
    their node index on a pipe), opens the node cache, binds the data
    agent and connects to the center. Returns 0 with *OUT set (owned by the
    caller: spm_agent_destroy), or with *OUT NULL and everything it made
    undone (its IEUs stopped): SPM_ENOMEM, SPM_EIO when the cache directory
    cannot be emptied or the cache opened, the code of a failed bind or
    connect (SPM_EINVAL for a bad endpoint, SPM_EADDRINUSE, SPM_EDENIED
    for missing keys) or of the HTTP server's start (SPM_EINVAL for a bad
    address, SPM_EADDRINUSE), SPM_ESYS; the detail is set where there is
    one. */
int spm_agent_new(const spm_agent_opts_t *opts, spm_agent_t **out);

/*  Joins the VM and runs the node: says HELLO (again, with a growing
    pause, up to every 30 s) and waits for the center's WELCOME as long as
    wait_center_s says (saying once that it waits), hands the IEUs their
    node index, writes the pid file CACHE-DIR/agent.pid, then serves
    blocks, supervises the IEUs and rejoins a center that restarted, went
    silent or took this node for dead, until SIGTERM or SIGINT (a drain:
    the IEUs finish their running SIs within drain_s while the node still
    serves its blocks, then the agent says BYE) or a SHUTDOWN from the
    center. Returns 0 then;
    SPM_ECANCELED when a signal came before the WELCOME (nothing to report);
    SPM_EUNREACH when the center did not answer, SPM_EDENIED when it
    refused this node's key (detail set). */
int spm_agent_run(spm_agent_t *self);

/*  Stops the IEUs (SIGTERM: they finish and commit their running SIs;
    those still there after drain_s are killed), closes every socket and
    the cache, removes a cache directory it made, frees the agent and sets
    *SELF to NULL. Does nothing when *SELF is NULL. */
void spm_agent_destroy(spm_agent_t **self_p);

/*  `spm agent --drain`: sends SIGTERM to the agent whose pid file is in
    CACHE_DIR and waits until it has exited. Returns 0 with *PID set to its
    pid, or SPM_ENOTFOUND (detail set) when the pid file is missing or
    names no process. */
int spm_agent_drain(const char *cache_dir, int *pid);

#endif
