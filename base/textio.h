/*  =========================================================================
    textio - streaming line input with line numbers, and all-or-nothing output

    @discuss
    Input files (Matrix Market, FIMI transactions) can be larger than memory:
    spm_lines_t reads them a line at a time through a fixed buffer and knows
    the line number, so an error can say "A.mtx:12: ...". CRLF endings are
    accepted (the CR is dropped). spm_outfile_t writes to a temporary file
    beside the target and renames it into place only on commit, so a failed
    run never leaves a partial output file behind.

    An output file is written as `sort -o` writes it: nothing partial is
    ever seen under its name, but nothing is forced to the disk either
    unless the caller asks (spm_outfile_set_sync, a command's --sync): a
    crash of the machine after commit returned may lose a file that was
    reported written (the old one, or none, is then under the name).
    @end
    =========================================================================
*/
#ifndef SPM_TEXTIO_H_INCLUDED
#define SPM_TEXTIO_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct spm_lines spm_lines_t;

/*  Opens PATH ("-" is stdin) for reading. Returns NULL with the detail set
    (SPM_EIO: "PATH: No such file or directory"). Messages about its lines
    name it PATH, or "stdin". */
spm_lines_t *spm_lines_open(const char *path);

/*  Bytes that may be read past a line's NUL (their values are unspecified):
    a parser may load a word at a time up to the end of the line. */
#define SPM_LINES_PAD 8

/*  Reads the next line into *LINE (NUL-terminated, without the line end,
    followed by SPM_LINES_PAD readable bytes; valid until the next call)
    and *LEN. Returns 1 for a line, 0 at end of file, or SPM_EIO /
    SPM_EFORMAT (a NUL byte, a line over 64 MiB) with the detail naming
    file and line. *TRUNCATED is set when the file's last line had no
    newline (may be NULL). */
int spm_lines_next(spm_lines_t *r, char **line, size_t *len, int *truncated);

/*  Reads whole lines as they are in the file, line ends included: up to
    MAXLINES, and no more once they reach MAXBYTES (at least one), into
    *DATA (*LEN bytes, followed by SPM_LINES_PAD readable bytes; valid
    until the next call) and their count into *LINES. Nothing is checked
    but the lines' lengths: a client cuts a file into blocks with it,
    which the VM parses. Returns 1, 0 at end of file, or SPM_EIO /
    SPM_EFORMAT (a line over 64 MiB, a last line without a line end) with
    the detail naming file and line. Not to be mixed with spm_lines_next
    on one reader. */
int spm_lines_chunk(spm_lines_t *r, size_t maxlines, size_t maxbytes, const char **data,
                    size_t *len, size_t *lines);

/*  Line number of the last line returned (1-based). */
unsigned long spm_lines_lineno(const spm_lines_t *r);

/*  The path given to open ("stdin" for "-"), as messages name it. */
const char *spm_lines_path(const spm_lines_t *r);

/*  Records CODE with "PATH:LINE: MESSAGE" as the error detail; returns CODE. */
int spm_lines_error(const spm_lines_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void spm_lines_destroy(spm_lines_t **self);

typedef struct spm_outfile spm_outfile_t;

/*  Creates a temporary file beside PATH. "-" writes to stdout, and a PATH
    that exists and is no regular file (/dev/null, a FIFO, a terminal) is
    written in place: renaming over a device would replace it for every
    process. Returns NULL with the detail set. */
spm_outfile_t *spm_outfile_open(const char *path);

/*  The stream to write to. */
FILE *spm_outfile_stream(spm_outfile_t *f);

/*  With ON, commit makes the file durable: the file is synced before the
    rename and its directory after it, and the kernel is told to start
    writing it out every 8 MiB as it is written (so that the sync finds
    little left). Off by default: the file is only renamed into place. */
void spm_outfile_set_sync(spm_outfile_t *f, int on);

/*  Writes LEN bytes at DATA at OFFSET of the file, bypassing the stream
    (which must hold nothing unflushed there): for formats whose parts are
    filled in out of order (an .npz archive). The target must be seekable:
    a regular file (or /dev/null), never "-". Returns 0, or SPM_EIO /
    SPM_EFULL with "PATH: ..." in the detail; the first failure also
    fails commit. */
int spm_outfile_pwrite(spm_outfile_t *f, const void *data, size_t len, uint64_t offset);

/*  Flushes and renames into place (syncing first when asked). Returns 0,
    or SPM_EIO / SPM_EFULL (the temporary file is removed). Frees F and
    sets *F to NULL either way. */
int spm_outfile_commit(spm_outfile_t **f);

/*  Removes the temporary file; PATH is left as it was (what was written in
    place stays written). Sets *F to NULL. */
void spm_outfile_abort(spm_outfile_t **f);

#endif
