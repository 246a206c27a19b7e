/*  =========================================================================
    test_mine - `spm mine` and `spm gen transactions` as a user runs them

    Every test runs the real binary ($SPM_BIN) on an embedded VM and checks
    its files against the independent reference (tests/ref/apriori_ref.h):
    the same itemsets with the same supports, the same rules with the same
    supports, confidences and lifts, in the same order. The FIMI reference
    files are optional: those tests skip with a message without ../shared.
    =========================================================================
*/
#include "tests/check_main.h"
#include "tests/ref/apriori_ref.h"
#include "tests/scratch.h"
#include "tests/spm_test.h"
#include "bench/peakmem.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*  Runs a shell command line; returns its exit status. Stderr goes to
    BASE/stderr. */
static int run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_int_lt(n, (int)sizeof cmd - 64);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " 2>%s/stderr", base);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*  The contents of a file in the scratch directory ("" when missing). */
static char *slurp(const char *p)
{
    static char buf[1 << 16];
    FILE *f = fopen(p, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

static void write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* ------------------------------------------------ parsing spm's text output */

typedef struct {
    uint32_t items[64], k;
    uint64_t sup;
} set_t;

typedef struct {
    uint32_t x[64], xl, y[64], yl;
    uint64_t sup;
    double conf, lift;
} rule_t;

/*  Reads a list of items up to "(" or "=>". */
static uint32_t parse_items(char **p, uint32_t *out)
{
    uint32_t n = 0;
    for (;;) {
        while (**p == ' ')
            (*p)++;
        if (**p < '0' || **p > '9')
            return n;
        out[n++] = (uint32_t)strtoul(*p, p, 10);
        ck_assert_uint_le(n, 64);
    }
}

/*  Reads the data lines (not '#') of P into an array of SIZE-byte records,
    each filled by PARSE. Returns the array (malloc'd) and sets *N. */
static void *read_records(const char *p, size_t size, size_t *n,
                          int (*parse)(char *line, void *rec))
{
    FILE *f = fopen(p, "r");
    ck_assert_msg(f != NULL, "no output file %s", p);
    char *v = NULL, line[4096];
    size_t cap = 0;
    int ok = 1;
    *n = 0;
    while (ok && fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        if (*n == cap)
            v = realloc(v, (cap = cap ? cap * 2 : 1024) * size);
        ok = parse(line, v + (*n)++ * size);
    }
    fclose(f);
    ck_assert_msg(ok, "bad line in %s: %s", p, line);
    return v;
}

/*  "a b c (support)" */
static int parse_set(char *q, void *rec)
{
    set_t *s = rec;
    s->k = parse_items(&q, s->items);
    s->sup = strtoull(q + 1, NULL, 10);
    return *q == '(';
}

/*  "x .. => y .. (support, confidence, lift)" */
static int parse_rule(char *q, void *rec)
{
    rule_t *r = rec;
    r->xl = parse_items(&q, r->x);
    if (strncmp(q, "=> ", 3) != 0)
        return 0;
    q += 3;
    r->yl = parse_items(&q, r->y);
    return sscanf(q, "(%lu, %lf, %lf)", &r->sup, &r->conf, &r->lift) == 3;
}

static set_t *read_sets(const char *p, size_t *n)
{
    return read_records(p, sizeof(set_t), n, parse_set);
}

static rule_t *read_rules(const char *p, size_t *n)
{
    return read_records(p, sizeof(rule_t), n, parse_rule);
}

/*  Itemset order: length, then items (the order of both outputs). */
static int cmp_set(const void *a, const void *b)
{
    const ref_set_t *x = a, *y = b;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    for (uint32_t j = 0; j < x->k; j++)
        if (x->items[j] != y->items[j])
            return x->items[j] < y->items[j] ? -1 : 1;
    return 0;
}

/*  Mines FILE with spm and with the reference and asserts identical results. */
static void check_against_ref(const char *file, uint64_t minsup, double minconf, uint32_t maxcons,
                              const char *extra)
{
    char cons[64] = "";
    if (maxcons)
        snprintf(cons, sizeof cons, "--max-consequent %u", maxcons);
    int rc = run("%s mine %s --min-support %llu --min-confidence %.6f %s %s --quiet "
                 "--itemsets %s -o %s",
                 spm_test_bin(), file, (unsigned long long)minsup, minconf, cons,
                 extra ? extra : "", path("sets.txt"), path("rules.txt"));
    ck_assert_msg(rc == 0, "spm mine failed: %s", slurp(path("stderr")));
    ref_db_t db;
    ck_assert_int_eq(ref_db_load(file, &db), 0);
    ref_result_t ref;
    ref_mine(&db, minsup, minconf, maxcons, &ref);
    size_t ns, nr;
    set_t *sets = read_sets(path("sets.txt"), &ns);
    rule_t *rules = read_rules(path("rules.txt"), &nr);
    /* Plain comparisons, one assertion each: Check records every assertion. */
    ck_assert_uint_eq(ns, ref.nsets);
    for (size_t i = 0; i < ns; i++)
        if (sets[i].k != ref.sets[i].k || sets[i].sup != ref.sets[i].sup ||
            memcmp(sets[i].items, ref.sets[i].items, sets[i].k * 4) != 0)
            ck_abort_msg("itemset %zu differs from the reference (support %llu vs %llu)", i,
                         (unsigned long long)sets[i].sup, (unsigned long long)ref.sets[i].sup);
    ck_assert_uint_eq(nr, ref.nrules);
    for (size_t i = 0; i < nr; i++) {
        const ref_rule_t *e = &ref.rules[i];
        const rule_t *g = &rules[i];
        ref_set_t key = {.k = e->ylen, .items = e->y};
        const ref_set_t *ys = bsearch(&key, ref.sets, ref.nsets, sizeof key, cmp_set);
        double conf = (double)e->supz / (double)e->supx;
        double lift = ys ? conf * (double)db.ntrans / (double)ys->sup : -1;
        if (g->xl != e->xlen || g->yl != e->ylen || memcmp(g->x, e->x, e->xlen * 4) != 0 ||
            memcmp(g->y, e->y, e->ylen * 4) != 0 || g->sup != e->supz ||
            fabs(g->conf - conf) > 1e-6 || fabs(g->lift - lift) > 1e-5 * (1 + lift))
            ck_abort_msg("rule %zu differs from the reference", i);
    }
    free(sets);
    free(rules);
    ref_result_free(&ref);
    ref_db_free(&db);
}

static void gen(const char *name, const char *params)
{
    int rc = run("%s gen transactions %s -o %s", spm_test_bin(), params, path(name));
    ck_assert_msg(rc == 0, "spm gen failed: %s", slurp(path("stderr")));
}

/* ------------------------------------------------------------ generated data */

START_TEST(sparse_quest)
{
    gen("a.dat", "--transactions 3000 --avg-size 10 --avg-pattern 4 --items 300 --patterns 150 "
                 "--seed 7");
    check_against_ref(path("a.dat"), 45, 0.8, 0, NULL);
}
END_TEST

START_TEST(long_patterns)
{
    /* About 3,500 itemsets up to length 9 and 125,000 rules. */
    gen("b.dat", "--transactions 1500 --avg-size 14 --avg-pattern 7 --items 200 --patterns 60 "
                 "--seed 3");
    check_against_ref(path("b.dat"), 90, 0.8, 0, "--block 100");
}
END_TEST

START_TEST(dense_small_blocks)
{
    /* Few items, long transactions, blocks of 37: many blocks of every kind. */
    gen("c.dat", "--transactions 400 --avg-size 9 --avg-pattern 5 --items 24 --patterns 10 "
                 "--seed 11");
    check_against_ref(path("c.dat"), 40, 0.5, 0, "--block 37");
}
END_TEST

START_TEST(single_consequent)
{
    gen("d.dat", "--transactions 2000 --avg-size 12 --avg-pattern 6 --items 80 --patterns 30 "
                 "--seed 5");
    check_against_ref(path("d.dat"), 60, 0.7, 1, NULL);
}
END_TEST

START_TEST(percent_support)
{
    /* 2.5% of 2000 transactions is exactly 50. */
    gen("e.dat", "--transactions 2000 --avg-size 8 --avg-pattern 4 --items 100 --patterns 50 "
                 "--seed 2");
    ck_assert_int_eq(run("%s mine %s --min-support 2.5%% --quiet --itemsets %s -o %s",
                         spm_test_bin(), path("e.dat"), path("p.txt"), path("r1.txt")),
                     0);
    ck_assert_int_eq(run("%s mine %s --min-support 50 --quiet --itemsets %s -o %s", spm_test_bin(),
                         path("e.dat"), path("c.txt"), path("r2.txt")),
                     0);
    char a[1 << 16];
    strcpy(a, slurp(path("p.txt")));
    ck_assert_str_eq(a, slurp(path("c.txt")));
    ck_assert_str_eq(strcpy(a, slurp(path("r1.txt"))), slurp(path("r2.txt")));
}
END_TEST

START_TEST(generator_is_deterministic)
{
    gen("g1.dat", "--transactions 500 --avg-size 10 --avg-pattern 4 --items 100 --seed 9");
    gen("g2.dat", "--transactions 500 --avg-size 10 --avg-pattern 4 --items 100 --seed 9");
    gen("g3.dat", "--transactions 500 --avg-size 10 --avg-pattern 4 --items 100 --seed 10");
    ck_assert_int_eq(run("cmp -s %s %s", path("g1.dat"), path("g2.dat")), 0);
    ck_assert_int_ne(run("cmp -s %s %s", path("g1.dat"), path("g3.dat")), 0);
}
END_TEST

/*  Writes TEXT as in.dat, mines it with ARGS into s.txt (itemsets) and
    r.txt (rules) and asserts success. */
static void mine_text(const char *text, const char *args)
{
    write_file(path("in.dat"), text);
    int rc = run("%s mine %s %s --quiet --itemsets %s -o %s", spm_test_bin(), path("in.dat"), args,
                 path("s.txt"), path("r.txt"));
    ck_assert_msg(rc == 0, "spm mine failed: %s", slurp(path("stderr")));
}

/*  Asserts the counts of itemsets and rules mine_text produced. */
static void expect_counts(size_t sets, size_t rules)
{
    size_t ns, nr;
    free(read_sets(path("s.txt"), &ns));
    free(read_rules(path("r.txt"), &nr));
    ck_assert_uint_eq(ns, sets);
    ck_assert_uint_eq(nr, rules);
}

/* --------------------------------------------------------------- edge cases */

START_TEST(nothing_frequent)
{
    mine_text("1 2\n3 4\n5 6\n", "--min-support 100%");
    expect_counts(0, 0);
}
END_TEST

START_TEST(everything_frequent)
{
    gen("f.dat", "--transactions 60 --avg-size 4 --avg-pattern 2 --items 40 --patterns 20 "
                 "--seed 4");
    check_against_ref(path("f.dat"), 1, 0.0, 0, NULL);
}
END_TEST

START_TEST(single_items)
{
    write_file(path("one.dat"), "5\n7\n5\n9\n5\n7\n");
    check_against_ref(path("one.dat"), 2, 0.5, 0, NULL);
    size_t ns;
    free(read_sets(path("sets.txt"), &ns));
    ck_assert_uint_eq(ns, 2); /* {5} x3, {7} x2 */
}
END_TEST

START_TEST(duplicate_items)
{
    mine_text("1 1 2\n2 2 1 1\n2\t3 3\r\n", "--min-support 2 --min-confidence 0");
    ck_assert_str_eq(slurp(path("s.txt")),
                     "# 3 frequent itemsets, minimum support 2 of 3 transactions\n"
                     "# items (support count)\n"
                     "1 (2)\n2 (3)\n1 2 (2)\n");
}
END_TEST

START_TEST(long_transactions)
{
    /* Transactions of 60 to 90 items with blocks of 5 transactions: each
       block holds more items than the block size. */
    FILE *f = fopen(path("long.dat"), "w");
    unsigned s = 1;
    for (int t = 0; t < 40; t++) {
        int n = 60 + t % 31;
        for (int i = 0, item = 0; i < n; i++) {
            s = s * 1103515245u + 12345u;
            item += 1 + (int)(s >> 16) % 3;
            fprintf(f, i ? " %d" : "%d", item);
        }
        fputc('\n', f);
    }
    fclose(f);
    check_against_ref(path("long.dat"), 24, 0.9, 0, "--block 5");
}
END_TEST

START_TEST(huge_item_numbers)
{
    mine_text("4294967294 7 100000000\n7 4294967294\n100000000 7\n",
              "--min-support 2 --min-confidence 0");
    ck_assert_ptr_nonnull(strstr(slurp(path("s.txt")), "\n7 4294967294 (2)\n"));
    expect_counts(5, 4);
}
END_TEST

START_TEST(empty_file)
{
    mine_text("", "--min-support 1%");
    expect_counts(0, 0);
}
END_TEST

START_TEST(empty_lines_count)
{
    /* Empty lines are empty transactions: they lower every support ratio. */
    mine_text("1 2\n\n1 2\n\n", "--min-support 50% --min-confidence 0");
    ck_assert_ptr_nonnull(strstr(slurp(path("s.txt")), "1 2 (2)\n"));
    ck_assert_ptr_nonnull(strstr(slurp(path("r.txt")), "1 => 2 (2, 1.000000, 2.000000)\n"));
}
END_TEST

START_TEST(names_round_trip)
{
    mine_text("bread milk\nmilk eggs bread\nbeer\nbread milk beer\n",
              "--names --min-support 2 --min-confidence 60%");
    const char *s = slurp(path("s.txt"));
    ck_assert_ptr_nonnull(strstr(s, "bread milk (3)\n"));
    ck_assert_ptr_nonnull(strstr(s, "beer (2)\n"));
    ck_assert_ptr_nonnull(strstr(slurp(path("r.txt")), "milk => bread (3, 1.000000, "));
    mine_text("a,b \"q\"\n\"q\" a,b\n", "--names --min-support 2 --format csv");
    ck_assert_ptr_nonnull(strstr(slurp(path("s.txt")), "\"a,b \"\"q\"\"\",2\n"));
}
END_TEST

START_TEST(csv_and_json)
{
    mine_text("1 2\n1 2 3\n2 3\n", "--min-support 2 --min-confidence 0 --format csv");
    ck_assert_str_eq(slurp(path("s.txt")), "items,support\n1,2\n2,3\n3,2\n1 2,2\n2 3,2\n");
    ck_assert_ptr_nonnull(strstr(slurp(path("r.txt")), "antecedent,consequent,support,"));
    mine_text("1 2\n1 2 3\n2 3\n", "--min-support 2 --format json");
    ck_assert_ptr_nonnull(strstr(slurp(path("s.txt")), "{\"items\": [2, 3], \"support\": 2}"));
    ck_assert_int_eq(run("python3 -c 'import json,sys; json.load(open(sys.argv[1])); "
                         "json.load(open(sys.argv[2]))' %s %s",
                         path("s.txt"), path("r.txt")),
                     0);
}
END_TEST

/* ---------------------------------------------------------------- bad input */

/*  Runs spm mine on FILE with ARGS, expecting failure with one stderr line
    containing WANT, no output file left behind, and an end within 2 s: a
    bad line found while the embedded VM was still starting once left the
    command waiting 3.5-9.6 s for processes that had missed the word to
    stop (6 runs of 15). */
static void expect_failure(const char *file, const char *args, const char *want)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run("%s mine %s %s --quiet --itemsets %s -o %s", spm_test_bin(), file, args,
                 path("bad_s.txt"), path("bad_r.txt"));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(secs < 2.0, "spm mine took %.1f s to fail", secs);
    const char *err = slurp(path("stderr"));
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(err, want) != NULL, "stderr '%s' lacks '%s'", err, want);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: '%s'", err);
    ck_assert(!exists(path("bad_s.txt")));
    ck_assert(!exists(path("bad_r.txt")));
}

