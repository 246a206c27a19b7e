/*  =========================================================================
    kcount - the built-in key-count table (spm.kcount): byte-string keys to
    64-bit counts, whose merge adds

    @discuss
    What a word count, a histogram of strings or a group-by-and-count
    accumulates. An SI body counts into a hash table (spm_kcount_add) and
    hands it to spm_si_put_kcount, which writes the block sorted by key;
    blocks are merged by walking two sorted lists (an ACC group folds its
    partials one by one), and spm_kcount_next reads a block in key order,
    on an IEU or on the command side.

    The block, little-endian: the number of entries (8 bytes), then per
    entry the key's length (4), the key, its count (8); keys strictly
    increasing in memcmp order (a shorter key before its extensions), so
    that the block of a table is one sequence of bytes and a reader can
    trust the order (validate checks it).
    @end
    =========================================================================
*/
#include "isa/core/keysort.h"
#include "runtime/si.h"
#include "spm/spm_codec.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 65535

/*  The table is built for a word count's inner loop: most adds find their
    key, and two IEUs count at once on cores that share the last cache. A
    slot is 32 bytes and holds a key of up to INLINE bytes whole, with its
    length and its count, so that the add of such a key (every word of a
    text) reads one slot and nothing else: the hash and the compare work on
    the key's two 8-byte words. A longer key is also in the arena (8-byte
    aligned), its first INLINE bytes in the slot. With 8-byte slots that
    pointed into an arena of entries, an add read two cache lines, and two
    IEUs counting 8 MiB blocks took a fifth longer than with these
    (docs/PERFORMANCE.md); with 32-byte slots holding the hash, the count
    and the key's offset, the probes missed the cache on every word and
    examples/wordfreq counted at half the speed of a plain C program's
    table (bench/bench_examples.c). */
#define INLINE 16
typedef struct {
    uint64_t k[2];  /* the key's first INLINE bytes as they lie in memory, zeros after its end */
    uint32_t len;   /* the key's length plus 1; 0: an empty slot */
    uint32_t at;    /* a longer key: its offset in the arena / 8 */
    uint64_t count; /* its count */
} slot_t;

struct spm_kcount {
    slot_t *slots; /* open addressing, a power of two of them, at most 2^31 */
    size_t cap;    /* slots */
    size_t n;      /* keys */
    char *arena;   /* the keys longer than INLINE, one after another */
    size_t used;   /* bytes used in the arena */
    size_t acap;   /* bytes allocated */
};

/*  The bytes of a key after its first INLINE (KLEN of them at P) mixed
    into H. */
static uint64_t hash_rest(uint64_t h, const unsigned char *p, size_t klen)
{
    size_t i = INLINE;
    for (; i + 8 <= klen; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ (h >> 29) ^ w) * 0xff51afd7ed558ccdull;
    }
    uint64_t w = 0;
    for (; i < klen; i++)
        w = w << 8 | p[i];
    return (h ^ (h >> 29) ^ w) * 0xc4ceb9fe1a85ec53ull;
}

/*  The hash of the key of KLEN bytes whose first INLINE bytes are K (zeros
    after its end) and whose whole bytes are at P: three multiplications
    for a word, inlined in the add, well mixed in its low bits. */
