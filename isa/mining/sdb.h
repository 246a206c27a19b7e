/*  =========================================================================
    sdb - the super-data block types of association-rule mining

    @header
    The dissertation's Table 4.1 as portable blocks:

        BlockOfItems        mining.items         items of a partition [lo, hi) with counts
        BlockOfTransaction  mining.transactions  weighted transactions, each a list of items
        BlockOfJoinResult   mining.join          sorted candidate k-itemsets from a join
        BlockOfCandidates   mining.candidates    screened k-itemsets with support counts
        BlockOfFrequentSet  mining.frequent      frequent k-itemsets with support counts
        BlockOfRules        mining.rules         rules X => Y with the supports of X u Y and X

    and three types not in the dissertation, the client's staged input
    (text, or where it is for an embedded VM) and the depth-first miner's
    output:

        BlockOfText         mining.text          lines of a FIMI file, as staged
        BlockOfFileLines    mining.filelines     where lines of a FIMI file are
        BlockOfItemsets     mining.itemsets      frequent itemsets of several lengths
    @discuss
    Every block starts with a 32-bit magic naming its type, then fixed-width
    little-endian fields (u32, and u64 for support counts). A decoder copies
    the block into the plain arrays below; validate() decodes and discards,
    so a block that validates can be decoded, and a truncated or forged block
    (bad magic, wrong length, unsorted items, a count out of range) is
    refused with SPM_EFORMAT. Blocks are bounded: a decoder refuses more
    than SPM_MINING_MAX_ENTRIES sets, transactions or rules.

    Itemsets are strictly increasing lists of u32 items; a set block is
    sorted lexicographically without duplicates. After the initial stage
    items are ranks of frequent items (0 .. F1-1), which keeps the order of
    the original item numbers, so every sorted block stays sorted when the
    client maps ranks back.

    A client stages a FIMI file as text blocks, which LoadDataBlock parses
    (so the IEUs parse a file in parallel, not the client alone), and a
    file of named items as transaction blocks written raw (items as
    numbered, possibly unsorted and repeated: normalized = 0), which
    LoadDataBlock normalizes (sorted, distinct: normalized = 1).
    @end
    =========================================================================
*/
#ifndef SPM_MINING_SDB_H_INCLUDED
#define SPM_MINING_SDB_H_INCLUDED

#include "base/textio.h"
#include "isa/core/codec.h"

#include <stddef.h>
#include <stdint.h>

#define SPM_MINING_ITEMS "mining.items"
#define SPM_MINING_TRANS "mining.transactions"
#define SPM_MINING_TEXT "mining.text"
#define SPM_MINING_FILE "mining.filelines"
#define SPM_MINING_JOIN "mining.join"
#define SPM_MINING_CANDS "mining.candidates"
#define SPM_MINING_FSETS "mining.frequent"
#define SPM_MINING_RULES "mining.rules"
#define SPM_MINING_ITEMSETS "mining.itemsets"

/*  Most entries (sets, transactions, rules, items) one block may hold, and
    the longest itemset or transaction. */
#define SPM_MINING_MAX_ENTRIES (1u << 24)
#define SPM_MINING_MAX_K 4096u

/* ------------------------------------------------------------ BlockOfItems */

typedef struct {
    uint32_t lo, hi;  /* the partition of the item domain: lo <= item < hi */
    uint32_t n;       /* items present */
    uint32_t *items;  /* n strictly increasing items */
    uint64_t *counts; /* n support counts */
} spm_mining_items_t;

/*  Encodes B into *DATA (malloc'd, caller frees) and *LEN. Returns 0 or SPM_ENOMEM. */
int spm_mining_items_encode(const spm_mining_items_t *b, void **data, size_t *len);
/*  Decodes LEN bytes into *B (arrays malloc'd; free with spm_mining_items_free).
    Returns 0, SPM_EFORMAT (detail set) or SPM_ENOMEM. */
int spm_mining_items_decode(const void *data, size_t len, spm_mining_items_t *b);
void spm_mining_items_free(spm_mining_items_t *b);

/* ------------------------------------------------------ BlockOfTransaction */

typedef struct {
    uint32_t n;          /* transactions */
    uint32_t normalized; /* 1: every transaction strictly increasing */
    uint32_t *off;       /* n + 1 offsets into items */
    uint32_t *weight;    /* n weights (identical transactions merged), >= 1 */
    uint32_t *items;     /* off[n] items */
    int view;            /* items point into the block's bytes: read only */
} spm_mining_trans_t;