START_TEST(bad_inputs)
{
    write_file(path("word.dat"), "1 2\n3 x4 5\n");
    for (int i = 0; i < 5; i++) /* the VM is stopped at once, whenever the line comes */
        expect_failure(path("word.dat"), "--min-support 1", "word.dat:2: item 'x4'");
    write_file(path("neg.dat"), "1 2\n\n4 -3\n");
    expect_failure(path("neg.dat"), "--min-support 1", "neg.dat:3: negative item '-3'");
    write_file(path("trunc.dat"), "1 2\n3 4");
    expect_failure(path("trunc.dat"), "--min-support 1", "trunc.dat:2: last line has no line end");
    expect_failure(path("missing.dat"), "--min-support 1", "missing.dat: No such file");
    /* Read from stdin ("-"), a line is named by "stdin". */
    char from[600];
    snprintf(from, sizeof from, "- < %s", path("word.dat"));
    expect_failure(from, "--min-support 1", "stdin:2: item 'x4'");
    snprintf(from, sizeof from, "- < %s", path("trunc.dat"));
    expect_failure(from, "--min-support 1", "stdin:2: last line has no line end");
    write_file(path("ok.dat"), "1 2\n");
    expect_failure(path("ok.dat"), "--min-support 0", "outside (0, 100%]");
    expect_failure(path("ok.dat"), "--min-support 150%", "outside (0, 100%]");
    expect_failure(path("ok.dat"), "--min-support -1%", "outside (0, 100%]");
    expect_failure(path("ok.dat"), "--min-support 1 --min-confidence 120%", "outside [0, 100%]");
}
END_TEST

