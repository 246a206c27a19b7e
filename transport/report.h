/*  =========================================================================
    report - the run report: built in the center, printed by the client

    @discuss
    The overhead model is the SPM dissertation's (equations 5.5-5.7), with
    every term measured: W_ideal is the time IEU slots spent executing SI
    bodies, W_comm the time a free slot waited for operands, W_idle the rest
    of the slots' capacity while the job ran, W_man the center's CPU time
    during the job. w_x = W_x / W_ideal and E = W_ideal / (sum of all).
    @end
    =========================================================================
*/
#ifndef SPM_REPORT_H_INCLUDED
#define SPM_REPORT_H_INCLUDED

#include <stdio.h>

#include "transport/spm.pb-c.h" /* generated into build/gen */

void spm_report_free(Spm__Report *r);

/*  The end state a job's report STATUS (0 or an SPM_E* code) means:
    "done", "canceled" (SPM_ECANCELED) or "failed". */
const char *spm_report_state(int status);

typedef struct {
    double w_idle, w_comm, w_man, efficiency;
    double busy_s, wait_s, idle_s, man_s;
} spm_overheads_t;

/*  Derives the overhead figures from R. */
void spm_report_overheads(const Spm__Report *r, spm_overheads_t *o);

/*  Prints R as text (JSON when AS_JSON, with stable key names) to OUT. */
void spm_report_print(const Spm__Report *r, int as_json, FILE *out);

#endif
