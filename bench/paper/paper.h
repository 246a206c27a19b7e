/*  What the experiments of bench/paper share: quick mode and repetitions,
    running one spm job and reading its JSON report (and, when asked, its
    trace), medians over repetitions, generating inputs, and the honest
    emulation of a 3:1 heterogeneous pair of IEUs.

    Heterogeneity: this machine has two cores. During a job the IEU with the
    lowest pid is pinned to CPU 0 together with two busy-looping processes
    (so it gets about a third of that CPU), every other IEU is pinned to
    CPU 1 and has it alone: a 3:1 ratio of available speed, as in
    bench/bench_matmul.c. The center and the agent are not pinned.

    Environment: SPM_BIN (the binary, set by make), SPM_PAPER_QUICK=1 (a
    smoke run: less work, one repetition), SPM_PAPER_REPS (repetitions,
    default 3). Header-only; include after bench/bench.h and
    tests/spm_test.h. */
#ifndef SPM_PAPER_H_INCLUDED
#define SPM_PAPER_H_INCLUDED

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*  SPM_PAPER_QUICK=1: a smoke run. */
static inline int paper_quick(void)
{
    const char *q = getenv("SPM_PAPER_QUICK");
    return q && *q == '1';
}

/*  Repetitions: SPM_PAPER_REPS, else 1 when quick, else DEF. */
static inline int paper_reps(int def)
{
    const char *r = getenv("SPM_PAPER_REPS");
    int n = r && atoi(r) > 0 ? atoi(r) : paper_quick() ? 1 : def;
    return n > 15 ? 15 : n;
}

/*  Scratch directory of this experiment (created once; static buffer). */
static inline const char *paper_dir(void)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/spm-paper-XXXXXX");
        SPM_TEST_ASSERT(mkdtemp(dir) != NULL);
    }
    return dir;
}

/*  paper_dir()/NAME in one of 8 rotating buffers: hold at most 8 at once. */
static inline const char *paper_file(const char *name)
{
    static char buf[8][320];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 320, "%s/%s", paper_dir(), name);
    return p;
}

/*  Runs `spm ARGV...` to the end; exits the experiment when it fails. */
static inline void paper_must(const char *const *argv)
{
    char *err = NULL;
    int rc = spm_test_run(argv, 1200, NULL, &err);
    if (rc != 0) {
        fprintf(stderr, "paper: spm %s %s failed (%d): %s\n", argv[0], argv[1], rc, err);
        exit(1);
    }
    free(err);
}

/*  Writes a dense ROWS x COLS array matrix (seed SEED) to PATH. */
static inline void paper_gen_dense(const char *path, long rows, long cols, int seed)
{
    char r[32], c[32], s[32];
    snprintf(r, sizeof r, "%ld", rows);
    snprintf(c, sizeof c, "%ld", cols);
    snprintf(s, sizeof s, "%d", seed);
    const char *argv[] = {"gen", "matrix",   "--rows", r,    "--cols", c,   "--seed",
                          s,     "--format", "array",  "-o", path,     NULL};
    paper_must(argv);
}

/* ------------------------------------------------------- heterogeneity */

static pid_t paper_hogs[2];

static inline void paper_pin(pid_t pid, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(pid, sizeof set, &set);
}

/*  Reads NAME under /proc/PID into BUF (CAP bytes, NUL-terminated);
    returns the bytes read, or -1 when PID is gone. */
static inline long paper_procfile(pid_t pid, const char *name, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}

/*  Sets *STATE and *PPID from /proc/PID/stat; returns 0, or -1 when PID is
    gone. */
static inline int paper_stat(pid_t pid, char *state, pid_t *ppid)
{
    char buf[512];
    int pp = 0;
    if (paper_procfile(pid, "stat", buf, sizeof buf) < 0)
        return -1;
    const char *close_paren = strrchr(buf, ')');
    if (!close_paren || sscanf(close_paren + 2, "%c %d", state, &pp) != 2)
        return -1;
    *ppid = (pid_t)pp;
    return 0;
}

/*  Reads the parent pid and the second word of the command line of PID;
    returns 0, or -1 when PID is gone. */
static inline int paper_proc(pid_t pid, pid_t *ppid, char *arg1, size_t cap)
{
    char buf[512], state;
    arg1[0] = '\0';
    if (paper_stat(pid, &state, ppid) != 0)
        return -1;
    long n = paper_procfile(pid, "cmdline", buf, sizeof buf);
    if (n < 0)
        return -1;
    size_t first = strlen(buf);
    if ((long)first + 1 < n)
        snprintf(arg1, cap, "%s", buf + first + 1);
    return 0;
}

/*  Whether PID exists and is no zombie. */
static inline int paper_running(pid_t pid)
{
    char state;
    pid_t ppid;
    return paper_stat(pid, &state, &ppid) == 0 && state != 'Z';
}

/*  The IEU processes among the descendants of ROOT, sorted by pid (at most
    MAX). One pass over /proc collects every process's parent; the
    descendants are then closed over that table. */
