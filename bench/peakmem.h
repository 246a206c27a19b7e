/*  The peak memory of a process tree: a thread samples, every 20 ms, the
    proportional set size (Pss in /proc/PID/smaps_rollup; VmRSS where that
    is missing) of a process and all its descendants, summed, and keeps the
    largest sum. Pss shares a page mapped by several processes (the embedded
    VM's store, mapped by the center and every IEU) among them, so the sum
    counts it once. Peaks shorter than the period can be missed.
    Header-only, for benchmarks on Linux.

        peakmem_t m;
        peakmem_start(&m, pid);
        ... wait for pid ...
        double mib = peakmem_stop(&m);
*/
#ifndef SPM_BENCH_PEAKMEM_H_INCLUDED
#define SPM_BENCH_PEAKMEM_H_INCLUDED

#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef struct {
    pid_t root;
    atomic_int stop;
    double peak_kib;
    pthread_t thread;
} peakmem_t;

/*  The parent of PID from /proc/PID/stat, or -1. */
static inline pid_t peakmem_ppid(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command may hold blanks and parentheses */
    int ppid;
    return p && sscanf(p + 1, " %*c %d", &ppid) == 1 ? (pid_t)ppid : -1;
}

/*  PID's Pss (or VmRSS) in KiB, 0 when it is gone. */
static inline double peakmem_kib(pid_t pid)
{
    char path[64], line[256];
    const char *want[] = {"Pss:", "VmRSS:"};
    const char *file[] = {"smaps_rollup", "status"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        double kib = -1;
        while (kib < 0 && fgets(line, sizeof line, f))
            if (strncmp(line, want[i], strlen(want[i])) == 0)
                kib = atof(line + strlen(want[i]));
        fclose(f);
        if (kib >= 0)
            return kib;
    }
    return 0;
}

/*  The summed size of ROOT and its descendants now, in KiB. */
static inline double peakmem_sample(pid_t root)
{
    enum { MAX = 4096 };
    static pid_t pid[MAX], ppid[MAX];
    static char in[MAX];
    size_t n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && n < MAX) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid[n] = (pid_t)atoi(e->d_name);
        ppid[n] = peakmem_ppid(pid[n]);
        in[n] = pid[n] == root;
        n++;
    }
    if (d)
        closedir(d);
    for (int grew = 1; grew;) { /* mark descendants until nothing changes */
        grew = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; !in[i] && j < n; j++)
                if (in[j] && ppid[i] == pid[j])
                    in[i] = 1, grew = 1;
    }
    double kib = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i])
            kib += peakmem_kib(pid[i]);
    return kib;
}

static inline void *peakmem_loop(void *arg)
{
    peakmem_t *m = arg;
    while (!atomic_load(&m->stop)) {
        double kib = peakmem_sample(m->root);
        if (kib > m->peak_kib)
            m->peak_kib = kib;
        usleep(20000);
    }
    return NULL;
}

/*  Starts sampling ROOT's tree. */
static inline void peakmem_start(peakmem_t *m, pid_t root)
{
    memset(m, 0, sizeof *m);
    m->root = root;
    atomic_init(&m->stop, 0);
    if (pthread_create(&m->thread, NULL, peakmem_loop, m) != 0) {
        fprintf(stderr, "bench: cannot start the memory sampler\n");
        exit(1);
    }
}

/*  Stops sampling; returns the peak in MiB. */
static inline double peakmem_stop(peakmem_t *m)
{
    atomic_store(&m->stop, 1);
    pthread_join(m->thread, NULL);
    return m->peak_kib / 1024;
}

#endif
