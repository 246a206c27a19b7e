/*  =========================================================================
    procstat - the CPU time and resident memory of a process, from /proc

    @discuss
    What an agent reports of its node's spm processes (itself and its
    IEUs) in its heartbeat, and what a process's own /metrics can serve as
    process_cpu_seconds_total and process_resident_memory_bytes:

        spm_procstat_t st;
        if (spm_procstat_read(0, &st) == 0)      // this process
            printf("%llu us of CPU, %llu bytes resident\n", st.cpu_us, st.rss_bytes);

    CPU time is user plus system time, summed over the process's threads
    (not its children), as the kernel counts it in clock ticks (10 ms on
    most systems): two reads a second apart give its CPU use over that
    second. Resident memory is what the kernel counts as the process's
    (anonymous, file-backed and shared pages it has mapped in, the
    "RES" of top): a page of a file mapped by two processes counts in
    both, so a sum over processes can exceed what they use together.
    Linux only; each read opens two small files.
    @end
    =========================================================================
*/
#ifndef SPM_PROCSTAT_H_INCLUDED
#define SPM_PROCSTAT_H_INCLUDED

#include <stdint.h>
#include <sys/types.h>

typedef struct {
    uint64_t cpu_us;    /* user + system CPU time since the process started */
    uint64_t rss_bytes; /* resident set size now */
} spm_procstat_t;

/*  Reads PID's figures (0: the calling process) into *OUT. Returns 0,
    SPM_ENOTFOUND when no such process is there (it exited; a zombie
    reads as one with its last figures), or SPM_EIO when /proc cannot be
    read or parsed (no /proc mounted). *OUT is zeroed on failure. Sets no
    error detail: a process gone is an expected answer. */
int spm_procstat_read(pid_t pid, spm_procstat_t *out);

/*  Adds the figures of each of the N processes PIDS (0 entries are
    skipped; one that is gone adds nothing) to *SUM. Returns how many
    were read. */
int spm_procstat_sum(const pid_t *pids, int n, spm_procstat_t *sum);

#endif
