/*  =========================================================================
    textio - streaming line input with line numbers, and all-or-nothing output
    =========================================================================
*/
#include "base/textio.h"
#include "spm/spm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#define MAX_LINE (64u << 20)
#define CHUNK (1u << 20)               /* bytes asked of read() at a time */
#define OUT_BUFFER ((size_t)256 << 10) /* bytes an output file is written at a time */

/*  Lines are cut in place in a buffer of whole read() chunks: no copy per
    line and no stdio lock per call, which is most of the time a plain
    parser would otherwise spend outside its own loop. */
struct spm_lines {
    int fd;                 /* the file (stdin's is not closed) */
    char *path;             /* as given to open */
    char *buf;              /* bytes read and not yet returned: [start, end) */
    size_t cap;             /* bytes allocated in buf, less the padding */
    size_t start, end;      /* the unreturned part of buf */
    int eof;                /* read() returned 0 */
    unsigned long lineno;   /* 1-based number of the line last returned */
    int stamped;            /* a regular file: stamp is set */
    spm_file_stamp_t stamp; /* the file as it was opened */
};

int spm_file_stamp(int fd, spm_file_stamp_t *s)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    *s = (spm_file_stamp_t){.dev = (uint64_t)st.st_dev,
                            .ino = (uint64_t)st.st_ino,
                            .size = (uint64_t)st.st_size,
                            .mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
                                        (uint64_t)st.st_mtim.tv_nsec};
    return S_ISREG(st.st_mode) ? 1 : 0;
}

int spm_file_stamp_eq(const spm_file_stamp_t *a, const spm_file_stamp_t *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

spm_lines_t *spm_lines_open(const char *path)
{
    spm_lines_t *r = calloc(1, sizeof *r);
    if (!r) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    r->path = strdup(strcmp(path, "-") == 0 ? "stdin" : path); /* as messages name it */
    r->cap = CHUNK;
    r->buf = malloc(r->cap + 1 + SPM_LINES_PAD);
    if (!r->path || !r->buf) {
        spm_error(SPM_ENOMEM, "out of memory");
        spm_lines_destroy(&r);
        return NULL;
    }
    r->fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        spm_lines_destroy(&r);
        return NULL;
    }
    struct stat st;
    if (fstat(r->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        spm_error(SPM_EIO, "%s: %s", path, strerror(EISDIR));
        spm_lines_destroy(&r);
        return NULL;
    }
    r->stamped = strcmp(path, "-") != 0 && spm_file_stamp(r->fd, &r->stamp) == 1;
    return r;
}

const spm_file_stamp_t *spm_lines_stamp(const spm_lines_t *r)
{
    return r->stamped ? &r->stamp : NULL;
}

int spm_lines_unchanged(const spm_lines_t *r)
{
    if (!r->stamped)
        return 0;
    spm_file_stamp_t now, there;
    int fd = open(r->path, O_RDONLY | O_CLOEXEC), same;
    /* the open file as it is now, and what its path names now */
    same = spm_file_stamp(r->fd, &now) == 1 && spm_file_stamp_eq(&now, &r->stamp) && fd >= 0 &&
           spm_file_stamp(fd, &there) == 1 && spm_file_stamp_eq(&there, &r->stamp);
    if (fd >= 0)
        close(fd);
    return same ? 0 : spm_error(SPM_EIO, "%s: the file changed while it was read", r->path);
}

/*  Reads more of the file after the unreturned bytes, first moving them to
    the front, and growing the buffer when a line fills it. Returns 0 or
    an error. */
static int fill(spm_lines_t *r)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap) {
        if (r->cap > MAX_LINE) {
            r->lineno++;
            return spm_lines_error(r, SPM_EFORMAT, "line longer than %u bytes", MAX_LINE);
        }
        char *b = realloc(r->buf, 2 * r->cap + 1 + SPM_LINES_PAD);
        if (!b)
            return spm_error(SPM_ENOMEM, "out of memory");
        r->buf = b;
        r->cap *= 2;
    }
    size_t want = r->cap - r->end < CHUNK ? r->cap - r->end : CHUNK;
    ssize_t n;
    while ((n = read(r->fd, r->buf + r->end, want)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return spm_error(SPM_EIO, "%s: %s", r->path, strerror(errno));
    if (n == 0)
        r->eof = 1;
    r->end += (size_t)n;
    return 0;
}

int spm_lines_next(spm_lines_t *r, char **line, size_t *len, int *truncated)
{
    char *nl;
    size_t scanned = 0; /* bytes after start known to hold no newline */
    while (!(nl = memchr(r->buf + r->start + scanned, '\n', r->end - r->start - scanned))) {
        scanned = r->end - r->start;
        if (r->eof)
            break;
        int rc = fill(r);
        if (rc != 0)
            return rc;
    }
    if (!nl && r->start == r->end)
        return 0;
    char *s = r->buf + r->start;
    size_t l = nl ? (size_t)(nl - s) : r->end - r->start;
    r->start += l + (nl != NULL);
    r->lineno++;
    if (truncated)
        *truncated = nl == NULL;
    if (l > 0 && s[l - 1] == '\r')
        l--;
    s[l] = '\0'; /* the newline's place, or the byte kept after end */
    if (l > MAX_LINE)
        return spm_lines_error(r, SPM_EFORMAT, "line longer than %u bytes", MAX_LINE);
    if (memchr(s, '\0', l))
        return spm_lines_error(r, SPM_EFORMAT, "NUL byte in a text line");
    *line = s;
    *len = l;
    return 1;
}

/*  A mask of the newlines among the 64 bytes at P, byte i as bit i. */
static uint64_t newlines64(const char *p)
{
#if defined(__x86_64__)
    const __m128i nl = _mm_set1_epi8('\n');
    uint64_t m = 0;
    for (int i = 0; i < 4; i++)
        m |= (uint64_t)(uint16_t)_mm_movemask_epi8(
                 _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)), nl))
             << (16 * i);
    return m;
