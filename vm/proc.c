/*  =========================================================================
    proc - processes and directories the VM's launchers need
    =========================================================================
*/
#define _XOPEN_SOURCE 700
#include "vm/proc.h"
#include "vm/spm.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t spm_proc_spawn(char *const argv[])
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        spm_error(SPM_ESYS, "cannot find the spm binary: %s", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    pid_t parent = getpid();
    /* A SIGTERM between fork and exec would run the parent's handler in
       the child, which then execs as if nothing came: an agent that
       stopped its IEUs at once waited for one that started anyway. The
       signals wait, blocked, until the child has its default actions. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) /* the parent died before prctl */
            _exit(1);
        sigprocmask(SIG_SETMASK, &old, NULL); /* a SIGTERM that came ends it here */
        execv(self, argv);
        _exit(127);
    }
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        spm_error(SPM_ESYS, "fork: %s", strerror(err));
        return -1;
    }
    return pid;
}

int spm_proc_exited(pid_t pid, int *status)
{
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
        if (status)
            *status = st;
        return 1;
    }
    return 0;
}

int spm_proc_stop(pid_t pid, int timeout_ms)
{
    int status = 0;
    if (pid <= 0)
        return 0;
    kill(pid, SIGTERM);
    for (int tenths = 0; tenths < timeout_ms * 10; tenths++) { /* of a ms */
        if (spm_proc_exited(pid, &status))
            return status;
        struct timespec ts = {0, 100000}; /* 0.1 ms */
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return status;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

int spm_rmtree(const char *path)
{
    if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        return spm_error(SPM_EIO, "%s: cannot remove: %s", path, strerror(errno));
    return 0;
}
