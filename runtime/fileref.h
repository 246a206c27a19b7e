/*  =========================================================================
    fileref - a staged block that is a part of a file, read where it lies

    @discuss
    Where the IEUs can read a client's files by their paths (an embedded
    VM's, or a cluster's whose nodes share a file system: `spm ieu
    --local-files`), the command side stages a file's blocks as references
    (type "spm.file"): the path, the block's offset and length, and the
    file's size and modification time when it was staged; the command side
    reads none of the block's bytes (vm/client/stagefile.c). Before an SI
    body runs, the runtime reads the block from the file and checks the
    size and time before and after its read (spm_si_ctx_run), so the body
    sees the bytes as if they had been staged, and a file changed since
    fails the SI in one line instead of giving another answer. A change
    that leaves both as they were is not seen: a tool that sets the time
    back (touch -d, a copy that keeps times), or a write through a shared
    mapping whose page was already dirty, which the kernel does not stamp
    until it writes the page back. A checksum of each block made by the
    command side would see those too, but it meant reading every byte
    there before the job could start (a third of a second for 1 GiB, the
    IEUs idle), so none is kept.
    @end
    =========================================================================
*/
#ifndef SPM_FILEREF_H_INCLUDED
#define SPM_FILEREF_H_INCLUDED

#include "spm/spm.h"

#define SPM_FILEREF_TYPE "spm.file" /* the SDB type of a reference */

typedef struct {
    const char *path; /* absolute, not NUL-terminated in a block */
    size_t pathlen;
    uint64_t offset;  /* where the block starts in the file */
    uint64_t len;     /* its bytes */
    uint64_t size;    /* the file's size when it was staged */
    int64_t mtime_ns; /* its modification time then, in ns since the epoch */
} spm_fileref_t;

/*  Encodes R into *DATA (malloc'd, caller frees) and *LEN. Returns 0 or
    SPM_ENOMEM. */
int spm_fileref_encode(const spm_fileref_t *r, void **data, size_t *len);

/*  Views the LEN bytes at DATA as *R (no copy). Returns 0 or SPM_EFORMAT. */
int spm_fileref_view(const void *data, size_t len, spm_fileref_t *r);

/*  Reads the block R names from its file into *DATA and *LEN (read-only;
    *BUFFER, which holds them, is released with spm_fileref_release; NULL
    for an empty block), after checking that the file is the one staged:
    the same size and time before and after the read. Returns 0,
    SPM_EDENIED (this process may not read clients' files:
    spm_si_local_files), SPM_EIO (cannot be read here), SPM_ENOMEM or
    SPM_EFORMAT (it changed since it was staged), with a one-line detail
    naming the file. */
int spm_fileref_read(const spm_fileref_t *r, const void **data, size_t *len, void **buffer);

/*  Releases a BUFFER spm_fileref_read filled (NULL: nothing): it is kept
    for this thread's next block when it is at most 64 MiB, so that an IEU
    reading block after block writes into pages it has already touched. */
void spm_fileref_release(void *buffer);

#endif
