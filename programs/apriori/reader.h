/*  =========================================================================
    reader - streaming transaction input: FIMI numbers or named items

    @header
    Reads a transaction database one line (one transaction) at a time,
    never the whole file. FIMI format: items are non-negative integers
    separated by spaces or tabs (read by isa/mining/fimi.h, as
    LoadDataBlock reads the text blocks `spm mine` stages for them). Named
    format (--names): items are any words without blanks, mapped to
    integers in order of first appearance and back for output; `spm mine`
    reads such a file with this reader and stages transaction blocks.
    @discuss
    CRLF line ends are accepted and an empty line is an empty transaction.
    Items are returned as read (a repeated item is repeated; the VM drops
    repeats in LoadDataBlock). A malformed item, a negative or too large
    number, or a last line without a line end (a truncated file) fail with
    SPM_EFORMAT and a "PATH:LINE: ..." detail.

        spm_reader_t *r = spm_reader_open("T10I4D100K.dat", 0);
        const uint32_t *items; size_t n;
        while ((rc = spm_reader_next(r, &items, &n)) == 1) ...
        spm_reader_destroy(&r);
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_READER_H_INCLUDED
#define SPM_APRIORI_READER_H_INCLUDED

#include "isa/mining/fimi.h"

#include <stddef.h>
#include <stdint.h>

typedef struct spm_reader spm_reader_t;

/*  Largest item number accepted (the item domain must fit in 32 bits). */
#define SPM_READER_MAX_ITEM SPM_MINING_FIMI_MAX_ITEM

/*  Opens PATH ("-": stdin); NAMES selects the named format. Returns NULL
    with the detail set (SPM_EIO for a missing file, SPM_ENOMEM). */
spm_reader_t *spm_reader_open(const char *path, int names);

/*  Reads the next transaction into *ITEMS (valid until the next call) and
 *N. Returns 1, 0 at the end, or SPM_EFORMAT / SPM_EIO / SPM_ENOMEM. */
int spm_reader_next(spm_reader_t *r, const uint32_t **items, size_t *n);

/*  Named format: the name of item I (NULL when I was never read). */
const char *spm_reader_name(const spm_reader_t *r, uint32_t i);

/*  Transactions read so far. */
uint64_t spm_reader_count(const spm_reader_t *r);

/*  0 when R's file is still what was opened, else SPM_EIO with "PATH: the
    file changed while it was read" (spm_lines_unchanged). */
int spm_reader_unchanged(const spm_reader_t *r);

/*  One more than the largest item read (0 when none). */
uint64_t spm_reader_domain(const spm_reader_t *r);

void spm_reader_destroy(spm_reader_t **self_p);

#endif
