/*  =========================================================================
    stagefile - a command side's inputs staged into the VM: a file cut by
    lines, records or bytes, a buffer, an array (spm_stage_* in spm.h)

    @discuss
    Blocks go out with up to 16 puts in flight (stage.c), straight onto the
    nodes on a cluster. Where the IEUs read the client's files by path (an
    embedded VM; --shared-files), a file's blocks are staged as references
    (runtime/fileref.h) and the client does not read the file: where a
    block of lines ends is found in a window of at most 4 KiB before its
    largest end (further only for a line longer than that), so staging
    1 GiB in 8 MiB blocks reads 512 KiB of it. The file's size and time
    are taken before and after, so a file that changes while it is staged
    fails at once, and the IEU that reads a block checks them again before
    and after its read, so one that changes later fails that SI.
    =========================================================================
*/
#include "vm/client/program.h"

#include "runtime/fileref.h"
#include "vm/client/progress.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK_MAX ((size_t)512 << 20) /* a block travels as one message */

/*  The ids of one staging: grown by whole flushes, since every put in
    flight holds a pointer into the array. */
typedef struct {
    spm_client_t *c;
    spm_session_t *s;
    spm_sdb_t *ids;
    size_t n, cap;
} staging_t;

static int begin(staging_t *g, spm_client_t *c)
{
    *g = (staging_t){.c = c};
    return spm_client_session(c, &g->s);
}

static int put(staging_t *g, const char *type, const void *data, size_t len)
{
    if (g->n == g->cap) {
        int rc = spm_session_put_flush(g->s); /* nothing points into IDS now */
        if (rc != 0)
            return rc;
        size_t cap = g->cap ? g->cap * 2 : 64;
        spm_sdb_t *ids = realloc(g->ids, cap * sizeof *ids);
        if (!ids)
            return spm_error(SPM_ENOMEM, "out of memory");
        g->ids = ids;
        g->cap = cap;
    }
    return spm_session_put_async(g->s, type, data, len, &g->ids[g->n++]);
}