#else
    uint64_t m = 0;
    for (int i = 0; i < 64; i++)
        m |= (uint64_t)(p[i] == '\n') << i;
    return m;
#endif
}

/*  The bytes after P (of the N at P) up to and including its WANT-th
    newline, with *GOT = WANT; or, where P has fewer, up to and including
    its last, with *GOT the newlines found. 64 bytes at a time: a memchr
    for each line was most of cutting a file of short lines (T25I10D100K,
    100,000 lines: 2.7 ms). */
static size_t nth_newline(const char *p, size_t n, size_t want, size_t *got)
{
    size_t i = 0, k = 0, last = 0;
    for (; i + 64 <= n && k < want; i += 64) {
        uint64_t m = newlines64(p + i);
        size_t c = (size_t)__builtin_popcountll(m);
        if (k + c >= want) { /* the one wanted is in these 64 bytes */
            for (; k + 1 < want; k++)
                m &= m - 1;
            *got = want;
            return i + (size_t)__builtin_ctzll(m) + 1;
        }
        if (c > 0)
            last = i + 64 - (size_t)__builtin_clzll(m);
        k += c;
    }
    for (; i < n && k < want; i++)
        if (p[i] == '\n') {
            k++;
            last = i + 1;
        }
    *got = k;
    return last;
}

int spm_lines_chunk(spm_lines_t *r, size_t maxlines, size_t maxbytes, const char **data,
                    size_t *len, size_t *lines)
{
    size_t scanned = 0, n = 0; /* bytes after start that hold N whole lines */
    for (;;) {
        const char *nl;
        /* whole lines within maxbytes at once, then one line at a time to
           the first past it */
        size_t room = r->end - r->start - scanned, got;
        if (n < maxlines && scanned < maxbytes) {
            size_t upto = maxbytes - scanned < room ? maxbytes - scanned : room;
            scanned += nth_newline(r->buf + r->start + scanned, upto, maxlines - n, &got);
            n += got;
        }
        while (n < maxlines && scanned < maxbytes &&
               (nl = memchr(r->buf + r->start + scanned, '\n', r->end - r->start - scanned))) {
            scanned = (size_t)(nl - (r->buf + r->start)) + 1;
            n++;
        }
        if (n == maxlines || scanned >= maxbytes || r->eof)
            break;
        if (r->end - r->start - scanned > MAX_LINE) {
            r->lineno += n + 1;
            return spm_lines_error(r, SPM_EFORMAT, "line longer than %u bytes", MAX_LINE);
        }
        int rc = fill(r);
        if (rc != 0)
            return rc;
    }
    if (n == 0 && r->start == r->end)
        return 0;
    if (n == 0) {
        r->lineno++;
        return spm_lines_error(r, SPM_EFORMAT, "last line has no line end (truncated file?)");
    }
    *data = r->buf + r->start;
    *len = scanned;
    *lines = n;
    r->start += scanned;
    r->lineno += n;
    return 1;
}

long spm_lines_read(spm_lines_t *r, char *buf, size_t n)
{
    if (r->start < r->end) { /* read ahead by the lines before */
        size_t k = r->end - r->start < n ? r->end - r->start : n;
        memcpy(buf, r->buf + r->start, k);
        r->start += k;
        return (long)k;
    }
    if (r->eof)
        return 0;
    ssize_t got;
    while ((got = read(r->fd, buf, n)) < 0 && errno == EINTR)
        ;
    if (got < 0)
        return spm_error(SPM_EIO, "%s: %s", r->path, strerror(errno));
    if (got == 0)
        r->eof = 1;
    return (long)got;
}

