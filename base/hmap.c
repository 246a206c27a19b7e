/*  =========================================================================
    hmap - a hash map from 64-bit keys to pointers
    =========================================================================
*/
#include "base/hmap.h"
#include "spm/spm.h"

#include <stdlib.h>

typedef struct {
    uint64_t key; /* 0: empty */
    void *value;
} slot_t;

struct spm_hmap {
    slot_t *slots; /* capacity entries, a power of two */
    size_t cap;
    size_t size; /* occupied entries */
};

static size_t hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

spm_hmap_t *spm_hmap_new(void)
{
    spm_hmap_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cap = 64;
    self->slots = calloc(self->cap, sizeof(slot_t));
    if (!self->slots) {
        free(self);
        return NULL;
    }
    return self;
}

void spm_hmap_destroy(spm_hmap_t **self_p)
{
    if (!*self_p)
        return;
    free((*self_p)->slots);
    free(*self_p);
    *self_p = NULL;
}

static slot_t *find(const spm_hmap_t *self, uint64_t key)
{
    size_t mask = self->cap - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
        slot_t *s = &self->slots[i];
        if (s->key == key || s->key == 0)
            return s;
    }
}

static int grow(spm_hmap_t *self)
{
    slot_t *old = self->slots;
    size_t oldcap = self->cap;
    slot_t *slots = calloc(oldcap * 2, sizeof(slot_t));
    if (!slots)
        return SPM_ENOMEM;
    self->slots = slots;
    self->cap = oldcap * 2;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key)
            *find(self, old[i].key) = old[i];
    free(old);
    return 0;
}

int spm_hmap_put(spm_hmap_t *self, uint64_t key, void *value)
{
    if ((self->size + 1) * 4 > self->cap * 3 && grow(self) != 0)
        return SPM_ENOMEM;
    slot_t *s = find(self, key);
    if (s->key == 0) {
        s->key = key;
        self->size++;
    }
    s->value = value;
    return 0;
}

void *spm_hmap_get(const spm_hmap_t *self, uint64_t key)
{
    slot_t *s = find(self, key);
    return s->key ? s->value : NULL;
}

void *spm_hmap_remove(spm_hmap_t *self, uint64_t key)
{
    slot_t *s = find(self, key);
    if (!s->key)
        return NULL;
    void *value = s->value;
    size_t mask = self->cap - 1;
    size_t i = (size_t)(s - self->slots);
    /* Backward-shift: move later members of the probe run into the hole. */
    for (size_t j = (i + 1) & mask; self->slots[j].key; j = (j + 1) & mask) {
        size_t home = hash(self->slots[j].key) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            self->slots[i] = self->slots[j];
            i = j;
        }
    }
    self->slots[i] = (slot_t){0};
    self->size--;
    return value;
}

size_t spm_hmap_size(const spm_hmap_t *self)
{
    return self->size;
}

int spm_hmap_next(const spm_hmap_t *self, size_t *pos, uint64_t *key, void **value)
{
    for (; *pos < self->cap; (*pos)++)
        if (self->slots[*pos].key) {
            *key = self->slots[*pos].key;
            *value = self->slots[*pos].value;
            (*pos)++;
            return 1;
        }
    return 0;
}
