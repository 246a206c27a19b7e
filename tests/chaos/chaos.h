/*  =========================================================================
    chaos - faults injected into a running VM while a job runs

    A chaos VM is a real center and one agent started through the spm
    binary on an ipc endpoint in a scratch directory. While a job runs on
    it (`spm matmul`, `spm mine`, ... with --center), chaos_job kills a
    random IEU with SIGKILL every MIN_MS to MAX_MS, and fault AGENT_FIRST and
    every AGENT_EVERY-th after it kill the agent instead (and with NODE_TOO its IEUs too, as a
    crashed node), then starts a new agent. Faults are injected only while
    the center reports the job running, so every one counted hit a job in
    progress. The caller then compares the job's output file with an
    undisturbed run's (chaos_same_file).

    The center itself can crash too: chaos_kill_center kills it with
    SIGKILL and chaos_center_start starts it again on the same store, where
    it resumes the jobs from their journal (tests/integration/test_restart.c);
    with CENTER_EVERY, every CENTER_EVERY-th fault of chaos_job that does
    not kill the agent does that.

    Two more kinds of fault (issue 39): every STOP_EVERY-th fault stops a
    process with SIGSTOP and continues it with SIGCONT (chaos_stop): the
    agent, the center and an IEU in turn, the first three for longer than
    the center's --dead-ms (taken for dead, then back) and the next three
    for less, at random lengths within those bounds. Every
    CORRUPT_EVERY-th fault overwrites random bytes of the agent's cache
    file (chaos_corrupt_cache): the node must find it, leave service, empty
    its cache and join again. The chaos VM keeps one agent and the
    center's default of two replicas, so every committed block is also in
    the center's store (a node short of other nodes sends it there): a
    corrupt cache never holds a block's last copy, and a job must not lose
    a byte to it. At most CHAOS_CORRUPT_MAX corruptions per agent: a cache
    that breaks a fourth time within 10 minutes is a disk that is going,
    and its agent exits by design. An agent that exits on its own is
    counted (agent_exits), its stderr quoted, and a new one started.

    Every choice comes from the plan's seed, printed by the callers, so a
    failing run can be repeated. Every loop is bounded in count and time.

    Header-only: tests/integration/test_chaos.c (the short form, part of
    `make check`) and tests/chaos/chaos.c (the long form, `make chaos`)
    include it.
    =========================================================================
*/
#ifndef SPM_CHAOS_H_INCLUDED
#define SPM_CHAOS_H_INCLUDED

#include "datacache/nodecache.h"
#include "tests/spm_test.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/time.h>

typedef struct {
    char dir[64];           /* scratch directory: endpoint, store, caches */
    char ep[160];           /* the center's ipc endpoint */
    spm_test_proc_t center; /* the center process */
    spm_test_proc_t agent;  /* the current agent (pid 0: none) */
    int ieus;               /* IEUs each agent starts */
    int agents;             /* agents started so far; names their cache dirs */
    int dead_ms;            /* the center's --dead-ms */
    const char *center_log; /* the center's --log-level (NULL: error) */
    int center_kills;       /* centers killed (and started again) by chaos_job */
    char cache[128];        /* the current agent's cache directory */
    int cache_reads;        /* agents read blocks through their caches (--no-store-reads) */
    int cache_faults;       /* corruptions of the current agent's cache */
    int renewals;           /* times a replaced agent's cache went out of service */
    int cache_exits;        /* agents that ended for their corrupted cache: a write faulted
                               in LMDB (exit SPM_NODECACHE_EXIT; docs/RELIABILITY.md) */
} chaos_vm_t;

#define CHAOS_CORRUPT_MAX 3     /* corruptions per agent: a fourth makes it exit by design */
#define CHAOS_CORRUPT_BYTES 300 /* bytes overwritten per corruption */

