/*  =========================================================================
    apriori_ref - an independent, sequential reference for association rules

    @header
    The answer spm's mining must reproduce, computed the plainest way that
    is still fast enough for benchmarks: level-wise Apriori (join frequent
    (k-1)-sets sharing a prefix, drop candidates with an infrequent subset)
    with each candidate's support counted by intersecting the transaction
    bitsets of its items. It shares no code with isa/mining or
    programs/apriori: its own reader, its own candidate generation, its own
    counting and rule enumeration. Header-only; every function is static.
    @discuss
        ref_db_t db;
        ref_db_load("T10I4D100K.dat", &db);        -- 0, or -1 on a bad file
        ref_result_t r;
        ref_mine(&db, 500, 0.8, 0, &r);             -- minsup count, minconf, max consequent
        r.sets[i]: items (sorted), k, support; sorted by length, then items
        r.rules[i]: x, xlen, y, ylen, supz, supx; sorted by antecedent, then consequent
        ref_result_free(&r); ref_db_free(&db);
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_REF_H_INCLUDED
#define SPM_APRIORI_REF_H_INCLUDED

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t ntrans; /* transactions */
    uint32_t nitems; /* distinct items */
    uint32_t *item;  /* the distinct items, increasing */
    uint64_t words;  /* 64-bit words per bitset */
    uint64_t *bits;  /* nitems bitsets: transaction t holds item i */
} ref_db_t;

typedef struct {
    uint32_t k;
    uint32_t *items; /* k original items, increasing */
    uint64_t sup;
} ref_set_t;

typedef struct {
    uint32_t *x, xlen, *y, ylen;
    uint64_t supz, supx;
} ref_rule_t;

typedef struct {
    ref_set_t *sets;
    size_t nsets;
    ref_rule_t *rules;
    size_t nrules;
} ref_result_t;

static int ref_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/*  Index of ITEM among the distinct items, or -1. */
static long ref_index(const ref_db_t *db, uint32_t item)
{
    uint32_t *p = bsearch(&item, db->item, db->nitems, sizeof item, ref_cmp_u32);
    return p ? (long)(p - db->item) : -1;
}

/*  Parses the items of LINE into *ITEMS (grown as needed, *CAP entries).
    Returns the count, or -1 on a non-number. */
static long ref_parse_line(const char *line, uint32_t **items, size_t *cap)
{
    long n = 0;
    for (const char *p = line; *p;) {
        if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            p++;
            continue;
        }
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || *p == '-')
            return -1;
        if ((size_t)n == *cap) {
            *cap = *cap ? *cap * 2 : 1024;
            *items = realloc(*items, *cap * sizeof **items);
        }
        (*items)[n++] = (uint32_t)v;
        p = end;
    }
    return n;
}

/*  Reads a FIMI file: two passes, one for the item list, one for the bits.
    Returns 0, or -1 when the file cannot be read or holds a non-number. */
static int ref_db_load(const char *path, ref_db_t *db)
{
    memset(db, 0, sizeof *db);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0, n = 0, ncap = 0, tcap = 0;
    uint32_t *all = NULL, *t_items = NULL;
    long m;
    while (getline(&line, &cap, f) >= 0) {
        db->ntrans++;
        if ((m = ref_parse_line(line, &t_items, &tcap)) < 0)
            goto err;
        if (n + (size_t)m > ncap) {
            ncap = (n + (size_t)m) * 2;
            all = realloc(all, ncap * sizeof *all);
        }
        if (m) /* NULL + 0 and memcpy or qsort of NULL are undefined */
            memcpy(all + n, t_items, (size_t)m * sizeof *all);
        n += (size_t)m;
    }
    if (n)
        qsort(all, n, sizeof *all, ref_cmp_u32);
    for (size_t i = 0; i < n; i++)
        if (db->nitems == 0 || all[db->nitems - 1] != all[i])
            all[db->nitems++] = all[i];
    db->item = all;
    db->words = (db->ntrans + 63) / 64;
    db->bits = calloc((size_t)db->nitems * db->words + 1, sizeof *db->bits);
    rewind(f);
    for (uint64_t t = 0; getline(&line, &cap, f) >= 0; t++) {
        m = ref_parse_line(line, &t_items, &tcap);
        for (long j = 0; j < m; j++) {
            long i = ref_index(db, t_items[j]);
            db->bits[(size_t)i * db->words + t / 64] |= 1ull << (t % 64);
        }
    }
    free(t_items);
    free(line);
    fclose(f);
    return 0;
err:
    free(all);
    free(t_items);
    free(line);
    fclose(f);
    return -1;
}

