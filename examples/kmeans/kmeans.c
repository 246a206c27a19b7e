/*  =========================================================================
    kmeans - k-means clustering, stage after stage

    @header
    An spm program built out of tree and run as a plugin:

        spm run --plugin ./libkmeans.so kmeans --points 1000000 --k 8

    It shows SIs whose dependences the VM infers from operand modes, and a
    super-function that decides what to issue next from the replies:

    * stage 0: one "km.gen" SI per block of --block points writes that block
      (mode W, type "km.points"); one "km.init" SI reads the blocks that hold
      the first K points (R) and writes the initial centres (W, "km.centres").
    * every iteration: one "km.assign" SI per block reads its points and the
      centres (R) and writes a partial (W, "km.partial": per cluster, the sum
      of the points nearest to its centre, and their count). One "km.merge"
      SI updates the centres (RW) from all the partials (R, in block order,
      so the sums are the same on every run) and replies with the shift, the
      largest distance a centre moved. With more than 255 blocks the
      partials are first summed by "km.reduce" SIs of 255 each, since an SI
      has at most 256 operands.
    * the root SF's commit of the merge decides: another iteration, or, when
      the shift is at most --tol or --max-iter iterations ran, one
      "km.report" SI that reads the centres and replies with their bytes,
      from which the SF writes the result text.

    The SF never waits: an assign SI issued with the merge still running
    simply becomes ready when the version of the centres it reads is
    committed. Its decisions depend only on its arguments, the job's seed
    and the replies, so a restarted center replays it exactly.
    @discuss
    The points are made from a seed alone, the same on any machine, so a
    sequential reference (tests/ref/examples_ref.h) computes the same ones:

    * draw(key, n) = spm_rng_mix(key + (n + 1) * 0x9e3779b97f4a7c15): the n-th output
      of splitmix64 started at KEY, with mix its finalizer.
    * K generated centres, coordinate d of centre c the integer
      draw(spm_rng_mix(seed ^ 0x6b6d2e63656e7472), c * D + d) % (20 * 2^20) - 10 * 2^20,
      in units of 2^-20: uniform in [-10, 10).
    * Point i, with key = spm_rng_mix(seed ^ 0x6b6d2e706f696e74) and n = i * (4D + 1):
      its centre is number draw(key, n) % K; coordinate d adds to the
      centre's the integer (s >> 3) - 2^22, where s is the sum of
      draw(key, n + 1 + 4d + j) >> 40 for j = 0..3: four uniform 24-bit
      numbers, a bell-shaped noise of standard deviation 1.15 and range
      [-4, 4). The coordinate is that integer times 2^-20, which a double
      holds exactly: no libm, no rounding.

    Initial centres are the first K points. A point belongs to the nearest
    centre (squared Euclidean distance; the lowest index on a tie). A
    cluster left empty keeps its centre.
    @end
    =========================================================================
*/
#include "spm.h"
#include "spm_codec.h"
#include "spm_rng.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SPM_PLUGIN;

#define MAX_FOLD (SPM_MAX_OPERANDS - 1) /* R operands of an SI that also writes one */
#define MAX_DIMS 1024u
#define MAX_K 65536u
#define MAX_POINTS 10000000000ull      /* 10^10 */
#define MAX_BLOCK_BYTES (256ull << 20) /* of one km.points block */
#define KEY_CENTRES 0x6b6d2e63656e7472ull
#define KEY_POINTS 0x6b6d2e706f696e74ull
#define CENTRE_SPAN (20ull << 20) /* generated centres: [-10, 10) in units of 2^-20 */
#define NOISE_MID (1ll << 22)

/* What an SI is, in its tag: kind in the top byte, an index below. */
enum { KIND_GEN = 1, KIND_INIT, KIND_ASSIGN, KIND_REDUCE, KIND_MERGE, KIND_REPORT };
#define TAG(kind, i) ((uint64_t)(kind) << 56 | (uint64_t)(i))

/* ------------------------------------------------------- little endian */

