/*  =========================================================================
    mmtext - the entries of a Matrix Market file, parsed on every core

    The chunks live in a ring of SLOTS. A thread takes the next chunk
    number, waits for its slot to be free, reads its text (one reader at a
    time, under read_lock: the part of a line the last chunk cut off is
    carried to the next), and parses it without any lock. The reader takes
    chunk after chunk in order and frees each slot when it asks for the
    next. The line parser comes in two speeds: a fast one for the lines
    files hold (digits, one blank, a value, a line end) and the full one
    of mmio's rules, which every line the fast one does not take goes to,
    so that what is accepted and every message stay as they were.
    =========================================================================
*/
#include "isa/matrix/mmtext.h"
#include "isa/core/numparse.h"
#include "spm/spm.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINE (64u << 20) /* as base/textio.c */
#define MAX_THREADS 8
#define PAD                                                                                        \
    16 /* zero bytes after a chunk's text: its end reads as a line's, and SPM_NUMPARSE_PAD */

enum { FREE = 0, BUSY, DONE };

typedef struct {
    spm_mmtext_chunk_t c; /* what the reader sees */
    int state;            /* FREE, BUSY (being read or parsed), DONE */
    char *text;           /* the chunk's whole lines, PAD zero bytes after */
    size_t len, cap;      /* text bytes, allocated (less PAD) */
    uint32_t *row, *col;  /* entries (grown as they come) */
    double *val;
    size_t room; /* entries the arrays hold */
} slot_t;

struct spm_mmtext {
    spm_lines_t *in;      /* the file (not owned) */
    spm_mmio_header_t h;  /* what its entries are */
    size_t chunk;         /* text bytes a read aims at */
    int nslots, nthreads; /* ring size, threads started */
    slot_t *slots;        /* the ring */
    pthread_t tid[MAX_THREADS];
    pthread_mutex_t read_lock; /* the file and the carry: one reader at a time */
    char *carry;               /* the cut-off line after the last chunk read */
    size_t carry_len, carry_cap;
    int at_end;           /* nothing more to read (or reading failed) */
    pthread_mutex_t lock; /* the ring's states and the counters below */
    pthread_cond_t cond;  /* a slot changed state, or stop */
    uint64_t next_read;   /* the next chunk's number */
    uint64_t chunks;      /* chunks there are (known once at_end) */
    int ended;            /* chunks is final */
    uint64_t taken;       /* the reader's next chunk */
    int handed;           /* the slot of taken - 1 is still the reader's */
    int stop;             /* destroy: threads leave */
};

/* ------------------------------------------------------- the full parser */

static void say(spm_mmtext_chunk_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(spm_mmtext_chunk_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err_msg, sizeof c->err_msg, fmt, ap);
    va_end(ap);
}

int spm_mmtext_blank(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

int spm_mmtext_u64(const char **p, uint64_t *out)
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

/*  The value at *P into *V, by the field of H; -1 with the message in C. */
static int parse_value(const spm_mmio_header_t *h, spm_mmtext_chunk_t *c, const char **p, double *v)
{
    const char *s = *p, *end;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s) {
        say(c, "missing value");
        return -1;
    }
    /* numparse reads what strtoll and strtod read (value, end and errno
       alike) */
    errno = 0;
    if (h->field == SPM_MMIO_INTEGER) {
        int64_t i;
        spm_numparse_i64(s, &end, &i);
        *v = (double)i;
    } else {
        spm_numparse_double(s, &end, v);
    }
    int w = (int)strcspn(s, " \t");
    if (end == s || (*end && !isspace((unsigned char)*end))) {
        say(c, "'%.*s' is not %s", w, s, h->field == SPM_MMIO_INTEGER ? "an integer" : "a number");
        return -1;
    }
    if (errno == ERANGE && (h->field == SPM_MMIO_INTEGER || isinf(*v))) {
        say(c, "'%.*s' is out of range", w, s);
        return -1;
    }
    /* nan and inf are refused, not multiplied: a product with them depends
       on the block sides (a dense kernel adds 0 x inf where a sparse one
       skips it), so no answer would be the matrix's (docs/MATMUL.md) */
    if (!isfinite(*v)) {
        say(c, "'%.*s' is not a finite number", w, s);
        return -1;
    }
    *p = end;
    return 0;
}

