/*  =========================================================================
    extsort - sorting more records than fit in memory, in a fixed budget

    @header
    An external merge sort of variable-length records under a comparator.
    Records are added into a buffer of at most BUDGET bytes (records and
    their index together); when the next record would not fit, the buffer
    is sorted and written as a run to an unnamed temporary file. At the end
    the runs are merged through a heap, SPM_EXTSORT_FANIN at a time (more
    runs than that are first merged into longer runs), and the records come
    back in order, one at a time. When everything fits in one buffer no
    file is ever made and the records are sorted in place: small inputs pay
    nothing for the bound.
    @discuss
        spm_extsort_t *s = spm_extsort_new(64 << 20, NULL, cmp, arg);
        spm_extsort_add(s, rec, len);            -- as often as needed
        spm_extsort_sort(s);                     -- input ends
        while ((rc = spm_extsort_next(s, &rec, &len)) == 1)
            use(rec, len);                       -- in CMP order
        spm_extsort_rewind(s);                   -- once more, from the start
        spm_extsort_destroy(&s);

    Temporary files are made in DIR (NULL: $TMPDIR, else /tmp) with
    mkstemp and unlinked at once, so nothing is left behind by any exit,
    a crash included; their space is freed when the sort is destroyed.
    Memory is the budget, plus one read buffer and one record per run
    being merged (SPM_EXTSORT_FANIN × SPM_EXTSORT_IOBUF at most). Records
    are returned 8-byte aligned; equal records come back in no fixed order.
    @end
    =========================================================================
*/
#ifndef SPM_EXTSORT_H_INCLUDED
#define SPM_EXTSORT_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/*  Runs merged at once, and the stdio buffer of each run file. */
#define SPM_EXTSORT_FANIN 64
#define SPM_EXTSORT_IOBUF (64 << 10)

/*  Longest record (its length is kept in 24 bits of the index). */
#define SPM_EXTSORT_MAX_RECORD ((1u << 24) - 1)

typedef struct spm_extsort spm_extsort_t;

/*  Orders records A and B (<0, 0, >0), as for qsort_r. Records carry their
    own lengths where they vary. */
typedef int(spm_extsort_cmp_fn)(const void *a, const void *b, void *arg);

/*  A sort of records under CMP (called with ARG) that holds at most BUDGET
    bytes of records in memory, spilling runs to temporary files in DIR
    (NULL: $TMPDIR or /tmp; the string is copied). Returns NULL when out of
    memory. */
spm_extsort_t *spm_extsort_new(size_t budget, const char *dir, spm_extsort_cmp_fn *cmp, void *arg);

/*  Bytes free to an unprivileged writer where a sort given DIR spills its
    runs (as for spm_extsort_new), or UINT64_MAX when that cannot be told. */
uint64_t spm_extsort_room(const char *dir);

/*  A 64-bit prefix of record REC's place in the order: CMP(a, b) < 0 must
    imply KEY(a) <= KEY(b). */
typedef uint64_t(spm_extsort_key_fn)(const void *rec, void *arg);

/*  Sorts by KEY (called with ARG) first, calling CMP only where keys tie:
    most comparisons then stay in one array of integers. Each record costs
    8 bytes more of the budget. Only before the first record. */
void spm_extsort_set_key(spm_extsort_t *self, spm_extsort_key_fn *key, void *arg);

/*  Begins a run: the records added from now until the next call come in
    order already (CMP never puts one before the one added before it).
    Once it was called, every record added belongs to the run begun last.
    Where every record of the buffer came in runs, the runs are merged
    through a heap instead of sorted (for that moment the index takes
    twice its room); a record out of its run's order is noticed as it is
    added, and that buffer is sorted: the order never depends on the
    caller's claim. Only before spm_extsort_sort. Returns 0 or
    SPM_ENOMEM. */
int spm_extsort_run(spm_extsort_t *self);

/*  Copies the LEN bytes at REC in (1 <= LEN <= SPM_EXTSORT_MAX_RECORD),
    first writing the buffer out as a run when REC would not fit. Only
    before spm_extsort_sort. Returns 0, SPM_ERANGE (too long), SPM_ENOMEM,
    or SPM_EIO (a temporary file could not be made or written; the detail
    names the directory and the reason). */
int spm_extsort_add(spm_extsort_t *self, const void *rec, size_t len);

/*  Ends the input and sorts: in memory when no run was written, else the
    last run is written and the runs are merged down to at most
    SPM_EXTSORT_FANIN. The cursor is at the first record. Returns 0,
    SPM_ENOMEM or SPM_EIO. */
int spm_extsort_sort(spm_extsort_t *self);

/*  Sets *REC and *LEN to the next record in order (owned by SELF, valid
    until the next call). Returns 1, 0 after the last record, or SPM_EIO
    (a run could not be read back). Only after spm_extsort_sort. */
int spm_extsort_next(spm_extsort_t *self, const void **rec, size_t *len);

/*  Puts the cursor back at the first record. Returns 0 or SPM_EIO. */
int spm_extsort_rewind(spm_extsort_t *self);

/*  The record equal to KEY under CMP, or NULL. Only when everything was
    sorted in memory (spm_extsort_runs is 0), after spm_extsort_sort;
    binary search, independent of the cursor. */
const void *spm_extsort_find(const spm_extsort_t *self, const void *key);

/*  Records added. */
uint64_t spm_extsort_count(const spm_extsort_t *self);

/*  Runs written to temporary files so far (0: all in memory). */
uint64_t spm_extsort_runs(const spm_extsort_t *self);

/*  Bytes SELF holds in memory now: its buffer and index as allocated, and
    the read buffers and records of the runs. */
size_t spm_extsort_memory(const spm_extsort_t *self);

/*  Frees SELF and its temporary files, and sets *SELF_P to NULL. */
void spm_extsort_destroy(spm_extsort_t **self_p);

#endif
