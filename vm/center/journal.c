/*  =========================================================================
    journal - the center's durable record of each job's events, one file per job

    Why one file per job: a job's records are read back together and thrown
    away together when the job is over, so deleting its file is the whole
    compaction, and a file damaged by a crash costs only that job's tail.
    The VM-wide records (job 0) pile up instead; the caller rewrites them
    with spm_journal_reset, which replaces the file by a rename so that a
    crash leaves either the old file or the new one.

    The syncer thread only ever touches the list of descriptors to sync, the
    directory flag, the failure of an early close (below) and the
    descriptors retired while it syncs, all under one lock that the loop
    takes once per flush (after its writes) and when a descriptor is closed.
    A descriptor the running sync may still use is closed by that sync when
    it ends, so a number is never reused under it.

    At most max_open job files are open at once (a center keeps the files
    of jobs nobody discarded for ever): before a file is opened, those of
    the least recently written jobs are closed, first those with nothing
    buffered. A job's size is known once its file was checked, so a file
    opened again is written at that offset with no read. Policy for a file
    closed early that was written since the last sync began: the loop
    fdatasyncs it before closing it and takes it off the next sync's list,
    so that promise holds exactly without the descriptor (a failure is
    reported by the sync that is running and by the next one). That costs
    the loop one fdatasync per such close, which only happens when more
    than max_open jobs are written within one sync period (or, when no
    sync ever runs, since open); handing the descriptor to the next sync
    instead would keep it open for as long as no sync runs, which with the
    center's --no-sync is for ever.
    When the running sync is to sync it too, the descriptor is retired: it
    closes when that sync ends, so up to max_open more files can be open
    meanwhile.
    =========================================================================
*/
#include "vm/center/journal_int.h"
#include "base/grow.h"
#include "spm/spm.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* -------------------------------------------------------------- helpers */

/*  Records errno's failure on NAME (in the journal's directory) and returns
    its code: SPM_EFULL for a full disk or the file size limit, else SPM_EIO. */
int journal_io_error(const spm_journal_t *self, const char *name)
{
    int e = errno;
    int code = e == ENOSPC || e == EDQUOT || e == EFBIG ? SPM_EFULL : SPM_EIO;
    return spm_error(code, "%s/%s: %s", self->path, name, strerror(e));
}

/*  Writes JOB's file name (with SUFFIX) into NAME (NAME_MAX_LEN bytes). */
void journal_job_name(char *name, uint64_t job, const char *suffix)
{
    snprintf(name, NAME_MAX_LEN, "%llu.log%s", (unsigned long long)job, suffix);
}

/*  Parses S as a job id in decimal (no sign, no leading zero) followed by
    exactly SUFFIX. Returns 1 with *ID set, or 0. */
static int parse_id(const char *s, const char *suffix, uint64_t *id)
{
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p == s || (s[0] == '0' && p - s > 1) || strcmp(p, suffix) != 0)
        return 0;
    *id = v;
    return 1;
}

/*  Writes the LEN bytes at BUF at offset OFF of FD, however many calls it
    takes. Returns 0, or -1 with errno set. */
int journal_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        p += n, len -= (size_t)n, off += (uint64_t)n;
    }
    return 0;
}

