/*  =========================================================================
    test_mining_sdb - the mining block types: encodings, validation, merges
    =========================================================================
*/
#include "isa/mining/isa.h"
#include "tests/check_main.h"

#include <stdlib.h>
#include <string.h>

/*  Every proper prefix of a valid block, and the block with a changed
    magic, is refused by its type's validate. */
static void refuse_truncated_and_forged(const char *type, const void *data, size_t len)
{
    const spm_sdb_type_t *t = spm_sdb_type_find(type);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->validate(data, len), 0);
    for (size_t l = 0; l < len; l++)
        if (t->validate(data, l) != SPM_EFORMAT)
            ck_abort_msg("%s: a prefix of %zu of %zu bytes was accepted", type, l, len);
    unsigned char *copy = malloc(len + 4);
    memcpy(copy, data, len);
    copy[0] ^= 1;
    ck_assert_int_eq(t->validate(copy, len), SPM_EFORMAT);
    copy[0] ^= 1;
    memset(copy + len, 0, 4); /* trailing bytes */
    ck_assert_int_eq(t->validate(copy, len + 4), SPM_EFORMAT);
    free(copy);
}

START_TEST(transactions)
{
    uint32_t off[] = {0, 3, 3, 5}, w[] = {1, 2, 1}, items[] = {1, 4, 9, 2, 3};
    spm_mining_trans_t b = {.n = 3, .normalized = 1, .off = off, .weight = w, .items = items}, d;
    void *data;
    size_t len;
    ck_assert_int_eq(spm_mining_trans_encode(&b, &data, &len), 0);
    ck_assert_int_eq(spm_mining_trans_decode(data, len, &d), 0);
    ck_assert_uint_eq(d.n, 3);
    ck_assert_mem_eq(d.off, off, sizeof off);
    ck_assert_mem_eq(d.weight, w, sizeof w);
    ck_assert_mem_eq(d.items, items, sizeof items);
    spm_mining_trans_free(&d);
    /* Viewed, the items are read where they lie when they are aligned,
       and copied when they are not; the block reads the same either way. */
    uint32_t *aligned = malloc(len + 4);
    for (size_t shift = 0; shift < 2; shift++) {
        unsigned char *at = (unsigned char *)aligned + shift;
        memcpy(at, data, len);
        ck_assert_int_eq(spm_mining_trans_view(at, len, &d), 0);
        ck_assert_int_eq(d.view, shift == 0);
        ck_assert_uint_eq(d.n, 3);
        ck_assert_mem_eq(d.off, off, sizeof off);
        ck_assert_mem_eq(d.weight, w, sizeof w);
        ck_assert_mem_eq(d.items, items, sizeof items);
        if (shift == 0)
            ck_assert_ptr_eq(d.items, at + 16 + 3 * 8);
        spm_mining_trans_free(&d);
    }
    free(aligned);
    refuse_truncated_and_forged(SPM_MINING_TRANS, data, len);
    free(data);
    /* Unsorted items are refused in a normalized block, kept in a raw one. */
    items[1] = 0;
    ck_assert_int_eq(spm_mining_trans_encode(&b, &data, &len), 0);
    ck_assert_int_eq(spm_mining_trans_decode(data, len, &d), SPM_EFORMAT);
    free(data);
    b.normalized = 0;
    ck_assert_int_eq(spm_mining_trans_encode(&b, &data, &len), 0);
    ck_assert_int_eq(spm_mining_trans_decode(data, len, &d), 0);
    spm_mining_trans_free(&d);
    free(data);
    /* Random blocks (empty transactions, long ones, a transaction's first
       item below the last one's), each possibly with one pair in one
       transaction that does not increase: refused exactly when it has one,
       wherever it is. */
    srand(7);
    for (int trial = 0; trial < 2000; trial++) {
        uint32_t n = 1 + (uint32_t)rand() % 20, o[21] = {0}, ws[20], it[20 * 40];
        for (uint32_t i = 0; i < n; i++) {
            uint32_t l = (uint32_t)rand() % 4 == 0 ? 0 : 1 + (uint32_t)rand() % 39, v = 0;
            for (uint32_t j = 0; j < l; j++)
                it[o[i] + j] = v += 1 + (uint32_t)rand() % 5;
            o[i + 1] = o[i] + l;
            ws[i] = 1;
        }
        int broken = 0;
        uint32_t at = o[n] > 1 ? 1 + (uint32_t)rand() % (o[n] - 1) : 0;
        for (uint32_t i = 0; at && trial % 2 && i < n; i++)
            if (at > o[i] && at < o[i + 1]) { /* not a transaction's first item */
                it[at] = it[at - 1] - (uint32_t)rand() % 2;
                broken = 1;
            }
        spm_mining_trans_t r = {.n = n, .normalized = 1, .off = o, .weight = ws, .items = it};
        ck_assert_int_eq(spm_mining_trans_encode(&r, &data, &len), 0);
        int rc = spm_mining_trans_decode(data, len, &d);
        ck_assert_msg(rc == (broken ? SPM_EFORMAT : 0), "trial %d: %d", trial, rc);
        if (rc == 0)
            spm_mining_trans_free(&d);
        free(data);
    }
    /* A zero weight is refused. */
    w[0] = 0;
    ck_assert_int_eq(spm_mining_trans_encode(&b, &data, &len), 0);
    ck_assert_int_eq(spm_mining_trans_decode(data, len, &d), SPM_EFORMAT);
    free(data);
}
END_TEST

