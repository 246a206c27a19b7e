/*  =========================================================================
    center - the center of one VM: the IDU, the durable store and the
    control endpoint, around one poll loop

    @header
    One thread, one ROUTER socket, one poll loop (as Redis does it): IEUs,
    agents and clients all talk to the same socket, and every message is
    handled to the end before the next is read. No locks. `spm center`
    (vm/cmd/center.c) fills the options from its command line and the
    configuration, makes a center, runs it until a stop and destroys it.
    @discuss
        spm_center_opts_t o = {.listen = "ipc:///run/spm/c", .store = dir, ...};
        int rc;
        spm_center_t *c = spm_center_new(&o, &rc);
        if (!c)
            return spm_cli_fail("center", rc);
        spm_center_run(c);          // until SIGINT, SIGTERM or a client's SHUTDOWN
        spm_center_destroy(&c);
    The class is split by concept over vm/center/: center.c (its life and
    the loop: the turn, ticks, the pump, shutdown), workers.c (IEUs and
    agents: HELLO, ISSUE, COMMIT and the group commit, deaths), clients.c
    (submit, watch, status, cancel, discard, reports), blocks.c (GET, PUT,
    STORE, PLACED, PUBLISH and DROP, parked GETs, garbage) and startup.c
    (the store's lock, the pid file, plugin loading, resuming journaled
    jobs). They share the struct through center_int.h.
    @end
    =========================================================================
*/
#ifndef SPM_CENTER_H_INCLUDED
#define SPM_CENTER_H_INCLUDED

#include "vm/center/plugins.h"

typedef struct spm_center spm_center_t;

/*  What a center is made with: `spm center`'s options, in their units.
    The strings are read by spm_center_new only (it copies what it keeps). */
typedef struct {
    const char *listen;           /* endpoint, e.g. tcp://0.0.0.0:7700 or ipc:///run/spm/c */
    int listen_fd;                /* an ipc:// listen's socket, bound and listening (0: none) */
    const char *store;            /* the store's directory (created 0700) */
    const char *keys;             /* CurveZMQ key directory (NULL: security.keys) */
    int insecure;                 /* allow plain TCP without keys */
    long heartbeat_ms;            /* heartbeat interval asked of IEUs */
    long dead_ms;                 /* silence after which a peer is dead */
    long lease_s;                 /* re-issue an SI not committed after this (0: off) */
    long sf_bound_ms;             /* a plugin job's host that takes longer to answer fails it */
    long sync_ms;                 /* flush the store at most this long after a commit */
    int no_sync;                  /* never flush the store (a store thrown away at the end) */
    int journal;                  /* journal the jobs' events and resume them after a restart */
    long warm_mb;                 /* MiB past the store's data kept prepared (0: off) */
    long replicas;                /* copies of every block the VM keeps */
    int speculate;                /* copy stragglers to idle IEUs */
    const char *http;             /* ADDR:PORT of the dashboard and metrics ("": none) */
    const char *http_token;       /* the token HTTP requests must carry ("": none) */
    spm_plugins_policy_t plugins; /* who may send plugins (center.allow_plugins) */
    long history_jobs;            /* ended jobs' records kept (center.history_jobs) */
    long history_days;            /* ... for this long after their end (center.history_days) */
    long keep_results_s;          /* an ended job's blocks kept for its client (0: for ever) */
    long abandon_s;               /* a job nobody follows is canceled after this (0: never) */
} spm_center_opts_t;

/*  Makes a center from O: opens the store (and takes its lock, held until
    the process ends), reads the journal back and resumes its jobs, binds
    the endpoint, starts the HTTP port when O->http names one. Returns the
    center, owned by the caller (spm_center_destroy), or NULL with *RC set
    and the detail saying why: SPM_ESTORE (the store cannot be opened),
    SPM_EINVAL (the store is in use by another center, or the endpoint is
    invalid), SPM_EIO (the lock file or the journal cannot be read or
    written), SPM_ENOMEM, SPM_ESYS (the socket or the crash guard),
    SPM_EDENIED (a tcp:// endpoint without keys), SPM_EADDRINUSE (the
    endpoint or the HTTP port is taken). */
spm_center_t *spm_center_new(const spm_center_opts_t *o, int *rc);

/*  Runs the loop until SIGINT, SIGTERM or a client's SHUTDOWN (it installs
    the handlers), then applies the last commits, writes and syncs the
    journal and tells the IEUs and agents to shut down. */
void spm_center_run(spm_center_t *self);

/*  Frees the center and everything it holds, and sets *SELF to NULL.
    Does nothing when *SELF is NULL. */
void spm_center_destroy(spm_center_t **self_p);

#endif
