/*  =========================================================================
    hmap - a hash map from 64-bit keys to pointers

    @discuss
    Open addressing with linear probing and backward-shift deletion, so the
    center's tables (SIs in flight, SDBs, peers) cost no allocation per
    look-up. Key 0 is reserved (it marks an empty slot). Values are not
    owned by the map.
    @end
    =========================================================================
*/
#ifndef SPM_HMAP_H_INCLUDED
#define SPM_HMAP_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct spm_hmap spm_hmap_t;

/*  Returns an empty map, or NULL when out of memory. */
spm_hmap_t *spm_hmap_new(void);
void spm_hmap_destroy(spm_hmap_t **self_p);

/*  Sets KEY (not 0) to VALUE, replacing any earlier value. Returns 0 or SPM_ENOMEM. */
int spm_hmap_put(spm_hmap_t *self, uint64_t key, void *value);

/*  Returns the value of KEY, or NULL. */
void *spm_hmap_get(const spm_hmap_t *self, uint64_t key);

/*  Removes KEY and returns its value, or NULL when absent. */
void *spm_hmap_remove(spm_hmap_t *self, uint64_t key);

size_t spm_hmap_size(const spm_hmap_t *self);

/*  Iteration: *POS starts at 0; returns 1 with *KEY and *VALUE set for the
    next entry, or 0 at the end. The map must not change during iteration. */
int spm_hmap_next(const spm_hmap_t *self, size_t *pos, uint64_t *key, void **value);

#endif
