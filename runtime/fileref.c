/*  =========================================================================
    fileref - a staged block that is a part of a file, read where it lies

    Layout, little-endian: the magic "spm-fil2", offset, len, size,
    mtime_ns (8 bytes each), pathlen (4), the path. ("spm-file" had a
    checksum of the block's bytes after mtime_ns: it is no longer made.)
    =========================================================================
*/
#include "runtime/fileref.h"

#include "runtime/si.h"
#include "spm/spm_codec.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "spm-fil2"
#define HEAD (8 + 4 * 8 + 4)
#define PATH_MAX_BYTES 4096

int spm_fileref_encode(const spm_fileref_t *r, void **data, size_t *len)
{
    unsigned char *b = malloc(HEAD + r->pathlen);
    if (!b)
        return spm_error(SPM_ENOMEM, "out of memory");
    memcpy(b, MAGIC, 8);
    spm_put_le64(b + 8, r->offset);
    spm_put_le64(b + 16, r->len);
    spm_put_le64(b + 24, r->size);
    spm_put_le64(b + 32, (uint64_t)r->mtime_ns);
    uint32_t pl = (uint32_t)r->pathlen;
    for (int i = 0; i < 4; i++)
        b[40 + i] = (unsigned char)(pl >> (8 * i));
    memcpy(b + HEAD, r->path, r->pathlen);
    *data = b;
    *len = HEAD + r->pathlen;
    return 0;
}

int spm_fileref_view(const void *data, size_t len, spm_fileref_t *r)
{
    const unsigned char *p = data;
    if (len < HEAD || memcmp(p, MAGIC, 8) != 0)
        return SPM_EFORMAT;
    uint32_t pl =
        (uint32_t)p[40] | (uint32_t)p[41] << 8 | (uint32_t)p[42] << 16 | (uint32_t)p[43] << 24;
    if (pl == 0 || pl > PATH_MAX_BYTES || len != HEAD + (size_t)pl || p[HEAD] != '/' ||
        memchr(p + HEAD, '\0', pl))
        return SPM_EFORMAT;
    *r = (spm_fileref_t){.path = (const char *)p + HEAD,
                         .pathlen = pl,
                         .offset = spm_le64(p + 8),
                         .len = spm_le64(p + 16),
                         .size = spm_le64(p + 24),
                         .mtime_ns = (int64_t)spm_le64(p + 32)};
    if (r->offset > r->size || r->len > r->size - r->offset)
        return SPM_EFORMAT;
    return 0;
}

/*  The buffer of the last block this thread read, kept for its next one:
    an IEU reads one block after another of about the same size, and on a
    virtual machine every fresh page costs a fault the hypervisor sees too.
    Mapping each block from the file paid that for every page of every
    block: its checksum and an 8 MiB word count read 1 GiB at a third of
    the speed of read(2) into one reused buffer (docs/PERFORMANCE.md,
    examples/wordfreq). Only a buffer of up to SPARE_MAX bytes is kept. */
#define SPARE_MAX ((size_t)64 << 20)
typedef struct {
    size_t cap;          /* bytes after the header */
    max_align_t bytes[]; /* the block */
} buffer_t;
static pthread_key_t spare_key; /* this thread's spare buffer, freed when it ends */
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_init(void)
{
    pthread_key_create(&spare_key, free);
}

/*  A buffer of at least LEN bytes: this thread's spare when it is large
    enough, else a new one. Returns NULL when out of memory. */
static buffer_t *buffer_take(size_t len)
{
    pthread_once(&spare_once, spare_init);
    buffer_t *b = pthread_getspecific(spare_key);
    if (b && b->cap >= len) {
        pthread_setspecific(spare_key, NULL);
        return b;
    }
    b = malloc(sizeof *b + len);
    if (b)
        b->cap = len;
    return b;
}

void spm_fileref_release(void *buffer)
{
    buffer_t *b = buffer;
    if (!b)
        return;
    pthread_once(&spare_once, spare_init);
    buffer_t *old = pthread_getspecific(spare_key);
    if (b->cap <= SPARE_MAX && (!old || old->cap < b->cap) &&
        pthread_setspecific(spare_key, b) == 0) {
        free(old);
        return;
    }
    free(b);
}

/*  Reads the LEN bytes at OFFSET of FD into BUF. Returns 0, SPM_EIO (it
    cannot be read) or SPM_EFORMAT (the file is shorter now), with a detail
    naming PATH. */
static int read_at(int fd, const char *path, char *buf, size_t len, uint64_t offset)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return spm_error(SPM_EIO, "%s: cannot read bytes %llu to %llu: %s", path,
                             (unsigned long long)offset, (unsigned long long)(offset + len),
                             strerror(errno));
        if (r == 0) /* cut short since its size was checked */
            return spm_error(SPM_EFORMAT,
                             "%s changed since it was staged (its size); stage it again", path);
        got += (size_t)r;
    }
    return 0;
}

/*  0 when FD is still the file R names: its size and modification time
    as when it was staged; else SPM_EFORMAT naming PATH and what differs. */
static int unchanged(int fd, const char *path, const spm_fileref_t *r)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return spm_error(SPM_EIO, "%s: %s (staged to be read where it lies)", path,
                         strerror(errno));
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if ((uint64_t)st.st_size == r->size && mtime == r->mtime_ns)
        return 0;
    return spm_error(SPM_EFORMAT, "%s changed since it was staged (%s); stage it again", path,
                     (uint64_t)st.st_size != r->size ? "its size" : "its time");
}

int spm_fileref_read(const spm_fileref_t *r, const void **data, size_t *len, void **buffer)
{
    char path[PATH_MAX_BYTES + 1];
    memcpy(path, r->path, r->pathlen);
    path[r->pathlen] = '\0';
    *buffer = NULL;
    if (!spm_si_local_files())
        return spm_error(SPM_EDENIED,
                         "%s: this IEU reads no client's files in place (only with "
                         "--local-files: an embedded VM's, or nodes that share a file system)",
                         path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return spm_error(SPM_EIO, "%s: %s (staged to be read where it lies)", path,
                         strerror(errno));
    int rc = unchanged(fd, path, r);
    buffer_t *b = NULL;
    if (rc == 0 && r->len > 0) {
        b = r->len <= SIZE_MAX - sizeof *b ? buffer_take((size_t)r->len) : NULL;
        rc = b ? read_at(fd, path, (char *)b->bytes, (size_t)r->len, r->offset)
               : spm_error(SPM_ENOMEM, "%s: no memory for bytes %llu to %llu", path,
                           (unsigned long long)r->offset, (unsigned long long)(r->offset + r->len));
        if (rc == 0) /* a write while it was read has changed the time since */
            rc = unchanged(fd, path, r);
    }
    close(fd);
    if (rc != 0) {
        spm_fileref_release(b);
        return rc;
    }
    *buffer = b;
    *data = b ? (const void *)b->bytes : "";
    *len = (size_t)r->len;
    return 0;
}

static int fileref_validate(const void *data, size_t len)
{
    spm_fileref_t r;
    return spm_fileref_view(data, len, &r);
}

static void fileref_summary(const void *data, size_t len, char *buf, size_t size)
{
    spm_fileref_t r;
    if (spm_fileref_view(data, len, &r) != 0)
        snprintf(buf, size, "malformed file reference");
    else
        snprintf(buf, size, "%llu bytes at %llu of %.*s", (unsigned long long)r.len,
                 (unsigned long long)r.offset, (int)r.pathlen, r.path);
}

SPM_CONSTRUCTOR(fileref)
{
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = SPM_FILEREF_TYPE, .validate = fileref_validate, .summary = fileref_summary});
}