unsigned long spm_lines_lineno(const spm_lines_t *r)
{
    return r->lineno;
}

const char *spm_lines_path(const spm_lines_t *r)
{
    return r->path;
}

int spm_lines_error(const spm_lines_t *r, int code, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return spm_error(code, "%s:%lu: %s", r->path, r->lineno, msg);
}

void spm_lines_destroy(spm_lines_t **self_p)
{
    if (!*self_p)
        return;
    if ((*self_p)->fd > STDIN_FILENO)
        close((*self_p)->fd);
    free((*self_p)->buf);
    free((*self_p)->path);
    free(*self_p);
    *self_p = NULL;
}

/*  Bytes of a temporary file written between two starts of its writeback,
    when commit is to sync it: the kernel writes the file out while it is
    being made, so that the fsync of commit finds little left to do. The
    dense set's 8,020,425 itemsets (280 MB of text), whole command: 1.43 ->
    1.33 s, medians of 5; its fsync alone took 159 ms. Without a sync
    there is no kick either: the kernel writes the file out in its own
    time, after the command has returned. */
#define KICK_BYTES ((uint64_t)8 << 20)

struct spm_outfile {
    FILE *out;         /* the stream over fd, through sink_write */
    char *path;        /* final path ("stdout" for "-"), as messages name it */
    char *tmp;         /* temporary path beside it (NULL for stdout and direct) */
    int direct;        /* stdout, or no regular file (/dev/null, a FIFO): written in place */
    int fd;            /* the temporary file, the target or a copy of stdout's (-1: none) */
    uint64_t unkicked; /* bytes written since its writeback was last started */
    int err;           /* the errno of its first failed write (0: none) */
    int sync;          /* commit syncs the file and its directory (and writes kick) */
};

/*  Counts N bytes written to F's temporary file and, when it is to be
    synced, starts its writeback every KICK_BYTES (sync_file_range does not
    wait for it). */
static void written(spm_outfile_t *f, size_t n)
{
    if (f->sync && f->fd >= 0 && (f->unkicked += n) >= KICK_BYTES) {
        sync_file_range(f->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        f->unkicked = 0;
    }
}

/*  stdio's write for the temporary file: all of BUF. */
static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    spm_outfile_t *f = cookie;
    for (size_t done = 0; done < n;) {
        ssize_t w = write(f->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            f->err = f->err ? f->err : w < 0 ? errno : ENOSPC;
            return done > 0 ? (ssize_t)done : -1;
        }
        done += (size_t)w;
    }
    written(f, n);
    return (ssize_t)n;
}

/*  Matrix Market writers go back to fill in the size line. */
static int sink_seek(void *cookie, off64_t *offset, int whence)
{
    spm_outfile_t *f = cookie;
    off_t at = lseek(f->fd, (off_t)*offset, whence);
    if (at < 0)
        return -1;
    *offset = at;
    return 0;
}

static int sink_close(void *cookie)
{
    spm_outfile_t *f = cookie;
    int rc = close(f->fd);
    f->fd = -1;
    return rc;
}

static int io_error(const char *path, int err)
{
    return spm_error(err == ENOSPC || err == EDQUOT ? SPM_EFULL : SPM_EIO, "%s: %s", path,
                     strerror(err));
}

/*  The process's umask, read without changing it (umask(2) can only be
    read by setting it, which races with threads creating files). */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    unsigned mask = 022;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &mask) == 1)
            break;
    if (f)
        fclose(f);
    return (mode_t)mask;
}

