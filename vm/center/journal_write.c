/*  =========================================================================
    journal_write - appending to the journal: the records of a job framed
    in its buffer, written to its file, dropped or rewritten

    Appends are framed straight into a per-job buffer (checksum included),
    so flushing is one pwrite per job at the offset where the job's last
    whole record ends. Writing at a known offset, rather than in append
    mode, means a failed or short write is cut back (ftruncate) to that
    offset and never leaves half a record for later records to land after.
    A file that a crash left with a torn tail is cut to its intact prefix
    when it is first read (replay) or first written (flush), whichever comes
    first.
    =========================================================================
*/
#include "vm/center/journal_int.h"
#include "base/checksum.h"
#include "base/grow.h"
#include "spm/spm.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*  Lists J for the next flush. Returns 0 or SPM_ENOMEM. */
static int pend(spm_journal_t *self, job_t *j)
{
    if (j->pending)
        return 0;
    if (spm_grow(&self->pending, self->npending, &self->cappending, sizeof *self->pending, 16) != 0)
        return spm_error(SPM_ENOMEM, "out of memory");
    self->pending[self->npending++] = j;
    j->pending = 1;
    return 0;
}

static void unpend(spm_journal_t *self, job_t *j)
{
    for (size_t i = 0; j->pending && i < self->npending; i++)
        if (self->pending[i] == j) {
            self->pending[i] = self->pending[--self->npending];
            j->pending = 0;
        }
}

/*  J's buffer was written: empties it, and frees it when it grew large. */
static void written(job_t *j)
{
    j->len = 0;
    if (j->cap > KEEP_BUF) {
        free(j->buf);
        j->buf = NULL;
        j->cap = 0;
    }
}

/*  Writes a job file header for JOB into H (FILE_HEADER bytes). */
static void file_header(uint8_t *h, uint64_t job)
{
    memcpy(h, MAGIC, 4);
    put_le32(h + 4, SPM_JOURNAL_FORMAT);
    put_le64(h + 8, job);
}

/*  Writes J's buffer at the end of its file, opening (and first checking,
    or creating) the file when needed. On failure the file is cut back to
    its last whole record and the buffer kept. Sets *DIR_CHANGED when a file
    was created. Returns 0, SPM_EIO or SPM_EFULL. */
static int write_job(spm_journal_t *self, job_t *j, int *dir_changed)
{
    if (!j->len)
        return 0;
    char name[NAME_MAX_LEN];
    journal_job_name(name, j->id, "");
    int rc;
    if (j->fd < 0 && j->on_disk && !j->checked &&
        (rc = journal_read_job(self, j, NULL, NULL, NULL)) != 0)
        return rc;
    if (j->fd < 0 && j->on_disk && journal_open_file(self, j, name, O_RDWR) != 0) {
        if (errno != ENOENT)
            return journal_io_error(self, name);
        j->on_disk = 0; /* removed behind our back: made again */
    }
    if (j->fd < 0) {
        if (journal_open_file(self, j, name, O_RDWR | O_CREAT | O_TRUNC) != 0)
            return journal_io_error(self, name);
        j->on_disk = j->checked = 1;
        j->size = 0;
        *dir_changed = 1;
    }
    uint8_t h[FILE_HEADER];
    file_header(h, j->id);
    uint64_t at = j->size;
    if ((at == 0 && journal_pwrite_all(j->fd, h, sizeof h, 0) != 0) ||
        journal_pwrite_all(j->fd, j->buf, j->len, at ? at : FILE_HEADER) != 0) {
        rc = journal_io_error(self, name);
        if (ftruncate(j->fd, (off_t)at) != 0) {
            /* Left as it is: the next write goes at AT all the same, and
               whatever remains past it is cut when the file is next read. */
        }
        return rc;
    }
    j->size = (at ? at : FILE_HEADER) + j->len;
    j->wrote = 1;
    journal_touch(self, j);
    written(j);
    return 0;
}

/*  After spm_journal_reset: writes J's header and buffer into JOB.log.new,
    syncs it and renames it over JOB.log, so that a crash leaves either the
    old file or the new. Returns 0, SPM_EIO or SPM_EFULL (then nothing
    changed, and the buffer is kept). */
