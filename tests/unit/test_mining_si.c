/*  =========================================================================
    test_mining_si - each mining SI through spm_si_exec_local, and the whole
    apriori program on the in-process VM against the reference
    =========================================================================
*/
#include "isa/core/codec.h"
#include "isa/core/inproc.h"
#include "isa/core/si.h"
#include "isa/mining/isa.h"
#include "programs/apriori/apriori.h"
#include "programs/apriori/output.h"
#include "programs/apriori/quest.h"
#include "tests/check_main.h"
#include "tests/ref/apriori_ref.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- block specs */

typedef struct {
    void *data; /* an encoded block, malloc'd */
    size_t len;
} blob_t;

/*  A transaction block from "1 2 3*2|4 5|" (items, optional *weight). */
static blob_t trans(int normalized, const char *spec)
{
    uint32_t off[64] = {0}, w[64], items[256], n = 0, m = 0;
    for (const char *p = spec; *p;) {
        w[n] = 1;
        while (*p && *p != '|') {
            char *end;
            if (*p == ' ') {
                p++;
                continue;
            }
            if (*p == '*') {
                w[n] = (uint32_t)strtoul(p + 1, &end, 10);
                p = end;
                continue;
            }
            items[m++] = (uint32_t)strtoul(p, &end, 10);
            p = end;
        }
        off[++n] = m;
        if (*p == '|')
            p++;
    }
    spm_mining_trans_t b = {
        .n = n, .normalized = (uint32_t)normalized, .off = off, .weight = w, .items = items};
    blob_t o;
    ck_assert_int_eq(spm_mining_trans_encode(&b, &o.data, &o.len), 0);
    return o;
}

/*  A set block of K-sets from "1 2:5|1 3:4" (items, :count). */
static blob_t sets(spm_mining_kind_t kind, uint32_t k, const char *spec)
{
    uint32_t items[512], n = 0, m = 0;
    uint64_t counts[128] = {0};
    for (const char *p = spec; *p;) {
        char *end;
        if (*p == ' ' || *p == '|') {
            p++;
            continue;
        }
        if (*p == ':') {
            counts[n - 1] = strtoull(p + 1, &end, 10);
            p = end;
            continue;
        }
        items[m++] = (uint32_t)strtoul(p, &end, 10);
        p = end;
        if (m % k == 0)
            n++;
    }
    spm_mining_sets_t b = {.kind = kind, .k = k, .n = n, .items = items, .counts = counts};
    blob_t o;
    ck_assert_int_eq(spm_mining_sets_encode(&b, &o.data, &o.len), 0);
    return o;
}

static blob_t items(uint32_t lo, uint32_t hi, const char *spec)
{
    uint32_t it[64], n = 0;
    uint64_t c[64];
    for (const char *p = spec; *p;) {
        char *end;
        if (*p == ' ') {
            p++;
            continue;
        }
        it[n] = (uint32_t)strtoul(p, &end, 10);
        c[n++] = strtoull(end + 1, &end, 10); /* item:count */
        p = end;
    }
    spm_mining_items_t b = {.lo = lo, .hi = hi, .n = n, .items = it, .counts = c};
    blob_t o;
    ck_assert_int_eq(spm_mining_items_encode(&b, &o.data, &o.len), 0);
    return o;
}

/*  Renders a transaction block back into its spec. */
static const char *trans_spec(const void *data, size_t len)
{
    static char out[1024];
    spm_mining_trans_t b;
    ck_assert_int_eq(spm_mining_trans_decode(data, len, &b), 0);
    size_t at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < b.n; i++) {
        for (uint32_t j = b.off[i]; j < b.off[i + 1]; j++)
            at += (size_t)sprintf(out + at, j > b.off[i] ? " %u" : "%u", b.items[j]);
        if (b.weight[i] != 1)
            at += (size_t)sprintf(out + at, "*%u", b.weight[i]);
        at += (size_t)sprintf(out + at, "|");
    }
    spm_mining_trans_free(&b);
    return out;
}

static const char *sets_spec(spm_mining_kind_t kind, const void *data, size_t len)
{
    static char out[2048];
    spm_mining_sets_t b;
    ck_assert_int_eq(spm_mining_sets_decode(kind, data, len, &b), 0);
    size_t at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < b.n; i++) {
        for (uint32_t j = 0; j < b.k; j++)
            at += (size_t)sprintf(out + at, j ? " %u" : "%u", b.items[(size_t)i * b.k + j]);
        if (b.counts)
            at += (size_t)sprintf(out + at, ":%llu", (unsigned long long)b.counts[i]);
        at += (size_t)sprintf(out + at, "|");
    }
    spm_mining_sets_free(&b);
    return out;
}