typedef struct {
    uint64_t rng;      /* xorshift64 state, seeded by the caller (never 0) */
    int min_ms;        /* shortest pause between two faults */
    int max_ms;        /* longest pause between two faults */
    int agent_first;   /* the first fault that kills the agent (1: the first; 0: none) */
    int agent_every;   /* and every AGENT_EVERY-th fault after it */
    int agent_max;     /* at most this many agent kills per job */
    int node_too;      /* an agent kill also kills the agent's IEUs */
    int timeout_s;     /* the job fails the run if it takes longer */
    int max_faults;    /* at most this many faults per job (0: no limit) */
    int fit;           /* shorten the pauses to fit the job (see chaos_compare) */
    int center_every;  /* every CENTER_EVERY-th fault kills the center, unless it kills the agent */
    int stop_every;    /* every STOP_EVERY-th fault stops a process a while (0: none) */
    int corrupt_every; /* every CORRUPT_EVERY-th fault corrupts the cache (0: none) */
} chaos_plan_t;

typedef struct {
    int ieu_kills;   /* IEUs killed while the job ran */
    int agent_kills; /* agents killed (and replaced) while the job ran */
    double reissued; /* SIs re-issued, from the job's JSON report */
    int stops;       /* processes stopped (SIGSTOP) and continued */
    int corruptions; /* cache files overwritten with random bytes */
    int agent_exits; /* agents that exited on their own (and were replaced) */
} chaos_tally_t;

/*  Monotonic time in milliseconds. */
static inline long long chaos_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*  The next pseudo-random number of PLAN (xorshift64). */
static inline uint64_t chaos_rand(chaos_plan_t *plan)
{
    uint64_t x = plan->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return plan->rng = x;
}

/*  A seed from the clock and the pid, never 0. */
static inline uint64_t chaos_seed(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    uint64_t s = ((uint64_t)tv.tv_sec * 1000003u) ^ ((uint64_t)tv.tv_usec << 20);
    return (s ^ (uint64_t)getpid()) | 1;
}

/*  Starts an agent of VM->ieus IEUs with a cache directory of its own. */
static inline void chaos_agent_start(chaos_vm_t *vm)
{
    char ieus[16];
    snprintf(vm->cache, sizeof vm->cache, "%s/cache%d", vm->dir, vm->agents++);
    vm->cache_faults = 0;
    snprintf(ieus, sizeof ieus, "%d", vm->ieus);
    const char *argv[] = {"agent",   "--center",
                          vm->ep,    "--ieus",
                          ieus,      "--cache-dir",
                          vm->cache, "--log-level",
                          "error",   vm->cache_reads ? "--no-store-reads" : NULL,
                          NULL};
    vm->agent = spm_test_start(argv);
}

/*  How many times VM's current agent said its cache went out of service
    (its stderr). */
static inline int chaos_cache_renewals(const chaos_vm_t *vm)
{
    int fd = vm->agent.pid > 0 ? open(vm->agent.err_path, O_RDONLY) : -1;
    char *log = fd >= 0 ? spm_test_slurp(fd) : NULL;
    if (fd >= 0)
        close(fd);
    int n = 0;
    for (const char *p = log; p && (p = strstr(p, "its cache is out of service")); p++)
        n++;
    free(log);
    return n;
}

/*  Starts VM's center on the store in VM's directory (heartbeats every
    200 ms, dead after VM->dead_ms of silence, --log-level VM->center_log,
    default error): the first one, or again on the same store after
    chaos_kill_center. Does not wait for it to answer. */
static inline void chaos_center_start(chaos_vm_t *vm)
{
    char store[128], dead[16];
    snprintf(store, sizeof store, "%s/store", vm->dir);
    snprintf(dead, sizeof dead, "%d", vm->dead_ms);
    const char *level = vm->center_log ? vm->center_log : "error";
    const char *argv[] = {"center", "--listen",  vm->ep, "--store",     store, "--heartbeat-ms",
                          "200",    "--dead-ms", dead,   "--log-level", level, NULL};
    vm->center = spm_test_start(argv);
}

