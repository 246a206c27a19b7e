/*  =========================================================================
    columns - itemsets and rules written as columns of NumPy arrays (.npz)

    @header
    `spm mine ... -o rules.npz --itemsets sets.npz` (or --format npz)
    writes the results as an .npz archive (isa/core/npz.h) of one array
    per column, which numpy.load reads without parsing and a data-frame
    library takes as it is. A variable-length column (a set's items) is a
    flat array of all the items plus an array of n + 1 offsets, as Arrow
    lays out its lists: set i's items are items[offsets[i]:offsets[i+1]].
    @discuss
    Itemsets: items (uint32, flat), offsets (int64, n + 1), support
    (int64). Rules: antecedent and consequent (uint32, flat), with
    antecedent_offsets and consequent_offsets (int64, n + 1), support
    (int64), confidence and lift (float64, unrounded). Both also hold
    transactions and min_support (int64 scalars), the rules min_confidence
    (float64), and with --names `names` (bytes, one per item number: an
    item's name is names[item]). The order is the text output's.

        z = numpy.load("sets.npz")
        df = pandas.DataFrame({"items": numpy.split(z["items"], z["offsets"][1:-1]),
                               "support": z["support"]})
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_COLUMNS_H_INCLUDED
#define SPM_APRIORI_COLUMNS_H_INCLUDED

#include "base/textio.h"
#include "programs/apriori/output.h"

/*  Writes the frequent itemsets / the rules of O, from the first, as an
    .npz into OUT (a regular file, not "-"; the caller commits it).
    Return 0, or SPM_ENOMEM, or SPM_EIO / SPM_EFULL (a write to OUT, a
    read of a temporary file) with the detail. */
int spm_mine_write_itemsets_npz(spm_outfile_t *out, spm_mine_out_t *o);
int spm_mine_write_rules_npz(spm_outfile_t *out, spm_mine_out_t *o);

#endif