/*  One data line (NUL-terminated, no line end) by every rule of mmio.h:
    1 for an entry in *I, *J (0-based) and *V, 0 for a blank line, -1
    with the message in C. */
static int parse_line(const spm_mmio_header_t *h, spm_mmtext_chunk_t *c, const char *p, uint32_t *i,
                      uint32_t *j, double *v)
{
    if (spm_mmtext_blank(p))
        return 0;
    uint64_t r = 0, k = 0;
    if (h->format == SPM_MMIO_COORDINATE) {
        if (spm_mmtext_u64(&p, &r) || spm_mmtext_u64(&p, &k)) {
            say(c, "expected 'row col%s'", h->field == SPM_MMIO_PATTERN ? "" : " value");
            return -1;
        }
        if (r < 1 || r > h->rows || k < 1 || k > h->cols) {
            say(c, "index (%" PRIu64 ", %" PRIu64 ") outside the %" PRIu64 "x%" PRIu64 " matrix", r,
                k, h->rows, h->cols);
            return -1;
        }
    }
    *v = 1.0;
    if (h->field != SPM_MMIO_PATTERN && parse_value(h, c, &p, v) != 0)
        return -1;
    if (!spm_mmtext_blank(p)) {
        say(c, "unexpected '%s' after the entry", p);
        return -1;
    }
    if (h->format == SPM_MMIO_COORDINATE && h->symmetry == SPM_MMIO_SKEW && r == k) {
        say(c, "a skew-symmetric matrix has no diagonal entry (%" PRIu64 ", %" PRIu64 ")", r, k);
        return -1;
    }
    *i = (uint32_t)(r - 1);
    *j = (uint32_t)(k - 1);
    return 1;
}

/* ------------------------------------------------------- the fast parser */

/*  Digits at *P as a 1-based index, at most 10 of them and followed by a
    blank; 0 when the line is not that plain (the full parser decides). */
static uint64_t index_at(const char **p)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    uint64_t v = 0;
    const char *d = s;
    while ((unsigned)(*s - '0') < 10 && s - d < 10)
        v = v * 10 + (uint64_t)(*s++ - '0');
    if (s == d || (*s != ' ' && *s != '\t'))
        return 0;
    *p = s;
    return v;
}

/*  The line at P (up to the newline at or after it, or LIM) the plain
    way: 1 with the entry, 0 for a line that is not plain (never an
    error: the full parser reads it again). *NEXT is after its newline. */
static int fast_line(const spm_mmio_header_t *h, const char *p, const char *lim, const char **next,
                     uint32_t *i, uint32_t *j, double *v)
{
    uint64_t r = 1, k = 1;
    if (h->format == SPM_MMIO_COORDINATE) {
        r = index_at(&p);
        k = h->field == SPM_MMIO_PATTERN ? 0 : index_at(&p);
        if (h->field == SPM_MMIO_PATTERN) { /* "row col" and the line end */
            while (*p == ' ' || *p == '\t')
                p++;
            const char *d = p;
            while ((unsigned)(*p - '0') < 10 && p - d < 10)
                k = k * 10 + (uint64_t)(*p++ - '0');
            if (p == d)
                return 0;
        }
        if (r < 1 || r > h->rows || k < 1 || k > h->cols ||
            (h->symmetry == SPM_MMIO_SKEW && r == k))
            return 0;
    }
    *v = 1.0;
    if (h->field != SPM_MMIO_PATTERN) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *end;
        errno = 0;
        if (h->field == SPM_MMIO_INTEGER) {
            int64_t x;
            if (spm_numparse_i64(p, &end, &x) != 0)
                return 0;
            *v = (double)x;
        } else if (spm_numparse_double_padded(p, &end, v) != 0) {
            return 0;
        }
        if (errno || !isfinite(*v))
            return 0;
        p = end;
    }
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    if (p < lim && *p != '\n')
        return 0;
    *next = p < lim ? p + 1 : lim;
    *i = (uint32_t)(r - 1);
    *j = (uint32_t)(k - 1);
    return 1;
}