/*  Integers: spm_le32, spm_le64 and their puts (spm_codec.h). */
/*  Doubles travel as their IEEE 754 bits, little-endian. */
static double getf(const unsigned char *p)
{
    uint64_t u = spm_le64(p);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static void putf(unsigned char *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    spm_put_le64(p, u);
}

/* ------------------------------------------------------------ the data */

/*  The N-th output (from 0) of splitmix64 started at KEY: any point can be
    made without making those before it. */
static uint64_t draw(uint64_t key, uint64_t n)
{
    return spm_rng_mix(key + (n + 1) * 0x9e3779b97f4a7c15ull);
}

/*  Fills G (K x DIMS) with the generated centres, in units of 2^-20. */
static void true_centres(uint64_t seed, uint32_t k, uint32_t dims, int64_t *g)
{
    uint64_t key = spm_rng_mix(seed ^ KEY_CENTRES);
    for (uint64_t j = 0; j < (uint64_t)k * dims; j++)
        g[j] = (int64_t)(draw(key, j) % CENTRE_SPAN) - (int64_t)(CENTRE_SPAN / 2);
}

/*  Writes point I (DIMS coordinates) of the run seeded with SEED into X;
    G holds the generated centres (true_centres). */
static void make_point(uint64_t seed, const int64_t *g, uint32_t k, uint32_t dims, uint64_t i,
                       double *x)
{
    uint64_t key = spm_rng_mix(seed ^ KEY_POINTS), n = i * (4 * (uint64_t)dims + 1);
    const int64_t *c = g + draw(key, n) % k * dims;
    for (uint32_t d = 0; d < dims; d++) {
        uint64_t s = 0;
        for (uint64_t j = 0; j < 4; j++)
            s += draw(key, n + 1 + 4 * (uint64_t)d + j) >> 40;
        x[d] = (double)(c[d] + (int64_t)(s >> 3) - NOISE_MID) * 0x1p-20;
    }
}

/* ----------------------------------------------------- the SDB types */

/*  A "km.points" block: the index of its first point (u64), the number of
    points (u32) and of dimensions (u32), then the coordinates, point after
    point (f64). */
#define POINTS_HEAD 16

static int points_validate(const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len < POINTS_HEAD)
        return SPM_EFORMAT;
    uint64_t count = spm_le32(p + 8), dims = spm_le32(p + 12);
    if (dims == 0 || dims > MAX_DIMS || (uint64_t)len != POINTS_HEAD + count * dims * 8)
        return SPM_EFORMAT;
    return 0;
}

static void points_summary(const void *data, size_t len, char *buf, size_t size)
{
    const unsigned char *p = data;
    if (points_validate(data, len) != 0)
        snprintf(buf, size, "km.points: malformed (%zu bytes)", len);
    else
        snprintf(buf, size, "km.points: %" PRIu32 " points of %" PRIu32 " dims from #%" PRIu64,
                 spm_le32(p + 8), spm_le32(p + 12), spm_le64(p));
}

/*  A "km.centres" block and a "km.partial" block have one layout, a table:
    K (u32), dimensions (u32), K x D f64 (the centres; in a partial, the
    sums of the points nearest to each), then K u64 (how many points are
    nearest to each). */
#define TABLE_HEAD 8

static uint64_t table_bytes(uint64_t k, uint64_t dims)
{
    return TABLE_HEAD + k * dims * 8 + k * 8;
}

static int table_validate(const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len < TABLE_HEAD)
        return SPM_EFORMAT;
    uint64_t k = spm_le32(p), dims = spm_le32(p + 4);
    if (k == 0 || k > MAX_K || dims == 0 || dims > MAX_DIMS ||
        (uint64_t)len != table_bytes(k, dims))
        return SPM_EFORMAT;
    return 0;
}

static void table_summary(const char *type, const void *data, size_t len, char *buf, size_t size)
{
    const unsigned char *p = data;
    if (table_validate(data, len) != 0) {
        snprintf(buf, size, "%s: malformed (%zu bytes)", type, len);
        return;
    }
    uint32_t k = spm_le32(p), dims = spm_le32(p + 4);
    uint64_t n = 0;
    for (uint32_t c = 0; c < k; c++)
        n += spm_le64(p + TABLE_HEAD + ((uint64_t)k * dims + c) * 8);
    snprintf(buf, size, "%s: %" PRIu32 " clusters of %" PRIu32 " dims, %" PRIu64 " points", type, k,
             dims, n);
}

static void centres_summary(const void *data, size_t len, char *buf, size_t size)
{
    table_summary("km.centres", data, len, buf, size);
}

static void partial_summary(const void *data, size_t len, char *buf, size_t size)
{
    table_summary("km.partial", data, len, buf, size);
}

/*  A table decoded: K x DIMS values and K counts, malloc'd together. */
typedef struct {
    uint32_t k, dims;
    double *v;        /* K x DIMS */
    uint64_t *counts; /* K */
} table_t;

