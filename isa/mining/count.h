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
void spm_mining_trie_destroy(spm_mining_trie_t **self_p);

/*  Pair counting, the fastest kernel for 2-itemsets: a dense matrix of
    counters for the rows (first items) of the block over the whole domain,
    filled by a double loop over each transaction, read out per candidate at
    the end. _new returns NULL when the matrix would exceed 2^21 counters
    (or memory): use the tree then. */
typedef struct spm_mining_pairs spm_mining_pairs_t;
spm_mining_pairs_t *spm_mining_pairs_new(const uint32_t *sets, uint32_t n, uint32_t domain);
/*  Counts the pairs of the increasing transaction ITEMS[0..LEN) with
    weight W. Returns 0 or SPM_ENOMEM. */
int spm_mining_pairs_count(spm_mining_pairs_t *p, const uint32_t *items, uint32_t len, uint32_t w);
/*  Adds the counts of the N pairs at SETS (those given to _new) to COUNTS. */
void spm_mining_pairs_finish(const spm_mining_pairs_t *p, const uint32_t *sets, uint32_t n,
                             uint64_t *counts);
void spm_mining_pairs_destroy(spm_mining_pairs_t **self_p);

/*  Vertical counting, the alternative for long candidates. Each item of
    the candidates gets a bitset over a chunk of up to CAP transactions; a
    candidate's support is the popcount of the AND of its items' bitsets.
    Consecutive candidates share the AND of their common prefix, and only
    the prefix's non-zero words are visited, so rare prefixes cost little.

        v = spm_mining_vert_new(sets, k, n, domain, cap);
        while (transactions remain) {
            taken = spm_mining_vert_add(v, off, items, weight, nt);  // fills the chunk
            if (the chunk is full or input ended) spm_mining_vert_flush(v, counts);
        }
        spm_mining_vert_destroy(&v);

    SETS (N sorted, distinct K-itemsets, every item below DOMAIN) is
    borrowed until _destroy. _new returns NULL when out of memory. */
typedef struct spm_mining_vert spm_mining_vert_t;
spm_mining_vert_t *spm_mining_vert_new(const uint32_t *sets, uint32_t k, uint32_t n,
                                       uint32_t domain, uint32_t cap);
/*  Adds the first transactions of NT (OFF, ITEMS, WEIGHT as in a
    transaction block; OFF indexes ITEMS) while the chunk has room; returns
    how many it took. */
uint32_t spm_mining_vert_add(spm_mining_vert_t *v, const uint32_t *off, const uint32_t *items,
                             const uint32_t *weight, uint32_t nt);
/*  Adds the weighted supports in the chunk's transactions to COUNTS (one
    per set) and empties the chunk. */
void spm_mining_vert_flush(spm_mining_vert_t *v, uint64_t *counts);
void spm_mining_vert_destroy(spm_mining_vert_t **self_p);

/*  The whole vertical count in one call: adds to COUNTS the supports of the
    N K-itemsets at SETS in the NT transactions. Returns 0 or SPM_ENOMEM. */
int spm_mining_count_vertical(const uint32_t *sets, uint32_t k, uint32_t n, uint32_t domain,
                              const uint32_t *off, const uint32_t *items, const uint32_t *weight,
                              uint32_t nt, uint64_t *counts);

#endif
