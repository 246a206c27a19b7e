/*  =========================================================================
    columns - itemsets and rules written as columns of NumPy arrays (.npz)

    Why an .npz and not Parquet or Arrow IPC: Debian (12) packages no C
    library for either (no libarrow, no libparquet), and writing them by
    hand means Thrift's compact encoding and FlatBuffers for a footer,
    against a zip of raw arrays that NumPy (python3-numpy) reads with no
    library beyond itself and pandas takes in two lines. The arrays are
    the layout Arrow would give the same columns (flat values, n + 1
    offsets), so pyarrow can wrap them without copying.

    The columns are written side by side: each set adds to several arrays
    at once, which the archive has laid out beforehand (isa/core/npz.h).
    The number of sets (and, for rules, of items, counted as they were
    fetched) is known; an itemsets' items column, whose length is not, is
    the archive's last member and grows.
    =========================================================================
*/
#include "programs/apriori/columns.h"
#include "isa/core/codec.h"
#include "isa/core/npz.h"
#include "programs/apriori/ahead.h"
#include "programs/apriori/runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH ((size_t)256 << 10) /* bytes a column gathers before they are put */

/*  One column being written: its member and a batch of its bytes. */
typedef struct {
    int m;              /* the member (spm_npz_writer_add's number) */
    unsigned char *buf; /* BATCH bytes */
    size_t fill;        /* gathered */
} column_t;

typedef struct {
    spm_npz_writer_t *w;
    column_t c[8];
    int n;  /* columns in use */
    int rc; /* the first error */
} table_t;

/*  Declares column NAME of dtype DESCR with N elements (GROWS: n unknown). */
static column_t *column(table_t *t, const char *name, const char *descr, uint64_t n, unsigned flags)
{
    spm_npy_t a;
    column_t *c = &t->c[t->n];
    if (t->rc != 0)
        return c;
    if ((t->rc = spm_npy_set(&a, descr, 1, &n)) != 0)
        return c;
    if (!(c->buf = malloc(BATCH))) {
        t->rc = spm_error(SPM_ENOMEM, "out of memory");
        return c;
    }
    t->n++;
    if ((c->m = spm_npz_writer_add(t->w, name, &a, flags)) < 0)
        t->rc = c->m;
    return c;
}

static int put(table_t *t, column_t *c)
{
    int rc = c->fill ? spm_npz_writer_put(t->w, c->m, c->buf, c->fill) : 0;
    c->fill = 0;
    if (rc != 0 && t->rc == 0)
        t->rc = rc;
    return rc;
}

/*  Room for N more bytes in C's batch. */
static inline int room(table_t *t, column_t *c, size_t n)
{
    return c->fill + n <= BATCH ? 0 : put(t, c);
}

static inline void add_u64(table_t *t, column_t *c, uint64_t v)
{
    if (t->rc == 0 && room(t, c, 8) == 0) {
        spm_put_le64(c->buf + c->fill, v);
        c->fill += 8;
    }
}

static inline void add_f64(table_t *t, column_t *c, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    add_u64(t, c, u);
}

static inline void add_items(table_t *t, column_t *c, const uint32_t *s, uint32_t k)
{
    if (t->rc != 0 || room(t, c, (size_t)k * 4) != 0)
        return;
    for (uint32_t j = 0; j < k; j++)
        spm_put_le32(c->buf + c->fill + 4 * j, s[j]);
    c->fill += (size_t)k * 4;
}

/*  A scalar member NAME: 8 bytes of dtype DESCR (an int64 V, or a float64 D). */
static void scalar(table_t *t, const char *name, const char *descr, uint64_t v, double d)
{
    spm_npy_t a;
    unsigned char b[8];
    if (descr[1] == 'f')
        memcpy(&v, &d, 8);
    spm_put_le64(b, v);
    if (t->rc == 0 && (t->rc = spm_npy_set(&a, descr, 0, NULL)) == 0)
        t->rc = spm_npz_writer_array(t->w, name, &a, b);
}

/*  With --names, member `names`: the name of every item number, as bytes
    as wide as the longest (NumPy's 'S' dtype: shorter ones end in NULs). */
static void names(table_t *t, const spm_mine_out_t *o)
{
    uint64_t n = spm_reader_domain(o->names);
    size_t w = 1;
    for (uint64_t i = 0; i < n; i++) {
        const char *s = spm_reader_name(o->names, (uint32_t)i);
        size_t len = s ? strlen(s) : 0;
        w = len > w ? len : w;
    }
    char descr[32];
    snprintf(descr, sizeof descr, "|S%zu", w);
    column_t *c = column(t, "names", descr, n, 0);
    unsigned char *one = calloc(1, w);
    if (!one && t->rc == 0)
        t->rc = spm_error(SPM_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < n && t->rc == 0; i++) {
        const char *s = spm_reader_name(o->names, (uint32_t)i);
        memset(one, 0, w);
        if (s)
            memcpy(one, s, strlen(s));
        for (size_t at = 0; at < w && t->rc == 0; at += BATCH) { /* a name may pass BATCH */
            size_t part = w - at < BATCH ? w - at : BATCH;
            if (room(t, c, part) == 0) {
                memcpy(c->buf + c->fill, one + at, part);
                c->fill += part;
            }
        }
    }
    free(one);
    put(t, c);
}

