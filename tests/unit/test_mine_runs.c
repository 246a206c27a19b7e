/*  runs: class blocks (itemsets blocks, and a frequent-set block of the
    1-sets) merge into the order a sort of all their sets gives, whether
    they are held in memory or spilled to the temporary file, and again
    after a restart, also when read ahead on a thread (ahead); a block
    with bad framing, one whose sets are cut short and a directory that
    cannot take the file are refused. */
#include "isa/core/rng.h"
#include "isa/mining/sdb.h"
#include "programs/apriori/ahead.h"
#include "programs/apriori/runs.h"
#include "tests/check_main.h"
#include "spm/spm.h"

#include <stdlib.h>
#include <string.h>

#define MAXK 6
#define NSETS 6000

typedef struct {
    uint32_t k, run;
    uint32_t items[MAXK];
    uint64_t count;
} set_t;

static int cmp_set(const void *x, const void *y)
{
    const set_t *a = x, *b = y;
    if (a->k != b->k)
        return a->k < b->k ? -1 : 1;
    return spm_mining_set_cmp(a->items, b->items, a->k);
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/*  Distinct random sets of 1..MAXK items below 300, each in one of NRUN
    runs (the 1-sets in run 0, as the client has them), sorted as the
    output is; returns how many. BY_FIRST: a set's run follows from its
    first item, as classes walked in item order make them (runs that
    follow one another), but for every seventh set when BY_FIRST is 1;
    and six 6-sets that
    only their last items tell apart alternate between two runs (their
    keys tie: 5 items of 9 bits fit). */
static uint32_t make_sets(set_t *s, uint32_t nrun, uint64_t seed, int by_first)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, seed);
    uint32_t n = 0;
    for (uint32_t i = 0; i < NSETS; i++) {
        set_t *t = &s[n];
        t->k = 1 + (uint32_t)spm_rng_below(&rng, MAXK);
        for (uint32_t j = 0; j < t->k; j++)
            t->items[j] = (uint32_t)spm_rng_below(&rng, 300);
        qsort(t->items, t->k, 4, cmp_u32);
        int ok = 1;
        for (uint32_t j = 1; j < t->k; j++)
            ok &= t->items[j] != t->items[j - 1];
        t->run = t->k == 1 ? 0 : 1 + (uint32_t)spm_rng_below(&rng, nrun - 1);
        if (by_first && t->k > 1 && (by_first == 2 || i % 7 != 0))
            t->run = 1 + t->items[0] * (nrun - 1) / 300;
        t->count = 1 + spm_rng_next(&rng) % 100000;
        n += (uint32_t)ok;
    }
    for (uint32_t i = 0; by_first && i < 6; i++)
        s[n++] = (set_t){.k = 6, .run = 1 + i % 2, .items = {1, 2, 3, 4, 5, 10 + i}, .count = 7};
    qsort(s, n, sizeof *s, cmp_set);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (m == 0 || cmp_set(&s[m - 1], &s[i]) != 0)
            s[m++] = s[i];
    return m;
}

/*  The sets of run R of length K into a group G (arrays malloc'd). */
static void group_of(const set_t *s, uint32_t n, uint32_t r, uint32_t k, spm_mining_sets_t *g)
{
    *g = (spm_mining_sets_t){.kind = SPM_MINING_KIND_FSETS, .k = k};
    g->items = malloc((size_t)n * k * 4 + 4);
    g->counts = malloc((size_t)n * 8 + 8);
    for (uint32_t i = 0; i < n; i++)
        if (s[i].run == r && s[i].k == k) {
            memcpy(g->items + (size_t)g->n * k, s[i].items, k * 4);
            g->counts[g->n++] = s[i].count;
        }
}

/*  Adds run R of the sets to RUNS: run 0 as a frequent-set block, the
    others as itemsets blocks. */
