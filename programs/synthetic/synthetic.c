/*  =========================================================================
    synthetic - the load-balancing workload of the SPM dissertation (ch. 6)

    `spm run synthetic` issues SIs whose work is drawn from a distribution
    (fixed, uniform, exponential, bimodal). The work is real CPU spinning,
    measured on the thread's CPU clock, so a loaded node really is slower;
    --sleep makes it wall-clock sleep instead. --sfs K splits the SIs into K
    super-functions run one after another, each ending in a barrier: the
    structure the dissertation's imbalance model (equation 6.4) describes,
    with n_i = sis / K SIs per SF. Fixed 0 gives null SIs, which measure the
    dispatch rate and the management overhead. --bytes B adds data: every SI
    writes a block of B bytes, and the SIs of each later SF read blocks of
    the one before, so blocks move between nodes through the caches; every
    byte read is checked, and the SF checks each SI read the blocks it was
    given.
    =========================================================================
*/
#include "programs/synthetic/cmd.h"
#include "isa/core/codec.h"
#include "isa/core/rng.h"
#include "base/cli.h"
#include "vm/client/session.h"
#include "spm/spm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { DIST_FIXED = 0, DIST_UNIFORM, DIST_EXP, DIST_BIMODAL };

typedef struct {
    uint64_t sis;   /* SIs in all */
    uint32_t sfs;   /* sequential SFs (barriers) */
    uint32_t dist;  /* DIST_* */
    double a, b, p; /* distribution parameters, microseconds (p: bimodal share of b) */
    uint32_t sleep; /* sleep instead of spinning */
    uint64_t seed;
    uint64_t bytes; /* each SI writes a block of this many bytes (0: no data) */
    uint32_t reads; /* SIs after the first stage read this many blocks of the stage before */
} syn_args_t;

typedef struct {
    syn_args_t args;
    spm_rng_t rng;
    uint32_t stage;    /* SF being run, from 0 */
    uint64_t in_stage; /* SIs of this stage not yet committed */
    uint64_t work_us;  /* work issued so far */
    uint8_t *seen;     /* one bit per SI of the stage: committed already */
    spm_sdb_t *blocks; /* blocks written by the stage before (data runs) */
    spm_sdb_t *next;   /* blocks this stage writes */
    uint64_t nblocks;  /* entries in blocks */
    uint64_t *expect;  /* per SI of this stage: the checksum it must reply */
    uint64_t checksum; /* sum of all replies, the job's result */
} syn_state_t;

#define PARAMS_LEN 25 /* work_us, sleep flag, output bytes, output seed */

/* ------------------------------------------------------ the data blocks */

/*  A "syn.block" is its seed, its payload length, then the payload, each
    byte a function of the seed and its position: any byte changed on the
    way through caches and networks is detected by the reader. */
static unsigned char payload_byte(uint64_t seed, uint64_t j)
{
    return (unsigned char)((seed * 31u + j * 7u + (j >> 8)) & 0xffu);
}

static int block_validate(const void *data, size_t len)
{
    if (len < 16 || spm_le64((const unsigned char *)data + 8) != len - 16)
        return SPM_EFORMAT;
    return 0;
}

/*  Checks a block's payload against its seed; returns 0 or SPM_EFORMAT. */
static int block_verify(const unsigned char *p, size_t len, uint64_t *seed)
{
    if (block_validate(p, len) != 0)
        return SPM_EFORMAT;
    *seed = spm_le64(p);
    for (size_t j = 0; j < len - 16; j++)
        if (p[16 + j] != payload_byte(*seed, j))
            return SPM_EFORMAT;
    return 0;
}

static void block_summary(const void *data, size_t len, char *buf, size_t size)
{
    (void)data;
    snprintf(buf, size, "synthetic block of %zu bytes", len);
}

/* ------------------------------------------------------------- the SI */

static uint64_t thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*  Operands: any number of R blocks, then optionally one W block. Replies
    with the sum of the seeds it read, after checking every byte. */
