/*  A plugin that calls a function no spm has (test_plugin: the center
    refuses it in one line; no constructor of it runs). */
#include "spm.h"

SPM_PLUGIN;

int spm_no_such_function(void);

SPM_CONSTRUCTOR(missing_symbol)
{
    *(volatile int *)0 = spm_no_such_function(); /* never runs: the load fails first */
}
