/*  =========================================================================
    mmio - Matrix Market files: a streaming reader and a writer

    Parsing is strict where a mistake would silently change the matrix (an
    index out of range, a value that is not a number, too few or too many
    entries) and lenient where it would not (case of the banner words,
    blank lines, CRLF endings, trailing blanks).
    =========================================================================
*/
#include "isa/matrix/mmio.h"
#include "isa/matrix/npmat.h"
#include "isa/core/numfmt.h"
#include "isa/core/numparse.h"
#include "base/textio.h"
#include "spm/spm.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DIM (UINT64_C(1) << 31) /* rows or columns */
#define SIZE_LINE_WIDTH 63          /* a reserved size line, without its newline */

struct spm_mmio {
    spm_lines_t *in;        /* the file, one line at a time */
    spm_npmat_t *bin;       /* or a NumPy or SciPy file, an entry at a time */
    spm_mmio_order_t order; /* the order of the entries */
    spm_mmio_header_t h;    /* banner and size line */
    uint64_t done;          /* stored entries read so far */
    uint64_t arow, acol;    /* array format: position of the next entry */
    int pending;            /* a mirrored entry waits in prow, pcol, pval */
    uint64_t prow, pcol;    /* the mirrored entry */
    double pval;            /* its value */
};

static const char *format_names[] = {"coordinate", "array"};
static const char *field_names[] = {"real", "integer", "pattern"};
static const char *symmetry_names[] = {"general", "symmetric", "skew-symmetric"};

const char *spm_mmio_format_name(spm_mmio_format_t f)
{
    return f <= SPM_MMIO_ARRAY ? format_names[f] : "?";
}

const char *spm_mmio_field_name(spm_mmio_field_t f)
{
    return f <= SPM_MMIO_PATTERN ? field_names[f] : "?";
}

const char *spm_mmio_symmetry_name(spm_mmio_symmetry_t s)
{
    return s <= SPM_MMIO_SKEW ? symmetry_names[s] : "?";
}

/*  Index of WORD in NAMES (case-insensitive), or -1. */
static int lookup(const char *word, const char **names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(word, names[i]) == 0)
            return i;
    return -1;
}