/*  Starts a center (heartbeats every 200 ms, dead after DEAD_MS of silence)
    and an agent of IEUS IEUs in a new scratch directory; with CACHE_READS
    its IEUs read blocks through the node cache (--no-store-reads), as
    on a host of its own, rather than straight from the center's store:
    only then does the cache hold what a job reads, and its corruption
    (chaos_corrupt_cache) matter. */
static inline void chaos_vm_start_with(chaos_vm_t *vm, int ieus, int dead_ms, int cache_reads)
{
    memset(vm, 0, sizeof *vm);
    vm->cache_reads = cache_reads;
    snprintf(vm->dir, sizeof vm->dir, "%s", spm_test_tmpdir());
    snprintf(vm->ep, sizeof vm->ep, "ipc://%s/center", vm->dir);
    vm->ieus = ieus;
    vm->dead_ms = dead_ms;
    chaos_center_start(vm);
    usleep(200000);
    chaos_agent_start(vm);
}

/*  chaos_vm_start_with, IEUs reading the center's store straight. */
static inline void chaos_vm_start(chaos_vm_t *vm, int ieus, int dead_ms)
{
    chaos_vm_start_with(vm, ieus, dead_ms, 0);
}

/*  Kills VM's center with SIGKILL, as a crash, and reaps it; VM has no
    center until chaos_center_start. */
static inline void chaos_kill_center(chaos_vm_t *vm)
{
    kill(vm->center.pid, SIGKILL);
    spm_test_finish(&vm->center, 10, NULL, NULL);
    vm->center.pid = 0;
}

/*  Stops VM's center with SIGTERM and waits up to 15 s for it. Returns its
    exit status; *ERR (ERR may be NULL) gets its stderr (malloc'd). VM has
    no center then; chaos_vm_stop stops the rest. */
static inline int chaos_center_stop(chaos_vm_t *vm, char **err)
{
    kill(vm->center.pid, SIGTERM);
    int rc = spm_test_finish(&vm->center, 15, NULL, err);
    vm->center.pid = 0;
    return rc;
}

/*  Reads /proc/PID/cmdline into CMD (NULs between arguments kept); returns
    its length, or -1. */
static inline ssize_t chaos_cmdline(pid_t pid, char *cmd, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t len = read(fd, cmd, size - 1);
    close(fd);
    if (len >= 0)
        cmd[len] = '\0';
    return len;
}

/*  Pids of the live `spm ieu` children of the agent AGENT, at most MAX.
    Returns how many. */
static inline int chaos_ieu_pids(pid_t agent, pid_t *pids, int max)
{
    pid_t kids[64];
    int n = 0, nkids = spm_test_children(agent, kids, 64);
    for (int i = 0; i < nkids && n < max; i++)
        if (spm_test_is(kids[i], "ieu") && spm_test_alive(kids[i]))
            pids[n++] = kids[i];
    return n;
}

/*  Pids of live processes whose command line mentions NEEDLE, at most MAX.
    Returns how many. */
