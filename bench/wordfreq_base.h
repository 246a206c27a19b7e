/*  wordfreq_base - the one-process word count bench_examples measures
    examples/wordfreq against, written as a competent C programmer would
    write it without spm: read the file with fread in 16 MiB chunks, count
    each word in one open-addressing hash table (linear probing, FNV-1a,
    keys in one arena), then sort the distinct words and print them.

    Its output is wordfreq's, which is what `tr -cs 'A-Za-z' '\n' | tr A-Z
    a-z | sort | uniq -c` prints with LC_ALL=C: a word is a run of ASCII
    letters, lowercased; every line is "%7llu WORD"; words in byte order;
    an empty word first when the file starts with a non-letter.
    Header-only; the benchmark includes it. */
#ifndef SPM_WORDFREQ_BASE_H_INCLUDED
#define SPM_WORDFREQ_BASE_H_INCLUDED

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t hash;  /* FNV-1a of the word; 0: an empty slot */
    uint64_t count; /* times seen */
    size_t at;      /* the word's offset in the arena */
    size_t len;     /* its length */
} wfb_slot_t;

typedef struct {
    wfb_slot_t *slots; /* capacity entries, a power of two */
    size_t capacity, used;
    char *arena; /* every distinct word, one after another */
    size_t arena_len, arena_cap;
} wfb_table_t;

static const char *wfb_arena; /* for the sort's comparator */

static inline int wfb_cmp(const void *a, const void *b)
{
    const wfb_slot_t *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(wfb_arena + x->at, wfb_arena + y->at, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/*  Doubles the table's slots. Returns 0 or -1 when out of memory. */
static inline int wfb_grow(wfb_table_t *t)
{
    size_t cap = t->capacity * 2;
    wfb_slot_t *s = calloc(cap, sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < t->capacity; i++)
        if (t->slots[i].hash) {
            size_t j = t->slots[i].hash & (cap - 1);
            while (s[j].hash)
                j = (j + 1) & (cap - 1);
            s[j] = t->slots[i];
        }
    free(t->slots);
    t->slots = s;
    t->capacity = cap;
    return 0;
}

/*  Counts the LEN bytes at W once. Returns 0 or -1 when out of memory. */
static inline int wfb_add(wfb_table_t *t, const char *w, size_t len)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)w[i]) * 1099511628211ull;
    h |= !h; /* 0 marks an empty slot */
    size_t j = h & (t->capacity - 1);
    for (; t->slots[j].hash; j = (j + 1) & (t->capacity - 1))
        if (t->slots[j].hash == h && t->slots[j].len == len &&
            !memcmp(t->arena + t->slots[j].at, w, len)) {
            t->slots[j].count++;
            return 0;
        }
    if (t->arena_len + len > t->arena_cap) {
        size_t cap = (t->arena_len + len) * 2;
        char *a = realloc(t->arena, cap);
        if (!a)
            return -1;
        t->arena = a, t->arena_cap = cap;
    }
    memcpy(t->arena + t->arena_len, w, len);
    t->slots[j] = (wfb_slot_t){h, 1, t->arena_len, len};
    t->arena_len += len;
    return ++t->used * 2 > t->capacity ? wfb_grow(t) : 0;
}

/*  Counts the words of the file at PATH and prints them to OUT. Returns 0,
    or -1 (with a message on stderr) when the file cannot be read or
    memory runs out. */
static inline int wordfreq_base(const char *path, FILE *out)
{
    enum { CHUNK = 16 << 20 };
    FILE *in = fopen(path, "rb");
    wfb_table_t t = {.capacity = 1 << 16};
    t.slots = calloc(t.capacity, sizeof *t.slots);
    char *buf = malloc(CHUNK), word[65536];
    size_t w = 0, n, total = 0;
    int rc = in && t.slots && buf ? 0 : -1;
    while (rc == 0 && (n = fread(buf, 1, CHUNK, in)) > 0) {
        if (total == 0 && !((buf[0] | 32) >= 'a' && (buf[0] | 32) <= 'z'))
            rc = wfb_add(&t, "", 0); /* tr's empty first line */
        total += n;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            unsigned char c = (unsigned char)buf[i] | 32;
            if (c >= 'a' && c <= 'z') {
                if (w < sizeof word)
                    word[w++] = (char)c;
            } else if (w > 0) {
                rc = wfb_add(&t, word, w);
                w = 0;
            }
        }
    }
    if (rc == 0 && (ferror(in) || (w > 0 && wfb_add(&t, word, w) != 0)))
        rc = -1;
    wfb_slot_t *all = rc == 0 ? malloc((t.used + 1) * sizeof *all) : NULL;
    size_t k = 0;
    for (size_t i = 0; all && i < t.capacity; i++)
        if (t.slots[i].hash)
            all[k++] = t.slots[i];
    wfb_arena = t.arena;
    if (all)
        qsort(all, k, sizeof *all, wfb_cmp);
    for (size_t i = 0; all && i < k; i++)
        fprintf(out, "%7llu %.*s\n", (unsigned long long)all[i].count, (int)all[i].len,
                t.arena + all[i].at);
    if (rc != 0 || !all)
        fprintf(stderr, "wordfreq_base: %s: cannot read it or out of memory\n", path);
    rc = rc == 0 && all ? 0 : -1;
    free(all);
    free(t.slots);
    free(t.arena);
    free(buf);
    if (in)
        fclose(in);
    return rc;
}

#endif
