/*  mandel - a Mandelbrot image in tiles of --rows rows, in three stages (docs/PROGRAMMING.md):
    mb.tile counts a tile's iterations; mb.hist adds its cumulative histogram into one block (ACC:
    the VM adds them up); mb.shade equalises a tile by the sum (the set black). A PGM on stdout. */
#include "spm.h"
#include <stdlib.h>
#include <string.h>
SPM_PLUGIN;

typedef struct {
    int64_t width, height, rows, iter, tile; /* tile: the one an SI works on */
    double x, y, span;                       /* the centre, the width on the real axis */
} mb_t;
static const spm_argdef_t defs[] = {
    {"--width", SPM_ARG_INT, offsetof(mb_t, width), 1, 16384, "1024", "pixels across"},
    {"--height", SPM_ARG_INT, offsetof(mb_t, height), 1, 16384, "768", "pixels down"},
    {"--rows", SPM_ARG_INT, offsetof(mb_t, rows), 1, 1024, "32", "rows per tile (an SI each)"},
    {"--iter", SPM_ARG_INT, offsetof(mb_t, iter), 1, 1 << 20, "256", "most iterations a pixel"},
    {"--x", SPM_ARG_REAL, offsetof(mb_t, x), -4, 4, "-0.5", "the centre's real part"},
    {"--y", SPM_ARG_REAL, offsetof(mb_t, y), -4, 4, "0", "the centre's imaginary part"},
    {"--span", SPM_ARG_REAL, offsetof(mb_t, span), 1e-12, 16, "3", "the real axis shown"}};

static int tile_exec(spm_si_ctx_t *ctx) /* 0: the tile's counts (W) */
{
    mb_t m; /* an SI's parameters: the geometry and its tile, as mb_start issued them */
    memcpy(&m, spm_si_params(ctx, &(size_t){0}), sizeof m);
    int64_t y0 = m.tile * m.rows, n = m.width * (m.height - y0 < m.rows ? m.height - y0 : m.rows);
    int64_t *v = calloc((size_t)n + 1, sizeof *v); /* SPM_I64: native on every spm machine */
    for (int64_t i = 0; v && i < n; i++) {
        double cr = m.x + ((double)(i % m.width) + 0.5 - m.width / 2.0) * m.span / m.width;
        double ci = m.y - ((double)(y0 + i / m.width) + 0.5 - m.height / 2.0) * m.span / m.width;
        for (double zr = 0, zi = 0, t; v[i] < m.iter && zr * zr + zi * zi <= 4; v[i]++)
            t = zr * zr - zi * zi + cr, zi = 2 * zr * zi + ci, zr = t;
    }
    return v ? spm_si_output(ctx, 0, v, (size_t)n * sizeof *v) : SPM_ENOMEM;
}

static int hist_exec(spm_si_ctx_t *ctx) /* 0: the tile's counts (R); 1: the histogram (ACC) */
{
    mb_t m;
    size_t n;
    const int64_t *v;
    memcpy(&m, spm_si_params(ctx, &n), sizeof m);
    if (spm_si_i64(ctx, 0, &v, &n) != 0)
        return SPM_EINVAL;
    int64_t *h = calloc((size_t)m.iter, sizeof *h); /* h[k]: the pixels that took at most k */
    for (size_t i = 0; h && i < n; i++)
        if (v[i] >= 0 && v[i] < m.iter) /* escaped */
            h[v[i]]++;
    for (int64_t k = 1; h && k < m.iter; k++)
        h[k] += h[k - 1];
    return h ? spm_si_output(ctx, 1, h, (size_t)m.iter * sizeof *h) : SPM_ENOMEM;
}

