/*  =========================================================================
    quest - the IBM Quest synthetic transaction generator

    @header
    A reimplementation of the generator of R. Agrawal and R. Srikant, "Fast
    Algorithms for Mining Association Rules", VLDB 1994, section 2.4.3: the
    source of the T10I4D100K / T25I10D100K databases every Apriori paper
    measures on. `spm gen transactions` writes its output in FIMI format.
    @discuss
    The model. There are N items and |L| potentially large itemsets
    ("patterns"):
      * every item has a weight drawn from an exponential distribution of
        mean 1; items are drawn in proportion to their weights;
      * a pattern's size is Poisson with mean |I| (at least 1); a fraction
        of its items, exponential with mean equal to the correlation level
        (0.5), comes from the previous pattern, the rest are drawn afresh;
      * every pattern has a weight (exponential, mean 1, normalized to sum 1)
        and a corruption level (normal, mean 0.5, deviation 0.1, clamped to
        [0, 1]);
      * a transaction's size is Poisson with mean |T| (at least 1). It is
        filled with patterns picked by weight; from each picked pattern,
        items are dropped one at a time while a uniform draw is below its
        corruption level. A pattern that does not fit is added anyway half
        the time, else kept for the next transaction.
    The same parameters and seed give the same file on every machine.
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_QUEST_H_INCLUDED
#define SPM_APRIORI_QUEST_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t transactions; /* |D| */
    double avg_size;       /* |T| */
    double avg_pattern;    /* |I| */
    uint32_t items;        /* N */
    uint32_t patterns;     /* |L| */
    uint64_t seed;
    double correlation;   /* mean fraction taken from the previous pattern (0.5) */
    double corruption;    /* mean corruption level (0.5) */
    double corruption_sd; /* its deviation (0.1) */
} spm_quest_params_t;

/*  Sets the paper's defaults: T10I4D100K with N = 1000, |L| = 2000, seed 1. */
void spm_quest_defaults(spm_quest_params_t *p);

typedef struct spm_quest spm_quest_t;

/*  Returns a generator for P (patterns drawn now), or NULL with the detail
    set (SPM_EINVAL for a bad parameter, SPM_ENOMEM). */
spm_quest_t *spm_quest_new(const spm_quest_params_t *p);

/*  Produces the next transaction in *ITEMS (sorted, distinct; valid until
    the next call) and *N. Returns 1, or 0 after the last transaction. */
int spm_quest_next(spm_quest_t *q, const uint32_t **items, size_t *n);

void spm_quest_destroy(spm_quest_t **self_p);

#endif