static inline int chaos_procs_of(const char *needle, pid_t *pids, int max)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (d && n < max && (e = readdir(d))) {
        pid_t pid = (pid_t)atoi(e->d_name);
        char cmd[4096];
        ssize_t len = pid > 0 ? chaos_cmdline(pid, cmd, sizeof cmd) : -1;
        for (ssize_t i = 0; i < len; i++)
            cmd[i] = cmd[i] ? cmd[i] : ' ';
        if (len > 0 && strstr(cmd, needle) && spm_test_alive(pid))
            pids[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

/*  Stops VM: the center (SIGTERM; agents and IEUs follow it), then waits up
    to 20 s for every process of the VM, kills what is left and removes the
    scratch directory. Returns how many processes had to be killed. */
static inline int chaos_vm_stop(chaos_vm_t *vm)
{
    if (vm->center.pid > 0) { /* none after chaos_kill_center or chaos_center_stop */
        kill(vm->center.pid, SIGTERM);
        spm_test_finish(&vm->center, 15, NULL, NULL);
    }
    if (vm->agent.pid > 0) {
        vm->renewals += chaos_cache_renewals(vm);
        kill(vm->agent.pid, SIGTERM); /* a center that died sends no SHUTDOWN */
        spm_test_finish(&vm->agent, 20, NULL, NULL);
    }
    pid_t left[64];
    int n = 0;
    for (int tries = 0; tries < 200 && (n = chaos_procs_of(vm->dir, left, 64)) > 0; tries++)
        usleep(100000);
    for (int i = 0; i < n; i++)
        kill(left[i], SIGKILL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", vm->dir);
    SPM_TEST_ASSERT(system(cmd) == 0);
    return n;
}

/*  The center of VM's `spm status --json` (malloc'd), or NULL when it did
    not answer within 5 s. */
static inline char *chaos_status(const chaos_vm_t *vm)
{
    const char *argv[] = {"status", "--center", vm->ep, "--json", "--timeout", "5000", NULL};
    char *out = NULL;
    if (spm_test_run(argv, 30, &out, NULL) == 0)
        return out;
    free(out);
    return NULL;
}

/*  Copies into BUF (SIZE bytes) the entry of the first job of program
    PROGRAM in STATUS (chaos_status; may be NULL): a flat JSON object,
    read with spm_test_json_num. Returns BUF, or NULL when no such job is
    listed. */
static inline const char *chaos_status_job(const char *status, const char *program, char *buf,
                                           size_t size)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"program\": \"%s\"", program);
    const char *jobs = status ? strstr(status, "\"jobs\": [") : NULL;
    const char *p = jobs ? strstr(jobs, pat) : NULL;
    const char *end = p ? strchr(p, '}') : NULL;
    while (p && p > jobs && *p != '{')
        p--;
    if (!end || *p != '{')
        return NULL;
    snprintf(buf, size, "%.*s", (int)(end + 1 - p), p);
    return buf;
}

/*  Whether the center of VM reports a job running (`spm status --json`). */
static inline int chaos_job_running(const chaos_vm_t *vm)
{
    const char *argv[] = {"status", "--center", vm->ep, "--json", "--timeout", "5000", NULL};
    char *out = NULL;
    int rc = spm_test_run(argv, 30, &out, NULL);
    int running = rc == 0 && out && strstr(out, "\"state\": \"running\"") != NULL;
    free(out);
    return running;
}

/*  Kills a random live IEU of VM's agent with SIGKILL. Returns 1 when one
    was killed, 0 when none was alive (all being restarted). */
static inline int chaos_kill_ieu(chaos_vm_t *vm, chaos_plan_t *plan)
{
    pid_t pids[64];
    int n = vm->agent.pid > 0 ? chaos_ieu_pids(vm->agent.pid, pids, 64) : 0;
    if (n == 0)
        return 0;
    return kill(pids[chaos_rand(plan) % (uint64_t)n], SIGKILL) == 0;
}

/*  Kills VM's agent with SIGKILL (with PLAN->node_too its IEUs as well;
    else they are left to notice) and starts a new one. */
static inline void chaos_kill_agent(chaos_vm_t *vm, const chaos_plan_t *plan)
{
    pid_t pids[64];
    int n = chaos_ieu_pids(vm->agent.pid, pids, 64);
    kill(vm->agent.pid, SIGKILL);
    for (int i = 0; plan->node_too && i < n; i++)
        kill(pids[i], SIGKILL);
    vm->renewals += chaos_cache_renewals(vm);
    spm_test_finish(&vm->agent, 10, NULL, NULL);
    chaos_agent_start(vm);
}

/*  Stops a process of VM with SIGSTOP for a while, then continues it with
    SIGCONT; NTH (from 0) picks it: the agent, the center, an IEU (the
    agent when no IEU is alive) in turn, for 1.25 to 2 times VM->dead_ms
    in the first three (the center takes an IEU or agent for dead; an
    agent waits for a center silent for twice --dead-ms), 0.1 to 0.75
    times in the next three, and so on. Blocks meanwhile. Returns the
    length of the stop in ms. */
static inline int chaos_stop(chaos_vm_t *vm, chaos_plan_t *plan, int nth)
{
    int lo = nth / 3 % 2 ? vm->dead_ms / 10 : vm->dead_ms * 5 / 4;
    int hi = nth / 3 % 2 ? vm->dead_ms * 3 / 4 : vm->dead_ms * 2;
    int ms = lo + (int)(chaos_rand(plan) % (uint64_t)(hi - lo + 1));
    pid_t pid = nth % 3 == 1 ? vm->center.pid : vm->agent.pid, ieus[64];
    int n = nth % 3 == 2 && vm->agent.pid > 0 ? chaos_ieu_pids(vm->agent.pid, ieus, 64) : 0;
    if (n > 0)
        pid = ieus[chaos_rand(plan) % (uint64_t)n];
    if (pid <= 0)
        return 0;
    kill(pid, SIGSTOP);
    usleep((useconds_t)ms * 1000);
    kill(pid, SIGCONT);
    return ms;
}

/*  Overwrites CHAOS_CORRUPT_BYTES random bytes of the current agent's
    cache file (CACHE-DIR/data.mdb), each with another value, past its two
    meta pages (a torn meta page is LMDB's to survive at open, not the
    checks' to find). Returns 1 when it did, 0 when there was no file to
    corrupt or the agent had CHAOS_CORRUPT_MAX already. */
static inline int chaos_corrupt_cache(chaos_vm_t *vm, chaos_plan_t *plan)
{
    char path[192];
    snprintf(path, sizeof path, "%s/data.mdb", vm->cache);
    int fd = vm->cache_faults < CHAOS_CORRUPT_MAX ? open(path, O_RDWR) : -1;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 3 * 4096) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    uint64_t span = (uint64_t)st.st_size - 2 * 4096;
    for (int i = 0; i < CHAOS_CORRUPT_BYTES; i++) {
        off_t at = (off_t)(2 * 4096 + chaos_rand(plan) % span);
        unsigned char b;
        if (pread(fd, &b, 1, at) != 1)
            continue;
        b ^= (unsigned char)(1 + chaos_rand(plan) % 255);
        if (pwrite(fd, &b, 1, at) != 1)
            break;
    }
    close(fd);
    vm->cache_faults++;
    return 1;
}