static void ref_db_free(ref_db_t *db)
{
    free(db->item);
    free(db->bits);
    memset(db, 0, sizeof *db);
}

/*  Support of the K item indexes in IDX: popcount of the AND of their bits. */
static uint64_t ref_support(const ref_db_t *db, const uint32_t *idx, uint32_t k)
{
    uint64_t s = 0;
    for (uint64_t w = 0; w < db->words; w++) {
        uint64_t v = ~0ull;
        for (uint32_t j = 0; j < k; j++)
            v &= db->bits[(size_t)idx[j] * db->words + w];
        s += (uint64_t)__builtin_popcountll(v);
    }
    return s;
}

/*  A level: n sets of k item indexes, sorted, with supports. */
typedef struct {
    uint32_t k, n;
    uint32_t *idx;
    uint64_t *sup;
} ref_level_t;

static int ref_level_cmp_k; /* k for ref_set_cmp (qsort has no argument) */

static int ref_idx_cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    for (int j = 0; j < ref_level_cmp_k; j++)
        if (x[j] != y[j])
            return x[j] < y[j] ? -1 : 1;
    return 0;
}

/*  Position of the K indexes S in level L, or -1. */
static long ref_level_find(const ref_level_t *l, const uint32_t *s)
{
    ref_level_cmp_k = (int)l->k;
    uint32_t *p = bsearch(s, l->idx, l->n, l->k * sizeof *s, ref_idx_cmp);
    return p ? (long)((p - l->idx) / l->k) : -1;
}

static void ref_level_push(ref_level_t *l, const uint32_t *s, uint64_t sup, size_t *cap)
{
    if (l->n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        l->idx = realloc(l->idx, *cap * l->k * sizeof *l->idx);
        l->sup = realloc(l->sup, *cap * sizeof *l->sup);
    }
    memcpy(l->idx + (size_t)l->n * l->k, s, l->k * sizeof *s);
    l->sup[l->n++] = sup;
}

/*  Rule order: antecedent (shorter first, then items), then consequent. */
static int ref_rule_cmp(const void *a, const void *b)
{
    const ref_rule_t *r = a, *s = b;
    if (r->xlen != s->xlen)
        return r->xlen < s->xlen ? -1 : 1;
    for (uint32_t j = 0; j < r->xlen; j++)
        if (r->x[j] != s->x[j])
            return r->x[j] < s->x[j] ? -1 : 1;
    if (r->ylen != s->ylen)
        return r->ylen < s->ylen ? -1 : 1;
    for (uint32_t j = 0; j < r->ylen; j++)
        if (r->y[j] != s->y[j])
            return r->y[j] < s->y[j] ? -1 : 1;
    return 0;
}

/*  Mines DB: every itemset with support >= MINSUP, and every rule X => Y
    (X, Y non-empty, |Y| <= MAXCONS unless 0) with s(X u Y) / s(X) >= MINCONF. */
