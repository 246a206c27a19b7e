/*  =========================================================================
    array - growing a zero-filled array indexed by a small id

    @discuss
    Schedulers keep per-IEU and per-node state in arrays indexed by the
    IEU's or node's number, which only grows as units join. spm_array_grow
    makes such an array long enough for an index, zeroing the new entries,
    so a lookup is one call instead of a realloc dance at every site.
    @end
    =========================================================================
*/
#ifndef SPM_ARRAY_H_INCLUDED
#define SPM_ARRAY_H_INCLUDED

#include <stddef.h>

/*  Makes *ITEMS (an array of *COUNT entries of SIZE bytes, malloc'd or
    NULL) hold at least NEED entries, new ones zero-filled, and updates
    *COUNT. Returns 0, or SPM_ENOMEM (the array is left as it was). */
int spm_array_grow(void **items, size_t *count, size_t need, size_t size);

#endif
