/*  =========================================================================
    output - fetching the results of an apriori job and writing them
    =========================================================================
*/
#include "programs/apriori/output.h"
#include "isa/mining/isa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*  The output streams belong to this thread alone: skip stdio's per-call
    locking, which costs more than the formatting for a million rules. */
#define fputc fputc_unlocked
#define fputs fputs_unlocked
#define fwrite fwrite_unlocked

/*  Appends the frequent-set blocks IDS[0..N) into one sorted set list. */
static int fetch_level(spm_mine_get_fn *get, void *s, const spm_sdb_t *ids, uint32_t n, uint32_t k,
                       spm_mining_sets_t *out)
{
    memset(out, 0, sizeof *out);
    out->kind = SPM_MINING_KIND_FSETS;
    out->k = k;
    size_t cap = 0;
    for (uint32_t b = 0; b < n; b++) {
        void *data;
        size_t len;
        spm_mining_sets_t blk;
        int rc = get(s, ids[b], &data, &len);
        if (rc != 0)
            return rc;
        rc = spm_mining_sets_decode(SPM_MINING_KIND_FSETS, data, len, &blk);
        free(data);
        if (rc != 0)
            return rc;
        if (blk.n > 0 && blk.k != k) {
            spm_mining_sets_free(&blk);
            return spm_error(SPM_EPROTO, "frequent %u-sets block holds %u-sets", k, blk.k);
        }
        if ((size_t)out->n + blk.n > cap) {
            cap = ((size_t)out->n + blk.n) * 2;
            uint32_t *it = realloc(out->items, cap * k * 4);
            uint64_t *c = realloc(out->counts, cap * 8);
            out->items = it ? it : out->items;
            out->counts = c ? c : out->counts;
            if (!it || !c) {
                spm_mining_sets_free(&blk);
                return spm_error(SPM_ENOMEM, "out of memory");
            }
        }
        memcpy(out->items + (size_t)out->n * k, blk.items, (size_t)blk.n * k * 4);
        memcpy(out->counts + out->n, blk.counts, (size_t)blk.n * 8);
        out->n += blk.n;
        spm_mining_sets_free(&blk);
    }
    return 0;
}