static void ref_mine(const ref_db_t *db, uint64_t minsup, double minconf, uint32_t maxcons,
                     ref_result_t *r)
{
    memset(r, 0, sizeof *r);
    ref_level_t *lv = NULL;
    uint32_t nlv = 0;
    /* L1 */
    lv = calloc(1, sizeof *lv);
    lv[0].k = 1;
    size_t cap = 0;
    for (uint32_t i = 0; i < db->nitems; i++) {
        uint64_t s = ref_support(db, &i, 1);
        if (s >= minsup)
            ref_level_push(&lv[0], &i, s, &cap);
    }
    nlv = 1;
    while (lv[nlv - 1].n > 1) {
        ref_level_t *p = &lv[nlv - 1], c = {.k = p->k + 1};
        uint32_t k = p->k, *cand = malloc((k + 1) * sizeof *cand), *sub = malloc(k * sizeof *sub);
        cap = 0;
        for (uint32_t a = 0; a < p->n; a++)
            for (uint32_t b = a + 1; b < p->n; b++) {
                const uint32_t *x = p->idx + (size_t)a * k, *y = p->idx + (size_t)b * k;
                if (memcmp(x, y, (k - 1) * sizeof *x) != 0)
                    break; /* sorted: no later b shares the prefix */
                memcpy(cand, x, k * sizeof *x);
                cand[k] = y[k - 1];
                int ok = 1; /* every k-subset must be frequent */
                for (uint32_t drop = 0; drop <= k && ok; drop++) {
                    for (uint32_t j = 0, w = 0; j <= k; j++)
                        if (j != drop)
                            sub[w++] = cand[j];
                    ok = ref_level_find(p, sub) >= 0;
                }
                if (!ok)
                    continue;
                uint64_t s = ref_support(db, cand, k + 1);
                if (s >= minsup)
                    ref_level_push(&c, cand, s, &cap);
            }
        free(cand);
        free(sub);
        lv = realloc(lv, (nlv + 1) * sizeof *lv);
        lv[nlv++] = c;
    }
    /* Itemsets, in original item numbers (the index order is the item order). */
    for (uint32_t l = 0; l < nlv; l++)
        r->nsets += lv[l].n;
    r->sets = calloc(r->nsets + 1, sizeof *r->sets);
    size_t at = 0, rcap = 0;
    for (uint32_t l = 0; l < nlv; l++)
        for (uint32_t i = 0; i < lv[l].n; i++, at++) {
            ref_set_t *s = &r->sets[at];
            s->k = lv[l].k;
            s->sup = lv[l].sup[i];
            s->items = malloc(s->k * sizeof *s->items);
            for (uint32_t j = 0; j < s->k; j++)
                s->items[j] = db->item[lv[l].idx[(size_t)i * s->k + j]];
        }
    /* Rules: every non-empty proper subset X of every frequent Z. */
    for (uint32_t l = 1; l < nlv; l++) {
        uint32_t k = lv[l].k;
        for (uint32_t i = 0; i < lv[l].n; i++) {
            const uint32_t *z = lv[l].idx + (size_t)i * k;
            for (uint64_t mask = 1; mask + 1 < (1ull << k); mask++) {
                uint32_t x[64], y[64], xl = 0, yl = 0;
                for (uint32_t j = 0; j < k; j++)
                    if (mask >> j & 1)
                        x[xl++] = z[j];
                    else
                        y[yl++] = z[j];
                if (maxcons && yl > maxcons)
                    continue;
                long f = ref_level_find(&lv[xl - 1], x);
                uint64_t supx = lv[xl - 1].sup[f], supz = lv[l].sup[i];
                if (!((double)supz / (double)supx + 1e-12 >= minconf))
                    continue;
                if (r->nrules == rcap) {
                    rcap = rcap ? rcap * 2 : 256;
                    r->rules = realloc(r->rules, rcap * sizeof *r->rules);
                }
                ref_rule_t *o = &r->rules[r->nrules++];
                o->xlen = xl;
                o->ylen = yl;
                o->supz = supz;
                o->supx = supx;
                o->x = malloc(xl * sizeof *o->x);
                o->y = malloc(yl * sizeof *o->y);
                for (uint32_t j = 0; j < xl; j++)
                    o->x[j] = db->item[x[j]];
                for (uint32_t j = 0; j < yl; j++)
                    o->y[j] = db->item[y[j]];
            }
        }
    }
    if (r->nrules) /* qsort of NULL is undefined even for no elements */
        qsort(r->rules, r->nrules, sizeof *r->rules, ref_rule_cmp);
    for (uint32_t l = 0; l < nlv; l++) {
        free(lv[l].idx);
        free(lv[l].sup);
    }
    free(lv);
}

static void ref_result_free(ref_result_t *r)
{
    for (size_t i = 0; i < r->nsets; i++)
        free(r->sets[i].items);
    for (size_t i = 0; i < r->nrules; i++) {
        free(r->rules[i].x);
        free(r->rules[i].y);
    }
    free(r->sets);
    free(r->rules);
    memset(r, 0, sizeof *r);
}

#endif
