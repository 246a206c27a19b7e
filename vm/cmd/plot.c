/*  =========================================================================
    plot - `spm plot TRACE -o run.svg|png`: a picture of a traced run

    Reads a trace written by --trace (one event a line, our own format) and
    draws, with gnuplot, three panels: a Gantt chart of the IEUs (one lane
    each, one box per SI, coloured by opcode), the share of IEUs executing
    over time, and the breakdown of the IEUs' time into executing, waiting
    for data and idle.
    =========================================================================
*/
#include "vm/cmd/commands.h"
#include "base/cli.h"
#include "base/grow.h"
#include "base/proc.h"
#include "spm/spm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_OPCODES 16 /* colours; more opcodes share the last */
#define BINS 200       /* points of the utilisation curve */

typedef struct {
    double start, dur; /* seconds from the first event */
    unsigned ieu;
    int op; /* index into names */
    double wait;
} slice_t;

typedef struct {
    slice_t *v;
    size_t n, cap;
    char names[MAX_OPCODES][40];
    int nnames;
    unsigned max_ieu;
    double end; /* seconds, last slice end */
} run_t;

static int add_slice(run_t *r, const char *name, double ts, double dur, unsigned tid, double wait)
{
    if (spm_grow(&r->v, r->n, &r->cap, sizeof *r->v, 1024) != 0)
        return SPM_ENOMEM;
    int op = 0;
    while (op < r->nnames && strcmp(r->names[op], name) != 0)
        op++;
    if (op == r->nnames && r->nnames < MAX_OPCODES)
        snprintf(r->names[r->nnames++], sizeof r->names[0], "%s", name);
    if (op >= MAX_OPCODES)
        op = MAX_OPCODES - 1;
    r->v[r->n++] = (slice_t){ts / 1e6, dur / 1e6, tid, op, wait / 1e6};
    if (tid > r->max_ieu)
        r->max_ieu = tid;
    if ((ts + dur) / 1e6 > r->end)
        r->end = (ts + dur) / 1e6;
    return 0;
}

/*  Reads the slices of the trace at PATH. */
static int read_trace(const char *path, run_t *r)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    char line[1024];
    unsigned long lineno = 0;
    int rc = 0, header = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (strstr(line, "\"traceEvents\""))
            header = 1;
        if (!strstr(line, "\"ph\": \"X\""))
            continue;
        char name[40];
        double ts, dur, wait = 0;
        unsigned pid, tid;
        const char *w = strstr(line, "\"wait_us\": ");
        if (sscanf(line,
                   "{\"name\": \"%39[^\"]\", \"cat\": \"si\", \"ph\": \"X\", \"ts\": %lf, "
                   "\"dur\": %lf, \"pid\": %u, \"tid\": %u",
                   name, &ts, &dur, &pid, &tid) != 5) {
            rc = spm_error(SPM_EFORMAT, "%s:%lu: not a slice written by spm --trace", path, lineno);
            break;
        }
        if (w)
            wait = strtod(w + 11, NULL);
        rc = add_slice(r, name, ts, dur, tid, wait);
    }
    fclose(f);
    if (rc == 0 && (!header || r->n == 0))
        rc = spm_error(SPM_EFORMAT, "%s: no SI slices (not a trace written by spm --trace?)", path);
    return rc;
}

