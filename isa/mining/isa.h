/*  =========================================================================
    isa - the thirteen super-instructions of association-rule mining

    @header
    Opcode names, operand layouts and parameter encodings of the mining
    instruction set (dissertation section 4.1.3). Parameters and replies are
    sequences of little-endian u32 (u64 for supports, f64 for confidence).
    @discuss
    Operands, in order, for each opcode (R read, W write, RW update, ACC
    accumulate with the type's merge):

      LoadDataBlock          staged R, raw W;  params: u32 s (most transactions);
                             reply: u32 transactions, u32 items, u32 domain
                             parses a staged text block (lines of a FIMI file),
                             or the lines a file-lines block names, read from the
                             file (an embedded VM's IEUs only: spm_si_local_files),
                             or reads a staged transaction block, and normalizes it:
                             items sorted, duplicates dropped; domain is one more
                             than its largest item (0: none)
      CountItemSupport       raw[0..r) R, items[0..P) ACC;  params: u32 P, u32 width
                             (one or more raw blocks per SI)
                             partition p holds items [p*width, (p+1)*width)
      ShrinkItemBlock        items RW;  params: u64 minsup;  reply: u32 items left
      GetFrequentItemsBlock  items[0..P) R, fitems W, fsets W;  reply: u32 F1
                             fitems: the frequent items (their position is their rank);
                             fsets: the frequent 1-itemsets as ranks with supports
      ShrinkTransactionBlock raw R, fitems R, trans W;  reply: u32 transactions, u32 items
                             items become ranks; infrequent items and transactions
                             shorter than 2 are dropped; identical ones merged (weights)
      MergeTransactionBlock  trans RW, trans[1..m) R;  reply: u32 transactions, u32 items
      Gen{Large,Middle,Small}CandidatesFamilyBlock
                             fsets[0..m) R, join W;  params: u32 from, to, pfrom, pto
                             joins sets from..to of the first block with the later
                             members of their family (same k-1 prefix) in all the
                             blocks; only partners pfrom..pto (counted from the set)
                             (Large: one family split by partners; Middle: whole
                             families; Small: a whole block);  reply: u32 candidates
      FilterCandidates       join RW, fsets[0..m) R;  params: u32 k, u32 has_lo,
                             lo[k], u32 has_hi, hi[k];  drops candidates with a
                             k-subset in [lo, hi) missing from the blocks;  reply: u32 left
      CountBlockCandidatesSupport
                             join R, trans[1..m-1) R, cands ACC;  params: u32 domain (F1)
                             (one or more transaction blocks per SI)
      PruneCandidatesBlock   cands RW;  params: u64 minsup;  reply: u32 left
      GetFrequentSetBlock    cands[0..m) R, fsets W;  params: u32 skip, u32 take;
                             the sets skip..skip+take of the operands in order
                             (at most SPM_MINING_MAX_FSETS);  reply: see spm_mining_fsets_reply
      CheckConfidenceInBlock pre R, post R, rules W;  params: f64 minconf,
                             u32 max consequent (0: any), and optionally
                             u32 zlo, u32 zhi;  reply: u32 rules
                             rules Z\X from post Z and X in pre (|X| < |Z|),
                             Z among post's sets zlo..zhi-1 (default: all)
      StoreResult            rules[0..m) R, store W;  reply: u32 rules
                             the rules merged and sorted

    Two more run the depth-first miner (Eclat, not in the dissertation):

      MineClassBlock         trans[0..m) R, isets W;  params: u32 F1, u64 minsup,
                             u32 maxlen (0: any), u32 lo, u32 hi, u32 slo, u32 shi,
                             u32 cap (bytes, 0: SPM_MINING_CLASS_CAP), u32 soft
                             (bytes, 0: cap / 16), and optionally u32 order (0: rank
                             order; 1: an operand fitems R comes before isets, and
                             every group of isets is in item order: sets of items,
                             sorted by items; with F1 <= 128 the first and second
                             items below are then positions among the frequent
                             items by number, not ranks), u32 bits (KiB, 0:
                             1 GiB) and a prefix: u32 depth (0: none), depth
                             items P strictly increasing (lo = P[0], hi = lo + 1,
                             slo past the last; at most SPM_MINING_MAX_DEPTH)
                             and u32 own (0, or 2 .. depth), then optionally u32
                             flags (SPM_MINING_CLASS_DEEP: it may stop inside a
                             top prefix, status 3; SPM_MINING_CLASS_QUIET, with
                             depth >= 2 and own 0: its (depth + 1)-sets are not
                             emitted, the class it resumes did). A prefix class is
                             every frequent itemset that starts with P and
                             whose next item lies in [slo, shi), and P's first
                             j items for every j >= own. A class
                             of several first items whose bitsets would take more
                             replies "too big" without mining
                             every frequent itemset of length >= 2 (and <= maxlen)
                             whose first item lies in [lo, hi) and whose second
                             item lies in [slo, shi) (0, UINT32_MAX: any), found
                             depth first over vertical bitsets, in the order of
                             their 2-item prefixes;  reply: u32 status, u32 nlen,
                             nlen x (u32 k, u32 sets), u32 ra, u32 rb, u32 rn.
                             status 0: the whole class; 2: the block passed soft
                             bytes, so the SI stopped after a complete 2-item
                             prefix: the rest of the class is first item ra with
                             second items >= rb (rb = 0: first items >= ra), or
                             for a prefix class P with next items >= rb;
                             3 (DEEP only): it stopped inside the top prefix
                             ending in rb (ra rb, or P rb) before its next item
                             rn: the rest is that prefix's class with next items
                             >= rn, QUIET, then the class's rest as for status 2
                             with next items >= rb + 1;
                             1: the block passed cap: isets is empty
      CutFrequentSetBlock    isets[0..m) R, fsets W;  params: u32 k, u32 skip, u32 take;
                             the k-sets skip..skip+take of the operands in order
                             (at most SPM_MINING_MAX_FSETS);  reply: see
                             spm_mining_fsets_reply
    @end
    =========================================================================
*/
#ifndef SPM_MINING_ISA_H_INCLUDED
#define SPM_MINING_ISA_H_INCLUDED