int spm_mining_trans_encode(const spm_mining_trans_t *b, void **data, size_t *len);
/*  Decodes LEN bytes into *B (arrays malloc'd; free with
    spm_mining_trans_free). Returns 0, SPM_EFORMAT (detail set) or
    SPM_ENOMEM. */
int spm_mining_trans_decode(const void *data, size_t len, spm_mining_trans_t *b);
/*  As decode, but on a little-endian host B's items point into DATA when
    it is 4-byte aligned (b->view): they must not be written, and DATA
    must outlive B. */
int spm_mining_trans_view(const void *data, size_t len, spm_mining_trans_t *b);
void spm_mining_trans_free(spm_mining_trans_t *b);

/* ------------------------------------------------------------- BlockOfText */

/*  Most bytes of a file's name (or path) a text or file-lines block holds. */
#define SPM_MINING_NAME_MAX 4096u

/*  Most bytes of text in one block (a line may be up to 64 MiB). */
#define SPM_MINING_MAX_TEXT (128u << 20)

/*  NLINES whole lines of a FIMI file, each ending in '\n', the first of
    them line FIRST of the file NAME (for messages). A view: the pointers
    point into the block's bytes, where the text is followed by
    SPM_MINING_FIMI_PAD zero bytes (isa/mining/fimi.h), and NAME is not
    NUL-terminated. */
typedef struct {
    uint64_t first;   /* 1-based line number of the first line */
    uint32_t nlines;  /* lines in text */
    uint32_t namelen; /* bytes of name */
    const char *name; /* the file's name as the client gave it */
    const char *text; /* the lines */
    size_t len;       /* bytes of text */
} spm_mining_text_t;

/*  Encodes B into *DATA (malloc'd, caller frees) and *LEN. Returns 0,
    SPM_ERANGE (text over SPM_MINING_MAX_TEXT) or SPM_ENOMEM. */
int spm_mining_text_encode(const spm_mining_text_t *b, void **data, size_t *len);
/*  Views the LEN bytes at DATA as *B (no copy). Checks the framing only:
    that the text ends in a line end and holds NLINES of them is the
    parser's to check. Returns 0 or SPM_EFORMAT (detail set). */
int spm_mining_text_view(const void *data, size_t len, spm_mining_text_t *b);
/*  1 when the LEN bytes at DATA start as a text block does (its magic). */
int spm_mining_text_is(const void *data, size_t len);

/* -------------------------------------------------------- BlockOfFileLines */

/*  NLINES whole lines of a FIMI file, in place: bytes OFFSET .. OFFSET +
    LEN of the file at PATH (absolute), the first of them line FIRST of
    the file the user named NAME (for messages). An embedded VM's IEUs
    read them there (spm_si_local_files), so its input is neither copied
    into the store nor sent through a socket. A view, as spm_mining_text_t.
    STAMP and SUM are the file and the range as the client cut them: an
    IEU that finds another file under PATH, or another state of it, or
    other bytes in the range, fails instead of reading lines the client
    never saw ("NAME: the file changed while it was read"). */
typedef struct {
    uint64_t first;         /* 1-based line number of the first line */
    uint32_t nlines;        /* lines in the range */
    uint64_t offset;        /* where they start in the file */
    uint64_t len;           /* their bytes, line ends included */
    uint32_t pathlen;       /* bytes of path */
    const char *path;       /* the file, absolute, not NUL-terminated */
    uint32_t namelen;       /* bytes of name */
    const char *name;       /* the file's name as the user gave it */
    spm_file_stamp_t stamp; /* the file when the client opened it */
    uint64_t sum;           /* spm_checksum of the range's bytes */
} spm_mining_file_t;

/*  Encodes B into *DATA (malloc'd, caller frees) and *LEN. Returns 0 or
    SPM_ENOMEM. */
int spm_mining_file_encode(const spm_mining_file_t *b, void **data, size_t *len);
/*  Views the LEN bytes at DATA as *B (no copy). Returns 0 or SPM_EFORMAT. */
int spm_mining_file_view(const void *data, size_t len, spm_mining_file_t *b);
/*  1 when the LEN bytes at DATA start as a file-lines block does (its magic). */
int spm_mining_file_is(const void *data, size_t len);

