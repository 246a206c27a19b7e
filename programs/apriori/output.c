/*  =========================================================================
    output - fetching the results of an apriori job and writing them
    =========================================================================
*/
#include "programs/apriori/output.h"
#include "programs/apriori/ahead.h"
#include "programs/apriori/runs.h"
#include "base/json.h"
#include "isa/core/numfmt.h"
#include "isa/mining/isa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*  The output streams belong to this thread alone: skip stdio's per-call
    locking, which costs more than the formatting for a million rules. */
#define fputc fputc_unlocked
#define fputs fputs_unlocked
#define fwrite fwrite_unlocked

/*  A sort record of an itemset: the head, then k items. */
typedef struct {
    uint32_t k, pad;
    uint64_t count;
} set_head_t;

/*  A sort record of a rule: the head, then X and Y. */
typedef struct {
    uint32_t xlen, ylen;
    uint64_t supz, supx, supy;
} rule_head_t;

#define SET_ITEMS(h) ((const uint32_t *)((const set_head_t *)(h) + 1))
#define RULE_ITEMS(h) ((const uint32_t *)((const rule_head_t *)(h) + 1))

/*  Orders two lists: shorter first, then by items. */
static int list_cmp(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
    if (na != nb)
        return na < nb ? -1 : 1;
    return spm_mining_set_cmp(a, b, na);
}

/*  Itemsets by length, then items. */
static int cmp_set(const void *a, const void *b, void *arg)
{
    (void)arg;
    const set_head_t *x = a, *y = b;
    return list_cmp(SET_ITEMS(x), x->k, SET_ITEMS(y), y->k);
}

/*  Rules in the output order: antecedent, then consequent. */
static int cmp_rule(const void *a, const void *b, void *arg)
{
    (void)arg;
    const rule_head_t *r = a, *q = b;
    const uint32_t *x = RULE_ITEMS(r), *w = RULE_ITEMS(q);
    return spm_mining_rule_cmp(x, r->xlen, x + r->xlen, r->ylen, w, q->xlen, w + q->xlen, q->ylen);
}

/*  Rules by consequent (the itemsets' order), then antecedent: for the join. */
static int cmp_rule_y(const void *a, const void *b, void *arg)
{
    (void)arg;
    const rule_head_t *r = a, *q = b;
    const uint32_t *x = RULE_ITEMS(r), *w = RULE_ITEMS(q);
    return spm_mining_rule_cmp(x + r->xlen, r->ylen, x, r->xlen, w + q->xlen, q->ylen, w, q->xlen);
}

/*  Keys of cmp_set, cmp_rule and cmp_rule_y; ARG points to B. */
static uint64_t key_set(const void *a, void *arg)
{
    const set_head_t *x = a;
    return spm_mine_list_key(SET_ITEMS(x), x->k, *(const unsigned *)arg);
}

static uint64_t key_rule(const void *a, void *arg)
{
    const rule_head_t *r = a;
    return spm_mine_list_key(RULE_ITEMS(r), r->xlen, *(const unsigned *)arg);
}

static uint64_t key_rule_y(const void *a, void *arg)
{
    const rule_head_t *r = a;
    return spm_mine_list_key(RULE_ITEMS(r) + r->xlen, r->ylen, *(const unsigned *)arg);
}

/*  Sorts the N items at A in place (itemsets are short: insertion sort). */
static void sort_items(uint32_t *a, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && a[j - 1] > a[j]; j--) {
            uint32_t t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
}

/*  What fetching needs besides the output. */
typedef struct {
    spm_mine_get_fn *get; /* how blocks are fetched */
    void *vm;             /* from where */
    uint32_t *item;       /* item[rank] (NULL: no frequent items) */
    uint64_t *supp;       /* supp[rank]: the item's support, s(Y) of a one-item Y */
    uint32_t nitems;      /* ranks */
    unsigned bits;        /* bits of the largest item (the sorts' keys) */
    uint64_t *rec;        /* one record being built: head and items */
    spm_mine_out_t *o;    /* where the blocks fetched go */
    uint32_t k;           /* fetch_level: the length of its sets */
    uint32_t (*one)[3];   /* fetch_ones: m (item, support) entries */
    size_t m;
    spm_extsort_t *sort; /* fetch_rules: the sort its rules go to */
    spm_extsort_t *ones; /* and where those of a one-item Y go (NULL: to sort) */
    uint64_t *key;       /* and scratch for s(Y) (NULL: not looked up) */
} fetch_t;

