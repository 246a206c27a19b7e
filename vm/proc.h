/*  =========================================================================
    proc - processes and directories the VM's launchers need

    @discuss
    Every spm process runs the same binary: spm_proc_spawn starts
    "/proc/self/exe ARGS..." as a child that receives SIGTERM when its parent
    dies, so a killed launcher never leaves orphans behind.
    @end
    =========================================================================
*/
#ifndef SPM_PROC_H_INCLUDED
#define SPM_PROC_H_INCLUDED

#include <sys/types.h>

/*  Starts this binary with ARGV (NULL-terminated; argv[0] is the program
    name shown by ps). Returns the child's pid, or -1 with the detail set. */
pid_t spm_proc_spawn(char *const argv[]);

/*  Sends SIGTERM to PID, waits up to TIMEOUT_MS for it to exit, then sends
    SIGKILL and reaps it. Returns its wait status. */
int spm_proc_stop(pid_t pid, int timeout_ms);

/*  Non-blocking: 1 when PID has exited (and reaps it), else 0. */
int spm_proc_exited(pid_t pid, int *status);

/*  Removes PATH and everything below it. Returns 0 or SPM_EIO. */
int spm_rmtree(const char *path);

#endif
