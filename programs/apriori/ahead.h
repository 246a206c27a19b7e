/*  =========================================================================
    ahead - the itemsets of a mining result, merged on a thread of their own

    @header
    Writing millions of itemsets is two halves of about equal cost: merging
    the class runs (programs/apriori/runs.h) and formatting the lines. With
    the job done the IEUs are idle, so a thread of the client merges ahead
    into a few batches while the caller formats: the sets come out as
    spm_mine_next_itemset gives them, in the same order.
    @discuss
        spm_mine_ahead_t *a = spm_mine_ahead_start(o);   -- NULL: read o itself
        while ((rc = spm_mine_ahead_next(a, &k, &items, &count)) == 1)
            ...
        spm_mine_ahead_destroy(&a);
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_AHEAD_H_INCLUDED
#define SPM_APRIORI_AHEAD_H_INCLUDED

#include "programs/apriori/output.h"

typedef struct spm_mine_ahead spm_mine_ahead_t;

/*  Starts the thread reading O's itemsets from its cursor on. O is the
    thread's until spm_mine_ahead_destroy. NULL when out of memory or no
    thread could be made (the caller then reads O itself). */
spm_mine_ahead_t *spm_mine_ahead_start(spm_mine_out_t *o);

/*  The next itemset, as spm_mine_next_itemset gives it (ITEMS valid until
    the next call). Returns 1, 0 after the last, or its error. */
int spm_mine_ahead_next(spm_mine_ahead_t *a, uint32_t *k, const uint32_t **items, uint64_t *count);

/*  Stops the thread (at once, if it is still reading) and frees A. */
void spm_mine_ahead_destroy(spm_mine_ahead_t **self_p);

#endif
