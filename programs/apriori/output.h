/*  =========================================================================
    output - fetching the results of an apriori job and writing them

    @header
    After the job, the client fetches the frequent-set blocks of every
    length and the sorted rule blocks (spm_session_get), maps ranks back to
    item numbers (and sorts again, as ranks go by support), or to names, computes each rule's lift
   from the supports it now holds, and writes text, CSV or JSON, all sorted the same way: itemsets
   by length, then items; rules by antecedent (length, items), then consequent.
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_OUTPUT_H_INCLUDED
#define SPM_APRIORI_OUTPUT_H_INCLUDED

#include <stdio.h>

#include "isa/mining/sdb.h"
#include "programs/apriori/apriori.h"
#include "programs/apriori/reader.h"

typedef enum { SPM_MINE_TEXT = 0, SPM_MINE_CSV, SPM_MINE_JSON } spm_mine_format_t;

typedef struct {
    uint64_t ntrans;           /* transactions mined */
    uint64_t minsup;           /* absolute minimum support */
    double minconf;            /* minimum confidence */
    uint32_t nlv;              /* lengths with frequent sets */
    spm_mining_sets_t *lv;     /* lv[k - 1]: all frequent k-sets, items, sorted */
    spm_mining_rules_t rules;  /* all rules, items, sorted */
    const spm_reader_t *names; /* named format: item number -> name (else NULL) */
} spm_mine_out_t;

/*  How results are fetched: spm_session_get, or spm_inproc_get in tests.
    Copies the newest version of ID into *DATA (malloc'd) and *LEN. */
typedef int(spm_mine_get_fn)(void *vm, spm_sdb_t id, void **data, size_t *len);

/*  Fetches everything result R names, through GET on VM, into O (arrays
    malloc'd). Returns 0 or the SPM_E* of a failed get or a malformed block. */
int spm_mine_fetch(spm_mine_get_fn *get, void *vm, const spm_apriori_result_t *r,
                   spm_mine_out_t *o);

/*  Writes the frequent itemsets / the rules of O to F in FORMAT. Return 0,
    or SPM_EIO when a write failed. */
int spm_mine_write_itemsets(FILE *f, const spm_mine_out_t *o, spm_mine_format_t format);
int spm_mine_write_rules(FILE *f, const spm_mine_out_t *o, spm_mine_format_t format);

/*  Number of itemsets in O. */
uint64_t spm_mine_nitemsets(const spm_mine_out_t *o);

void spm_mine_out_free(spm_mine_out_t *o);

#endif