static const char *items_spec(const void *data, size_t len)
{
    static char out[1024];
    spm_mining_items_t b;
    ck_assert_int_eq(spm_mining_items_decode(data, len, &b), 0);
    size_t at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < b.n; i++)
        at += (size_t)sprintf(out + at, "%u:%llu ", b.items[i], (unsigned long long)b.counts[i]);
    spm_mining_items_free(&b);
    return out;
}

/* ------------------------------------------------------------ running SIs */

typedef struct {
    spm_si_operand_t ops[8];
    size_t n;
    spm_buf_t params;
    void *reply;
    size_t reply_len;
} si_t;

static void in(si_t *s, spm_mode_t mode, blob_t b)
{
    s->ops[s->n++] = (spm_si_operand_t){.mode = mode, .in = b.data, .in_len = b.len};
}

static void out(si_t *s, spm_mode_t mode)
{
    s->ops[s->n++] = (spm_si_operand_t){.mode = mode};
}

static int exec(si_t *s, const char *opcode)
{
    return spm_si_exec_local(opcode, s->ops, s->n, s->params.data, s->params.len, &s->reply,
                             &s->reply_len);
}

/*  The I-th u32 of the reply. */
static uint32_t reply(const si_t *s, size_t i)
{
    ck_assert_uint_ge(s->reply_len, 4 * (i + 1));
    return spm_le32((const unsigned char *)s->reply + 4 * i);
}

static void done(si_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->ops[i].mode != SPM_W && s->ops[i].mode != SPM_ACC)
            free((void *)s->ops[i].in);
        free(s->ops[i].out);
    }
    spm_buf_free(&s->params);
    free(s->reply);
    memset(s, 0, sizeof *s);
}

/* ----------------------------------------------------------- initial stage */

START_TEST(load_normalizes)
{
    si_t s = {0};
    in(&s, SPM_R, trans(0, "3 1 3 2|| 5 5|"));
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 10);
    ck_assert_int_eq(exec(&s, SPM_MINING_LOAD), 0);
    ck_assert_str_eq(trans_spec(s.ops[1].out, s.ops[1].out_len), "1 2 3||5|");
    ck_assert_uint_eq(reply(&s, 0), 3);
    done(&s);
    /* A staged block over the block size is refused. */
    in(&s, SPM_R, trans(0, "1|2|3|"));
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 2);
    ck_assert_int_eq(exec(&s, SPM_MINING_LOAD), SPM_EFORMAT);
    done(&s);
}
END_TEST

START_TEST(count_shrink_and_collect_items)
{
    si_t s = {0};
    in(&s, SPM_R, trans(1, "1 2 5|2 5*3|7|"));
    out(&s, SPM_ACC);
    out(&s, SPM_ACC);
    spm_buf_put_u32(&s.params, 2);
    spm_buf_put_u32(&s.params, 4); /* partitions [0, 4) and [4, 8) */
    ck_assert_int_eq(exec(&s, SPM_MINING_COUNT_ITEMS), 0);
    ck_assert_str_eq(items_spec(s.ops[1].out, s.ops[1].out_len), "1:1 2:4 ");
    ck_assert_str_eq(items_spec(s.ops[2].out, s.ops[2].out_len), "5:4 7:1 ");
    done(&s);
    /* An item beyond the partitions fails the SI. */
    in(&s, SPM_R, trans(1, "9|"));
    out(&s, SPM_ACC);
    spm_buf_put_u32(&s.params, 1);
    spm_buf_put_u32(&s.params, 4);
    ck_assert_int_eq(exec(&s, SPM_MINING_COUNT_ITEMS), SPM_ERANGE);
    done(&s);

    in(&s, SPM_RW, items(0, 4, "1:1 2:4 3:2"));
    spm_buf_put_u64(&s.params, 2);
    ck_assert_int_eq(exec(&s, SPM_MINING_SHRINK_ITEMS), 0);
    ck_assert_str_eq(items_spec(s.ops[0].out, s.ops[0].out_len), "2:4 3:2 ");
    ck_assert_uint_eq(reply(&s, 0), 2);
    done(&s);

    in(&s, SPM_R, items(0, 4, "2:4 3:2"));
    in(&s, SPM_R, items(4, 8, "5:4"));
    out(&s, SPM_W);
    out(&s, SPM_W);
    ck_assert_int_eq(exec(&s, SPM_MINING_FREQ_ITEMS), 0);
    ck_assert_str_eq(items_spec(s.ops[2].out, s.ops[2].out_len), "2:4 3:2 5:4 ");
    /* Ranks go by ascending support: 3 (2) is rank 0, then 2 and 5 (4). */
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_FSETS, s.ops[3].out, s.ops[3].out_len),
                     "0:2|1:4|2:4|");
    ck_assert_uint_eq(reply(&s, 0), 3);
    done(&s);
}
END_TEST

