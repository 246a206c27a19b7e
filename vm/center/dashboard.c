/*  =========================================================================
    dashboard - the page `spm center --http` serves at /

    The page is written as HTML in vm/center/dashboard.html, where it reads and
    diffs as what it is, and assembled into this object as bytes with
    `.incbin` (the Makefile makes this object depend on the page). No
    generator and nothing from the network takes part in the build.
    =========================================================================
*/
#include "vm/center/dashboard.h"

__asm__(".section .rodata\n"
        ".global spm_dashboard_bytes\n"
        ".type spm_dashboard_bytes, @object\n"
        "spm_dashboard_bytes:\n"
        ".incbin \"vm/center/dashboard.html\"\n"
        ".global spm_dashboard_end\n"
        "spm_dashboard_end:\n"
        ".byte 0\n"
        ".previous\n");

extern const char spm_dashboard_bytes[], spm_dashboard_end[];

const char *spm_dashboard_page(size_t *len)
{
    *len = (size_t)(spm_dashboard_end - spm_dashboard_bytes);
    return spm_dashboard_bytes;
}
