/*  =========================================================================
    grow - room for one more element in a growable array

    @discuss
    Arrays that grow one element at a time double their capacity:

        if (spm_grow(&w->v, w->n, &w->cap, sizeof *w->v, 4) != 0)
            return SPM_ENOMEM;
        w->v[w->n++] = x;

    Arrays indexed by a small id (an IEU's or a node's number, which only
    grows as units join) are made long enough for an index, the new entries
    zeroed:

        if (spm_grow_zeroed(&st->ieus, &st->nieus, ieu + 1, sizeof *st->ieus) != 0)
            return NULL;
        return &st->ieus[ieu];
    @end
    =========================================================================
*/
#ifndef SPM_GROW_H_INCLUDED
#define SPM_GROW_H_INCLUDED

#include <stdlib.h>
#include <string.h>

#include "spm/spm.h"

/*  ITEMSP points at an array pointer of N used elements of SIZE bytes and
    *CAP allocated. When it is full, reallocates it to twice the capacity
    (FIRST the first time). Returns 0, or SPM_ENOMEM with the array and *CAP
    unchanged. */
static inline int spm_grow(void *itemsp, size_t n, size_t *cap, size_t size, size_t first)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first;
    void *old;
    memcpy(&old, itemsp, sizeof old); /* the pointer, whatever its type */
    void *v = realloc(old, c * size);
    if (!v)
        return SPM_ENOMEM;
    memcpy(itemsp, &v, sizeof v);
    *cap = c;
    return 0;
}

/*  ITEMSP points at an array pointer of *COUNT entries of SIZE bytes. Makes
    it hold at least NEED entries (at least doubling), the new ones zeroed,
    and updates *COUNT. Returns 0, or SPM_ENOMEM with the array unchanged. */
static inline int spm_grow_zeroed(void *itemsp, size_t *count, size_t need, size_t size)
{
    if (need <= *count)
        return 0;
    size_t n = need < 2 * *count ? 2 * *count : need;
    unsigned char *old;
    memcpy(&old, itemsp, sizeof old);
    unsigned char *v = realloc(old, n * size);
    if (!v)
        return SPM_ENOMEM;
    memset(v + *count * size, 0, (n - *count) * size);
    memcpy(itemsp, &v, sizeof v);
    *count = n;
    return 0;
}

#endif