START_TEST(device_output_stays_a_device)
{
    /* Writing to /dev/null must not rename a regular file over it. */
    write_file(path("dn.dat"), "1 2\n1 2\n");
    ck_assert_int_eq(run("%s mine %s --min-support 1 --quiet --itemsets /dev/null -o /dev/null",
                         spm_test_bin(), path("dn.dat")),
                     0);
    ck_assert_int_eq(run("%s gen transactions --transactions 5 -o /dev/null", spm_test_bin()), 0);
    struct stat st;
    ck_assert_int_eq(stat("/dev/null", &st), 0);
    ck_assert(S_ISCHR(st.st_mode));
}
END_TEST

START_TEST(help_tells_the_truth)
{
    ck_assert_int_eq(run("%s mine --help > %s", spm_test_bin(), path("help.txt")), 0);
    const char *h = slurp(path("help.txt"));
    const char *opts[] = {"--min-support", "--min-confidence", "--output", "--itemsets", "--format",
                          "--block",       "--max-consequent", "--names",  "--center",   "--ieus"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        ck_assert_msg(strstr(h, opts[i]) != NULL, "help lacks %s", opts[i]);
}
END_TEST

/* ------------------------------------------------------------ remote center */

/*  Starts a center on ipc://BASE/center (written into EP) and an agent of 2
    IEUs, as on a cluster. */
static void start_center(char *ep, size_t size, spm_test_proc_t *pc, spm_test_proc_t *pa)
{
    char store[600], cache[600];
    snprintf(ep, size, "ipc://%s/center", base);
    snprintf(store, sizeof store, "%s/store", base);
    snprintf(cache, sizeof cache, "%s/cache", base);
    const char *center[] = {"center", "--listen",    ep,     "--store",
                            store,    "--log-level", "warn", NULL};
    *pc = spm_test_start(center);
    const char *agent[] = {"agent", "--center", ep, "--ieus", "2", "--cache-dir", cache, NULL};
    *pa = spm_test_start(agent);
}

START_TEST(remote_center_same_answer)
{
    /* A running center and agent, as on a cluster: the client streams the
       file into the VM's store; nothing is read from a shared disk. */
    char ep[600];
    spm_test_proc_t pc, pa;
    start_center(ep, sizeof ep, &pc, &pa);
    gen("rc.dat", "--transactions 2000 --avg-size 10 --avg-pattern 4 --items 200 --patterns 100 "
                  "--seed 8");
    int rc = run("%s mine %s --min-support 1%% --center %s --quiet --itemsets %s -o %s",
                 spm_test_bin(), path("rc.dat"), ep, path("rs.txt"), path("rr.txt"));
    ck_assert_msg(rc == 0, "remote spm mine failed: %s", slurp(path("stderr")));
    ck_assert_int_eq(run("%s mine %s --min-support 1%% --quiet --itemsets %s -o %s", spm_test_bin(),
                         path("rc.dat"), path("es.txt"), path("er.txt")),
                     0);
    ck_assert_int_eq(run("cmp -s %s %s && cmp -s %s %s", path("rs.txt"), path("es.txt"),
                         path("rr.txt"), path("er.txt")),
                     0);
    kill(pc.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&pc, 10, NULL, NULL), 0);
    ck_assert_int_eq(spm_test_finish(&pa, 15, NULL, NULL), 0);
}
END_TEST