spm_outfile_t *spm_outfile_open(const char *path)
{
    spm_outfile_t *f = calloc(1, sizeof *f);
    int stdout_ = strcmp(path, "-") == 0;
    if (!f || !(f->path = strdup(stdout_ ? "stdout" : path))) {
        free(f);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    f->fd = -1;
    struct stat st;
    int exists = !stdout_ && stat(path, &st) == 0;
    /* Every kind of output is written through sink_write, so that the
       first failed write's errno is kept and a failure names the file and
       its reason (a writer that only has the stream cannot: errno is gone
       by the time it looks). */
    if (stdout_) {
        fflush(stdout); /* what was printed before comes first */
        f->direct = 1;
        f->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
    } else if (exists && !S_ISREG(st.st_mode)) {
        /* Renaming over /dev/null would replace the device for everyone. */
        f->direct = 1;
        f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    } else {
        if (asprintf(&f->tmp, "%s.tmp.XXXXXX", path) < 0) {
            f->tmp = NULL;
            spm_outfile_abort(&f);
            spm_error(SPM_ENOMEM, "out of memory");
            return NULL;
        }
        f->fd = mkostemp(f->tmp, O_CLOEXEC);
        /* mkostemp makes the file 0600; the output gets the mode a plain
           create would give it (0666 less the umask), or the mode of the
           file it replaces. */
        if (f->fd >= 0)
            (void)fchmod(f->fd, exists ? st.st_mode & 0777 : 0666 & ~current_umask());
    }
    cookie_io_functions_t io = {.write = sink_write, .seek = sink_seek, .close = sink_close};
    if (f->fd < 0 || !(f->out = fopencookie(f, "w", io))) {
        spm_error(SPM_EIO, "%s: %s", f->path, strerror(errno));
        if (f->fd >= 0)
            close(f->fd);
        f->fd = -1;
        spm_outfile_abort(&f);
        return NULL;
    }
    /* 256 KiB writes instead of stdio's 4 KiB: the kernel makes larger
       page-cache pages for them, and writing a new file ran at 5.4 GB/s
       against 2.5 GB/s. spm matmul of two 8192² matrices at 5% (2.0 GB of
       C.mtx) took 9.8-12.1 s against 11.1-12.9 s, faster in 3 pairs of 3. */
    setvbuf(f->out, NULL, _IOFBF, OUT_BUFFER);
    return f;
}

int spm_outfile_failure(spm_outfile_t *f, int rc)
{
    return f && f->err ? io_error(f->path, f->err) : rc;
}

int spm_outfile_apart(const char *out, const char *const *in, size_t n)
{
    struct stat so, si;
    if (strcmp(out, "-") == 0 || stat(out, &so) != 0 || !S_ISREG(so.st_mode))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (in[i] && strcmp(in[i], "-") != 0 && stat(in[i], &si) == 0 && si.st_dev == so.st_dev &&
            si.st_ino == so.st_ino)
            return spm_error(
                SPM_EINVAL,
                "%s is the input %s: writing it would replace the input; give another output file",
                out, in[i]);
    return 0;
}

FILE *spm_outfile_stream(spm_outfile_t *f)
{
    return f->out;
}

void spm_outfile_set_sync(spm_outfile_t *f, int on)
{
    f->sync = on;
}

int spm_outfile_pwrite(spm_outfile_t *f, const void *data, size_t len, uint64_t offset)
{
    int fd = f->fd >= 0 ? f->fd : fileno(f->out);
    const char *p = data;
    for (size_t done = 0; done < len;) {
        ssize_t w = pwrite(fd, p + done, len - done, (off_t)(offset + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int err = w < 0 ? errno : ENOSPC;
            f->err = f->err ? f->err : err;
            return io_error(f->path, err);
        }
        done += (size_t)w;
    }
    written(f, len);
    return 0;
}

/*  Syncs the directory that holds PATH, so that a rename into it lasts.
    Returns 0 or SPM_EIO; a file system that cannot sync a directory
    (EINVAL) is not an error. */
static int sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return spm_error(SPM_ENOMEM, "out of memory");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        rc = spm_error(SPM_EIO, "%s: cannot sync its directory %s: %s", path, dir, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

int spm_outfile_commit(spm_outfile_t **fp)
{
    spm_outfile_t *f = *fp;
    int rc = 0;
    if (f->direct) {
        if (fflush(f->out) != 0 || ferror(f->out) || f->err)
            rc = io_error(f->path, f->err ? f->err : errno ? errno : EIO);
        spm_outfile_abort(fp);
        return rc;
    }
    errno = 0;
    if (fflush(f->out) != 0 || ferror(f->out) || f->err || (f->sync && fsync(f->fd) != 0))
        rc = io_error(f->path, f->err ? f->err : errno ? errno : EIO);
    if (fclose(f->out) != 0 && rc == 0)
        rc = io_error(f->path, errno);
    f->out = NULL;
    if (rc == 0 && rename(f->tmp, f->path) != 0)
        rc = io_error(f->path, errno);
    if (rc == 0 && f->sync)
        rc = sync_dir(f->path); /* the rename itself lasts only once its directory is synced */
    spm_outfile_abort(fp);
    return rc;
}

void spm_outfile_abort(spm_outfile_t **fp)
{
    spm_outfile_t *f = *fp;
    if (!f)
        return;
    if (f->out)
        fclose(f->out);
    if (f->tmp)
        unlink(f->tmp); /* after a successful rename this is already gone */
    free(f->tmp);
    free(f->path);
    free(f);
    *fp = NULL;
}