START_TEST(shrink_and_merge_transactions)
{
    si_t s = {0};
    in(&s, SPM_R, trans(1, "1 2 5|2 5*3|7|2 4 5|5 9|"));
    in(&s, SPM_R, items(0, 10, "2:9 5:8 9:7"));
    out(&s, SPM_W);
    ck_assert_int_eq(exec(&s, SPM_MINING_SHRINK_TRANS), 0);
    /* ranks by support: 9 -> 0, 5 -> 1, 2 -> 2; {7} and {5} dropped; {2 5} x 5 merged */
    ck_assert_str_eq(trans_spec(s.ops[2].out, s.ops[2].out_len), "0 1|1 2*5|");
    ck_assert_uint_eq(reply(&s, 0), 2);
    done(&s);

    in(&s, SPM_RW, trans(1, "0 1*5|1 2|"));
    in(&s, SPM_R, trans(1, "1 2*2|0 2|"));
    ck_assert_int_eq(exec(&s, SPM_MINING_MERGE_TRANS), 0);
    ck_assert_str_eq(trans_spec(s.ops[0].out, s.ops[0].out_len), "0 1*5|0 2|1 2*3|");
    done(&s);
}
END_TEST

/* ------------------------------------------------------- candidate stages */

START_TEST(join_families_across_blocks)
{
    si_t s = {0};
    /* Family {1 *} spans both blocks: 1 2, 1 3 | 1 4, 2 3. */
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 2:1|1 3:1"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 4:1|2 3:1"));
    out(&s, SPM_W);
    uint32_t p[] = {0, 2, 0, UINT32_MAX};
    for (int i = 0; i < 4; i++)
        spm_buf_put_u32(&s.params, p[i]);
    ck_assert_int_eq(exec(&s, SPM_MINING_GEN_SMALL), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_JOIN, s.ops[2].out, s.ops[2].out_len),
                     "1 2 3|1 2 4|1 3 4|");
    ck_assert_uint_eq(reply(&s, 0), 3);
    done(&s);
    /* Large: set 0 only, its partners 1.. only. */
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 2:1|1 3:1"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 4:1|2 3:1"));
    out(&s, SPM_W);
    uint32_t q[] = {0, 1, 1, 2};
    for (int i = 0; i < 4; i++)
        spm_buf_put_u32(&s.params, q[i]);
    ck_assert_int_eq(exec(&s, SPM_MINING_GEN_LARGE), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_JOIN, s.ops[2].out, s.ops[2].out_len), "1 2 4|");
    done(&s);
}
END_TEST

START_TEST(filter_drops_infrequent_subsets)
{
    si_t s = {0};
    in(&s, SPM_RW, sets(SPM_MINING_KIND_JOIN, 3, "1 2 3|1 2 4|1 3 4"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 2:1|1 3:1|1 4:1"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "2 3:1|3 4:1"));
    spm_buf_put_u32(&s.params, 2);
    for (int b = 0; b < 2; b++) {
        spm_buf_put_u32(&s.params, 0);
        spm_buf_put_u32(&s.params, 0);
        spm_buf_put_u32(&s.params, 0);
    }
    ck_assert_int_eq(exec(&s, SPM_MINING_FILTER), 0);
    /* {2 4} is not frequent: 1 2 4 goes. */
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_JOIN, s.ops[0].out, s.ops[0].out_len),
                     "1 2 3|1 3 4|");
    ck_assert_uint_eq(reply(&s, 0), 2);
    done(&s);
}
END_TEST