static inline uint64_t hash(const uint64_t k[2], const unsigned char *p, size_t klen)
{
    uint64_t h = (k[0] ^ 0x9e3779b97f4a7c15ull ^ klen) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    h = (h ^ k[1]) * 0xc4ceb9fe1a85ec53ull;
    if (klen > INLINE)
        h = hash_rest(h, p, klen);
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static uint64_t load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static uint64_t load32(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/*  K as the first INLINE bytes of the KLEN bytes at P, zeros after them,
    read as two overlapping loads (little-endian) rather than byte by byte:
    a loop whose trip count is a word's length mispredicted its exit on
    most words of a text. */
static void head(uint64_t k[2], const unsigned char *p, size_t klen)
{
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    unsigned char *b = (unsigned char *)k;
    k[0] = k[1] = 0;
    for (size_t i = 0; i < klen && i < INLINE; i++)
        b[i] = p[i];
    return;
#endif
    if (klen >= 8) {
        k[0] = load64(p);
        k[1] = klen >= INLINE ? load64(p + 8)
               : klen > 8     ? load64(p + klen - 8) >> (8 * (INLINE - klen))
                              : 0;
    } else if (klen >= 4) {
        k[0] = load32(p) | (load32(p + klen - 4) >> (8 * (8 - klen))) << 32;
        k[1] = 0;
    } else {
        k[0] = klen ? (uint64_t)p[0] | (uint64_t)p[klen / 2] << (8 * (klen / 2)) |
                          (uint64_t)p[klen - 1] << (8 * (klen - 1))
                    : 0;
        k[1] = 0;
    }
}

/*  The bytes of S's key. */
static const char *key_of(const spm_kcount_t *t, const slot_t *s)
{
    return s->len - 1 > INLINE ? t->arena + (size_t)s->at * 8 : (const char *)s->k;
}

/*  The buffers of the last table this thread destroyed, kept for its next
    one: an IEU runs one SI after another, each counting a block into a
    table of about the same size, and a fresh table paid its slots in page
    faults, every doubling's rehash and the arena's copies again (a tenth
    of a word count's SI, bench/bench_examples.c). Only a table up to
    SPARE_SLOTS slots and SPARE_ARENA bytes is kept, so a thread holds at
    most 24 MiB it does not use. */
#define SPARE_SLOTS ((size_t)1 << 19)
#define SPARE_ARENA ((size_t)8 << 20)
static pthread_key_t spare_key; /* this thread's spare table, freed when it ends */
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void free_table(void *table)
{
    spm_kcount_t *t = table;
    free(t->slots);
    free(t->arena);
    free(t);
}

static void spare_init(void)
{
    pthread_key_create(&spare_key, free_table);
}

spm_kcount_t *spm_kcount_new(void)
{
    pthread_once(&spare_once, spare_init);
    spm_kcount_t *t = pthread_getspecific(spare_key);
    if (t) {
        pthread_setspecific(spare_key, NULL);
        memset(t->slots, 0, t->cap * sizeof *t->slots);
        t->n = 0;
        t->used = 0;
        return t;
    }
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = 1024;
    t->slots = calloc(t->cap, sizeof *t->slots);
    if (!t->slots) {
        free(t);
        return NULL;
    }
    return t;
}

void spm_kcount_destroy(spm_kcount_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_kcount_t *t = *self_p;
    *self_p = NULL;
    pthread_once(&spare_once, spare_init);
    if (t->cap <= SPARE_SLOTS && t->acap <= SPARE_ARENA && !pthread_getspecific(spare_key) &&
        pthread_setspecific(spare_key, t) == 0)
        return;
    free_table(t);
}

size_t spm_kcount_size(const spm_kcount_t *t)
{
    return t->n;
}

static int grow(spm_kcount_t *t)
{
    size_t cap = t->cap * 2;
    if (cap > (size_t)1 << 31)
        return SPM_ENOMEM;
    slot_t *s = calloc(cap, sizeof *s);
    if (!s)
        return SPM_ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        const slot_t *o = &t->slots[i];
        if (!o->len)
            continue;
        size_t j = hash(o->k, (const unsigned char *)key_of(t, o), o->len - 1) & (cap - 1);
        while (s[j].len)
            j = (j + 1) & (cap - 1);
        s[j] = *o;
    }
    free(t->slots);
    t->slots = s;
    t->cap = cap;
    return 0;
}

/*  Puts the KLEN bytes at KEY (longer than INLINE) at the arena's end;
    sets *AT to their offset / 8. Returns 0 or SPM_ENOMEM. */
static int keep_key(spm_kcount_t *t, const void *key, size_t klen, uint32_t *at)
{
    size_t size = (klen + 7) & ~(size_t)7;
    if (t->used + size > t->acap) {
        size_t c = (t->acap + size) * 2;
        char *a = c / 8 < UINT32_MAX ? realloc(t->arena, c) : NULL;
        if (!a)
            return spm_error(SPM_ENOMEM, "out of memory");
        t->arena = a;
        t->acap = c;
    }
    memcpy(t->arena + t->used, key, klen);
    *at = (uint32_t)(t->used / 8);
    t->used += size;
    return 0;
}

int spm_kcount_add(spm_kcount_t *t, const void *key, size_t klen, uint64_t n)
{
    if (klen > KEY_MAX)
        return spm_error(SPM_ERANGE, "a key of %zu bytes (at most %d)", klen, KEY_MAX);
    const unsigned char *p = key;
    uint64_t k[2];
    head(k, p, klen);
    uint32_t len = (uint32_t)klen + 1;
    size_t j = hash(k, p, klen) & (t->cap - 1);
    for (; t->slots[j].len; j = (j + 1) & (t->cap - 1)) {
        slot_t *s = &t->slots[j];
        if (s->k[0] == k[0] && s->k[1] == k[1] && s->len == len &&
            (klen <= INLINE || !memcmp(key_of(t, s), key, klen))) {
            s->count += n;
            return 0;
        }
    }
    uint32_t at = 0;
    if (klen > INLINE && keep_key(t, key, klen, &at) != 0)
        return SPM_ENOMEM;
    t->slots[j] = (slot_t){{k[0], k[1]}, len, at, n};
    if (++t->n * 2 > t->cap && grow(t) != 0)
        return spm_error(SPM_ENOMEM, "out of memory");
    return 0;
}

static int keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

/*  The first 8 bytes of the KLEN bytes at KEY as a number in their memcmp
    order (zeros past a shorter key's end: keys equal there are put in
    order after). */
static uint64_t prefix(const char *key, size_t klen)
{
    unsigned char b[8] = {0};
    memcpy(b, key, klen < 8 ? klen : 8);
    uint64_t k = 0;
    for (int i = 0; i < 8; i++)
        k = k << 8 | b[i];
    return k;
}

typedef struct {
    const spm_kcount_t *t;
    slot_t *const *v;
} ties_t;

static int tie_cmp(uint32_t x, uint32_t y, void *arg)
{
    const ties_t *a = arg;
    const slot_t *sx = a->v[x], *sy = a->v[y];
    return keycmp(key_of(a->t, sx), sx->len - 1, key_of(a->t, sy), sy->len - 1);
}

static unsigned char *put_entry(unsigned char *p, const char *key, uint32_t klen, uint64_t count)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(klen >> (8 * i));
    memcpy(p + 4, key, klen);
    spm_put_le64(p + 4 + klen, count);
    return p + 12 + klen;
}

