/*  =========================================================================
    textio - streaming line input with line numbers, and all-or-nothing output
    =========================================================================
*/
#include "isa/core/textio.h"
#include "vm/spm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINE (64u << 20)

struct spm_lines {
    FILE *in;             /* the stream (stdin is not closed) */
    char *path;           /* as given to open */
    char *buf;            /* current line, grown as needed */
    size_t cap;           /* bytes allocated in buf */
    unsigned long lineno; /* 1-based number of the line in buf */
};

spm_lines_t *spm_lines_open(const char *path)
{
    spm_lines_t *r = calloc(1, sizeof *r);
    if (!r) {
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    r->path = strdup(path);
    r->in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!r->in || !r->path) {
        spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        spm_lines_close(&r);
        return NULL;
    }
    return r;
}

int spm_lines_next(spm_lines_t *r, char **line, size_t *len, int *truncated)
{
    ssize_t n = getline(&r->buf, &r->cap, r->in);
    if (n < 0) {
        if (ferror(r->in))
            return spm_error(SPM_EIO, "%s: %s", r->path, strerror(errno));
        return 0;
    }
    r->lineno++;
    size_t l = (size_t)n;
    if (truncated)
        *truncated = !(l > 0 && r->buf[l - 1] == '\n');
    if (l > 0 && r->buf[l - 1] == '\n')
        l--;
    if (l > 0 && r->buf[l - 1] == '\r')
        l--;
    r->buf[l] = '\0';
    if (l > MAX_LINE)
        return spm_lines_error(r, SPM_EFORMAT, "line longer than %u bytes", MAX_LINE);
    if (strlen(r->buf) != l)
        return spm_lines_error(r, SPM_EFORMAT, "NUL byte in a text line");
    *line = r->buf;
    *len = l;
    return 1;
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

void spm_lines_close(spm_lines_t **r)
{
    if (!*r)
        return;
    if ((*r)->in && (*r)->in != stdin)
        fclose((*r)->in);
    free((*r)->buf);
    free((*r)->path);
    free(*r);
    *r = NULL;
}

struct spm_outfile {
    FILE *out;  /* the temporary file, the target itself (direct), or stdout */
    char *path; /* final path */
    char *tmp;  /* temporary path beside it (NULL for stdout and direct) */
    int direct; /* the target is no regular file (/dev/null, a FIFO): written in place */
};

spm_outfile_t *spm_outfile_open(const char *path)
{
    spm_outfile_t *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    if (strcmp(path, "-") == 0) {
        f->out = stdout;
        return f;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* Renaming over /dev/null would replace the device for everyone. */
        f->direct = 1;
        if (!(f->out = fopen(path, "w"))) {
            spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
            spm_outfile_abort(&f);
            return NULL;
        }
        return f;
    }
    if (asprintf(&f->tmp, "%s.tmp.XXXXXX", path) < 0) {
        f->tmp = NULL;
        spm_outfile_abort(&f);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    int fd = mkstemp(f->tmp);
    if (fd < 0 || !(f->out = fdopen(fd, "w"))) {
        spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(f->tmp);
        f->tmp = NULL;
        spm_outfile_abort(&f);
        return NULL;
    }
    return f;
}

FILE *spm_outfile_stream(spm_outfile_t *f)
{
    return f->out;
}

static int io_error(const char *path, int err)
{
    return spm_error(err == ENOSPC || err == EDQUOT ? SPM_EFULL : SPM_EIO, "%s: %s", path,
                     strerror(err));
}

int spm_outfile_commit(spm_outfile_t **fp)
{
    spm_outfile_t *f = *fp;
    int rc = 0;
    if (f->out == stdout || f->direct) {
        if (fflush(f->out) != 0 || ferror(f->out))
            rc = io_error(f->path, errno ? errno : EIO);
        spm_outfile_abort(fp);
        return rc;
    }
    if (fflush(f->out) != 0 || ferror(f->out) || fsync(fileno(f->out)) != 0)
        rc = io_error(f->path, errno ? errno : EIO);
    if (fclose(f->out) != 0 && rc == 0)
        rc = io_error(f->path, errno);
    f->out = NULL;
    if (rc == 0 && rename(f->tmp, f->path) != 0)
        rc = io_error(f->path, errno);
    spm_outfile_abort(fp);
    return rc;
}

void spm_outfile_abort(spm_outfile_t **fp)
{
    spm_outfile_t *f = *fp;
    if (!f)
        return;
    if (f->out && f->out != stdout)
        fclose(f->out);
    if (f->tmp)
        unlink(f->tmp); /* after a successful rename this is already gone */
    free(f->tmp);
    free(f->path);
    free(f);
    *fp = NULL;
}