START_TEST(count_prune_and_gather)
{
    si_t s = {0};
    in(&s, SPM_R, sets(SPM_MINING_KIND_JOIN, 2, "0 1|0 2|1 2"));
    in(&s, SPM_R, trans(1, "0 1 2|0 1*4|"));
    in(&s, SPM_R, trans(1, "1 2*2|"));
    out(&s, SPM_ACC);
    spm_buf_put_u32(&s.params, 3);
    ck_assert_int_eq(exec(&s, SPM_MINING_COUNT_CANDS), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_CANDS, s.ops[3].out, s.ops[3].out_len),
                     "0 1:5|0 2:1|1 2:3|");
    done(&s);

    in(&s, SPM_RW, sets(SPM_MINING_KIND_CANDS, 2, "0 1:5|0 2:1|1 2:3"));
    spm_buf_put_u64(&s.params, 3);
    ck_assert_int_eq(exec(&s, SPM_MINING_PRUNE), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_CANDS, s.ops[0].out, s.ops[0].out_len),
                     "0 1:5|1 2:3|");
    done(&s);

    in(&s, SPM_R, sets(SPM_MINING_KIND_CANDS, 2, "0 1:5|0 3:4"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_CANDS, 2, "1 2:3|1 3:3|2 3:7"));
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 1); /* skip */
    spm_buf_put_u32(&s.params, 3); /* take */
    ck_assert_int_eq(exec(&s, SPM_MINING_FREQ_SETS), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_FSETS, s.ops[2].out, s.ops[2].out_len),
                     "0 3:4|1 2:3|1 3:3|");
    spm_mining_fsets_reply_t r;
    ck_assert_int_eq(spm_mining_fsets_reply_decode(s.reply, s.reply_len, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_uint_eq(r.nfam, 2); /* {0 *}: 1 set, {1 *}: 2 sets */
    ck_assert_uint_eq(r.fam[0], 1);
    ck_assert_uint_eq(r.fam[1], 2);
    ck_assert_uint_eq(r.last[1], 3);
    spm_mining_fsets_reply_free(&r);
    done(&s);
}
END_TEST

/* ------------------------------------------------------------------ rules */

START_TEST(confidence_and_store)
{
    si_t s = {0};
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 1, "0:10|1:8|2:4"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "0 1:8|1 2:4"));
    out(&s, SPM_W);
    spm_buf_put_f64(&s.params, 0.8);
    spm_buf_put_u32(&s.params, 0);
    ck_assert_int_eq(exec(&s, SPM_MINING_CONFIDENCE), 0);
    /* 0 => 1 (8/10), 1 => 0 (8/8), 2 => 1 (4/4); 1 => 2 is 4/8. */
    spm_mining_rules_t r;
    ck_assert_int_eq(spm_mining_rules_decode(s.ops[2].out, s.ops[2].out_len, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_uint_eq(reply(&s, 0), 3);
    blob_t rules = {s.ops[2].out, s.ops[2].out_len};
    s.ops[2].out = NULL;
    spm_mining_rules_free(&r);
    done(&s);

    /* StoreResult sorts: antecedent, then consequent. */
    in(&s, SPM_R, rules);
    out(&s, SPM_W);
    ck_assert_int_eq(exec(&s, SPM_MINING_STORE), 0);
    ck_assert_int_eq(spm_mining_rules_decode(s.ops[1].out, s.ops[1].out_len, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    uint32_t want[][2] = {{0, 1}, {1, 0}, {2, 1}};
    for (uint32_t i = 0; i < 3; i++) {
        ck_assert_uint_eq(r.items[r.off[i]], want[i][0]);
        ck_assert_uint_eq(r.items[r.off[i] + 1], want[i][1]);
    }
    spm_mining_rules_free(&r);
    done(&s);
}
END_TEST

/* ------------------------------------------------------- the whole program */

static int inproc_get(void *vm, spm_sdb_t id, void **data, size_t *len)
{
    return spm_inproc_get(vm, id, data, len);
}

/*  Mines a Quest database on the in-process VM with tiny blocks and join
    capacity (every join variant and many blocks per level) and compares
    with the reference. */
static void program_vs_ref(uint32_t block, uint32_t join_cap, uint64_t minsup, uint32_t maxcons)
{
    spm_quest_params_t p;
    spm_quest_defaults(&p);
    p.transactions = 1200;
    p.items = 60;
    p.patterns = 25;
    p.avg_pattern = 5;
    char file[] = "/tmp/spm_si_prog.XXXXXX";
    int fd = mkstemp(file);
    FILE *f = fdopen(fd, "w");
    spm_quest_t *q = spm_quest_new(&p);
    spm_inproc_t *vm = spm_inproc_new();
    spm_apriori_args_t a = {.ntrans = p.transactions,
                            .domain = p.items,
                            .minsup = minsup,
                            .minconf = 0.6,
                            .maxcons = maxcons,
                            .block = block,
                            .join_cap = join_cap};
    spm_sdb_t ids[4096];
    a.staged = ids;
    uint32_t off[4097] = {0}, w[4096], it[4096 * 64];
    const uint32_t *t;
    size_t n;
    spm_mining_trans_t b = {.off = off, .weight = w, .items = it};
    for (int more = 1; more;) {
        more = spm_quest_next(q, &t, &n) == 1;
        if (more) {
            for (size_t i = 0; i < n; i++)
                fprintf(f, i ? " %u" : "%u", t[i]);
            fputc('\n', f);
            memcpy(it + off[b.n], t, n * 4);
            w[b.n] = 1;
            off[b.n + 1] = off[b.n] + (uint32_t)n;
            b.n++;
        }
        if (b.n == block || (!more && b.n)) {
            void *d;
            size_t l;
            ck_assert_int_eq(spm_mining_trans_encode(&b, &d, &l), 0);
            ck_assert_int_eq(spm_inproc_put(vm, SPM_MINING_TRANS, d, l, &ids[a.nstaged++]), 0);
            free(d);
            b.n = 0;
        }
    }
    fclose(f);
    spm_quest_destroy(&q);
    void *args, *res;
    size_t alen, rlen;
    ck_assert_int_eq(spm_apriori_args_encode(&a, &args, &alen), 0);
    int rc = spm_inproc_run(vm, SPM_APRIORI_PROGRAM, args, alen, &res, &rlen);
    ck_assert_msg(rc == 0, "apriori failed: %s", spm_error_detail());
    free(args);
    spm_apriori_result_t r;
    ck_assert_int_eq(spm_apriori_result_decode(res, rlen, &r), 0);
    free(res);
    spm_mine_out_t o = {0};
    ck_assert_int_eq(spm_mine_fetch(inproc_get, vm, &r, &o), 0);

    ref_db_t db;
    ref_result_t want;
    ck_assert_int_eq(ref_db_load(file, &db), 0);
    unlink(file);
    ref_mine(&db, minsup, 0.6, maxcons, &want);
    ck_assert_uint_eq(spm_mine_nitemsets(&o), want.nsets);
    size_t at = 0;
    int same = 1;
    for (uint32_t k = 0; k < o.nlv; k++)
        for (uint32_t i = 0; i < o.lv[k].n; i++, at++) {
            same &= want.sets[at].k == k + 1 && want.sets[at].sup == o.lv[k].counts[i];
            for (uint32_t j = 0; j <= k; j++)
                same &= want.sets[at].items[j] == o.lv[k].items[(size_t)i * (k + 1) + j];
        }
    ck_assert_msg(same, "itemsets differ from the reference");
    ck_assert_uint_eq(o.rules.n, want.nrules);
    for (uint32_t i = 0; i < o.rules.n; i++)
        same &= o.rules.supz[i] == want.rules[i].supz && o.rules.supx[i] == want.rules[i].supx &&
                o.rules.xlen[i] == want.rules[i].xlen &&
                o.rules.items[o.rules.off[i]] == want.rules[i].x[0];
    ck_assert_msg(same, "rules differ from the reference");
    ck_assert_uint_gt(spm_inproc_sis(vm), 20);
    spm_mine_out_free(&o);
    spm_apriori_result_free(&r);
    ref_result_free(&want);
    ref_db_free(&db);
    spm_inproc_destroy(&vm);
}

START_TEST(program_small_blocks)
{
    program_vs_ref(50, 16, 60, 0);
}
END_TEST

START_TEST(program_one_block)
{
    program_vs_ref(2000, 65536, 40, 1);
}
END_TEST

START_TEST(program_tiny_joins)
{
    program_vs_ref(7, 3, 90, 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mining_si");
    TCase *t = tcase_create("si");
    tcase_add_test(t, load_normalizes);
    tcase_add_test(t, count_shrink_and_collect_items);
    tcase_add_test(t, shrink_and_merge_transactions);
    tcase_add_test(t, join_families_across_blocks);
    tcase_add_test(t, filter_drops_infrequent_subsets);
    tcase_add_test(t, count_prune_and_gather);
    tcase_add_test(t, confidence_and_store);
    suite_add_tcase(s, t);
    TCase *p = tcase_create("program");
    tcase_set_timeout(p, 60);
    tcase_add_test(p, program_small_blocks);
    tcase_add_test(p, program_one_block);
    tcase_add_test(p, program_tiny_joins);
    suite_add_tcase(s, p);
    return s;
}

SPM_TEST_MAIN(suite)
