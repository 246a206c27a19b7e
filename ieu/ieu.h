/*  =========================================================================
    ieu - an execution unit: a process that pulls SIs from the center,
    localizes their operands, runs their bodies and commits their results

    @header
    Every node runs its IEUs (`spm ieu`, vm/cmd/ieu.c), started by its agent
    (vm/agent/ieus.c). One IEU is one process: a main thread that owns the
    socket to the center (ieu/ieu.c), and `slots` worker threads that run SI
    bodies (ieu/slots.c). The other files of ieu/ each hold one part of its
    work: credits (pull.c), operands (localize.c, plugins.c), outputs kept
    on nodes (keep.c), results committed in batches (commit.c).
    @discuss
    The command's main fills the options and makes, runs and destroys:

        spm_ieu_opts_t o = {.center = ep, .cache_dir = dir, .node_fd = -1,
                            .slots = 1, .prefetch = 1, .store_reads = 1};
        spm_ieu_proc_t *ieu;
        int rc = spm_ieu_new(&o, &ieu);            // cache opened, center dialled
        if (rc == 0)
            rc = spm_ieu_run(ieu);                 // HELLO, then SIs until drained
        spm_ieu_destroy(&ieu);                     // workers joined, all closed

    The IEU is a whole process: spm_ieu_new installs its handlers for
    SIGINT and SIGTERM (on which spm_ieu_run drains: running SIs finish and
    commit, the others go back to the center) and ignores SIGPIPE. One IEU
    per process. (spm_ieu_t, in spm/spm.h, is what an SF's feed hook is
    told of the IEU asking for work; this class is spm_ieu_proc_t.)
    @end
    =========================================================================
*/
#ifndef SPM_IEU_H_INCLUDED
#define SPM_IEU_H_INCLUDED

#include "spm/spm.h"

typedef struct spm_ieu_proc spm_ieu_proc_t;

/*  What `spm ieu` was asked for. The strings are not copied: they must
    outlive the IEU. */
typedef struct {
    const char *center;    /* the center to pull SIs from */
    const char *cache_dir; /* the node cache (shared by all IEUs of the node) */
    const char *keys;      /* CurveZMQ keys (agent.key, center.pub), or NULL */
    int insecure;          /* plain TCP allowed */
    int store_reads;       /* with an ipc:// center, read blocks straight from its store */
    int local_files;       /* SIs may read a client's input file by its path */
    long node;             /* this node's index, when node_fd is -1 */
    long node_fd;          /* read the node's index from this descriptor (4 bytes), or -1 */
    long slots;            /* SIs executed at once, one thread each */
    long prefetch;         /* SIs asked for ahead, localized while others run */
    long cache_mb;         /* node cache budget, MiB (0: none) */
    long heap_mb;          /* memory each thread touches at start (base/heap.h) */
} spm_ieu_opts_t;

/*  Makes the IEU of OPTS: installs the signal handlers, opens the node
    cache, makes the ZeroMQ context and the eventfd the workers wake the
    main thread with, and connects to the center (the handshake goes on
    in the background). Returns 0 with *OUT set (owned by the caller:
    spm_ieu_destroy), or with *OUT NULL and everything it made undone:
    SPM_ESYS when one of those cannot be made, or the code of a failed
    connect (SPM_EINVAL for a bad endpoint, SPM_EDENIED for missing keys);
    the detail is set where there is one. */
int spm_ieu_new(const spm_ieu_opts_t *opts, spm_ieu_proc_t **out);

/*  Joins the VM and runs SIs: reads the node's index from node_fd (and
    closes it) when one was given, says HELLO and waits up to 10 s for the
    WELCOME, starts the worker threads, then pulls, localizes, runs and
    commits until the center says SHUTDOWN, or a signal drains it (the
    center is told BYE). Returns 0 then, and when a signal came while it
    waited for its node; SPM_EDENIED when the center refused this node's
    key, SPM_EUNREACH when it did not answer the HELLO (detail set: the
    failures a user is told of); SPM_ECANCELED when a signal came before
    the WELCOME; SPM_EDEAD when node_fd closed without a node (its agent
    could not join, and says why); SPM_ETIMEOUT when the center went silent
    for twice its dead time (logged); SPM_ESYS when polling failed. */
int spm_ieu_run(spm_ieu_proc_t *self);

/*  Stops and joins the worker threads, frees the SIs still held, closes
    the sockets, the context and the cache, frees the IEU and sets *SELF
    to NULL. Does nothing when *SELF is NULL. */
void spm_ieu_destroy(spm_ieu_proc_t **self_p);

#endif
