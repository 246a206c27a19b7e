/*  =========================================================================
    count - support counting of candidate itemsets over transactions

    The tree is stored level by level. Because candidates arrive sorted,
    edge e of level d leads to node e of level d + 1, and edge e of the last
    level is candidate e, so a level is just two arrays: the items of its
    edges and, per node, the index of its first edge. The walk is a merge of
    a node's sorted edge items with the rest of the sorted transaction.
    =========================================================================
*/
#include "isa/mining/count.h"

#include <stdlib.h>
#include <string.h>

/*  Direct tables are used while they stay this small relative to the block,
    since each SI builds its tree anew. */
#define TABLE_MIN (1u << 16)
#define TABLE_PER_SET 16u

struct spm_mining_trie {
    uint32_t k;       /* items per candidate */
    uint32_t domain;  /* items are below this; 0: unknown */
    uint32_t **first; /* per level: node i's edges are first[d][i] .. first[d][i + 1] */
    uint32_t **item;  /* per level: the item of each edge */
    uint32_t *nnode;  /* per level: number of nodes */
    int32_t *root;    /* domain entries: root edge of an item, or -1 (NULL: none) */
    int32_t *last;    /* nnode[k - 1] rows of domain entries: candidate, or -1 */
};

void spm_mining_trie_destroy(spm_mining_trie_t **tp)
{
    spm_mining_trie_t *t = *tp;
    if (!t)
        return;
    for (uint32_t d = 0; d < t->k; d++) {
        if (t->first)
            free(t->first[d]);
        if (t->item)
            free(t->item[d]);
    }
    free(t->first);
    free(t->item);
    free(t->nnode);
    free(t->root);
    free(t->last);
    free(t);
    *tp = NULL;
}

/*  Fills a direct table of ROWS x domain for level D (-1 where no edge). */
static int32_t *table(const spm_mining_trie_t *t, uint32_t d)
{
    size_t rows = t->nnode[d];
    int32_t *tab = malloc(rows * t->domain * sizeof *tab);
    if (!tab)
        return NULL;
    memset(tab, 0xff, rows * t->domain * sizeof *tab);
    for (size_t r = 0; r < rows; r++)
        for (uint32_t e = t->first[d][r]; e < t->first[d][r + 1]; e++)
            if (t->item[d][e] < t->domain)
                tab[r * t->domain + t->item[d][e]] = (int32_t)e;
    return tab;
}

spm_mining_trie_t *spm_mining_trie_new(const uint32_t *sets, uint32_t k, uint32_t n,
                                       uint32_t domain)
{
    spm_mining_trie_t *t = calloc(1, sizeof *t);
    if (!t || k == 0)
        goto err;
    t->k = k;
    t->domain = domain;
    t->first = calloc(k, sizeof *t->first);
    t->item = calloc(k, sizeof *t->item);
    t->nnode = calloc(k, sizeof *t->nnode);
    uint32_t *ne = calloc(k, sizeof *ne); /* edges so far per level */
    if (!t->first || !t->item || !t->nnode || !ne) {
        free(ne);
        goto err;
    }
    for (uint32_t d = 0; d < k; d++) {
        t->first[d] = malloc(((size_t)n + 2) * sizeof **t->first);
        t->item[d] = malloc(((size_t)n + 1) * sizeof **t->item);
        if (!t->first[d] || !t->item[d]) {
            free(ne);
            goto err;
        }
    }
    t->first[0][0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *c = sets + (size_t)i * k;
        uint32_t d = 0; /* first level where candidate i leaves i - 1's path */
        if (i > 0)
            while (d < k - 1 && c[d] == (c - k)[d])
                d++;
        for (; d < k; d++) {
            t->item[d][ne[d]] = c[d];
            if (d + 1 < k)
                t->first[d + 1][ne[d]] = ne[d + 1];
            ne[d]++;
        }
    }
    t->nnode[0] = 1;
    for (uint32_t d = 0; d < k; d++) {
        if (d > 0)
            t->nnode[d] = ne[d - 1];
        t->first[d][t->nnode[d]] = ne[d];
    }
    free(ne);
    if (domain > 0) {
        if (!(t->root = table(t, 0)))
            goto err;
        size_t cells = (size_t)t->nnode[k - 1] * domain;
        if (k > 1 && (cells <= TABLE_MIN || cells <= (size_t)TABLE_PER_SET * n) &&
            !(t->last = table(t, k - 1)))
            goto err;
    }
    return t;
err:
    spm_mining_trie_destroy(&t);
    return NULL;
}

/*  Counts the candidates below NODE of level D in IT[from..len). */
static void walk(const spm_mining_trie_t *t, uint32_t d, uint32_t node, const uint32_t *it,
                 uint32_t from, uint32_t len, uint64_t w, uint64_t *counts)
{
    if (d == t->k - 1 && t->last) {
        const int32_t *row = t->last + (size_t)node * t->domain;
        for (uint32_t y = from; y < len; y++)
            if (it[y] < t->domain && row[it[y]] >= 0)
                counts[row[it[y]]] += w;
        return;
    }
    uint32_t need = t->k - 1 - d; /* items the path needs after this level's */
    if (len < need + from)
        return;
    uint32_t stop = len - need, e = t->first[d][node], eend = t->first[d][node + 1];
    const uint32_t *item = t->item[d];
    while (e < eend && from < stop) {
        if (item[e] < it[from]) {
            e++;
        } else if (item[e] > it[from]) {
            from++;
        } else {
            if (d == t->k - 1)
                counts[e] += w;
            else
                walk(t, d + 1, e, it, from + 1, len, w, counts);
            e++;
            from++;
        }
    }
}

void spm_mining_trie_count(const spm_mining_trie_t *t, const uint32_t *items, uint32_t len,
                           uint64_t w, uint64_t *counts)
{
    if (len < t->k)
        return;
    if (!t->root) {
        walk(t, 0, 0, items, 0, len, w, counts);
        return;
    }
    uint32_t stop = len - (t->k - 1);
    for (uint32_t y = 0; y < stop; y++) {
        if (items[y] >= t->domain)
            continue;
        int32_t e = t->root[items[y]];
        if (e < 0)
            continue;
        if (t->k == 1)
            counts[e] += w;
        else
            walk(t, 1, (uint32_t)e, items, y + 1, len, w, counts);
    }
}
