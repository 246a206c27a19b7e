/*  =========================================================================
    proc - processes and directories the VM's launchers need
    =========================================================================
*/
#define _XOPEN_SOURCE 700
#include "base/proc.h"
#include "base/cli.h"
#include "spm/spm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*  Forks a child that gets SIGTERM when this process dies. In the child
    (return 0) SIGTERM and SIGINT have their default actions and the signal
    mask is the parent's. Returns the child's pid to the parent, or -1 with
    the detail set. */
static pid_t fork_child(void)
{
    pid_t parent = getpid();
    /* A SIGTERM between fork and exec would run the parent's handler in
       the child, which then execs as if nothing came: an agent that
       stopped its IEUs at once waited for one that started anyway. The
       signals wait, blocked, until the child has its default actions. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) /* the parent died before prctl */
            _exit(1);
        sigprocmask(SIG_SETMASK, &old, NULL); /* a SIGTERM that came ends it here */
        return 0;
    }
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0)
        spm_error(SPM_ESYS, "fork: %s", strerror(err));
    return pid;
}

pid_t spm_proc_spawn(char *const argv[])
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        spm_error(SPM_ESYS, "cannot find the spm binary: %s", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    pid_t pid = fork_child();
    if (pid == 0) {
        execv(self, argv);
        _exit(127);
    }
    return pid;
}

void spm_proc_name(const char *command)
{
    char name[16]; /* the kernel keeps 15 characters */
    snprintf(name, sizeof name, "spm %s", command);
    prctl(PR_SET_NAME, name);
}

int spm_proc_run(const spm_command_t *cmd, int argc, char **argv)
{
    char name[64];
    snprintf(name, sizeof name, "spm %s", cmd->name);
    argv[0] = name;
    spm_proc_name(cmd->name);
    return cmd->main(argc, argv);
}

/*  The number of threads of this process, from /proc (0 if unknown). */
static long thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    long n = 0;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/*  Closes the descriptors exec would close (FD_CLOEXEC): a forked command
    holds what a started one would, no more. A pipe's write end the parent
    keeps close-on-exec still ends in EOF for the child. */
static void close_exec_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    int fds[1024], n = 0, self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) && n < (int)(sizeof fds / sizeof *fds)) {
        int fd = atoi(e->d_name);
        int flags = fd > 2 && fd != self ? fcntl(fd, F_GETFD) : -1;
        if (flags >= 0 && (flags & FD_CLOEXEC))
            fds[n++] = fd;
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

pid_t spm_proc_fork(char *const argv[])
{
    const spm_command_t *cmd = argv[0] && argv[1] ? spm_command_find(argv[1]) : NULL;
    if (!cmd) {
        spm_error(SPM_EINVAL, "no command '%s' to start", argv[0] && argv[1] ? argv[1] : "");
        return -1;
    }
    if (thread_count() != 1)
        return spm_proc_spawn(argv);
    pid_t pid = fork_child();
    if (pid == 0) {
        close_exec_fds();
        int argc = 0;
        while (argv[argc])
            argc++;
        optind = 0; /* glibc: getopt starts afresh */
        /* As main() does, without "spm". The command has closed what it
           opened; this process registered no atexit handler of its own,
           and the libraries' destructors (run by exit) would only write
           to pages shared with the parent, each a copy-on-write fault: a
           tenth of an IEU's CPU in a small `spm mine`, and on the path of
           its end. So stdio is flushed and the process ends there, but
           under a sanitizer, whose leak check runs at exit. */
        char *args[argc];
        for (int i = 1; i <= argc; i++)
            args[i - 1] = argv[i];
        int rc = spm_proc_run(cmd, argc - 1, args);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        exit(rc);
#else
        fflush(NULL);
        _exit(rc);
#endif
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