/*  A staged text block is viewed in place (its pointers into the block),
    and only whole lines after a real line number, with the padding the
    parser reads into, are accepted. */
START_TEST(text)
{
    const char *lines = "3 1 2\r\n\n12 7\n";
    spm_mining_text_t t = {.first = 41,
                           .nlines = 3,
                           .name = "t.dat",
                           .namelen = 5,
                           .text = lines,
                           .len = strlen(lines)},
                      v;
    void *data;
    size_t len;
    ck_assert_int_eq(spm_mining_text_encode(&t, &data, &len), 0);
    ck_assert(spm_mining_text_is(data, len));
    ck_assert_int_eq(spm_mining_text_view(data, len, &v), 0);
    ck_assert_uint_eq(v.first, 41);
    ck_assert_uint_eq(v.nlines, 3);
    ck_assert_int_eq(memcmp(v.name, "t.dat", 5), 0);
    ck_assert_uint_eq(v.len, t.len);
    ck_assert_ptr_eq(v.text, (const char *)data + 24 + 5);
    ck_assert_int_eq(memcmp(v.text, lines, t.len), 0);
    refuse_truncated_and_forged(SPM_MINING_TEXT, data, len);
    unsigned char *b = data;
    b[len - 1] = 'x'; /* the padding is zeros */
    ck_assert_int_eq(spm_mining_text_view(data, len, &v), SPM_EFORMAT);
    b[len - 1] = 0;
    b[24 + 5 + t.len - 1] = ' '; /* the last line has no end */
    ck_assert_int_eq(spm_mining_text_view(data, len, &v), SPM_EFORMAT);
    free(data);
    t.first = 0; /* line numbers start at 1 */
    ck_assert_int_eq(spm_mining_text_encode(&t, &data, &len), 0);
    ck_assert_int_eq(spm_mining_text_view(data, len, &v), SPM_EFORMAT);
    free(data);
    ck_assert(!spm_mining_text_is("MTR", 3));
}
END_TEST

/*  Where an embedded VM's input lines are: viewed in place, an absolute
    path and a real line number required. */
