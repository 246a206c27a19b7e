/*  =========================================================================
    keysort - sorting indices by 64-bit keys, in linear time
    =========================================================================
*/
#include "isa/core/keysort.h"

#include <stdlib.h>

/*  The counts of every byte of the keys come from one pass over them, not
    one pass a byte: a byte's scatter does not change how many keys have
    each value of another byte. */
spm_keyed_t *spm_keysort(spm_keyed_t *a, spm_keyed_t *t, size_t n)
{
    if (n < 2)
        return a;
    size_t cnt[8][257] = {{0}};
    for (size_t i = 0; i < n; i++)
        for (unsigned b = 0; b < 8; b++)
            cnt[b][((a[i].key >> (8 * b)) & 255) + 1]++;
    for (unsigned b = 0; b < 8; b++) {
        size_t *c = cnt[b];
        unsigned shift = 8 * b;
        if (c[((a[0].key >> shift) & 255) + 1] == n)
            continue; /* every key has this byte */
        for (int v = 0; v < 256; v++)
            c[v + 1] += c[v];
        for (size_t i = 0; i < n; i++)
            t[c[(a[i].key >> shift) & 255]++] = a[i];
        spm_keyed_t *x = a;
        a = t;
        t = x;
    }
    return a;
}

/*  Insertion sort of a run of equal keys: runs are short where keys hold
    most of the order. */
static void order_run(spm_keyed_t *a, size_t n, int (*cmp)(uint32_t, uint32_t, void *), void *arg)
{
    for (size_t i = 1; i < n; i++) {
        spm_keyed_t v = a[i];
        size_t j = i;
        for (; j > 0 && cmp(a[j - 1].i, v.i, arg) > 0; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

typedef struct {
    int (*cmp)(uint32_t, uint32_t, void *);
    void *arg;
} ties_t;

static int cmp_pairs(const void *x, const void *y, void *arg)
{
    const ties_t *t = arg;
    return t->cmp(((const spm_keyed_t *)x)->i, ((const spm_keyed_t *)y)->i, t->arg);
}

void spm_keysort_ties(spm_keyed_t *a, size_t n, int (*cmp)(uint32_t, uint32_t, void *), void *arg)
{
    ties_t t = {cmp, arg};
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && a[j].key == a[i].key; j++)
            ;
        if (j - i > 32)
            qsort_r(a + i, j - i, sizeof *a, cmp_pairs, &t);
        else if (j - i > 1)
            order_run(a + i, j - i, cmp, arg);
    }
}
