/*  =========================================================================
    gen - `spm gen matrix`: a seeded random matrix in Matrix Market format

    Each stored entry (column by column; for symmetric files the lower
    triangle, for skew-symmetric the strict lower triangle) is non-zero
    with probability --density. The walk skips ahead by geometric gaps, so
    a sparse 100000 x 100000 matrix costs its entries, not its area. The
    same seed gives the same file on every machine. The walk runs twice with
    the same seed, first to count, so the size line is exact and the output
    can be a pipe.
    =========================================================================
*/
#include "programs/matmul/cmd.h"
#include "isa/core/rng.h"
#include "base/textio.h"
#include "isa/matrix/mmio.h"
#include "base/cli.h"
#include "spm/spm.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: spm gen matrix --rows M --cols N [options] -o FILE\n"
    "\n"
    "Writes a random M x N matrix in Matrix Market format (FILE '-' is stdout).\n"
    "\n"
    "options:\n"
    "  -r, --rows M        rows, 1 to 2^31 (required)\n"
    "  -c, --cols N        columns, 1 to 2^31 (default: M)\n"
    "  -d, --density D     fraction of stored entries that are non-zero, 0 to 1\n"
    "                      (default 1: dense)\n"
    "  -s, --seed S        seed (default 1): the same seed gives the same file\n"
    "  -f, --format F      coordinate (default) or array\n"
    "      --field F       real (default: uniform in [-1, 1)), integer (-9..9),\n"
    "                      or pattern (coordinate only)\n"
    "      --symmetry S    general (default), symmetric or skew-symmetric\n"
    "                      (square only; the lower triangle is written)\n"
    "  -o, --output FILE   where to write (required)\n"
    "      --sync          make the file durable before returning (sync it and\n"
    "                      its directory); without it a crash of the machine\n"
    "                      soon after may lose it (a partial file is never seen)\n"
    "  -h, --help          this text\n";

typedef struct {
    spm_mmio_header_t h; /* what to write */
    double density;      /* probability of a non-zero */
    uint64_t seed;
    int sync; /* --sync: the file made durable */
} gen_t;

/*  A non-zero value for the field. */
static double value(spm_rng_t *rng, spm_mmio_field_t field)
{
    if (field == SPM_MMIO_PATTERN)
        return 1.0;
    if (field == SPM_MMIO_INTEGER)
        return (double)(1 + spm_rng_below(rng, 9)) * (spm_rng_below(rng, 2) ? 1 : -1);
    double v;
    do
        v = 2.0 * spm_rng_uniform(rng) - 1.0;
    while (v == 0.0);
    return v;
}

/*  Gap to the next non-zero among the stored entries (geometric). */
static uint64_t gap(spm_rng_t *rng, double density)
{
    if (density >= 1.0)
        return 0;
    double g = floor(log1p(-spm_rng_uniform(rng)) / log1p(-density));
    return g > 1e18 ? UINT64_MAX / 2 : (uint64_t)g;
}

/*  Puts entry (I, J, V) when W is set; counts it into *N when it is a
    non-zero. */
static int emit(spm_mmio_writer_t *w, uint64_t i, uint64_t j, double v, uint64_t *n)
{
    *n += v != 0.0;
    return w ? spm_mmio_writer_put(w, i, j, v) : 0;
}

/*  Walks the stored entries of G column by column; with W writes them
    (coordinate files: the non-zeros only), and counts the non-zeros into
    *COUNT. */
static int walk(const gen_t *g, spm_mmio_writer_t *w, uint64_t *count)
{
    spm_rng_t rng;
    spm_rng_seed(&rng, g->seed);
    const spm_mmio_header_t *h = &g->h;
    uint64_t n = 0, skip = g->density > 0.0 ? gap(&rng, g->density) : UINT64_MAX;
    int rc = 0;
    for (uint64_t j = 0; j < h->cols && rc == 0; j++) {
        uint64_t i = h->symmetry == SPM_MMIO_GENERAL ? 0 : j + (h->symmetry == SPM_MMIO_SKEW);
        while (i < h->rows && rc == 0) {
            if (h->format == SPM_MMIO_ARRAY && skip > 0) { /* array: zeros are stored */
                skip -= skip != UINT64_MAX;
                rc = emit(w, i++, j, 0.0, &n);
                continue;
            }
            if (skip >= h->rows - i) { /* no non-zero left in this column */
                skip -= skip != UINT64_MAX ? h->rows - i : 0;
                break;
            }
            i += skip;
            rc = emit(w, i++, j, value(&rng, h->field), &n);
            skip = gap(&rng, g->density);
        }
    }
    *count = n;
    return rc;
}