START_TEST(file_lines)
{
    spm_mining_file_t f = {.first = 7,
                           .nlines = 2,
                           .offset = 4096,
                           .len = 10,
                           .path = "/d/t.dat",
                           .pathlen = 8,
                           .name = "t.dat",
                           .namelen = 5},
                      v;
    void *data;
    size_t len;
    ck_assert_int_eq(spm_mining_file_encode(&f, &data, &len), 0);
    ck_assert(spm_mining_file_is(data, len));
    ck_assert(!spm_mining_text_is(data, len));
    ck_assert_int_eq(spm_mining_file_view(data, len, &v), 0);
    ck_assert_uint_eq(v.first, 7);
    ck_assert_uint_eq(v.nlines, 2);
    ck_assert_uint_eq(v.offset, 4096);
    ck_assert_uint_eq(v.len, 10);
    ck_assert_int_eq(memcmp(v.path, "/d/t.dat", 8), 0);
    ck_assert_int_eq(memcmp(v.name, "t.dat", 5), 0);
    refuse_truncated_and_forged(SPM_MINING_FILE, data, len);
    free(data);
    f.path = "d/t.dat"; /* relative: which directory? */
    f.pathlen = 7;
    ck_assert_int_eq(spm_mining_file_encode(&f, &data, &len), 0);
    ck_assert_int_eq(spm_mining_file_view(data, len, &v), SPM_EFORMAT);
    free(data);
}
END_TEST

START_TEST(items_and_merge)
{
    uint32_t ia[] = {10, 12}, ib[] = {11, 12, 19};
    uint64_t ca[] = {5, 1}, cb[] = {2, 3, 4};
    spm_mining_items_t a = {.lo = 10, .hi = 20, .n = 2, .items = ia, .counts = ca};
    spm_mining_items_t b = {.lo = 10, .hi = 20, .n = 3, .items = ib, .counts = cb}, m;
    void *da, *db, *dm;
    size_t la, lb, lm;
    ck_assert_int_eq(spm_mining_items_encode(&a, &da, &la), 0);
    ck_assert_int_eq(spm_mining_items_encode(&b, &db, &lb), 0);
    refuse_truncated_and_forged(SPM_MINING_ITEMS, da, la);
    const spm_sdb_type_t *t = spm_sdb_type_find(SPM_MINING_ITEMS);
    ck_assert_int_eq(t->merge(da, la, db, lb, &dm, &lm), 0);
    ck_assert_int_eq(spm_mining_items_decode(dm, lm, &m), 0);
    ck_assert_uint_eq(m.n, 4);
    ck_assert_mem_eq(m.items, ((uint32_t[]){10, 11, 12, 19}), 16);
    ck_assert_mem_eq(m.counts, ((uint64_t[]){5, 2, 4, 4}), 32);
    spm_mining_items_free(&m);
    free(dm);
    ck_assert_int_eq(t->merge(NULL, 0, db, lb, &dm, &lm), 0); /* first partial: a copy */
    ck_assert_mem_eq(dm, db, lb);
    free(dm);
    /* Items outside the partition are refused. */
    ia[0] = 25;
    ia[1] = 26;
    free(da);
    ck_assert_int_eq(spm_mining_items_encode(&a, &da, &la), 0);
    ck_assert_int_eq(t->validate(da, la), SPM_EFORMAT);
    free(da);
    free(db);
}
END_TEST

