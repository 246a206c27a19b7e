/*  =========================================================================
    output - fetching the results of an apriori job and writing them

    @header
    After the job, the client fetches the frequent-set blocks of every
    length and the sorted rule blocks (spm_session_get_each), maps
    ranks back to item numbers (or to names' first-appearance numbers),
    computes each rule's lift, and writes text, CSV or JSON, all sorted the
    same way: itemsets by length, then items; rules by antecedent (length,
    items), then consequent. Ranks go by support, so the order must be made
    again: itemsets and rules each go through an external merge sort
    (isa/core/extsort.h), all within SPM_MINE_SORT_BUDGET bytes, so the
    client's memory is bounded by the budget and one block, not by the
    output. Blocks already in output order (the depth-first miner's class
    blocks of a job without rules) are added to the sort as runs, which it
    merges instead of sorting.
    @discuss
    Lift needs s(Y) for each rule's consequent Y. When the itemsets fit in
    their budget they stay sorted in memory and s(Y) is a binary search.
    Otherwise the rules are first sorted by consequent and merge-joined
    against the itemsets' sorted stream (both in (length, items) order),
    which attaches s(Y), and then sorted into the output order: two external
    sorts, each bounded. Everything is fetched by spm_mine_fetch, so the VM
    can be released before writing; what does not fit waits in unlinked
    temporary files in $TMPDIR (else /tmp) until spm_mine_out_free.
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_OUTPUT_H_INCLUDED
#define SPM_APRIORI_OUTPUT_H_INCLUDED

#include <stdio.h>

#include "isa/core/extsort.h"
#include "isa/mining/sdb.h"
#include "programs/apriori/apriori.h"
#include "programs/apriori/reader.h"

/*  Bytes the sorts (itemsets, rules) hold in memory together before they
    spill sorted runs to temporary files: the itemsets up to half of it
    when there are rules, the rules what the itemsets leave (when they are
    sorted twice, for lift, each sort half of that while both are alive).
    The client's results take about this, plus one block (at most about
    SPM_APRIORI_RULE_BYTES) and the merge buffers. */
#define SPM_MINE_SORT_BUDGET ((size_t)32 << 20)

/*  Output formats: the text ones written here, NPZ (columns of NumPy
    arrays) by programs/apriori/columns.h. */
typedef enum { SPM_MINE_TEXT = 0, SPM_MINE_CSV, SPM_MINE_JSON, SPM_MINE_NPZ } spm_mine_format_t;

/*  Itemsets from which the runs are merged on a thread of their own while
    they are written (programs/apriori/ahead.h). Fetched to written,
    medians of 7: the dense set at 5% (8,020,425 itemsets in 163 runs)
    477 -> 365 ms; at 10% (670,780 in 35) no gain, 36.9 against 38.3 ms. */
#define SPM_MINE_AHEAD_SETS (1u << 20)

typedef struct {
    uint64_t ntrans;           /* transactions mined */
    uint64_t minsup;           /* absolute minimum support */
    double minconf;            /* minimum confidence */
    const spm_reader_t *names; /* named format: item number -> name (else NULL) */
    size_t budget;             /* bytes for all sorts (0: SPM_MINE_SORT_BUDGET) */
    const char *tmpdir;        /* temporary files (NULL: $TMPDIR, else /tmp) */
    /* How a block the get passes is kept past its callback without a copy
       (spm_session_keep): its handle, its bytes' place in *DATA and
       whether they are a file's mapped pages (*MAPPED), or NULL (copied
       then); and how the handle is freed. NULL: always copied. */
    void *(*keep)(void *vm, const void **data, int *mapped);
    void (*kept_free)(void *kept);
    spm_extsort_t *sets;        /* the itemsets, sorted (owned; set by fetch) */
    struct spm_mine_runs *runs; /* or, of a depth-first job without rules, its runs */
    spm_extsort_t *rules;       /* the rules with s(Y), sorted (owned; set by fetch) */
    uint64_t xitems, yitems;    /* items in all the rules' antecedents, consequents (by fetch) */
} spm_mine_out_t;

/*  One rule as spm_mine_next_rule gives it (items owned by the output). */
typedef struct {
    uint32_t xlen, ylen;       /* antecedent and consequent lengths */
    const uint32_t *x, *y;     /* their items, increasing */
    uint64_t supz, supx, supy; /* supports of X u Y, X and Y (0: Y not found) */
} spm_mine_rule_t;

/*  How results are fetched: spm_session_get_each, or spm_inproc_get in
    tests. Calls FN(ARG, I, DATA, LEN) with the newest version of each of
    the N blocks IDS[I] (DATA valid during the call only), in any order;
    stops at the first error, FN's or its own, and returns it. */
typedef int(spm_mine_get_fn)(void *vm, const spm_sdb_t *ids, size_t n,
                             int (*fn)(void *arg, size_t i, const void *data, size_t len),
                             void *arg);

/*  Fetches everything result R names, through GET on VM, a block at a time,
    into the sorts of O (ntrans, minsup, minconf, names, budget and tmpdir
    set by the caller), so that the VM is no longer needed afterwards.
    Returns 0, the SPM_E* of a failed get or a malformed block (SPM_EFORMAT,
    SPM_EPROTO), SPM_ENOMEM, or SPM_EIO (a temporary file could not be
    made, written or read; the detail says which directory). */
int spm_mine_fetch(spm_mine_get_fn *get, void *vm, const spm_apriori_result_t *r,
                   spm_mine_out_t *o);

/*  Writes the frequent itemsets / the rules of O to F in FORMAT, from the
    first. Return 0, or SPM_EIO when a write to F or a read of a temporary
    file failed. */
int spm_mine_write_itemsets(FILE *f, spm_mine_out_t *o, spm_mine_format_t format);
int spm_mine_write_rules(FILE *f, spm_mine_out_t *o, spm_mine_format_t format);

/*  The next itemset of O in output order: *K items at *ITEMS (owned by O,
    valid until the next call) with support *COUNT. The writers and fetch
    leave the cursor at the first. Returns 1, 0 after the last, or SPM_EIO. */
int spm_mine_next_itemset(spm_mine_out_t *o, uint32_t *k, const uint32_t **items, uint64_t *count);

/*  The next rule of O in output order into *R (items valid until the next
    call). Returns 1, 0 after the last, or SPM_EIO. */
int spm_mine_next_rule(spm_mine_out_t *o, spm_mine_rule_t *r);

/*  Numbers of itemsets and rules in O. */
uint64_t spm_mine_nitemsets(const spm_mine_out_t *o);
uint64_t spm_mine_nrules(const spm_mine_out_t *o);

/*  Frees the sorts of O and their temporary files. */
void spm_mine_out_free(spm_mine_out_t *o);

#endif