/* ---------------------------------------------------------- reference files */

/*  ../shared/data/fimi/NAME relative to the repository, or NULL. */
static const char *fimi(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "../shared/data/fimi/%s", name);
    if (exists(p))
        return p;
    fprintf(stderr, "test_mine: %s absent, skipped\n", p);
    return NULL;
}

static size_t count_sets(const char *file, const char *support, const char *extra)
{
    int rc = run("%s mine %s --min-support %s %s --quiet --itemsets %s -o %s", spm_test_bin(), file,
                 support, extra, path("sets.txt"), path("rules.txt"));
    ck_assert_msg(rc == 0, "spm mine failed: %s", slurp(path("stderr")));
    size_t n;
    free(read_sets(path("sets.txt"), &n));
    return n;
}

START_TEST(fimi_t10i4d100k)
{
    const char *f = fimi("T10I4D100K.dat");
    if (!f)
        return;
    ck_assert_uint_eq(count_sets(f, "500", "--min-confidence 80% --max-consequent 1"), 1073);
    size_t nr;
    free(read_rules(path("rules.txt"), &nr));
    ck_assert_uint_eq(nr, 524);
}
END_TEST

START_TEST(fimi_chess)
{
    const char *f = fimi("chess.dat");
    if (!f)
        return;
    ck_assert_uint_eq(count_sets(f, "90%", ""), 622);
    check_against_ref(f, 2877, 0.95, 0, NULL); /* 90% of 3196 */
}
END_TEST

/* ------------------------------------------------------ the depth-first miner */

/*  Mines FILE with ARGS by --algorithm apriori and eclat and asserts that
    both write the same bytes, itemsets and rules. */
static void eclat_same_as_apriori(const char *file, const char *args)
{
    const char *alg[2] = {"apriori", "eclat"};
    int rules = strstr(args, "--itemsets-only") == NULL;
    for (int a = 0; a < 2; a++) {
        char sets[16], out[64] = "";
        snprintf(sets, sizeof sets, "sets.%s", alg[a]);
        if (rules)
            snprintf(out, sizeof out, "rules.%s", alg[a]);
        int rc = run("%s mine %s %s --algorithm %s --quiet --itemsets %s %s %s", spm_test_bin(),
                     file, args, alg[a], path(sets), rules ? "-o" : "", rules ? path(out) : "");
        ck_assert_msg(rc == 0, "spm mine --algorithm %s failed: %s", alg[a], slurp(path("stderr")));
    }
    ck_assert_msg(run("cmp %s %s", path("sets.apriori"), path("sets.eclat")) == 0,
                  "itemsets of eclat and apriori differ (%s %s)", file, args);
    ck_assert_msg(!rules || run("cmp %s %s", path("rules.apriori"), path("rules.eclat")) == 0,
                  "rules of eclat and apriori differ (%s %s)", file, args);
}