/*  Allocates T for K x DIMS, zeroed. Returns 0 or SPM_ENOMEM. */
static int table_new(table_t *t, uint32_t k, uint32_t dims)
{
    t->k = k;
    t->dims = dims;
    t->v = calloc((size_t)k * dims, sizeof *t->v);
    t->counts = calloc(k, sizeof *t->counts);
    if (!t->v || !t->counts) {
        free(t->v);
        free(t->counts);
        return SPM_ENOMEM;
    }
    return 0;
}

static void table_free(table_t *t)
{
    free(t->v);
    free(t->counts);
    t->v = NULL;
    t->counts = NULL;
}

/*  Adds the table of LEN bytes at DATA into T, value by value (so folding
    partials in one order always gives the same sums). Returns 0 or
    SPM_EFORMAT when its shape is not T's. */
static int table_add(table_t *t, const void *data, size_t len)
{
    const unsigned char *p = data;
    if (table_validate(data, len) != 0 || spm_le32(p) != t->k || spm_le32(p + 4) != t->dims)
        return SPM_EFORMAT;
    size_t n = (size_t)t->k * t->dims;
    for (size_t j = 0; j < n; j++)
        t->v[j] += getf(p + TABLE_HEAD + j * 8);
    for (uint32_t c = 0; c < t->k; c++)
        t->counts[c] += spm_le64(p + TABLE_HEAD + (n + c) * 8);
    return 0;
}

/*  Encodes T as the output of operand I of CTX. Returns 0 or an SPM_E* code. */
static int table_output(spm_si_ctx_t *ctx, size_t i, const table_t *t)
{
    size_t n = (size_t)t->k * t->dims, len = (size_t)table_bytes(t->k, t->dims);
    unsigned char *p = malloc(len);
    if (!p)
        return SPM_ENOMEM;
    spm_put_le32(p, t->k);
    spm_put_le32(p + 4, t->dims);
    for (size_t j = 0; j < n; j++)
        putf(p + TABLE_HEAD + j * 8, t->v[j]);
    for (uint32_t c = 0; c < t->k; c++)
        spm_put_le64(p + TABLE_HEAD + (n + c) * 8, t->counts[c]);
    return spm_si_output(ctx, i, p, len);
}

/* ------------------------------------------------------------ the SIs */

/*  km.gen: parameters seed (u64), first point (u64), count (u32), K (u32),
    dimensions (u32); one operand, mode W: the points block. */
static int gen_exec(spm_si_ctx_t *ctx)
{
    size_t len;
    const unsigned char *p = spm_si_params(ctx, &len);
    if (len != 28 || spm_si_noperands(ctx) != 1)
        return spm_error(SPM_EINVAL, "km.gen: malformed parameters or operands");
    uint64_t seed = spm_le64(p), first = spm_le64(p + 8);
    uint32_t count = spm_le32(p + 16), k = spm_le32(p + 20), dims = spm_le32(p + 24);
    size_t bytes = POINTS_HEAD + (size_t)count * dims * 8;
    int64_t *g = malloc((size_t)k * dims * sizeof *g);
    double *x = malloc(dims * sizeof *x);
    unsigned char *out = malloc(bytes);
    if (!g || !x || !out) {
        free(g);
        free(x);
        free(out);
        return SPM_ENOMEM;
    }
    true_centres(seed, k, dims, g);
    spm_put_le64(out, first);
    spm_put_le32(out + 8, count);
    spm_put_le32(out + 12, dims);
    for (uint32_t i = 0; i < count; i++) {
        make_point(seed, g, k, dims, first + i, x);
        for (uint32_t d = 0; d < dims; d++)
            putf(out + POINTS_HEAD + ((size_t)i * dims + d) * 8, x[d]);
    }
    free(g);
    free(x);
    return spm_si_output(ctx, 0, out, bytes);
}

/*  km.init: parameters K (u32), dimensions (u32); operands the first point
    blocks (R), in order, then the centres (W). The first K points become
    the centres. */