/*  Blocks asked for at once. A round trip each, one at a time, made the
    dense set at 5% (163 class blocks of about 250 KB) 35 ms slower,
    medians of 9. A few at a time bound what is in flight to a few blocks:
    a class block mostly stops past 2 MiB (SPM_MINING_CLASS_CAP / 16), a
    rule block at SPM_APRIORI_RULE_BYTES. */
#define FETCH_AHEAD 8

/*  Fetches the N blocks IDS through f->get, FETCH_AHEAD at a time,
    handing each to FN(ARG, ...). */
static int get_blocks(const fetch_t *f, const spm_sdb_t *ids, size_t n,
                      int (*fn)(void *arg, size_t i, const void *data, size_t len), void *arg)
{
    int rc = 0;
    for (size_t at = 0; at < n && rc == 0; at += FETCH_AHEAD)
        rc = f->get(f->vm, ids + at, n - at < FETCH_AHEAD ? n - at : FETCH_AHEAD, fn, arg);
    return rc;
}

/*  Maps the N ranks at A to items, in place, and sorts them. */
static int to_items(const fetch_t *f, uint32_t *a, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        if (a[j] >= f->nitems)
            return spm_error(SPM_EPROTO, "a result names rank %u of %u frequent items", a[j],
                             f->nitems);
        a[j] = f->item[a[j]];
    }
    sort_items(a, n);
    return 0;
}

/*  A frequent-set block of f->k-sets fetched: into the itemsets' sort. */
static int level_block(void *arg, size_t b, const void *data, size_t len)
{
    (void)b;
    fetch_t *f = arg;
    set_head_t *h = (set_head_t *)f->rec;
    uint32_t *items = (uint32_t *)(h + 1), k = f->k;
    spm_mining_sets_t blk;
    int rc = spm_mining_sets_decode(SPM_MINING_KIND_FSETS, data, len, &blk);
    if (rc != 0)
        return rc;
    if (blk.n > 0 && blk.k != k)
        rc = spm_error(SPM_EPROTO, "frequent %u-sets block holds %u-sets", k, blk.k);
    for (uint32_t i = 0; i < blk.n && rc == 0; i++) {
        *h = (set_head_t){.k = k, .count = blk.counts[i]};
        memcpy(items, blk.items + (size_t)i * k, (size_t)k * 4);
        if ((rc = to_items(f, items, k)) == 0)
            rc = spm_extsort_add(f->o->sets, h, sizeof *h + (size_t)k * 4);
    }
    spm_mining_sets_free(&blk);
    return rc;
}

/*  Fetches the frequent-set blocks IDS[0..N) of length K into O's sort. */
static int fetch_level(fetch_t *f, const spm_sdb_t *ids, uint32_t n, uint32_t k)
{
    f->k = k;
    return get_blocks(f, ids, n, level_block, f);
}