START_TEST(eclat_generated)
{
    /* Dense: few items, long transactions, small blocks. */
    gen("c.dat", "--transactions 400 --avg-size 9 --avg-pattern 5 --items 24 --patterns 10 "
                 "--seed 11");
    check_against_ref(path("c.dat"), 40, 0.5, 0, "--block 37 --algorithm eclat");
    eclat_same_as_apriori(path("c.dat"), "--min-support 40 --min-confidence 50% --block 37");
    eclat_same_as_apriori(path("c.dat"), "--min-support 10% --max-length 3 --format csv");
    eclat_same_as_apriori(path("c.dat"), "--min-support 10% --max-consequent 1 --format json");
    /* Sparse. */
    gen("a.dat", "--transactions 3000 --avg-size 10 --avg-pattern 4 --items 300 --patterns 150 "
                 "--seed 7");
    check_against_ref(path("a.dat"), 45, 0.8, 0, "--algorithm eclat");
    eclat_same_as_apriori(path("a.dat"), "--min-support 30 --min-confidence 60%");
    eclat_same_as_apriori(path("a.dat"), "--min-support 30 --itemsets-only");
    /* Long patterns. */
    gen("b.dat", "--transactions 1500 --avg-size 14 --avg-pattern 7 --items 200 --patterns 60 "
                 "--seed 3");
    check_against_ref(path("b.dat"), 90, 0.8, 0, "--block 100 --algorithm eclat");
}
END_TEST

START_TEST(eclat_chess)
{
    const char *f = fimi("chess.dat");
    if (!f)
        return;
    check_against_ref(f, 2877, 0.95, 0, "--algorithm eclat"); /* 90% of 3196 */
    eclat_same_as_apriori(f, "--min-support 80% --min-confidence 90%");
    /* 254,944 itemsets, up to 13 items: the case depth first is for. */
    eclat_same_as_apriori(f, "--min-support 60% --itemsets-only");
}
END_TEST

/* ------------------------------------------------- output in bounded memory */

/*  Mines FILE with ARGS twice, with SPM_MINE_SORT_BUDGET at 16 KiB (the
    itemsets spill a few runs, so the rules get s(Y) from the join with
    their stream; the rules spill about a hundred, merged in two passes)
    and with everything in memory, and asserts the same bytes. The runs go
    to TMPDIR, left empty. */
static void tiny_budget_same_bytes(const char *file, const char *args)
{
    const char *budget[2] = {"16384", "4000000000"}, *name[2] = {"tiny", "all"};
    ck_assert_int_eq(mkdir(path("tmp"), 0700), 0);
    for (int b = 0; b < 2; b++) {
        int rc =
            run("SPM_MINE_SORT_BUDGET=%s TMPDIR=%s %s mine %s %s --quiet --itemsets %s.s "
                "-o %s.r",
                budget[b], path("tmp"), spm_test_bin(), file, args, path(name[b]), path(name[b]));
        ck_assert_msg(rc == 0, "spm mine %s failed: %s", args, slurp(path("stderr")));
    }
    ck_assert_msg(run("cmp %s %s", path("tiny.s"), path("all.s")) == 0, "itemsets differ (%s)",
                  args);
    ck_assert_msg(run("cmp %s %s", path("tiny.r"), path("all.r")) == 0, "rules differ (%s)", args);
    ck_assert_int_eq(rmdir(path("tmp")), 0); /* no run file left */
}

START_TEST(small_sort_budget_same_bytes)
{
    gen("d.dat", "--transactions 1500 --avg-size 12 --avg-pattern 6 --items 60 --patterns 20 "
                 "--seed 5");
    ck_assert_int_eq(run("sed 's/[0-9][0-9]*/w&/g' %s > %s", path("d.dat"), path("w.dat")), 0);
    const char *fmt[3] = {"text", "csv", "json"};
    for (int f = 0; f < 3; f++) { /* 2,142 itemsets, 27,001 rules */
        char args[128];
        snprintf(args, sizeof args, "--min-support 12%% --min-confidence 60%% --format %s", fmt[f]);
        tiny_budget_same_bytes(path("d.dat"), args);
        snprintf(args, sizeof args, "--names --min-support 12%% --min-confidence 60%% --format %s",
                 fmt[f]);
        tiny_budget_same_bytes(path("w.dat"), args);
    }
    ck_assert_ptr_nonnull(strstr(slurp(path("all.r")), "\"min_support\": 180,"));
    /* Itemsets alone, depth first: the class blocks, fetched as bytes
       (--no-store-reads), spill to the runs file as they come (16 KiB) or
       stay in memory; read in place in the embedded VM's store, they stay
       there whatever the budget. The same bytes each way. */
    ck_assert_int_eq(mkdir(path("tmp"), 0700), 0);
    const char *how[3] = {"16384 --no-store-reads", "16384", "4000000000 --no-store-reads"};
    for (int f = 0; f < 3; f++)
        for (int b = 0; b < 3; b++) {
            char budget[64];
            snprintf(budget, sizeof budget, "%s", how[b]);
            char *opt = strchr(budget, ' ');
            if (opt)
                *opt++ = 0;
            int rc = run("SPM_MINE_SORT_BUDGET=%s TMPDIR=%s %s mine %s --min-support 5%% "
                         "--itemsets-only --algorithm eclat --format %s --quiet %s --itemsets %s",
                         budget, path("tmp"), spm_test_bin(), path("d.dat"), fmt[f], opt ? opt : "",
                         path(b ? "all.s" : "tiny.s"));
            ck_assert_msg(rc == 0, "spm mine failed: %s", slurp(path("stderr")));
            if (b)
                ck_assert_msg(run("cmp %s %s", path("tiny.s"), path("all.s")) == 0,
                              "itemsets differ (%s, budget %s)", fmt[f], how[b]);
        }
    ck_assert_int_eq(rmdir(path("tmp")), 0); /* no runs file left */
    /* A run directory that cannot be made: one line naming it, no output left. */
    int rc = run("SPM_MINE_SORT_BUDGET=4096 TMPDIR=%s %s mine %s --min-support 12%% --quiet "
                 "--itemsets %s -o %s",
                 path("no/such/dir"), spm_test_bin(), path("d.dat"), path("f.s"), path("f.r"));
    ck_assert_int_ne(rc, 0);
    ck_assert_ptr_nonnull(strstr(slurp(path("stderr")), "no/such/dir"));
    ck_assert(!exists(path("f.s")) && !exists(path("f.r")));
}
END_TEST