/*  When VM's agent exited on its own, quotes its stderr on ours, starts a
    new one and returns 1; else 0. */
static inline int chaos_agent_lost(chaos_vm_t *vm)
{
    if (vm->agent.pid <= 0 || spm_test_running(vm->agent.pid))
        return 0;
    char *err = NULL;
    vm->renewals += chaos_cache_renewals(vm);
    int rc = spm_test_finish(&vm->agent, 10, NULL, &err);
    vm->cache_exits += rc == SPM_NODECACHE_EXIT && vm->cache_faults > 0;
    fprintf(stderr, "chaos: the agent exited on its own (status %d): %s\n", rc,
            err && *err ? err : "(nothing on its stderr)");
    free(err);
    chaos_agent_start(vm);
    return 1;
}

/*  Whether STATUS (chaos_status) lists a node up with IEUS live IEUs. */
static inline int chaos_node_serves(const char *status, int ieus)
{
    const char *p = status ? strstr(status, "\"nodes\": [") : NULL;
    while (p && (p = strstr(p, "{\"node\": "))) {
        const char *end = strchr(p, '}');
        if (!end)
            break;
        char node[1024];
        snprintf(node, sizeof node, "%.*s", (int)(end + 1 - p), p);
        if (strstr(node, "\"up\": true") &&
            spm_test_json_num(node, "ieus_busy") + spm_test_json_num(node, "ieus_idle") == ieus)
            return 1;
        p = end;
    }
    return 0;
}

