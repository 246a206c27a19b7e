/*  A shared object without SPM_PLUGIN (test_plugin: refused in one line,
    nothing of it runs). */
#include "spm.h"

SPM_CONSTRUCTOR(no_mark)
{
    *(volatile int *)0 = 1; /* would crash whoever ran it */
}
