/*  =========================================================================
    startup - what a center does once, before its loop: one center per
    store (the store's lock and the pid file in it), the loader of resumed
    jobs' plugins, and resuming the jobs the journal holds

    Part of the center (vm/center/center.h); spm_center_new calls these.
    =========================================================================
*/
#include "base/log.h"
#include "vm/center/center_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/*  One center per store: a second would mix its journal and commits with
    the first's. Takes an exclusive lock on DIR/center.lock, held until
    the process ends (its descriptor in *FD: the id of this process is
    written into it once the store is accepted, center_write_pid). Returns 0, or
    SPM_EINVAL with the detail naming the other center, or SPM_EIO. */
int center_lock_store(const char *dir, int *lock_fd)
{
    char path[4096], pid[32] = "";
    snprintf(path, sizeof path, "%s/center.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        ssize_t n = read(fd, pid, sizeof pid - 1);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (err == EWOULDBLOCK)
            return spm_error(SPM_EINVAL, "%s: in use by another center (process %s)", dir,
                             *pid ? pid : "?");
        return spm_error(SPM_EIO, "%s: %s", path, strerror(err));
    }
    *lock_fd = fd; /* it stays open: the lock lasts as long as the process */
    return 0;
}

/*  Writes this process's id into the lock file FD, for the next center
    that finds the store in use. */
void center_write_pid(int fd, const char *dir)
{
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        spm_log_warn("%s/center.lock: cannot write this process's id", dir);
}

/*  IDU plugin loader: a resumed job's plugin, from the store. */
int center_load_plugin(void *arg, spm_sdb_t plugin, char *scope)
{
    spm_center_t *c = arg;
    return spm_plugins_verify(c->store, plugin, scope);
}

/*  A center started on a store it ran on before: its jobs go on. Returns
    0, or SPM_EIO when the journal cannot be read back. */
int center_resume_jobs(spm_center_t *c)
{
    spm_durable_resume_t r;
    if (spm_durable_resume(c->durable, c->idu, &r) != 0)
        return SPM_EIO;
    if (r.damaged_files)
        spm_log_warn("journal: %llu job file%s ended in a torn or damaged record; %llu bytes after "
                     "the intact part were skipped (those jobs redo what the bytes recorded)",
                     (unsigned long long)r.damaged_files, r.damaged_files == 1 ? "" : "s",
                     (unsigned long long)r.bytes_skipped);
    if (r.jobs)
        spm_log_info("journal: %llu jobs read back in %.3f s (%llu events): %llu resumed, "
                     "%llu ended before the restart, %llu with blocks kept, %llu failed; "
                     "%llu commits taken, %llu SIs in flight at the crash to run again",
                     (unsigned long long)r.jobs, r.us / 1e6, (unsigned long long)r.records,
                     (unsigned long long)r.resumed, (unsigned long long)r.ended,
                     (unsigned long long)r.kept, (unsigned long long)r.failed,
                     (unsigned long long)r.taken, (unsigned long long)r.reissued);
    uint64_t ids[4096];
    size_t n = spm_idu_jobs(c->idu, ids, 4096);
    for (size_t i = 0; i < n && i < 4096; i++) { /* their usage counts from here */
        spm_idu_job_info_t info;
        if (spm_idu_job_info(c->idu, ids[i], &info) != 0 || info.state != 0)
            continue;
        usage_t *u = malloc(sizeof *u);
        if (u) /* a client has the abandonment time from here to come back */
            *u = (usage_t){.cpu_us = center_cpu_us(),
                           .in = c->wire.bytes_in,
                           .out = c->wire.bytes_out,
                           .copies = center_copies_done(c),
                           .watched_us = spm_now_us()};
        if (u && spm_hmap_put(c->usage, ids[i], u) != 0)
            free(u);
    }
    const spm_durable_cut_t *cut;
    c->verify_cut = spm_durable_cut(c->durable, &cut) > 0;
    center_records_resumed(c);
    if (r.records) /* blocks are where the nodes say: wait for them to say it */
        c->locating_us = spm_now_us() + (uint64_t)c->dead_ms * 1000;
    if (r.failed)
        spm_status_failure(&c->status,
                           "%llu jobs could not be resumed after a restart (see the log)",
                           (unsigned long long)r.failed);
    return 0;
}