#include "isa/mining/sdb.h"
#include "spm/spm.h"

#define SPM_MINING_LOAD "mining.LoadDataBlock"
#define SPM_MINING_COUNT_ITEMS "mining.CountItemSupport"
#define SPM_MINING_SHRINK_ITEMS "mining.ShrinkItemBlock"
#define SPM_MINING_FREQ_ITEMS "mining.GetFrequentItemsBlock"
#define SPM_MINING_SHRINK_TRANS "mining.ShrinkTransactionBlock"
#define SPM_MINING_MERGE_TRANS "mining.MergeTransactionBlock"
#define SPM_MINING_GEN_LARGE "mining.GenLargeCandidatesFamilyBlock"
#define SPM_MINING_GEN_MIDDLE "mining.GenMiddleCandidatesFamilyBlock"
#define SPM_MINING_GEN_SMALL "mining.GenSmallCandidatesFamilyBlock"
#define SPM_MINING_FILTER "mining.FilterCandidates"
#define SPM_MINING_COUNT_CANDS "mining.CountBlockCandidatesSupport"
#define SPM_MINING_PRUNE "mining.PruneCandidatesBlock"
#define SPM_MINING_FREQ_SETS "mining.GetFrequentSetBlock"
#define SPM_MINING_CONFIDENCE "mining.CheckConfidenceInBlock"
#define SPM_MINING_STORE "mining.StoreResult"
#define SPM_MINING_MINE_CLASS "mining.MineClassBlock"
#define SPM_MINING_CUT_SETS "mining.CutFrequentSetBlock"

/*  Most bytes a MineClassBlock output may take, counted as 4k + 8 per set
    of length k (as front coded, in item order by position), unless its
    params say otherwise: the block is then empty and the reply says "too
    big", and the super-function splits the class. The SI stops early, at
    a 2-item prefix boundary, past a sixteenth of it. */
#define SPM_MINING_CLASS_CAP (32u << 20)

/*  MineClassBlock's flags (see above). */
#define SPM_MINING_CLASS_DEEP 1u
#define SPM_MINING_CLASS_QUIET 2u