static int cmp_one(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b; /* item, then support in two words */
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/*  A block of 1-itemsets fetched: its (item, support) entries onto f->one. */
static int ones_block(void *arg, size_t b, const void *data, size_t len)
{
    (void)b;
    fetch_t *f = arg;
    spm_mining_sets_t blk;
    int rc = spm_mining_sets_decode(SPM_MINING_KIND_FSETS, data, len, &blk);
    if (rc != 0)
        return rc;
    void *v = NULL;
    if (blk.n > 0 && blk.k != 1)
        rc = spm_error(SPM_EPROTO, "frequent 1-sets block holds %u-sets", blk.k);
    else if (!(v = realloc(f->one, (f->m + blk.n + 1) * sizeof *f->one)))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    else
        f->one = v;
    for (uint32_t i = 0; rc == 0 && i < blk.n; i++) {
        f->one[f->m][0] = blk.items[i];
        memcpy(&f->one[f->m][1], &blk.counts[i], 8);
        rc = to_items(f, f->one[f->m++], 1);
    }
    spm_mining_sets_free(&blk);
    return rc;
}

/*  Fetches the 1-itemsets, blocks IDS[0..N), into O's runs as one run in
    item order (the classes' blocks come after it, each a run of its own). */
static int fetch_ones(fetch_t *f, const spm_sdb_t *ids, uint32_t n, spm_mine_out_t *o)
{
    int rc = get_blocks(f, ids, n, ones_block, f);
    uint32_t(*one)[3] = f->one;
    size_t m = f->m;
    f->one = NULL;
    uint32_t *items = NULL;
    uint64_t *counts = NULL;
    if (rc == 0 && m > 0) {
        qsort(one, m, sizeof *one, cmp_one);
        items = malloc(m * sizeof *items);
        counts = malloc(m * sizeof *counts);
        rc = items && counts ? 0 : spm_error(SPM_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < m && rc == 0; i++) {
        items[i] = one[i][0];
        memcpy(&counts[i], &one[i][1], 8);
    }
    if (rc == 0 && m > 0) {
        spm_mining_sets_t b = {.kind = SPM_MINING_KIND_FSETS,
                               .k = 1,
                               .n = (uint32_t)m,
                               .items = items,
                               .counts = counts};
        void *data;
        size_t len;
        if ((rc = spm_mining_sets_encode(&b, &data, &len)) == SPM_EINVAL)
            rc = spm_error(SPM_EPROTO, "a result names a frequent item twice");
        if (rc == 0)
            rc = spm_mine_runs_add(o->runs, data, len, 0, free, data);
    }
    free(items);
    free(counts);
    free(one);
    return rc;
}

/*  A class block fetched: it is a run of f->o's, kept as it came where the
    get can keep it, else copied. The dense set at 5% (163 blocks, 41 MB):
    copying them, mostly into fresh pages, was 0.2 s of the client's. */
static int class_block(void *arg, size_t b, const void *data, size_t len)
{
    (void)b;
    fetch_t *f = arg;
    int mapped = 0;
    void *kept = f->o->keep ? f->o->keep(f->vm, &data, &mapped) : NULL;
    if (kept)
        return spm_mine_runs_add(f->o->runs, data, len, mapped ? SPM_MINE_RUN_MAPPED : 0,
                                 f->o->kept_free, kept);
    void *mine = malloc(len ? len : 1);
    if (!mine)
        return spm_error(SPM_ENOMEM, "out of memory");
    return spm_mine_runs_add(f->o->runs, memcpy(mine, data, len), len, 0, free, mine);
}

/*  Fetches the class blocks of R into O's runs, a class a run: its
    BlockOfItemsets, kept as it came. */
static int fetch_classes(fetch_t *f, const spm_apriori_result_t *r)
{
    return get_blocks(f, r->classes, r->nclasses, class_block, f);
}

/*  s(Y) of rule record H from the itemsets held in memory, or 0. */
static uint64_t support_of_y(const spm_mine_out_t *o, const rule_head_t *h, uint64_t *key)
{
    set_head_t *k = (set_head_t *)key;
    *k = (set_head_t){.k = h->ylen};
    memcpy(k + 1, RULE_ITEMS(h) + h->xlen, (size_t)h->ylen * 4);
    const set_head_t *s = spm_extsort_find(o->sets, k);
    return s ? s->count : 0;
}

/*  A rule block fetched: its rules into f->sort, with s(Y) looked up when
    f->key is set; a rule whose Y is one item gets s(Y) from f->supp and
    goes to f->ones where there is one (it needs no join). */
static int rules_block(void *arg, size_t b, const void *data, size_t len)
{
    (void)b;
    fetch_t *f = arg;
    rule_head_t *h = (rule_head_t *)f->rec;
    uint32_t *items = (uint32_t *)(h + 1);
    spm_mining_rules_t blk;
    int rc = spm_mining_rules_decode(data, len, &blk);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < blk.n && rc == 0; i++) {
        uint32_t xl = blk.xlen[i], yl = blk.ylen[i];
        *h = (rule_head_t){.xlen = xl, .ylen = yl, .supz = blk.supz[i], .supx = blk.supx[i]};
        memcpy(items, blk.items + blk.off[i], (size_t)(xl + yl) * 4);
        uint32_t y = items[xl]; /* a rank, checked by to_items */
        if ((rc = to_items(f, items, xl)) != 0 || (rc = to_items(f, items + xl, yl)) != 0)
            break;
        int one = yl == 1 && f->supp;
        if (one)
            h->supy = f->supp[y];
        else if (f->key)
            h->supy = support_of_y(f->o, h, f->key);
        f->o->xitems += xl;
        f->o->yitems += yl;
        rc = spm_extsort_add(one && f->ones ? f->ones : f->sort, h,
                             sizeof *h + (size_t)(xl + yl) * 4);
    }
    spm_mining_rules_free(&blk);
    return rc;
}

/*  Fetches the rules of all store blocks into SORT, with s(Y) when the
    itemsets are in memory (then KEY is scratch for the look-up); those
    whose Y is one item into ONES, when not NULL, with s(Y). */
static int fetch_rules(fetch_t *f, const spm_apriori_result_t *r, spm_extsort_t *sort,
                       spm_extsort_t *ones, uint64_t *key)
{
    f->sort = sort;
    f->ones = ones;
    f->key = key;
    return get_blocks(f, r->store, r->nstore, rules_block, f);
}

/*  Attaches s(Y) to the rules of BY_Y (sorted by consequent) from the
    itemsets' stream, in the same order, and adds them to O's rule sort
    (BUF: room for one rule record). */
static int join_supports(spm_mine_out_t *o, spm_extsort_t *by_y, uint64_t *buf)
{
    const void *rec, *next;
    const set_head_t *set = NULL;
    size_t len, slen;
    int rc, ended = 0;
    if ((rc = spm_extsort_rewind(o->sets)) != 0)
        return rc;
    while ((rc = spm_extsort_next(by_y, &rec, &len)) == 1) {
        rule_head_t *h = memcpy(buf, rec, len);
        const uint32_t *y = RULE_ITEMS(h) + h->xlen;
        while (!ended && (!set || list_cmp(SET_ITEMS(set), set->k, y, h->ylen) < 0)) {
            if ((rc = spm_extsort_next(o->sets, &next, &slen)) < 0)
                return rc;
            ended = rc == 0;
            set = ended ? NULL : next;
        }
        h->supy = set && list_cmp(SET_ITEMS(set), set->k, y, h->ylen) == 0 ? set->count : 0;
        if ((rc = spm_extsort_add(o->rules, h, len)) != 0)
            return rc;
    }
    return rc < 0 ? rc : spm_extsort_rewind(o->sets);
}

/*  The frequent items block fetched: the items in rank order into f->item. */
static int items_block(void *arg, size_t b, const void *data, size_t len)
{
    (void)b;
    fetch_t *f = arg;
    spm_mining_items_t it;
    uint32_t *order = NULL;
    int rc = spm_mining_items_decode(data, len, &it);
    if (rc != 0)
        return rc;
    if ((rc = spm_mining_rank_order(&it, &order)) == 0 &&
        (!(f->item = malloc(((size_t)it.n + 1) * 4)) ||
         !(f->supp = malloc(((size_t)it.n + 1) * 8))))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    for (uint32_t i = 0; rc == 0 && i < it.n; i++) {
        f->item[i] = it.items[order[i]];
        f->supp[i] = it.counts[order[i]];
    }
    f->nitems = rc == 0 ? it.n : 0;
    for (uint32_t i = 0; i < f->nitems; i++)
        while (f->bits < 32 && f->item[i] >> f->bits)
            f->bits++;
    spm_mining_items_free(&it);
    free(order);
    return rc;
}

int spm_mine_fetch(spm_mine_get_fn *get, void *vm, const spm_apriori_result_t *r, spm_mine_out_t *o)
{
    fetch_t f = {.get = get, .vm = vm, .o = o};
    spm_extsort_t *by_y = NULL;
    uint64_t *key = NULL;
    size_t budget = o->budget ? o->budget : SPM_MINE_SORT_BUDGET, left;
    size_t reclen = sizeof(rule_head_t) + (size_t)SPM_MINING_MAX_K * 2 * 4;
    int rc = 0;
    /* One budget for all the sorts alive at once: the itemsets take up to
       half of it when there are rules, the rules what the itemsets left. */
    if (!(f.rec = malloc(reclen)) || !(key = malloc(reclen)) ||
        !(o->sets = spm_extsort_new(r->nstore ? budget / 2 : budget, o->tmpdir, cmp_set, NULL)))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    if (rc == 0 && r->fitems)
        rc = get_blocks(&f, &r->fitems, 1, items_block, &f);
    if (rc == 0) /* the keys are made as records come, all within this call */
        spm_extsort_set_key(o->sets, key_set, &f.bits);
    if (rc == 0 && r->nclasses > 0 && !(o->runs = spm_mine_runs_new(budget, o->tmpdir, f.bits)))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    if (r->nclasses > 0 && r->nlevels > 0 && rc == 0)
        rc = fetch_ones(&f, r->levels[0], r->nblocks[0], o);
    for (uint32_t k = 0; k < r->nlevels && r->nclasses == 0 && rc == 0; k++)
        rc = fetch_level(&f, r->levels[k], r->nblocks[k], k + 1);
    if (rc == 0)
        rc = fetch_classes(&f, r);
    if (rc == 0 && o->runs)
        rc = spm_mine_runs_start(o->runs);
    if (rc == 0)
        rc = spm_extsort_sort(o->sets);
    left = spm_extsort_memory(o->sets); /* what the itemsets hold: the rules get the rest */
    left = left < budget / 4 * 3 ? budget - left : budget / 4;
    if (rc == 0 && spm_extsort_runs(o->sets) == 0) {
        if (!(o->rules = spm_extsort_new(left, o->tmpdir, cmp_rule, NULL)))
            rc = spm_error(SPM_ENOMEM, "out of memory");
        else
            spm_extsort_set_key(o->rules, key_rule, &f.bits);
        if (rc == 0)
            rc = fetch_rules(&f, r, o->rules, NULL, key); /* s(Y) by binary search */
    } else if (rc == 0) {
        /* A rule whose Y has several items is sorted twice, by Y for the
           join with the itemsets' stream and then for the output; one whose
           Y is one item (all of them with --max-consequent 1) has s(Y) from
           the frequent items and goes to the output's sort at once. Each
           sort has half of what is left. (The dense set of bench_mine at
           10%, 5.2M rules of one consequent: the sort by Y and the join
           were a third of the client's time.) */
        if (!(by_y = spm_extsort_new(left / 2, o->tmpdir, cmp_rule_y, NULL)) ||
            !(o->rules = spm_extsort_new(left / 2, o->tmpdir, cmp_rule, NULL)))
            rc = spm_error(SPM_ENOMEM, "out of memory");
        if (rc == 0) {
            spm_extsort_set_key(by_y, key_rule_y, &f.bits);
            spm_extsort_set_key(o->rules, key_rule, &f.bits);
        }
        if (rc == 0 && (rc = fetch_rules(&f, r, by_y, o->rules, NULL)) == 0 &&
            (rc = spm_extsort_sort(by_y)) == 0)
            rc = join_supports(o, by_y, key);
        spm_extsort_destroy(&by_y);
    }
    if (rc == 0 && !o->rules && !(o->rules = spm_extsort_new(left, o->tmpdir, cmp_rule, NULL)))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    if (rc == 0)
        rc = spm_extsort_sort(o->rules);
    free(f.item);
    free(f.supp);
    free(f.rec);
    free(key);
    return rc;
}

int spm_mine_next_itemset(spm_mine_out_t *o, uint32_t *k, const uint32_t **items, uint64_t *count)
{
    if (o->runs)
        return spm_mine_runs_next(o->runs, k, items, count);
    const void *rec;
    size_t len;
    int rc = spm_extsort_next(o->sets, &rec, &len);
    if (rc == 1) {
        const set_head_t *h = rec;
        *k = h->k;
        *items = SET_ITEMS(h);
        *count = h->count;
    }
    return rc;
}

int spm_mine_next_rule(spm_mine_out_t *o, spm_mine_rule_t *r)
{
    const void *rec;
    size_t len;
    int rc = spm_extsort_next(o->rules, &rec, &len);
    if (rc == 1) {
        const rule_head_t *h = rec;
        *r = (spm_mine_rule_t){.xlen = h->xlen,
                               .ylen = h->ylen,
                               .x = RULE_ITEMS(h),
                               .y = RULE_ITEMS(h) + h->xlen,
                               .supz = h->supz,
                               .supx = h->supx,
                               .supy = h->supy};
    }
    return rc;
}

uint64_t spm_mine_nitemsets(const spm_mine_out_t *o)
{
    return (o->sets ? spm_extsort_count(o->sets) : 0) + spm_mine_runs_count(o->runs);
}

uint64_t spm_mine_nrules(const spm_mine_out_t *o)
{
    return o->rules ? spm_extsort_count(o->rules) : 0;
}

void spm_mine_out_free(spm_mine_out_t *o)
{
    spm_mine_runs_destroy(&o->runs);
    spm_extsort_destroy(&o->sets);
    spm_extsort_destroy(&o->rules);
}

/*  Writes the N bytes at S a byte at a time: putc_unlocked is inlined
    into a store in stdio's buffer, where fputs and fwrite are calls that
    cost more than the few bytes of a separator or a number. */
static void put_bytes(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        putc_unlocked(s[i], f);
}

#define PUT_LIT(f, lit) put_bytes((f), (lit), sizeof(lit) - 1)

static void put_str(FILE *f, const char *s)
{
    put_bytes(f, s, strlen(s));
}

/*  Writes V in decimal. printf is most of the cost of writing a million
    rules, so numbers are formatted here. */
static void put_u64(FILE *f, uint64_t v)
{
    char buf[24], *p = buf + sizeof buf;
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    put_bytes(f, p, (size_t)(buf + sizeof buf - p));
}

/*  Writes V >= 0 with six decimals, as %.6f does. */
static void put_fixed6(FILE *f, double v)
{
    uint64_t n = (uint64_t)rint(v * 1e6); /* ties to even, as printf */
    char frac[8];
    put_u64(f, n / 1000000);
    frac[0] = '.';
    for (int i = 6; i >= 1; i--, n /= 10)
        frac[i] = (char)('0' + n % 10);
    put_bytes(f, frac, 7);
}

/*  Writes the K items at S, separated by SEP (JSON: an array). */
static void items(FILE *f, const spm_mine_out_t *o, const uint32_t *s, uint32_t k,
                  spm_mine_format_t format)
{
    int quote = format == SPM_MINE_CSV && o->names; /* names may hold commas */
    if (format == SPM_MINE_JSON)
        fputc('[', f);
    if (quote)
        fputc('"', f);
    for (uint32_t j = 0; j < k; j++) {
        if (j > 0 && format == SPM_MINE_JSON)
            PUT_LIT(f, ", ");
        else if (j > 0)
            putc_unlocked(' ', f);
        uint32_t item = s[j];
        const char *name = o->names ? spm_reader_name(o->names, item) : NULL;
        if (name && format == SPM_MINE_JSON)
            spm_json_string(f, name);
        else if (name && quote)
            for (const char *c = name; *c; c++)
                fputs(*c == '"' ? "\"\"" : (char[]){*c, 0}, f);
        else if (name)
            fputs(name, f);
        else
            put_u64(f, item);
    }
    if (quote)
        fputc('"', f);
    if (format == SPM_MINE_JSON)
        fputc(']', f);
}

static int finish(FILE *f)
{
    return ferror(f) ? spm_error(SPM_EIO, "write failed") : 0;
}

/*  Text and CSV itemsets of numbered items (no names): each line is made in
    a buffer of ours (numbers by spm_fmt_u64), and the buffer written
    128 KiB at a time. Releasing the VM and writing chess at 60% (254,944
    lines): 14.4-14.7 ms against 15.4-17.1 through putc_unlocked; the
    dense set at 5% (8,020,425 lines), whole command: 3.23 -> 3.03 s.
    Consecutive sets of a length share their first items, whose text is
    copied from the line before instead of formatted again. */
#define LINES_BYTES (128u << 10)

typedef struct {
    uint32_t k;    /* items of the line before (0: none) */
    uint32_t *at;  /* SPM_MINING_MAX_K: its items */
    uint32_t *end; /* and where each one's text ends in text */
    char *text;    /* its items' text */
} line_t;

/*  Writes the items of set S (K of them) at P from the line before L,
    returning the end. */
static char *put_items(line_t *l, char *p, const uint32_t *s, uint32_t k)
{
    uint32_t same = 0;
    if (k == l->k)
        while (same + 1 < k && s[same] == l->at[same])
            same++;
    char *t = l->text + (same ? l->end[same - 1] : 0);
    for (uint32_t j = same; j < k; j++) {
        if (j > 0)
            *t++ = ' ';
        t += spm_fmt_u64(t, s[j]);
        l->end[j] = (uint32_t)(t - l->text);
        l->at[j] = s[j];
    }
    l->k = k;
    /* 32 bytes a step, past the end into the slack both buffers have: a
       line is short, and a call to memcpy for each was a fifth of the
       writing. */
    for (uint32_t i = 0; i < l->end[k - 1]; i += 32)
        memcpy(p + i, l->text + i, 32);
    return p + l->end[k - 1];
}

static int write_numbered_itemsets(FILE *f, spm_mine_out_t *o, int csv)
{
    /* room past LINES_BYTES for a line (k numbers, a count and its NUL),
       and the 32 bytes put_items may copy past it */
    size_t line = ((size_t)SPM_MINING_MAX_K + 1) * SPM_FMT_U64_MAX + 8 + 32;
    char *buf = malloc(LINES_BYTES + line), *p;
    line_t l = {.at = malloc(SPM_MINING_MAX_K * 4),
                .end = malloc(SPM_MINING_MAX_K * 4),
                .text = calloc(1, line)};
    const uint32_t *s;
    uint32_t k;
    uint64_t count;
    int rc = buf && l.at && l.end && l.text ? 0 : spm_error(SPM_ENOMEM, "out of memory");
    /* Many sets merged from runs: the merge goes ahead on a thread of its
       own (programs/apriori/ahead.h). */
    spm_mine_ahead_t *a = rc == 0 && o->runs && spm_mine_nitemsets(o) >= SPM_MINE_AHEAD_SETS
                              ? spm_mine_ahead_start(o)
                              : NULL;
    p = buf;
    while (rc == 0 && (rc = a ? spm_mine_ahead_next(a, &k, &s, &count)
                              : spm_mine_next_itemset(o, &k, &s, &count)) == 1) {
        rc = 0;
        p = put_items(&l, p, s, k);
        *p++ = csv ? ',' : ' ';
        if (!csv)
            *p++ = '(';
        p += spm_fmt_u64(p, count);
        if (!csv)
            *p++ = ')';
        *p++ = '\n';
        if ((size_t)(p - buf) >= LINES_BYTES) {
            fwrite(buf, 1, (size_t)(p - buf), f);
            p = buf;
        }
    }
    if (buf)
        fwrite(buf, 1, (size_t)(p - buf), f);
    spm_mine_ahead_destroy(&a);
    free(buf);
    free(l.at);
    free(l.end);
    free(l.text);
    return rc;
}

int spm_mine_write_itemsets(FILE *f, spm_mine_out_t *o, spm_mine_format_t format)
{
    uint64_t total = spm_mine_nitemsets(o), at = 0;
    const uint32_t *s;
    uint32_t k;
    uint64_t count;
    int rc = 0;
    if (format == SPM_MINE_TEXT)
        fprintf(f,
                "# %llu frequent itemsets, minimum support %llu of %llu transactions\n"
                "# items (support count)\n",
                (unsigned long long)total, (unsigned long long)o->minsup,
                (unsigned long long)o->ntrans);
    else if (format == SPM_MINE_CSV)
        fputs("items,support\n", f);
    else
        fprintf(f, "{\"transactions\": %llu, \"min_support\": %llu, \"itemsets\": [",
                (unsigned long long)o->ntrans, (unsigned long long)o->minsup);
    if (o->sets && (rc = o->runs ? spm_mine_runs_start(o->runs) : spm_extsort_rewind(o->sets)) != 0)
        return rc;
    if (o->sets && format != SPM_MINE_JSON && !o->names) {
        if ((rc = write_numbered_itemsets(f, o, format == SPM_MINE_CSV)) < 0)
            return rc;
        return finish(f);
    }
    while (o->sets && (rc = spm_mine_next_itemset(o, &k, &s, &count)) == 1) {
        if (format == SPM_MINE_JSON) {
            fputs(at++ ? ",\n  {\"items\": " : "\n  {\"items\": ", f);
            items(f, o, s, k, format);
            fprintf(f, ", \"support\": %llu}", (unsigned long long)count);
            continue;
        }
        items(f, o, s, k, format);
        if (format == SPM_MINE_CSV)
            putc_unlocked(',', f);
        else
            PUT_LIT(f, " (");
        put_u64(f, count);
        if (format == SPM_MINE_CSV)
            putc_unlocked('\n', f);
        else
            PUT_LIT(f, ")\n");
    }
    if (o->sets && rc < 0)
        return rc;
    if (format == SPM_MINE_JSON)
        fputs(total ? "\n]}\n" : "]}\n", f);
    return finish(f);
}

int spm_mine_write_rules(FILE *f, spm_mine_out_t *o, spm_mine_format_t format)
{
    uint64_t total = spm_mine_nrules(o), at = 0;
    spm_mine_rule_t r;
    int rc = 0;
    if (format == SPM_MINE_TEXT)
        fprintf(f,
                "# %llu rules, minimum support %llu of %llu transactions, minimum confidence "
                "%g\n# antecedent => consequent (support, confidence, lift)\n",
                (unsigned long long)total, (unsigned long long)o->minsup,
                (unsigned long long)o->ntrans, o->minconf);
    else if (format == SPM_MINE_CSV)
        fputs("antecedent,consequent,support,confidence,lift\n", f);
    else
        fprintf(f,
                "{\"transactions\": %llu, \"min_support\": %llu, \"min_confidence\": %.17g, "
                "\"rules\": [",
                (unsigned long long)o->ntrans, (unsigned long long)o->minsup, o->minconf);
    if (o->rules && (rc = spm_extsort_rewind(o->rules)) != 0)
        return rc;
    while (o->rules && (rc = spm_mine_next_rule(o, &r)) == 1) {
        double conf = (double)r.supz / (double)r.supx;
        double lift = r.supy ? conf * (double)o->ntrans / (double)r.supy : 0;
        if (format == SPM_MINE_JSON) {
            fputs(at++ ? ",\n  {\"antecedent\": " : "\n  {\"antecedent\": ", f);
            items(f, o, r.x, r.xlen, format);
            fputs(", \"consequent\": ", f);
            items(f, o, r.y, r.ylen, format);
            fprintf(f, ", \"support\": %llu, \"confidence\": %.6f, \"lift\": %.6f}",
                    (unsigned long long)r.supz, conf, lift);
            continue;
        }
        int csv = format == SPM_MINE_CSV;
        items(f, o, r.x, r.xlen, format);
        put_str(f, csv ? "," : " => ");
        items(f, o, r.y, r.ylen, format);
        put_str(f, csv ? "," : " (");
        put_u64(f, r.supz);
        put_str(f, csv ? "," : ", ");
        put_fixed6(f, conf);
        put_str(f, csv ? "," : ", ");
        put_fixed6(f, lift);
        put_str(f, csv ? "\n" : ")\n");
    }
    if (o->rules && rc < 0)
        return rc;
    if (format == SPM_MINE_JSON)
        fputs(total ? "\n]}\n" : "]}\n", f);
    return finish(f);
}
