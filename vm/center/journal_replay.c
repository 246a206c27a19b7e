/*  =========================================================================
    journal_replay - reading the journal back at a center's start

    Each job file found at open is mapped and its records handed to the
    caller in the order they were appended, up to the first record that is
    torn or fails its checksum; what follows is cut off the file, so the
    next record written lands after the intact prefix. A file first
    written before it is read back is checked the same way, with no
    caller (write_job).
    =========================================================================
*/
#include "vm/center/journal_int.h"
#include "base/checksum.h"
#include "spm/spm.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*  Reads the SIZE bytes at P, job JOB's file: hands each intact record to
    FN (unless FN is NULL, and until it returns non-zero), counting them in
    *RECORDS, and returns where the intact prefix ends (0 when the header is
    bad or torn, and for an empty file). */
static size_t scan(const uint8_t *p, size_t size, uint64_t job, spm_journal_fn fn, void *arg,
                   uint64_t *records)
{
    if (size < FILE_HEADER || memcmp(p, MAGIC, 4) != 0 || get_le32(p + 4) != SPM_JOURNAL_FORMAT ||
        get_le64(p + 8) != job)
        return 0;
    size_t off = FILE_HEADER;
    int reading = fn != NULL;
    while (size - off >= REC_HEADER) {
        size_t len = get_le32(p + off + 8);
        if (len > SPM_JOURNAL_MAX_RECORD || len > size - off - REC_HEADER ||
            spm_checksum(p + off + 8, 4 + len) != get_le64(p + off))
            break;
        if (reading) {
            (*records)++;
            reading = fn(arg, job, p + off + REC_HEADER, len) == 0;
        }
        off += REC_HEADER + len;
    }
    return off;
}

/*  Opens J's file when it is not open, reads it (handing its intact records
    to FN when FN is not NULL), and cuts off what follows its intact prefix,
    counting that in REPORT (may be NULL). Returns 0 or SPM_EIO. */
int journal_read_job(spm_journal_t *self, job_t *j, spm_journal_fn fn, void *arg,
                     spm_journal_report_t *report)
{
    char name[NAME_MAX_LEN];
    journal_job_name(name, j->id, "");
    if (j->fd < 0 && journal_open_file(self, j, name, O_RDWR) != 0) {
        if (errno != ENOENT)
            return journal_io_error(self, name);
        j->on_disk = 0; /* removed behind our back: nothing to read, made again when written */
        return 0;
    }
    struct stat st;
    if (fstat(j->fd, &st) != 0)
        return journal_io_error(self, name);
    size_t size = (size_t)st.st_size;
    const uint8_t *p = NULL;
    if (size) {
        p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, j->fd, 0);
        if (p == MAP_FAILED)
            return journal_io_error(self, name);
        madvise((void *)p, size, MADV_SEQUENTIAL);
    }
    uint64_t records = 0;
    size_t end = scan(p, size, j->id, fn, arg, &records);
    if (p)
        munmap((void *)p, size);
    if (end < size && ftruncate(j->fd, (off_t)end) != 0)
        return journal_io_error(self, name);
    if (report) {
        report->jobs++;
        report->records += records;
        report->damaged_files += end < size;
        report->bytes_skipped += size - end;
    }
    j->size = end;
    j->checked = 1;
    return 0;
}

/* ---------------------------------------------------------------- public */

int spm_journal_replay(spm_journal_t *self, spm_journal_fn fn, void *arg,
                       spm_journal_report_t *report)
{
    assert(self);
    assert(fn);
    if (report)
        memset(report, 0, sizeof *report);
    for (size_t i = 0; i < self->nfound; i++) {
        job_t *j = journal_get_job(self, self->found[i], 0);
        if (!j || !j->on_disk || j->rewrite)
            continue; /* dropped or reset since open */
        int opened = j->fd < 0;
        int rc = journal_read_job(self, j, fn, arg, report);
        if (rc != 0)
            return rc;
        if (opened && j->fd >= 0 && !j->pending) /* not written to yet: spare the descriptor */
            journal_close_file(self, j);
    }
    if (report)
        report->max_job = self->max_job;
    return 0;
}