/*  Gathers the rules of all store blocks, sorted. */
static int fetch_rules(spm_mine_get_fn *get, void *s, const spm_apriori_result_t *r,
                       spm_mining_rules_t *out)
{
    spm_mining_rules_builder_t all = {0};
    int rc = 0;
    memset(out, 0, sizeof *out);
    for (uint32_t b = 0; b < r->nstore && rc == 0; b++) {
        void *data;
        size_t len;
        spm_mining_rules_t blk;
        if ((rc = get(s, r->store[b], &data, &len)) != 0)
            break;
        rc = spm_mining_rules_decode(data, len, &blk);
        free(data);
        for (uint32_t i = 0; rc == 0 && i < blk.n; i++) {
            const uint32_t *x = blk.items + blk.off[i];
            spm_mining_rules_add(&all, x, blk.xlen[i], x + blk.xlen[i], blk.ylen[i], blk.supz[i],
                                 blk.supx[i]);
        }
        spm_mining_rules_free(&blk);
    }
    if (rc == 0 && all.failed)
        rc = spm_error(SPM_ENOMEM, "out of memory");
    if (rc == 0)
        rc = spm_mining_rules_sort(&all.r, out);
    spm_mining_rules_free(&all.r);
    return rc;
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

static int cmp_set(const void *a, const void *b, void *arg)
{
    const spm_mining_sets_t *l = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    return spm_mining_set_cmp(l->items + (size_t)i * l->k, l->items + (size_t)j * l->k, l->k);
}

/*  Maps the ranks of level L to items (ITEM[rank]) and sorts it again. */
static int level_to_items(spm_mining_sets_t *l, const uint32_t *item)
{
    size_t n = l->n, k = l->k;
    uint32_t *idx = malloc((n + 1) * 4), *items = malloc((n * k + 1) * 4);
    uint64_t *counts = malloc((n + 1) * 8);
    if (!idx || !items || !counts) {
        free(idx);
        free(items);
        free(counts);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n * k; i++)
        l->items[i] = item[l->items[i]];
    for (size_t i = 0; i < n; i++) {
        sort_items(l->items + i * k, (uint32_t)k);
        idx[i] = (uint32_t)i;
    }
    qsort_r(idx, n, 4, cmp_set, l);
    for (size_t i = 0; i < n; i++) {
        memcpy(items + i * k, l->items + (size_t)idx[i] * k, k * 4);
        counts[i] = l->counts[idx[i]];
    }
    free(idx);
    free(l->items);
    free(l->counts);
    l->items = items;
    l->counts = counts;
    return 0;
}

/*  Maps the ranks of rules R to items and sorts them again. */
static int rules_to_items(spm_mining_rules_t *r, const uint32_t *item)
{
    for (uint32_t i = 0; i < r->n; i++) {
        uint32_t *x = r->items + r->off[i];
        for (uint32_t j = 0; j < r->xlen[i] + r->ylen[i]; j++)
            x[j] = item[x[j]];
        sort_items(x, r->xlen[i]);
        sort_items(x + r->xlen[i], r->ylen[i]);
    }
    spm_mining_rules_t sorted;
    int rc = spm_mining_rules_sort(r, &sorted);
    if (rc == 0) {
        spm_mining_rules_free(r);
        *r = sorted;
    }
    return rc;
}

int spm_mine_fetch(spm_mine_get_fn *get, void *s, const spm_apriori_result_t *r, spm_mine_out_t *o)
{
    int rc;
    uint32_t *item = NULL, *order = NULL;
    o->nlv = r->nlevels;
    if (!(o->lv = calloc((size_t)o->nlv + 1, sizeof *o->lv)))
        return spm_error(SPM_ENOMEM, "out of memory");
    if (r->fitems) {
        void *data;
        size_t len;
        spm_mining_items_t f;
        if ((rc = get(s, r->fitems, &data, &len)) != 0)
            return rc;
        rc = spm_mining_items_decode(data, len, &f);
        free(data);
        if (rc != 0)
            return rc;
        if ((rc = spm_mining_rank_order(&f, &order)) != 0 ||
            !(item = malloc(((size_t)f.n + 1) * 4))) {
            spm_mining_items_free(&f);
            free(order);
            return rc ? rc : spm_error(SPM_ENOMEM, "out of memory");
        }
        for (uint32_t i = 0; i < f.n; i++)
            item[i] = f.items[order[i]];
        spm_mining_items_free(&f);
        free(order);
    }
    rc = 0;
    for (uint32_t k = 0; k < o->nlv && rc == 0; k++)
        if ((rc = fetch_level(get, s, r->levels[k], r->nblocks[k], k + 1, &o->lv[k])) == 0)
            rc = level_to_items(&o->lv[k], item);
    if (rc == 0 && (rc = fetch_rules(get, s, r, &o->rules)) == 0)
        rc = rules_to_items(&o->rules, item);
    free(item);
    return rc;
}

uint64_t spm_mine_nitemsets(const spm_mine_out_t *o)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < o->nlv; k++)
        n += o->lv[k].n;
    return n;
}

void spm_mine_out_free(spm_mine_out_t *o)
{
    for (uint32_t k = 0; o->lv && k < o->nlv; k++)
        spm_mining_sets_free(&o->lv[k]);
    free(o->lv);
    spm_mining_rules_free(&o->rules);
    o->lv = NULL;
}

/*  Support of the sorted rank list S of length K, or 0. */
static uint64_t support(const spm_mine_out_t *o, const uint32_t *s, uint32_t k)
{
    if (k == 0 || k > o->nlv)
        return 0;
    long i = spm_mining_sets_find(&o->lv[k - 1], s);
    return i < 0 ? 0 : o->lv[k - 1].counts[i];
}

/*  Writes V in decimal. printf is most of the cost of writing a million
    rules, so numbers are formatted here. */