static int init_exec(spm_si_ctx_t *ctx)
{
    size_t len, n = spm_si_noperands(ctx);
    const unsigned char *p = spm_si_params(ctx, &len);
    if (len != 8 || n < 2)
        return spm_error(SPM_EINVAL, "km.init: malformed parameters or operands");
    table_t t;
    if (table_new(&t, spm_le32(p), spm_le32(p + 4)) != 0)
        return SPM_ENOMEM;
    size_t have = 0, want = (size_t)t.k * t.dims;
    for (size_t i = 0; i + 1 < n && have < want; i++) {
        const void *v;
        if (spm_si_input(ctx, i, &v, &len) != 0 || points_validate(v, len) != 0 ||
            spm_le32((const unsigned char *)v + 12) != t.dims) {
            table_free(&t);
            return spm_error(SPM_EFORMAT,
                             "km.init: operand %zu is not a block of %" PRIu32 " dimensions", i,
                             t.dims);
        }
        const unsigned char *in = v;
        for (size_t j = 0; j < (size_t)spm_le32(in + 8) * t.dims && have < want; j++)
            t.v[have++] = getf(in + POINTS_HEAD + j * 8);
    }
    int rc = have < want ? spm_error(SPM_EFORMAT, "km.init: fewer than %" PRIu32 " points", t.k)
                         : table_output(ctx, n - 1, &t);
    table_free(&t);
    return rc;
}

/*  km.assign: operands the points (R), the centres (R) and the partial (W).
    Sums each point into the partial row of its nearest centre. */
static int assign_exec(spm_si_ctx_t *ctx)
{
    const void *pv, *cv;
    size_t plen, clen;
    if (spm_si_noperands(ctx) != 3 || spm_si_input(ctx, 0, &pv, &plen) != 0 ||
        spm_si_input(ctx, 1, &cv, &clen) != 0 || points_validate(pv, plen) != 0 ||
        table_validate(cv, clen) != 0)
        return spm_error(SPM_EINVAL, "km.assign: malformed operands");
    const unsigned char *pts = pv, *cen = cv;
    if (spm_le32(pts + 12) != spm_le32(cen + 4))
        return spm_error(SPM_EINVAL, "km.assign: points of %" PRIu32 " dims, centres of %" PRIu32,
                         spm_le32(pts + 12), spm_le32(cen + 4));
    table_t c, part;
    if (table_new(&c, spm_le32(cen), spm_le32(cen + 4)) != 0)
        return SPM_ENOMEM;
    if (table_new(&part, c.k, c.dims) != 0) {
        table_free(&c);
        return SPM_ENOMEM;
    }
    table_add(&c, cen, clen); /* the centres, decoded */
    uint32_t count = spm_le32(pts + 8), dims = c.dims;
    for (uint32_t i = 0; i < count; i++) {
        const unsigned char *x = pts + POINTS_HEAD + (size_t)i * dims * 8;
        uint32_t best = 0;
        double best_d2 = INFINITY;
        for (uint32_t j = 0; j < c.k; j++) {
            const double *cj = c.v + (size_t)j * dims;
            double d2 = 0;
            for (uint32_t d = 0; d < dims; d++) {
                double diff = getf(x + d * 8) - cj[d];
                d2 += diff * diff;
            }
            if (d2 < best_d2) {
                best_d2 = d2;
                best = j;
            }
        }
        for (uint32_t d = 0; d < dims; d++)
            part.v[(size_t)best * dims + d] += getf(x + d * 8);
        part.counts[best]++;
    }
    int rc = table_output(ctx, 2, &part);
    table_free(&c);
    table_free(&part);
    return rc;
}

/*  Sums the partials that are operands FROM.. N-1 of CTX (R), in order,
    into T (zeroed, of K x DIMS). Returns 0 or SPM_EFORMAT. */
static int fold_inputs(spm_si_ctx_t *ctx, size_t from, size_t n, table_t *t, const char *op)
{
    for (size_t i = from; i < n; i++) {
        const void *in;
        size_t len;
        if (spm_si_input(ctx, i, &in, &len) != 0 || table_add(t, in, len) != 0)
            return spm_error(SPM_EFORMAT,
                             "%s: operand %zu is not a partial of %" PRIu32 " x %" PRIu32, op, i,
                             t->k, t->dims);
    }
    return 0;
}

/*  km.reduce: operands partials (R), then their sum (W). */
static int reduce_exec(spm_si_ctx_t *ctx)
{
    const void *v;
    size_t len, n = spm_si_noperands(ctx);
    if (n < 2 || spm_si_input(ctx, 0, &v, &len) != 0 || table_validate(v, len) != 0)
        return spm_error(SPM_EINVAL, "km.reduce: malformed operands");
    const unsigned char *first = v;
    table_t t;
    if (table_new(&t, spm_le32(first), spm_le32(first + 4)) != 0)
        return SPM_ENOMEM;
    int rc = fold_inputs(ctx, 0, n - 1, &t, "km.reduce");
    if (rc == 0)
        rc = table_output(ctx, n - 1, &t);
    table_free(&t);
    return rc;
}

