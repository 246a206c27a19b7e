/*  =========================================================================
    eclat_base - a sequential depth-first miner: bench_mine's baseline

    @header
    What one thread does with the same file, timed as spm mine is: read
    the FIMI file, find the frequent itemsets, write them in spm's text
    format (byte for byte, so the bench compares the two files). It shares
    no code with isa/mining or programs/apriori. Header-only; every
    function is static.
    @discuss
    Eclat (Zaki, 2000) over vertical tidsets. Items are taken in
    increasing number, so a walk that extends each set with later items
    meets the sets of every length in output order (length, then items):
    each length's lines go to a buffer of their own and the buffers are
    written one after the other, with no sort. A tidset is a bitset over
    the transactions, kept as its non-zero words with their indices once
    fewer than a quarter of them are non-zero; a set P a b gets the tidset
    of P a ANDed with b's bitset, so an extension costs the words of the
    prefix, not of the database, on sparse data. Pairs are counted
    from the transactions first (a matrix of frequent items, up to 4,096
    of them) and an extension b of a set ending in a is tried only when
    {a, b} is frequent.

    What it does not do that a tuned miner does (Borgelt's eclat, say):
    order items by support (rarest first keeps classes small), diffsets,
    perfect-extension pruning. It is a plain baseline, not the best one.
        double secs;
        eb_mine("chess.dat", 0.6, 0, "out.txt", &secs);  -- 0, or -1 (message on stderr)
    @end
    =========================================================================
*/
#ifndef SPM_ECLAT_BASE_H_INCLUDED
#define SPM_ECLAT_BASE_H_INCLUDED

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define EB_MAX_ITEM (1u << 24) /* items above this are refused */
#define EB_MAX_K 256
#define EB_PAIR_MAX 4096 /* frequent items counted in a pair matrix */

/*  A tidset: N words, at IDX (NULL: all words, in order). */
typedef struct {
    uint64_t *w;
    uint32_t *idx;
    uint32_t n;
    uint64_t sup;
} eb_tids_t;

typedef struct {
    char *p;
    size_t len, cap;
} eb_buf_t;

typedef struct {
    uint32_t nf;                /* frequent items */
    uint32_t *item;             /* their numbers, increasing */
    uint64_t *sup;              /* their supports */
    uint32_t words;             /* words of a dense tidset */
    uint32_t *pair;             /* nf x nf pair counts (NULL: not counted) */
    uint64_t *bits;             /* nf dense tidsets of words each, the items' */
    uint64_t minsup;            /* absolute */
    char *arena;                /* tidsets of the walk, a stack */
    size_t top, size;           /* its use and size */
    eb_buf_t out[EB_MAX_K + 1]; /* the lines of each length */
    uint64_t nsets;             /* itemsets found */
    uint32_t prefix[EB_MAX_K];  /* the set being extended, as ranks */
    int failed;                 /* the arena ran out */
} eb_t;

static void *eb_alloc(eb_t *e, size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    if (e->top + bytes > e->size) {
        e->failed = 1;
        return NULL;
    }
    void *p = e->arena + e->top;
    e->top += bytes;
    return p;
}

static void eb_put(eb_buf_t *b, const char *s, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1 << 16;
        while (cap < b->len + n)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "eclat_base: out of memory\n");
            exit(1);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