START_TEST(sets_of_each_kind)
{
    uint32_t items[] = {1, 2, 1, 5, 3, 4};
    uint64_t counts[] = {7, 8, 9};
    const char *names[] = {SPM_MINING_JOIN, SPM_MINING_CANDS, SPM_MINING_FSETS};
    for (int kind = 0; kind < 3; kind++) {
        spm_mining_sets_t b = {.kind = kind, .k = 2, .n = 3, .items = items, .counts = counts}, d;
        void *data;
        size_t len;
        ck_assert_int_eq(spm_mining_sets_encode(&b, &data, &len), 0);
        ck_assert_int_eq(spm_mining_sets_decode(kind, data, len, &d), 0);
        ck_assert_mem_eq(d.items, items, sizeof items);
        if (kind != SPM_MINING_KIND_JOIN)
            ck_assert_mem_eq(d.counts, counts, sizeof counts);
        ck_assert_int_eq(spm_mining_sets_find(&d, (uint32_t[]){1, 5}), 1);
        ck_assert_int_eq(spm_mining_sets_find(&d, (uint32_t[]){2, 5}), -1);
        spm_mining_sets_free(&d);
        refuse_truncated_and_forged(names[kind], data, len);
        /* A block of one kind is not a block of another. */
        ck_assert_int_eq(spm_sdb_type_find(names[(kind + 1) % 3])->validate(data, len),
                         SPM_EFORMAT);
        free(data);
    }
    /* Out of order or repeated sets are refused: frequent sets by the
       encoder (front coding cannot hold them), the others by the decoder. */
    uint32_t bad[] = {1, 5, 1, 2}, twice[] = {1, 5, 1, 5};
    spm_mining_sets_t f = {
        .kind = SPM_MINING_KIND_FSETS, .k = 2, .n = 2, .items = bad, .counts = counts};
    void *fd = NULL;
    size_t fl;
    ck_assert_int_eq(spm_mining_sets_encode(&f, &fd, &fl), SPM_EINVAL);
    f.items = twice;
    ck_assert_int_eq(spm_mining_sets_encode(&f, &fd, &fl), SPM_EINVAL);
    ck_assert_ptr_null(fd);
    spm_mining_sets_t b = {.kind = SPM_MINING_KIND_JOIN, .k = 2, .n = 2, .items = bad}, d;
    void *data;
    size_t len;
    ck_assert_int_eq(spm_mining_sets_encode(&b, &data, &len), 0);
    ck_assert_int_eq(spm_mining_sets_decode(SPM_MINING_KIND_JOIN, data, len, &d), SPM_EFORMAT);
    free(data);
}
END_TEST

START_TEST(candidate_merge_sums_counts)
{
    uint32_t items[] = {1, 2, 1, 5};
    uint64_t a[] = {1, 2}, b[] = {10, 20};
    spm_mining_sets_t x = {
        .kind = SPM_MINING_KIND_CANDS, .k = 2, .n = 2, .items = items, .counts = a};
    spm_mining_sets_t y = x, m;
    y.counts = b;
    void *dx, *dy, *dm;
    size_t lx, ly, lm;
    spm_mining_sets_encode(&x, &dx, &lx);
    spm_mining_sets_encode(&y, &dy, &ly);
    const spm_sdb_type_t *t = spm_sdb_type_find(SPM_MINING_CANDS);
    ck_assert_int_eq(t->merge(dx, lx, dy, ly, &dm, &lm), 0);
    ck_assert_int_eq(spm_mining_sets_decode(SPM_MINING_KIND_CANDS, dm, lm, &m), 0);
    ck_assert_mem_eq(m.counts, ((uint64_t[]){11, 22}), 16);
    spm_mining_sets_free(&m);
    free(dm);
    /* Partials over different sets cannot be merged. */
    items[3] = 6;
    free(dy);
    spm_mining_sets_encode(&y, &dy, &ly);
    ck_assert_int_eq(t->merge(dx, lx, dy, ly, &dm, &lm), SPM_EFORMAT);
    free(dx);
    free(dy);
}
END_TEST

