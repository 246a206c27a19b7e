/*  =========================================================================
    report_build - the run report of a job, made from the IDU's counters
    =========================================================================
*/
#ifndef SPM_REPORT_BUILD_H_INCLUDED
#define SPM_REPORT_BUILD_H_INCLUDED

#include "idu/idu.h"
#include "transport/report.h"

/*  Builds the report of JOB (malloc'd; free with spm_report_free), or NULL. */
Spm__Report *spm_report_build(spm_idu_t *idu, uint64_t job);

#endif
