/*  =========================================================================
    journal - the center's record of which jobs started and which ended

    @discuss
    One line per event, appended to STORE/jobs.journal next to the LMDB
    store: "start JOB PROGRAM" and "end JOB STATUS". A center restarted on
    the same store reads it back: job ids continue above the largest, and a
    job that started but never ended is reported to its watcher as lost in
    the restart (its committed blocks stay in the store) instead of being
    unknown. The journal is flushed with every line and synced with the
    store, so it is as durable as the blocks it speaks of.
    @end
    =========================================================================
*/
#ifndef SPM_JOURNAL_H_INCLUDED
#define SPM_JOURNAL_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct spm_journal spm_journal_t;

typedef struct {
    uint64_t job;
    char program[64];
} spm_journal_job_t;

/*  Opens (creating) DIR/jobs.journal and reads what it holds. Unreadable
    lines (a torn last line after a crash) are skipped. NULL with the detail
    set when the file cannot be opened. */
spm_journal_t *spm_journal_open(const char *dir);
void spm_journal_close(spm_journal_t **self);

/*  The largest job id recorded (0 when none). */
uint64_t spm_journal_max_job(const spm_journal_t *self);

/*  Jobs that started and never ended, as read at open: fills up to MAX,
    returns how many there are. */
size_t spm_journal_unfinished(const spm_journal_t *self, spm_journal_job_t *out, size_t max);

/*  Appends a line. Returns 0 or SPM_EIO / SPM_EFULL with the detail set. */
int spm_journal_start(spm_journal_t *self, uint64_t job, const char *program);
int spm_journal_end(spm_journal_t *self, uint64_t job, int status);

/*  Syncs the file to disk. */
int spm_journal_sync(spm_journal_t *self);

#endif
