/*  =========================================================================
    montecarlo - estimate pi by sampling points in the unit square

    @header
    An spm program built out of tree and run as a plugin:

        spm run --plugin ./libmontecarlo.so montecarlo --samples 100000000

    The samples are cut into --blocks SIs ("mc.sample"). Each draws its share
    of points from a generator of its own, seeded from (seed, block index),
    and counts those inside the quarter circle. Every such SI names one SDB,
    of this program's type "mc.count", with mode ACC: the SIs run at once on
    any IEUs, each producing a partial {hits, samples}, and the VM folds the
    partials with the type's merge (which adds) before anyone reads the SDB.
    The root super-function then issues one "mc.report" SI that reads the
    merged count (mode R, so it waits for the merge) and replies with its 16
    bytes; the SF's commit turns them into the result text, which
    `spm run --plugin` prints:

        pi 3.1421460000 from 10000000 samples (7855365 inside, seed 1)

    docs/PROGRAMMING.md walks through this file.
    @discuss
    The arithmetic is integer and exactly reproducible, so a sequential
    reference (tests/ref/examples_ref.h) computes the same counts:

    * splitmix64 is the sequence mix(x + k * 0x9e3779b97f4a7c15), k = 1, 2,
      ..., with mix the finalizer below (a bijection on 64 bits).
    * Block b's generator is xoshiro256** whose four state words are the
      first four outputs of splitmix64 started at mix(seed ^ mix(b + 1)).
    * Block b draws samples / blocks points, one more when b < samples %
      blocks.
    * A point is one 64-bit draw r: x = r >> 34 and y = (r >> 4) & (2^30 - 1)
      pick one of 2^30 x 2^30 cells; it is inside when the cell's centre is
      inside the circle of radius 1, that is (2x + 1)^2 + (2y + 1)^2 < 2^62,
      which fits in 64 bits. (Cells instead of doubles: no rounding, so no
      dependence on the compiler's floating-point contraction or the CPU.)
    @end
    =========================================================================
*/
#include "spm.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SPM_PLUGIN;

#define DEFAULT_SAMPLES 10000000u
#define DEFAULT_BLOCKS 64u
#define MAX_SAMPLES 1000000000000000ull /* 10^15: sums stay far from overflow */
#define MAX_BLOCKS 65536u
#define TAG_REPORT UINT64_MAX /* the mc.report SI; mc.sample SIs are tagged with their block */

/* ------------------------------------------------------- little endian */

/*  Blocks, parameters and replies are fixed little-endian bytes, so nodes
    of any byte order can exchange them. */
static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* ---------------------------------------------------------- generator */

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *x)
{
    return mix(*x += 0x9e3779b97f4a7c15ull);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

typedef struct {
    uint64_t s[4]; /* xoshiro256** state */
} gen_t;

/*  Seeds G with the stream of block BLOCK of a run seeded with SEED. */
static void gen_seed(gen_t *g, uint64_t seed, uint64_t block)
{
    uint64_t x = mix(seed ^ mix(block + 1));
    for (int i = 0; i < 4; i++)
        g->s[i] = splitmix64(&x);
}

static uint64_t gen_next(gen_t *g)
{
    uint64_t *s = g->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/*  Counts the points of N draws from G that fall inside the circle. */
static uint64_t count_inside(gen_t *g, uint64_t n)
{
    uint64_t hits = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = gen_next(g);
        uint64_t x = 2 * (r >> 34) + 1, y = 2 * ((r >> 4) & 0x3fffffffu) + 1;
        hits += x * x + y * y < (1ull << 62);
    }
    return hits;
}

/* ----------------------------------------------------- the SDB type */

/*  An "mc.count" block is 16 bytes: hits, then samples, each a 64-bit
    little-endian integer, with hits <= samples. */
#define COUNT_BYTES 16

static int count_validate(const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len != COUNT_BYTES || get64(p) > get64(p + 8))
        return SPM_EFORMAT;
    return 0;
}