static int generate(const gen_t *g, const char *path)
{
    spm_mmio_header_t h = g->h;
    uint64_t n = 0;
    int rc = walk(g, NULL, &n);
    if (rc != 0)
        return rc;
    h.entries = n;
    spm_outfile_t *out = spm_outfile_open(path);
    if (!out)
        return SPM_EIO;
    spm_outfile_set_sync(out, g->sync);
    spm_mmio_writer_t *w = spm_mmio_writer_open(spm_outfile_stream(out), &h);
    rc = w ? walk(g, w, &n) : SPM_EIO;
    if (w) {
        int crc = spm_mmio_writer_close(&w);
        rc = rc ? rc : crc;
    }
    if (rc != 0) {
        rc = spm_outfile_failure(out, rc); /* "A.mtx: No space left on device" */
        spm_outfile_abort(&out);
        return rc;
    }
    return spm_outfile_commit(&out);
}

static int lookup(const char *option, const char *s, const char *(*name)(int), int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, name(i)) == 0) {
            *out = i;
            return 0;
        }
    return spm_error(SPM_EINVAL, "%s: '%s' is not valid", option, s);
}

static const char *format_name(int i)
{
    return spm_mmio_format_name((spm_mmio_format_t)i);
}

static const char *field_name(int i)
{
    return spm_mmio_field_name((spm_mmio_field_t)i);
}

static const char *symmetry_name(int i)
{
    return spm_mmio_symmetry_name((spm_mmio_symmetry_t)i);
}

int spm_cmd_gen_matrix(int argc, char **argv)
{
    enum { OPT_FIELD = 1, OPT_SYMMETRY, OPT_SYNC };
    static const struct option longopts[] = {{"rows", required_argument, 0, 'r'},
                                             {"cols", required_argument, 0, 'c'},
                                             {"density", required_argument, 0, 'd'},
                                             {"seed", required_argument, 0, 's'},
                                             {"format", required_argument, 0, 'f'},
                                             {"field", required_argument, 0, OPT_FIELD},
                                             {"symmetry", required_argument, 0, OPT_SYMMETRY},
                                             {"output", required_argument, 0, 'o'},
                                             {"sync", no_argument, 0, OPT_SYNC},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    gen_t g = {.density = 1.0, .seed = 1};
    const char *out = NULL;
    long rows = 0, cols = 0, seed;
    int c, rc = 0, e = 0;
    while ((c = getopt_long(argc, argv, "r:c:d:s:f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            rc = spm_parse_long("--rows", optarg, 1, 1L << 31, &rows);
            break;
        case 'c':
            rc = spm_parse_long("--cols", optarg, 1, 1L << 31, &cols);
            break;
        case 'd':
            rc = spm_parse_double("--density", optarg, 0.0, 1.0, &g.density);
            break;
        case 's':
            rc = spm_parse_long("--seed", optarg, 0, INT64_MAX, &seed);
            g.seed = (uint64_t)seed;
            break;
        case 'f':
            rc = lookup("--format", optarg, format_name, 2, &e);
            g.h.format = (spm_mmio_format_t)e;
            break;
        case OPT_FIELD:
            rc = lookup("--field", optarg, field_name, 3, &e);
            g.h.field = (spm_mmio_field_t)e;
            break;
        case OPT_SYMMETRY:
            rc = lookup("--symmetry", optarg, symmetry_name, 3, &e);
            g.h.symmetry = (spm_mmio_symmetry_t)e;
            break;
        case 'o':
            out = optarg;
            break;
        case OPT_SYNC:
            g.sync = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            return spm_cli_usage("gen matrix", "bad option");
        }
        if (rc != 0)
            return spm_cli_usage("gen matrix", "%s", spm_error_detail());
    }
    if (optind != argc)
        return spm_cli_usage("gen matrix", "unexpected argument '%s'", argv[optind]);
    if (!rows || !out)
        return spm_cli_usage("gen matrix", "--rows and -o are required");
    g.h.rows = (uint64_t)rows;
    g.h.cols = (uint64_t)(cols ? cols : rows);
    if (g.h.symmetry != SPM_MMIO_GENERAL && g.h.rows != g.h.cols)
        return spm_cli_usage("gen matrix", "a %s matrix must be square",
                             spm_mmio_symmetry_name(g.h.symmetry));
    if (g.h.format == SPM_MMIO_ARRAY && g.h.field == SPM_MMIO_PATTERN)
        return spm_cli_usage("gen matrix", "an array file cannot be a pattern");
    rc = generate(&g, out);
    return rc != 0 ? spm_cli_fail("gen matrix", rc) : 0;
}
