/*  A plugin whose SI body crashes its IEU (test_plugin: the job fails in
    one line after re-issues, the IEUs come back). */
#include "spm.h"

#include <signal.h>

SPM_PLUGIN;

static int crash_exec(spm_si_ctx_t *ctx)
{
    (void)ctx;
    raise(SIGSEGV);
    return 0;
}

static int crash_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)args;
    (void)len;
    int rc = spm_sf_issue(sf, "crash.si", NULL, 0, NULL, 0, 0);
    spm_sf_done(sf);
    return rc;
}

static const spm_sf_class_t crash_class = {.name = "crash.si.root", .start = crash_start};

SPM_CONSTRUCTOR(crash_si)
{
    spm_opcode_register(&(spm_opcode_t){.name = "crash.si", .exec = crash_exec});
    spm_program_register(&(spm_program_t){.name = "crash_si", .root = &crash_class});
}