/* --------------------------------------- BlockOfJoinResult, Candidates, Frequent */

typedef enum {
    SPM_MINING_KIND_JOIN = 0,
    SPM_MINING_KIND_CANDS,
    SPM_MINING_KIND_FSETS
} spm_mining_kind_t;

typedef struct {
    spm_mining_kind_t kind; /* which of the three types */
    uint32_t k;             /* length of every set (>= 1) */
    uint32_t n;             /* sets */
    uint32_t *items;        /* n * k items, set i at items + i * k */
    uint64_t *counts;       /* n support counts; NULL for a join result */
} spm_mining_sets_t;

/*  Encodes as KIND (a join result drops counts; the others need them). */
int spm_mining_sets_encode(const spm_mining_sets_t *b, void **data, size_t *len);
/*  Decodes a block of type KIND. Returns 0, SPM_EFORMAT or SPM_ENOMEM. */
int spm_mining_sets_decode(spm_mining_kind_t kind, const void *data, size_t len,
                           spm_mining_sets_t *b);
void spm_mining_sets_free(spm_mining_sets_t *b);

/*  Compares two K-itemsets lexicographically (<0, 0, >0). */
int spm_mining_set_cmp(const uint32_t *a, const uint32_t *b, uint32_t k);

/*  Index of K-itemset S in the sorted block B, or -1. O(k log n). */
long spm_mining_sets_find(const spm_mining_sets_t *b, const uint32_t *s);

/* -------------------------------------------------------- BlockOfItemsets */

/*  Frequent itemsets of several lengths: one BlockOfFrequentSet-like group
    per length present, lengths strictly increasing, each group non-empty,
    sorted and without repeats, every support > 0, at most
    SPM_MINING_MAX_ENTRIES sets in all. A block with no group is valid (the
    output of a MineClassBlock that found nothing, or too much). */
typedef struct {
    uint32_t nlen;         /* lengths present */
    spm_mining_sets_t *lv; /* nlen groups of kind SPM_MINING_KIND_FSETS */
} spm_mining_itemsets_t;

/*  Encodes B into *DATA (malloc'd, caller frees) and *LEN. Returns 0 or SPM_ENOMEM. */
int spm_mining_itemsets_encode(const spm_mining_itemsets_t *b, void **data, size_t *len);
/*  Decodes LEN bytes into *B (arrays malloc'd; free with
    spm_mining_itemsets_free). Returns 0, SPM_EFORMAT (detail set) or SPM_ENOMEM. */
int spm_mining_itemsets_decode(const void *data, size_t len, spm_mining_itemsets_t *b);
/*  Decodes only the group of length K into *B (kind FSETS; no sets when the
    block has none of that length), checking the rest of the block's framing.
    Returns 0, SPM_EFORMAT or SPM_ENOMEM; free *B with spm_mining_sets_free. */
int spm_mining_itemsets_decode_length(const void *data, size_t len, uint32_t k,
                                      spm_mining_sets_t *b);
/*  As _decode_length, but only sets FROM .. FROM + COUNT of that group (as
    many as it has) are decoded and checked; *TOTAL (when not NULL) gets
    the group's size. What is read of the block follows COUNT, not the
    group: cutting a group into pieces reads each set once. */
int spm_mining_itemsets_decode_range(const void *data, size_t len, uint32_t k, uint32_t from,
                                     uint32_t count, spm_mining_sets_t *b, uint32_t *total);
/*  Frees the groups of B and the group array; B may be half decoded. */
void spm_mining_itemsets_free(spm_mining_itemsets_t *b);

/*  Writes an itemsets block a set at a time, for sets found rather than
    held: a depth-first walk (MineClassBlock) finds sets of every length
    interleaved, each length's in order. Each length is front coded as its
    sets come, into bytes of its own, and the block is put together at the
    end: the same bytes spm_mining_itemsets_encode makes of the sets.
        spm_mining_isets_writer_t w = {0};
        spm_mining_isets_put(&w, set, k, count);   -- any length, in any turn
        spm_mining_isets_end(&w, &data, &len);     -- or _abort on the way
    _put returns 0, SPM_EINVAL (a set not after the one of its length
    before, a length of 0 or over SPM_MINING_MAX_K, too many sets; detail
    set) or SPM_ENOMEM; the writer is then only good for _abort. */
