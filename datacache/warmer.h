/*  =========================================================================
    warmer - prepares the store's file ahead of its data, in idle time

    @header
    A block committed to the store is copied into the operating system's
    page cache, into pages of the data file that do not exist yet. Creating
    them is the expensive part of the write on a virtual machine that hands
    free memory back to its host (free page reporting, as on Firecracker and
    many cloud VMs). LMDB writes a large block in one call, for which Linux
    takes 2 MiB pages (large folios), which are fresh there: 8 MiB writes
    into a new file ran at 370-470 MB/s on the development machine, 256 KiB
    writes at 5.1-5.6 GB/s, and 8 MiB writes into pages that already exist
    at 3.9 GB/s.

    The warmer keeps AHEAD bytes past the end of the store's data allocated
    on disk (fallocate, which never shrinks the file and writes nothing) and
    in the page cache (readahead of those unwritten, all-zero extents: no
    disk I/O), so that the blocks the store writes next land in pages that
    exist. It works in a thread of its own, only while the VM is quiet (no
    job running: the seconds a client spends reading its input files and
    staging them) and at the idle scheduling class. During a job it waits:
    its file-system calls take the file's lock, which the writers of the
    store would then wait for.
    @discuss
        spm_warmer_t *w = spm_warmer_start(dir, 256 << 20);
        spm_warmer_note(w, spm_store_data_end(store), jobs == 0); // in the loop
        spm_warmer_destroy(&w);

    The thread never calls LMDB (whose map may move when the store grows):
    the owner of the store tells it where the data ends. It never takes more
    than an eighth of the disk's free space or of the free memory, stays well
    below a file-size limit (RLIMIT_FSIZE), and stops for good at the first
    refusal (a file system without fallocate, a full disk): the store then
    simply writes into fresh pages. The pages it prepared are clean page
    cache, which the kernel may reclaim at any time; the allocated tail of
    the file reads as zeros and LMDB reuses it as it grows.
    @end
    =========================================================================
*/
#ifndef SPM_WARMER_H_INCLUDED
#define SPM_WARMER_H_INCLUDED

#include <stdint.h>

typedef struct spm_warmer spm_warmer_t;

/*  Starts keeping AHEAD bytes past the data's end of the store in DIR
    prepared (nothing is done before the first spm_warmer_note). Returns
    NULL when AHEAD is under 8 MiB or the thread cannot start (the store
    works as before). */
spm_warmer_t *spm_warmer_start(const char *dir, uint64_t ahead);

/*  Where the store's data ends now (spm_store_data_end) and whether the VM
    is QUIET (no job running): the warmer works only while it is. Cheap: the
    owner calls it from its loop. Does nothing when SELF is NULL. */
void spm_warmer_note(spm_warmer_t *self, uint64_t data_end, int quiet);

/*  Bytes prepared so far (for tests and the log). */
uint64_t spm_warmer_prepared(spm_warmer_t *self);

/*  Stops the thread (a chunk in progress finishes first) and frees *SELF.
    Does nothing when *SELF is NULL. */
void spm_warmer_destroy(spm_warmer_t **self_p);

#endif