static int work_exec(spm_si_ctx_t *ctx)
{
    size_t len, n = spm_si_noperands(ctx);
    const unsigned char *p = spm_si_params(ctx, &len);
    if (len != PARAMS_LEN)
        return spm_error(SPM_EINVAL, "syn.work: malformed parameters");
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        const void *in;
        size_t inlen;
        uint64_t seed;
        if (spm_si_mode(ctx, i) != SPM_R)
            continue;
        if (spm_si_input(ctx, i, &in, &inlen) != 0 || block_verify(in, inlen, &seed) != 0)
            return spm_error(SPM_EFORMAT, "syn.work: operand %zu arrived corrupted", i);
        sum += seed;
    }
    uint64_t us = spm_le64(p);
    if (p[8]) {
        struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
        nanosleep(&ts, NULL);
    } else {
        uint64_t end = thread_cpu_us() + us;
        volatile double x = 1.0;
        while (us && thread_cpu_us() < end)
            for (int i = 0; i < 1000; i++)
                x = x * 1.0000001 + 1e-9;
    }
    if (n > 0 && spm_si_mode(ctx, n - 1) == SPM_W) {
        uint64_t bytes = spm_le64(p + 9), seed = spm_le64(p + 17);
        unsigned char *out = malloc(16 + bytes);
        if (!out)
            return SPM_ENOMEM;
        spm_put_le64(out, seed);
        spm_put_le64(out + 8, bytes);
        for (uint64_t j = 0; j < bytes; j++)
            out[16 + j] = payload_byte(seed, j);
        spm_si_output(ctx, n - 1, out, 16 + bytes);
    }
    unsigned char reply[8];
    spm_put_le64(reply, sum);
    return spm_si_reply(ctx, reply, sizeof reply);
}

/* -------------------------------------------------------------- the SF */

static double draw_us(syn_state_t *st)
{
    const syn_args_t *a = &st->args;
    switch (a->dist) {
    case DIST_UNIFORM:
        return a->a + (a->b - a->a) * spm_rng_uniform(&st->rng);
    case DIST_EXP:
        return spm_rng_exponential(&st->rng, a->a);
    case DIST_BIMODAL:
        return spm_rng_uniform(&st->rng) < a->p ? a->b : a->a;
    default:
        return a->a;
    }
}

/*  The seed of the block SI I of STAGE writes. */
static uint64_t block_seed(uint32_t stage, uint64_t i)
{
    return (uint64_t)stage * 1000003u + i + 1;
}

/*  Issues the SIs of the current stage. */
static int issue_stage(spm_sf_t *sf, syn_state_t *st)
{
    const syn_args_t *a = &st->args;
    uint64_t per = a->sis / a->sfs, n = per + (st->stage + 1 == a->sfs ? a->sis % a->sfs : 0);
    unsigned char params[PARAMS_LEN];
    params[8] = (unsigned char)(a->sleep != 0);
    spm_put_le64(params + 9, a->bytes);
    st->in_stage = n;
    free(st->seen);
    free(st->expect);
    st->seen = calloc(n / 8 + 1, 1);
    st->expect = calloc(n + 1, sizeof *st->expect);
    st->next = a->bytes ? calloc(n + 1, sizeof *st->next) : NULL;
    if (!st->seen || !st->expect || (a->bytes && !st->next))
        return SPM_ENOMEM;
    spm_operand_t ops[65];
    for (uint64_t i = 0; i < n; i++) {
        double us = draw_us(st);
        uint64_t w = us > 0 ? (uint64_t)(us + 0.5) : 0;
        size_t nops = 0;
        st->work_us += w;
        spm_put_le64(params, w);
        for (uint32_t k = 0; st->nblocks && k < a->reads; k++) {
            uint64_t pick = spm_rng_below(&st->rng, st->nblocks);
            ops[nops++] = (spm_operand_t){st->blocks[pick], SPM_R, 0};
            st->expect[i] += block_seed(st->stage - 1, pick);
        }
        if (a->bytes) {
            if (!(st->next[i] = spm_sdb_new(sf, "syn.block")))
                return SPM_ENOMEM;
            ops[nops++] = (spm_operand_t){st->next[i], SPM_W, 0};
            spm_put_le64(params + 17, block_seed(st->stage, i));
        }
        int rc = spm_sf_issue(sf, "syn.work", ops, nops, params, sizeof params, i);
        if (rc != 0)
            return rc;
    }
    free(st->blocks);
    st->blocks = st->next;
    st->nblocks = a->bytes ? n : 0;
    st->next = NULL;
    if (n == 0)
        spm_sf_done(sf);
    return 0;
}

static int syn_start(spm_sf_t *sf, const void *args, size_t len)
{
    syn_state_t *st = calloc(1, sizeof *st);
    if (!st)
        return SPM_ENOMEM;
    spm_sf_set_state(sf, st);
    spm_cursor_t c = spm_cursor(args, len);
    syn_args_t *a = &st->args;
    if (spm_get_u64(&c, &a->sis) || spm_get_u32(&c, &a->sfs) || spm_get_u32(&c, &a->dist) ||
        spm_get_f64(&c, &a->a) || spm_get_f64(&c, &a->b) || spm_get_f64(&c, &a->p) ||
        spm_get_u32(&c, &a->sleep) || spm_get_u64(&c, &a->seed) || spm_get_u64(&c, &a->bytes) ||
        spm_get_u32(&c, &a->reads) || a->sfs == 0 || a->reads > 64)
        return spm_error(SPM_EINVAL, "synthetic: malformed arguments");
    spm_rng_seed(&st->rng, a->seed);
    spm_sf_expect(sf, a->sis);
    return issue_stage(sf, st);
}

