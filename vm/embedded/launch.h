/*  =========================================================================
    launch - an embedded VM: a center and an agent as this process's children

    @header
    What a client starts when no center is named (vm/client/session.h): a
    center and an agent, which starts the IEUs, as forked copies of this
    process (spm_proc_fork, base/proc.h) on an ipc:// endpoint in a private
    0700 runtime directory /tmp/spm-run-*, which also holds the center's
    store and the node's cache. The children get SIGTERM when this process
    dies (PR_SET_PDEATHSIG), and destroy stops them and removes the
    directory.
    @discuss
        spm_embedded_opts_t o = {.ieus = 4, .slots = 1, .prefetch = 1};
        spm_embedded_t *vm;
        if ((rc = spm_embedded_new(&o, &vm)) != 0) return rc;
        ... connect to spm_embedded_endpoint(vm); while waiting for
        ... answers, spm_embedded_alive(vm) says when a child died
        ... send the center SHUTDOWN, then spm_embedded_release(vm)
        spm_embedded_destroy(&vm);   -- both gone, and the directory
    Call new before this process has a ZeroMQ socket, an LMDB environment
    or a thread (spm_proc_fork); a ZeroMQ context without sockets is fine.
    @end
    =========================================================================
*/
#ifndef SPM_LAUNCH_H_INCLUDED
#define SPM_LAUNCH_H_INCLUDED

/*  What the VM's processes are started with: the client's run options
    that concern them (--ieus, --slots, ...: vm/client/session.h). */
typedef struct {
    int ieus;           /* IEU processes (spm agent --ieus) */
    int slots;          /* SIs each IEU executes at once */
    int prefetch;       /* SIs each IEU asks for ahead */
    long cache_mb;      /* node cache budget in MiB (0: none) */
    int no_speculate;   /* the center copies no stragglers */
    int no_store_reads; /* IEUs read through their node cache, not the store */
    long warm_mb;       /* MiB the store prepares ahead (0: the center's default) */
    long heap_mb;       /* MiB each IEU thread touches at start (0: the agent's default) */
} spm_embedded_opts_t;

typedef struct spm_embedded spm_embedded_t;

/*  Makes the runtime directory and starts the center, then the agent, per
    O (read only during the call). It does not wait for the center's
    socket: the caller connects to spm_embedded_endpoint (and may wait for
    it, spm_wire_await_ipc). Returns 0 with *OUT set (owned by the caller:
    spm_embedded_destroy), or SPM_ESYS (no directory in /tmp, or a fork
    failed) or SPM_ENOMEM, with the detail set and *OUT NULL; whatever was
    started by then is stopped and removed. */
int spm_embedded_new(const spm_embedded_opts_t *o, spm_embedded_t **out);

/*  Stops the VM's processes as spm_embedded_destroy does, and keeps its
    runtime directory until then: a client stops the VM, closes its own
    sockets, then destroys it, so that an IEU of a killed agent that is
    still starting finds its cache where it was and exits without a word.
    Does nothing the second time. */
void spm_embedded_stop(spm_embedded_t *self);

/*  Stops the VM (spm_embedded_stop) and frees SELF: told to stop (spm_embedded_release), the
    center tells the agent, which stops its IEUs; this waits for them to
    exit, signals the agent when it is still there 100 ms after the center
    is gone (an agent still connecting when the center stopped never hears
    it) or 3 s after the start, and the center when it is still there 3 s
    after that. A VM not told to stop is stopped with signals at once.
    Then removes the runtime directory. Returns when every process and
    file is gone; sets *SELF_P to NULL; NULL is a no-op. */
void spm_embedded_destroy(spm_embedded_t **self_p);

/*  The center's endpoint ("ipc://DIR/center"), owned by SELF. */
const char *spm_embedded_endpoint(const spm_embedded_t *self);

/*  The runtime directory, which holds the center's store and the node
    cache, owned by SELF. */
const char *spm_embedded_rundir(const spm_embedded_t *self);

/*  Checks (without waiting) that the center is still there and, unless it
    was told to stop (spm_embedded_release), the agent: without its agent
    no IEU would ever come, and a job would wait for good. Returns 0, or
    SPM_EDEAD with the detail naming the one that exited (said once: from
    then on that one is no longer watched). */
int spm_embedded_alive(spm_embedded_t *self);

/*  1 while the center has not been seen to exit (spm_embedded_alive),
    else 0. */
int spm_embedded_center_up(const spm_embedded_t *self);

/*  Records that the caller told the center to stop (a SHUTDOWN on its
    connection): the agent's exit is then no failure, and destroy waits
    for both to exit by themselves before it signals them. */
void spm_embedded_release(spm_embedded_t *self);

/*  Whether spm_embedded_release was called. */
int spm_embedded_released(const spm_embedded_t *self);

#endif
