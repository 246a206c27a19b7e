/*  =========================================================================
    npz - NumPy's .npz archive: a zip file of .npy members

    The zip format (PKWARE's APPNOTE.TXT): each member is a local header
    (30 bytes, its name, extra fields) and its data; the central directory
    lists every member (46 bytes, name, extra fields) with where its local
    header is; the end record (22 bytes) says where the directory is.
    Sizes and offsets are 32-bit; past 4 GiB the field holds 0xffffffff
    and a ZIP64 extra field (tag 1) holds the 64-bit value, and the end
    record is preceded by a ZIP64 end record and its locator.

    CRC-32 is libdeflate's (about 4.7 GB/s on one core, against 1.6 for
    zlib's: at zlib's speed the checksum alone would have cost as much as
    writing the bytes); a member's checksum is that of its array's bytes
    combined (zlib's crc32_combine) with that of its .npy header, which a
    growing member only knows at the end. Deflated members are inflated
    with zlib, as a stream.
    =========================================================================
*/
#include "isa/core/npz.h"
#include "isa/core/codec.h"
#include "spm/spm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define LOCAL_SIG 0x04034b50u
#define CENTRAL_SIG 0x02014b50u
#define END_SIG 0x06054b50u
#define END64_SIG 0x06064b50u
#define LOCATOR_SIG 0x07064b50u
#define LOCAL_HEAD 30
#define CENTRAL_HEAD 46
#define END_HEAD 22
#define END64_HEAD 56
#define LOCATOR_HEAD 20
#define MAX32 0xffffffffu
#define MAX16 0xffffu
#define VERSION 45                          /* 4.5: ZIP64 */
#define MADE_BY (3u << 8 | VERSION)         /* on Unix */
#define DOS_DATE 0x21                       /* 1980-01-01 (time 00:00: 0) */
#define FILE_ATTR ((uint32_t)0100644 << 16) /* a regular file, rw-r--r-- */
#define NAME_MAX_BYTES 200                  /* a member's name, ".npy" included */
#define PUT_BUFFER ((size_t)1 << 20)        /* bytes a member gathers per write */
#define READ_BUFFER ((size_t)64 << 10)      /* compressed bytes read at a time */
#define INFLATE_RATIO 1032                  /* deflate makes at most this per byte */

static uint32_t crc(uint32_t c, const void *p, size_t n)
{
    return libdeflate_crc32(c, p, n);
}

static unsigned le16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static void put_le16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

/* ---------------------------------------------------------------- writer */

typedef struct {
    char name[NAME_MAX_BYTES + 1]; /* NAME.npy */
    spm_npy_t a;                   /* its array's header */
    int grows;                     /* the first dimension is what is put */
    int zip64;                     /* the local header has a ZIP64 field */
    uint64_t at;                   /* offset of the local header */
    uint64_t data_at;              /* offset of the .npy header (the member's data) */
    size_t head;                   /* bytes of the .npy header */
    uint64_t want;                 /* bytes of the array (not for a growing one) */
    uint64_t put;                  /* bytes put so far */
    uint64_t flushed;              /* of them, written to the file */
    uint32_t crc;                  /* of the array's bytes written */
    unsigned char *buf;            /* bytes put and not yet written */
    size_t fill;                   /* how many */
} wmember_t;

struct spm_npz_writer {
    spm_outfile_t *out; /* the file (not owned) */
    wmember_t *m;       /* the members declared */
    size_t n, cap;      /* how many, room */
    uint64_t end;       /* where the next member's local header goes */
    int grows;          /* a growing member was declared: it is the last */
    int rc;             /* the first error, which close returns */
};

spm_npz_writer_t *spm_npz_writer_new(spm_outfile_t *out)
{
    spm_npz_writer_t *w = calloc(1, sizeof *w);
    if (w)
        w->out = out;
    return w;
}

/*  Records RC as W's first error; returns it. */
static int fail(spm_npz_writer_t *w, int rc)
{
    if (rc != 0 && w->rc == 0)
        w->rc = rc;
    return rc;
}