START_TEST(rules)
{
    spm_mining_rules_builder_t b = {0};
    spm_mining_rules_add(&b, (uint32_t[]){1, 3}, 2, (uint32_t[]){2}, 1, 5, 6);
    spm_mining_rules_add(&b, (uint32_t[]){4}, 1, (uint32_t[]){1, 9}, 2, 3, 3);
    ck_assert(!b.failed);
    void *data;
    size_t len;
    spm_mining_rules_t d;
    ck_assert_int_eq(spm_mining_rules_encode(&b.r, &data, &len), 0);
    ck_assert_int_eq(spm_mining_rules_decode(data, len, &d), 0);
    ck_assert_uint_eq(d.n, 2);
    ck_assert_uint_eq(d.ylen[1], 2);
    ck_assert_mem_eq(d.items + d.off[1], ((uint32_t[]){4, 1, 9}), 12);
    spm_mining_rules_free(&d);
    refuse_truncated_and_forged(SPM_MINING_RULES, data, len);
    free(data);
    /* X and Y must be disjoint, and s(Z) <= s(X). */
    spm_mining_rules_builder_t bad = {0};
    spm_mining_rules_add(&bad, (uint32_t[]){1}, 1, (uint32_t[]){1}, 1, 1, 1);
    spm_mining_rules_encode(&bad.r, &data, &len);
    ck_assert_int_eq(spm_mining_rules_decode(data, len, &d), SPM_EFORMAT);
    free(data);
    spm_mining_rules_free(&bad.r);
    spm_mining_rules_builder_t bad2 = {0};
    spm_mining_rules_add(&bad2, (uint32_t[]){1}, 1, (uint32_t[]){2}, 1, 5, 4);
    spm_mining_rules_encode(&bad2.r, &data, &len);
    ck_assert_int_eq(spm_mining_rules_decode(data, len, &d), SPM_EFORMAT);
    free(data);
    spm_mining_rules_free(&bad2.r);
    spm_mining_rules_free(&b.r);
}
END_TEST

START_TEST(forged_counts_refused_before_allocating)
{
    /* A header claiming 2^24 transactions of 2^32-1 items in 16 bytes. */
    unsigned char forged[16];
    spm_put_le32(forged, 0x4d545243u);
    spm_put_le32(forged + 4, 1);
    spm_put_le32(forged + 8, SPM_MINING_MAX_ENTRIES);
    spm_put_le32(forged + 12, 0xffffffffu);
    spm_mining_trans_t d;
    ck_assert_int_eq(spm_mining_trans_decode(forged, sizeof forged, &d), SPM_EFORMAT);
    spm_put_le32(forged + 8, SPM_MINING_MAX_ENTRIES + 1);
    ck_assert_int_eq(spm_mining_trans_decode(forged, sizeof forged, &d), SPM_EFORMAT);
}
END_TEST

/*  An itemsets block of two lengths; WHAT forges one field of it. */
static void itemsets_block(int what, void **data, size_t *len)
{
    uint32_t i2[] = {0, 1, 0, 2, 1, 2}, i3[] = {0, 1, 2};
    uint64_t c2[] = {5, 4, 3}, c3[] = {2};
    spm_mining_sets_t g[2] = {
        {.kind = SPM_MINING_KIND_FSETS, .k = 2, .n = 3, .items = i2, .counts = c2},
        {.kind = SPM_MINING_KIND_FSETS, .k = 3, .n = 1, .items = i3, .counts = c3}};
    spm_mining_itemsets_t b = {.nlen = 2, .lv = g};
    if (what == 1)
        i2[3] = 1; /* a repeated item */
    if (what == 2)
        i2[2] = 1; /* sets out of order */
    if (what == 3)
        c3[0] = 0; /* a zero support */
    if (what == 4)
        g[1].k = 2; /* lengths not increasing (sets of 2 after sets of 2) */
    if (what == 5)
        g[0].n = 0; /* an empty group */
    /* Front coding cannot write sets out of order: the encoder refuses. */
    ck_assert_int_eq(spm_mining_itemsets_encode(&b, data, len),
                     what == 1 || what == 2 ? SPM_EINVAL : 0);
}

