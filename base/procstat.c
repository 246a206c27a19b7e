/*  =========================================================================
    procstat - the CPU time and resident memory of a process, from /proc

    Why /proc/PID/stat and statm rather than getrusage: getrusage tells a
    process of itself and of its waited-for children, while an agent asks
    of its IEUs as they run. stat's fields 14 and 15 (utime, stime) are in
    clock ticks (sysconf(_SC_CLK_TCK)); statm's second field is resident
    pages. The command name in stat is in parentheses and may itself hold
    spaces and parentheses, so the fields are counted from the last ')'.
    =========================================================================
*/
#include "base/procstat.h"
#include "spm/spm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*  Reads /proc/PID/NAME (PID 0: self) into BUF. Returns the bytes read,
    or -1 with errno set. */
static ssize_t read_proc(pid_t pid, const char *name, char *buf, size_t size)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, name);
    else
        snprintf(path, sizeof path, "/proc/self/%s", name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, size - 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        errno = EIO;
        return -1;
    }
    buf[n] = '\0';
    return (ssize_t)n;
}

int spm_procstat_read(pid_t pid, spm_procstat_t *out)
{
    memset(out, 0, sizeof *out);
    char buf[1024];
    if (read_proc(pid, "stat", buf, sizeof buf) < 0)
        return errno == ENOENT || errno == ESRCH ? SPM_ENOTFOUND : SPM_EIO;
    const char *p = strrchr(buf, ')');
    unsigned long long utime, stime;
    /* After ')': state (3), ppid .. cmajflt (4-12), utime (14), stime (15). */
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2)
        return SPM_EIO;
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    if (tick <= 0 || page <= 0)
        return SPM_EIO;
    char m[256];
    unsigned long long size, resident;
    if (read_proc(pid, "statm", m, sizeof m) < 0)
        return errno == ENOENT || errno == ESRCH ? SPM_ENOTFOUND : SPM_EIO;
    if (sscanf(m, "%llu %llu", &size, &resident) != 2)
        return SPM_EIO;
    out->cpu_us = (utime + stime) * 1000000ull / (unsigned long long)tick;
    out->rss_bytes = resident * (unsigned long long)page;
    return 0;
}

int spm_procstat_sum(const pid_t *pids, int n, spm_procstat_t *sum)
{
    int read = 0;
    for (int i = 0; i < n; i++) {
        spm_procstat_t one;
        if (pids[i] <= 0 || spm_procstat_read(pids[i], &one) != 0)
            continue;
        sum->cpu_us += one.cpu_us;
        sum->rss_bytes += one.rss_bytes;
        read++;
    }
    return read;
}