/*  km.merge: operands the centres (RW), then partials (R) in block order.
    Writes the new centres (a cluster without points keeps its centre) and
    replies with the shift: the largest distance a centre moved (f64). */
static int merge_exec(spm_si_ctx_t *ctx)
{
    const void *v;
    size_t len, n = spm_si_noperands(ctx);
    if (n < 2 || spm_si_mode(ctx, 0) != SPM_RW || spm_si_input(ctx, 0, &v, &len) != 0 ||
        table_validate(v, len) != 0)
        return spm_error(SPM_EINVAL, "km.merge: malformed operands");
    const unsigned char *cen = v;
    table_t old, sum;
    if (table_new(&old, spm_le32(cen), spm_le32(cen + 4)) != 0)
        return SPM_ENOMEM;
    if (table_new(&sum, old.k, old.dims) != 0) {
        table_free(&old);
        return SPM_ENOMEM;
    }
    table_add(&old, cen, len);
    int rc = fold_inputs(ctx, 1, n, &sum, "km.merge");
    double shift = 0;
    for (uint32_t c = 0; rc == 0 && c < sum.k; c++) {
        double *s = sum.v + (size_t)c * sum.dims, *o = old.v + (size_t)c * old.dims, d2 = 0;
        for (uint32_t d = 0; d < sum.dims; d++) {
            s[d] = sum.counts[c] ? s[d] / (double)sum.counts[c] : o[d];
            d2 += (s[d] - o[d]) * (s[d] - o[d]);
        }
        double dist = sqrt(d2);
        if (dist > shift)
            shift = dist;
    }
    if (rc == 0)
        rc = table_output(ctx, 0, &sum);
    table_free(&old);
    table_free(&sum);
    if (rc != 0)
        return rc;
    unsigned char reply[8];
    putf(reply, shift);
    return spm_si_reply(ctx, reply, sizeof reply);
}

/*  km.report: one operand, the centres (R). Replies with their bytes. */
static int report_exec(spm_si_ctx_t *ctx)
{
    const void *in;
    size_t len;
    if (spm_si_noperands(ctx) != 1 || spm_si_input(ctx, 0, &in, &len) != 0)
        return spm_error(SPM_EINVAL, "km.report: malformed operands");
    return spm_si_reply(ctx, in, len);
}

/* ------------------------------------------------------------- the SF */

typedef struct {
    uint64_t points, dims, k, block, max_iter, seed, digits;
    double tol;
} km_args_t;

typedef struct {
    km_args_t a;
    uint64_t nblocks;    /* point blocks; km.assign SIs an iteration */
    uint64_t ngroups;    /* km.reduce SIs an iteration (0: the merge sums the partials) */
    spm_sdb_t centres;   /* km.centres */
    spm_sdb_t *points;   /* km.points, NBLOCKS */
    spm_sdb_t *partials; /* km.partial, NBLOCKS */
    spm_sdb_t *groups;   /* km.partial, NGROUPS */
    uint64_t iter;       /* iterations issued */
    double shift;        /* the last merge's reply */
} km_state_t;

static const char usage[] =
    "usage: spm run --plugin libkmeans.so kmeans [OPTIONS]\n\n"
    "k-means on generated points: K bell-shaped clusters around random centres.\n\n"
    "  --points N     points (default 200000)\n"
    "  --dims D       dimensions (default 4, at most 1024)\n"
    "  --k K          clusters, generated and sought (default 8)\n"
    "  --block P      points per SI (default 10000)\n"
    "  --max-iter M   iterations at most (default 50)\n"
    "  --tol T        stop when no centre moved more than T (default 1e-6)\n"
    "  --seed S       seed of the points (default: the job's seed)\n"
    "  --digits N     decimals of the coordinates printed (default 6, at most 17)\n";

/*  Parses a whole decimal number in [MIN, MAX] for OPTION into *OUT.
    Returns 0 or SPM_EINVAL with a detail. */
static int parse_u64(const char *option, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v = 0;
    errno = 0;
    if (s[0] >= '0' && s[0] <= '9') /* strtoull would take " 1" and "-1" */
        v = strtoull(s, &end, 10);
    if (!end || *end || errno || v < min || v > max)
        return spm_error(SPM_EINVAL, "%s: '%s' is not a number from %" PRIu64 " to %" PRIu64,
                         option, s, min, max);
    *out = v;
    return 0;
}

/*  Parses the program's arguments (spm_args: "--name value" or
    "--name=value") into A. Returns 0, 1 when --help was asked for, or
    SPM_EINVAL with a detail. */
