/*  =========================================================================
    count - support counting of candidate itemsets over transactions

    @header
    A prefix tree (trie) over a sorted block of candidate k-itemsets, walked
    once per transaction: the support counting of CountBlockCandidatesSupport.
    @discuss
    Level d of the tree holds the distinct d-th items under each common
    prefix; a transaction descends only along its own items, so the cost
    per transaction is the number of its subsets that are prefixes of some
    candidate, not the number of candidates. When items are dense ranks
    (0 .. domain-1) the root and the last level are direct-indexed tables,
    which turns the two hottest levels into one array look-up per item.

        spm_mining_trie_t *t = spm_mining_trie_new(sets, k, n, domain);
        for each transaction: spm_mining_trie_count(t, items, len, weight, counts);
        spm_mining_trie_destroy(&t);
    @end
    =========================================================================
*/
#ifndef SPM_MINING_COUNT_H_INCLUDED
#define SPM_MINING_COUNT_H_INCLUDED

#include <stdint.h>

typedef struct spm_mining_trie spm_mining_trie_t;

/*  Builds the tree over N sorted, distinct K-itemsets at SETS (read during
    the call only). DOMAIN, when non-zero, bounds every item (item < DOMAIN)
    and enables the direct tables. Returns NULL when out of memory. */
spm_mining_trie_t *spm_mining_trie_new(const uint32_t *sets, uint32_t k, uint32_t n,
                                       uint32_t domain);

/*  Adds W to COUNTS[i] for every candidate i contained in the strictly
    increasing transaction ITEMS[0..LEN). COUNTS has one entry per set. T
    keeps scratch space: one thread at a time per tree. */
void spm_mining_trie_count(spm_mining_trie_t *t, const uint32_t *items, uint32_t len, uint64_t w,
                           uint64_t *counts);

/*  Frees *T and sets it to NULL. */
void spm_mining_trie_destroy(spm_mining_trie_t **t);

#endif
