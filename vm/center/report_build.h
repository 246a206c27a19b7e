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

/*  JOB's figures per opcode so far, as a malloc'd array of malloc'd
    entries in *OUT (each freed with spm__opcode_report__free_unpacked(o,
    NULL), then the array with free; *OUT may be NULL when out of
    memory). Returns how many entries. */
size_t spm_report_build_opcodes(spm_idu_t *idu, uint64_t job, Spm__OpcodeReport ***out);

#endif