START_TEST(itemsets)
{
    void *data;
    size_t len;
    spm_mining_itemsets_t d;
    itemsets_block(0, &data, &len);
    ck_assert_int_eq(spm_mining_itemsets_decode(data, len, &d), 0);
    ck_assert_uint_eq(d.nlen, 2);
    ck_assert_uint_eq(d.lv[0].k, 2);
    ck_assert_uint_eq(d.lv[0].n, 3);
    ck_assert_uint_eq(d.lv[0].items[5], 2);
    ck_assert_uint_eq(d.lv[0].counts[2], 3);
    ck_assert_uint_eq(d.lv[1].k, 3);
    ck_assert_uint_eq(d.lv[1].counts[0], 2);
    spm_mining_itemsets_free(&d);
    /* One length alone, or none of a length absent. */
    spm_mining_sets_t g;
    ck_assert_int_eq(spm_mining_itemsets_decode_length(data, len, 3, &g), 0);
    ck_assert_uint_eq(g.n, 1);
    ck_assert_uint_eq(g.items[2], 2);
    spm_mining_sets_free(&g);
    ck_assert_int_eq(spm_mining_itemsets_decode_length(data, len, 4, &g), 0);
    ck_assert_uint_eq(g.n, 0);
    spm_mining_sets_free(&g);
    refuse_truncated_and_forged(SPM_MINING_ITEMSETS, data, len);
    for (size_t l = 0; l < len; l++)
        ck_assert_int_eq(spm_mining_itemsets_decode_length(data, l, 3, &g), SPM_EFORMAT);
    free(data);
    for (int what = 1; what <= 5; what++) {
        itemsets_block(what, &data, &len);
        if (what == 1 || what == 2)
            continue;
        ck_assert_msg(spm_mining_itemsets_decode(data, len, &d) == SPM_EFORMAT,
                      "forgery %d accepted", what);
        free(data);
    }
    /* An empty block is valid. */
    spm_mining_itemsets_t none = {0};
    ck_assert_int_eq(spm_mining_itemsets_encode(&none, &data, &len), 0);
    ck_assert_int_eq(spm_mining_itemsets_decode(data, len, &d), 0);
    ck_assert_uint_eq(d.nlen, 0);
    spm_mining_itemsets_free(&d);
    free(data);
    /* Forged counts: 2^24 lengths, or a group of 2^24 sets, in a few bytes. */
    unsigned char forged[20];
    spm_put_le32(forged, 0x4d495354u);
    spm_put_le32(forged + 4, SPM_MINING_MAX_K);
    spm_put_le32(forged + 8, 2);
    spm_put_le32(forged + 12, SPM_MINING_MAX_ENTRIES);
    spm_put_le32(forged + 16, 0);
    ck_assert_int_eq(spm_mining_itemsets_decode(forged, sizeof forged, &d), SPM_EFORMAT);
    spm_put_le32(forged + 4, 1);
    ck_assert_int_eq(spm_mining_itemsets_decode(forged, sizeof forged, &d), SPM_EFORMAT);
    ck_assert_int_eq(spm_mining_itemsets_decode_length(forged, sizeof forged, 3, &g), SPM_EFORMAT);
}
END_TEST

static int cmp4(const void *a, const void *b)
{
    return spm_mining_set_cmp(a, b, 4);
}

/*  About N sorted 4-sets (repeats dropped: *N becomes how many) with gaps
    of every size, items up to 2^32 - 1, counts of every size, into ITEMS
    and COUNTS (malloc'd). */
static void many_sets(uint32_t *n, uint32_t **items, uint64_t **counts)
{
    const uint32_t k = 4;
    uint32_t *s = malloc((size_t)*n * k * 4), m = 0;
    *counts = malloc((size_t)*n * 8);
    uint64_t x = 12345;
    for (uint32_t i = 0; i < *n; i++) {
        uint32_t *t = s + (size_t)i * k;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        t[0] = (uint32_t)(x >> 54); /* few first items: long shared prefixes */
        for (uint32_t j = 1; j < k; j++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t room = (UINT32_MAX - t[j - 1]) / (k - j);
            t[j] = (uint32_t)(t[j - 1] + 1 + (j < 3 ? (x >> 33) % 4 : (x >> 20) % room));
        }
        if (i % 7 == 6)
            t[k - 1] = UINT32_MAX;
    }
    qsort(s, *n, k * 4, cmp4);
    for (uint32_t i = 0; i < *n; i++)
        if (m == 0 || spm_mining_set_cmp(s + (size_t)(m - 1) * k, s + (size_t)i * k, k) != 0) {
            memmove(s + (size_t)m * k, s + (size_t)i * k, k * 4);
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            (*counts)[m++] = (x >> 3) >> (x % 60) | 1;
        }
    *n = m;
    *items = s;
}