int spm_npz_writer_add(spm_npz_writer_t *w, const char *name, const spm_npy_t *a, unsigned flags)
{
    uint64_t count, bytes;
    if (w->grows || strlen(name) + 4 > NAME_MAX_BYTES || a->itemsize == 0 ||
        ((flags & SPM_NPZ_GROWS) && a->ndim == 0))
        return fail(w, spm_error(SPM_EINVAL, "npz: cannot add member '%s'", name));
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        wmember_t *m = realloc(w->m, cap * sizeof *m);
        if (!m)
            return fail(w, spm_error(SPM_ENOMEM, "out of memory"));
        w->m = m;
        w->cap = cap;
    }
    wmember_t *m = &w->m[w->n];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s.npy", name);
    m->a = *a;
    m->grows = (flags & SPM_NPZ_GROWS) != 0;
    char head[SPM_NPY_WRITTEN_MAX];
    if (m->grows) {
        spm_npy_t widest = *a; /* the header's room: the longest first dimension */
        widest.shape[0] = UINT64_C(1) << 62;
        m->head = spm_npy_header(&widest, 0, head);
    } else {
        if (spm_npy_size(a, &count, &bytes) != 0)
            return fail(w, spm_error(SPM_EINVAL, "npz: member '%s' is too large", name));
        m->want = bytes;
        m->head = spm_npy_header(a, 0, head);
    }
    m->zip64 = m->grows || m->head + m->want >= MAX32;
    m->at = w->end;
    m->data_at = m->at + LOCAL_HEAD + strlen(m->name) + (m->zip64 ? 20 : 0);
    w->end = m->data_at + m->head + m->want;
    w->grows = m->grows;
    int rc = m->grows ? 0 : spm_outfile_pwrite(w->out, head, m->head, m->data_at);
    if (rc != 0)
        return fail(w, rc);
    return (int)w->n++;
}

/*  Writes member M's gathered bytes. */
static int flush(spm_npz_writer_t *w, wmember_t *m, const void *data, size_t len)
{
    if (len == 0)
        return 0;
    m->crc = crc(m->crc, data, len);
    int rc = spm_outfile_pwrite(w->out, data, len, m->data_at + m->head + m->flushed);
    m->flushed += len;
    return fail(w, rc);
}