static int parse_args(const void *args, size_t len, km_args_t *a)
{
    static const struct {
        const char *name;
        uint64_t min, max;
        size_t offset; /* of the uint64_t in km_args_t; SIZE_MAX: --tol */
    } opts[] = {{"--points", 1, MAX_POINTS, offsetof(km_args_t, points)},
                {"--dims", 1, MAX_DIMS, offsetof(km_args_t, dims)},
                {"--k", 1, MAX_K, offsetof(km_args_t, k)},
                {"--block", 1, 10000000, offsetof(km_args_t, block)},
                {"--max-iter", 1, 1000000, offsetof(km_args_t, max_iter)},
                {"--seed", 0, UINT64_MAX, offsetof(km_args_t, seed)},
                {"--digits", 0, 17, offsetof(km_args_t, digits)},
                {"--tol", 0, 0, SIZE_MAX}};
    const char *argv[32];
    size_t argc = spm_args(args, len, argv, 32);
    if (argc > 32)
        return spm_error(SPM_EINVAL, "%zu arguments (at most 32)", argc);
    for (size_t i = 0; i < argc; i++) {
        const char *arg = argv[i], *eq = strchr(arg, '=');
        size_t n = eq ? (size_t)(eq - arg) : strlen(arg), k = 0;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return 1;
        while (k < sizeof opts / sizeof opts[0] &&
               !(strlen(opts[k].name) == n && strncmp(arg, opts[k].name, n) == 0))
            k++;
        if (k == sizeof opts / sizeof opts[0])
            return spm_error(SPM_EINVAL, "%s '%.*s' (--help lists options)",
                             arg[0] == '-' ? "unknown option" : "unexpected argument", (int)n, arg);
        if (!eq && i + 1 == argc)
            return spm_error(SPM_EINVAL, "%s needs a value", opts[k].name);
        const char *val = eq ? eq + 1 : argv[++i];
        if (opts[k].offset == SIZE_MAX) {
            char *end;
            errno = 0;
            a->tol = strtod(val, &end);
            if (end == val || *end || errno || !(a->tol >= 0) || a->tol > 1e300)
                return spm_error(SPM_EINVAL, "--tol: '%s' is not a number >= 0", val);
            continue;
        }
        int rc = parse_u64(opts[k].name, val, opts[k].min, opts[k].max,
                           (uint64_t *)((char *)a + opts[k].offset));
        if (rc != 0)
            return rc;
    }
    return 0;
}

/*  Checks that A makes blocks and SIs the VM takes. Returns 0 or
    SPM_EINVAL with a detail. */
static int check_args(const km_args_t *a, uint64_t nblocks)
{
    if (a->k > a->points)
        return spm_error(SPM_EINVAL, "--k %" PRIu64 " is more than the %" PRIu64 " points", a->k,
                         a->points);
    if (a->block * a->dims * 8 > MAX_BLOCK_BYTES)
        return spm_error(SPM_EINVAL,
                         "--block %" PRIu64 " of %" PRIu64 " dims makes blocks of "
                         "over %llu MiB",
                         a->block, a->dims, MAX_BLOCK_BYTES >> 20);
    if (nblocks > (uint64_t)MAX_FOLD * MAX_FOLD)
        return spm_error(SPM_EINVAL, "%" PRIu64 " blocks (at most %d): a larger --block", nblocks,
                         MAX_FOLD * MAX_FOLD);
    if ((a->k + a->block - 1) / a->block > MAX_FOLD)
        return spm_error(SPM_EINVAL,
                         "the first %" PRIu64 " points span over %d blocks: a "
                         "larger --block",
                         a->k, MAX_FOLD);
    if (table_bytes(a->k, a->dims) > SPM_MAX_REPLY)
        return spm_error(SPM_EINVAL,
                         "--k %" PRIu64 " x --dims %" PRIu64 " centres do not fit "
                         "in a reply (%d bytes)",
                         a->k, a->dims, SPM_MAX_REPLY);
    return 0;
}

/*  Issues one iteration: the assigns, the reduces when there are many
    blocks, and the merge. Returns 0 or an SPM_E* code. */