static void put_u64(FILE *f, uint64_t v)
{
    char buf[24], *p = buf + sizeof buf;
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    fwrite(p, 1, (size_t)(buf + sizeof buf - p), f);
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
    fwrite(frac, 1, 7, f);
}

/*  Writes a JSON string with the escapes JSON requires. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
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
        if (j > 0)
            fputs(format == SPM_MINE_JSON ? ", " : " ", f);
        uint32_t item = s[j];
        const char *name = o->names ? spm_reader_name(o->names, item) : NULL;
        if (name && format == SPM_MINE_JSON)
            json_string(f, name);
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

int spm_mine_write_itemsets(FILE *f, const spm_mine_out_t *o, spm_mine_format_t format)
{
    uint64_t total = spm_mine_nitemsets(o), at = 0;
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
    for (uint32_t k = 0; k < o->nlv; k++)
        for (uint32_t i = 0; i < o->lv[k].n; i++, at++) {
            const uint32_t *s = o->lv[k].items + (size_t)i * (k + 1);
            unsigned long long c = (unsigned long long)o->lv[k].counts[i];
            if (format == SPM_MINE_JSON) {
                fputs(at ? ",\n  {\"items\": " : "\n  {\"items\": ", f);
                items(f, o, s, k + 1, format);
                fprintf(f, ", \"support\": %llu}", c);
                continue;
            }
            items(f, o, s, k + 1, format);
            fputs(format == SPM_MINE_CSV ? "," : " (", f);
            put_u64(f, c);
            fputs(format == SPM_MINE_CSV ? "\n" : ")\n", f);
        }
    if (format == SPM_MINE_JSON)
        fputs(total ? "\n]}\n" : "]}\n", f);
    return finish(f);
}

int spm_mine_write_rules(FILE *f, const spm_mine_out_t *o, spm_mine_format_t format)
{
    const spm_mining_rules_t *r = &o->rules;
    if (format == SPM_MINE_TEXT)
        fprintf(f,
                "# %u rules, minimum support %llu of %llu transactions, minimum confidence "
                "%g\n# antecedent => consequent (support, confidence, lift)\n",
                r->n, (unsigned long long)o->minsup, (unsigned long long)o->ntrans, o->minconf);
    else if (format == SPM_MINE_CSV)
        fputs("antecedent,consequent,support,confidence,lift\n", f);
    else
        fprintf(f,
                "{\"transactions\": %llu, \"min_support\": %llu, \"min_confidence\": %.17g, "
                "\"rules\": [",
                (unsigned long long)o->ntrans, (unsigned long long)o->minsup, o->minconf);
    for (uint32_t i = 0; i < r->n; i++) {
        const uint32_t *x = r->items + r->off[i], *y = x + r->xlen[i];
        uint64_t sy = support(o, y, r->ylen[i]);
        double conf = (double)r->supz[i] / (double)r->supx[i];
        double lift = sy ? conf * (double)o->ntrans / (double)sy : 0;
        unsigned long long sz = (unsigned long long)r->supz[i];
        if (format == SPM_MINE_JSON) {
            fputs(i ? ",\n  {\"antecedent\": " : "\n  {\"antecedent\": ", f);
            items(f, o, x, r->xlen[i], format);
            fputs(", \"consequent\": ", f);
            items(f, o, y, r->ylen[i], format);
            fprintf(f, ", \"support\": %llu, \"confidence\": %.6f, \"lift\": %.6f}", sz, conf,
                    lift);
            continue;
        }
        items(f, o, x, r->xlen[i], format);
        fputs(format == SPM_MINE_CSV ? "," : " => ", f);
        items(f, o, y, r->ylen[i], format);
        const char *sep = format == SPM_MINE_CSV ? "," : ", ";
        fputs(format == SPM_MINE_CSV ? "," : " (", f);
        put_u64(f, sz);
        fputs(sep, f);
        put_fixed6(f, conf);
        fputs(sep, f);
        put_fixed6(f, lift);
        fputs(format == SPM_MINE_CSV ? "\n" : ")\n", f);
    }
    if (format == SPM_MINE_JSON)
        fputs(r->n ? "\n]}\n" : "]}\n", f);
    return finish(f);
}
