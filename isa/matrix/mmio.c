/*  =========================================================================
    mmio - Matrix Market files: a streaming reader and a writer

    Parsing is strict where a mistake would silently change the matrix (an
    index out of range, a value that is not a number, too few or too many
    entries) and lenient where it would not (case of the banner words,
    blank lines, CRLF endings, trailing blanks).
    =========================================================================
*/
#include "isa/matrix/mmio.h"
#include "isa/matrix/mmtext.h"
#include "isa/matrix/npmat.h"
#include "isa/core/numfmt.h"
#include "isa/core/numparse.h"
#include "base/textio.h"
#include "spm/spm.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
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
    double one;             /* spm_mmio_next_run of a text file: its entry */
    spm_mmtext_t *text;     /* the entries' text, parsed on every core (from the first next) */
    size_t chunk;           /* its chunk size (0: its default) */
    const spm_mmtext_chunk_t *cur; /* the chunk being handed out (NULL: none yet) */
    size_t at;                     /* its next entry */
    unsigned long base;            /* lines before it */
    int ended;                     /* no chunk is left */
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

/*  Reads the next line that is neither blank nor a comment. Returns 1, 0
    at end of file, or an error. */
static int next_data_line(spm_mmio_t *r, char **line)
{
    size_t len;
    int rc;
    while ((rc = spm_lines_next(r->in, line, &len, NULL)) == 1)
        if (!spm_mmtext_blank(*line) && (*line)[0] != '%')
            return 1;
    return rc;
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
    if (spm_mmtext_u64(&p, &h->rows) || spm_mmtext_u64(&p, &h->cols) ||
        (coord && spm_mmtext_u64(&p, &h->entries)) || !spm_mmtext_blank(p))
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

/*  Records CODE with "PATH:LINE: MESSAGE" as the error detail (LINE of
    the file, counted over its chunks); returns CODE. */
static int text_error(const spm_mmio_t *r, int code, unsigned long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int text_error(const spm_mmio_t *r, int code, unsigned long line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return spm_error(code, "%s:%lu: %s", spm_lines_path(r->in), line, msg);
}

/*  The error of chunk C: "more entries than declared" for a data line
    past the declared count (whatever is wrong with it), else its own. */
static int chunk_error(spm_mmio_t *r, const spm_mmtext_chunk_t *c)
{
    unsigned long line = r->base + c->err_line;
    if (c->err_data && r->done == r->h.entries)
        return text_error(r, SPM_EFORMAT, line,
                          "more entries than the %" PRIu64 " the size line declares", r->h.entries);
    if (c->err == SPM_EFORMAT)
        return text_error(r, c->err, line, "%s", c->err_msg);
    return spm_error(c->err, "%s", c->err_msg); /* already "PATH: ..." or out of memory */
}

void spm_mmio_set_chunk(spm_mmio_t *r, size_t bytes)
{
    r->chunk = bytes;
}

/*  The next entry of a text file, from its parsed chunks: 1, 0 after the
    last declared entry (once the rest of the file has been checked), or
    the error. */
static int next_text(spm_mmio_t *r, uint64_t *row, uint64_t *col, double *v)
{
    int rc;
    if (!r->text && !r->ended) { /* the first entry: the lines so far were the header's */
        r->base = spm_lines_lineno(r->in);
        if ((rc = spm_mmtext_new(r->in, &r->h, r->chunk, 0, &r->text)) != 0)
            return rc;
    }
    for (;;) {
        const spm_mmtext_chunk_t *c = r->cur;
        if (c && r->at < c->n) {
            if (r->done == r->h.entries)
                return text_error(r, SPM_EFORMAT, r->base + spm_mmtext_data_line(r->text, c, r->at),
                                  "more entries than the %" PRIu64 " the size line declares",
                                  r->h.entries);
            size_t k = r->at++;
            *v = c->val[k];
            if (r->h.format == SPM_MMIO_COORDINATE) {
                *row = c->row[k];
                *col = c->col[k];
            } else {
                *row = r->arow;
                *col = r->acol;
                if (++r->arow == r->h.rows) {
                    r->acol++;
                    r->arow = r->h.symmetry == SPM_MMIO_GENERAL     ? 0
                              : r->h.symmetry == SPM_MMIO_SYMMETRIC ? r->acol
                                                                    : r->acol + 1;
                }
            }
            return 1;
        }
        if (c && c->err)
            return chunk_error(r, c);
        if (c)
            r->base += c->lines;
        r->cur = NULL;
        r->at = 0;
        if (r->ended || !spm_mmtext_next(r->text, &r->cur)) {
            r->ended = 1;
            spm_mmtext_destroy(&r->text); /* its threads are done */
            if (r->done < r->h.entries)
                return text_error(r, SPM_EFORMAT, r->base,
                                  "file ends after %" PRIu64 " of %" PRIu64 " entries (truncated?)",
                                  r->done, r->h.entries);
            return 0;
        }
    }
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
    int rc = next_text(r, row, col, v);
    if (rc != 1)
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

int spm_mmio_next_run(spm_mmio_t *r, uint64_t *row, uint64_t *col, const double **v, size_t *n)
{
    if (r->bin)
        return spm_npmat_next_run(r->bin, row, col, v, n);
    int rc = spm_mmio_next(r, row, col, &r->one);
    *v = &r->one;
    *n = rc == 1;
    return rc;
}

uint64_t spm_mmio_done(const spm_mmio_t *r)
{
    return r->bin ? spm_npmat_done(r->bin) : r->done;
}

void spm_mmio_destroy(spm_mmio_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_mmtext_destroy(&(*self_p)->text); /* before the file it reads */
    spm_lines_destroy(&(*self_p)->in);
    spm_npmat_destroy(&(*self_p)->bin);
    free(*self_p);
    *self_p = NULL;
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
    /* an empty chunk may come with no buffer at all */
    return len == 0 || fwrite(text, 1, len, w->out) == len ? 0 : write_failed();
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
    } else if (ferror(w->out)) { /* the count fell short because a write failed */
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
