/*  =========================================================================
    mmtext - the entries of a Matrix Market file, parsed on every core

    @header
    Parsing the text of two large Matrix Market files was most of what
    `spm matmul` did besides its job: one thread per file, a line at a
    time. spm_mmtext_t cuts the entries' part of a file (what follows the
    size line) into chunks of whole lines and parses them on a thread per
    core; the reader (mmio.c) takes the parsed chunks back in file order,
    so the entries come out exactly as a one-line-at-a-time parser would
    give them, and so do the errors, with their line numbers.
    @discuss
    Reading is one thread at a time (it is a copy from the page cache);
    parsing, most of the work, runs on all of them. Memory is bounded: at
    most SLOTS chunks (a few MiB of text and their entries) are held at
    once, whatever the file's size; a thread waits while the reader has
    not taken the oldest.

    Each chunk counts its lines, so the reader can name the line of any
    entry or error: the number of the chunk's first line is that of the
    lines before it plus one. A line that does not parse on the fast path
    (plain digits, a value numparse reads, blanks, CRLF) goes to the full
    parser of one line, whose message is the one a user reads.
    @end
    =========================================================================
*/
#ifndef SPM_MMTEXT_H_INCLUDED
#define SPM_MMTEXT_H_INCLUDED

#include "base/textio.h"
#include "isa/matrix/mmio.h"

#include <stddef.h>
#include <stdint.h>

/*  Bytes of text a chunk holds when nothing else is asked (whole lines:
    a little less, or more for a line longer than this). */
#define SPM_MMTEXT_CHUNK ((size_t)1 << 20)

/*  One parsed chunk, in file order. */
typedef struct {
    const uint32_t *row, *col; /* coordinate files: 0-based indices of each entry */
    const double *val;         /* each entry's value (1 for a pattern) */
    size_t n;                  /* entries parsed (all of the chunk's, or those before err) */
    unsigned long lines;       /* lines in the chunk (a last one without newline counted) */
    int err;                   /* 0, or the SPM_E* that ends the file at this chunk */
    int err_data;              /* err is on a data line (not blank, not a comment) */
    unsigned long err_line;    /* its line within the chunk (1-based) */
    char err_msg[512];         /* what is wrong, without "PATH:LINE: " */
} spm_mmtext_chunk_t;

typedef struct spm_mmtext spm_mmtext_t;

/*  Starts parsing what is left of IN (not owned; must outlive the parser
    and be read by nothing else meanwhile) as the entries of a file of
    header H, in chunks of about CHUNK bytes (0: SPM_MMTEXT_CHUNK) on
    THREADS threads (0: one per core, at most 8), into *OUT (the caller
    destroys it). Returns 0, or SPM_ENOMEM / SPM_ESYS (a thread could not
    be started) with the detail set and *OUT NULL. */
int spm_mmtext_new(spm_lines_t *in, const spm_mmio_header_t *h, size_t chunk, int threads,
                   spm_mmtext_t **out);

/*  The next chunk in file order into *C (owned by the parser, valid until
    the next call). Returns 1, or 0 after the last chunk. A chunk whose
    err is set is the last one handed out. */
int spm_mmtext_next(spm_mmtext_t *t, const spm_mmtext_chunk_t **c);

/*  The line within chunk C (1-based) of its data line K (0-based; the
    K-th entry's line, or, for K == C->n, the line of err). */
unsigned long spm_mmtext_data_line(const spm_mmtext_t *t, const spm_mmtext_chunk_t *c, size_t k);

/*  1 when the NUL-terminated line S holds only white space. */
int spm_mmtext_blank(const char *s);

/*  Reads the unsigned decimal at *P (after white space; then white space
    or the end must follow), as the size line's numbers and the indices
    are read, into *OUT and moves *P past it. Returns 0, or -1 (no digits,
    out of range, something else after them). */
int spm_mmtext_u64(const char **p, uint64_t *out);

/*  Stops the threads and frees *SELF_P (safe on NULL); sets it to NULL. */
void spm_mmtext_destroy(spm_mmtext_t **self_p);

#endif