/*  1 (after saying so) when this is a sanitizer build: AddressSanitizer
    reserves terabytes of shadow memory and cannot start under ulimit -d. */
static int no_memory_limits(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("test_mine: memory limits skipped in an AddressSanitizer build\n");
    return 1;
#else
    return 0;
#endif
}

/*  Millions of itemsets in bounded memory, on data every machine can make:
    a dense generated set (8,000 transactions of about 23 of 120 items) at
    5% has 2,238,741 frequent itemsets. Under ulimit -d 250000 (250 MB of
    data segment per process; the embedded VM's processes inherit it) the
    client that held every itemset ran out of memory; now the run completes
    and writes the same bytes as one without the limit. */
START_TEST(millions_of_itemsets_under_a_limit)
{
    if (no_memory_limits())
        return;
    gen("mush.dat", "--transactions 8000 --avg-size 23 --avg-pattern 10 --items 120 "
                    "--patterns 50 --seed 2");
    const char *args = "--min-support 5% --itemsets-only --algorithm eclat --quiet";
    int rc = run("ulimit -d 250000 && TMPDIR=%s %s mine %s %s --itemsets %s", base, spm_test_bin(),
                 path("mush.dat"), args, path("lim.s"));
    ck_assert_msg(rc == 0, "spm mine under ulimit -d failed: %s", slurp(path("stderr")));
    rc = run("%s mine %s %s --itemsets %s", spm_test_bin(), path("mush.dat"), args, path("all.s"));
    ck_assert_msg(rc == 0, "spm mine failed: %s", slurp(path("stderr")));
    ck_assert_int_eq(run("cmp -s %s %s", path("lim.s"), path("all.s")), 0);
    ck_assert_int_eq(run("test $(grep -vc '^#' %s) -gt 2000000", path("lim.s")), 0);
}
END_TEST

START_TEST(big_output_in_bounded_memory)
{
    const char *f = fimi("chess.dat");
    if (!f || no_memory_limits())
        return;
    /* 20,993 itemsets and 1,088,117 rules (56 MB of text). With 300 MB of
       data segment per process (ulimit -d; the embedded VM's processes
       inherit it) the client that held every rule (peak RSS 231 MB) ran
       out of memory; sorting in its 32 MiB budget it peaks at about
       55 MB. ulimit -v cannot be used: the
       VM's LMDB maps alone exceed any useful limit. */
    const char *args = "--min-support 75% --min-confidence 90% --quiet";
    int rc = run("ulimit -d 300000 && TMPDIR=%s %s mine %s %s --itemsets %s -o %s", base,
                 spm_test_bin(), f, args, path("lim.s"), path("lim.r"));
    ck_assert_msg(rc == 0, "spm mine under ulimit -d failed: %s", slurp(path("stderr")));
    rc = run("SPM_MINE_SORT_BUDGET=4000000000 %s mine %s %s --itemsets %s -o %s", spm_test_bin(), f,
             args, path("all.s"), path("all.r"));
    ck_assert_msg(rc == 0, "spm mine failed: %s", slurp(path("stderr")));
    ck_assert_msg(run("cmp %s %s", path("lim.s"), path("all.s")) == 0, "itemsets differ");
    ck_assert_msg(run("cmp %s %s", path("lim.r"), path("all.r")) == 0, "rules differ");
    ck_assert_ptr_nonnull(strstr(slurp(path("all.r")), "# 1088117 rules,"));
}
END_TEST

/*  The peak of the summed Pss of `spm mine ARGS...` and every process it
    starts (the embedded VM's center, agent and IEUs), in MiB, sampled every
    20 ms; fails the test when the command fails. */
static double summed_peak_mib(const char *const *argv)
{
    spm_test_proc_t p = spm_test_start(argv);
    peakmem_t m;
    peakmem_start(&m, p.pid);
    char *out, *err;
    int rc = spm_test_finish(&p, 600, &out, &err);
    double mib = peakmem_stop(&m);
    ck_assert_msg(rc == 0, "spm mine failed (%d): %s", rc, err);
    free(out);
    free(err);
    return mib;
}

/*  The bound docs/MINING.md promises: the processes of one `spm mine`
    (client, center, agent, IEUs) stay under 256 MiB summed, whatever the
    number of itemsets and rules. Chess at 75% with 2,215,019 rules (80%)
    peaked at about 620 MiB when a StoreResult block grew with the rules,
    every process kept the store pages it had read mapped, and the client
    held two 64 MiB sorts; the dense generated set of the benchmark has
    670,782 itemsets. */
