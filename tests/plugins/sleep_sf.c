/*  A plugin whose root super-function sleeps far past the bound in its
    commit callback (test_isolation: its job fails in one line naming the
    callback; nobody else waits for it). */
#include "spm.h"

#include <time.h>

SPM_PLUGIN;

static int nap_exec(spm_si_ctx_t *ctx)
{
    (void)ctx;
    return 0;
}

static int sleep_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)args;
    (void)len;
    int rc = spm_sf_issue(sf, "sleep.nap", NULL, 0, NULL, 0, 0);
    spm_sf_done(sf);
    return rc;
}

static void sleep_commit(spm_sf_t *sf, const spm_result_t *r)
{
    (void)sf;
    (void)r;
    struct timespec ts = {60, 0};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static const spm_sf_class_t sleep_class = {
    .name = "sleep.root", .start = sleep_start, .commit = sleep_commit};

SPM_CONSTRUCTOR(sleep_sf)
{
    spm_opcode_register(&(spm_opcode_t){.name = "sleep.nap", .exec = nap_exec});
    spm_program_register(&(spm_program_t){.name = "sleep_sf", .root = &sleep_class});
}