/*  Longest prefix of a MineClassBlock prefix class. */
#define SPM_MINING_MAX_DEPTH 16

/*  The reply of GetFrequentSetBlock, which the super-functions plan the next
    stage with: the block's size, first and last sets, and the sizes of the
    families (runs of sets sharing the first k-1 items) in order. */
typedef struct {
    uint32_t k, n;   /* set length and number of sets */
    uint32_t *first; /* k items (n > 0) */
    uint32_t *last;  /* k items (n > 0) */
    uint32_t nfam;   /* families in the block */
    uint32_t *fam;   /* nfam sizes, summing to n */
} spm_mining_fsets_reply_t;

/*  Most sets a frequent-set block may hold, so that its reply fits. */
#define SPM_MINING_MAX_FSETS 8192u

/*  Encodes the reply for block B into *DATA (malloc'd) and *LEN. */
int spm_mining_fsets_reply_encode(const spm_mining_sets_t *b, void **data, size_t *len);
/*  Decodes a reply (arrays malloc'd; free with _free). Returns 0 or SPM_EPROTO. */
int spm_mining_fsets_reply_decode(const void *data, size_t len, spm_mining_fsets_reply_t *r);
void spm_mining_fsets_reply_free(spm_mining_fsets_reply_t *r);

/*  Rule order used everywhere: antecedent (shorter first, then by items),
    then consequent likewise. */
int spm_mining_rule_cmp(const uint32_t *x1, uint32_t xl1, const uint32_t *y1, uint32_t yl1,
                        const uint32_t *x2, uint32_t xl2, const uint32_t *y2, uint32_t yl2);

/*  Sorts the N items at A into increasing order. */
void spm_mining_sort_items(uint32_t *a, uint32_t n);

/*  The rank order of the frequent items F (sorted by item): rank r is item
    F->items[(*ORDER)[r]], ranks going by ascending support, then item. Rare
    items first make the candidate prefix trees narrow where transactions
    enter them. *ORDER is malloc'd. Returns 0 or SPM_ENOMEM. */
int spm_mining_rank_order(const spm_mining_items_t *f, uint32_t **order);

/*  1 when a rule with support SUPZ whose antecedent has support SUPX has
    confidence at least MINCONF (a fraction; a tolerance of 1e-12 keeps
    exact ratios such as 4/5 >= 0.8 from failing on rounding). */
int spm_mining_confident(uint64_t supz, uint64_t supx, double minconf);

/*  Helpers for SI bodies: fetch input I and decode it as a given type. On
    failure the detail names the opcode and operand. */
int spm_mining_in_trans(spm_si_ctx_t *ctx, size_t i, spm_mining_trans_t *b);
/*  As spm_mining_in_trans, with the items read in place where they can be
    (spm_mining_trans_view): for an SI that does not write them. */
int spm_mining_in_trans_view(spm_si_ctx_t *ctx, size_t i, spm_mining_trans_t *b);
int spm_mining_in_items(spm_si_ctx_t *ctx, size_t i, spm_mining_items_t *b);
int spm_mining_in_sets(spm_si_ctx_t *ctx, size_t i, spm_mining_kind_t kind, spm_mining_sets_t *b);

/*  Encode B and set it as output I (return the SPM_E* of either step). */
int spm_mining_out_trans(spm_si_ctx_t *ctx, size_t i, const spm_mining_trans_t *b);
int spm_mining_out_items(spm_si_ctx_t *ctx, size_t i, const spm_mining_items_t *b);
int spm_mining_out_sets(spm_si_ctx_t *ctx, size_t i, const spm_mining_sets_t *b);
int spm_mining_out_rules(spm_si_ctx_t *ctx, size_t i, const spm_mining_rules_t *b);

/*  A cursor over the SI's parameter bytes. */
#include "isa/core/codec.h"
spm_cursor_t spm_mining_params(spm_si_ctx_t *ctx);

/*  Replies a list of N u32. */
int spm_mining_reply_u32(spm_si_ctx_t *ctx, const uint32_t *v, size_t n);

#endif