static void syn_commit(spm_sf_t *sf, const spm_result_t *r)
{
    syn_state_t *st = spm_sf_state(sf);
    /* The runtime promises each SI's result exactly once, and the bytes it
       read intact; check both. */
    if (st->seen[r->tag / 8] & (1u << (r->tag % 8))) {
        spm_sf_fail(sf, SPM_EEXEC, "SI %llu of stage %u committed twice",
                    (unsigned long long)r->tag, st->stage);
        return;
    }
    st->seen[r->tag / 8] |= (uint8_t)(1u << (r->tag % 8));
    uint64_t got = r->reply_len == 8 ? spm_le64(r->reply) : ~0ull;
    if (got != st->expect[r->tag]) {
        spm_sf_fail(sf, SPM_EEXEC, "SI %llu of stage %u read the wrong blocks",
                    (unsigned long long)r->tag, st->stage);
        return;
    }
    st->checksum += got;
    if (--st->in_stage > 0)
        return;
    if (++st->stage < st->args.sfs) {
        int rc = issue_stage(sf, st);
        if (rc != 0)
            spm_sf_fail(sf, rc, "synthetic: %s", spm_strerror(rc));
        return;
    }
    unsigned char out[16];
    spm_put_le64(out, st->work_us);
    spm_put_le64(out + 8, st->checksum);
    spm_sf_set_result(sf, out, sizeof out);
    spm_sf_done(sf);
}

static void syn_finish(spm_sf_t *sf)
{
    syn_state_t *st = spm_sf_state(sf);
    if (st) {
        free(st->seen);
        free(st->blocks);
        free(st->next);
        free(st->expect);
    }
    free(st);
}

static const spm_sf_class_t syn_class = {
    .name = "synthetic", .start = syn_start, .commit = syn_commit, .finish = syn_finish};

/* ------------------------------------------------------- the command */

/*  Parses "20ms", "500us", "1.5s" or a bare number (in DEFAULT_UNIT us). */
static int parse_duration(const char *s, double default_unit, double *us, double *unit)
{
    char *end;
    double v = strtod(s, &end);
    double u = default_unit;
    if (end == s || v < 0)
        return SPM_EINVAL;
    if (strcmp(end, "us") == 0)
        u = 1;
    else if (strcmp(end, "ms") == 0)
        u = 1000;
    else if (strcmp(end, "s") == 0)
        u = 1e6;
    else if (*end)
        return SPM_EINVAL;
    *us = v * u;
    if (unit && *end)
        *unit = u;
    return 0;
}

/*  Parses a --work spec into A. Returns 0 or SPM_EINVAL with detail. */
static int parse_work(const char *spec, syn_args_t *a)
{
    char buf[128], *parts[5];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save, *tok = strtok_r(buf, ":", &save); tok && n < 5;
         tok = strtok_r(NULL, ":", &save))
        parts[n++] = tok;
    static const char *names[] = {"fixed", "uniform", "exp", "bimodal"};
    static const int nargs[] = {1, 2, 1, 3};
    int kind = -1;
    for (int k = 0; k < 4; k++)
        if (n > 0 && strcmp(parts[0], names[k]) == 0)
            kind = k;
    if (kind < 0 || n - 1 != nargs[kind])
        goto bad;
    /* A number without a unit takes the unit of the last one that has one. */
    double unit = 1000, vals[2] = {0, 0};
    int ndur = kind == DIST_BIMODAL ? 2 : nargs[kind];
    for (int i = ndur; i >= 1; i--) {
        double dummy;
        parse_duration(parts[i], unit, &dummy, &unit);
    }
    for (int i = 0; i < ndur; i++)
        if (parse_duration(parts[i + 1], unit, &vals[i], NULL) != 0)
            goto bad;
    a->dist = (uint32_t)kind;
    a->a = vals[0];
    a->b = vals[1];
    if (kind == DIST_BIMODAL) {
        char *end;
        a->p = strtod(parts[3], &end);
        if (*end || a->p < 0 || a->p > 1)
            goto bad;
    }
    if (kind == DIST_UNIFORM && a->b < a->a)
        goto bad;
    return 0;
bad:
    return spm_error(SPM_EINVAL,
                     "--work: '%s' is not fixed:D, uniform:LO:HI, exp:MEAN or bimodal:SHORT:LONG:P "
                     "(durations like 5ms, 200us, 1s)",
                     spec);
}

