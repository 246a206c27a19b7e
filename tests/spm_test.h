/*  Helpers for integration tests that run the real spm binary: where it is
    ($SPM_BIN, set by `make check`), running it with captured output, and a
    scratch directory. Header-only; include from test files. */
#ifndef SPM_TEST_H_INCLUDED
#define SPM_TEST_H_INCLUDED

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Benchmarks include this too, outside any Check test: they define these
   two to exit with a message instead. */
#ifndef SPM_TEST_ASSERT
#define SPM_TEST_ASSERT(c) ck_assert(c)
#define SPM_TEST_FAIL(...) ck_abort_msg(__VA_ARGS__)
#endif

/*  Path of the spm binary under test. */
static inline const char *spm_test_bin(void)
{
    const char *b = getenv("SPM_BIN");
    return b && *b ? b : "build/spm";
}

/*  Reads all of FD into a malloc'd NUL-terminated string. */
static inline char *spm_test_slurp(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ssize_t n;
    while (buf && (n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2) {
            cap *= 2;
            char *b = realloc(buf, cap);
            if (!b)
                break;
            buf = b;
        }
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

/*  Starts `spm ARGV...` with stdout and stderr sent to files under /tmp.
    Returns the pid; the outputs are read by spm_test_finish. */
typedef struct {
    pid_t pid;
    char out_path[64], err_path[64];
} spm_test_proc_t;

/*  As spm_test_start, inside network namespace NS (NULL: this one), run
    through `ip netns exec`. */
static inline spm_test_proc_t spm_test_start_in(const char *ns, const char *const *argv);

static inline spm_test_proc_t spm_test_start(const char *const *argv)
{
    return spm_test_start_in(NULL, argv);
}

static inline spm_test_proc_t spm_test_start_in(const char *ns, const char *const *argv)
{
    spm_test_proc_t p;
    snprintf(p.out_path, sizeof p.out_path, "/tmp/spm-test-out-XXXXXX");
    snprintf(p.err_path, sizeof p.err_path, "/tmp/spm-test-err-XXXXXX");
    int out = mkstemp(p.out_path), err = mkstemp(p.err_path);
    SPM_TEST_ASSERT(out >= 0 && err >= 0);
    p.pid = fork();
    SPM_TEST_ASSERT(p.pid >= 0);
    if (p.pid == 0) {
        dup2(out, 1);
        dup2(err, 2);
        int n = 0;
        while (argv[n])
            n++;
        char **args = calloc((size_t)n + 6, sizeof *args);
        int k = 0;
        if (ns) {
            args[k++] = (char *)"ip";
            args[k++] = (char *)"netns";
            args[k++] = (char *)"exec";
            args[k++] = (char *)ns;
            args[k++] = (char *)spm_test_bin();
        } else {
            args[k++] = (char *)"spm";
        }
        for (int i = 0; i < n; i++)
            args[k++] = (char *)argv[i];
        if (ns)
            execvp("ip", args);
        else
            execv(spm_test_bin(), args);
        _exit(127);
    }
    close(out);
    close(err);
    return p;
}

/*  Waits up to TIMEOUT_S for P (then kills it and fails the test), sets
    *OUT and *ERR (malloc'd; may be NULL to discard) and returns the exit
    status (128 + signal for a signal). */
static inline int spm_test_finish(spm_test_proc_t *p, int timeout_s, char **out, char **err)
{
    int status = 0;
    time_t end = time(NULL) + timeout_s;
    /* Woken by the exit itself where the kernel has pidfds (benchmarks
       time the wait), else every 20 ms. */
#ifdef SYS_pidfd_open
    int pfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
#else
    int pfd = -1;
#endif
    while (waitpid(p->pid, &status, WNOHANG) == 0) {
        if (time(NULL) > end) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &status, 0);
            SPM_TEST_FAIL("spm did not finish within %d s", timeout_s);
        }
        if (pfd < 0 || poll(&(struct pollfd){.fd = pfd, .events = POLLIN}, 1, 1000) < 0)
            usleep(20000);
    }
    if (pfd >= 0)
        close(pfd);
    int fo = open(p->out_path, O_RDONLY), fe = open(p->err_path, O_RDONLY);
    char *o = spm_test_slurp(fo), *e = spm_test_slurp(fe);
    close(fo);
    close(fe);
    unlink(p->out_path);
    unlink(p->err_path);
    /* A sanitized build (make check SANITIZE=...) reports into stderr of
       whichever process erred, also children of spm (IEUs, embedded VMs),
       and goes on: any report fails the test that started it. */
    if (e && (strstr(e, "runtime error:") || strstr(e, "Sanitizer")))
        SPM_TEST_FAIL("sanitizer report from spm:\n%s", e);
    if (out)
        *out = o;
    else
        free(o);
    if (err)
        *err = e;
    else
        free(e);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*  Runs `spm ARGV...` to the end. */
static inline int spm_test_run(const char *const *argv, int timeout_s, char **out, char **err)
{
    spm_test_proc_t p = spm_test_start(argv);
    return spm_test_finish(&p, timeout_s, out, err);
}

/*  Runs `spm ARGV...`, a `submit`, to the end; fails the test unless it
    succeeds and prints a job id. Returns the id. */
static inline long spm_test_submit(const char *const *argv, int timeout_s)
{
    char *out, *err;
    int rc = spm_test_run(argv, timeout_s, &out, &err);
    if (rc != 0)
        SPM_TEST_FAIL("submit: %s", err);
    long job = atol(out);
    SPM_TEST_ASSERT(job > 0);
    free(out);
    free(err);
    return job;
}

/*  Reads the number after "KEY": in a flat JSON text; -1 when absent. */
static inline double spm_test_json_num(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = json ? strstr(json, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : -1;
}

/*  Creates a scratch directory (mkdtemp) and returns it (static buffer). */
static inline const char *spm_test_tmpdir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/spm-test-XXXXXX");
    SPM_TEST_ASSERT(mkdtemp(dir) != NULL);
    return dir;
}

/*  A VM of real processes for a test: a center on an ipc endpoint in a
    scratch directory, and agents added one by one. */
typedef struct {
    char dir[64]; /* scratch directory, removed by spm_test_vm_stop */
    char ep[160]; /* the center's endpoint: ipc://DIR/center */
    spm_test_proc_t center;
    spm_test_proc_t agents[8];
    int nagents;
} spm_test_vm_t;

/*  Appends the NULL-terminated EXTRA (may be NULL) to ARGV at N. */
static inline int spm_test_args(const char **argv, int n, int max, const char *const *extra)
{
    for (int i = 0; extra && extra[i] && n < max - 1; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    return n;
}

/*  Starts the center of VM on ipc://DIR/center with its store in
    DIR/store and the flags EXTRA (NULL-terminated, may be NULL), and
    gives it 200 ms to come up. */
static inline void spm_test_vm_center(spm_test_vm_t *vm, const char *const *extra)
{
    char store[128];
    snprintf(store, sizeof store, "%s/store", vm->dir);
    const char *argv[32] = {"center", "--listen", vm->ep, "--store", store, "--log-level", "error"};
    spm_test_args(argv, 7, 32, extra);
    vm->center = spm_test_start(argv);
    usleep(200000);
}

/*  Starts the center with its store in the scratch directory and the
    flags EXTRA (NULL-terminated, may be NULL), and waits until it is up. */
static inline void spm_test_vm_start(spm_test_vm_t *vm, const char *const *extra)
{
    memset(vm, 0, sizeof *vm);
    snprintf(vm->dir, sizeof vm->dir, "%s", spm_test_tmpdir());
    snprintf(vm->ep, sizeof vm->ep, "ipc://%s/center", vm->dir);
    spm_test_vm_center(vm, extra);
}

/*  Kills the center with SIGKILL (no clean shutdown: what a crash or a
    power cut leaves), reaps it, and starts a new one on the same
    endpoint and store with the flags EXTRA (may be NULL), as
    spm_test_vm_start did. Its agents are left running: they rejoin. */
static inline void spm_test_vm_restart_center(spm_test_vm_t *vm, const char *const *extra)
{
    kill(vm->center.pid, SIGKILL);
    spm_test_finish(&vm->center, 30, NULL, NULL);
    spm_test_vm_center(vm, extra);
}

/*  Adds an agent with IEUS IEUs, its own cache directory and the flags
    EXTRA (may be NULL). Returns its index. */
static inline int spm_test_vm_agent(spm_test_vm_t *vm, const char *ieus, const char *const *extra)
{
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache%d", vm->dir, vm->nagents);
    const char *argv[32] = {"agent",       "--center", vm->ep,        "--ieus", ieus,
                            "--cache-dir", cache,      "--log-level", "error"};
    spm_test_args(argv, 9, 32, extra);
    SPM_TEST_ASSERT(vm->nagents < 8);
    vm->agents[vm->nagents] = spm_test_start(argv);
    return vm->nagents++;
}

/*  Stops the center (which stops its agents) and removes the scratch
    directory. Agents whose pid was set to 0 are not waited for. */
static inline void spm_test_vm_stop(spm_test_vm_t *vm)
{
    kill(vm->center.pid, SIGTERM);
    SPM_TEST_ASSERT(spm_test_finish(&vm->center, 30, NULL, NULL) == 0);
    for (int i = 0; i < vm->nagents; i++)
        if (vm->agents[i].pid > 0)
            spm_test_finish(&vm->agents[i], 60, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", vm->dir);
    SPM_TEST_ASSERT(system(cmd) == 0);
}

/*  Path of the test plugin libNAME.so in $SPM_PLUGINS, which `make tests`
    builds (static buffer, one of four in turn). */
static inline const char *spm_test_plugin(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    const char *dir = getenv("SPM_PLUGINS");
    snprintf(p, 512, "%s/lib%s.so", dir && *dir ? dir : "build/plugins", name);
    if (access(p, R_OK) != 0)
        SPM_TEST_FAIL("%s is missing: build it with make tests", p);
    return p;
}

/*  Counts lines of text. */
static inline size_t spm_test_lines(const char *s)
{
    size_t n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/*  1 while process PID (a child of this test) runs; never reaps it, so
    spm_test_finish still can. */
static inline int spm_test_running(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

/*  Whether PID is a process that has not exited (a zombie has). */
static inline int spm_test_alive(pid_t pid)
{
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *p = strrchr(stat, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/*  1 when PID is an spm process running the command ROLE ("ieu", "agent"):
    each names itself "spm ROLE", whether started afresh or forked. */
static inline int spm_test_is(pid_t pid, const char *role)
{
    char path[64], comm[32] = "", want[32];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    snprintf(want, 16, "spm %s", role); /* the kernel keeps 15 characters */
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(comm, sizeof comm, f))
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    return strcmp(comm, want) == 0;
}

/*  Pids of the children of PID (an agent's are its IEUs), zombies
    included, at most MAX. Returns how many. */
static inline int spm_test_children(pid_t pid, pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    int n = 0, child;
    while (f && n < max && fscanf(f, "%d", &child) == 1)
        out[n++] = child;
    if (f)
        fclose(f);
    return n;
}

/*  In a sanitized build, the processes a test crashes on purpose (and
    their children) die of the signal, as they would without the
    sanitizer, instead of writing a report (which fails any test). */
static inline void spm_test_crash_quietly(void)
{
#ifdef __SANITIZE_ADDRESS__
    char opts[512];
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(opts, sizeof opts, "%s%shandle_segv=0", old ? old : "", old ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
#endif
}

#endif