typedef struct {
    spm_buf_t sets; /* front coded */
    spm_buf_t idx;  /* restart offsets (u32) */
    uint32_t n;     /* sets */
    uint32_t *prev; /* the set written last */
} spm_mining_isets_len_t;

typedef struct {
    spm_mining_isets_len_t *len; /* len[k - 1]: the k-sets */
    uint32_t nlen;               /* lengths with room */
    uint32_t sets;               /* in all */
    size_t bytes;                /* the sets' encoding, in all */
} spm_mining_isets_writer_t;

int spm_mining_isets_put(spm_mining_isets_writer_t *w, const uint32_t *set, uint32_t k,
                         uint64_t count);
/*  Sets of length K written so far. */
uint32_t spm_mining_isets_count(const spm_mining_isets_writer_t *w, uint32_t k);
/*  *DATA is malloc'd (the caller frees it); W is freed either way.
    Returns 0 or SPM_ENOMEM. */
int spm_mining_isets_end(spm_mining_isets_writer_t *w, void **data, size_t *len);
void spm_mining_isets_abort(spm_mining_isets_writer_t *w);

/*  A reader of one front-coded group of sets (sdb.c), a set at a time:
    the sets of a frequent-set block or of one length of an itemsets block. */
typedef struct {
    const unsigned char *p, *end; /* the group's bytes not read yet */
    const unsigned char *idx;     /* its restart offsets */
    const unsigned char *base;    /* its first set */
    uint32_t k, n;                /* items per set, sets */
    uint32_t i, from;             /* sets read; where reading began */
    int counts;                   /* 1: sets carry counts; 2: counts > 0 */
    uint32_t *set;                /* k items: the set read last */
    uint64_t count;               /* and its count */
    const char *type;             /* the block type, for errors */
} spm_mining_group_t;

/*  Reads the next set into G->set (which must hold the set read before)
    and G->count. Returns 1, 0 after the last (its bytes all used), or
    SPM_EFORMAT. */
int spm_mining_group_next(spm_mining_group_t *g);

/*  Every set of a frequent-set or itemsets block in order: by length, then
    items, without decoding the block whole (the client merges many). */
typedef struct {
    const void *data;
    size_t len;
    const unsigned char *next; /* the next group's header */
    uint32_t groups;           /* groups not opened yet */
    uint32_t prevk;            /* length of the group open */
    uint32_t maxk;             /* longest set in the block */
    uint64_t total;            /* sets in the block */
    int itemsets;              /* an itemsets block (else frequent sets) */
    spm_mining_group_t g;      /* the group being read */
} spm_mining_setrd_t;

/*  Opens R on the LEN bytes at DATA (kept, not copied), checking the
    framing of every group; sets are read into SET (SPM_MINING_MAX_K
    items). Returns 0 or SPM_EFORMAT. */
int spm_mining_setrd_open(spm_mining_setrd_t *r, const void *data, size_t len, uint32_t *set);

/*  The next set into R->g.k, R->g.set and R->g.count. Returns 1, 0 after
    the last, or SPM_EFORMAT. */
int spm_mining_setrd_next(spm_mining_setrd_t *r);

/* ------------------------------------------------------------ BlockOfRules */

typedef struct {
    uint32_t n;      /* rules */
    uint32_t *xlen;  /* n antecedent lengths (>= 1) */
    uint32_t *ylen;  /* n consequent lengths (>= 1) */
    uint64_t *supz;  /* n supports of X u Y (the rule's support) */
    uint64_t *supx;  /* n supports of X */
    uint32_t *off;   /* n + 1 offsets into items: X then Y of rule i */
    uint32_t *items; /* off[n] items */
} spm_mining_rules_t;

int spm_mining_rules_encode(const spm_mining_rules_t *b, void **data, size_t *len);
int spm_mining_rules_decode(const void *data, size_t len, spm_mining_rules_t *b);
void spm_mining_rules_free(spm_mining_rules_t *b);

/*  A growable rules block for SI bodies: append, then encode. */
typedef struct {
    spm_mining_rules_t r; /* the rules so far */
    size_t cap, icap;     /* allocated rules and items */
    int failed;           /* an allocation failed */
} spm_mining_rules_builder_t;

void spm_mining_rules_add(spm_mining_rules_builder_t *b, const uint32_t *x, uint32_t xlen,
                          const uint32_t *y, uint32_t ylen, uint64_t supz, uint64_t supx);

#endif
