/*  =========================================================================
    build - what this binary is: its version and the git commit it was
    built from

    @discuss
    `spm --version` prints both, and the center's and the agents' /metrics
    serve them as `spm_build_info{version="...",commit="..."} 1`, so that
    an operator sees which build each process of a cluster runs. The
    Makefile passes the commit (`git rev-parse`); a tree built outside git
    says "unknown".
    @end
    =========================================================================
*/
#ifndef SPM_BUILD_H_INCLUDED
#define SPM_BUILD_H_INCLUDED

#include <stdio.h>

/*  The release, "0.1.0". */
const char *spm_build_version(void);

/*  The abbreviated git commit the binary was built from, or "unknown". */
const char *spm_build_commit(void);

/*  Writes the family spm_build_info (Prometheus text, base/prom.h) with
    its one sample, `spm_build_info{version="...",commit="..."} 1`, for the
    process WHO ("center", "agent") names in its help. */
void spm_build_metric(FILE *f, const char *who);

#endif
