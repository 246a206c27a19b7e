/*  =========================================================================
    stagefile - a command side's inputs staged into the VM: a file cut by
    lines, records or bytes, a buffer, an array (spm_stage_* in spm.h)

    @discuss
    Blocks go out with up to 16 puts in flight (stage.c), straight onto the
    nodes on a cluster. Where the IEUs read the client's files by path (an
    embedded VM; --shared-files), a file's blocks are staged as references
    (runtime/fileref.h): the client still reads the file once, to find the
    line ends and to checksum each block, but no byte of it is copied into
    the VM. The file's size and time are taken before and after, so a file
    that changes while it is staged fails at once, and one that changes
    later fails the SI that reads it.
    =========================================================================
*/
#include "vm/client/program.h"

#include "base/checksum.h"
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
    char *buf = rc == 0 ? malloc(cap) : NULL;
    if (rc == 0 && !buf)
        rc = spm_error(SPM_ENOMEM, "out of memory");
    spm_progress_t meter;
    spm_progress_begin_to(&meter, stderr, spm_client_meter(c), path,
                          S_ISREG(st0.st_mode) ? (uint64_t)st0.st_size : 0);
    size_t len = 0;
    uint64_t offset = 0;
    int eof_seen = 0;
    size_t want = block;
    while (rc == 0) {
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
        if (real) {
            spm_fileref_t r = {.path = real,
                               .pathlen = strlen(real),
                               .offset = offset,
                               .len = take,
                               .size = (uint64_t)st0.st_size,
                               .mtime_ns = mtime_ns(&st0),
                               .sum = spm_checksum(buf, take)};
            void *ref;
            size_t reflen;
            if ((rc = spm_fileref_encode(&r, &ref, &reflen)) == 0) {
                rc = put(&g, SPM_FILEREF_TYPE, ref, reflen);
                free(ref);
            }
        } else {
            rc = put(&g, SPM_BYTES, buf, take);
        }
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
