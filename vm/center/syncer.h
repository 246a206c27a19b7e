/*  =========================================================================
    syncer - flushes the center's store and journal to disk off its loop

    @header
    With `--sync-ms N` (N > 0) the center promises that a commit reaches the
    disk at most N ms after it is made; until then it is in the operating
    system's cache, safe from any process crash. Flushing hundreds of MiB of
    freshly staged blocks takes hundreds of milliseconds, during which a
    center that synced in its own loop could neither hand out SIs nor take
    results. The syncer does the flushing in a thread of its own: the loop
    only asks (spm_syncer_kick), and a flush that is still running when the
    next request comes is followed by one more.
    @discuss
        spm_syncer_t *s = spm_syncer_new(store, journal);
        uint64_t k = spm_syncer_kick(s);   // from the loop, after commits
        if (spm_syncer_done(s) >= k) ...    // what was written before the kick is on disk
        spm_syncer_destroy(&s);            // waits for a running flush
    Errors (a full disk) are logged by the thread, as the loop's own flush
    did; the next commit's write reports them to the job.
    @end
    =========================================================================
*/
#ifndef SPM_SYNCER_H_INCLUDED
#define SPM_SYNCER_H_INCLUDED

#include "datacache/store.h"

#include <stdint.h>
#include "vm/center/journal.h"

typedef struct spm_syncer spm_syncer_t;

/*  Starts the thread. STORE and JOURNAL (NULL: none) must outlive the syncer. Returns
    NULL when the thread cannot start. */
spm_syncer_t *spm_syncer_new(spm_store_t *store, spm_journal_t *journal);

/*  Asks for a flush of both; returns at once, with the number of this
    request (1, 2, ...). */
uint64_t spm_syncer_kick(spm_syncer_t *self);

/*  The number of the last request whose flush has finished: everything
    written before that request was made is on disk (0: none yet). */
uint64_t spm_syncer_done(spm_syncer_t *self);

/*  Finishes a running flush, stops the thread and frees *SELF. */
void spm_syncer_destroy(spm_syncer_t **self_p);

#endif
