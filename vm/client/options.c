/*  =========================================================================
    options - the run options every job-running command takes

    --center or an embedded VM's size, the report's form, the timeout and
    the keys: parsed here into an spm_run_opts_t (vm/client/session.h),
    with their help text.
    =========================================================================
*/
#include "vm/client/session.h"

#include "base/cli.h"
#include "base/config.h"

#include <stdio.h>
#include <unistd.h>

const char spm_run_opts_help[] =
    "  --center ENDPOINT   run on this VM (e.g. tcp://head:7700); without it an\n"
    "                      embedded VM (center, agent, IEUs) runs on this machine\n"
    "  --ieus N            embedded VM: IEU processes; 0: one per core (default 0)\n"
    "  --slots N           embedded VM: SIs each IEU executes at once (default 1)\n"
    "  --prefetch N        embedded VM: SIs each IEU asks for ahead (default 1;\n"
    "                      more while SIs are short: about 2 ms of work, 48 ms\n"
    "                      while the center has more ready, at most 48)\n"
    "  --cache-mb N        embedded VM: node cache budget in MiB (default 0: no limit)\n"
    "  --no-speculate      embedded VM: do not copy stragglers to idle IEUs at the end\n"
    "                      of a stage (copying is the default; the first result wins)\n"
    "  --no-store-reads    embedded VM: IEUs read operands through their node cache\n"
    "                      (--cache-mb) and the center, not straight from its store, as\n"
    "                      on a node of their own\n"
    "  --priority N        job priority; larger runs first (default 0)\n"
    "  --json              print the run report as JSON on stdout\n"
    "  --quiet             no progress bar or meters, no text report\n"
    "  --trace FILE        write a Chrome trace of the job's SIs (Perfetto,\n"
    "                      chrome://tracing, spm plot)\n"
    "  --sync              make the files the command writes (the trace, a program's\n"
    "                      outputs) durable before returning: sync each file and its\n"
    "                      directory. Without it a file is renamed into place as\n"
    "                      `sort -o` does: never seen partial, but a crash of the\n"
    "                      machine soon after may lose it\n" SPM_CONNECT_OPTS_HELP;

void spm_run_opts_init(spm_run_opts_t *o)
{
    /* an embedded VM's agent: the table's defaults, not the configured ones */
    *o = (spm_run_opts_t){.ieus = (int)spm_config_ieus(spm_config_default_long("agent", "ieus")),
                          .slots = (int)spm_config_default_long("agent", "slots"),
                          .prefetch = (int)spm_config_default_long("agent", "prefetch"),
                          .cache_mb = spm_config_default_long("agent", "cache_mb"),
                          .timeout_ms = 10000,
                          .wait_center_s = -1};
}

int spm_run_opts_set(spm_run_opts_t *o, int opt, const char *arg)
{
    long v;
    int rc = 0;
    switch (opt) {
    case SPM_OPT_CENTER:
        o->center = arg;
        break;
    case SPM_OPT_IEUS:
        rc = spm_config_arg("agent", "ieus", arg, &v);
        o->ieus = (int)spm_config_ieus(v);
        break;
    case SPM_OPT_SLOTS:
        rc = spm_config_arg("agent", "slots", arg, &v);
        o->slots = (int)v;
        break;
    case SPM_OPT_PREFETCH:
        rc = spm_config_arg("agent", "prefetch", arg, &v);
        o->prefetch = (int)v;
        break;
    case SPM_OPT_PRIORITY:
        rc = spm_parse_long("--priority", arg, -1000000, 1000000, &v);
        o->priority = (int)v;
        break;
    case SPM_OPT_TIMEOUT:
        rc = spm_parse_long("--timeout", arg, 100, 3600000, &v);
        o->timeout_ms = v;
        break;
    case SPM_OPT_WAIT_CENTER: /* the agent's option: the same bounds and words */
        rc = spm_config_arg("agent", "wait_center_s", arg, &o->wait_center_s);
        break;
    case SPM_OPT_JSON:
        o->json = 1;
        break;
    case SPM_OPT_QUIET:
        o->quiet = 1;
        break;
    case SPM_OPT_TRACE:
        o->trace = arg;
        break;
    case SPM_OPT_SYNC:
        o->sync = 1;
        break;
    case SPM_OPT_KEYS:
        o->keys = arg;
        break;
    case SPM_OPT_INSECURE:
        o->insecure = 1;
        break;
    case SPM_OPT_DETACH:
        o->detach = 1;
        break;
    case SPM_OPT_CACHE_MB:
        rc = spm_config_arg("agent", "cache_mb", arg, &o->cache_mb);
        break;
    case SPM_OPT_SPECULATE:
        o->no_speculate = 0;
        break;
    case SPM_OPT_NO_SPECULATE:
        o->no_speculate = 1;
        break;
    case SPM_OPT_NO_STORE_READS:
        o->no_store_reads = 1;
        break;
    default:
        return spm_error(SPM_EINVAL, "not a run option");
    }
    return rc;
}

int spm_run_opts_bar(const spm_run_opts_t *o)
{
    return !o->quiet && !o->json && isatty(o->report ? fileno(o->report) : STDOUT_FILENO);
}