/*  Waits for the puts and hands the ids to the caller (owned by the client). */
static int end(staging_t *g, int rc, spm_sdb_t **ids, size_t *n)
{
    int done = g->s ? spm_session_put_flush(g->s) : 0;
    rc = rc ? rc : done;
    if (rc == 0 && !g->ids && !(g->ids = malloc(sizeof *g->ids)))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    if (rc != 0) {
        free(g->ids);
        return rc;
    }
    if ((rc = spm_client_own(g->c, g->ids)) != 0)
        return rc;
    *ids = g->ids;
    *n = g->n;
    return 0;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/*  Fills BUF[*LEN..WANT) from FD; *EOF_SEEN at the end of the file. */
static int fill(int fd, const char *path, char *buf, size_t *len, size_t want, int *eof_seen)
{
    while (*len < want && !*eof_seen) {
        ssize_t r = read(fd, buf + *len, want - *len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        if (r == 0)
            *eof_seen = 1;
        *len += (size_t)r;
    }
    return 0;
}

/*  How many of the LEN bytes at BUF make the next block per CUT: at most
    BLOCK, but a line longer than BLOCK whole; 0 when more bytes are
    needed (such a line, not ended yet). At the end of the file (EOF_SEEN)
    the last line needs no line end, and records must come out whole. */
static size_t cut_at(const char *buf, size_t len, spm_cut_t cut, size_t block, size_t record,
                     int eof_seen)
{
    size_t n = len < block ? len : block;
    if (cut == SPM_CUT_BYTES)
        return n;
    if (cut == SPM_CUT_RECORDS)
        return n - n % record;
    if (eof_seen && len <= block)
        return len;
    const char *nl = memrchr(buf, '\n', n);
    if (nl)
        return (size_t)(nl - buf) + 1;
    nl = len > block ? memchr(buf + block, '\n', len - block) : NULL; /* one long line */
    return nl ? (size_t)(nl - buf) + 1 : eof_seen ? len : 0;
}

/*  Reads up to LEN bytes at OFFSET of FD into BUF; *GOT is how many (fewer
    at the end of the file). */
static int read_at(int fd, const char *path, char *buf, size_t len, uint64_t offset, size_t *got)
{
    *got = 0;
    while (*got < len) {
        ssize_t r = pread(fd, buf + *got, len - *got, (off_t)(offset + *got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    return 0;
}

#define WINDOW ((size_t)4096) /* bytes read at a time to find a line end */

/*  How many bytes from OFFSET of the SIZE-byte file FD make its next block
    of lines, as cut_at cuts them: the last line end within BLOCK bytes,
    else (a line longer than BLOCK) the first after them, else the rest of
    the file. Reads windows of WINDOW bytes backwards from OFFSET + BLOCK,
    then forwards; *TAKE gets the length. */
static int lines_end(int fd, const char *path, uint64_t offset, uint64_t size, size_t block,
                     uint64_t *take)
{
    char buf[WINDOW];
    size_t got;
    if (size - offset <= block) {
        *take = size - offset;
        return 0;
    }
    for (uint64_t end = offset + block; end > offset;) { /* the last line end before END */
        size_t w = end - offset < WINDOW ? (size_t)(end - offset) : WINDOW;
        int rc = read_at(fd, path, buf, w, end - w, &got);
        if (rc != 0)
            return rc;
        if (got < w) /* shorter than its size said: staged as it is, found changed at the end */
            break;
        const char *nl = memrchr(buf, '\n', w);
        if (nl) {
            *take = end - w + (uint64_t)(nl - buf) + 1 - offset;
            return 0;
        }
        end -= w;
    }
    for (uint64_t at = offset + block; at < size; at += got) { /* one long line */
        int rc = read_at(fd, path, buf, WINDOW, at, &got);
        if (rc != 0)
            return rc;
        const char *nl = memchr(buf, '\n', got);
        if (nl) {
            *take = at + (uint64_t)(nl - buf) + 1 - offset;
            return 0;
        }
        if (got == 0)
            break;
    }
    *take = size - offset;
    return 0;
}

/*  Stages the regular file FD (PATH, absolute: REAL; its stat ST) as
    references to its blocks cut per CUT, reading only where lines end. */
static int stage_refs(staging_t *g, int fd, const char *path, const char *real,
                      const struct stat *st, spm_cut_t cut, size_t block, size_t record,
                      spm_progress_t *meter)
{
    uint64_t size = (uint64_t)st->st_size;
    if (cut == SPM_CUT_RECORDS && size % record != 0)
        return spm_error(SPM_EFORMAT, "%s: %llu bytes is not a whole number of %zu-byte records",
                         path, (unsigned long long)size, record);
    int rc = 0;
    for (uint64_t offset = 0; rc == 0 && offset < size;) {
        uint64_t take = size - offset < block ? size - offset : block;
        if (cut == SPM_CUT_RECORDS)
            take -= take % record;
        else if (cut == SPM_CUT_LINES &&
                 (rc = lines_end(fd, path, offset, size, block, &take)) != 0)
            break;
        if (take > BLOCK_MAX)
            return spm_error(SPM_ERANGE,
                             "%s: the line at byte %llu is over %zu bytes, the largest block", path,
                             (unsigned long long)offset, BLOCK_MAX);
        spm_fileref_t r = {.path = real,
                           .pathlen = strlen(real),
                           .offset = offset,
                           .len = take,
                           .size = size,
                           .mtime_ns = mtime_ns(st)};
        void *ref;
        size_t reflen;
        if ((rc = spm_fileref_encode(&r, &ref, &reflen)) == 0) {
            rc = put(g, SPM_FILEREF_TYPE, ref, reflen);
            free(ref);
        }
        offset += take;
        spm_progress_set(meter, offset);
    }
    return rc;
}

int spm_stage_file(spm_client_t *c, const char *path, spm_cut_t cut, size_t block, size_t record,
                   spm_sdb_t **ids, size_t *n)
{
    if (cut < SPM_CUT_LINES || cut > SPM_CUT_BYTES)
        return spm_error(SPM_EINVAL, "staging %s: cut %d is not SPM_CUT_LINES, _RECORDS or _BYTES",
                         path, (int)cut);
    if (block == 0 || block > BLOCK_MAX)
        return spm_error(SPM_EINVAL, "staging %s: blocks of %zu bytes (1 to %zu)", path, block,
                         BLOCK_MAX);
    if (cut == SPM_CUT_RECORDS && (record == 0 || record > block))
        return spm_error(SPM_EINVAL, "staging %s: records of %zu bytes in blocks of %zu", path,
                         record, block);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st0;
    if (fd < 0 || fstat(fd, &st0) != 0) {
        int rc = spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    staging_t g;
    int rc = begin(&g, c);
    char *real = NULL;
    if (rc == 0 && S_ISREG(st0.st_mode) && spm_client_files_in_place(c))
        real = realpath(path, NULL);
    size_t cap = block;
    char *buf = rc == 0 && !real ? malloc(cap) : NULL;
    if (rc == 0 && !real && !buf)
        rc = spm_error(SPM_ENOMEM, "out of memory");
    spm_progress_t meter;
    spm_progress_begin_to(&meter, stderr, spm_client_meter(c), path,
                          S_ISREG(st0.st_mode) ? (uint64_t)st0.st_size : 0);
    size_t len = 0;
    uint64_t offset = 0;
    int eof_seen = 0;
    size_t want = block;
    if (real && rc == 0) { /* read where it lies: no byte read here but line ends */
        rc = stage_refs(&g, fd, path, real, &st0, cut, block, record, &meter);
        offset = (uint64_t)st0.st_size;
    }
    while (rc == 0 && !real) {
        if (want > cap) { /* a line longer than a block: room for more of it */
            size_t ncap = want > BLOCK_MAX ? 0 : want < cap * 2 ? cap * 2 : want;
            char *b = ncap ? realloc(buf, ncap) : NULL;
            if (!b) {
                rc = ncap ? spm_error(SPM_ENOMEM, "out of memory")
                          : spm_error(SPM_ERANGE,
                                      "%s: the line at byte %llu is over %zu bytes, the largest "
                                      "block",
                                      path, (unsigned long long)offset, BLOCK_MAX);
                break;
            }
            buf = b;
            cap = ncap;
        }
        if ((rc = fill(fd, path, buf, &len, want, &eof_seen)) != 0 || len == 0)
            break;
        size_t take = cut_at(buf, len, cut, block, record, eof_seen);
        if (cut == SPM_CUT_RECORDS && take == 0 && eof_seen) {
            rc = spm_error(SPM_EFORMAT, "%s: %llu bytes is not a whole number of %zu-byte records",
                           path, (unsigned long long)(offset + len), record);
            break;
        }
        if (take == 0) {
            want = len + block; /* a line longer than the block: read on */
            continue;
        }
        want = block;
        rc = put(&g, SPM_BYTES, buf, take);
        offset += take;
        memmove(buf, buf + take, len - take);
        len -= take;
        spm_progress_set(&meter, offset);
    }
    spm_progress_end(&meter);
    struct stat st1;
    if (rc == 0 && S_ISREG(st0.st_mode) &&
        (fstat(fd, &st1) != 0 || st1.st_size != st0.st_size || mtime_ns(&st1) != mtime_ns(&st0) ||
         offset != (uint64_t)st0.st_size))
        rc = spm_error(SPM_EFORMAT, "%s changed while it was staged; stage it again", path);
    close(fd);
    free(buf);
    free(real);
    return end(&g, rc, ids, n);
}

/*  Stages LEN bytes at DATA as blocks of BLOCK bytes (whole ELEM-byte
    elements) of TYPE. */
static int stage_bytes(spm_client_t *c, const char *type, const void *data, size_t len,
                       size_t block, spm_sdb_t **ids, size_t *n)
{
    staging_t g;
    int rc = begin(&g, c);
    spm_progress_t meter;
    spm_progress_begin_to(&meter, stderr, spm_client_meter(c), "staging", len);
    for (size_t off = 0; rc == 0 && off < len; off += block) {
        rc = put(&g, type, (const char *)data + off, len - off < block ? len - off : block);
        spm_progress_set(&meter, off);
    }
    spm_progress_end(&meter);
    return end(&g, rc, ids, n);
}

int spm_stage_buffer(spm_client_t *c, const void *data, size_t len, size_t block, spm_sdb_t **ids,
                     size_t *n)
{
    if (block == 0 || block > BLOCK_MAX)
        return spm_error(SPM_EINVAL, "staging a buffer: blocks of %zu bytes (1 to %zu)", block,
                         BLOCK_MAX);
    return stage_bytes(c, SPM_BYTES, data, len, block, ids, n);
}

int spm_stage_array(spm_client_t *c, const char *type, const void *elems, size_t count,
                    size_t per_block, spm_sdb_t **ids, size_t *n)
{
    size_t size = !type                      ? 0
                  : !strcmp(type, SPM_F64)   ? 8
                  : !strcmp(type, SPM_I64)   ? 8
                  : !strcmp(type, SPM_BYTES) ? 1
                                             : 0;
    if (!size)
        return spm_error(SPM_EINVAL, "staging an array of %s: only %s, %s and %s",
                         type ? type : "(null)", SPM_F64, SPM_I64, SPM_BYTES);
    if (per_block == 0 || per_block > BLOCK_MAX / size)
        return spm_error(SPM_EINVAL, "staging an array: %zu elements a block (1 to %zu)", per_block,
                         BLOCK_MAX / size);
    if (count > SIZE_MAX / size)
        return spm_error(SPM_ERANGE, "staging an array: %zu elements is too many", count);
    return stage_bytes(c, type, elems, count * size, per_block * size, ids, n);
}