static int iterate(spm_sf_t *sf, km_state_t *st)
{
    spm_operand_t ops[SPM_MAX_OPERANDS];
    int rc;
    st->iter++;
    for (uint64_t b = 0; b < st->nblocks; b++) {
        ops[0] = (spm_operand_t){st->points[b], SPM_R, 0};
        ops[1] = (spm_operand_t){st->centres, SPM_R, 0};
        ops[2] = (spm_operand_t){st->partials[b], SPM_W, 0};
        if ((rc = spm_sf_issue(sf, "km.assign", ops, 3, NULL, 0, TAG(KIND_ASSIGN, b))) != 0)
            return rc;
    }
    const spm_sdb_t *src = st->partials;
    uint64_t nsrc = st->nblocks;
    for (uint64_t g = 0; g < st->ngroups; g++) {
        size_t n = 0;
        for (uint64_t b = g * MAX_FOLD; b < st->nblocks && n < MAX_FOLD; b++)
            ops[n++] = (spm_operand_t){st->partials[b], SPM_R, 0};
        ops[n++] = (spm_operand_t){st->groups[g], SPM_W, 0};
        if ((rc = spm_sf_issue(sf, "km.reduce", ops, n, NULL, 0, TAG(KIND_REDUCE, g))) != 0)
            return rc;
    }
    if (st->ngroups) {
        src = st->groups;
        nsrc = st->ngroups;
    }
    ops[0] = (spm_operand_t){st->centres, SPM_RW, 0};
    for (uint64_t i = 0; i < nsrc; i++)
        ops[1 + i] = (spm_operand_t){src[i], SPM_R, 0};
    return spm_sf_issue(sf, "km.merge", ops, 1 + nsrc, NULL, 0, TAG(KIND_MERGE, st->iter));
}

/*  The root SF's start: checks the arguments, makes the SDBs, issues stage
    0 and the first iteration. */
static int km_start(spm_sf_t *sf, const void *args, size_t len)
{
    km_state_t *st = calloc(1, sizeof *st);
    if (!st)
        return SPM_ENOMEM;
    spm_sf_set_state(sf, st); /* freed by km_finish, whatever happens */
    km_args_t *a = &st->a;
    *a = (km_args_t){.points = 200000,
                     .dims = 4,
                     .k = 8,
                     .block = 10000,
                     .max_iter = 50,
                     .seed = spm_sf_seed(sf),
                     .digits = 6,
                     .tol = 1e-6};
    int rc = parse_args(args, len, a);
    if (rc == 1) {
        spm_sf_done(sf);
        return spm_sf_set_result(sf, usage, strlen(usage));
    }
    st->nblocks = (a->points + a->block - 1) / a->block;
    if (rc != 0 || (rc = check_args(a, st->nblocks)) != 0)
        return rc;
    st->ngroups = st->nblocks > MAX_FOLD ? (st->nblocks + MAX_FOLD - 1) / MAX_FOLD : 0;
    st->points = calloc(st->nblocks, sizeof *st->points);
    st->partials = calloc(st->nblocks, sizeof *st->partials);
    st->groups = calloc(st->ngroups + 1, sizeof *st->groups);
    if (!st->points || !st->partials || !st->groups ||
        !(st->centres = spm_sdb_new(sf, "km.centres")))
        return SPM_ENOMEM;
    for (uint64_t b = 0; b < st->nblocks; b++)
        if (!(st->points[b] = spm_sdb_new(sf, "km.points")) ||
            !(st->partials[b] = spm_sdb_new(sf, "km.partial")))
            return SPM_ENOMEM;
    for (uint64_t g = 0; g < st->ngroups; g++)
        if (!(st->groups[g] = spm_sdb_new(sf, "km.partial")))
            return SPM_ENOMEM;
    spm_operand_t ops[SPM_MAX_OPERANDS];
    unsigned char params[28];
    for (uint64_t b = 0; b < st->nblocks; b++) {
        uint64_t first = b * a->block;
        uint64_t count = a->points - first < a->block ? a->points - first : a->block;
        spm_put_le64(params, a->seed);
        spm_put_le64(params + 8, first);
        spm_put_le32(params + 16, (uint32_t)count);
        spm_put_le32(params + 20, (uint32_t)a->k);
        spm_put_le32(params + 24, (uint32_t)a->dims);
        ops[0] = (spm_operand_t){st->points[b], SPM_W, 0};
        if ((rc = spm_sf_issue(sf, "km.gen", ops, 1, params, 28, TAG(KIND_GEN, b))) != 0)
            return rc;
    }
    size_t n = 0;
    for (uint64_t b = 0; b * a->block < a->k; b++)
        ops[n++] = (spm_operand_t){st->points[b], SPM_R, 0};
    ops[n++] = (spm_operand_t){st->centres, SPM_W, 0};
    spm_put_le32(params, (uint32_t)a->k);
    spm_put_le32(params + 4, (uint32_t)a->dims);
    if ((rc = spm_sf_issue(sf, "km.init", ops, n, params, 8, TAG(KIND_INIT, 0))) != 0)
        return rc;
    return iterate(sf, st);
}

