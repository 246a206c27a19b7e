/*  A plugin whose super-function crashes at its first commit
    (test_plugin, test_isolation: its host dies of it, its job fails in one
    line naming the callback, and the center and the other jobs go on). */
#include "spm.h"

#include <signal.h>

SPM_PLUGIN;

static int nap_exec(spm_si_ctx_t *ctx)
{
    (void)ctx;
    return 0;
}

static int crash_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)args;
    (void)len;
    int rc = spm_sf_issue(sf, "crash.nap", NULL, 0, NULL, 0, 0);
    spm_sf_done(sf);
    return rc;
}

static void crash_commit(spm_sf_t *sf, const spm_result_t *r)
{
    (void)sf;
    (void)r;
    raise(SIGSEGV);
}

static const spm_sf_class_t crash_class = {
    .name = "crash.sf.root", .start = crash_start, .commit = crash_commit};

SPM_CONSTRUCTOR(crash_sf)
{
    spm_opcode_register(&(spm_opcode_t){.name = "crash.nap", .exec = nap_exec});
    spm_program_register(&(spm_program_t){.name = "crash_sf", .root = &crash_class});
}
