/*  =========================================================================
    history - the center's record of every job, running and ended, kept
    across restarts (what `spm jobs` and `spm show` list, as sacct does
    Slurm's)

    @header
    One record per job (transport/spm.proto, JobRecord): its program,
    owner, state, times, progress, and once it ended its report, so that
    `spm wait` and `spm show` answer as often as they are asked and a
    restarted center knows what ended before it. The records are kept in
    memory and, given a directory, in an LMDB environment of their own
    there (STORE/history), written at the end of the turn that changed
    them. Without a directory (a center with --no-journal) they last as
    long as the process.
    @discuss
        spm_history_t *h = spm_history_open(dir, &opts);
        Spm__JobRecord *r = spm_history_add(h, job);    // at submit
        ... set r's fields (spm_history_set_str for strings) ...
        spm_history_touch(h, r);                         // it changed
        spm_history_write(h, 1);                         // end of the turn
        spm_history_prune(h, now_unix_us);               // once in a while
        spm_history_destroy(&h);
    Records are protobuf-c messages owned by the history: their strings
    and their report are malloc'd (set them with spm_history_set_str and
    spm_history_set_report), never pointers the caller keeps.

    Retention: an ended record goes once it is older than max_age_s, or
    once max_jobs ended records are newer than it, but only when its
    blocks are gone (`freed`): a record is how the center finds the blocks
    to free, so it outlives them. A running job's record is never pruned.
    @end
    =========================================================================
*/
#ifndef SPM_HISTORY_H_INCLUDED
#define SPM_HISTORY_H_INCLUDED

#include "transport/spm.pb-c.h"

#include <stddef.h>
#include <stdint.h>

typedef struct spm_history spm_history_t;

typedef struct {
    uint64_t max_jobs;  /* ended records kept (center.history_jobs) */
    uint64_t max_age_s; /* ... for at most this long after they ended (center.history_days) */
    int no_sync;        /* never flush to disk (a store thrown away at the end) */
} spm_history_opts_t;

/*  Opens the history in DIR/history (created 0700), reading back every
    record there; DIR NULL keeps the records in memory only. Returns the
    history (spm_history_destroy), or NULL with the detail set: SPM_EIO
    "DIR/history: reason", SPM_ESTORE for an LMDB failure, SPM_ENOMEM. A
    record that does not decode is skipped with one warning. */
spm_history_t *spm_history_open(const char *dir, const spm_history_opts_t *o);

/*  Writes what changed (spm_history_write), frees everything and sets
 *SELF_P to NULL. Does nothing on NULL. */
void spm_history_destroy(spm_history_t **self_p);

/*  JOB's record (owned by the history, valid until it is pruned), or
    NULL. */
Spm__JobRecord *spm_history_get(spm_history_t *self, uint64_t job);

/*  A new record for JOB, state "running", every other field empty (an
    older record of JOB is replaced). Returns it, or NULL when out of
    memory. It is written at the next spm_history_write. */
Spm__JobRecord *spm_history_add(spm_history_t *self, uint64_t job);

/*  Sets string *FIELD of a record to a copy of VALUE (NULL: ""). Returns
    0 or SPM_ENOMEM (the field is then ""). */
int spm_history_set_str(char **field, const char *value);

/*  Makes REPORT (packed: the LEN bytes at BYTES) R's report, replacing
    any. Returns 0, or SPM_ENOMEM / SPM_EFORMAT (R keeps no report). */
int spm_history_set_report(Spm__JobRecord *r, const void *bytes, size_t len);

/*  R changed: it is written at the next spm_history_write. */
void spm_history_touch(spm_history_t *self, Spm__JobRecord *r);

/*  Writes every record touched since the last write in one LMDB
    transaction, and with SYNC (unless no_sync) flushes it to disk. Returns
    0, or SPM_EFULL / SPM_ESTORE / SPM_EIO with the detail set (the records
    stay touched and are tried again at the next write). */
int spm_history_write(spm_history_t *self, int sync);

/*  Fills up to MAX records, newest job first, into OUT (pointers owned by
    the history); returns how many there are. */
size_t spm_history_list(spm_history_t *self, Spm__JobRecord **out, size_t max);

/*  Drops the ended records that retention lets go at NOW_US (Unix
    microseconds); see the header. Returns how many went. */
size_t spm_history_prune(spm_history_t *self, uint64_t now_us);

/*  Readers on another thread (the dashboard's job pages, on the HTTP
    server's thread). They read the records as last written by
    spm_history_write, in an LMDB read transaction of their own, and
    touch nothing the center's thread uses: they may run while it writes.
    A history in memory only (no directory) has nothing to read. */

/*  JOB's record as last written (the caller frees it with
    spm__job_record__free_unpacked(r, NULL)), or NULL: no such record, a
    history in memory only, a record that does not decode, or out of
    memory. */
Spm__JobRecord *spm_history_read(spm_history_t *self, uint64_t job);

/*  Calls FN(ARG, R) for each record as last written, newest job first,
    up to MAX of them; R is valid during the call only. Returns how many
    were visited, or -1 for a history in memory only or an LMDB failure. */
long spm_history_read_each(spm_history_t *self, size_t max,
                           void (*fn)(void *arg, const Spm__JobRecord *r), void *arg);

/*  The largest job id of a record read back at open (0: none). */
uint64_t spm_history_max_job(const spm_history_t *self);

/*  The current time in Unix microseconds (the unit of the records). */
uint64_t spm_history_now(void);

/*  Whether R's state is one of the ended ones (done, failed, canceled). */
int spm_history_ended(const Spm__JobRecord *r);

#endif
