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

/*  What tells one state of a regular file from another without reading
    it: where it is (device, inode), its size and the time it was last
    written. A change within the file system's timestamp granularity (a
    few ms) at the same size may keep the stamp: readers that must catch
    every change compare a checksum of what they read too. */
typedef struct {
    uint64_t dev, ino; /* the file */
    uint64_t size;     /* its bytes */
    uint64_t mtime_ns; /* last written, ns since the epoch */
} spm_file_stamp_t;

/*  The stamp of the open file FD into *S. Returns 1 for a regular file,
    0 for anything else (a pipe, a device: no stamp), -1 when fstat
    fails (errno set). */
int spm_file_stamp(int fd, spm_file_stamp_t *s);

/*  1 when stamps A and B are of the same file in the same state. */
int spm_file_stamp_eq(const spm_file_stamp_t *a, const spm_file_stamp_t *b);

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

/*  Reads up to N bytes of what follows the last line returned into BUF
    (owned by the caller): first what R had read ahead, then the file
    itself. Returns the bytes read (0 at the end of the file), or SPM_EIO
    with "PATH: REASON" in the detail. For a parser that cuts the rest of
    a file into chunks of its own (isa/matrix/mmtext.h) after reading a
    header with spm_lines_next; the line numbers are then the caller's to
    count. Not to be mixed with spm_lines_next or spm_lines_chunk after. */
long spm_lines_read(spm_lines_t *r, char *buf, size_t n);

/*  Line number of the last line returned (1-based). */
unsigned long spm_lines_lineno(const spm_lines_t *r);

/*  The path given to open ("stdin" for "-"), as messages name it. */
const char *spm_lines_path(const spm_lines_t *r);

/*  The stamp of R's file as it was opened, or NULL when it is no regular
    file (stdin from a pipe). */
const spm_file_stamp_t *spm_lines_stamp(const spm_lines_t *r);

/*  Checks that R's file is still what was opened: the same size and
    modification time, and still under its path (not replaced by another
    file, as `mv new PATH` does). Returns 0 (also for no regular file), or
    SPM_EIO with "PATH: the file changed while it was read". A reader
    calls it once it has read what it needs, so that a file rewritten or
    replaced meanwhile fails instead of giving lines of two files. */
int spm_lines_unchanged(const spm_lines_t *r);

/*  Records CODE with "PATH:LINE: MESSAGE" as the error detail; returns CODE. */
int spm_lines_error(const spm_lines_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void spm_lines_destroy(spm_lines_t **self_p);

typedef struct spm_outfile spm_outfile_t;

/*  Creates a temporary file beside PATH. "-" writes to stdout (messages
    name it "stdout"; what was printed to it before is flushed first), and a PATH
    that exists and is no regular file (/dev/null, a FIFO, a terminal) is
    written in place: renaming over a device would replace it for every
    process. Returns NULL with the detail set. */
spm_outfile_t *spm_outfile_open(const char *path);

/*  The stream to write to. */
FILE *spm_outfile_stream(spm_outfile_t *f);

/*  When a write to F failed (through its stream or spm_outfile_pwrite),
    records "PATH: REASON" as the error (SPM_EFULL for a full disk, else
    SPM_EIO; PATH is "stdout" for "-") and returns its code; else returns
    RC unchanged. A writer that has only the stream (Matrix Market, npz,
    the rules' text) can tell that a write failed, but not to which file
    nor why (errno is gone by the time it looks): its caller passes the
    writer's failure through this, so that the user reads
    "spm: mine: rules.txt: No space left on device". F may be NULL. */
int spm_outfile_failure(spm_outfile_t *f, int rc);

/*  Refuses an output that would replace one of the N inputs at IN (NULL
    and "-" entries are skipped): returns 0 when OUT is "-", does not
    exist yet, or is no regular file (/dev/null), or names none of them;
    else SPM_EINVAL with "OUT is the input IN: ..." in the detail. Files
    are compared by device and inode, so a hard or symbolic link to an
    input is that input. To be called before anything is opened for
    writing: spm_outfile_commit would rename the output over the input. */
int spm_outfile_apart(const char *out, const char *const *in, size_t n);

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