static inline int paper_ieus(pid_t root, pid_t *out, int max)
{
    enum { CAP = 4096 };
    static pid_t pid[CAP], parent[CAP];
    static char ieu[CAP];
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < CAP) {
        char arg1[32];
        pid_t p = (pid_t)atoi(e->d_name);
        if (p > 0 && paper_proc(p, &parent[n], arg1, sizeof arg1) == 0) {
            pid[n] = p;
            ieu[n++] = strcmp(arg1, "ieu") == 0;
        }
    }
    if (d)
        closedir(d);
    static char inside[CAP];
    memset(inside, 0, sizeof inside);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < n; i++)
            if (!inside[i] && parent[i] == root)
                inside[i] = changed = 1;
            else if (!inside[i])
                for (int j = 0; j < n; j++)
                    if (inside[j] && pid[j] == parent[i]) {
                        inside[i] = changed = 1;
                        break;
                    }
    }
    int k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (inside[i] && ieu[i])
            out[k++] = pid[i];
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && out[j] < out[j - 1]; j--) {
            pid_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return k;
}

/*  Slows the first IEU of job JOB 3:1 (see the header); waits up to 20 s
    for NIEUS IEUs to appear. */
static inline void paper_slow_one(pid_t job, int nieus)
{
    pid_t ieus[16];
    int n = 0;
    for (int tries = 0; tries < 2000 && (n = paper_ieus(job, ieus, 16)) < nieus; tries++) {
        if (!paper_running(job))
            return;
        usleep(5000);
    }
    if (n < 1)
        return;
    for (int i = 0; i < n; i++)
        paper_pin(ieus[i], i == 0 ? 0 : 1);
    fflush(stdout);
    for (int h = 0; h < 2; h++)
        if ((paper_hogs[h] = fork()) == 0) {
            paper_pin(0, 0);
            for (volatile unsigned long x = 0;; x++)
                ;
        }
}

static inline void paper_stop_hogs(void)
{
    for (int h = 0; h < 2; h++)
        if (paper_hogs[h] > 0) {
            kill(paper_hogs[h], SIGKILL);
            waitpid(paper_hogs[h], NULL, 0);
            paper_hogs[h] = 0;
        }
}

/* ---------------------------------------------------------------- runs */

/*  What one job reports; the fields follow the --json report, plus the
    idle share inside the SIs' span measured from the trace. */
typedef enum {
    P_WALL,
    P_COMMITTED,
    P_REISSUED,
    P_W_IDLE,
    P_W_COMM,
    P_W_MAN,
    P_EFF,
    P_BUSY,
    P_CENTER_CPU,
    P_STORE_READS,
    P_BYTES_STORE,
    P_BYTES_L2,
    P_L1_HITS,
    P_EVICTIONS,
    P_MERGES,
    P_IDLE_SHARE,  /* sum of the IEUs' idle_s over their busy+wait+idle */
    P_SPAN_IDLE,   /* from the trace: 1 - SI time / (IEUs x first start..last end) */
    P_PARALLELISM, /* from the trace: SI time / span, the mean SIs running at once */
    P_MIN_SHARE,   /* the smallest share of the SIs one IEU ran (the slowed one's, at 3:1) */
    P_TAIL_IDLE,   /* from the trace: the IEUs' idle time after their own last SI, until
                      the job's last SI ends, over IEUs x span: the end-of-SF wait of eq. 6.1 */
    P_FIELDS
} paper_field_t;

static const char *const paper_keys[P_FIELDS] = {
    "wall_s", "committed",    "reissued",    "w_idle",      "w_comm",   "w_man",   "efficiency",
    "busy_s", "center_cpu_s", "store_reads", "bytes_store", "bytes_l2", "l1_hits", "evictions",
    "merges", NULL,           NULL,          NULL,          NULL};

/*  Sum of every "KEY": number in JSON between FROM and UNTIL (NULL: end). */
static inline double paper_sum(const char *from, const char *until, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    double s = 0;
    for (const char *p = strstr(from, pat); p && (!until || p < until); p = strstr(p + 1, pat))
        s += strtod(p + strlen(pat), NULL);
    return s;
}

/*  Reads the trace at PATH; sets V[P_SPAN_IDLE], V[P_PARALLELISM] and
    V[P_TAIL_IDLE] for NIEUS IEUs (lanes numbered below 64). */