/*  Sorted by a radix sort of the keys' first 8 bytes (then the ties by
    their whole keys): a comparison sort, with a memcmp of two entries
    the cache did not hold per comparison, was a sixth of a word count's
    SI. */
int spm_si_put_kcount(spm_si_ctx_t *ctx, size_t i, spm_kcount_t **self)
{
    spm_kcount_t *t = *self;
    *self = NULL;
    size_t m = 0, bytes = 8, n = t->n ? t->n : 1;
    slot_t **v = malloc(n * sizeof *v);
    spm_keyed_t *a = malloc(n * sizeof *a), *scratch = malloc(n * sizeof *scratch);
    for (size_t j = 0; v && a && j < t->cap; j++) {
        slot_t *s = &t->slots[j];
        if (!s->len)
            continue;
        v[m] = s;
        a[m] = (spm_keyed_t){.key = prefix(key_of(t, s), s->len - 1), .i = (uint32_t)m};
        bytes += 12 + s->len - 1;
        m++;
    }
    unsigned char *out = v && a && scratch ? malloc(bytes) : NULL;
    if (!out) {
        free(v), free(a), free(scratch);
        spm_kcount_destroy(&t);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    spm_keyed_t *o = spm_keysort(a, scratch, m);
    spm_keysort_ties(o, m, tie_cmp, &(ties_t){t, v});
    spm_put_le64(out, m);
    unsigned char *p = out + 8;
    for (size_t j = 0; j < m; j++) {
        const slot_t *s = v[o[j].i];
        p = put_entry(p, key_of(t, s), s->len - 1, s->count);
    }
    free(v), free(a), free(scratch);
    spm_kcount_destroy(&t);
    if (spm_si_output(ctx, i, out, bytes) != 0)
        return spm_error(SPM_ERANGE, "operand %zu is not one the SI writes", i);
    return 0;
}

int spm_kcount_next(const void *data, size_t len, size_t *pos, const char **key, size_t *klen,
                    uint64_t *count)
{
    const unsigned char *p = data;
    if (*pos == 0) {
        if (len < 8)
            return SPM_EFORMAT;
        *pos = 8;
    }
    if (*pos == len)
        return 0;
    if (len - *pos < 12)
        return SPM_EFORMAT;
    uint32_t kl = spm_le32(p + *pos);
    if (kl > KEY_MAX || len - *pos - 12 < kl)
        return SPM_EFORMAT;
    *key = (const char *)p + *pos + 4;
    *klen = kl;
    *count = spm_le64(p + *pos + 4 + kl);
    *pos += 12 + (size_t)kl;
    return 1;
}

static int kcount_validate(const void *data, size_t len)
{
    size_t pos = 0, klen, plen = 0;
    const char *key, *prev = NULL;
    uint64_t count, n = 0;
    int r;
    while ((r = spm_kcount_next(data, len, &pos, &key, &klen, &count)) == 1) {
        if (prev && keycmp(prev, plen, key, klen) >= 0)
            return SPM_EFORMAT; /* out of order, or twice */
        prev = key;
        plen = klen;
        n++;
    }
    return r == 0 && spm_le64(data) == n ? 0 : SPM_EFORMAT;
}

/*  A and B, two sorted tables, as one: the counts of equal keys added. */
static int kcount_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                        size_t *outlen)
{
    if (!a || alen == 0)
        a = "\0\0\0\0\0\0\0", alen = 8;
    unsigned char *m = malloc(alen + blen);
    if (!m)
        return spm_error(SPM_ENOMEM, "out of memory");
    size_t pa = 0, pb = 0, ka = 0, kb = 0, n = 0;
    const char *xa = NULL, *xb = NULL;
    uint64_t ca = 0, cb = 0;
    int ra = spm_kcount_next(a, alen, &pa, &xa, &ka, &ca);
    int rb = spm_kcount_next(b, blen, &pb, &xb, &kb, &cb);
    unsigned char *p = m + 8;
    while (ra == 1 || rb == 1) {
        int c = ra != 1 ? 1 : rb != 1 ? -1 : keycmp(xa, ka, xb, kb);
        if (c <= 0)
            p = put_entry(p, xa, (uint32_t)ka, c == 0 ? ca + cb : ca);
        else
            p = put_entry(p, xb, (uint32_t)kb, cb);
        n++;
        if (c <= 0)
            ra = spm_kcount_next(a, alen, &pa, &xa, &ka, &ca);
        if (c >= 0)
            rb = spm_kcount_next(b, blen, &pb, &xb, &kb, &cb);
    }
    if (ra < 0 || rb < 0) {
        free(m);
        return spm_error(SPM_EFORMAT, "a malformed key-count table");
    }
    spm_put_le64(m, n);
    *out = m;
    *outlen = (size_t)(p - m);
    return 0;
}

static void kcount_summary(const void *data, size_t len, char *buf, size_t size)
{
    snprintf(buf, size, "%llu keys, %zu bytes", (unsigned long long)(len >= 8 ? spm_le64(data) : 0),
             len);
}

SPM_CONSTRUCTOR(kcount)
{
    spm_sdb_type_register(&(spm_sdb_type_t){.name = SPM_KCOUNT,
                                            .validate = kcount_validate,
                                            .merge = kcount_merge,
                                            .summary = kcount_summary});
}