/*  Waits up to TIMEOUT_MS for VM's center to list a node up with all
    VM->ieus IEUs live. Returns 1 when it did; else 0, with its last
    status in *LAST (malloc'd; LAST may be NULL). */
static inline int chaos_await_service(const chaos_vm_t *vm, int timeout_ms, char **last)
{
    long long end = chaos_now_ms() + timeout_ms;
    char *s = NULL;
    int up = 0;
    while (!up && chaos_now_ms() < end) {
        free(s);
        s = chaos_status(vm);
        up = chaos_node_serves(s, vm->ieus);
        if (!up)
            usleep(200000);
    }
    if (last)
        *last = s;
    else
        free(s);
    return up;
}

/*  Runs the job `spm ARGV...` (which must name VM's center and print its
    JSON report on stdout) and injects PLAN's faults while it runs; adds
    them and the re-issued SIs to TALLY. Returns the job's exit status; *OUT
    and *ERR get its stdout and stderr (malloc'd). */
static inline int chaos_job(chaos_vm_t *vm, const char *const *argv, chaos_plan_t *plan,
                            chaos_tally_t *tally, char **out, char **err)
{
    spm_test_proc_t job = spm_test_start(argv);
    long long end = chaos_now_ms() + (long long)plan->timeout_s * 1000;
    /* The client reads and stages its input before it submits the job. */
    while (spm_test_running(job.pid) && chaos_now_ms() < end && !chaos_job_running(vm))
        usleep(100000);
    int faults = 0, agent_kills = 0;
    long long next = chaos_now_ms() + plan->min_ms / 2;
    while (spm_test_running(job.pid) && chaos_now_ms() < end &&
           (plan->max_faults == 0 || faults < plan->max_faults)) {
        if (chaos_now_ms() < next) {
            usleep(20000);
            continue;
        }
        if (!chaos_job_running(vm))
            break; /* done: the client is fetching the result */
        tally->agent_exits += chaos_agent_lost(vm);
        int nth = faults + 1 - plan->agent_first;
        if (plan->agent_first && nth >= 0 && plan->agent_every && nth % plan->agent_every == 0 &&
            agent_kills < plan->agent_max) {
            chaos_kill_agent(vm, plan);
            agent_kills++;
            tally->agent_kills++;
        } else if (plan->corrupt_every && (faults + 1) % plan->corrupt_every == 0 &&
                   chaos_corrupt_cache(vm, plan)) {
            tally->corruptions++;
        } else if (plan->stop_every && (faults + 1) % plan->stop_every == 0) {
            chaos_stop(vm, plan, tally->stops++);
        } else if (plan->center_every && (faults + 1) % plan->center_every == 0) {
            chaos_kill_center(vm); /* the new one resumes the job from its journal */
            chaos_center_start(vm);
            vm->center_kills++;
        } else if (chaos_kill_ieu(vm, plan)) {
            tally->ieu_kills++;
        } else {
            next = chaos_now_ms() + 100; /* every IEU is being restarted */
            continue;
        }
        faults++;
        int span = plan->max_ms - plan->min_ms;
        next = chaos_now_ms() + plan->min_ms +
               (span > 0 ? (int)(chaos_rand(plan) % (uint64_t)span) : 0);
    }
    int rc = spm_test_finish(&job, (int)((end - chaos_now_ms()) / 1000) + 5, out, err);
    tally->agent_exits += chaos_agent_lost(vm);
    double r = spm_test_json_num(*out, "reissued");
    tally->reissued += r > 0 ? r : 0;
    return rc;
}

/*  Whether files A and B exist and have the same bytes. */
static inline int chaos_same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        char ba[65536], bb[65536];
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        same = na == nb && memcmp(ba, bb, na) == 0;
        if (na == 0)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/*  The path ARG names in a job's arguments: "@NAME" is the output file
    DIR/NAME.SUFFIX, anything else itself. Returns BUF or ARG. */