/* ------------------------------------------------------------- a chunk */

/*  Room for one more entry in S. Returns 0 or -1 (out of memory). */
static int room(slot_t *s)
{
    if (s->c.n < s->room)
        return 0;
    size_t n = s->room ? 2 * s->room : 4096;
    uint32_t *r = realloc(s->row, n * sizeof *r);
    if (r)
        s->row = r;
    uint32_t *c = realloc(s->col, n * sizeof *c);
    if (c)
        s->col = c;
    double *v = realloc(s->val, n * sizeof *v);
    if (v)
        s->val = v;
    if (!r || !c || !v)
        return -1;
    s->room = n;
    return 0;
}

/*  The full parser's verdict on the line [P, NL) of S (line LINE): 1 for
    an entry appended, 0 for a blank line, -1 for an error in S->c. */
static int slow_line(const spm_mmio_header_t *h, slot_t *s, const char *p, const char *nl,
                     unsigned long line)
{
    size_t len = (size_t)(nl - p);
    if (len > 0 && p[len - 1] == '\r')
        len--;
    char small[512], *copy = len < sizeof small ? small : malloc(len + 1);
    int rc = -1;
    if (!copy) {
        s->c.err = SPM_ENOMEM;
        say(&s->c, "out of memory");
    } else if (memchr(p, '\0', len)) {
        s->c.err = SPM_EFORMAT;
        say(&s->c, "NUL byte in a text line");
    } else {
        memcpy(copy, p, len);
        copy[len] = '\0';
        uint32_t i = 0, j = 0;
        double v = 0;
        rc = parse_line(h, &s->c, copy, &i, &j, &v);
        if (rc == 1 && room(s) != 0) {
            s->c.err = SPM_ENOMEM;
            say(&s->c, "out of memory");
            rc = -1;
        } else if (rc == 1) {
            s->row[s->c.n] = i;
            s->col[s->c.n] = j;
            s->val[s->c.n++] = v;
        } else if (rc < 0) {
            s->c.err = SPM_EFORMAT;
            s->c.err_data = 1;
        }
    }
    if (copy != small)
        free(copy);
    if (rc < 0)
        s->c.err_line = line;
    return rc;
}

/*  Parses the text of S into its entries and counts its lines. */
static void parse_chunk(const spm_mmio_header_t *h, slot_t *s)
{
    const char *p = s->text, *lim = s->text + s->len;
    unsigned long line = 0;
    while (p < lim && s->c.err == 0) {
        line++;
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q == '\n') { /* a blank line */
            p = q + 1;
            continue;
        }
        if (*p == '%') { /* a comment: skipped, but never with a NUL in it */
            const char *nl = memchr(p, '\n', (size_t)(lim - p));
            if (!nl)
                nl = lim;
            if (memchr(p, '\0', (size_t)(nl - p))) {
                s->c.err = SPM_EFORMAT;
                s->c.err_line = line;
                say(&s->c, "NUL byte in a text line");
            }
            p = nl < lim ? nl + 1 : lim;
            continue;
        }
        uint32_t i, j;
        double v;
        const char *next;
        if (room(s) != 0) {
            s->c.err = SPM_ENOMEM;
            s->c.err_line = line;
            say(&s->c, "out of memory");
        } else if (fast_line(h, p, lim, &next, &i, &j, &v)) {
            s->row[s->c.n] = i;
            s->col[s->c.n] = j;
            s->val[s->c.n++] = v;
            p = next;
        } else {
            const char *nl = memchr(p, '\n', (size_t)(lim - p));
            if (!nl)
                nl = lim;
            slow_line(h, s, p, nl, line);
            p = nl < lim ? nl + 1 : lim;
        }
    }
    s->c.lines = line;
}