/*  Creates DIR and its missing parents with mode 0700. Returns 0 or SPM_EIO. */
static int mkdirs(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return spm_error(SPM_EIO, "%s: File name too long", dir);
    for (char *p = path + 1;; p++) {
        if (*p && *p != '/')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        if (!c)
            break;
        *p = c;
    }
    struct stat st;
    if (stat(dir, &st) != 0)
        return spm_error(SPM_EIO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return spm_error(SPM_EIO, "%s: %s", dir, strerror(ENOTDIR));
    return 0;
}

/*  fsyncs the directory DIR (best effort: a lost directory entry change is
    found again, or redone, at the next open). */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* ----------------------------------------------------- the syncer's lock */

/*  The directory of the journal changed: the next sync fsyncs it. */
void journal_note_dir(spm_journal_t *self)
{
    pthread_mutex_lock(&self->lock);
    self->dir_dirty = 1;
    pthread_mutex_unlock(&self->lock);
}

/*  Closes FD, job JOB's file, which the loop is done with, and takes it off
    the next sync's list: when SYNC_FIRST (it was written since the last
    sync began) after fdatasyncing it, a failure being left for the syncs
    to report; else the file was deleted or replaced. Closed at once, or
    when the running sync ends if that sync is to sync it. */
void journal_retire_fd(spm_journal_t *self, int fd, uint64_t job, int sync_first)
{
    int err = sync_first && fdatasync(fd) != 0 ? errno : 0;
    pthread_mutex_lock(&self->lock);
    for (size_t i = 0; i < self->ndirty; i++)
        if (self->dirty[i].fd == fd) {
            self->dirty[i] = self->dirty[--self->ndirty];
            break;
        }
    if (err && !self->close_errno) {
        self->close_errno = err;
        self->close_job = job;
    }
    int busy = 0;
    for (size_t i = 0; self->in_sync && !busy && i < self->nsyncing; i++)
        busy = self->syncing[i].fd == fd;
    int later = busy && spm_grow(&self->retired, self->nretired, &self->capretired,
                                 sizeof *self->retired, 8) == 0;
    if (later)
        self->retired[self->nretired++] = fd;
    pthread_mutex_unlock(&self->lock);
    if (later)
        return;
    if (busy) { /* no memory to defer it: wait for the sync to end */
        pthread_mutex_lock(&self->sync_lock);
        close(fd);
        pthread_mutex_unlock(&self->sync_lock);
        return;
    }
    close(fd);
}

/* ------------------------------------------------------------ open files */

/*  Puts J first among the open files: the last to close. */
static void link_newest(spm_journal_t *self, job_t *j)
{
    j->newer = NULL;
    j->older = self->newest;
    if (self->newest)
        self->newest->newer = j;
    else
        self->oldest = j;
    self->newest = j;
}

static void unlink_open(spm_journal_t *self, job_t *j)
{
    if (j->newer)
        j->newer->older = j->older;
    else
        self->newest = j->older;
    if (j->older)
        j->older->newer = j->newer;
    else
        self->oldest = j->newer;
    j->newer = j->older = NULL;
}

/*  J's file is open as FD (J had none): J is the last written. */
void journal_set_fd(spm_journal_t *self, job_t *j, int fd)
{
    assert(j->fd < 0);
    j->fd = fd;
    j->gen = 0;
    j->wrote = 0;
    link_newest(self, j);
    self->nopen++;
}

/*  J's file was just written: it becomes the last to close. */
void journal_touch(spm_journal_t *self, job_t *j)
{
    if (self->newest != j) {
        unlink_open(self, j);
        link_newest(self, j);
    }
}

/*  Takes J's descriptor (open) away from J and returns it: the caller
    closes it (retire_fd). */
int journal_take_fd(spm_journal_t *self, job_t *j)
{
    int fd = j->fd;
    unlink_open(self, j);
    self->nopen--;
    j->fd = -1;
    j->gen = 0;
    j->wrote = 0;
    return fd;
}

/*  Closes J's file (open) until J is written again; J keeps its size, so
    the file is then written at the same offset. A file written since the
    last sync began is fdatasynced first (see the top of the file). */
void journal_close_file(spm_journal_t *self, job_t *j)
{
    pthread_mutex_lock(&self->lock);
    int listed = j->gen == self->gen; /* on the next sync's list */
    pthread_mutex_unlock(&self->lock);
    int unsynced = listed || j->wrote;
    uint64_t id = j->id;
    journal_retire_fd(self, journal_take_fd(self, j), id, unsynced);
}

/*  Closes the files of the least recently written jobs until at most KEEP
    are open: first of jobs with nothing buffered, then, when that is not
    enough, of the others (opened again when their records are written). */
void journal_trim(spm_journal_t *self, size_t keep)
{
    for (int any = 0; any < 2 && self->nopen > keep; any++)
        for (job_t *j = self->oldest, *newer; j && self->nopen > keep; j = newer) {
            newer = j->newer;
            if (any || !j->len)
                journal_close_file(self, j);
        }
}

/*  Opens J's file NAME (J has none open) with FLAGS, and mode 0600 when it
    is created, first closing others so that at most max_open are open.
    Returns 0, or -1 with errno set. */
int journal_open_file(spm_journal_t *self, job_t *j, const char *name, int flags)
{
    journal_trim(self, self->max_open - 1);
    int fd = openat(self->dirfd, name, flags | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    journal_set_fd(self, j, fd);
    return 0;
}

/* ------------------------------------------------------------------ jobs */

/*  Returns JOB's entry; when there is none, a new one if CREATE (NULL when
    out of memory), else NULL. */
job_t *journal_get_job(spm_journal_t *self, uint64_t job, int create)
{
    job_t *j = job ? spm_hmap_get(self->jobs, job) : self->zero;
    if (j || !create)
        return j;
    j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->id = job;
    j->fd = -1;
    if (!job)
        self->zero = j;
    else if (spm_hmap_put(self->jobs, job, j) != 0) {
        free(j);
        return NULL;
    }
    return j;
}

void journal_free_job(job_t *j)
{
    free(j->buf);
    free(j);
}

/*  Keeps JOB (dropped) as the largest job id dropped: renames
    max_job.OLD to max_job.JOB (or creates it). Returns 0 or SPM_EIO. */
int journal_set_mark(spm_journal_t *self, uint64_t job)
{
    char old[NAME_MAX_LEN], name[NAME_MAX_LEN];
    snprintf(old, sizeof old, "max_job.%llu", (unsigned long long)self->mark);
    snprintf(name, sizeof name, "max_job.%llu", (unsigned long long)job);
    int r = -1;
    if (self->mark)
        r = renameat(self->dirfd, old, self->dirfd, name);
    if (!self->mark || (r != 0 && errno == ENOENT)) {
        int fd = openat(self->dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        r = fd < 0 ? -1 : close(fd);
    }
    if (r != 0)
        return journal_io_error(self, name);
    self->mark = job;
    journal_note_dir(self);
    return 0;
}

/* ------------------------------------------------------------------ open */

/*  Checks DIR/journal/journal.id, when there is one, against STORE_ID.
    Sets *PRESENT. Returns 0, or SPM_EINVAL / SPM_EFORMAT /
    SPM_EIO with the detail set. Changes nothing. */
static int check_identity(const spm_journal_t *self, const uint8_t *store_id, int *present)
{
    char path[PATH_MAX], buf[256];
    snprintf(path, sizeof path, "%s/journal.id", self->path);
    *present = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR
                   ? 0
                   : spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    buf[n] = '\0';
    *present = 1;
    static const char head[] = "spm journal\nformat ";
    unsigned format;
    if (strncmp(buf, head, sizeof head - 1) != 0 ||
        sscanf(buf + sizeof head - 1, "%u", &format) != 1)
        return spm_error(SPM_EFORMAT, "%s: not a journal identity file", path);
    if (format != SPM_JOURNAL_FORMAT)
        return spm_error(SPM_EINVAL, "%s: written by journal format %u; this spm reads format %d",
                         self->path, format, SPM_JOURNAL_FORMAT);
    const char *s = strstr(buf, "\nstore ");
    char hex[33] = "", want[33];
    if (!s || sscanf(s + 7, "%32[0-9a-f]", hex) != 1 || strlen(hex) != 32)
        return spm_error(SPM_EFORMAT, "%s: not a journal identity file", path);
    for (int i = 0; i < 16; i++)
        snprintf(want + 2 * i, 3, "%02x", store_id[i]);
    if (strcmp(hex, want) != 0)
        return spm_error(SPM_EINVAL, "%s: belongs to another store (store %s, not this store %s)",
                         self->path, hex, want);
    return 0;
}

/*  Writes journal.id for STORE_ID through a rename, synced. Returns 0 or SPM_EIO. */
static int write_identity(spm_journal_t *self, const uint8_t *store_id)
{
    char text[128];
    int n = snprintf(text, sizeof text, "spm journal\nformat %d\nstore ", SPM_JOURNAL_FORMAT);
    for (int i = 0; i < 16; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%02x", store_id[i]);
    n += snprintf(text + n, sizeof text - (size_t)n, "\n");
    int fd = openat(self->dirfd, "journal.id.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return journal_io_error(self, "journal.id.tmp");
    if (journal_pwrite_all(fd, text, (size_t)n, 0) != 0 || fdatasync(fd) != 0) {
        int rc = journal_io_error(self, "journal.id.tmp");
        close(fd);
        return rc;
    }
    close(fd);
    if (renameat(self->dirfd, "journal.id.tmp", self->dirfd, "journal.id") != 0 ||
        fsync(self->dirfd) != 0)
        return journal_io_error(self, "journal.id");
    return 0;
}

/*  Lists the files of DIR/journal: job files (an entry each), the largest
    max_job.N (the others, and leftovers of interrupted rewrites, are
    removed). Returns 0, SPM_EIO or SPM_ENOMEM. */
static int list_files(spm_journal_t *self)
{
    DIR *d = opendir(self->path);
    if (!d)
        return spm_error(SPM_EIO, "%s: %s", self->path, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        uint64_t id;
        job_t *j;
        if (parse_id(e->d_name, ".log", &id)) {
            if (!(j = journal_get_job(self, id, 1)) ||
                spm_grow(&self->found, self->nfound, &self->capfound, sizeof *self->found, 16) != 0)
                rc = spm_error(SPM_ENOMEM, "out of memory");
            else {
                j->on_disk = 1;
                self->found[self->nfound++] = id;
                if (id > self->max_job)
                    self->max_job = id;
            }
        } else if (strncmp(e->d_name, "max_job.", 8) == 0 && parse_id(e->d_name + 8, "", &id)) {
            char old[NAME_MAX_LEN];
            snprintf(old, sizeof old, "max_job.%llu",
                     (unsigned long long)(id > self->mark ? self->mark : id));
            if (self->mark)
                unlinkat(self->dirfd, old, 0);
            if (id > self->mark)
                self->mark = id;
            if (id > self->max_job)
                self->max_job = id;
        } else if (parse_id(e->d_name, ".log.new", &id) || !strcmp(e->d_name, "journal.id.tmp")) {
            unlinkat(self->dirfd, e->d_name, 0);
        }
    }
    closedir(d);
    /* ascending: the order of replay (job 0 first) */
    for (size_t i = 1; i < self->nfound; i++)
        for (size_t k = i; k > 0 && self->found[k - 1] > self->found[k]; k--) {
            uint64_t t = self->found[k];
            self->found[k] = self->found[k - 1];
            self->found[k - 1] = t;
        }
    return rc;
}

/*  Takes the largest job id of DIR/jobs.journal, the text journal of earlier
    versions ("start JOB PROGRAM" and "end JOB STATUS" lines), keeps it as
    max_job.N, and removes the file. Returns 0, SPM_EIO or SPM_ENOMEM. */
static int take_old_journal(spm_journal_t *self, const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/jobs.journal", dir);
    FILE *in = fopen(path, "r");
    if (!in)
        return errno == ENOENT ? 0 : spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    char line[256];
    uint64_t max = 0;
    while (fgets(line, sizeof line, in)) {
        unsigned long long job;
        if (strchr(line, '\n') &&
            (sscanf(line, "start %llu", &job) == 1 || sscanf(line, "end %llu", &job) == 1) &&
            job > max)
            max = job;
    }
    int bad = ferror(in);
    fclose(in);
    if (bad)
        return spm_error(SPM_EIO, "%s: read error", path);
    if (max > self->max_job)
        self->max_job = max;
    int rc;
    if (max > self->mark && ((rc = journal_set_mark(self, max)) != 0))
        return rc;
    if (fsync(self->dirfd) != 0) /* the mark is on disk before the old file goes */
        return journal_io_error(self, ".");
    if (unlink(path) != 0)
        return spm_error(SPM_EIO, "%s: cannot remove: %s", path, strerror(errno));
    sync_dir(dir);
    return 0;
}

/* ---------------------------------------------------------------- public */

spm_journal_t *spm_journal_open(const char *dir, const uint8_t store_id[16])
{
    assert(dir);
    assert(store_id);
    spm_journal_t *self = calloc(1, sizeof *self);
    if (!self) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    self->dirfd = -1;
    self->gen = 1;
    self->max_open = SPM_JOURNAL_MAX_OPEN;
    pthread_mutex_init(&self->lock, NULL);
    pthread_mutex_init(&self->sync_lock, NULL);
    if (asprintf(&self->path, "%s/journal", dir) < 0)
        self->path = NULL;
    if (!self->path || !(self->jobs = spm_hmap_new())) {
        spm_error(SPM_ENOMEM, "out of memory");
        goto err;
    }
    int present;
    if (check_identity(self, store_id, &present) != 0 || mkdirs(self->path) != 0)
        goto err;
    self->dirfd = open(self->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (self->dirfd < 0) {
        spm_error(SPM_EIO, "%s: %s", self->path, strerror(errno));
        goto err;
    }
    if (!present) { /* a new journal (a directory without journal.id is taken as one) */
        if (write_identity(self, store_id) != 0)
            goto err;
        sync_dir(dir); /* DIR/journal may be new */
    }
    if (list_files(self) != 0 || take_old_journal(self, dir) != 0)
        goto err;
    return self;
err:
    spm_journal_destroy(&self);
    return NULL;
}

void spm_journal_destroy(spm_journal_t **self_p)
{
    assert(self_p);
    spm_journal_t *self = *self_p;
    if (!self)
        return;
    if (self->dirfd >= 0)
        spm_journal_flush(self);
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (self->jobs && spm_hmap_next(self->jobs, &pos, &key, &value)) {
        job_t *j = value;
        if (j->fd >= 0)
            close(j->fd);
        journal_free_job(j);
    }
    if (self->zero) {
        if (self->zero->fd >= 0)
            close(self->zero->fd);
        journal_free_job(self->zero);
    }
    for (size_t i = 0; i < self->nretired; i++)
        close(self->retired[i]);
    if (self->dirfd >= 0)
        close(self->dirfd);
    spm_hmap_destroy(&self->jobs);
    pthread_mutex_destroy(&self->lock);
    pthread_mutex_destroy(&self->sync_lock);
    free(self->pending);
    free(self->found);
    free(self->dirty);
    free(self->syncing);
    free(self->retired);
    free(self->path);
    free(self);
    *self_p = NULL;
}

int spm_journal_sync(spm_journal_t *self)
{
    assert(self);
    pthread_mutex_lock(&self->sync_lock);
    pthread_mutex_lock(&self->lock);
    dirty_t *list = self->dirty;
    size_t n = self->ndirty, cap = self->capdirty;
    self->dirty = self->syncing; /* emptied by the last sync */
    self->capdirty = self->capsyncing;
    self->ndirty = 0;
    self->syncing = list;
    self->capsyncing = cap;
    self->nsyncing = n;
    self->gen++;
    int dir = self->dir_dirty;
    self->dir_dirty = 0;
    self->in_sync = 1;
    int err = self->close_errno;
    uint64_t err_job = self->close_job;
    self->close_errno = 0;
    pthread_mutex_unlock(&self->lock);

    int rc = 0;
    if (err)
        rc = spm_error(SPM_EIO, "%s/%llu.log: %s", self->path, (unsigned long long)err_job,
                       strerror(err));
    for (size_t i = 0; i < n; i++)
        if (fdatasync(list[i].fd) != 0 && rc == 0)
            rc = spm_error(SPM_EIO, "%s/%llu.log: %s", self->path, (unsigned long long)list[i].job,
                           strerror(errno));
    if (dir && fsync(self->dirfd) != 0 && rc == 0)
        rc = spm_error(SPM_EIO, "%s: %s", self->path, strerror(errno));

    pthread_mutex_lock(&self->lock);
    if (self->close_errno && rc == 0) /* a file this sync was to sync too, closed meanwhile */
        rc = spm_error(SPM_EIO, "%s/%llu.log: %s", self->path, (unsigned long long)self->close_job,
                       strerror(self->close_errno));
    self->nsyncing = 0;
    self->in_sync = 0;
    for (size_t i = 0; i < self->nretired; i++)
        close(self->retired[i]);
    self->nretired = 0;
    pthread_mutex_unlock(&self->lock);
    pthread_mutex_unlock(&self->sync_lock);
    return rc;
}

void spm_journal_set_max_open(spm_journal_t *self, size_t n)
{
    assert(self);
    self->max_open = n ? n : 1;
    journal_trim(self, self->max_open);
}

uint64_t spm_journal_max_job(const spm_journal_t *self)
{
    assert(self);
    return self->max_job;
}
