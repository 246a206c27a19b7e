/*  =========================================================================
    sink - an output file that is all-or-nothing when it can be

    @header
    spm_outfile_t writes a temporary file beside the target and renames it
    into place, which must not happen to /dev/null, a FIFO or a terminal:
    renaming over /dev/null replaces the device with a regular file for
    every process on the machine. A sink uses spm_outfile_t for regular
    files (and new paths) and writes straight into anything else.
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_SINK_H_INCLUDED
#define SPM_APRIORI_SINK_H_INCLUDED

#include <stdio.h>

#include "isa/core/textio.h"

typedef struct {
    spm_outfile_t *of; /* regular file or new path: written aside, renamed on commit */
    FILE *direct;      /* device, FIFO, ...: written in place */
} spm_sink_t;

/*  Opens PATH ("-": stdout). Returns 0, or SPM_EIO with the detail set. */
int spm_sink_open(spm_sink_t *s, const char *path);

/*  The stream to write to. */
FILE *spm_sink_stream(spm_sink_t *s);

/*  Finishes the output. Returns 0, or SPM_EIO / SPM_EFULL. Closes S either way. */
int spm_sink_commit(spm_sink_t *s);

/*  Drops the output (a regular file is left as it was). Closes S; no-op when closed. */
void spm_sink_abort(spm_sink_t *s);

#endif
