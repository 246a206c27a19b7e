/*  =========================================================================
    fimi - FIMI transaction lines: item numbers separated by blanks

    @header
    A line of a FIMI file is one transaction: non-negative integers up to
    SPM_MINING_FIMI_MAX_ITEM separated by spaces or tabs; an empty or blank
    line is an empty transaction. The client's reader and LoadDataBlock,
    which parses the text blocks a client stages, read lines with this one
    parser, so a file means the same wherever it is parsed, and a bad item
    is reported the same way: "PATH:LINE: item 'x4' is not a non-negative
    integer (use --names for named items)". LoadDataBlock parses a block
    of lines whole (spm_mining_fimi_parse).
    @end
    =========================================================================
*/
#ifndef SPM_MINING_FIMI_H_INCLUDED
#define SPM_MINING_FIMI_H_INCLUDED

#include "isa/mining/sdb.h"

#include <stddef.h>
#include <stdint.h>

/*  Largest item number accepted (the item domain must fit in 32 bits). */
#define SPM_MINING_FIMI_MAX_ITEM 4294967294u

/*  Bytes a line must be followed by, readable: the parser loads 8 bytes
    at a time. The first of them must not be a digit (a line end or NUL). */
#define SPM_MINING_FIMI_PAD 8

/*  Reads the items of LINE (LEN bytes without the line end, followed by
    SPM_MINING_FIMI_PAD readable bytes) into ITEMS, which has room for
    LEN / 2 + 1, and their count into *N, as written (repeats and order
    kept). Returns 0, or SPM_EFORMAT with the detail "WHERE:LINENO: ..."
    naming the first bad item. */
int spm_mining_fimi_line(const char *line, size_t len, uint32_t *items, size_t *n,
                         const char *where, uint64_t lineno);

/*  Parses the text block B into *T (items as written: normalized = 0;
    arrays malloc'd, free with spm_mining_trans_free), one transaction a
    line. Returns 0, SPM_ENOMEM, or SPM_EFORMAT with the detail naming the
    file and line: a bad item, a NUL byte, more than SPM_MINING_MAX_ENTRIES
    items, or lines other than the block says. */
int spm_mining_fimi_parse(const spm_mining_text_t *b, spm_mining_trans_t *t);

/*  Reads the lines block B names from its file and parses them as
    spm_mining_fimi_parse does. Returns 0, SPM_ENOMEM, SPM_EIO (the file
    cannot be read, or no longer holds those lines: "NAME: ...") or
    SPM_EFORMAT. */
int spm_mining_fimi_read(const spm_mining_file_t *b, spm_mining_trans_t *t);

#endif
