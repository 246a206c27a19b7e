/*  =========================================================================
    nparray - one NumPy array read in batches, from a .npy file or an
    .npz member
    =========================================================================
*/
#include "isa/core/nparray.h"
#include "isa/core/codec.h"
#include "spm/spm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct spm_nparray {
    char *label;         /* "PATH" or "PATH: NAME" */
    int fd;              /* a .npy file (-1 for a member) */
    spm_npz_member_t *m; /* or the member's stream */
    spm_npy_t h;         /* the header */
    uint64_t count;      /* elements */
    uint64_t at;         /* file offset of the next element's bytes (a file) */
    uint64_t done;       /* elements read */
};

/*  Reads N bytes of A's source into BUF: from the file at its offset, or
    the member's next. Returns 0, SPM_EIO or SPM_EFORMAT. */
static int source(spm_nparray_t *a, void *buf, size_t n)
{
    if (a->m)
        return spm_npz_member_read(a->m, buf, n);
    char *p = buf;
    for (size_t done = 0; done < n;) {
        ssize_t r = pread(a->fd, p + done, n - done, (off_t)(a->at + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return spm_error(SPM_EIO, "%s: %s", a->label, strerror(errno));
        if (r == 0)
            return spm_error(SPM_EFORMAT, "%s: the file ends early (truncated?)", a->label);
        done += (size_t)r;
    }
    a->at += n;
    return 0;
}

/*  The detail set by the call that failed with RC, prefixed with A's label. */
static int labeled(const spm_nparray_t *a, int rc)
{
    char what[1024];
    snprintf(what, sizeof what, "%s", spm_error_detail());
    return spm_error(rc, "%s: %s", a->label, what);
}

/*  Reads and parses the header from A's source; HOLDS is the bytes the
    source has from the header's start. */
static int read_header(spm_nparray_t *a, uint64_t holds)
{
    unsigned char pre[SPM_NPY_PREAMBLE], *head = NULL;
    size_t len, got = 10;
    int rc;
    if (holds < 10)
        return spm_error(SPM_EFORMAT, "%s: not a .npy array (%" PRIu64 " bytes)", a->label, holds);
    /* a member's stream is read no further than the header: 10 bytes
       tell version 1.0's length, 12 those of 2.0 and 3.0 */
    if ((rc = source(a, pre, 10)) != 0 ||
        (pre[6] != 1 && holds >= 12 && (rc = source(a, pre + 10, 2)) != 0))
        return rc;
    if (pre[6] != 1 && holds >= 12)
        got = 12;
    if ((rc = spm_npy_preamble(pre, got, &len)) != 0)
        return labeled(a, rc);
    if (len > holds)
        return spm_error(SPM_EFORMAT, "%s: its .npy header runs past its end (truncated?)",
                         a->label);
    if (!(head = malloc(len)))
        return spm_error(SPM_ENOMEM, "out of memory");
    memcpy(head, pre, got);
    if ((rc = source(a, head + got, len - got)) == 0 && (rc = spm_npy_parse(head, len, &a->h)) != 0)
        rc = labeled(a, rc);
    free(head);
    if (rc != 0)
        return rc;
    uint64_t bytes;
    char shape[128];
    if (a->h.kind == SPM_NPY_OTHER)
        return spm_error(SPM_EFORMAT, "%s: dtype '%s' is not read here", a->label, a->h.descr);
    if (spm_npy_size(&a->h, &a->count, &bytes) != 0 || bytes > holds - len)
        return spm_error(SPM_EFORMAT,
                         "%s: its header declares %s %s (%" PRIu64 " elements) but %" PRIu64
                         " bytes follow it (truncated or forged?)",
                         a->label, spm_npy_shape_text(&a->h, shape, sizeof shape), a->h.descr,
                         a->count, holds - len);
    return 0;
}

spm_nparray_t *spm_nparray_open(const char *path)
{
    spm_nparray_t *a = calloc(1, sizeof *a);
    struct stat st;
    if (!a || !(a->label = strdup(path))) {
        free(a);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    if ((a->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(a->fd, &st) != 0) {
        spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        spm_nparray_destroy(&a);
    } else if (read_header(a, (uint64_t)st.st_size) != 0) {
        spm_nparray_destroy(&a);
    }
    return a;
}

spm_nparray_t *spm_nparray_member(spm_npz_t *z, const char *name)
{
    int i = spm_npz_find(z, name);
    if (i < 0) {
        spm_error(SPM_EFORMAT, "%s: no member '%s.npy'", spm_npz_path(z), name);
        return NULL;
    }
    spm_nparray_t *a = calloc(1, sizeof *a);
    if (!a) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    a->fd = -1;
    if (!(a->m = spm_npz_member_open(z, (size_t)i)) ||
        !(a->label = strdup(spm_npz_member_label(a->m)))) {
        if (a->m)
            spm_error(SPM_ENOMEM, "out of memory");
        spm_nparray_destroy(&a);
    } else if (read_header(a, spm_npz_member_size(a->m)) != 0) {
        spm_nparray_destroy(&a);
    }
    return a;
}

const spm_npy_t *spm_nparray_header(const spm_nparray_t *a)
{
    return &a->h;
}

uint64_t spm_nparray_count(const spm_nparray_t *a)
{
    return a->count;
}

const char *spm_nparray_label(const spm_nparray_t *a)
{
    return a->label;
}

int spm_nparray_read(spm_nparray_t *a, void *buf, size_t n)
{
    if (n > a->count - a->done)
        return spm_error(SPM_EFORMAT, "%s: holds %" PRIu64 " elements, fewer than it should",
                         a->label, a->count);
    int rc = source(a, buf, n * a->h.itemsize);
    if (rc == 0)
        a->done += n;
    return rc;
}

int spm_nparray_index(spm_nparray_t *a, uint64_t *out, size_t n)
{
    spm_npy_kind_t k = a->h.kind;
    if (k != SPM_NPY_I4 && k != SPM_NPY_I8 && k != SPM_NPY_U4 && k != SPM_NPY_U8)
        return spm_error(SPM_EFORMAT, "%s: dtype '%s' is not an integer", a->label, a->h.descr);
    int rc = spm_nparray_read(a, out, n);
    if (rc != 0)
        return rc;
    /* in place, from the last: an element of 4 bytes never lies past the
       slot of 8 it goes to */
    const unsigned char *raw = (const unsigned char *)out;
    for (size_t i = n; i-- > 0;) {
        uint64_t v = a->h.itemsize == 4 ? spm_le32(raw + 4 * i) : spm_le64(raw + 8 * i);
        if (k == SPM_NPY_I4 && (v & 0x80000000u))
            return spm_error(SPM_EFORMAT, "%s: a negative element, %" PRId32, a->label,
                             (int32_t)(uint32_t)v);
        if ((k == SPM_NPY_I8 || k == SPM_NPY_U8) && (v >> 63))
            return spm_error(SPM_EFORMAT, "%s: an element %s", a->label,
                             k == SPM_NPY_I8 ? "that is negative" : "past 2^63");
        out[i] = v;
    }
    return 0;
}

int spm_nparray_real(spm_nparray_t *a, double *out, size_t n)
{
    if (a->h.kind != SPM_NPY_F8)
        return spm_error(SPM_EFORMAT, "%s: dtype '%s' is not float64 ('<f8')", a->label,
                         a->h.descr);
    int rc = spm_nparray_read(a, out, n);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t v = spm_le64((const unsigned char *)(out + i));
        memcpy(out + i, &v, 8);
    }
#endif
    return rc;
}

void spm_nparray_destroy(spm_nparray_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spm_nparray_t *a = *self_p;
    if (a->fd >= 0)
        close(a->fd);
    spm_npz_member_destroy(&a->m);
    free(a->label);
    free(a);
    *self_p = NULL;
}
