/*  =========================================================================
    keysort - sorting indices by 64-bit keys, in linear time

    @header
    An LSD radix sort of (key, index) pairs, a byte at a time, that skips
    the bytes every key shares, and is stable: pairs of equal keys keep
    their order. Where records need more than 64 bits to order, the caller
    packs a prefix into the key and puts runs of equal keys in order after
    (spm_keysort_ties). The mining SIs sort their sets and transactions
    this way: a comparison sort of their records cost several times more.
    @discuss
        spm_keyed_t *a = ..., *t = ...;      -- N pairs each
        for (i = 0; i < n; i++) a[i] = (spm_keyed_t){key_of(i), i};
        spm_keyed_t *o = spm_keysort(a, t, n);   -- o is a or t
    @end
    =========================================================================
*/
#ifndef SPM_KEYSORT_H_INCLUDED
#define SPM_KEYSORT_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t key; /* the order */
    uint32_t i;   /* what it orders (an index) */
    uint32_t pad;
} spm_keyed_t;

/*  Sorts the N pairs at A by key, stably, using T (N pairs) as scratch.
    Returns A or T, whichever holds the result. */
spm_keyed_t *spm_keysort(spm_keyed_t *a, spm_keyed_t *t, size_t n);

/*  Puts each run of equal keys among the N sorted pairs at A in CMP's
    order (called with ARG on the pairs' indices), keeping the runs where
    they are. */
void spm_keysort_ties(spm_keyed_t *a, size_t n, int (*cmp)(uint32_t, uint32_t, void *), void *arg);

#endif