static void add_run(spm_mine_runs_t *runs, const set_t *s, uint32_t n, uint32_t r)
{
    spm_mining_sets_t g[MAXK];
    uint32_t ng = 0;
    for (uint32_t k = 1; k <= MAXK; k++) {
        group_of(s, n, r, k, &g[ng]);
        if (g[ng].n > 0)
            ng++;
        else
            spm_mining_sets_free(&g[ng]);
    }
    void *data;
    size_t len;
    spm_mining_itemsets_t b = {.nlen = ng, .lv = g};
    if (r == 0) {
        ck_assert_uint_eq(ng, 1);
        ck_assert_int_eq(spm_mining_sets_encode(&g[0], &data, &len), 0);
    } else {
        ck_assert_int_eq(spm_mining_itemsets_encode(&b, &data, &len), 0);
    }
    ck_assert_int_eq(spm_mine_runs_add(runs, data, len, 0, free, data), 0);
    for (uint32_t i = 0; i < ng; i++)
        spm_mining_sets_free(&g[i]);
}

/*  Where sets come from: the merge itself, or the thread reading ahead. */
typedef int(next_fn)(void *src, uint32_t *k, const uint32_t **items, uint64_t *count);

static int from_runs(void *src, uint32_t *k, const uint32_t **items, uint64_t *count)
{
    return spm_mine_runs_next(src, k, items, count);
}

static int from_ahead(void *src, uint32_t *k, const uint32_t **items, uint64_t *count)
{
    return spm_mine_ahead_next(src, k, items, count);
}

/*  Checks every set NEXT gives from SRC against WANT[0..N), then the end
    (twice: it stays at the end). */
static void same_sets(next_fn *next, void *src, const set_t *want, uint32_t n)
{
    uint32_t k;
    const uint32_t *items;
    uint64_t count;
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_int_eq(next(src, &k, &items, &count), 1);
        ck_assert_uint_eq(k, want[i].k);
        ck_assert_mem_eq(items, want[i].items, k * 4);
        ck_assert_uint_eq(count, want[i].count);
    }
    ck_assert_int_eq(next(src, &k, &items, &count), 0);
    ck_assert_int_eq(next(src, &k, &items, &count), 0);
}

/*  Merges RUNS from the start and checks every set against WANT[0..N). */
static void merged_like_sorted(spm_mine_runs_t *runs, const set_t *want, uint32_t n)
{
    ck_assert_int_eq(spm_mine_runs_start(runs), 0);
    ck_assert_uint_eq(spm_mine_runs_count(runs), n);
    same_sets(from_runs, runs, want, n);
}

/*  Runs that overlap everywhere (classes walked by rank), runs that
    mostly follow one another, and runs that do (walked by position). */
START_TEST(merged_like_a_sort)
{
    static set_t s[NSETS + 6];
    const uint32_t nrun = 40;
    uint32_t n = make_sets(s, nrun, 7, _i);
    ck_assert_uint_gt(n, 5000);
    /* all in memory; a few blocks spilled; every block spilled */
    const size_t budget[] = {1u << 30, 20000, 0};
    for (size_t b = 0; b < sizeof budget / sizeof budget[0]; b++) {
        spm_mine_runs_t *runs = spm_mine_runs_new(budget[b], NULL, 9);
        ck_assert_ptr_nonnull(runs);
        for (uint32_t r = 0; r < nrun; r++)
            add_run(runs, s, n, r);
        merged_like_sorted(runs, s, n);
        merged_like_sorted(runs, s, n); /* a restart reads it all again */
        spm_mine_runs_destroy(&runs);
        ck_assert_ptr_null(runs);
    }
}
END_TEST

/*  The sets read ahead on a thread come as the merge gives them, through
    several batches (items of 6,000 sets), and again after a restart. */