static int shade_exec(spm_si_ctx_t *ctx) /* 0: the counts (R); 1: the histogram (R); 2: grey (W) */
{
    mb_t m;
    size_t n, hn;
    const int64_t *v, *h;
    memcpy(&m, spm_si_params(ctx, &n), sizeof m);
    if (spm_si_i64(ctx, 0, &v, &n) || spm_si_i64(ctx, 1, &h, &hn) || hn != (size_t)m.iter)
        return spm_error(SPM_EFORMAT, "wants a tile and a histogram of %lld", (long long)m.iter);
    unsigned char *grey = malloc(n + 1);
    for (size_t i = 0; grey && i < n; i++)
        grey[i] = v[i] < 0 || v[i] >= m.iter ? 0 : (uint8_t)(255 * h[v[i]] / h[m.iter - 1]);
    return grey ? spm_si_output(ctx, 2, grey, n) : SPM_ENOMEM;
}

/*  The root SF: ARGS the geometry; its result the ids of the shaded tiles, in order. */
static int mb_start(spm_sf_t *sf, const void *args, size_t len)
{
    static const char *const stage[] = {"mb.tile", "mb.hist", "mb.shade"};
    mb_t m;
    if (len != sizeof m)
        return spm_error(SPM_EINVAL, "wants the image's geometry");
    memcpy(&m, args, sizeof m);
    int64_t tiles = (m.height + m.rows - 1) / m.rows; /* id: the tiles' counts, then grey */
    spm_sdb_t hist = spm_sdb_new(sf, SPM_I64), *id = calloc(2 * (size_t)tiles, sizeof *id);
    for (int64_t i = 0; id && i < 2 * tiles; i++)
        id[i] = spm_sdb_new(sf, i < tiles ? SPM_I64 : SPM_BYTES);
    int rc = id ? 0 : SPM_ENOMEM;
    for (int s = 0; s < 3; s++) /* every tile's stage s, then stage s + 1 */
        for (m.tile = 0; rc == 0 && m.tile < tiles; m.tile++) {
            spm_operand_t op[3] = {{id[m.tile], s ? SPM_R : SPM_W, 0},
                                   {hist, s == 1 ? SPM_ACC : SPM_R, 0},
                                   {id[tiles + m.tile], SPM_W, SPM_NOCACHE}};
            spm_sf_label(sf, "tile %lld", (long long)m.tile + 1);
            rc = spm_sf_issue(sf, stage[s], op, (size_t)s + 1, &m, sizeof m, 0);
        }
    spm_sf_done(sf);
    rc = rc ? rc : spm_sf_set_result(sf, id + tiles, (size_t)tiles * sizeof *id);
    return free(id), rc;
}

/*  The command side: parse, run, write the header and the grey tiles as they come. */
static int mb_main(spm_client_t *c, int argc, char **argv)
{
    mb_t m = {0};
    void *ids = NULL;
    size_t len = 0;
    int rc = spm_args_parse(defs, 7, argc - 1, (const char *const *)argv + 1, &m);
    if (rc == SPM_ARGS_HELP) {
        char *help = spm_args_usage(argv[0], "Writes a Mandelbrot image (PGM) on stdout.", defs, 7);
        return fputs(help ? help : "", stdout), free(help), 0;
    }
    if (rc == 0 && (rc = spm_client_run(c, &m, sizeof m, &ids, &len)) == 0) {
        printf("P5\n%lld %lld\n255\n", (long long)m.width, (long long)m.height);
        rc = spm_client_write(c, ids, len / sizeof(spm_sdb_t), stdout);
    }
    return free(ids), rc;
}

static const spm_sf_class_t mb_root = {.name = "mandel", .start = mb_start};
SPM_CONSTRUCTOR(mandel)
{
    spm_opcode_register(&(spm_opcode_t){.name = "mb.tile", .exec = tile_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "mb.hist", .exec = hist_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "mb.shade", .exec = shade_exec});
    spm_program_register(&(spm_program_t){.name = "mandel", .root = &mb_root});
    spm_main_register(&(spm_main_t){.program = "mandel", .main = mb_main});
}
