/*  =========================================================================
    errors - names for every SPM_E* code, and the per-thread error detail

    A failure deep in a reader or a socket handler has to reach the user as
    one line that says what was wrong. spm_error() records the detail where
    the failure is found; the command that gives up prints it once.
    =========================================================================
*/
#include "spm/spm.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char detail[1024]; /* last detail message on this thread */

const char *spm_strerror(int code)
{
    switch (code) {
    case SPM_OK:
        return "success";
    case SPM_EINVAL:
        return "invalid argument";
    case SPM_ENOMEM:
        return "out of memory";
    case SPM_EIO:
        return "input/output error";
    case SPM_EFORMAT:
        return "malformed input";
    case SPM_EPROTO:
        return "protocol error";
    case SPM_ENOTFOUND:
        return "not found";
    case SPM_ESTORE:
        return "store error";
    case SPM_EFULL:
        return "disk or store full";
    case SPM_ETIMEOUT:
        return "timed out";
    case SPM_EUNREACH:
        return "center unreachable";
    case SPM_EADDRINUSE:
        return "address already in use";
    case SPM_ECANCELED:
        return "canceled";
    case SPM_EEXEC:
        return "super-instruction failed";
    case SPM_EDEAD:
        return "peer died";
    case SPM_ESYS:
        return "system call failed";
    case SPM_EDENIED:
        return "access denied";
    case SPM_ERANGE:
        return "out of range";
    case SPM_ESTRANGER:
        return "the center does not know this peer (it restarted?)";
    default:
        return "unknown error";
    }
}

int spm_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return code;
}

const char *spm_error_detail(void)
{
    return detail;
}