static int blank(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

/*  Reads the next line that is neither blank nor a comment. Returns 1, 0
    at end of file, or an error. */
static int next_data_line(spm_mmio_t *r, char **line)
{
    size_t len;
    int rc;
    while ((rc = spm_lines_next(r->in, line, &len, NULL)) == 1)
        if (!blank(*line) && (*line)[0] != '%')
            return 1;
    return rc;
}

/*  Parses an unsigned decimal number at *P, advancing *P. */
static int parse_u64(const char **p, uint64_t *out)
{
    const char *s = *p, *end;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    uint64_t v;
    spm_numparse_u64(s, &end, &v);
    if (errno || (*end && !isspace((unsigned char)*end)))
        return -1;
    *out = v;
    *p = end;
    return 0;
}

static int parse_value(spm_mmio_t *r, const char **p, double *v)
{
    const char *s = *p, *end;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return spm_lines_error(r->in, SPM_EFORMAT, "missing value");
    /* numparse reads what strtoll and strtod read (value, end and errno
       alike): strtod was most of the time spent reading a dense file */
    errno = 0;
    if (r->h.field == SPM_MMIO_INTEGER) {
        int64_t i;
        spm_numparse_i64(s, &end, &i);
        *v = (double)i;
    } else {
        spm_numparse_double(s, &end, v);
    }
    if (end == s || (*end && !isspace((unsigned char)*end)))
        return spm_lines_error(r->in, SPM_EFORMAT, "'%.*s' is not %s", (int)strcspn(s, " \t"), s,
                               r->h.field == SPM_MMIO_INTEGER ? "an integer" : "a number");
    if (errno == ERANGE && (r->h.field == SPM_MMIO_INTEGER || isinf(*v)))
        return spm_lines_error(r->in, SPM_EFORMAT, "'%.*s' is out of range", (int)strcspn(s, " \t"),
                               s);
    *p = end;
    return 0;
}

static int end_of_line(spm_mmio_t *r, const char *p)
{
    return blank(p) ? 0 : spm_lines_error(r->in, SPM_EFORMAT, "unexpected '%s' after the entry", p);
}

static int read_banner(spm_mmio_t *r)
{
    char *line, w[5][32];
    size_t len;
    int rc = spm_lines_next(r->in, &line, &len, NULL);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return spm_lines_error(r->in, SPM_EFORMAT, "empty file, not Matrix Market");
    if (sscanf(line, "%31s %31s %31s %31s %31s", w[0], w[1], w[2], w[3], w[4]) != 5 ||
        strcasecmp(w[0], "%%MatrixMarket") != 0)
        return spm_lines_error(r->in, SPM_EFORMAT,
                               "not a Matrix Market banner (expected '%%%%MatrixMarket matrix "
                               "coordinate real general' or similar)");
    if (strcasecmp(w[1], "matrix") != 0)
        return spm_lines_error(r->in, SPM_EFORMAT, "object '%s' is not supported (only matrix)",
                               w[1]);
    int f = lookup(w[2], format_names, 2), t = lookup(w[3], field_names, 3),
        s = lookup(w[4], symmetry_names, 3);
    if (f < 0)
        return spm_lines_error(r->in, SPM_EFORMAT, "unknown format '%s'", w[2]);
    if (t < 0)
        return spm_lines_error(r->in, SPM_EFORMAT, "field '%s' is not supported", w[3]);
    if (s < 0)
        return spm_lines_error(r->in, SPM_EFORMAT, "symmetry '%s' is not supported", w[4]);
    if (f == SPM_MMIO_ARRAY && t == SPM_MMIO_PATTERN)
        return spm_lines_error(r->in, SPM_EFORMAT, "an array file cannot be a pattern");
    r->h.format = (spm_mmio_format_t)f;
    r->h.field = (spm_mmio_field_t)t;
    r->h.symmetry = (spm_mmio_symmetry_t)s;
    return 0;
}

static int read_size(spm_mmio_t *r)
{
    char *line;
    int rc = next_data_line(r, &line);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return spm_lines_error(r->in, SPM_EFORMAT, "file ends before the size line");
    const char *p = line;
    spm_mmio_header_t *h = &r->h;
    int coord = h->format == SPM_MMIO_COORDINATE;
    if (parse_u64(&p, &h->rows) || parse_u64(&p, &h->cols) ||
        (coord && parse_u64(&p, &h->entries)) || !blank(p))
        return spm_lines_error(r->in, SPM_EFORMAT, "bad size line '%s' (expected '%s')", line,
                               coord ? "rows cols entries" : "rows cols");
    if (h->rows == 0 || h->cols == 0 || h->rows > MAX_DIM || h->cols > MAX_DIM)
        return spm_lines_error(r->in, SPM_EFORMAT,
                               "size %" PRIu64 "x%" PRIu64 " out of range (1 to %" PRIu64 ")",
                               h->rows, h->cols, MAX_DIM);
    if (h->symmetry != SPM_MMIO_GENERAL && h->rows != h->cols)
        return spm_lines_error(r->in, SPM_EFORMAT,
                               "a %s matrix must be square, not %" PRIu64 "x%" PRIu64,
                               symmetry_names[h->symmetry], h->rows, h->cols);
    uint64_t n = h->rows;
    uint64_t most = h->symmetry == SPM_MMIO_GENERAL     ? h->rows * h->cols
                    : h->symmetry == SPM_MMIO_SYMMETRIC ? n * (n + 1) / 2
                                                        : n * (n - 1) / 2;
    if (!coord)
        h->entries = most;
    else if (h->entries > most)
        return spm_lines_error(r->in, SPM_EFORMAT,
                               "%" PRIu64 " entries cannot fit a %" PRIu64 "x%" PRIu64 " matrix",
                               h->entries, h->rows, h->cols);
    r->acol = 0;
    r->arow = h->symmetry == SPM_MMIO_SKEW ? 1 : 0;
    return 0;
}

spm_mmio_t *spm_mmio_open(const char *path)
{
    spm_mmio_t *r = calloc(1, sizeof *r);
    if (!r) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    spm_npmat_kind_t kind = spm_npmat_kind(path);
    if (kind != SPM_NPMAT_NONE) {
        if (!(r->bin = spm_npmat_open(path, kind, &r->h, &r->order)))
            spm_mmio_destroy(&r);
        return r;
    }
    if (!(r->in = spm_lines_open(path)) || read_banner(r) != 0 || read_size(r) != 0)
        spm_mmio_destroy(&r);
    else if (r->h.format == SPM_MMIO_ARRAY && r->h.symmetry == SPM_MMIO_GENERAL)
        r->order = SPM_MMIO_BY_COLUMN;
    return r;
}

const spm_mmio_header_t *spm_mmio_header(const spm_mmio_t *r)
{
    return &r->h;
}

spm_mmio_order_t spm_mmio_order(const spm_mmio_t *r)
{
    return r->order;
}

const char *spm_mmio_path(const spm_mmio_t *r)
{
    return r->bin ? spm_npmat_path(r->bin) : spm_lines_path(r->in);
}

/*  After the last entry: only blank lines and comments may follow. */
static int check_end(spm_mmio_t *r)
{
    char *line;
    int rc = next_data_line(r, &line);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return spm_lines_error(r->in, SPM_EFORMAT,
                               "more entries than the %" PRIu64 " the size line declares",
                               r->h.entries);
    return 0;
}

static int read_coordinate(spm_mmio_t *r, const char *p, uint64_t *row, uint64_t *col, double *v)
{
    uint64_t i, j;
    if (parse_u64(&p, &i) || parse_u64(&p, &j))
        return spm_lines_error(r->in, SPM_EFORMAT, "expected 'row col%s'",
                               r->h.field == SPM_MMIO_PATTERN ? "" : " value");
    if (i < 1 || i > r->h.rows || j < 1 || j > r->h.cols)
        return spm_lines_error(r->in, SPM_EFORMAT,
                               "index (%" PRIu64 ", %" PRIu64 ") outside the %" PRIu64 "x%" PRIu64
                               " matrix",
                               i, j, r->h.rows, r->h.cols);
    int rc;
    *v = 1.0;
    if (r->h.field != SPM_MMIO_PATTERN && (rc = parse_value(r, &p, v)) != 0)
        return rc;
    if ((rc = end_of_line(r, p)) != 0)
        return rc;
    if (r->h.symmetry == SPM_MMIO_SKEW && i == j)
        return spm_lines_error(
            r->in, SPM_EFORMAT,
            "a skew-symmetric matrix has no diagonal entry (%" PRIu64 ", %" PRIu64 ")", i, j);
    *row = i - 1;
    *col = j - 1;
    return 0;
}

static int read_array(spm_mmio_t *r, const char *p, uint64_t *row, uint64_t *col, double *v)
{
    int rc = parse_value(r, &p, v);
    if (rc != 0 || (rc = end_of_line(r, p)) != 0)
        return rc;
    *row = r->arow;
    *col = r->acol;
    if (++r->arow == r->h.rows) {
        r->acol++;
        r->arow = r->h.symmetry == SPM_MMIO_GENERAL     ? 0
                  : r->h.symmetry == SPM_MMIO_SYMMETRIC ? r->acol
                                                        : r->acol + 1;
    }
    return 0;
}

int spm_mmio_next(spm_mmio_t *r, uint64_t *row, uint64_t *col, double *v)
{
    if (r->bin)
        return spm_npmat_next(r->bin, row, col, v);
    if (r->pending) {
        r->pending = 0;
        *row = r->prow;
        *col = r->pcol;
        *v = r->pval;
        return 1;
    }
    if (r->done == r->h.entries)
        return check_end(r);
    char *line;
    int rc = next_data_line(r, &line);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return spm_lines_error(r->in, SPM_EFORMAT,
                               "file ends after %" PRIu64 " of %" PRIu64 " entries (truncated?)",
                               r->done, r->h.entries);
    rc = r->h.format == SPM_MMIO_COORDINATE ? read_coordinate(r, line, row, col, v)
                                            : read_array(r, line, row, col, v);
    if (rc != 0)
        return rc;
    r->done++;
    if (r->h.symmetry != SPM_MMIO_GENERAL && *row != *col) {
        r->pending = 1;
        r->prow = *col;
        r->pcol = *row;
        r->pval = r->h.symmetry == SPM_MMIO_SKEW ? -*v : *v;
    }
    return 1;
}

uint64_t spm_mmio_done(const spm_mmio_t *r)
{
    return r->bin ? spm_npmat_done(r->bin) : r->done;
}

void spm_mmio_destroy(spm_mmio_t **self)
{
    if (!self || !*self)
        return;
    spm_lines_destroy(&(*self)->in);
    spm_npmat_destroy(&(*self)->bin);
    free(*self);
    *self = NULL;
}

struct spm_mmio_writer {
    FILE *out;           /* not owned */
    spm_mmio_header_t h; /* what is written */
    int reserved;        /* the size line is a placeholder to rewrite */
    long size_at;        /* file offset of the size line */
    uint64_t done;       /* entries put */
};

static int write_failed(void)
{
    return spm_error(SPM_EIO, "writing the matrix failed: %s", strerror(errno));
}

spm_mmio_writer_t *spm_mmio_writer_open(FILE *out, const spm_mmio_header_t *h)
{
    spm_mmio_writer_t *w = calloc(1, sizeof *w);
    if (!w) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    w->out = out;
    w->h = *h;
    if (h->format == SPM_MMIO_ARRAY) {
        uint64_t n = h->rows;
        w->h.entries = h->symmetry == SPM_MMIO_GENERAL     ? h->rows * h->cols
                       : h->symmetry == SPM_MMIO_SYMMETRIC ? n * (n + 1) / 2
                                                           : n * (n - 1) / 2;
    }
    w->reserved = h->format == SPM_MMIO_COORDINATE && h->entries == UINT64_MAX;
    fprintf(out, "%%%%MatrixMarket matrix %s %s %s\n", format_names[h->format],
            field_names[h->field], symmetry_names[h->symmetry]);
    w->size_at = ftell(out);
    if (w->reserved && w->size_at < 0) {
        spm_error(SPM_EIO, "the output must be a regular file");
        free(w);
        return NULL;
    }
    if (h->format == SPM_MMIO_ARRAY)
        fprintf(out, "%" PRIu64 " %" PRIu64 "\n", h->rows, h->cols);
    else if (w->reserved)
        fprintf(out, "%*s\n", SIZE_LINE_WIDTH, "");
    else
        fprintf(out, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", h->rows, h->cols, h->entries);
    if (ferror(out)) {
        write_failed();
        free(w);
        return NULL;
    }
    return w;
}

/* the longest line: two indices, a separator after each, the widest value */
_Static_assert(SPM_MMIO_LINE_MAX >= 2 * (SPM_FMT_U64_MAX + 1) + SPM_FMT_ROUNDED_MAX + 1,
               "SPM_MMIO_LINE_MAX is too small");

size_t spm_mmio_writer_format(const spm_mmio_writer_t *w, char *line, uint64_t row, uint64_t col,
                              double v)
{
    /* the line is built here and written at once: printf's "%.17g" was
       most of the time spent writing a dense result */
    char *p = line;
    if (w->h.format == SPM_MMIO_COORDINATE) {
        p += spm_fmt_u64(p, row + 1);
        *p++ = ' ';
        p += spm_fmt_u64(p, col + 1);
        if (w->h.field != SPM_MMIO_PATTERN)
            *p++ = ' ';
    }
    if (w->h.field == SPM_MMIO_REAL)
        p += spm_fmt_g17(p, v);
    else if (w->h.field == SPM_MMIO_INTEGER)
        p += spm_fmt_rounded(p, v);
    *p++ = '\n';
    return (size_t)(p - line);
}

int spm_mmio_writer_put_text(spm_mmio_writer_t *w, const char *text, size_t len, uint64_t entries)
{
    if (!w->reserved && entries > w->h.entries - w->done)
        return spm_error(SPM_ERANGE, "more entries than the %" PRIu64 " declared", w->h.entries);
    w->done += entries;
    return fwrite(text, 1, len, w->out) == len ? 0 : write_failed();
}

int spm_mmio_writer_put(spm_mmio_writer_t *w, uint64_t row, uint64_t col, double v)
{
    char line[SPM_MMIO_LINE_MAX];
    return spm_mmio_writer_put_text(w, line, spm_mmio_writer_format(w, line, row, col, v), 1);
}

int spm_mmio_writer_close(spm_mmio_writer_t **wp)
{
    spm_mmio_writer_t *w = *wp;
    int rc = 0;
    *wp = NULL;
    if (w->reserved) {
        char size[SIZE_LINE_WIDTH + 2];
        int n = snprintf(size, sizeof size, "%" PRIu64 " %" PRIu64 " %" PRIu64, w->h.rows,
                         w->h.cols, w->done);
        memset(size + n, ' ', (size_t)(SIZE_LINE_WIDTH - n));
        long end = ftell(w->out);
        if (end < 0 || fseek(w->out, w->size_at, SEEK_SET) != 0 ||
            fwrite(size, 1, SIZE_LINE_WIDTH, w->out) != SIZE_LINE_WIDTH ||
            fseek(w->out, end, SEEK_SET) != 0)
            rc = write_failed();
    } else if (w->done != w->h.entries) {
        rc = spm_error(SPM_EFORMAT, "%" PRIu64 " entries written, %" PRIu64 " declared", w->done,
                       w->h.entries);
    }
    if (rc == 0 && (fflush(w->out) != 0 || ferror(w->out)))
        rc = write_failed();
    free(w);
    return rc;
}