static inline void paper_trace(const char *path, int nieus, double *v)
{
    FILE *f = fopen(path, "r");
    v[P_SPAN_IDLE] = v[P_PARALLELISM] = v[P_TAIL_IDLE] = -1;
    if (!f)
        return;
    char line[1024];
    double first = -1, last = 0, sum = 0, lane_end[64] = {0};
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "\"ph\": \"X\"") || !strstr(line, "\"cat\": \"si\""))
            continue;
        const char *t = strstr(line, "\"ts\": "), *d = strstr(line, "\"dur\": ");
        const char *l = strstr(line, "\"tid\": ");
        if (!t || !d || !l)
            continue;
        double ts = strtod(t + 6, NULL), dur = strtod(d + 7, NULL);
        int lane = atoi(l + 7);
        if (first < 0 || ts < first)
            first = ts;
        if (ts + dur > last)
            last = ts + dur;
        if (lane >= 0 && lane < 64 && ts + dur > lane_end[lane])
            lane_end[lane] = ts + dur;
        sum += dur;
    }
    fclose(f);
    if (first >= 0 && last > first) {
        double tail = 0;
        for (int i = 0; i < nieus && i < 64; i++)
            tail += last - (lane_end[i] > first ? lane_end[i] : first);
        v[P_SPAN_IDLE] = 1 - sum / (nieus * (last - first));
        v[P_PARALLELISM] = sum / (last - first);
        v[P_TAIL_IDLE] = tail / (nieus * (last - first));
    }
}

/*  Jobs that failed, run again or given up (printed by the experiments). */
static int paper_failures;

/*  Runs `spm ARGV... --json --quiet --trace T` on NIEUS IEUs (ARGV must
    hold the matching --ieus), one of them slowed 3:1 when HETERO; fills
    V[P_FIELDS] and returns 0, or -1 when the job failed three times. */
static inline int paper_job(const char *const *argv, int nieus, int hetero, double *v)
{
    const char *args[48];
    int n = 0;
    for (; argv[n] && n < 40; n++)
        args[n] = argv[n];
    static char trace[128]; /* not from paper_file: its buffers rotate under ARGV */
    snprintf(trace, sizeof trace, "%s/trace.json", paper_dir());
    args[n++] = "--json";
    args[n++] = "--quiet";
    args[n++] = "--trace";
    args[n++] = trace;
    args[n] = NULL;
    char *out = NULL, *err = NULL;
    for (int attempt = 0;; attempt++) {
        spm_test_proc_t p = spm_test_start(args);
        if (hetero)
            paper_slow_one(p.pid, nieus);
        int rc = spm_test_finish(&p, 1200, &out, &err);
        paper_stop_hogs();
        if (rc == 0 && out && strstr(out, "\"status\": \"done\""))
            break;
        /* The machine is shared: a failed job is run again, at most twice. */
        fprintf(stderr, "paper: spm %s failed (%d): %s%s\n", argv[0], rc, err, out);
        paper_failures++;
        free(out);
        free(err);
        if (attempt == 2)
            return -1;
    }
    for (int k = 0; k < P_FIELDS; k++)
        v[k] = paper_keys[k] ? spm_test_json_num(out, paper_keys[k]) : -1;
    const char *ieus = strstr(out, "\"ieus\": ");
    const char *ops = ieus ? strstr(ieus, "\"opcodes\": ") : NULL;
    if (ieus) {
        double idle = paper_sum(ieus, ops, "idle_s");
        double all = idle + paper_sum(ieus, ops, "busy_s") + paper_sum(ieus, ops, "wait_s");
        v[P_IDLE_SHARE] = all > 0 ? idle / all : -1;
        double all_sis = paper_sum(ieus, ops, "sis"), least = all_sis;
        for (const char *p = strstr(ieus, "\"sis\": "); p && (!ops || p < ops);
             p = strstr(p + 1, "\"sis\": "))
            if (strtod(p + 7, NULL) < least)
                least = strtod(p + 7, NULL);
        v[P_MIN_SHARE] = all_sis > 0 ? least / all_sis : -1;
    }
    paper_trace(trace, nieus, v);
    unlink(trace);
    free(out);
    free(err);
    return 0;
}

/*  Medians over the jobs of REPS runs of paper_job that succeeded into
    M[P_FIELDS]; returns how many succeeded (when none, M is all -1). */
static inline int paper_median(const char *const *argv, int nieus, int hetero, int reps, double *m)
{
    double runs[P_FIELDS][16];
    int ok = 0;
    for (int r = 0; r < reps; r++) {
        double v[P_FIELDS];
        if (paper_job(argv, nieus, hetero, v) != 0)
            continue;
        for (int k = 0; k < P_FIELDS; k++)
            runs[k][ok] = v[k];
        ok++;
    }
    for (int k = 0; k < P_FIELDS; k++)
        m[k] = ok ? bench_median(runs[k], ok) : -1;
    return ok;
}

/*  Equation 6.4: the share of IEU time lost to imbalance with NP IEUs and
    NI SIs per super-function, C the constant of the performance profile. */
static inline double paper_eq64(double np, double ni, double c)
{
    return (np - 1) / (ni / c + np - 1);
}

/*  Removes the scratch directory and what is left in it. */
static inline void paper_cleanup(void)
{
    DIR *d = opendir(paper_dir());
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            unlink(paper_file(e->d_name));
    if (d)
        closedir(d);
    rmdir(paper_dir());
}

#endif
