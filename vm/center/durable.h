/*  =========================================================================
    durable - what makes the center's work outlive the center

    @header
    A center killed at any moment (kill -9, a power cut) and started again
    on the same store resumes every job. This class wires that: it opens the
    store's journal (vm/journal), hands the IDU's events to it
    (spm_idu_set_recorder), replays every job's events into the IDU at
    start (spm_idu_replay), writes the journal once per turn of the loop,
    syncs the store and the journal to disk by the --sync-ms policy (in
    the loop, or in the syncer's thread), compacts the journal as jobs end
    and clients discard, and holds back garbage (block versions the IDU
    found nobody reads) until the events that made it garbage are on disk:
    a block is never deleted while a restart could still need it. A
    discarded SDB's blocks (version 0) do not wait: no restart needs them
    (durable.c says why), and on a full disk the journal may never be
    written.
    @discuss
        spm_durable_t *d = spm_durable_open(store, dir, store_id, &opts);
        spm_durable_resume(d, idu, &rep);          // before any peer is heard
        per loop turn:
            ... commits ...; spm_durable_garbage(d, id, version) for each
            spm_durable_turn(d, now, store_dirty, release_to_dataplane, arg);
        job_done:     spm_durable_flush(d) before the report leaves
        report sent:  spm_durable_reported(d, idu, job)
        DISCARD:      spm_durable_discarded(d, jobs, n)
        spm_durable_destroy(&d);                     // writes and syncs the rest
    With the journal off (--no-journal) nothing is recorded or resumed and
    garbage goes at once; syncing is as before.
    @end
    =========================================================================
*/
#ifndef SPM_DURABLE_H_INCLUDED
#define SPM_DURABLE_H_INCLUDED

#include "datacache/store.h"
#include "idu/idu.h"

#include <stdint.h>

typedef struct spm_durable spm_durable_t;

typedef struct {
    int journal;      /* record events and resume jobs after a restart */
    int no_sync;      /* never flush to disk (a store thrown away at the end) */
    uint64_t sync_us; /* flush at most this long after a change (0: every turn, in the loop) */
} spm_durable_opts_t;

/*  What a start found in the journal and did with it. */
typedef struct {
    uint64_t jobs;          /* jobs with events in the journal */
    uint64_t resumed;       /* of which running again now */
    uint64_t ended;         /* of which ended before the crash (their reports wait) */
    uint64_t kept;          /* of which reported before the crash: their blocks known again */
    uint64_t failed;        /* of which could not be resumed (failed, one line each) */
    uint64_t records;       /* events read back */
    uint64_t taken;         /* commits taken from the journal */
    uint64_t reissued;      /* SIs in flight at the crash, to be issued again */
    uint64_t damaged_files; /* journal files with a torn or damaged tail */
    uint64_t bytes_skipped; /* bytes of those tails */
    uint64_t us;            /* time the replay took */
} spm_durable_resume_t;

/*  A job resumed from a journal file whose tail was cut or damaged. */
typedef struct {
    uint64_t job;
    uint64_t bytes_lost; /* bytes of the file after its intact records */
    uint64_t records;    /* intact records it was resumed from */
} spm_durable_cut_t;

/*  Called with each garbage version once the events that made it garbage
    are on disk. */
typedef void (*spm_durable_release_fn)(void *arg, spm_sdb_t id, uint64_t version);

/*  Opens what the center keeps beside STORE (opened from directory DIR,
    identity STORE_ID): the journal when O->journal, and the syncer's thread
    when O->sync_us > 0. Returns the object, or NULL with the detail set to
    one line (a journal of another store or format version, which is
    refused before anything is changed; a directory that cannot be
    written; a thread that cannot start). */
spm_durable_t *spm_durable_open(spm_store_t *store, const char *dir, const uint8_t store_id[16],
                                const spm_durable_opts_t *o);

/*  Writes and syncs what is left (unless no_sync), stops the syncer, closes
    the journal, frees *SELF and sets it to NULL. */
void spm_durable_destroy(spm_durable_t **self_p);

/*  Replays the journal into IDU (which must have no jobs yet): job ids
    continue above the largest ever given, the clients' puts are known
    again, every job that was running runs on from its events, jobs that
    ended wait for their reports, reported ones have their blocks known
    again. Then records IDU's events from here on. Fills *R. Returns 0, or
    SPM_EIO with the detail set when the journal cannot be read (the center
    must not start: jobs would be lost). A job that cannot be resumed is
    failed by the IDU with the reason, and logged in one line. */
int spm_durable_resume(spm_durable_t *self, spm_idu_t *idu, spm_durable_resume_t *r);

/*  Writes the events recorded so far to the journal (survives a crash of
    the process from here). Called once per turn by spm_durable_turn, and
    before anything that tells the world about those events leaves (a
    report). */
void spm_durable_flush(spm_durable_t *self);

/*  Block version (ID, VERSION) is garbage: it is released with
    spm_durable_turn once the events that made it so are on disk. VERSION
    0 (every version of a discarded SDB) is released at the next
    spm_durable_turn, whether or not the journal could be written. */
void spm_durable_garbage(spm_durable_t *self, spm_sdb_t id, uint64_t version);

/*  Once per turn of the loop, after the turn's commits and once the IDU
    picked the SIs to send (spm_idu_pump), before they are sent: writes the
    journal when the IDU made SIs or ids since it was last written (they
    are about to leave), else at most every 10 ms (a turn that only took
    commits can wait: what it recorded is done again if it is lost); when
    the store (STORE_DIRTY) or the journal changed and the policy says so,
    syncs (or asks the syncer to); compacts job 0's records when they pile
    up; hands the garbage whose causes are written and synced to RELEASE.
    NOW is spm_now_us(). */
void spm_durable_turn(spm_durable_t *self, uint64_t now, int store_dirty,
                      spm_durable_release_fn release, void *arg);

/*  The jobs spm_durable_resume resumed from a cut journal file (their
    events after the cut are lost, and with them the reason some block
    versions were deleted as garbage: the caller checks that what they
    need is still there). Sets *CUT (owned by SELF) and returns how many. */
size_t spm_durable_cut(const spm_durable_t *self, const spm_durable_cut_t **cut);

/*  JOB's report reached its client: its events are replaced by the list of
    its blocks that are still there (or dropped, when none are). */
void spm_durable_reported(spm_durable_t *self, spm_idu_t *idu, uint64_t job);

/*  A client discarded the N JOBS' blocks: their journals go. */
void spm_durable_discarded(spm_durable_t *self, const uint64_t *jobs, size_t n);

#endif
