/*  =========================================================================
    progress - a one-line meter for a client's long phases on a terminal

    @discuss
    A job shows its own bar (spm_session_run). Before and after it, a
    client may read and write files for seconds or minutes: `spm matmul`
    parses its inputs and formats C.mtx. A meter names the phase and shows
    how far it got:

        spm_progress_t p;
        spm_progress_begin(&p, spm_run_opts_bar(&o), "reading A.mtx", entries);
        ... spm_progress_set(&p, done);      -- cheap; redraws 5 times a second
        spm_progress_end(&p);                -- clears the line

    It draws on stdout, and only where the job's bar would: a terminal, and
    neither --quiet nor --json. Off, every call does nothing.
    @end
    =========================================================================
*/
#ifndef SPM_PROGRESS_H_INCLUDED
#define SPM_PROGRESS_H_INCLUDED

#include <stdint.h>
#include <stdio.h>

#define SPM_PROGRESS_BAR 30 /* characters of a bar */

typedef struct {
    int on;            /* drawing at all */
    int drawn;         /* the line shows something to clear */
    const char *label; /* "reading A.mtx" (not copied) */
    uint64_t total;    /* units of the whole phase, 0: unknown */
    uint64_t t0_us;    /* when the phase began */
    uint64_t next_us;  /* no redraw before this */
    FILE *out;         /* where it draws */
} spm_progress_t;

/*  Begins a phase LABEL of TOTAL units (0 when unknown); draws nothing
    unless ON. */
void spm_progress_begin(spm_progress_t *p, int on, const char *label, uint64_t total);

/*  The same, drawing on OUT (stderr, for a command whose stdout is its
    output). */
void spm_progress_begin_to(spm_progress_t *p, FILE *out, int on, const char *label, uint64_t total);

/*  DONE units of the phase are done. */
void spm_progress_set(spm_progress_t *p, uint64_t done);

/*  Ends the phase and clears its line. */
void spm_progress_end(spm_progress_t *p);

/*  Fills BAR (SPM_PROGRESS_BAR characters and a NUL) for FRAC in [0, 1]. */
void spm_progress_bar(char *bar, double frac);

#endif