int spm_npz_writer_put(spm_npz_writer_t *w, int i, const void *data, size_t len)
{
    if (w->rc != 0)
        return w->rc;
    if (i < 0 || (size_t)i >= w->n)
        return fail(w, spm_error(SPM_EINVAL, "npz: no member %d", i));
    wmember_t *m = &w->m[i];
    if (!m->grows && len > m->want - m->put)
        return fail(w, spm_error(SPM_ERANGE, "npz: more bytes than member '%s' holds", m->name));
    m->put += len;
    const unsigned char *p = data;
    if (m->fill == 0 && len >= PUT_BUFFER / 4)
        return flush(w, m, p, len); /* large puts go straight through, uncopied */
    if (!m->buf && !(m->buf = malloc(PUT_BUFFER)))
        return fail(w, spm_error(SPM_ENOMEM, "out of memory"));
    while (len > 0) {
        size_t n = len < PUT_BUFFER - m->fill ? len : PUT_BUFFER - m->fill;
        memcpy(m->buf + m->fill, p, n);
        m->fill += n;
        p += n;
        len -= n;
        if (m->fill == PUT_BUFFER) {
            m->fill = 0;
            int rc = flush(w, m, m->buf, PUT_BUFFER);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int spm_npz_writer_array(spm_npz_writer_t *w, const char *name, const spm_npy_t *a,
                         const void *data)
{
    int m = spm_npz_writer_add(w, name, a, 0);
    return m < 0 ? m : spm_npz_writer_put(w, m, data, w->m[m].want);
}

/*  Sets the first dimension of growing member M from the bytes put, and
    writes its .npy header. */
static int finish_growing(spm_npz_writer_t *w, wmember_t *m)
{
    uint64_t row = m->a.itemsize;
    for (uint32_t d = 1; d < m->a.ndim; d++)
        row *= m->a.shape[d];
    if (row == 0 || m->put % row != 0)
        return spm_error(SPM_EINVAL, "npz: member '%s' got %" PRIu64 " bytes, not whole rows",
                         m->name, m->put);
    m->a.shape[0] = m->put / row;
    m->want = m->put;
    char head[SPM_NPY_WRITTEN_MAX];
    spm_npy_header(&m->a, m->head, head);
    w->end = m->data_at + m->head + m->put;
    return spm_outfile_pwrite(w->out, head, m->head, m->data_at);
}

/*  Member M's local header into P; returns its length. */
static size_t local_header(const wmember_t *m, uint32_t sum, uint64_t size, unsigned char *p)
{
    size_t n = strlen(m->name);
    spm_put_le32(p, LOCAL_SIG);
    put_le16(p + 4, VERSION);
    put_le16(p + 6, 0);  /* flags */
    put_le16(p + 8, 0);  /* stored */
    put_le16(p + 10, 0); /* time */
    put_le16(p + 12, DOS_DATE);
    spm_put_le32(p + 14, sum);
    spm_put_le32(p + 18, m->zip64 ? MAX32 : (uint32_t)size);
    spm_put_le32(p + 22, m->zip64 ? MAX32 : (uint32_t)size);
    put_le16(p + 26, (uint16_t)n);
    put_le16(p + 28, m->zip64 ? 20 : 0);
    memcpy(p + LOCAL_HEAD, m->name, n);
    unsigned char *x = p + LOCAL_HEAD + n;
    if (m->zip64) {
        put_le16(x, 1);
        put_le16(x + 2, 16);
        spm_put_le64(x + 4, size);  /* uncompressed */
        spm_put_le64(x + 12, size); /* compressed */
    }
    return LOCAL_HEAD + n + (m->zip64 ? 20 : 0);
}

/*  Member M's directory entry into P (room for CENTRAL_HEAD, its name and
    28 bytes); returns its length. */
static size_t central_entry(const wmember_t *m, uint32_t sum, uint64_t size, unsigned char *p)
{
    size_t n = strlen(m->name), x = 0;
    int big = size >= MAX32, far = m->at >= MAX32;
    unsigned char *e = p + CENTRAL_HEAD + n;
    if (big || far) {
        put_le16(e, 1);
        x = 4;
        if (big) {
            spm_put_le64(e + x, size);
            spm_put_le64(e + x + 8, size);
            x += 16;
        }
        if (far) {
            spm_put_le64(e + x, m->at);
            x += 8;
        }
        put_le16(e + 2, (uint16_t)(x - 4));
    }
    spm_put_le32(p, CENTRAL_SIG);
    put_le16(p + 4, MADE_BY);
    put_le16(p + 6, x ? VERSION : 20);
    put_le16(p + 8, 0);
    put_le16(p + 10, 0);
    put_le16(p + 12, 0);
    put_le16(p + 14, DOS_DATE);
    spm_put_le32(p + 16, sum);
    spm_put_le32(p + 20, big ? MAX32 : (uint32_t)size);
    spm_put_le32(p + 24, big ? MAX32 : (uint32_t)size);
    put_le16(p + 28, (uint16_t)n);
    put_le16(p + 30, (uint16_t)x);
    put_le16(p + 32, 0); /* comment */
    put_le16(p + 34, 0); /* disk */
    put_le16(p + 36, 0); /* internal attributes */
    spm_put_le32(p + 38, FILE_ATTR);
    spm_put_le32(p + 42, far ? MAX32 : (uint32_t)m->at);
    memcpy(p + CENTRAL_HEAD, m->name, n);
    return CENTRAL_HEAD + n + x;
}

/*  The directory and end records after the members. */
static int write_directory(spm_npz_writer_t *w, const uint32_t *sums)
{
    size_t cap = END64_HEAD + LOCATOR_HEAD + END_HEAD, len = 0;
    for (size_t i = 0; i < w->n; i++)
        cap += CENTRAL_HEAD + strlen(w->m[i].name) + 28;
    unsigned char *p = malloc(cap);
    if (!p)
        return spm_error(SPM_ENOMEM, "out of memory");
    for (size_t i = 0; i < w->n; i++)
        len += central_entry(&w->m[i], sums[i], w->m[i].head + w->m[i].want, p + len);
    uint64_t at = w->end, size = len;
    int zip64 = at >= MAX32 || size >= MAX32 || w->n >= MAX16;
    if (zip64) {
        unsigned char *e = p + len;
        spm_put_le32(e, END64_SIG);
        spm_put_le64(e + 4, END64_HEAD - 12);
        put_le16(e + 12, MADE_BY);
        put_le16(e + 14, VERSION);
        spm_put_le32(e + 16, 0);
        spm_put_le32(e + 20, 0);
        spm_put_le64(e + 24, w->n);
        spm_put_le64(e + 32, w->n);
        spm_put_le64(e + 40, size);
        spm_put_le64(e + 48, at);
        e += END64_HEAD;
        spm_put_le32(e, LOCATOR_SIG);
        spm_put_le32(e + 4, 0);
        spm_put_le64(e + 8, at + size);
        spm_put_le32(e + 16, 1);
        len += END64_HEAD + LOCATOR_HEAD;
    }
    unsigned char *e = p + len;
    spm_put_le32(e, END_SIG);
    put_le16(e + 4, 0);
    put_le16(e + 6, 0);
    put_le16(e + 8, zip64 ? MAX16 : (uint16_t)w->n);
    put_le16(e + 10, zip64 ? MAX16 : (uint16_t)w->n);
    spm_put_le32(e + 12, zip64 ? MAX32 : (uint32_t)size);
    spm_put_le32(e + 16, zip64 ? MAX32 : (uint32_t)at);
    put_le16(e + 20, 0);
    len += END_HEAD;
    int rc = spm_outfile_pwrite(w->out, p, len, at);
    free(p);
    return rc;
}

int spm_npz_writer_close(spm_npz_writer_t **wp)
{
    spm_npz_writer_t *w = *wp;
    int rc = w->rc;
    uint32_t *sums = calloc(w->n ? w->n : 1, sizeof *sums);
    if (rc == 0 && !sums)
        rc = spm_error(SPM_ENOMEM, "out of memory");
    for (size_t i = 0; i < w->n && rc == 0; i++) {
        wmember_t *m = &w->m[i];
        rc = flush(w, m, m->buf, m->fill);
        m->fill = 0;
        if (rc == 0 && m->grows)
            rc = finish_growing(w, m);
        else if (rc == 0 && m->put != m->want)
            rc = spm_error(SPM_EINVAL, "npz: member '%s' got %" PRIu64 " of its %" PRIu64 " bytes",
                           m->name, m->put, m->want);
        if (rc != 0)
            break;
        char head[SPM_NPY_WRITTEN_MAX];
        spm_npy_header(&m->a, m->head, head);
        sums[i] = (uint32_t)crc32_combine(crc(0, head, m->head), m->crc, (z_off_t)m->put);
        unsigned char local[LOCAL_HEAD + NAME_MAX_BYTES + 20];
        size_t n = local_header(m, sums[i], m->head + m->put, local);
        rc = spm_outfile_pwrite(w->out, local, n, m->at);
    }
    if (rc == 0)
        rc = write_directory(w, sums);
    free(sums);
    spm_npz_writer_destroy(wp);
    return rc;
}

void spm_npz_writer_destroy(spm_npz_writer_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_npz_writer_t *w = *self_p;
    for (size_t i = 0; i < w->n; i++)
        free(w->m[i].buf);
    free(w->m);
    free(w);
    *self_p = NULL;
}

/* ---------------------------------------------------------------- reader */

typedef struct {
    char *name;      /* as stored, NUL-terminated */
    uint16_t flags;  /* general purpose bits */
    uint16_t method; /* 0 stored, 8 deflated */
    uint32_t crc;    /* CRC-32 of the uncompressed bytes */
    uint64_t csize;  /* compressed bytes */
    uint64_t usize;  /* uncompressed bytes */
    uint64_t at;     /* offset of the local header */
} rmember_t;

struct spm_npz {
    int fd;        /* the file */
    char *path;    /* as given */
    uint64_t size; /* its bytes */
    uint64_t dir;  /* where the central directory starts (members end there) */
    rmember_t *m;  /* the directory */
    size_t n;      /* members */
    size_t made;   /* entries of m allocated (their names freed at close) */
};

struct spm_npz_member {
    spm_npz_t *z;       /* the archive (not owned) */
    const rmember_t *e; /* its directory entry */
    char *label;        /* "PATH: NAME" */
    uint64_t data;      /* offset of its data */
    uint64_t done;      /* uncompressed bytes handed out */
    uint64_t cread;     /* compressed bytes read from the file */
    uint32_t crc;       /* of the bytes handed out */
    z_stream zs;        /* the inflater (deflated members) */
    int inflating;      /* zs is initialized */
    int ended;          /* the deflate stream has ended */
    unsigned char *in;  /* compressed bytes read ahead */
};

/*  Reads N bytes at OFFSET of Z's file into BUF. Returns 0, or SPM_EIO /
    SPM_EFORMAT (the file ends before them) with the detail naming WHAT. */
static int read_at(const spm_npz_t *z, void *buf, size_t n, uint64_t offset, const char *what)
{
    char *p = buf;
    for (size_t done = 0; done < n;) {
        ssize_t r = pread(z->fd, p + done, n - done, (off_t)(offset + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return spm_error(SPM_EIO, "%s: %s", z->path, strerror(errno));
        if (r == 0)
            return spm_error(SPM_EFORMAT, "%s: %s runs past the end of the file (truncated?)",
                             z->path, what);
        done += (size_t)r;
    }
    return 0;
}

static int not_zip(const spm_npz_t *z, const char *why)
{
    return spm_error(SPM_EFORMAT, "%s: not a zip archive, or truncated (%s)", z->path, why);
}

/*  Finds the end record in the file's last bytes: its offset into *AT
    and its 22 bytes into END. */
static int find_end(spm_npz_t *z, uint64_t *at, unsigned char *end)
{
    if (z->size < END_HEAD)
        return not_zip(z, "too short for its end record");
    size_t tail = z->size < END_HEAD + MAX16 ? (size_t)z->size : END_HEAD + MAX16;
    unsigned char *p = malloc(tail);
    if (!p)
        return spm_error(SPM_ENOMEM, "out of memory");
    int rc = read_at(z, p, tail, z->size - tail, "the end record"), found = 0;
    for (size_t i = tail - END_HEAD + 1; rc == 0 && !found && i-- > 0;)
        if (spm_le32(p + i) == END_SIG && i + END_HEAD + le16(p + i + 20) <= tail) {
            memcpy(end, p + i, END_HEAD);
            *at = z->size - tail + i;
            found = 1;
        }
    free(p);
    return rc ? rc : found ? 0 : not_zip(z, "no end of central directory record");
}

/*  Reads the ZIP64 end record the locator before END_AT points to. */
static int read_end64(spm_npz_t *z, uint64_t end_at, uint64_t *count, uint64_t *size,
                      uint64_t *offset, uint64_t *dir_end)
{
    unsigned char loc[LOCATOR_HEAD], e[END64_HEAD];
    if (end_at < LOCATOR_HEAD + END64_HEAD)
        return not_zip(z, "a ZIP64 archive without its ZIP64 end record");
    int rc = read_at(z, loc, LOCATOR_HEAD, end_at - LOCATOR_HEAD, "the ZIP64 locator");
    if (rc != 0)
        return rc;
    uint64_t at = spm_le64(loc + 8);
    if (spm_le32(loc) != LOCATOR_SIG || at > end_at - LOCATOR_HEAD - END64_HEAD)
        return not_zip(z, "a ZIP64 archive without its ZIP64 end record");
    if ((rc = read_at(z, e, END64_HEAD, at, "the ZIP64 end record")) != 0)
        return rc;
    if (spm_le32(e) != END64_SIG)
        return not_zip(z, "a ZIP64 end record that is not one");
    if (spm_le32(e + 16) != 0 || spm_le32(e + 20) != 0)
        return spm_error(SPM_EFORMAT, "%s: a zip archive split over several files", z->path);
    *count = spm_le64(e + 32);
    *size = spm_le64(e + 40);
    *offset = spm_le64(e + 48);
    *dir_end = at;
    return 0;
}

/*  Takes the ZIP64 extra field's values for the fields of E that hold
    0xffffffff, in the order the format gives them. */
static int zip64_extra(const spm_npz_t *z, rmember_t *e, const unsigned char *x, size_t len)
{
    for (size_t i = 0; i + 4 <= len;) {
        unsigned tag = le16(x + i), n = le16(x + i + 2);
        if (i + 4 + n > len)
            break;
        if (tag == 1) {
            const unsigned char *v = x + i + 4;
            size_t k = 0;
            uint64_t *want[3] = {&e->usize, &e->csize, &e->at};
            for (int f = 0; f < 3; f++)
                if (*want[f] == MAX32) {
                    if (k + 8 > n)
                        return spm_error(SPM_EFORMAT, "%s: %s: a ZIP64 field too short", z->path,
                                         e->name);
                    *want[f] = spm_le64(v + k);
                    k += 8;
                }
            return 0;
        }
        i += 4 + n;
    }
    if (e->usize == MAX32 || e->csize == MAX32 || e->at == MAX32)
        return spm_error(SPM_EFORMAT, "%s: %s: sizes past 4 GiB without a ZIP64 field", z->path,
                         e->name);
    return 0;
}

/*  Parses the directory of COUNT entries in the LEN bytes at P. */
static int parse_directory(spm_npz_t *z, const unsigned char *p, size_t len, uint64_t count)
{
    if (count > len / CENTRAL_HEAD)
        return spm_error(SPM_EFORMAT, "%s: the directory claims %" PRIu64 " members in %zu bytes",
                         z->path, count, len);
    if (!(z->m = calloc(count ? count : 1, sizeof *z->m)))
        return spm_error(SPM_ENOMEM, "out of memory");
    z->made = (size_t)count;
    size_t at = 0;
    for (z->n = 0; z->n < count; z->n++) {
        rmember_t *e = &z->m[z->n];
        if (at + CENTRAL_HEAD > len || spm_le32(p + at) != CENTRAL_SIG)
            return spm_error(SPM_EFORMAT, "%s: directory entry %zu is not one", z->path, z->n);
        const unsigned char *h = p + at;
        size_t nlen = le16(h + 28), xlen = le16(h + 30), clen = le16(h + 32);
        if (at + CENTRAL_HEAD + nlen + xlen + clen > len)
            return spm_error(SPM_EFORMAT, "%s: directory entry %zu runs past the directory",
                             z->path, z->n);
        if (!(e->name = strndup((const char *)h + CENTRAL_HEAD, nlen)))
            return spm_error(SPM_ENOMEM, "out of memory");
        e->flags = le16(h + 8);
        e->method = le16(h + 10);
        e->crc = spm_le32(h + 16);
        e->csize = spm_le32(h + 20);
        e->usize = spm_le32(h + 24);
        e->at = spm_le32(h + 42);
        int rc = zip64_extra(z, e, h + CENTRAL_HEAD + nlen, xlen);
        if (rc != 0)
            return rc;
        at += CENTRAL_HEAD + nlen + xlen + clen;
    }
    return 0;
}

spm_npz_t *spm_npz_open(const char *path)
{
    spm_npz_t *z = calloc(1, sizeof *z);
    if (!z || !(z->path = strdup(path))) {
        free(z);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    struct stat st;
    unsigned char end[END_HEAD] = {0}, *dir = NULL;
    uint64_t end_at = 0, count, size, offset, dir_end;
    int rc = 0;
    if ((z->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(z->fd, &st) != 0) {
        rc = spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        goto out;
    }
    z->size = (uint64_t)st.st_size;
    if ((rc = find_end(z, &end_at, end)) != 0)
        goto out;
    count = le16(end + 10);
    size = spm_le32(end + 12);
    offset = spm_le32(end + 16);
    dir_end = end_at;
    if (le16(end + 4) != 0 || le16(end + 6) != 0) {
        rc = spm_error(SPM_EFORMAT, "%s: a zip archive split over several files", path);
        goto out;
    }
    if ((count == MAX16 || size == MAX32 || offset == MAX32) &&
        (rc = read_end64(z, end_at, &count, &size, &offset, &dir_end)) != 0)
        goto out;
    if (offset > dir_end || size > dir_end - offset) {
        rc = not_zip(z, "a directory that runs past its end record");
        goto out;
    }
    z->dir = offset;
    if (!(dir = malloc(size ? size : 1))) {
        rc = spm_error(SPM_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = read_at(z, dir, (size_t)size, offset, "the central directory")) == 0)
        rc = parse_directory(z, dir, (size_t)size, count);
out:
    free(dir);
    if (rc != 0)
        spm_npz_destroy(&z);
    return z;
}

const char *spm_npz_path(const spm_npz_t *z)
{
    return z->path;
}

size_t spm_npz_count(const spm_npz_t *z)
{
    return z->n;
}

const char *spm_npz_name(const spm_npz_t *z, size_t i)
{
    return i < z->n ? z->m[i].name : NULL;
}

int spm_npz_find(const spm_npz_t *z, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < z->n && i < INT32_MAX; i++) {
        const char *s = z->m[i].name;
        if (strcmp(s, name) == 0 || (strncmp(s, name, n) == 0 && strcmp(s + n, ".npy") == 0))
            return (int)i;
    }
    return -1;
}

spm_npz_member_t *spm_npz_member_open(spm_npz_t *z, size_t i)
{
    spm_npz_member_t *m = calloc(1, sizeof *m);
    const rmember_t *e = &z->m[i];
    unsigned char h[LOCAL_HEAD];
    int rc = 0;
    if (!m || asprintf(&m->label, "%s: %s", z->path, e->name) < 0) {
        if (m)
            m->label = NULL;
        rc = spm_error(SPM_ENOMEM, "out of memory");
        goto out;
    }
    m->z = z;
    m->e = e;
    if (e->at > z->dir || (rc = read_at(z, h, LOCAL_HEAD, e->at, e->name)) != 0) {
        rc = rc ? rc : spm_error(SPM_EFORMAT, "%s: its data lies past the directory", m->label);
        goto out;
    }
    if (spm_le32(h) != LOCAL_SIG || le16(h + 8) != e->method) {
        rc = spm_error(SPM_EFORMAT, "%s: its local header does not match the directory", m->label);
        goto out;
    }
    m->data = e->at + LOCAL_HEAD + le16(h + 26) + le16(h + 28);
    if (e->flags & 1)
        rc = spm_error(SPM_EFORMAT, "%s: encrypted", m->label);
    else if (e->method != 0 && e->method != 8)
        rc = spm_error(SPM_EFORMAT,
                       "%s: compressed with method %u (only stored and deflated members are read)",
                       m->label, e->method);
    else if (m->data > z->dir || e->csize > z->dir - m->data)
        rc = spm_error(SPM_EFORMAT, "%s: its data runs past the end of the members (truncated?)",
                       m->label);
    else if (e->method == 0 && e->csize != e->usize)
        rc = spm_error(SPM_EFORMAT, "%s: stored, yet %" PRIu64 " bytes hold %" PRIu64, m->label,
                       e->csize, e->usize);
    else if (e->method == 8 && e->usize / INFLATE_RATIO > e->csize + 1)
        rc = spm_error(SPM_EFORMAT,
                       "%s: claims %" PRIu64 " bytes from %" PRIu64
                       " deflated (more than deflate can make)",
                       m->label, e->usize, e->csize);
    if (rc == 0 && e->method == 8) {
        if (!(m->in = malloc(READ_BUFFER)) || inflateInit2(&m->zs, -MAX_WBITS) != Z_OK)
            rc = spm_error(SPM_ENOMEM, "out of memory");
        else
            m->inflating = 1;
    }
out:
    if (rc != 0)
        spm_npz_member_destroy(&m);
    return m;
}

uint64_t spm_npz_member_size(const spm_npz_member_t *m)
{
    return m->e->usize;
}

const char *spm_npz_member_label(const spm_npz_member_t *m)
{
    return m->label;
}

/*  Inflates the next N bytes of M into BUF. */
static int inflate_into(spm_npz_member_t *m, unsigned char *buf, size_t n)
{
    m->zs.next_out = buf;
    m->zs.avail_out = 0;
    while (n > 0 || m->zs.avail_out > 0) {
        if (m->zs.avail_out == 0) {
            uInt step = n > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uInt)n;
            m->zs.avail_out = step;
            n -= step;
        }
        if (m->zs.avail_in == 0 && m->cread < m->e->csize) {
            size_t want = m->e->csize - m->cread < READ_BUFFER ? (size_t)(m->e->csize - m->cread)
                                                               : READ_BUFFER;
            int rc = read_at(m->z, m->in, want, m->data + m->cread, m->e->name);
            if (rc != 0)
                return rc;
            m->cread += want;
            m->zs.next_in = m->in;
            m->zs.avail_in = (uInt)want;
        }
        if (m->ended)
            return spm_error(SPM_EFORMAT, "%s: its deflated data ends early (corrupt?)", m->label);
        int z = inflate(&m->zs, Z_NO_FLUSH);
        if (z == Z_STREAM_END)
            m->ended = 1;
        else if (z == Z_BUF_ERROR && m->zs.avail_in == 0 && m->cread == m->e->csize)
            return spm_error(SPM_EFORMAT, "%s: its deflated data is cut short (truncated?)",
                             m->label);
        else if (z != Z_OK && z != Z_BUF_ERROR)
            return spm_error(SPM_EFORMAT, "%s: corrupt deflated data", m->label);
    }
    return 0;
}

int spm_npz_member_read(spm_npz_member_t *m, void *buf, size_t n)
{
    if (n > m->e->usize - m->done)
        return spm_error(SPM_EFORMAT, "%s: holds %" PRIu64 " bytes, fewer than it should", m->label,
                         m->e->usize);
    int rc = m->inflating ? inflate_into(m, buf, n)
                          : read_at(m->z, buf, n, m->data + m->done, m->e->name);
    if (rc != 0)
        return rc;
    m->crc = crc(m->crc, buf, n);
    m->done += n;
    if (m->done == m->e->usize && m->crc != m->e->crc)
        return spm_error(SPM_EFORMAT, "%s: its CRC-32 does not match (corrupt)", m->label);
    return 0;
}

void spm_npz_member_destroy(spm_npz_member_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_npz_member_t *m = *self_p;
    if (m->inflating)
        inflateEnd(&m->zs);
    free(m->in);
    free(m->label);
    free(m);
    *self_p = NULL;
}

void spm_npz_destroy(spm_npz_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_npz_t *z = *self_p;
    if (z->fd >= 0)
        close(z->fd);
    for (size_t i = 0; i < z->made; i++)
        free(z->m[i].name);
    free(z->m);
    free(z->path);
    free(z);
    *self_p = NULL;
}