/*  Finishes T: the batches put, the archive closed. */
static int finish(table_t *t)
{
    for (int i = 0; i < t->n; i++) {
        put(t, &t->c[i]);
        free(t->c[i].buf);
    }
    int rc = t->w ? spm_npz_writer_close(&t->w) : 0;
    return t->rc ? t->rc : rc;
}

/*  Opens T on OUT with the scalars every file has. */
static void start(table_t *t, spm_outfile_t *out, const spm_mine_out_t *o)
{
    if (!(t->w = spm_npz_writer_new(out))) {
        t->rc = spm_error(SPM_ENOMEM, "out of memory");
        return;
    }
    scalar(t, "transactions", "<i8", o->ntrans, 0);
    scalar(t, "min_support", "<i8", o->minsup, 0);
}

int spm_mine_write_itemsets_npz(spm_outfile_t *out, spm_mine_out_t *o)
{
    table_t t = {0};
    uint64_t n = spm_mine_nitemsets(o), at = 0, count;
    const uint32_t *s;
    uint32_t k;
    int rc = 0;
    start(&t, out, o);
    if (o->names)
        names(&t, o);
    column_t *sup = column(&t, "support", "<i8", n, 0);
    column_t *off = column(&t, "offsets", "<i8", n + 1, 0);
    column_t *items = column(&t, "items", "<u4", 0, SPM_NPZ_GROWS);
    if (t.rc == 0 && o->sets)
        t.rc = o->runs ? spm_mine_runs_start(o->runs) : spm_extsort_rewind(o->sets);
    /* many sets merged from runs: the merge goes ahead on a thread of its own */
    spm_mine_ahead_t *a =
        t.rc == 0 && o->runs && n >= SPM_MINE_AHEAD_SETS ? spm_mine_ahead_start(o) : NULL;
    add_u64(&t, off, 0);
    while (t.rc == 0 && o->sets &&
           (rc = a ? spm_mine_ahead_next(a, &k, &s, &count)
                   : spm_mine_next_itemset(o, &k, &s, &count)) == 1) {
        add_u64(&t, sup, count);
        add_items(&t, items, s, k);
        add_u64(&t, off, at += k);
    }
    spm_mine_ahead_destroy(&a);
    if (rc < 0 && t.rc == 0)
        t.rc = rc;
    return finish(&t);
}

int spm_mine_write_rules_npz(spm_outfile_t *out, spm_mine_out_t *o)
{
    table_t t = {0};
    uint64_t n = spm_mine_nrules(o), xat = 0, yat = 0;
    spm_mine_rule_t r;
    int rc = 0;
    start(&t, out, o);
    scalar(&t, "min_confidence", "<f8", 0, o->minconf);
    if (o->names)
        names(&t, o);
    column_t *sup = column(&t, "support", "<i8", n, 0);
    column_t *conf = column(&t, "confidence", "<f8", n, 0);
    column_t *lift = column(&t, "lift", "<f8", n, 0);
    column_t *xoff = column(&t, "antecedent_offsets", "<i8", n + 1, 0);
    column_t *yoff = column(&t, "consequent_offsets", "<i8", n + 1, 0);
    column_t *x = column(&t, "antecedent", "<u4", o->xitems, 0);
    column_t *y = column(&t, "consequent", "<u4", o->yitems, 0);
    if (t.rc == 0 && o->rules)
        t.rc = spm_extsort_rewind(o->rules);
    add_u64(&t, xoff, 0);
    add_u64(&t, yoff, 0);
    while (t.rc == 0 && o->rules && (rc = spm_mine_next_rule(o, &r)) == 1) {
        /* as the text output computes them (output.c) */
        double c = (double)r.supz / (double)r.supx;
        add_u64(&t, sup, r.supz);
        add_f64(&t, conf, c);
        add_f64(&t, lift, r.supy ? c * (double)o->ntrans / (double)r.supy : 0);
        add_items(&t, x, r.x, r.xlen);
        add_items(&t, y, r.y, r.ylen);
        add_u64(&t, xoff, xat += r.xlen);
        add_u64(&t, yoff, yat += r.ylen);
    }
    if (rc < 0 && t.rc == 0)
        t.rc = rc;
    return finish(&t);
}
