/*  =========================================================================
    runs - the depth-first miner's class blocks, merged into output order

    @header
    A job that wants the itemsets alone returns them as runs: the frequent
    items, then one run per class (its BlockOfItemsets), every run already
    in output order (by length, then items). The client keeps the blocks as they came, front coded
    (isa/mining/sdb.h), and merges the runs through a tree of losers as it
    writes, a set at a time: nothing is decoded whole, copied into records
    or sorted. Runs that follow one another (classes walked by position)
    cost one comparison a set.
    Blocks are held in memory up to a budget; the rest go, as they are, to
    one unlinked temporary file that the merge maps and reads in order.
    @discuss
        spm_mine_runs_t *r = spm_mine_runs_new(budget, tmpdir, bits);
        spm_mine_runs_add(r, block, len, 0, free, block);   -- a run (takes block)
        spm_mine_runs_start(r);                  -- from the first set
        while ((rc = spm_mine_runs_next(r, &k, &items, &count)) == 1)
            ...
        spm_mine_runs_destroy(&r);

    Memory is the budget, plus per run its reader and one set, plus the
    pages of the file the merge has touched since it last dropped them
    (every SPM_MINE_RUNS_DROP sets).
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_RUNS_H_INCLUDED
#define SPM_APRIORI_RUNS_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/*  Sets merged between two drops of the file's mapped pages. */
#define SPM_MINE_RUNS_DROP (1u << 20)

typedef struct spm_mine_runs spm_mine_runs_t;

/*  Runs held in BUDGET bytes, spilling to a file in DIR (NULL: $TMPDIR,
    else /tmp); items below 2^BITS (for the merge's keys). NULL when out of
    memory. */
spm_mine_runs_t *spm_mine_runs_new(size_t budget, const char *dir, unsigned bits);

/*  spm_mine_runs_add's FLAGS: the bytes are a file's mapped pages (a
    store read in place), kept where they are whatever the budget: copying
    them to the temporary file would only make a second file of them. */
#define SPM_MINE_RUN_MAPPED 1u

/*  Adds the LEN bytes at DATA, a BlockOfItemsets or BlockOfFrequentSet,
    as a run. OWNER holds them (DATA itself when malloc'd, with RELEASE
    free); R owns it from now on, even on failure, and calls RELEASE(OWNER)
    once the bytes are no longer needed (at once, when they go to the
    temporary file). Bytes in memory count against the budget unless
    FLAGS has SPM_MINE_RUN_MAPPED. Checks the block's framing; its sets
    are checked as they are merged. Returns 0, SPM_EFORMAT, SPM_ENOMEM or
    SPM_EIO (the temporary file). */
int spm_mine_runs_add(spm_mine_runs_t *r, const void *data, size_t len, unsigned flags,
                      void (*release)(void *), void *owner);

/*  (Re)starts the merge at the first set. Returns 0, SPM_ENOMEM or SPM_EIO. */
int spm_mine_runs_start(spm_mine_runs_t *r);

/*  The next set in output order: *K items at *ITEMS (valid until the next
    call) with support *COUNT. Returns 1, 0 after the last, or SPM_EFORMAT
    (a block malformed). */
int spm_mine_runs_next(spm_mine_runs_t *r, uint32_t *k, const uint32_t **items, uint64_t *count);

/*  List S of K items, each below 2^B, as an integer in output order (a
    before b implies key(a) <= key(b)): its length in the top 13 bits
    (SPM_MINING_MAX_K is below 2^13), then as many whole items as fit. */
uint64_t spm_mine_list_key(const uint32_t *s, uint32_t k, unsigned b);

/*  Sets in all the runs. */
uint64_t spm_mine_runs_count(const spm_mine_runs_t *r);

void spm_mine_runs_destroy(spm_mine_runs_t **self_p);

#endif
