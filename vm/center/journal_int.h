/*  =========================================================================
    journal_int - what the files of the journal share: the object, a job's
    entry, the on-disk framing and the helpers of journal.c

    journal.c opens the journal and keeps its files (the bound of open
    files, the syncer's lock, the sync); journal_write.c appends, flushes,
    drops and resets; journal_replay.c reads the files back.
    =========================================================================
*/
#ifndef SPM_JOURNAL_INT_H_INCLUDED
#define SPM_JOURNAL_INT_H_INCLUDED

#include "vm/center/journal.h"
#include "base/hmap.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define MAGIC "SPMJ"        /* the first 4 bytes of a job file */
#define FILE_HEADER 16      /* magic, format version (u32), job id (u64) */
#define REC_HEADER 12       /* checksum (u64), payload length (u32) */
#define KEEP_BUF (64 << 10) /* a job's buffer larger than this is freed once written */
#define NAME_MAX_LEN 48     /* room for "max_job.N", "JOB.log.new" and the like */

typedef struct job job_t;
struct job {
    uint64_t id;          /* the job */
    int fd;               /* JOB.log, read-write; -1 while closed (until needed) */
    int on_disk;          /* JOB.log exists (found at open, or created since) */
    int checked;          /* the file was read and cut to its intact prefix: size is right */
    int rewrite;          /* reset: the next flush replaces the file */
    int pending;          /* listed in self->pending: the next flush has work for it */
    int wrote;            /* fd was written and not listed dirty since */
    uint64_t size;        /* bytes of the file (header and whole records), once checked */
    uint64_t gen;         /* self->gen when fd was listed dirty; 0: not since it was opened */
    job_t *newer, *older; /* neighbours among the jobs whose file is open, by last write */
    uint8_t *buf;         /* framed records not yet written */
    size_t len, cap;      /* bytes in buf, bytes allocated */
};

typedef struct {
    int fd;       /* to fdatasync */
    uint64_t job; /* whose file it is, for the message */
} dirty_t;

struct spm_journal {
    char *path;       /* DIR/journal */
    int dirfd;        /* DIR/journal, for the *at calls and its own fsync */
    job_t *zero;      /* job 0, which the map cannot hold */
    spm_hmap_t *jobs; /* job id -> job_t, the other jobs */
    job_t *last;      /* the job of the last append, to skip the look-up */
    job_t **pending;  /* jobs the next flush has work for */
    size_t npending, cappending;
    uint64_t *found; /* ids of the job files found at open, ascending */
    size_t nfound, capfound;
    uint64_t max_job; /* spm_journal_max_job */
    uint64_t mark;    /* N of DIR/journal/max_job.N; 0: there is none */
    job_t *newest;    /* the jobs whose file is open, from the last written ... */
    job_t *oldest;    /* ... to the least recently written (closed first) */
    size_t nopen;     /* jobs whose file is open */
    size_t max_open;  /* spm_journal_set_max_open */
    /* Shared with a syncing thread, under lock. */
    pthread_mutex_t lock;
    pthread_mutex_t sync_lock; /* held by the running sync: one at a time */
    dirty_t *dirty;            /* files written since the last sync began */
    size_t ndirty, capdirty;
    dirty_t *syncing; /* the files the running sync syncs */
    size_t nsyncing, capsyncing;
    int *retired; /* descriptors to close when the running sync ends */
    size_t nretired, capretired;
    int dir_dirty;      /* files came, went or were renamed since the last sync began */
    int in_sync;        /* a sync is running */
    uint64_t gen;       /* syncs begun, plus 1 */
    int close_errno;    /* fdatasync of a file closed early failed: its errno; 0: none */
    uint64_t close_job; /* that file's job */
};

static inline uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get_le64(const uint8_t *p)
{
    return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
    put_le32(p, (uint32_t)v);
    put_le32(p + 4, (uint32_t)(v >> 32));
}

/* journal.c: the helpers, the syncer's lock, the open files, the jobs */
int journal_io_error(const spm_journal_t *self, const char *name);
void journal_job_name(char *name, uint64_t job, const char *suffix);
int journal_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
void journal_note_dir(spm_journal_t *self);
void journal_retire_fd(spm_journal_t *self, int fd, uint64_t job, int sync_first);
void journal_set_fd(spm_journal_t *self, job_t *j, int fd);
void journal_touch(spm_journal_t *self, job_t *j);
int journal_take_fd(spm_journal_t *self, job_t *j);
void journal_close_file(spm_journal_t *self, job_t *j);
void journal_trim(spm_journal_t *self, size_t keep);
int journal_open_file(spm_journal_t *self, job_t *j, const char *name, int flags);
job_t *journal_get_job(spm_journal_t *self, uint64_t job, int create);
void journal_free_job(job_t *j);
int journal_set_mark(spm_journal_t *self, uint64_t job);

/* journal_replay.c: reads J's file back (FN NULL: only checks and cuts it) */
int journal_read_job(spm_journal_t *self, job_t *j, spm_journal_fn fn, void *arg,
                     spm_journal_report_t *report);

#endif