/*  ACC merge: the sum of two counts. A is NULL (ALEN 0) for the first
    partial of an SDB that has no version yet. */
static int count_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                       size_t *outlen)
{
    if ((alen != 0 && count_validate(a, alen) != 0) || count_validate(b, blen) != 0)
        return spm_error(SPM_EFORMAT, "mc.count: merge of malformed counts (%zu and %zu bytes)",
                         alen, blen);
    unsigned char *m = malloc(COUNT_BYTES);
    if (!m)
        return SPM_ENOMEM;
    const unsigned char *pa = a, *pb = b;
    put64(m, get64(pb) + (alen ? get64(pa) : 0));
    put64(m + 8, get64(pb + 8) + (alen ? get64(pa + 8) : 0));
    *out = m;
    *outlen = COUNT_BYTES;
    return 0;
}

static void count_summary(const void *data, size_t len, char *buf, size_t size)
{
    if (count_validate(data, len) != 0) {
        snprintf(buf, size, "mc.count: malformed (%zu bytes)", len);
        return;
    }
    const unsigned char *p = data;
    snprintf(buf, size, "mc.count: %" PRIu64 " of %" PRIu64 " samples inside", get64(p),
             get64(p + 8));
}

/* ------------------------------------------------------------ the SIs */

/*  mc.sample: parameters seed, block and samples (24 bytes); one operand,
    the count, in mode ACC. Writes {hits, samples} as its partial. */
static int sample_exec(spm_si_ctx_t *ctx)
{
    size_t len;
    const unsigned char *p = spm_si_params(ctx, &len);
    if (len != 24 || spm_si_noperands(ctx) != 1 || spm_si_mode(ctx, 0) != SPM_ACC)
        return spm_error(SPM_EINVAL, "mc.sample: malformed parameters or operands");
    uint64_t n = get64(p + 16);
    gen_t g;
    gen_seed(&g, get64(p), get64(p + 8));
    unsigned char *out = malloc(COUNT_BYTES);
    if (!out)
        return SPM_ENOMEM;
    put64(out, count_inside(&g, n));
    put64(out + 8, n);
    return spm_si_output(ctx, 0, out, COUNT_BYTES);
}

/*  mc.report: one operand, the count, in mode R. Replies with its bytes. */
static int report_exec(spm_si_ctx_t *ctx)
{
    const void *in;
    size_t len;
    if (spm_si_noperands(ctx) != 1 || spm_si_input(ctx, 0, &in, &len) != 0)
        return spm_error(SPM_EINVAL, "mc.report: malformed operands");
    return spm_si_reply(ctx, in, len);
}

/* ------------------------------------------------------------- the SF */

typedef struct {
    uint64_t samples; /* points in all */
    uint64_t blocks;  /* mc.sample SIs */
    uint64_t seed;    /* of the generators */
} mc_args_t;

static const char usage[] =
    "usage: spm run --plugin libmontecarlo.so montecarlo [OPTIONS]\n\n"
    "Estimates pi from random points in the unit square.\n\n"
    "  --samples N   points in all (default 10000000)\n"
    "  --blocks B    SIs the points are split into (default 64, at most 65536)\n"
    "  --seed S      seed of the generators (default: the job's seed)\n";

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
static int parse_args(const void *args, size_t len, mc_args_t *a)
{
    static const struct {
        const char *name;
        uint64_t min, max;
        size_t offset;
    } opts[] = {{"--samples", 1, MAX_SAMPLES, offsetof(mc_args_t, samples)},
                {"--blocks", 1, MAX_BLOCKS, offsetof(mc_args_t, blocks)},
                {"--seed", 0, UINT64_MAX, offsetof(mc_args_t, seed)}};
    const char *argv[16];
    size_t argc = spm_args(args, len, argv, 16);
    if (argc > 16)
        return spm_error(SPM_EINVAL, "%zu arguments (at most 16)", argc);
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
        int rc = parse_u64(opts[k].name, val, opts[k].min, opts[k].max,
                           (uint64_t *)((char *)a + opts[k].offset));
        if (rc != 0)
            return rc;
    }
    return 0;
}

