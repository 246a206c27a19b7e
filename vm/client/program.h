/*  =========================================================================
    program - a plugin program's command side (spm_main_t) and what it may
    ask of the VM: staging files, buffers and arrays, running its root SF,
    fetching results in order (spm.h, "command side")

    @discuss
    `spm run --plugin LIB PROGRAM` loads LIB into the client too; when the
    program registered a main (spm_main_register), the client runs it with
    an spm_client_t instead of sending the words to the root SF itself.
    The session (and an embedded VM) is opened at the main's first request
    of the VM, so that --help and a bad option cost none.
    @end
    =========================================================================
*/
#ifndef SPM_PROGRAM_H_INCLUDED
#define SPM_PROGRAM_H_INCLUDED

#include "vm/client/session.h"

/*  Runs M, the command side of PROGRAM of the plugin whose LEN bytes are at
    OBJECT (checked and loaded in this process), with ARGC words ARGV
    (ARGV[0] the program's name), on a VM per O; SHARED_FILES: the nodes
    read files by the paths this machine gives them (`--shared-files`).
    Returns what M returns (0 or an SPM_E* code with the detail set). */
int spm_client_main_run(const spm_main_t *m, const spm_run_opts_t *o, int shared_files,
                        const void *object, size_t len, int argc, char **argv);

/*  The session of C, opened (and the plugin put) at the first call.
    Returns 0 with *S set, or the failure to open it. */
int spm_client_session(spm_client_t *c, spm_session_t **s);

/*  Whether C's IEUs read staged files where they lie. */
int spm_client_files_in_place(spm_client_t *c);

/*  Keeps IDS (malloc'd) to be freed when the main returns. Returns 0 or
    SPM_ENOMEM (IDS is freed then). */
int spm_client_own(spm_client_t *c, spm_sdb_t *ids);

/*  Whether staging meters draw (stderr a terminal, not --quiet). */
int spm_client_meter(const spm_client_t *c);

#endif