/*  Sweep: whether (ID, VERSION) is a version the IDU knows as live. */
static int referenced(void *arg, spm_sdb_t id, uint64_t version)
{
    spm_center_t *c = arg;
    return spm_idu_sdb_live(c->idu, id, version);
}

/*  Once the journal is read back, the store holds blocks nothing names
    any more: those of jobs discarded or freed while a crash, or a
    deletion whose commit failed (a full disk), kept them from being
    deleted. The IDU knows every version a resumed job, a kept result or
    a client's put (plugins included) may still read: every other block
    goes, so that space a failed deletion held is not lost for good. Run
    only with the journal (without it nothing is resumed, and the store's
    blocks are left as they are). A failure is logged, not fatal: the
    center runs with what could not be freed. */
void center_sweep_store(spm_center_t *c)
{
    uint64_t t0 = spm_now_us(), freed = 0, bytes = 0;
    int rc = spm_store_sweep(c->store, referenced, c, &freed, &bytes);
    if (freed)
        spm_log_info("store: %llu blocks (%.1f MiB) no job or client refers to were deleted in "
                     "%.3f s",
                     (unsigned long long)freed, bytes / 1048576.0, (spm_now_us() - t0) / 1e6);
    if (rc != 0)
        spm_log_warn("store: deleting the blocks no job or client refers to: %s",
                     spm_error_detail());
}

/*  Whether the VM still has block version (ID, VERSION): in the store, or
    on a node that reported it. */
static int still_there(spm_center_t *c, spm_sdb_t id, uint64_t version)
{
    uint32_t node;
    return spm_store_stat(c->store, id, version, NULL, NULL) == 0 ||
           spm_directory_holders(spm_dataplane_directory(c->dp), id, version, &node, 1) > 0;
}

/*  A job resumed from a cut journal lost the events after the cut; the
    center had deleted, as garbage, versions those events made unneeded.
    Once the nodes have had their time to say what they hold (the same
    wait as for parked GETs), each such job still running has every version
    it needs checked, and one that lacks any is failed at once with how
    much of its journal was lost, rather than run into the SI that would
    find the block gone. The others go on. */
void center_verify_cut(spm_center_t *c, uint64_t now)
{
    if (!c->verify_cut || now < c->locating_us)
        return;
    c->verify_cut = 0;
    const spm_durable_cut_t *cut;
    size_t n = spm_durable_cut(c->durable, &cut);
    enum { MAX_NEEDS = 1 << 16 };
    spm_idu_op_t *needs = malloc(MAX_NEEDS * sizeof *needs);
    for (size_t i = 0; needs && i < n; i++) {
        spm_idu_job_info_t info;
        if (spm_idu_job_info(c->idu, cut[i].job, &info) != 0 || info.state != 0)
            continue;
        size_t k = spm_idu_job_needs(c->idu, cut[i].job, needs, MAX_NEEDS), missing = 0;
        spm_idu_op_t first = {0};
        for (size_t j = 0; j < k && j < MAX_NEEDS; j++)
            if (!still_there(c, needs[j].sdb, needs[j].version) && !missing++)
                first = needs[j];
        if (!missing) {
            spm_log_info("job %llu (%s): its journal was cut (%llu torn bytes skipped), but "
                         "every block it needs is there: it goes on",
                         (unsigned long long)cut[i].job, info.program,
                         (unsigned long long)cut[i].bytes_lost);
            continue;
        }
        char why[400];
        snprintf(why, sizeof why,
                 "cannot be resumed: its journal was cut after %llu records (%llu commits kept, "
                 "%llu torn bytes skipped; what came after is lost), and %zu of the %zu block "
                 "versions it needs were deleted after events the cut lost (SDB %llu version "
                 "%llu first)",
                 (unsigned long long)cut[i].records, (unsigned long long)info.resumed,
                 (unsigned long long)cut[i].bytes_lost, missing, k, (unsigned long long)first.sdb,
                 (unsigned long long)first.version);
        spm_log_error("job %llu (%s) %s", (unsigned long long)cut[i].job, info.program, why);
        spm_idu_job_fail(c->idu, cut[i].job, SPM_EFORMAT, why);
    }
    free(needs);
}
