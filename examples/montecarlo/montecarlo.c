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

    * The generator is spm's (spm_rng.h, installed with spm.h): xoshiro256**
      seeded by splitmix64. mix is its finalizer, spm_rng_mix.
    * Block b's generator is spm_rng_seed(mix(seed ^ mix(b + 1))): its four
      state words are the first four outputs of splitmix64 started there.
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
#include "spm_codec.h"
#include "spm_rng.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SPM_PLUGIN;

#define TAG_REPORT UINT64_MAX /* the mc.report SI; mc.sample SIs are tagged with their block */

/*  Counts the points of N draws from G that fall inside the circle. */
static uint64_t count_inside(spm_rng_t *g, uint64_t n)
{
    uint64_t hits = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = spm_rng_next(g);
        uint64_t x = 2 * (r >> 34) + 1, y = 2 * ((r >> 4) & 0x3fffffffu) + 1;
        hits += x * x + y * y < (1ull << 62);
    }
    return hits;
}

/* ----------------------------------------------------- the SDB type */

/*  An "mc.count" block is 16 bytes: hits, then samples, each a 64-bit
    little-endian integer, with hits <= samples. (The built-in type spm.i64
    would do, with the same merge; this one shows how a type is made.) */
#define COUNT_BYTES 16

static int count_validate(const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len != COUNT_BYTES || spm_le64(p) > spm_le64(p + 8))
        return SPM_EFORMAT;
    return 0;
}

/*  ACC merge: the sum of two counts. A is NULL (ALEN 0) for the first
    partial of an SDB that has no version yet. */
static int count_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                       size_t *outlen)
{
    if ((alen != 0 && count_validate(a, alen) != 0) || count_validate(b, blen) != 0)
        return spm_error(SPM_EFORMAT, "merge of malformed counts (%zu and %zu bytes)", alen, blen);
    unsigned char *m = malloc(COUNT_BYTES);
    if (!m)
        return SPM_ENOMEM;
    const unsigned char *pa = a, *pb = b;
    spm_put_le64(m, spm_le64(pb) + (alen ? spm_le64(pa) : 0));
    spm_put_le64(m + 8, spm_le64(pb + 8) + (alen ? spm_le64(pa + 8) : 0));
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
    snprintf(buf, size, "mc.count: %" PRIu64 " of %" PRIu64 " samples inside", spm_le64(p),
             spm_le64(p + 8));
}

/* ------------------------------------------------------------ the SIs */

/*  mc.sample: parameters seed, block and samples (24 bytes); one operand,
    the count, in mode ACC. Writes {hits, samples} as its partial. */
static int sample_exec(spm_si_ctx_t *ctx)
{
    size_t len;
    const unsigned char *p = spm_si_params(ctx, &len);
    if (len != 24 || spm_si_noperands(ctx) != 1 || spm_si_mode(ctx, 0) != SPM_ACC)
        return spm_error(SPM_EINVAL, "malformed parameters or operands");
    uint64_t n = spm_le64(p + 16);
    spm_rng_t g;
    spm_rng_seed(&g, spm_rng_mix(spm_le64(p) ^ spm_rng_mix(spm_le64(p + 8) + 1)));
    unsigned char *out = malloc(COUNT_BYTES);
    if (!out)
        return SPM_ENOMEM;
    spm_put_le64(out, count_inside(&g, n));
    spm_put_le64(out + 8, n);
    return spm_si_output(ctx, 0, out, COUNT_BYTES);
}

/*  mc.report: one operand, the count, in mode R. Replies with its bytes. */
static int report_exec(spm_si_ctx_t *ctx)
{
    const void *in;
    size_t len;
    if (spm_si_noperands(ctx) != 1 || spm_si_input(ctx, 0, &in, &len) != 0)
        return spm_error(SPM_EINVAL, "malformed operands");
    return spm_si_reply(ctx, in, len);
}

/* ------------------------------------------------------------- the SF */

typedef struct {
    int64_t samples;  /* points in all */
    int64_t blocks;   /* mc.sample SIs */
    const char *seed; /* of the generators (NULL: the job's) */
    uint64_t s;       /* that seed */
} mc_args_t;

/*  The options, parsed by spm_args_parse and printed by spm_args_usage. */
static const spm_argdef_t defs[] = {
    {"--samples", SPM_ARG_INT, offsetof(mc_args_t, samples), 1, 1e15, "10000000", "points in all"},
    {"--blocks", SPM_ARG_INT, offsetof(mc_args_t, blocks), 1, 65536, "64",
     "SIs the points are split into"},
    {"--seed", SPM_ARG_TEXT, offsetof(mc_args_t, seed), 0, 0, NULL,
     "seed of the generators (default: the job's seed)"}};
#define NDEFS (sizeof defs / sizeof defs[0])

/*  The root SF's start: issues every mc.sample SI, then the mc.report SI
    that reads their merged count, and is done issuing. Everything it does
    depends on its arguments and spm_sf_seed alone (deterministic). */
static int mc_start(spm_sf_t *sf, const void *args, size_t len)
{
    mc_args_t *a = calloc(1, sizeof *a);
    if (!a)
        return SPM_ENOMEM;
    spm_sf_set_state(sf, a); /* freed by mc_finish, whatever happens */
    const char *argv[16];
    size_t argc = spm_args(args, len, argv, 16);
    if (argc > 16)
        return spm_error(SPM_EINVAL, "%zu arguments (at most 16)", argc);
    int rc = spm_args_parse(defs, NDEFS, (int)argc, argv, a);
    if (rc == SPM_ARGS_HELP) {
        char *usage = spm_args_usage("montecarlo", "Estimates pi from random points.", defs, NDEFS);
        spm_sf_done(sf);
        rc = usage ? spm_sf_set_result(sf, usage, strlen(usage)) : SPM_ENOMEM;
        free(usage);
        return rc;
    }
    char *end = NULL;
    a->s = a->seed ? strtoull(a->seed, &end, 10) : spm_sf_seed(sf);
    if (rc == 0 && a->seed && (*a->seed < '0' || *a->seed > '9' || *end))
        rc = spm_error(SPM_EINVAL, "--seed: '%s' is not a whole number", a->seed);
    if (rc != 0)
        return rc;
    spm_sdb_t count = spm_sdb_new(sf, "mc.count");
    if (!count)
        return spm_error(SPM_ENOMEM, "cannot create the count SDB");
    uint64_t blocks = (uint64_t)a->blocks, samples = (uint64_t)a->samples;
    spm_sf_expect(sf, blocks + 2); /* the samples, the VM's merge, the report */
    spm_operand_t acc = {count, SPM_ACC, 0};
    for (uint64_t b = 0; b < blocks; b++) {
        unsigned char params[24];
        spm_put_le64(params, a->s);
        spm_put_le64(params + 8, b);
        spm_put_le64(params + 16, samples / blocks + (b < samples % blocks));
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
        spm_le64((const unsigned char *)r->reply + 8) != (uint64_t)a->samples) {
        spm_sf_fail(sf, SPM_EFORMAT, "montecarlo: the report's count is malformed");
        return;
    }
    uint64_t hits = spm_le64(r->reply);
    char text[160];
    int n = snprintf(text, sizeof text,
                     "pi %.10f from %" PRId64 " samples (%" PRIu64 " inside, seed %" PRIu64 ")\n",
                     4.0 * (double)hits / (double)a->samples, a->samples, hits, a->s);
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
