/*  A plugin whose root super-function never returns from start
    (test_isolation: its job fails in one line once its host overruns the
    bound, and the center serves everyone else meanwhile). */
#include "spm.h"

SPM_PLUGIN;

static int loop_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)sf;
    (void)args;
    (void)len;
    for (volatile unsigned long i = 0;; i++)
        ;
    return 0;
}

static const spm_sf_class_t loop_class = {.name = "loop.root", .start = loop_start};

SPM_CONSTRUCTOR(loop_sf)
{
    spm_program_register(&(spm_program_t){.name = "loop_sf", .root = &loop_class});
}