/*  The root SF's start: issues every mc.sample SI, then the mc.report SI
    that reads their merged count, and is done issuing. Everything it does
    depends on its arguments and spm_sf_seed alone (deterministic). */
static int mc_start(spm_sf_t *sf, const void *args, size_t len)
{
    mc_args_t *a = calloc(1, sizeof *a);
    if (!a)
        return SPM_ENOMEM;
    spm_sf_set_state(sf, a); /* freed by mc_finish, whatever happens */
    *a = (mc_args_t){.samples = DEFAULT_SAMPLES, .blocks = DEFAULT_BLOCKS, .seed = spm_sf_seed(sf)};
    int rc = parse_args(args, len, a);
    if (rc == 1) {
        spm_sf_done(sf);
        return spm_sf_set_result(sf, usage, strlen(usage));
    }
    if (rc != 0)
        return rc;
    spm_sdb_t count = spm_sdb_new(sf, "mc.count");
    if (!count)
        return spm_error(SPM_ENOMEM, "cannot create the count SDB");
    spm_sf_expect(sf, a->blocks + 2); /* the samples, the VM's merge, the report */
    spm_operand_t acc = {count, SPM_ACC, 0};
    for (uint64_t b = 0; b < a->blocks; b++) {
        unsigned char params[24];
        put64(params, a->seed);
        put64(params + 8, b);
        put64(params + 16, a->samples / a->blocks + (b < a->samples % a->blocks));
        if ((rc = spm_sf_issue(sf, "mc.sample", &acc, 1, params, sizeof params, b)) != 0)
            return rc;
    }
    /* Read once, here, and never again on that node: no use keeping it. */
    spm_operand_t read = {count, SPM_R, SPM_NOCACHE};
    if ((rc = spm_sf_issue(sf, "mc.report", &read, 1, NULL, 0, TAG_REPORT)) != 0)
        return rc;
    spm_sf_done(sf);
    return 0;
}

/*  Every SI's commit comes here; only the report's matters. */
static void mc_commit(spm_sf_t *sf, const spm_result_t *r)
{
    const mc_args_t *a = spm_sf_state(sf);
    if (r->kind != SPM_RESULT_SI || r->tag != TAG_REPORT)
        return;
    if (count_validate(r->reply, r->reply_len) != 0 ||
        get64((const unsigned char *)r->reply + 8) != a->samples) {
        spm_sf_fail(sf, SPM_EFORMAT, "montecarlo: the report's count is malformed");
        return;
    }
    uint64_t hits = get64(r->reply);
    char text[160];
    int n = snprintf(text, sizeof text,
                     "pi %.10f from %" PRIu64 " samples (%" PRIu64 " inside, seed %" PRIu64 ")\n",
                     4.0 * (double)hits / (double)a->samples, a->samples, hits, a->seed);
    if (spm_sf_set_result(sf, text, (size_t)n) != 0)
        spm_sf_fail(sf, SPM_ENOMEM, "montecarlo: out of memory");
}

static void mc_finish(spm_sf_t *sf)
{
    free(spm_sf_state(sf));
    spm_sf_set_state(sf, NULL);
}

static const spm_sf_class_t mc_class = {
    .name = "montecarlo", .start = mc_start, .commit = mc_commit, .finish = mc_finish};

SPM_CONSTRUCTOR(montecarlo)
{
    spm_sdb_type_register(&(spm_sdb_type_t){.name = "mc.count",
                                            .validate = count_validate,
                                            .merge = count_merge,
                                            .summary = count_summary});
    spm_opcode_register(&(spm_opcode_t){.name = "mc.sample", .exec = sample_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "mc.report", .exec = report_exec});
    spm_program_register(&(spm_program_t){.name = "montecarlo", .root = &mc_class});
}