/*  Appends V in decimal and then the character END. */
static char *eb_u64(char *p, uint64_t v, char end)
{
    char t[24];
    int n = 0;
    do
        t[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = t[--n];
    *p++ = end;
    return p;
}

/*  One line: the prefix's K items and the support. */
static void eb_emit(eb_t *e, uint32_t k, uint64_t sup)
{
    char line[EB_MAX_K * 12 + 32], *p = line;
    for (uint32_t i = 0; i < k; i++)
        p = eb_u64(p, e->item[e->prefix[i]], ' ');
    *p++ = '(';
    p = eb_u64(p, sup, ')');
    *p++ = '\n';
    eb_put(&e->out[k], line, (size_t)(p - line));
    e->nsets++;
}

/*  The popcount instruction where the compiler would otherwise call a
    function for it (x86-64 without -mpopcnt). */
#if defined(__x86_64__) && !defined(__POPCNT__)
#define EB_POPCNT __attribute__((target("popcnt")))
#else
#define EB_POPCNT
#endif

/*  R = A & B, with its support; sparse when under a quarter of the words
    are non-zero. R's words come from the arena. */
EB_POPCNT static int eb_and(eb_t *e, const eb_tids_t *a, const eb_tids_t *b, eb_tids_t *r)
{
    if (a->idx && !b->idx) {
        const eb_tids_t *t = a;
        a = b;
        b = t;
    }
    size_t mark = e->top;
    uint32_t cap = a->n < b->n ? a->n : b->n;
    r->w = eb_alloc(e, (size_t)cap * 8);
    r->idx = eb_alloc(e, (size_t)cap * 4);
    if (!r->w || !r->idx)
        return -1;
    uint32_t n = 0;
    uint64_t sup = 0;
    if (!a->idx && !b->idx) {
        for (uint32_t i = 0; i < a->n; i++) {
            uint64_t w = a->w[i] & b->w[i];
            r->w[i] = w;
            sup += (uint64_t)__builtin_popcountll(w);
            n += w != 0;
        }
        if (n * 4 >= a->n) { /* stays dense: give back the index */
            e->top = mark + (((size_t)cap * 8 + 63) & ~(size_t)63);
            r->idx = NULL;
            r->n = a->n;
            r->sup = sup;
            return 0;
        }
        n = 0;
        for (uint32_t i = 0; i < a->n; i++)
            if (r->w[i]) {
                r->w[n] = r->w[i];
                r->idx[n++] = i;
            }
    } else if (!a->idx) { /* a dense, b sparse */
        for (uint32_t i = 0; i < b->n; i++) {
            uint64_t w = a->w[b->idx[i]] & b->w[i];
            r->w[n] = w;
            r->idx[n] = b->idx[i];
            sup += (uint64_t)__builtin_popcountll(w);
            n += w != 0;
        }
    } else {
        for (uint32_t i = 0, j = 0; i < a->n && j < b->n;) {
            if (a->idx[i] < b->idx[j]) {
                i++;
            } else if (a->idx[i] > b->idx[j]) {
                j++;
            } else {
                uint64_t w = a->w[i] & b->w[j];
                r->w[n] = w;
                r->idx[n] = a->idx[i];
                sup += (uint64_t)__builtin_popcountll(w);
                n += w != 0;
                i++;
                j++;
            }
        }
    }
    r->n = n;
    r->sup = sup;
    return 0;
}

/*  Mines the class of the prefix of length K, whose members are the items
    M[0..N) with the tidsets T (prefix plus member): each member is
    written, then its own class of the later members is mined. */
static void eb_class(eb_t *e, uint32_t k, const uint32_t *m, const eb_tids_t *t, uint32_t n)
{
    for (uint32_t i = 0; i < n && !e->failed; i++) {
        e->prefix[k] = m[i];
        eb_emit(e, k + 1, t[i].sup);
        if (k + 2 > EB_MAX_K)
            continue;
        size_t mark = e->top;
        uint32_t *cm = eb_alloc(e, (size_t)(n - i) * 4);
        eb_tids_t *ct = eb_alloc(e, (size_t)(n - i) * sizeof *ct);
        if (!cm || !ct)
            return;
        uint32_t cn = 0;
        for (uint32_t j = i + 1; j < n; j++) {
            if (e->pair && e->pair[(size_t)m[i] * e->nf + m[j]] < e->minsup)
                continue;
            /* T(P a b) = T(P a) & T(b): its cost is T(P a)'s words */
            eb_tids_t b = {.w = e->bits + (size_t)m[j] * e->words, .n = e->words};
            size_t at = e->top;
            if (eb_and(e, &t[i], &b, &ct[cn]) != 0)
                return;
            if (ct[cn].sup >= e->minsup)
                cm[cn++] = m[j];
            else
                e->top = at;
        }
        eb_class(e, k + 1, cm, ct, cn);
        e->top = mark;
    }
}

/*  Reads PATH whole into memory (NUL-terminated). */
static char *eb_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *p = malloc(cap + 1);
    for (size_t got; p && (got = fread(p + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *q = realloc(p, 2 * cap + 1);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (p)
        p[n] = '\0';
    *len = n;
    return p;
}

/*  The transactions of a FIMI text: transaction t holds the items
    ITEM[OFF[t] .. OFF[t + 1]) as written. */
typedef struct {
    uint32_t *item;
    uint64_t *off;
    uint64_t n, nitems;
} eb_db_t;

static int eb_push(void **v, uint64_t *cap, uint64_t n, size_t size)
{
    if (n < *cap)
        return 0;
    uint64_t c = *cap ? *cap * 2 : 1 << 16;
    void *p = realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

/*  Parses the text P of LEN bytes into DB. Returns 0, or -1 on a
    character other than digits and blanks, an item of EB_MAX_ITEM or
    more, or no memory. */
static int eb_parse(const char *p, size_t len, eb_db_t *db)
{
    const char *end = p + len;
    uint64_t icap = 0, ocap = 0;
    *db = (eb_db_t){0};
    if (eb_push((void **)&db->off, &ocap, 0, 8) != 0)
        return -1;
    db->off[0] = 0;
    while (p < end) {
        while (p < end && *p != '\n') {
            if (*p >= '0' && *p <= '9') {
                uint64_t v = 0;
                while (p < end && *p >= '0' && *p <= '9')
                    v = v * 10 + (uint64_t)(*p++ - '0');
                if (v >= EB_MAX_ITEM || eb_push((void **)&db->item, &icap, db->nitems, 4) != 0)
                    return -1;
                db->item[db->nitems++] = (uint32_t)v;
            } else if (*p == ' ' || *p == '\t' || *p == '\r') {
                p++;
            } else {
                return -1;
            }
        }
        p++;
        if (eb_push((void **)&db->off, &ocap, db->n + 2, 8) != 0)
            return -1;
        db->off[++db->n] = db->nitems;
    }
    return 0;
}

/*  Mines PATH at SUPPORT (a fraction, or an absolute count when COUNT is
    non-zero) and writes the itemsets to OUT. SECS: the wall time of it
    all. Returns 0, or -1 with a message on stderr. */
static int eb_mine(const char *path, double support, uint64_t count, const char *out, double *secs)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t len;
    char *text = eb_read(path, &len);
    if (!text) {
        fprintf(stderr, "eclat_base: %s: cannot read\n", path);
        return -1;
    }
    uint32_t *cnt = calloc(EB_MAX_ITEM, 4), *seen = calloc(EB_MAX_ITEM, 4), *rank = NULL;
    eb_t e = {0};
    eb_tids_t *tids = NULL;
    uint32_t *members = NULL, *row = NULL;
    uint64_t ntrans = 0, *bits = NULL;
    eb_db_t db = {0};
    int rc = -1;
    uint32_t maxitem = 0;
    if (!cnt || !seen)
        goto out;
    if (eb_parse(text, len, &db) != 0) {
        fprintf(stderr, "eclat_base: %s: not a FIMI file of items below %u\n", path, EB_MAX_ITEM);
        goto out;
    }
    ntrans = db.n;
    for (uint64_t t = 0; t < db.n; t++)
        for (uint64_t i = db.off[t]; i < db.off[t + 1]; i++) {
            uint32_t item = db.item[i];
            if (seen[item] != t + 1) {
                seen[item] = (uint32_t)t + 1;
                cnt[item]++;
                maxitem = item > maxitem ? item : maxitem;
            }
        }
    e.minsup =
        count ? count
              : (uint64_t)fmax(1, ceil(support * (double)ntrans - 1e-9 * (double)(ntrans + 1)));
    rank = malloc(((size_t)maxitem + 1) * 4);
    e.item = malloc(((size_t)maxitem + 1) * 4);
    e.sup = malloc(((size_t)maxitem + 1) * 8);
    row = malloc(((size_t)maxitem + 1) * 4);
    if (!rank || !e.item || !e.sup || !row)
        goto out;
    for (uint32_t i = 0; i <= maxitem; i++) {
        rank[i] = UINT32_MAX;
        if (cnt[i] >= e.minsup) {
            rank[i] = e.nf;
            e.item[e.nf] = i;
            e.sup[e.nf++] = cnt[i];
        }
    }
    e.words = (uint32_t)((ntrans + 63) / 64);
    bits = calloc((size_t)e.nf * e.words + 1, 8);
    if (e.nf <= EB_PAIR_MAX)
        e.pair = calloc((size_t)e.nf * e.nf + 1, 4);
    if (!bits || (e.nf <= EB_PAIR_MAX && !e.pair))
        goto out;
    for (uint64_t t = 0; t < db.n; t++) {
        uint32_t nrow = 0;
        for (uint64_t i = db.off[t]; i < db.off[t + 1]; i++) {
            uint32_t item = db.item[i], r = rank[item];
            if (r == UINT32_MAX || seen[item] == ntrans + 2 + t)
                continue; /* not frequent, or a repeat */
            seen[item] = (uint32_t)(ntrans + 2 + t);
            bits[(size_t)r * e.words + t / 64] |= 1ull << (t % 64);
            for (uint32_t j = 0; e.pair && j < nrow; j++) {
                uint32_t a = row[j] < r ? row[j] : r, b = row[j] < r ? r : row[j];
                e.pair[(size_t)a * e.nf + b]++;
            }
            row[nrow++] = r;
        }
    }
    /* the walk's tidsets: at most the depth's classes, never all touched */
    e.size = (size_t)16 << 30;
    e.arena = mmap(NULL, e.size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    tids = calloc((size_t)e.nf + 1, sizeof *tids);
    members = calloc((size_t)e.nf + 1, 4);
    if (e.arena == MAP_FAILED || !tids || !members) {
        e.arena = NULL;
        goto out;
    }
    e.bits = bits;
    for (uint32_t i = 0; i < e.nf; i++) {
        members[i] = i;
        eb_tids_t all = {.w = bits + (size_t)i * e.words, .n = e.words, .sup = e.sup[i]};
        if (eb_and(&e, &all, &all, &tids[i]) != 0) /* sparse where the item is rare */
            goto out;
    }
    eb_class(&e, 0, members, tids, e.nf);
    if (e.failed)
        goto out;
    FILE *f = fopen(out, "w");
    if (!f)
        goto out;
    fprintf(f,
            "# %llu frequent itemsets, minimum support %llu of %llu transactions\n"
            "# items (support count)\n",
            (unsigned long long)e.nsets, (unsigned long long)e.minsup, (unsigned long long)ntrans);
    for (int k = 1; k <= EB_MAX_K; k++)
        if (e.out[k].len)
            fwrite(e.out[k].p, 1, e.out[k].len, f);
    rc = fclose(f) == 0 ? 0 : -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
out:
    if (rc != 0 && !e.failed)
        fprintf(stderr, "eclat_base: %s: failed (out of memory or arena)\n", path);
    for (int k = 0; k <= EB_MAX_K; k++)
        free(e.out[k].p);
    if (e.arena)
        munmap(e.arena, e.size);
    free(text);
    free(db.item);
    free(db.off);
    free(cnt);
    free(seen);
    free(rank);
    free(row);
    free(e.item);
    free(e.sup);
    free(e.pair);
    free(bits);
    free(tids);
    free(members);
    return rc;
}

#endif