/*  Writes the data files and the gnuplot script into DIR. */
static int write_inputs(const run_t *r, const char *dir, const char *out, int svg)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/gantt.dat", dir);
    FILE *g = fopen(path, "w");
    snprintf(path, sizeof path, "%s/util.dat", dir);
    FILE *u = fopen(path, "w");
    snprintf(path, sizeof path, "%s/plot.gp", dir);
    FILE *p = fopen(path, "w");
    if (!g || !u || !p) {
        if (g)
            fclose(g);
        if (u)
            fclose(u);
        if (p)
            fclose(p);
        return spm_error(SPM_EIO, "%s: cannot write plot inputs", dir);
    }
    double busy = 0, wait = 0, span = r->end > 0 ? r->end : 1e-6;
    double bins[BINS] = {0}, width = span / BINS;
    for (size_t i = 0; i < r->n; i++) {
        const slice_t *s = &r->v[i];
        fprintf(g, "%.6f %u %.6f %d\n", s->start + s->dur / 2, s->ieu, s->dur / 2, s->op);
        busy += s->dur;
        wait += s->wait;
        for (int b = (int)(s->start / width); b < BINS && b * width < s->start + s->dur; b++) {
            double lo = b * width, hi = lo + width;
            double o =
                (s->start + s->dur < hi ? s->start + s->dur : hi) - (s->start > lo ? s->start : lo);
            if (o > 0)
                bins[b] += o;
        }
    }
    unsigned lanes = r->max_ieu + 1;
    for (int b = 0; b < BINS; b++)
        fprintf(u, "%.6f %.4f\n", (b + 0.5) * width, 100 * bins[b] / (width * lanes));
    double cap = span * lanes, idle = cap > busy + wait ? cap - busy - wait : 0;
    fprintf(p, "set terminal %s size 1200,900 font 'sans,11'\n",
            svg ? "svg dynamic background rgb 'white'" : "pngcairo");
    fprintf(p, "set output '%s'\n", out);
    fprintf(p, "set multiplot layout 3,1 title 'spm run: %zu SIs on %u IEUs in %.3f s'\n", r->n,
            lanes, span);
    fprintf(p, "set lmargin 12\nset rmargin 4\nset grid xtics\nunset key\n");
    fprintf(p, "set title 'IEUs (one box per SI, colour = opcode)'\nset ylabel 'IEU'\n");
    fprintf(p, "set yrange [-0.6:%u.6]\nset ytics 1\nset xrange [0:%.6f]\n", lanes - 1, span);
    static const char *colours[] = {"#3465a4", "#f57900", "#4e9a06", "#cc0000",
                                    "#75507b", "#c4a000", "#06989a", "#555753"};
    for (int k = 0; k < 8; k++)
        fprintf(p, "set linetype %d lc rgb '%s'\n", k + 1, colours[k]);
    fprintf(p, "set key outside right top\n");
    fprintf(p,
            "plot '%s/gantt.dat' using 1:2:3:(0.4):(int($4) %% 8 + 1) with boxxyerror fs solid "
            "0.85 noborder lc variable notitle",
            dir);
    for (int k = 0; k < r->nnames && k < 8; k++)
        fprintf(p, ", NaN with boxes fs solid lc %d title '%s'", k + 1, r->names[k]);
    fprintf(p, "\nunset key\n");
    fprintf(p, "set title 'IEUs executing over time'\nset ylabel '%%'\nset yrange [0:105]\n"
               "set ytics auto\nset xlabel 'seconds'\n");
    fprintf(p,
            "plot '%s/util.dat' using 1:2 with filledcurves x1 fs solid 0.4 lc rgb "
            "'#3465a4'\n",
            dir);
    fprintf(p, "unset xlabel\nset title 'Where the IEUs'' time went'\nset style data "
               "histograms\nset style fill solid 0.8\nset yrange [0:105]\nset xrange [-0.5:2.5]\n"
               "set xtics ('executing' 0, 'waiting for data' 1, 'idle' 2)\n");
    fprintf(p, "plot '-' using 1:2:xtic(3) with boxes lc rgb '#4e9a06', '' using "
               "1:2:(sprintf('%%.1f%%%%', $2)) with labels offset 0,1\n");
    for (int k = 0; k < 2; k++) {
        fprintf(p, "0 %.3f executing\n1 %.3f waiting\n2 %.3f idle\ne\n", 100 * busy / cap,
                100 * wait / cap, 100 * idle / cap);
    }
    fprintf(p, "unset multiplot\n");
    fclose(g);
    fclose(u);
    return fclose(p) == 0 ? 0 : spm_error(SPM_EIO, "%s: cannot write the plot script", dir);
}

int spm_cmd_plot(int argc, char **argv)
{
    const char *trace = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: spm plot TRACE -o FILE.svg|FILE.png\n\n"
                   "Draws a run traced with --trace: a Gantt chart of the IEUs, the share of\n"
                   "IEUs executing over time, and where their time went (executing, waiting\n"
                   "for data, idle). Needs gnuplot (Debian: gnuplot-nox).\n\n"
                   "  -o FILE             the picture: FILE.svg or FILE.png (required)\n");
            return 0;
        }
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!trace && argv[i][0] != '-')
            trace = argv[i];
        else
            return spm_cli_usage("plot", "unexpected argument '%s'", argv[i]);
    }
    if (!trace || !out)
        return spm_cli_usage("plot", "expected TRACE -o FILE.svg|FILE.png");
    size_t olen = strlen(out);
    int svg = olen > 4 && !strcmp(out + olen - 4, ".svg");
    if (!svg && !(olen > 4 && !strcmp(out + olen - 4, ".png")))
        return spm_cli_usage("plot", "the output must end in .svg or .png");
    run_t r = {0};
    int rc = read_trace(trace, &r);
    char dir[] = "/tmp/spm-plot-XXXXXX";
    if (rc == 0 && !mkdtemp(dir))
        rc = spm_error(SPM_ESYS, "cannot create a temporary directory: %s", strerror(errno));
    if (rc == 0)
        rc = write_inputs(&r, dir, out, svg);
    if (rc == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "gnuplot %s/plot.gp 2>%s/err.txt", dir, dir);
        int st = system(cmd);
        if (st != 0) {
            snprintf(cmd, sizeof cmd, "%s/err.txt", dir);
            FILE *e = fopen(cmd, "r");
            char first[256] = "";
            if (e) {
                if (!fgets(first, sizeof first, e))
                    first[0] = '\0';
                fclose(e);
            }
            first[strcspn(first, "\n")] = '\0';
            rc = WIFEXITED(st) && WEXITSTATUS(st) == 127
                     ? spm_error(SPM_ENOTFOUND,
                                 "gnuplot is not installed (Debian: apt-get install gnuplot-nox)")
                     : spm_error(SPM_EIO, "gnuplot failed: %s", first);
        }
    }
    if (dir[14] != 'X')
        spm_rmtree(dir);
    free(r.v);
    if (rc != 0)
        return spm_cli_fail("plot", rc);
    printf("%s: %zu SIs on %u IEUs\n", out, r.n, r.max_ieu + 1);
    return 0;
}
