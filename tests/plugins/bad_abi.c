/*  A plugin marked with an ABI version no spm has (test_plugin: refused
    in one line, nothing of it runs). */
#include "spm.h"

__attribute__((used, section("spm_plugin"))) const spm_plugin_mark_t spm_plugin_mark = {
    "spm-abi", SPM_ABI_VERSION + 98, sizeof(spm_plugin_mark_t)};

SPM_CONSTRUCTOR(bad_abi)
{
    *(volatile int *)0 = 1; /* would crash whoever ran it */
}
