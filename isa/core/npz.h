/*  =========================================================================
    npz - NumPy's .npz archive: a zip file of .npy members

    @header
    numpy.savez and numpy.savez_compressed write several arrays as one zip
    archive, one member "NAME.npy" per array (npy.h), stored or deflated;
    scipy.sparse.save_npz writes a sparse matrix so, and numpy.load reads
    any of them back by name. This module writes such archives (members
    stored, since the arrays are written at the disk's speed, not
    compressed) and reads them: stored and deflated members, ZIP64 where a
    member or the archive passes 4 GiB.
    @discuss
    Writing: the members are declared first, each with its array's header
    (dtype and shape), so that the archive's layout is known and every
    member's bytes can be put in any order between members, each member's
    own in order: a matrix's indices and values are produced together and
    go to their two members at once. Only the last member may be declared
    without its first dimension (SPM_NPZ_GROWS): what is put decides it.

        spm_npz_writer_t *w = spm_npz_writer_new(out);    // an spm_outfile_t
        int d = spm_npz_writer_add(w, "data", &a, 0);      // a: dtype, shape
        int i = spm_npz_writer_add(w, "indices", &b, 0);
        spm_npz_writer_put(w, d, values, n * 8);           // in any order
        spm_npz_writer_put(w, i, cols, n * 4);
        rc = spm_npz_writer_close(&w);                     // headers, directory

    The output is the same bytes for the same arrays: every member is dated
    1980-01-01 00:00, the zip epoch.

    Reading: spm_npz_open reads the central directory; a member is then a
    stream of its uncompressed bytes (checked against its CRC-32 at its
    end), several of them open at once on one archive. Memory is a buffer
    per open member and the directory, whatever sizes the archive claims.
    Every error is one line naming the file (and the member).
    @end
    =========================================================================
*/
#ifndef SPM_NPZ_H_INCLUDED
#define SPM_NPZ_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#include "base/textio.h"
#include "isa/core/npy.h"

/* ---------------------------------------------------------------- writer */

typedef struct spm_npz_writer spm_npz_writer_t;

/*  spm_npz_writer_add's FLAGS: the array's first dimension is what the
    bytes put make of it (the last member only). */
#define SPM_NPZ_GROWS 1u

/*  A writer of an archive into OUT (not owned: the caller commits or
    aborts it), a regular file written with spm_outfile_pwrite. NULL when
    out of memory. */
spm_npz_writer_t *spm_npz_writer_new(spm_outfile_t *out);

/*  Declares the next member, NAME.npy, holding array A (its header is
    copied). Returns the member's number for spm_npz_writer_put (0, 1, ...),
    or SPM_EINVAL (a member after a growing one, a name over 200 bytes, an
    array of unknown element size), SPM_ENOMEM, or the write's SPM_EIO /
    SPM_EFULL. */
int spm_npz_writer_add(spm_npz_writer_t *w, const char *name, const spm_npy_t *a, unsigned flags);

/*  Appends the LEN bytes at DATA to member M's array. Returns 0, SPM_ERANGE
    (more than its shape holds), or SPM_EIO / SPM_EFULL with the detail. */
int spm_npz_writer_put(spm_npz_writer_t *w, int m, const void *data, size_t len);

/*  Declares member NAME holding array A and puts its bytes at DATA: a
    small array written whole. Returns as spm_npz_writer_add, 0 on success. */
int spm_npz_writer_array(spm_npz_writer_t *w, const char *name, const spm_npy_t *a,
                         const void *data);

/*  Finishes the archive: checks that every member got all its bytes (a
    growing one a whole number of rows), writes the headers, the central
    directory and the end records. Frees *W and sets it to NULL. Returns 0,
    SPM_EINVAL (a member short of bytes: a caller's bug), or the first
    error a put or a write had. */
int spm_npz_writer_close(spm_npz_writer_t **w);

/*  Frees *W without finishing (safe on NULL); sets it to NULL. */
void spm_npz_writer_destroy(spm_npz_writer_t **self_p);

/* ---------------------------------------------------------------- reader */

typedef struct spm_npz spm_npz_t;

/*  Opens the archive at PATH and reads its central directory. Returns it
    (caller closes) or NULL with the detail: SPM_EIO (cannot open or read)
    or SPM_EFORMAT ("PATH: not a zip archive, or truncated (...)", a
    directory that runs past the file, a split archive). */
spm_npz_t *spm_npz_open(const char *path);

/*  The path given to open. */
const char *spm_npz_path(const spm_npz_t *z);

/*  Members in the directory, and the name of member I (as stored: "x.npy"). */
size_t spm_npz_count(const spm_npz_t *z);
const char *spm_npz_name(const spm_npz_t *z, size_t i);

/*  The member named NAME, or NAME.npy: its number, or -1. */
int spm_npz_find(const spm_npz_t *z, const char *name);

typedef struct spm_npz_member spm_npz_member_t;

/*  Opens member I as a stream of its bytes. Returns it (caller closes it,
    before the archive) or NULL with the detail: SPM_EFORMAT (a local
    header that is not one or does not match the directory, data that
    runs past the file, an encrypted member, a method other than stored
    and deflated), SPM_EIO, SPM_ENOMEM. */
spm_npz_member_t *spm_npz_member_open(spm_npz_t *z, size_t i);

/*  The bytes the directory says member M holds (uncompressed). */
uint64_t spm_npz_member_size(const spm_npz_member_t *m);

/*  The member's name, "PATH: NAME", for messages. */
const char *spm_npz_member_label(const spm_npz_member_t *m);

/*  Reads the next N bytes of M into BUF, all of them. Returns 0, or
    SPM_EFORMAT with "PATH: NAME: ..." (fewer bytes left than N, data
    that ends early or is corrupt, a CRC-32 that does not match once the
    last byte is read), SPM_EIO. */
int spm_npz_member_read(spm_npz_member_t *m, void *buf, size_t n);

/*  Closes *M (safe on NULL) and sets it to NULL. */
void spm_npz_member_destroy(spm_npz_member_t **self_p);

/*  Closes *Z (safe on NULL) and sets it to NULL. */
void spm_npz_destroy(spm_npz_t **self_p);

#endif