START_TEST(front_coded_groups)
{
    const uint32_t k = 4;
    uint32_t n = 5200, *items; /* past four restarts */
    uint64_t *counts;
    many_sets(&n, &items, &counts);
    ck_assert_uint_gt(n, 4200);
    spm_mining_sets_t b = {.kind = SPM_MINING_KIND_FSETS,
                           .k = k,
                           .n = n,
                           .items = items,
                           .counts = counts},
                      d;
    void *data;
    size_t len;
    ck_assert_int_eq(spm_mining_sets_encode(&b, &data, &len), 0);
    ck_assert_int_eq(spm_mining_sets_decode(SPM_MINING_KIND_FSETS, data, len, &d), 0);
    ck_assert_uint_eq(d.n, n);
    ck_assert_mem_eq(d.items, items, (size_t)n * k * 4);
    ck_assert_mem_eq(d.counts, counts, (size_t)n * 8);
    spm_mining_sets_free(&d);
    /* Read a set at a time. */
    uint32_t *set = malloc(SPM_MINING_MAX_K * 4);
    spm_mining_setrd_t r;
    ck_assert_int_eq(spm_mining_setrd_open(&r, data, len, set), 0);
    ck_assert_uint_eq(r.total, n);
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_int_eq(spm_mining_setrd_next(&r), 1);
        ck_assert_uint_eq(r.g.k, k);
        ck_assert_mem_eq(r.g.set, items + (size_t)i * k, k * 4);
        ck_assert_uint_eq(r.g.count, counts[i]);
    }
    ck_assert_int_eq(spm_mining_setrd_next(&r), 0);
    /* Every byte changed either decodes to other sets or is refused, never
       to unsorted sets; sampled, with the restart index among them. */
    unsigned char *copy = malloc(len);
    for (size_t at = 12; at < len; at += at < 64 ? 1 : 1009) {
        memcpy(copy, data, len);
        copy[at] ^= 0x5a;
        if (spm_mining_sets_decode(SPM_MINING_KIND_FSETS, copy, len, &d) == 0) {
            for (uint32_t i = 1; i < d.n; i++)
                ck_assert_int_lt(
                    spm_mining_set_cmp(d.items + (size_t)(i - 1) * k, d.items + (size_t)i * k, k),
                    0);
            spm_mining_sets_free(&d);
        }
    }
    free(copy);
    free(data);
    /* The same sets as a group of an itemsets block: slices across restarts. */
    spm_mining_sets_t g[1] = {b};
    spm_mining_itemsets_t blk = {.nlen = 1, .lv = g};
    ck_assert_int_eq(spm_mining_itemsets_encode(&blk, &data, &len), 0);
    const uint32_t from[] = {0, 1, 1023, 1024, 1025, 2047, 4096, n - 1, n, 7000};
    for (size_t f = 0; f < sizeof from / sizeof from[0]; f++) {
        uint32_t total;
        ck_assert_int_eq(spm_mining_itemsets_decode_range(data, len, k, from[f], 1500, &d, &total),
                         0);
        uint32_t want = from[f] >= n ? 0 : n - from[f] < 1500 ? n - from[f] : 1500;
        ck_assert_uint_eq(total, n);
        ck_assert_uint_eq(d.n, want);
        if (want)
            ck_assert_mem_eq(d.items, items + (size_t)from[f] * k, (size_t)want * k * 4);
        spm_mining_sets_free(&d);
    }
    free(data);
    free(set);
    free(items);
    free(counts);
}
END_TEST

/*  The itemsets block written a set at a time, the lengths interleaved as
    a depth-first walk finds them (MineClassBlock), is byte for byte the one
    encoded from the sets held, across restarts; a set out of order within
    its length, or of no length, is refused. */
