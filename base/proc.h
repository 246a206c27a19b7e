/*  =========================================================================
    proc - processes and directories the VM's launchers need

    @discuss
    Every spm process runs the same binary: spm_proc_spawn starts
    "/proc/self/exe ARGS..." as a child that receives SIGTERM when its parent
    dies, so a killed launcher never leaves orphans behind.

    spm_proc_fork starts a command without exec: the child runs the
    command's main on a copy of its parent, which has every library loaded
    already. On a guest where page faults are dear, loading libzmq's chain
    of libraries is most of a process's start; an embedded VM starts its
    center and agent this way, and the agent its first IEUs. A forked
    command shows its parent's command line in ps; the name of every spm
    process says what it runs ("spm ieu": ps -o comm, top, /proc/PID/comm).
    @end
    =========================================================================
*/
#ifndef SPM_PROC_H_INCLUDED
#define SPM_PROC_H_INCLUDED

#include "base/cli.h"

#include <sys/types.h>

/*  Starts this binary with ARGV (NULL-terminated; argv[0] is the program
    name shown by ps). Returns the child's pid, or -1 with the detail set. */
pid_t spm_proc_spawn(char *const argv[]);

/*  Starts the spm command ARGV (argv[0] "spm", argv[1] the command) in a
    forked copy of this process that calls the command's main and exits
    with its result. The parent must not yet have a ZeroMQ socket, an LMDB
    environment or another thread (a forked child gets none of them in a
    working state; a ZeroMQ context without sockets has no thread yet, and
    the child makes its own); with more than one thread it falls back to
    spm_proc_spawn. Returns the child's pid, or -1 with the detail set. */
pid_t spm_proc_fork(char *const argv[]);

/*  Names this process "spm COMMAND" (the kernel keeps 15 characters). */
void spm_proc_name(const char *command);

/*  Runs command CMD in this process as `spm NAME ARGS`: ARGV[0] (replaced
    by "spm NAME", as the command's usage lines say) and its ARGC - 1
    arguments; names the process. Returns what the command's main does. */
int spm_proc_run(const spm_command_t *cmd, int argc, char **argv);

/*  Sends SIGTERM to PID, waits up to TIMEOUT_MS for it to exit, then sends
    SIGKILL and reaps it. Returns its wait status. */
int spm_proc_stop(pid_t pid, int timeout_ms);

/*  Non-blocking: 1 when PID has exited (and reaps it), else 0. */
int spm_proc_exited(pid_t pid, int *status);

/*  Removes PATH and everything below it. Returns 0 or SPM_EIO. */
int spm_rmtree(const char *path);

#endif