START_TEST(read_ahead_like_the_merge)
{
    static set_t s[NSETS];
    const uint32_t nrun = 40;
    uint32_t n = make_sets(s, nrun, 11, 0);
    spm_mine_runs_t *runs = spm_mine_runs_new(20000, NULL, 9);
    for (uint32_t r = 0; r < nrun; r++)
        add_run(runs, s, n, r);
    spm_mine_out_t o = {.runs = runs};
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_int_eq(spm_mine_runs_start(runs), 0);
        spm_mine_ahead_t *a = spm_mine_ahead_start(&o);
        ck_assert_ptr_nonnull(a);
        same_sets(from_ahead, a, s, n);
        spm_mine_ahead_destroy(&a);
        ck_assert_ptr_null(a);
    }
    /* Stopped after a few sets: the thread ends. */
    ck_assert_int_eq(spm_mine_runs_start(runs), 0);
    spm_mine_ahead_t *a = spm_mine_ahead_start(&o);
    uint32_t k;
    const uint32_t *items;
    uint64_t count;
    ck_assert_int_eq(spm_mine_ahead_next(a, &k, &items, &count), 1);
    spm_mine_ahead_destroy(&a);
    spm_mine_runs_destroy(&runs);
}
END_TEST

/*  A frequent-set block of two K-sets of consecutive items from FIRST. */
static void block(uint32_t k, uint32_t first, void **data, size_t *len)
{
    uint32_t items[2 * MAXK];
    uint64_t counts[2] = {5, 6};
    for (uint32_t i = 0; i < 2 * k; i++)
        items[i] = first + i;
    spm_mining_sets_t g = {
        .kind = SPM_MINING_KIND_FSETS, .k = k, .n = 2, .items = items, .counts = counts};
    ck_assert_int_eq(spm_mining_sets_encode(&g, data, len), 0);
}

START_TEST(forged_runs_refused)
{
    spm_mine_runs_t *runs = spm_mine_runs_new(1 << 20, NULL, 9);
    void *data;
    size_t len;
    uint32_t k;
    const uint32_t *items;
    uint64_t count;
    /* Framing cut short: refused as it is added. */
    block(2, 10, &data, &len);
    ck_assert_int_eq(spm_mine_runs_add(runs, data, len - 1, 0, free, data), SPM_EFORMAT);
    /* The last set's count cut short (its varint goes on past the block):
       the framing holds, the merge refuses it. */
    block(2, 10, &data, &len);
    ((unsigned char *)data)[len - 1] |= 0x80;
    ck_assert_int_eq(spm_mine_runs_add(runs, data, len, 0, free, data), 0);
    ck_assert_int_eq(spm_mine_runs_start(runs), 0);
    int rc;
    while ((rc = spm_mine_runs_next(runs, &k, &items, &count)) == 1)
        ;
    ck_assert_int_eq(rc, SPM_EFORMAT);
    /* Read ahead, the error and its detail reach the caller's thread. */
    spm_mine_out_t o = {.runs = runs};
    ck_assert_int_eq(spm_mine_runs_start(runs), 0);
    spm_mine_ahead_t *a = spm_mine_ahead_start(&o);
    while ((rc = spm_mine_ahead_next(a, &k, &items, &count)) == 1)
        ;
    ck_assert_int_eq(rc, SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "truncated count"));
    spm_mine_ahead_destroy(&a);
    spm_mine_runs_destroy(&runs);
    /* A directory that cannot take the file: one error naming it. */
    runs = spm_mine_runs_new(0, "/nonexistent/spm-runs-dir", 9);
    block(2, 10, &data, &len);
    ck_assert_int_eq(spm_mine_runs_add(runs, data, len, 0, free, data), SPM_EIO);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "/nonexistent/spm-runs-dir"));
    spm_mine_runs_destroy(&runs);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mine_runs");
    SPM_TEST_ADD_LOOP(s, NULL, merged_like_a_sort, 0, 3);
    SPM_TEST_ADD(s, NULL, forged_runs_refused);
    SPM_TEST_ADD(s, NULL, read_ahead_like_the_merge);
    return s;
}

SPM_TEST_MAIN(suite)