START_TEST(itemsets_written_a_set_at_a_time)
{
    uint32_t n = 5200, *items; /* 4-sets past four restarts */
    uint64_t *counts;
    many_sets(&n, &items, &counts);
    uint32_t pairs[3 * 2] = {1, 2, 1, 7, 3, 9};
    uint64_t pc[3] = {5, 4, 3};
    spm_mining_sets_t g[2] = {
        {.kind = SPM_MINING_KIND_FSETS, .k = 2, .n = 3, .items = pairs, .counts = pc},
        {.kind = SPM_MINING_KIND_FSETS, .k = 4, .n = n, .items = items, .counts = counts}};
    spm_mining_itemsets_t blk = {.nlen = 2, .lv = g};
    void *want, *got;
    size_t wlen, glen;
    ck_assert_int_eq(spm_mining_itemsets_encode(&blk, &want, &wlen), 0);
    spm_mining_isets_writer_t w = {0};
    for (uint32_t i = 0; i < n; i++) { /* a pair after every 2,000 4-sets */
        if (i % 2000 == 0)
            ck_assert_int_eq(spm_mining_isets_put(&w, pairs + i / 2000 * 2, 2, pc[i / 2000]), 0);
        ck_assert_int_eq(spm_mining_isets_put(&w, items + (size_t)i * 4, 4, counts[i]), 0);
    }
    ck_assert_uint_eq(spm_mining_isets_count(&w, 2), 3);
    ck_assert_uint_eq(spm_mining_isets_count(&w, 4), n);
    ck_assert_uint_eq(spm_mining_isets_count(&w, 3), 0);
    ck_assert_int_eq(spm_mining_isets_end(&w, &got, &glen), 0);
    ck_assert_uint_eq(glen, wlen);
    ck_assert_mem_eq(got, want, wlen);
    free(got);
    free(want);
    /* Out of order within a length (next to the set before, and at a
       restart), and a set of no items. */
    ck_assert_int_eq(spm_mining_isets_put(&w, pairs + 2, 2, 4), 0);
    ck_assert_int_eq(spm_mining_isets_put(&w, items, 4, 1), 0);
    ck_assert_int_eq(spm_mining_isets_put(&w, pairs, 2, 5), SPM_EINVAL);
    spm_mining_isets_abort(&w);
    for (uint32_t i = 0; i < 1024; i++)
        ck_assert_int_eq(spm_mining_isets_put(&w, items + (size_t)i * 4, 4, 1), 0);
    ck_assert_int_eq(spm_mining_isets_put(&w, items, 4, 1), SPM_EINVAL);
    ck_assert_int_eq(spm_mining_isets_put(&w, items, 0, 1), SPM_EINVAL);
    spm_mining_isets_abort(&w);
    free(items);
    free(counts);
}
END_TEST

static Suite *suite(void)
{
    /* 1.5 s alone; a loaded machine or a sanitizer build takes several times that */
    static const spm_test_case_t slow = {.timeout_s = 30};
    Suite *s = suite_create("mining_sdb");
    SPM_TEST_ADD(s, NULL, transactions);
    SPM_TEST_ADD(s, NULL, text);
    SPM_TEST_ADD(s, NULL, file_lines);
    SPM_TEST_ADD(s, NULL, items_and_merge);
    SPM_TEST_ADD(s, NULL, sets_of_each_kind);
    SPM_TEST_ADD(s, NULL, candidate_merge_sums_counts);
    SPM_TEST_ADD(s, NULL, rules);
    SPM_TEST_ADD(s, NULL, forged_counts_refused_before_allocating);
    SPM_TEST_ADD(s, NULL, itemsets);
    SPM_TEST_ADD(s, &slow, front_coded_groups);
    SPM_TEST_ADD(s, NULL, itemsets_written_a_set_at_a_time);
    return s;
}

SPM_TEST_MAIN(suite)
