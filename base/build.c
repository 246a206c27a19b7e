/*  =========================================================================
    build - the version and the git commit of this binary (base/build.h)
    =========================================================================
*/
#include "base/build.h"
#include "base/prom.h"

#define SPM_VERSION "0.1.0"

/* The Makefile passes it for this file alone (it changes with every commit). */
#ifndef SPM_COMMIT
#define SPM_COMMIT "unknown"
#endif

const char *spm_build_version(void)
{
    return SPM_VERSION;
}

const char *spm_build_commit(void)
{
    return *SPM_COMMIT ? SPM_COMMIT : "unknown";
}

void spm_build_metric(FILE *f, const char *who)
{
    char help[128], l[160];
    snprintf(help, sizeof help, "The build of the %s: its version and git commit (always 1).", who);
    spm_prom_family(f, "spm_build_info", "gauge", help);
    spm_prom_sample(f, "spm_build_info",
                    spm_prom_labels(l, sizeof l, "version", spm_build_version(), "commit",
                                    spm_build_commit(), NULL),
                    1);
}