static int rewrite_job(spm_journal_t *self, job_t *j)
{
    char name[NAME_MAX_LEN], tmp[NAME_MAX_LEN];
    journal_job_name(name, j->id, "");
    journal_job_name(tmp, j->id, ".new");
    journal_trim(self, self->max_open - 1); /* the new file takes J's place among the open ones */
    int fd = openat(self->dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return journal_io_error(self, tmp);
    uint8_t h[FILE_HEADER];
    file_header(h, j->id);
    if (journal_pwrite_all(fd, h, sizeof h, 0) != 0 ||
        journal_pwrite_all(fd, j->buf, j->len, FILE_HEADER) != 0 || fdatasync(fd) != 0 ||
        renameat(self->dirfd, tmp, self->dirfd, name) != 0) {
        int rc = journal_io_error(self, tmp);
        close(fd);
        unlinkat(self->dirfd, tmp, 0);
        return rc;
    }
    if (j->fd >= 0)
        journal_retire_fd(self, journal_take_fd(self, j), j->id, 0);
    journal_set_fd(self, j,
                   fd); /* synced: not listed for the next sync, which syncs the directory */
    j->size = FILE_HEADER + j->len;
    j->on_disk = j->checked = 1;
    j->rewrite = 0;
    written(j);
    return 0;
}

/* ---------------------------------------------------------------- public */

int spm_journal_append(spm_journal_t *self, uint64_t job, const void *rec, size_t len)
{
    assert(self);
    assert(rec || len == 0);
    if (len > SPM_JOURNAL_MAX_RECORD)
        return spm_error(SPM_EINVAL, "%s: a record of %zu bytes for job %llu (at most %u)",
                         self->path, len, (unsigned long long)job, SPM_JOURNAL_MAX_RECORD);
    job_t *j = self->last && self->last->id == job ? self->last : journal_get_job(self, job, 1);
    if (!j)
        return spm_error(SPM_ENOMEM, "out of memory");
    size_t need = j->len + REC_HEADER + len;
    if (need > j->cap) {
        size_t cap = j->cap ? j->cap : 256;
        while (cap < need)
            cap *= 2;
        uint8_t *b = realloc(j->buf, cap);
        if (!b)
            return spm_error(SPM_ENOMEM, "out of memory");
        j->buf = b;
        j->cap = cap;
    }
    int rc = pend(self, j);
    if (rc != 0)
        return rc;
    uint8_t *p = j->buf + j->len;
    put_le32(p + 8, (uint32_t)len);
    if (len)
        memcpy(p + REC_HEADER, rec, len);
    put_le64(p, spm_checksum(p + 8, 4 + len));
    j->len = need;
    self->last = j;
    if (job > self->max_job)
        self->max_job = job;
    return 0;
}

int spm_journal_flush(spm_journal_t *self)
{
    assert(self);
    if (!self->npending)
        return 0;
    int rc = 0, dir_changed = 0;
    for (size_t i = 0; i < self->npending; i++) {
        job_t *j = self->pending[i];
        int r = 0;
        if (j->rewrite) {
            r = rewrite_job(self, j);
            dir_changed |= r == 0;
        } else {
            r = write_job(self, j, &dir_changed);
        }
        if (r == 0)
            j->pending = 0;
        else if (rc == 0)
            rc = r;
    }
    /* One lock for the lot, after the writes: list what the next sync syncs. */
    size_t kept = 0;
    pthread_mutex_lock(&self->lock);
    for (size_t i = 0; i < self->npending; i++) {
        job_t *j = self->pending[i];
        if (j->pending) {
            self->pending[kept++] = j;
        } else if (j->fd >= 0 && j->wrote) {
            if (j->gen != self->gen && spm_grow(&self->dirty, self->ndirty, &self->capdirty,
                                                sizeof *self->dirty, 16) != 0) {
                if (rc == 0)
                    rc = spm_error(SPM_ENOMEM, "out of memory");
                continue; /* still marked written: a close syncs it */
            }
            if (j->gen != self->gen)
                self->dirty[self->ndirty++] = (dirty_t){j->fd, j->id};
            j->gen = self->gen;
            j->wrote = 0;
        }
    }
    if (dir_changed)
        self->dir_dirty = 1;
    pthread_mutex_unlock(&self->lock);
    self->npending = kept;
    return rc;
}

int spm_journal_drop(spm_journal_t *self, uint64_t job)
{
    assert(self);
    job_t *j = journal_get_job(self, job, 0);
    if (!j)
        return 0;
    int rc = job > self->mark ? journal_set_mark(self, job) : 0;
    if (rc != 0)
        return rc;
    if (job)
        spm_hmap_remove(self->jobs, job);
    else
        self->zero = NULL;
    if (self->last == j)
        self->last = NULL;
    unpend(self, j);
    if (j->fd >= 0)
        journal_retire_fd(self, journal_take_fd(self, j), job, 0);
    if (j->on_disk) {
        char name[NAME_MAX_LEN];
        journal_job_name(name, job, "");
        if (unlinkat(self->dirfd, name, 0) != 0 && errno != ENOENT)
            rc = journal_io_error(self, name);
        journal_note_dir(self);
    }
    journal_free_job(j);
    return rc;
}

int spm_journal_reset(spm_journal_t *self, uint64_t job)
{
    assert(self);
    job_t *j = journal_get_job(self, job, 0);
    if (!j)
        return 0;
    j->len = 0;
    if (!j->on_disk)
        return 0;
    j->rewrite = 1;
    return pend(self, j);
}