static inline const char *chaos_arg(const char *arg, const char *dir, const char *suffix, char *buf,
                                    size_t size)
{
    if (arg[0] != '@')
        return arg;
    snprintf(buf, size, "%s/%s.%s", dir, arg + 1, suffix);
    return buf;
}

#define CHAOS_MAX_ARGS 24

/*  Shortens PLAN's pauses to the job that took TOOK_MS undisturbed: at
    most a fifth of it (at least a tenth), so that the first three faults
    come in the first half of the job however fast the machine is. A slow
    machine keeps the plan's own pauses. */
static inline void chaos_plan_fit(chaos_plan_t *plan, long long took_ms)
{
    int most = (int)(took_ms / 5), least = (int)(took_ms / 10);
    if (plan->max_ms > most)
        plan->max_ms = most > 100 ? most : 100;
    if (plan->min_ms > least)
        plan->min_ms = least > 50 ? least : 50;
    if (plan->min_ms > plan->max_ms)
        plan->min_ms = plan->max_ms;
}

/*  Runs the job `spm ARGS...` twice: undisturbed on an embedded VM of two
    IEUs, then on VM under PLAN's faults. Arguments "@NAME" are output files
    (DIR/NAME.want and DIR/NAME.got); every one must come out byte-identical.
    With PLAN->fit the pauses are first fitted to the undisturbed run's
    time (chaos_plan_fit). Adds faults and re-issued SIs to TALLY. Returns
    1 when the disturbed job succeeded with identical outputs; else, after
    one line on stderr that names the job and the seed SEED, 0 when an
    output differs and -1 when the job failed. */
static inline int chaos_compare(chaos_vm_t *vm, chaos_plan_t *plan, chaos_tally_t *tally,
                                const char *const *args, const char *dir, uint64_t seed)
{
    const char *want[CHAOS_MAX_ARGS], *got[CHAOS_MAX_ARGS];
    char wbuf[CHAOS_MAX_ARGS][256], gbuf[CHAOS_MAX_ARGS][256];
    int n = 0;
    for (; args[n]; n++) {
        SPM_TEST_ASSERT(n + 6 < CHAOS_MAX_ARGS);
        want[n] = chaos_arg(args[n], dir, "want", wbuf[n], sizeof wbuf[n]);
        got[n] = chaos_arg(args[n], dir, "got", gbuf[n], sizeof gbuf[n]);
    }
    const char *reference_tail[] = {"--ieus", "2", "--quiet", NULL};
    const char *chaos_tail[] = {"--center", vm->ep, "--json", NULL};
    memcpy(want + n, reference_tail, sizeof reference_tail);
    memcpy(got + n, chaos_tail, sizeof chaos_tail);
    char *out = NULL, *err = NULL;
    long long start = chaos_now_ms();
    int rc = spm_test_run(want, plan->timeout_s, &out, &err);
    if (rc != 0)
        SPM_TEST_FAIL("undisturbed %s failed (exit %d): %s", args[0], rc, err);
    free(out);
    free(err);
    if (plan->fit)
        chaos_plan_fit(plan, chaos_now_ms() - start);
    rc = chaos_job(vm, got, plan, tally, &out, &err);
    int ok = rc == 0 ? 1 : -1;
    if (rc != 0)
        fprintf(stderr, "chaos: %s under faults failed (exit %d, seed %llu): %s", args[0], rc,
                (unsigned long long)seed, err);
    for (int i = 0; ok == 1 && i < n; i++)
        if (args[i][0] == '@' && !(ok = chaos_same_file(want[i], got[i])))
            fprintf(stderr, "chaos: %s: %s differs from the undisturbed %s (seed %llu)\n", args[0],
                    got[i], want[i], (unsigned long long)seed);
    free(out);
    free(err);
    return ok;
}