START_TEST(summed_memory_under_bound)
{
    if (no_memory_limits())
        return;
    gen("dense.dat", "--transactions 8000 --avg-size 23 --avg-pattern 12 --items 120 "
                     "--patterns 20 --corruption 0.1 --seed 2");
    const char *dense[] = {"mine", path("dense.dat"), "--min-support", "10%",       "--ieus",
                           "2",    "--itemsets-only", "--itemsets",    path("d.s"), "--quiet",
                           NULL};
    double mib = summed_peak_mib(dense);
    printf("test_mine: dense 10%%, itemsets only: %.0f MiB summed\n", mib);
    ck_assert_msg(mib < 256, "dense 10%%: %.0f MiB summed, over 256", mib);
    const char *f = fimi("chess.dat");
    if (!f)
        return;
    const char *chess[] = {"mine", f,           "--min-support", "75%",       "--ieus",  "2",
                           "-o",   path("c.r"), "--itemsets",    path("c.s"), "--quiet", NULL};
    mib = summed_peak_mib(chess);
    printf("test_mine: chess 75%%, 80%% confidence: %.0f MiB summed\n", mib);
    ck_assert_msg(mib < 256, "chess 75%%: %.0f MiB summed, over 256", mib);
    ck_assert_ptr_nonnull(strstr(slurp(path("c.r")), "# 2215019 rules,"));
}
END_TEST

/* ------------------------------------------------ itemsets only, max length */

/*  --itemsets-only writes the frequent itemsets and nothing else (to stdout
    without --itemsets), --max-length N stops at sets of N items (rules of N
    items at most), both against the reference; both algorithms. */
START_TEST(itemsets_only_and_max_length)
{
    gen("m.dat", "--transactions 1500 --avg-size 12 --avg-pattern 6 --items 80 --patterns 30 "
                 "--seed 4");
    const uint64_t minsup = 60;
    const uint32_t maxlen = 3;
    ref_db_t db;
    ck_assert_int_eq(ref_db_load(path("m.dat"), &db), 0);
    ref_result_t ref;
    ref_mine(&db, minsup, 0.8, 0, &ref);
    size_t want = 0, longest = 0;
    for (size_t i = 0; i < ref.nsets; i++) {
        want += ref.sets[i].k <= maxlen;
        longest = ref.sets[i].k > longest ? ref.sets[i].k : longest;
    }
    ck_assert_uint_gt(longest, maxlen); /* the limit cuts something */
    const char *alg[2] = {"apriori", "eclat"};
    for (int a = 0; a < 2; a++) {
        ck_assert_int_eq(run("cd %s && %s mine m.dat --min-support %llu --itemsets-only "
                             "--max-length %u --algorithm %s --quiet > only.txt",
                             base, spm_test_bin(), (unsigned long long)minsup, maxlen, alg[a]),
                         0);
        size_t n;
        set_t *sets = read_sets(path("only.txt"), &n);
        ck_assert_uint_eq(n, want);
        for (size_t i = 0, j = 0; i < ref.nsets; i++) {
            if (ref.sets[i].k > maxlen)
                continue;
            ck_assert_msg(sets[j].k == ref.sets[i].k && sets[j].sup == ref.sets[i].sup &&
                              memcmp(sets[j].items, ref.sets[i].items, sets[j].k * 4) == 0,
                          "%s: itemset %zu differs from the reference", alg[a], j);
            j++;
        }
        free(sets);
        ck_assert_ptr_null(strstr(slurp(path("only.txt")), "=>")); /* no rules */
    }
    /* rules under --max-length: those of the full run whose X u Y is short enough */
    ck_assert_int_eq(run("%s mine %s --min-support %llu --max-length %u --quiet -o %s",
                         spm_test_bin(), path("m.dat"), (unsigned long long)minsup, maxlen,
                         path("short.txt")),
                     0);
    size_t nr;
    rule_t *rules = read_rules(path("short.txt"), &nr);
    size_t expect = 0;
    for (size_t i = 0; i < ref.nrules; i++)
        expect += ref.rules[i].xlen + ref.rules[i].ylen <= maxlen;
    ck_assert_uint_gt(expect, 0);
    ck_assert_uint_eq(nr, expect);
    for (size_t i = 0; i < nr; i++)
        ck_assert_uint_le(rules[i].xl + rules[i].yl, maxlen);
    free(rules);
    ref_result_free(&ref);
    ref_db_free(&db);
}
END_TEST

/*  Options that make no sense end in one line and exit status 2, before
    anything is read or written. */
START_TEST(bad_options_exit_2)
{
    write_file(path("ok.dat"), "1 2\n");
    const char *args[] = {"--max-length 0", "--algorithm foo", "--itemsets-only -o x.txt",
                          "--max-length 5000", "--format yaml"};
    const char *want[] = {"--max-length", "--algorithm: 'foo'", "--itemsets-only", "--max-length",
                          "--format"};
    for (int i = 0; i < 5; i++) {
        int rc = run("cd %s && %s mine ok.dat --min-support 1 %s", base, spm_test_bin(), args[i]);
        const char *err = slurp(path("stderr"));
        ck_assert_msg(rc == 2, "%s: exit %d, not 2: %s", args[i], rc, err);
        ck_assert_msg(strstr(err, want[i]) != NULL, "%s: stderr '%s'", args[i], err);
        ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: '%s'", err);
    }
    ck_assert(!exists(path("x.txt")));
}
END_TEST

/*  A search that cannot end: one transaction of 200,000 items among 100
    at 1% support makes every item frequent, and 2 x 10^10 pairs. On a
    running center the job fails at once, in one line that says how many
    and suggests a higher support, and the center goes on answering. */
START_TEST(hopeless_search_stops_at_once)
{
    FILE *f = fopen(path("wide.dat"), "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 200000; i++)
        fprintf(f, i ? " %d" : "%d", i);
    fprintf(f, "\n");
    for (int t = 0; t < 99; t++)
        fprintf(f, "%d %d %d\n", t, t + 1, t + 2);
    fclose(f);
    char ep[600];
    spm_test_proc_t pc, pa;
    start_center(ep, sizeof ep, &pc, &pa);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run("%s mine %s --min-support 1%% --center %s --quiet -o %s", spm_test_bin(),
                 path("wide.dat"), ep, path("w.txt"));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    const char *err = slurp(path("stderr"));
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(err, "19999900000 candidates") && strstr(err, "raise --min-support"),
                  "stderr: %s", err);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: '%s'", err);
    ck_assert_msg(s < 10, "the hopeless job took %.1f s to end", s);
    ck_assert(!exists(path("w.txt")));
    ck_assert_int_eq(run("%s status --center %s --json > %s", spm_test_bin(), ep, path("st.json")),
                     0);
    /* the center answers, and lists the failure among its recent ones */
    ck_assert_ptr_nonnull(strstr(slurp(path("st.json")), "candidates of length 2"));
    kill(pc.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&pc, 10, NULL, NULL), 0);
    ck_assert_int_eq(spm_test_finish(&pa, 15, NULL, NULL), 0);
}
END_TEST