/*  A growing text buffer for the result. */
typedef struct {
    char *p;
    size_t len, cap;
    int failed; /* out of memory */
} text_t;

static void text_add(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(text_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->p ? t->p + t->len : NULL, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0 || t->failed) {
        t->failed = 1;
        return;
    }
    if (t->len + (size_t)n >= t->cap) {
        size_t cap = 2 * (t->len + (size_t)n) + 256;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = 1;
            return;
        }
        t->p = p;
        t->cap = cap;
        va_start(ap, fmt);
        vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
    }
    t->len += (size_t)n;
}

/*  Sets the result text from the report's reply (the centres' bytes). */
static void report(spm_sf_t *sf, const km_state_t *st, const spm_result_t *r)
{
    const unsigned char *p = r->reply;
    if (table_validate(p, r->reply_len) != 0 || spm_le32(p) != st->a.k ||
        spm_le32(p + 4) != st->a.dims) {
        spm_sf_fail(sf, SPM_EFORMAT, "kmeans: the report's centres are malformed");
        return;
    }
    uint32_t k = (uint32_t)st->a.k, dims = (uint32_t)st->a.dims;
    int digits = (int)st->a.digits;
    text_t t = {0};
    text_add(&t, "iterations %" PRIu64 ", shift %.3g, seed %" PRIu64 "\n", st->iter, st->shift,
             st->a.seed);
    for (uint32_t c = 0; c < k; c++) {
        text_add(&t, "centre %" PRIu32 ": %" PRIu64 " points at", c,
                 spm_le64(p + TABLE_HEAD + ((size_t)k * dims + c) * 8));
        for (uint32_t d = 0; d < dims; d++)
            text_add(&t, " %.*f", digits, getf(p + TABLE_HEAD + ((size_t)c * dims + d) * 8));
        text_add(&t, "\n");
    }
    if (t.failed || spm_sf_set_result(sf, t.p, t.len) != 0)
        spm_sf_fail(sf, SPM_ENOMEM, "kmeans: out of memory");
    free(t.p);
}

/*  The merge's reply decides: iterate again, or read the centres out. */
static void km_commit(spm_sf_t *sf, const spm_result_t *r)
{
    km_state_t *st = spm_sf_state(sf);
    int kind = (int)(r->tag >> 56), rc = 0;
    if (r->kind != SPM_RESULT_SI)
        return;
    if (kind == KIND_REPORT) {
        report(sf, st, r);
        return;
    }
    if (kind != KIND_MERGE)
        return;
    if (r->reply_len != 8) {
        spm_sf_fail(sf, SPM_EFORMAT, "kmeans: the merge replied %zu bytes, not 8", r->reply_len);
        return;
    }
    st->shift = getf(r->reply);
    if (st->iter < st->a.max_iter && st->shift > st->a.tol) {
        rc = iterate(sf, st);
    } else {
        /* read once, on one node, never again: no use keeping it cached */
        spm_operand_t op = {st->centres, SPM_R, SPM_NOCACHE};
        rc = spm_sf_issue(sf, "km.report", &op, 1, NULL, 0, TAG(KIND_REPORT, 0));
        spm_sf_done(sf);
    }
    if (rc != 0)
        spm_sf_fail(sf, rc, "kmeans: %s",
                    *spm_error_detail() ? spm_error_detail() : spm_strerror(rc));
}

static void km_finish(spm_sf_t *sf)
{
    km_state_t *st = spm_sf_state(sf);
    if (st) {
        free(st->points);
        free(st->partials);
        free(st->groups);
        free(st);
    }
    spm_sf_set_state(sf, NULL);
}

static const spm_sf_class_t km_class = {
    .name = "kmeans", .start = km_start, .commit = km_commit, .finish = km_finish};

SPM_CONSTRUCTOR(kmeans)
{
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = "km.points", .validate = points_validate, .summary = points_summary});
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = "km.centres", .validate = table_validate, .summary = centres_summary});
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = "km.partial", .validate = table_validate, .summary = partial_summary});
    spm_opcode_register(&(spm_opcode_t){.name = "km.gen", .exec = gen_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "km.init", .exec = init_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "km.assign", .exec = assign_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "km.reduce", .exec = reduce_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "km.merge", .exec = merge_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "km.report", .exec = report_exec});
    spm_program_register(&(spm_program_t){.name = "kmeans", .root = &km_class});
}