/*  A job the chaos runs repeat: `spm ARGS...`, whose "@NAME" arguments
    are its output files (see chaos_compare). */
typedef struct {
    const char *args[CHAOS_MAX_ARGS]; /* NULL-terminated */
    char in[2][128];                  /* its generated input files */
    char num[4][24];                  /* numbers the arguments point at */
} chaos_job_t;

/*  Writes the input file PATH with `spm gen ARGS... -o PATH`. */
static inline void chaos_gen(const char *path, const char *const *args)
{
    const char *argv[CHAOS_MAX_ARGS];
    int n = 0;
    argv[n++] = "gen";
    for (; *args && n < CHAOS_MAX_ARGS - 3; args++)
        argv[n++] = *args;
    argv[n++] = "-o";
    argv[n++] = path;
    argv[n] = NULL;
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    if (rc != 0)
        SPM_TEST_FAIL("spm gen %s: %s", path, err);
    free(out);
    free(err);
}

/*  JOB: `spm matmul` of two N x N matrices generated into DIR from SEED and
    SEED + 1, in blocks of 16 with one product per SI (thousands of SIs of
    well under a millisecond, so every kill finds SIs held), with UPDATE
    and POLICY. Integer entries: C is exact whatever order products are
    added in, so only a lost, doubled or damaged product changes a byte. */
static inline void chaos_matmul(chaos_job_t *job, const char *dir, int n, int seed,
                                const char *update, const char *policy)
{
    memset(job, 0, sizeof *job);
    snprintf(job->num[0], sizeof job->num[0], "%d", n);
    for (int i = 0; i < 2; i++) {
        snprintf(job->num[1 + i], sizeof job->num[1 + i], "%d", seed + i);
        snprintf(job->in[i], sizeof job->in[i], "%s/%c.mtx", dir, "AB"[i]);
        const char *gen[] = {"matrix",  "--rows", job->num[0],     "--field",
                             "integer", "--seed", job->num[1 + i], NULL};
        chaos_gen(job->in[i], gen);
    }
    const char *args[] = {"matmul",   job->in[0], job->in[1], "--block", "16", "--per-si", "1",
                          "--update", update,     "--policy", policy,    "-o", "@C.mtx",   NULL};
    memcpy(job->args, args, sizeof args);
}

/*  JOB: `spm mine` over COUNT transactions generated into DIR from SEED
    (average 20 items of 500, potentially large itemsets of PATTERN items
    on average), in blocks of BLOCK transactions, minimum support SUPPORT,
    confidence 95%; itemsets and rules both compared. The inputs must keep
    every SI short beside the pause between faults: an SI whose holders
    die four times fails its job (see docs/RELIABILITY.md). */
static inline void chaos_mine(chaos_job_t *job, const char *dir, int count, int pattern,
                              const char *support, int seed, int block)
{
    memset(job, 0, sizeof *job);
    snprintf(job->num[0], sizeof job->num[0], "%d", count);
    snprintf(job->num[1], sizeof job->num[1], "%d", seed);
    snprintf(job->num[2], sizeof job->num[2], "%d", block);
    snprintf(job->num[3], sizeof job->num[3], "%d", pattern);
    snprintf(job->in[0], sizeof job->in[0], "%s/T.dat", dir);
    const char *gen[] = {"transactions",
                         "--transactions",
                         job->num[0],
                         "--avg-size",
                         "20",
                         "--avg-pattern",
                         "8",
                         "--items",
                         "500",
                         "--patterns",
                         "2000",
                         "--seed",
                         job->num[1],
                         NULL};
    chaos_gen(job->in[0], gen);
    const char *args[] = {
        "mine",      job->in[0],   "--min-support", support, "--min-confidence", "95%", "--block",
        job->num[2], "--itemsets", "@sets.txt",     "-o",    "@rules.txt",       NULL};
    memcpy(job->args, args, sizeof args);
}

#endif