/*  Rules past the disk: with consequents of any length, bench_mine's
    dense set at 10% has so many rules that the command, after 143 s of
    finding them, ran /tmp (76 GB free) out of space sorting them, 273 s
    in. The job now stops as soon as the rules it has found pass what the
    client has room for (its sort budget and a quarter of the space free in
    TMPDIR, with an embedded VM), in one line that suggests fewer, and writes nothing; a job
    whose rules fit the same room writes what it writes with room to spare.
    TMPDIR is a 4 MB tmpfs where this test may mount one; elsewhere
    SPM_MINE_ROOM stands in for its free space. */
START_TEST(rules_past_the_disk_stop_early)
{
    gen("many.dat", "--transactions 2000 --avg-size 20 --avg-pattern 10 --items 60 --patterns 10 "
                    "--seed 3");
    char room[600];
    ck_assert_int_eq(run("mkdir -p %s", path("small")), 0);
    if (run("unshare -m sh -c 'mount -t tmpfs -o size=4m tmpfs %s'", path("small")) == 0) {
        snprintf(room, sizeof room,
                 "unshare -m sh -c 'mount -t tmpfs -o size=4m tmpfs %s && exec \"$0\" \"$@\"'",
                 path("small"));
    } else {
        printf("test_mine: no mount namespace here; SPM_MINE_ROOM stands in for a 4 MB TMPDIR\n");
        snprintf(room, sizeof room, "env SPM_MINE_ROOM=4000000");
    }
    const char *env = "env SPM_MINE_SORT_BUDGET=2000000 TMPDIR=";
    int rc = run("%s %s%s %s mine %s --min-support 20%% --quiet -o %s", room, env, path("small"),
                 spm_test_bin(), path("many.dat"), path("all.txt"));
    const char *err = slurp(path("stderr"));
    ck_assert_msg(rc == 1, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "the client has room for") && strstr(err, "--max-consequent 1"),
                  "stderr: %s", err);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: '%s'", err);
    ck_assert(!exists(path("all.txt")));
    rc = run("%s %s%s %s mine %s --min-support 20%% --max-length 4 --quiet -o %s", room, env,
             path("small"), spm_test_bin(), path("many.dat"), path("few.txt"));
    ck_assert_msg(rc == 0, "the rules that fit: exit %d: %s", rc, slurp(path("stderr")));
    rc = run("%s mine %s --min-support 20%% --max-length 4 --quiet -o %s", spm_test_bin(),
             path("many.dat"), path("free.txt"));
    ck_assert_msg(rc == 0, "exit %d: %s", rc, slurp(path("stderr")));
    ck_assert_int_eq(run("cmp -s %s %s && test $(grep -vc '^#' %s) -gt 20000", path("few.txt"),
                         path("free.txt"), path("few.txt")),
                     0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mine");
    const spm_test_case_t mine = {
        .timeout_s = 60, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD(s, &mine, sparse_quest);
    SPM_TEST_ADD(s, &mine, long_patterns);
    SPM_TEST_ADD(s, &mine, dense_small_blocks);
    SPM_TEST_ADD(s, &mine, single_consequent);
    SPM_TEST_ADD(s, &mine, percent_support);
    SPM_TEST_ADD(s, &mine, generator_is_deterministic);
    SPM_TEST_ADD(s, &mine, nothing_frequent);
    SPM_TEST_ADD(s, &mine, everything_frequent);
    SPM_TEST_ADD(s, &mine, single_items);
    SPM_TEST_ADD(s, &mine, duplicate_items);
    SPM_TEST_ADD(s, &mine, long_transactions);
    SPM_TEST_ADD(s, &mine, huge_item_numbers);
    SPM_TEST_ADD(s, &mine, empty_file);
    SPM_TEST_ADD(s, &mine, empty_lines_count);
    SPM_TEST_ADD(s, &mine, names_round_trip);
    SPM_TEST_ADD(s, &mine, csv_and_json);
    SPM_TEST_ADD(s, &mine, bad_inputs);
    SPM_TEST_ADD(s, &mine, device_output_stays_a_device);
    SPM_TEST_ADD(s, &mine, help_tells_the_truth);
    SPM_TEST_ADD(s, &mine, remote_center_same_answer);
    SPM_TEST_ADD(s, &mine, fimi_t10i4d100k);
    SPM_TEST_ADD(s, &mine, fimi_chess);
    SPM_TEST_ADD(s, &mine, itemsets_only_and_max_length);
    SPM_TEST_ADD(s, &mine, bad_options_exit_2);
    SPM_TEST_ADD(s, &mine, hopeless_search_stops_at_once);
    SPM_TEST_ADD(s, &mine, rules_past_the_disk_stop_early);
    const spm_test_case_t eclat = {
        .timeout_s = 120, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD(s, &eclat, eclat_generated);
    SPM_TEST_ADD(s, &eclat, eclat_chess);
    const spm_test_case_t memory = {
        .timeout_s = 120, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD(s, &memory, small_sort_budget_same_bytes);
    SPM_TEST_ADD(s, &memory, big_output_in_bounded_memory);
    SPM_TEST_ADD(s, &memory, summed_memory_under_bound);
    SPM_TEST_ADD(s, &memory, millions_of_itemsets_under_a_limit);
    return s;
}

SPM_TEST_MAIN(suite)
