/*  =========================================================================
    eclat_int - what the files of the depth-first miner share: the miner's
    state, its tidsets and the arena they come off

    MineClassBlock's work is in three files: si_eclat.c (the SIs: their
    parameters, the reply, the sets' output order), eclat_build.c (the
    bitsets of a class over its transactions) and eclat_walk.c (the tidsets
    and the depth-first walk over them).
    =========================================================================
*/
#ifndef SPM_MINING_ECLAT_INT_H_INCLUDED
#define SPM_MINING_ECLAT_INT_H_INCLUDED

#include "isa/mining/isa.h"

#include <stddef.h>
#include <stdint.h>

#define NO_ROW UINT32_MAX

/*  Largest vertical database one SI builds (bitsets of the items of its
    class over every transaction). */
#define MAX_BITS_BYTES (1ull << 30)

/*  A tidset: a bitset over the transactions, dense (every word) or as its
    non-zero words with their indices (where the set is rare). */
typedef struct {
    uint64_t *w;   /* n words (one allocation with idx) */
    uint32_t *idx; /* n word indices, increasing; NULL when dense (n = nwords) */
    uint32_t n;
    uint64_t sup; /* its support */
} tids_t;

/*  A frequent extension of a prefix: its last item and its tidset. */
typedef struct {
    uint32_t item;
    tids_t t;
} ext_t;

/*  The walk's memory: the extensions of a prefix and their tidsets live
    until the walk leaves the prefix, so they come off a stack of chunks
    and go back to a mark, instead of a malloc and a free each (the dense
    set at 5% makes 8 million of them). */
typedef struct chunk {
    struct chunk *prev; /* the chunk below (NULL: the first) */
    size_t size, used;  /* bytes of data, and in use */
    uint64_t data[];
} chunk_t;

#define CHUNK_BYTES ((size_t)1 << 20)

typedef struct {
    chunk_t *top;   /* the chunk allocations come from (NULL: none yet) */
    chunk_t *spare; /* a freed chunk kept for the next */
} arena_t;

typedef struct {
    chunk_t *c;
    size_t used;
} mark_t;

typedef struct {
    uint32_t f1, maxlen; /* the rank domain; longest set (0: any) */
    uint32_t lo, hi;     /* first items of the class */
    uint32_t slo, shi;   /* second items of the class */
    uint64_t minsup;     /* minimum support */
    size_t cap, bytes;   /* output bound, and encoded bytes found so far */
    uint64_t bits_cap;   /* bitsets of a class of several first items, at most */
    size_t soft;         /* past this, stop between two of the class's top prefixes */
    int too_big;         /* the class went over cap */
    int partial;         /* stopped early: the rest starts at (ra, rb), or (2) inside rb at rn */
    uint32_t ra, rb;     /* first item, and next item (0: any) to resume at */
    uint32_t rn;         /* a stop inside top prefix rb: the next item below it to resume at */
    uint32_t in_top;     /* the top prefix's item the walk is in */
    int deep;            /* may stop inside one of the class's top prefixes (see walk) */
    int quiet;           /* its (top + 1)-sets were emitted by the class it resumes */
    uint32_t a;          /* the current first item */
    uint32_t depth;      /* a prefix class: its prefix's items (0: none, see isa.h) */
    uint32_t pre[SPM_MINING_MAX_DEPTH]; /* the prefix */
    uint32_t own;                       /* its shortest prefix of its own to emit (0: none) */
    uint32_t top;                       /* the walk's level whose extensions are the class's */
    int rc;                             /* first error (0: none) */
    uint32_t nwords;                    /* words per bitset */
    uint64_t *bits;                     /* the bitsets the class needs, nwords each */
    uint32_t *row;                      /* f1: an item's bitset in bits (NO_ROW: none) */
    uint32_t nhw;                       /* words of heavy transactions (weight > 1): the first */
    uint64_t *plane;                    /* nhw x npad: word i's bits p of each weight - 1 */
    uint32_t nplanes;                   /* bits of the largest weight - 1 */
    uint32_t npad;                      /* nplanes rounded up to a multiple of 8 */
    uint64_t *pairs;               /* supports of {a, b}, a in [lo, hi), b in [lo, f1); or NULL */
    uint32_t *sidx;                /* scratch tidset: nwords indices */
    uint64_t *sw;                  /* and words */
    uint32_t *set;                 /* the current prefix as output (SPM_MINING_MAX_K items) */
    uint32_t *pos;                 /* item order: f1, a rank's position by item number */
    uint32_t *item;                /* and f1 items by position (NULL: rank order) */
    int by_pos;                    /* item order, walked by position (see BY_POSITION) */
    spm_mining_isets_writer_t out; /* the sets found */
    arena_t arena;                 /* the walk's extensions and tidsets */
} miner_t;

/*  The pair counts of first item A (lo <= A < hi): entry B - lo is the
    support of {A, B}. A partner ranks above A, so columns below lo are
    never used and are not kept: the classes of the last ranks (the most
    frequent items) count into rows a few KiB long. */
static inline uint64_t *pair_row(const miner_t *m, uint32_t a)
{
    return m->pairs + (size_t)(a - m->lo) * (m->f1 - m->lo);
}

/*  Mines the class of the D-item prefix PRE (eclat_walk.c): its (D + 1)-sets
    whose item D + 1 lies in [SLO, SHI), and everything below them. Errors
    and stops are left in M (rc, too_big, partial). */
void eclat_mine_prefix(miner_t *m, const uint32_t *pre, uint32_t d, uint32_t slo, uint32_t shi);

/*  Picks, once per process, the loops of the walk the CPU runs (AVX-512 or
    plain; eclat_walk.c). */
void eclat_pick_loops(void);

/*  Frees every chunk of arena A (eclat_walk.c). */
void eclat_arena_free(arena_t *a);

/*  Builds the bitsets the class needs over the transactions of operands
    [0, NT) of CTX, and the weights (eclat_build.c). Returns 0 or an SPM_E*
    code with the detail set. */
int eclat_build(spm_si_ctx_t *ctx, miner_t *m, size_t nt);

#endif
