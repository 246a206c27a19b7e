/*  =========================================================================
    journal - the center's durable record of each job's events, one file per job

    @header
    A center killed at any moment and started again on the same store
    directory resumes its jobs by replaying what they saw. This class is the
    file layer of that: it keeps, for every job, the byte records the center
    appends (the events; their encoding is the caller's), writes them to the
    job's own file, syncs them, deletes the file when the job no longer needs
    it, and reads every file back at the next start, tolerating the torn tail
    a crash leaves and damage in the middle of a file. Job 0 is the VM-wide
    journal, for what belongs to no job.
    @discuss
    Appending only copies the record into the job's buffer in memory (no
    system call): the center appends for every commit. spm_journal_flush, once
    per turn of the loop, writes each job's buffer with one write() into its
    file; from then the records survive a crash of the process.
    spm_journal_sync, from the syncer's thread or the loop, fdatasyncs the
    files written since the last sync (and the directory when files came or
    went); from then they survive a crash of the operating system.

        spm_journal_t *jr = spm_journal_open(store_dir, store_id);
        spm_journal_report_t rep;
        if (!jr || spm_journal_replay(jr, on_record, center, &rep) != 0)
            ... fail with spm_error_detail() ...
        if (rep.damaged_files)
            ... warn once: rep.damaged_files files, rep.bytes_skipped bytes ...
        spm_journal_append(jr, job, rec, len);    // per event
        spm_journal_flush(jr);                     // per loop turn
        spm_journal_drop(jr, job);                 // the job's report was delivered

    On disk, DIR/journal/ holds:
      journal.id   the text "spm journal\nformat 1\nstore HEX32\n": the
                   format version and the 16-byte identity of the store
                   whose journal this is; written once, through a rename.
      JOB.log      job JOB's records (JOB in decimal, "0.log" for job 0): a
                   16-byte header ("SPMJ", the format version as u32 LE, the
                   job id as u64 LE), then records, each a u64 LE checksum,
                   a u32 LE length LEN and LEN bytes of payload. The checksum
                   is spm_checksum (XXH3-64) of the 4 + LEN bytes from the
                   length on, so a damaged length is caught too. A file ends
                   at a record boundary unless a crash or damage left
                   something else: the bytes from the first record that is
                   cut short or fails its checksum on are not read, and are
                   cut off (the file truncated to its intact prefix) before
                   the job's next record is written.
      JOB.log.new  a file being rewritten after spm_journal_reset; a
                   leftover of a crash is removed at open.
      max_job.N    an empty file whose name keeps the largest job id whose
                   file was dropped, so that job ids never go back after
                   every job's file is gone (renamed, never written: a crash
                   cannot tear it).

    The loop's thread owns the object; only spm_journal_sync may run on
    another thread at the same time (one sync at a time). The lock they share
    guards the list of files to sync and is never held across a write.

    At most SPM_JOURNAL_MAX_OPEN job files are open at once (see
    spm_journal_set_max_open): a flush that opens one more first closes
    those of the least recently written jobs, and a job's file is opened
    again when it is next written, at its known end. A file so closed that
    was written since the last sync began is fdatasynced first, on the
    caller's thread, so spm_journal_sync still covers it.

    Limits: while a sync runs, the files it is to sync that were closed
    meanwhile stay open until it ends, so up to twice the bound can be
    open for that long. A record is at most SPM_JOURNAL_MAX_RECORD bytes.
    A job's whole file is mapped in memory while it is replayed.
    @end
    =========================================================================
*/
#ifndef SPM_JOURNAL_H_INCLUDED
#define SPM_JOURNAL_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define SPM_JOURNAL_FORMAT 1              /* the format version this spm reads and writes */
#define SPM_JOURNAL_MAX_RECORD (1u << 30) /* bytes of payload in one record, at most */
#define SPM_JOURNAL_MAX_OPEN 64           /* job files open at once, unless set otherwise */

typedef struct spm_journal spm_journal_t;

/*  What spm_journal_replay found. */
typedef struct {
    uint64_t jobs;          /* job files read */
    uint64_t records;       /* intact records handed to the callback */
    uint64_t damaged_files; /* files whose tail was torn or damaged (and was cut off) */
    uint64_t bytes_skipped; /* bytes of those tails, not read */
    uint64_t max_job;       /* spm_journal_max_job */
} spm_journal_report_t;

/*  Called for each record read back: REC (LEN bytes) is valid during the
    call only (copy what you keep). Returns 0 to go on with JOB's records,
    non-zero to skip the rest of them. It may append, but must not drop or
    reset JOB. */
typedef int (*spm_journal_fn)(void *arg, uint64_t job, const void *rec, size_t len);