static const char syn_help[] =
    "usage: spm run synthetic [OPTIONS]\n\n"
    "Runs SIs of synthetic work: the dissertation's load-balancing workload.\n\n"
    "  --sis N             number of SIs (default 1000)\n"
    "  --work SPEC         work per SI: fixed:D, uniform:LO:HI, exp:MEAN or\n"
    "                      bimodal:SHORT:LONG:P (share P of LONG); durations like\n"
    "                      20ms, 500us, 1s (default fixed:1ms; fixed:0 = null SIs)\n"
    "  --sfs K             split the SIs into K super-functions run one after\n"
    "                      another, each ending in a barrier (default 1)\n"
    "  --sleep             sleep instead of spinning the CPU\n"
    "  --bytes N           each SI writes a block of N bytes, and every SI after the\n"
    "                      first SF reads --reads blocks of the SF before it: data\n"
    "                      that moves between nodes (default 0: no data)\n"
    "  --reads R           blocks each SI reads with --bytes (default 2, at most 64)\n"
    "  --seed N            random seed (default 1)\n";

int spm_cmd_run_synthetic(int argc, char **argv)
{
    static const struct option opts[] = {{"sis", required_argument, 0, 'n'},
                                         {"work", required_argument, 0, 'w'},
                                         {"sfs", required_argument, 0, 'k'},
                                         {"sleep", no_argument, 0, 'S'},
                                         {"bytes", required_argument, 0, 'b'},
                                         {"reads", required_argument, 0, 'r'},
                                         {"seed", required_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         SPM_RUN_LONGOPTS,
                                         {0, 0, 0, 0}};
    syn_args_t a = {.sis = 1000, .sfs = 1, .dist = DIST_FIXED, .a = 1000, .seed = 1, .reads = 2};
    spm_run_opts_t o;
    spm_run_opts_init(&o);
    int ch, rc;
    long v;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        rc = 0;
        switch (ch) {
        case 'n':
            rc = spm_parse_long("--sis", optarg, 0, 1000000000, &v);
            a.sis = (uint64_t)v;
            break;
        case 'w':
            rc = parse_work(optarg, &a);
            break;
        case 'k':
            rc = spm_parse_long("--sfs", optarg, 1, 1000000, &v);
            a.sfs = (uint32_t)v;
            break;
        case 'S':
            a.sleep = 1;
            break;
        case 'b':
            rc = spm_parse_long("--bytes", optarg, 0, 256L << 20, &v);
            a.bytes = (uint64_t)v;
            break;
        case 'r':
            rc = spm_parse_long("--reads", optarg, 0, 64, &v);
            a.reads = (uint32_t)v;
            break;
        case 's':
            rc = spm_parse_long("--seed", optarg, 0, INT64_MAX, &v);
            a.seed = (uint64_t)v;
            break;
        case 'h':
            printf("%s%s", syn_help, spm_run_opts_help);
            return 0;
        case '?':
            return spm_cli_usage("run synthetic", "invalid option");
        default:
            rc = spm_run_opts_set(&o, ch, optarg);
            break;
        }
        if (rc != 0)
            return spm_cli_fail("run synthetic", rc);
    }
    if (optind < argc)
        return spm_cli_usage("run synthetic", "unexpected argument '%s'", argv[optind]);
    spm_buf_t b = {0};
    spm_buf_put_u64(&b, a.sis);
    spm_buf_put_u32(&b, a.sfs);
    spm_buf_put_u32(&b, a.dist);
    spm_buf_put_f64(&b, a.a);
    spm_buf_put_f64(&b, a.b);
    spm_buf_put_f64(&b, a.p);
    spm_buf_put_u32(&b, a.sleep);
    spm_buf_put_u64(&b, a.seed);
    spm_buf_put_u64(&b, a.bytes);
    spm_buf_put_u32(&b, a.reads);
    void *args;
    size_t len;
    if ((rc = spm_buf_take(&b, &args, &len)) != 0)
        return spm_cli_fail("run synthetic", rc);
    spm_session_t *s;
    if ((rc = spm_session_open(&o, &s)) != 0) {
        free(args);
        return spm_cli_fail("run synthetic", rc);
    }
    void *result = NULL;
    size_t rlen = 0;
    rc = spm_session_run(s, "synthetic", args, len, &result, &rlen);
    free(args);
    if (rc == 0 && rlen == 16 && a.bytes && !o.quiet && !o.json)
        printf("  checksum of the blocks read: %llu\n",
               (unsigned long long)spm_le64((unsigned char *)result + 8));
    free(result);
    int status = rc == 0 ? 0 : spm_cli_fail("run synthetic", rc);
    spm_session_destroy(&s);
    return status;
}

SPM_CONSTRUCTOR(synthetic)
{
    spm_opcode_register(&(spm_opcode_t){.name = "syn.work", .exec = work_exec});
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = "syn.block", .validate = block_validate, .summary = block_summary});
    spm_program_register(&(spm_program_t){.name = "synthetic", .root = &syn_class});
}
