/*  =========================================================================
    apriori - the super-program for association rules (dissertation Fig. 4.1)

    @header
    The program "mine" (named after the command that runs it, so that
    spm status, spm jobs, the dashboard and the metrics call its jobs what
    the user ran) mines frequent itemsets and rules from transaction
    blocks a client has staged in the VM's store. Its arguments and its
    result (the ids of the output SDBs) are encoded here, so that `spm mine`
    and the tests speak the same layout.
    @discuss
        spm_apriori_args_t a = {.minsup = 500, .minconf = 0.8, ...};
        spm_apriori_args_encode(&a, &bytes, &len);
        spm_session_run(s, SPM_APRIORI_PROGRAM, bytes, len, &res, &rlen);
        spm_apriori_result_decode(res, rlen, &r);
        -- r.levels[k - 1] are the BlockOfFrequentSet ids of length k,
        -- r.store the sorted BlockOfRules ids, r.fitems maps ranks to items;
        -- or, mined depth first for the itemsets alone, r.classes are
        -- BlockOfItemsets each in output order (items, not ranks): merge them.
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_H_INCLUDED
#define SPM_APRIORI_H_INCLUDED

#include "spm/spm.h"

#define SPM_APRIORI_PROGRAM "mine"

#define SPM_APRIORI_ITEMSETS_ONLY 1u /* frequent itemsets alone, no rules */

/*  Most candidates one level may have (joining the frequent k-itemsets);
    a job that would make more fails at once, saying how many. Counting
    this many takes minutes on a few IEUs; beyond it the search cannot end
    in reasonable time, and a higher support is the answer. */
#define SPM_APRIORI_MAX_CANDIDATES 200000000ull

/*  Bytes of rules one BlockOfRules holds, about: the memory of the rule
    SIs (and of the client fetching their blocks) follows the block, so
    however many rules a job finds, they come in blocks of this size.
    CheckConfidenceInBlock is issued over ranges of its sets Z small enough
    that every rule they could make fits (|Z| = k makes at most C(k, j)
    rules with |X| = j, each 24 + 4k bytes encoded), and StoreResult
    gathers rule blocks up to this many bytes (their counts come back in
    the replies). Jobs whose join_cap is below 65,536 (a test hook) use
    join_cap x 64 bytes instead, so that small tests split too. */
#define SPM_APRIORI_RULE_BYTES ((uint64_t)4 << 20)

/*  How the frequent itemsets are found: level by level (the dissertation's
    13 SIs), depth first per prefix class, or the one that suits the data. */
typedef enum {
    SPM_APRIORI_AUTO = 0,
    SPM_APRIORI_LEVELWISE = 1,
    SPM_APRIORI_ECLAT = 2
} spm_apriori_algorithm_t;

typedef struct {
    uint64_t ntrans;    /* transactions in the input */
    uint64_t minsup;    /* minimum support, absolute (>= 1) */
    double minconf;     /* minimum confidence, a fraction in [0, 1] */
    uint32_t maxcons;   /* longest consequent (0: any) */
    uint32_t maxlen;    /* longest itemset, and so rule (0: any) */
    uint32_t flags;     /* SPM_APRIORI_ITEMSETS_ONLY */
    uint32_t algorithm; /* spm_apriori_algorithm_t */
    uint32_t block;     /* transactions per block */
    uint32_t join_cap;  /* most candidates per join block (<= SPM_MINING_MAX_FSETS) */
    uint32_t nstaged;   /* staged blocks: BlockOfText or BlockOfTransaction */
    spm_sdb_t *staged;
    uint64_t rule_room; /* bytes of rules the client can sort (0: no bound) */
} spm_apriori_args_t;

/*  Encodes A into *DATA (malloc'd) and *LEN. Returns 0 or SPM_ENOMEM. */
int spm_apriori_args_encode(const spm_apriori_args_t *a, void **data, size_t *len);
/*  Decodes into *A (staged malloc'd; free with _free). Returns 0 or SPM_EINVAL. */
int spm_apriori_args_decode(const void *data, size_t len, spm_apriori_args_t *a);
void spm_apriori_args_free(spm_apriori_args_t *a);

typedef struct {
    uint32_t f1;        /* frequent items */
    spm_sdb_t fitems;   /* BlockOfItems: the frequent items, rank order (0: none) */
    uint32_t nlevels;   /* lengths with frequent sets */
    uint32_t *nblocks;  /* per length: blocks */
    spm_sdb_t **levels; /* per length: BlockOfFrequentSet ids */
    uint32_t nstore;    /* sorted BlockOfRules ids */
    spm_sdb_t *store;
    /* Depth first with the itemsets alone: the sets of length >= 2 (levels
       then holds length 1 alone) as blocks of items in output order, one
       run per class: its BlockOfItemsets. */
    uint32_t nclasses;
    spm_sdb_t *classes;
} spm_apriori_result_t;

int spm_apriori_result_encode(const spm_apriori_result_t *r, void **data, size_t *len);
/*  Returns 0 or SPM_EPROTO. */
int spm_apriori_result_decode(const void *data, size_t len, spm_apriori_result_t *r);
void spm_apriori_result_free(spm_apriori_result_t *r);

#endif