/* ------------------------------------------------------------ reading */

/*  Grows S's text to hold CAP bytes (and PAD). Returns 0 or -1. */
static int text_room(slot_t *s, size_t cap)
{
    if (cap <= s->cap)
        return 0;
    char *t = realloc(s->text, cap + PAD);
    if (!t)
        return -1;
    s->text = t;
    s->cap = cap;
    return 0;
}

/*  Reads the next chunk's whole lines into S (under read_lock): the
    carried part first, then the file up to about the chunk size, and on
    to a newline. Returns 1 for a chunk (S->c.err may be set: reading
    failed, or a line too long), 0 when the file has nothing more. */
static int read_chunk(spm_mmtext_t *t, slot_t *s)
{
    s->len = 0;
    s->c = (spm_mmtext_chunk_t){0};
    if (t->at_end)
        return 0;
    size_t want = t->chunk > t->carry_len ? t->chunk : t->carry_len + t->chunk;
    if (text_room(s, want) != 0)
        goto nomem;
    if (t->carry_len) /* t->carry is NULL before the first chunk */
        memcpy(s->text, t->carry, t->carry_len);
    s->len = t->carry_len;
    t->carry_len = 0;
    size_t scanned = 0; /* bytes known to hold no newline */
    int eof = 0;
    for (;;) {
        while (s->len < s->cap && !eof) {
            long got = spm_lines_read(t->in, s->text + s->len, s->cap - s->len);
            if (got < 0) {
                s->c.err = SPM_EIO;
                snprintf(s->c.err_msg, sizeof s->c.err_msg, "%s", spm_error_detail());
                t->at_end = 1;
                return 1;
            }
            eof = got == 0;
            s->len += (size_t)got;
        }
        if (eof)
            break;
        const char *nl = memrchr(s->text + scanned, '\n', s->len - scanned);
        if (nl) { /* what follows the last newline goes to the next chunk */
            size_t keep = (size_t)(nl + 1 - s->text), rest = s->len - keep;
            if (rest > t->carry_cap) {
                char *c = realloc(t->carry, rest);
                if (!c)
                    goto nomem;
                t->carry = c;
                t->carry_cap = rest;
            }
            if (rest) /* t->carry may still be NULL */
                memcpy(t->carry, nl + 1, rest);
            t->carry_len = rest;
            s->len = keep;
            break;
        }
        scanned = s->len; /* one line fills the chunk: read on */
        if (s->cap > MAX_LINE) {
            s->c.err = SPM_EFORMAT;
            s->c.err_line = 1;
            say(&s->c, "line longer than %u bytes", MAX_LINE);
            t->at_end = 1;
            return 1;
        }
        if (text_room(s, 2 * s->cap) != 0)
            goto nomem;
    }
    if (eof)
        t->at_end = 1;
    memset(s->text + s->len, 0, PAD);
    return s->len > 0;
nomem:
    s->c.err = SPM_ENOMEM;
    say(&s->c, "out of memory");
    t->at_end = 1;
    return 1;
}

static void *parse_thread(void *arg)
{
    spm_mmtext_t *t = arg;
    for (;;) {
        pthread_mutex_lock(&t->read_lock);
        pthread_mutex_lock(&t->lock);
        uint64_t k = t->next_read;
        slot_t *s = &t->slots[k % (uint64_t)t->nslots];
        while (!t->stop && !t->ended && s->state != FREE)
            pthread_cond_wait(&t->cond, &t->lock);
        int leave = t->stop || t->ended;
        if (!leave)
            s->state = BUSY;
        pthread_mutex_unlock(&t->lock);
        int got = leave ? 0 : read_chunk(t, s);
        pthread_mutex_lock(&t->lock);
        if (!leave && got)
            t->next_read = k + 1;
        if (!leave && !got) { /* the end: no chunk k */
            s->state = FREE;
            t->chunks = k;
            t->ended = 1;
            pthread_cond_broadcast(&t->cond);
        }
        if (!leave && got && (t->at_end || s->c.err)) { /* k is the last */
            t->chunks = k + 1;
            t->ended = 1;
            pthread_cond_broadcast(&t->cond);
        }
        pthread_mutex_unlock(&t->lock);
        pthread_mutex_unlock(&t->read_lock);
        if (leave || !got)
            return NULL;
        if (s->c.err == 0)
            parse_chunk(&t->h, s);
        s->c.row = s->row;
        s->c.col = s->col;
        s->c.val = s->val;
        pthread_mutex_lock(&t->lock);
        s->state = DONE;
        pthread_cond_broadcast(&t->cond);
        pthread_mutex_unlock(&t->lock);
    }
}