/*  Opens the journal in DIR/journal/ (created with mode 0700, with DIR and
    its missing parents) of the store whose identity is STORE_ID (16 bytes,
    spm_store_identity). A new journal gets its journal.id file. Files of
    jobs are found (by name) but not read: spm_journal_replay reads them.
    The text file DIR/jobs.journal of earlier versions, if present, is read
    for its largest job id and then removed. Returns the journal, owned by
    the caller (spm_journal_destroy), or NULL with the detail set to one line:
    SPM_EINVAL "DIR/journal: written by journal format N; this spm reads
    format M", SPM_EINVAL "DIR/journal: belongs to another store (store X,
    not Y)", SPM_EFORMAT "DIR/journal/journal.id: not a journal identity
    file" (those three refuse before anything in DIR is changed), SPM_EIO
    "PATH: REASON" when a file or directory cannot be created, read or
    removed, SPM_ENOMEM. */
spm_journal_t *spm_journal_open(const char *dir, const uint8_t store_id[16]);

/*  Flushes what is buffered (an error of that flush is lost: flush first
    to see it), closes the files, frees the journal and sets *SELF to NULL.
    Does not sync. Does nothing when *SELF is NULL. */
void spm_journal_destroy(spm_journal_t **self_p);

/*  Appends record REC (LEN bytes, copied; REC may be NULL when LEN is 0) to
    job JOB's journal (job 0: the VM-wide one). Buffered in memory: nothing
    reaches the file before spm_journal_flush. Makes no system call. Returns
    0, SPM_ENOMEM, or SPM_EINVAL when LEN exceeds SPM_JOURNAL_MAX_RECORD. */
int spm_journal_append(spm_journal_t *self, uint64_t job, const void *rec, size_t len);

/*  Writes each job's buffered records to its file JOB.log with one write
    (created with its header on first use; a file found at open and not
    replayed is first cut to its intact prefix). From then the records
    survive a crash of this process; spm_journal_sync makes them survive a
    crash of the operating system. The first flush after spm_journal_reset
    writes the job's new file beside the old one, fdatasyncs it, and
    renames it over the old one. A file stays open after it is written
    until the bound of open files (spm_journal_set_max_open) closes it as
    one of the least recently written; a flush that opens a file may close
    others so (fdatasyncing those written since the last sync began). A
    job whose write fails keeps its records buffered (the next flush tries again) and
    its file is cut back to its last whole record; the others are written.
    Returns 0, or the first failure: SPM_EFULL "PATH: No space left on
    device" (or the file size limit), SPM_EIO "PATH: REASON". */
int spm_journal_flush(spm_journal_t *self);

/*  fdatasyncs every file written since the last sync began, and the
    directory when files were created, renamed or removed. A file closed
    meanwhile to keep within the bound was fdatasynced when it was closed;
    a failure then is returned by this sync (and by the one that was
    running then). May run on another thread than the other methods (one
    sync at a time). Returns 0 or SPM_EIO "PATH: REASON" (the first
    failure; the others are still synced). */
int spm_journal_sync(spm_journal_t *self);

/*  JOB's journal is no longer needed: its buffered records are dropped and
    its file deleted (the job ended and its report was delivered, or it was
    discarded). A JOB larger than any dropped before is kept as max_job.N
    first. Nothing to drop is no error. Returns 0 or SPM_EIO "PATH:
    REASON". */
int spm_journal_drop(spm_journal_t *self, uint64_t job);

/*  Starts JOB's journal afresh: its buffered records are dropped, and the
    next spm_journal_flush replaces its file by one holding only the records
    appended from now on (used to rewrite job 0's records when they pile up:
    the caller appends the live ones again). Until that flush the old file
    stays as it was, so a crash in between loses nothing. That flush costs
    one fdatasync on its thread (of the new file, before the rename): meant
    for occasional rewrites, not for every turn. Returns 0 or SPM_ENOMEM. */
int spm_journal_reset(spm_journal_t *self, uint64_t job);

/*  Reads back the files of the jobs found at open, as they are now (call it
    right after open: a file already written to since was cut to its intact
    prefix then, without a report; records still buffered are not read, nor
    jobs dropped or reset since). Job 0 first, then the others by increasing
    id, calling
    FN(ARG, JOB, REC, LEN) for each intact record of a job in the order they
    were appended, until FN returns non-zero for that job. A record the file
    ends inside (torn) or that is damaged (a bad length or checksum, or a bad
    file header) ends the job's records: what follows is not read, and is
    cut off the file, whether or not FN stopped early; the records FN did
    not see stay in the file. Fills *REPORT (REPORT may be NULL). Returns 0,
    or SPM_EIO "PATH: REASON" when a file cannot be read or cut (the jobs
    after it are not read then). */
int spm_journal_replay(spm_journal_t *self, spm_journal_fn fn, void *arg,
                       spm_journal_report_t *report);

/*  Keeps at most N job files open at once (SPM_JOURNAL_MAX_OPEN until
    set; an N of 0 counts as 1). When more are open, those of the least
    recently written jobs are closed now, as a flush would (a file written
    since the last sync began is fdatasynced first). A sync may be running
    meanwhile. */
void spm_journal_set_max_open(spm_journal_t *self, size_t n);

/*  The largest job id of the files found at open, of the old text journal,
    of the jobs dropped since the journal was created (max_job.N), or of a
    record appended since; 0 when none. */
uint64_t spm_journal_max_job(const spm_journal_t *self);

#endif
