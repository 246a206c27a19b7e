/*  =========================================================================
    inproc_session - weak stand-ins for the session API, on an in-process VM

    Until vm/session.c is linked into a build, these weak definitions let
    commands that run jobs (spm mine) link and work: the session is an
    spm_inproc_t, so the job runs in the command's own process. The real
    session's strong definitions replace every one of these at link time;
    nothing calls them by another name.
    =========================================================================
*/
#include "isa/core/inproc.h"
#include "vm/cli.h"
#include "vm/session.h"

#include <stdlib.h>
#include <string.h>

#define WEAK __attribute__((weak))

WEAK const char spm_run_opts_help[] =
    "  --center URL   run on the VM whose center listens at URL (default: embedded VM)\n"
    "  --ieus N       embedded VM: IEU processes (default: number of cores)\n"
    "  --json         print the report as JSON on stdout\n"
    "  --quiet        no progress, no report\n";

WEAK void spm_run_opts_init(spm_run_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->slots = 1;
    o->prefetch = 1;
    o->timeout_ms = 10000;
}

WEAK int spm_run_opts_set(spm_run_opts_t *o, int opt, const char *arg)
{
    long v;
    int rc = 0;
    switch (opt) {
    case SPM_OPT_CENTER:
        o->center = arg;
        break;
    case SPM_OPT_IEUS:
        rc = spm_parse_long("--ieus", arg, 1, 4096, &v);
        o->ieus = (int)v;
        break;
    case SPM_OPT_SLOTS:
        rc = spm_parse_long("--slots", arg, 1, 1024, &v);
        o->slots = (int)v;
        break;
    case SPM_OPT_PREFETCH:
        rc = spm_parse_long("--prefetch", arg, 0, 1024, &v);
        o->prefetch = (int)v;
        break;
    case SPM_OPT_JSON:
        o->json = 1;
        break;
    case SPM_OPT_QUIET:
        o->quiet = 1;
        break;
    case SPM_OPT_PRIORITY:
        rc = spm_parse_long("--priority", arg, -1000, 1000, &v);
        o->priority = (int)v;
        break;
    case SPM_OPT_TRACE:
        o->trace = arg;
        break;
    case SPM_OPT_KEYS:
        o->keys = arg;
        break;
    case SPM_OPT_TIMEOUT:
        rc = spm_parse_long("--timeout", arg, 1, 86400000, &o->timeout_ms);
        break;
    default:
        return spm_error(SPM_EINVAL, "not a run option");
    }
    return rc;
}

WEAK int spm_session_open(const spm_run_opts_t *o, spm_session_t **out)
{
    if (o->center)
        return spm_error(SPM_EUNREACH, "%s: this build has no remote sessions", o->center);
    *out = (spm_session_t *)spm_inproc_new();
    return *out ? 0 : spm_error(SPM_ENOMEM, "out of memory");
}

WEAK int spm_session_put(spm_session_t *s, const char *type, const void *data, size_t len,
                         spm_sdb_t *id)
{
    return spm_inproc_put((spm_inproc_t *)s, type, data, len, id);
}

WEAK int spm_session_get(spm_session_t *s, spm_sdb_t id, void **data, size_t *len)
{
    return spm_inproc_get((spm_inproc_t *)s, id, data, len);
}

WEAK int spm_session_run(spm_session_t *s, const char *program, const void *args, size_t len,
                         void **result, size_t *result_len)
{
    return spm_inproc_run((spm_inproc_t *)s, program, args, len, result, result_len);
}

WEAK void spm_session_close(spm_session_t **s)
{
    spm_inproc_destroy((spm_inproc_t **)s);
}