/* ------------------------------------------------------------ the API */

int spm_mmtext_new(spm_lines_t *in, const spm_mmio_header_t *h, size_t chunk, int threads,
                   spm_mmtext_t **out)
{
    spm_mmtext_t *t = *out = calloc(1, sizeof *t);
    if (!t)
        return spm_error(SPM_ENOMEM, "out of memory");
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    t->nthreads = 0;
    t->in = in;
    t->h = *h;
    t->chunk = chunk ? chunk : SPM_MMTEXT_CHUNK;
    threads = threads < MAX_THREADS ? threads : MAX_THREADS;
    t->nslots = threads + 2; /* each thread one, and the reader's ahead */
    t->slots = calloc((size_t)t->nslots, sizeof *t->slots);
    pthread_mutex_init(&t->read_lock, NULL);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    if (!t->slots) {
        spm_mmtext_destroy(out);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    for (int k = 0; k < threads; k++) {
        int rc = pthread_create(&t->tid[k], NULL, parse_thread, t);
        if (rc != 0) {
            spm_mmtext_destroy(out);
            return spm_error(SPM_ESYS, "cannot start a thread: %s", strerror(rc));
        }
        t->nthreads++;
    }
    return 0;
}

int spm_mmtext_next(spm_mmtext_t *t, const spm_mmtext_chunk_t **c)
{
    pthread_mutex_lock(&t->lock);
    if (t->handed) { /* the chunk handed out before is done with */
        t->slots[(t->taken - 1) % (uint64_t)t->nslots].state = FREE;
        t->handed = 0;
        pthread_cond_broadcast(&t->cond);
    }
    slot_t *s = &t->slots[t->taken % (uint64_t)t->nslots];
    while (!(t->ended && t->taken >= t->chunks) && !(s->state == DONE && t->taken < t->next_read))
        pthread_cond_wait(&t->cond, &t->lock);
    int got = !(t->ended && t->taken >= t->chunks);
    if (got) {
        *c = &s->c;
        t->taken++;
        t->handed = 1;
    }
    pthread_mutex_unlock(&t->lock);
    return got;
}

unsigned long spm_mmtext_data_line(const spm_mmtext_t *t, const spm_mmtext_chunk_t *c, size_t k)
{
    const slot_t *s = (const slot_t *)(const void *)c; /* c is its slot's first field */
    (void)t;
    if (k == c->n && c->err)
        return c->err_line;
    const char *p = s->text, *lim = s->text + s->len;
    unsigned long line = 0;
    size_t seen = 0;
    while (p < lim) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(lim - p));
        if (!nl)
            nl = lim;
        const char *q = p;
        while (q < nl && isspace((unsigned char)*q))
            q++;
        if (q < nl && *p != '%' && seen++ == k)
            return line;
        p = nl + 1;
    }
    return line;
}

void spm_mmtext_destroy(spm_mmtext_t **self_p)
{
    spm_mmtext_t *t = self_p ? *self_p : NULL;
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = 1;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    for (int k = 0; k < t->nthreads; k++)
        pthread_join(t->tid[k], NULL);
    for (int k = 0; t->slots && k < t->nslots; k++) {
        free(t->slots[k].text);
        free(t->slots[k].row);
        free(t->slots[k].col);
        free(t->slots[k].val);
    }
    free(t->slots);
    free(t->carry);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->read_lock);
    free(t);
    *self_p = NULL;
}
