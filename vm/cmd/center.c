/*  =========================================================================
    center - `spm center`: parses its options, makes the center of a VM
    (vm/center/center.h), runs it until a stop and destroys it

    The embedded VM starts its center by forking and calling the command
    registered as "center" (base/proc.c, spm_proc_fork), so the name and
    the options are the ones a user types.
    =========================================================================
*/
#include "base/cli.h"
#include "base/config.h"
#include "base/log.h"
#include "vm/center/center.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char center_help[] =
    "usage: spm center [OPTIONS]\n\n"
    "Runs the center of a VM: the dispatch unit (IDU) with its task pool, the\n"
    "durable SDB store and the endpoint agents, IEUs and clients connect to.\n"
    "Defaults come from the configuration (see conf/spm.conf); flags win.\n\n"
    "  --config FILE       configuration file (default $SPM_CONFIG or /etc/spm/spm.conf)\n"
    "  --listen ENDPOINT   where to listen, e.g. tcp://0.0.0.0:7700 or ipc:///run/spm/c\n"
    "                      (default center.listen, tcp://0.0.0.0:7700)\n"
    "  --store DIR         LMDB store directory, created 0700 (default center.store)\n"
    "  --keys DIR          CurveZMQ keys: center.key and authorized/ (default\n"
    "                      security.keys); every tcp:// endpoint needs them\n"
    "  --insecure          allow plain TCP without keys (anyone may connect)\n"
    "  --heartbeat-ms N    heartbeat interval asked of IEUs (default 1000)\n"
    "  --dead-ms N         silence after which an IEU is dead and its SIs re-issued\n"
    "                      (default 5000)\n"
    "  --lease-s N         re-issue an SI not committed after N seconds (default 600; 0 off)\n"
    "  --sync-ms N         flush the store to disk at most N ms after a commit\n"
    "                      (default 100). Commits are safe from a crash of any spm\n"
    "                      process at once; an operating-system crash can lose the\n"
    "                      last N ms. 0 syncs at every commit: durable, slower\n"
    "  --no-sync           never flush the store to disk: for a store that is thrown\n"
    "                      away at the end (the embedded VM's). Commits still survive\n"
    "                      a crash of any spm process, not one of the operating system\n"
    "  --no-journal        do not journal the jobs' events (default center.journal,\n"
    "                      on): a restarted center then forgets the jobs that ran. With\n"
    "                      the journal, a center killed at any moment and started\n"
    "                      again on the same store resumes every job where it was\n"
    "  --warm-mb N         keep N MiB past the end of the store's data allocated on\n"
    "                      disk and in memory, prepared while no job runs, so that\n"
    "                      blocks of 2 MiB and more are written into pages that\n"
    "                      already exist (default 0: off; at most an eighth of the\n"
    "                      free disk and memory)\n"
    "  --replicas N        copies of every block the VM keeps on distinct nodes, so\n"
    "                      that a job survives N-1 nodes dying at once (default 2;\n"
    "                      with fewer nodes, the store keeps the missing copy)\n"
    "  --no-speculate      do not copy stragglers to idle IEUs at the end of a stage\n"
    "                      (copying is the default: an SI held by a slow or stuck IEU\n"
    "                      for over twice its kind's mean, and 10 ms, gets a copy;\n"
    "                      the first result wins)\n"
    "  --http ADDR:PORT    serve a dashboard at /, the status as JSON at /api/status\n"
    "                      and Prometheus metrics at /metrics (default center.http:\n"
    "                      off). ADDR defaults to 127.0.0.1; anyone who reaches the\n"
    "                      port sees the VM's state unless center.http_token is set\n"
    "  --no-http           do not serve HTTP, whatever the configuration says\n"
    "  --log-level LEVEL   error, warn, info or debug (default info)\n";

static const struct option center_opts[] = {{"listen", required_argument, 0, 'l'},
                                            {"store", required_argument, 0, 's'},
                                            {"heartbeat-ms", required_argument, 0, 'H'},
                                            {"dead-ms", required_argument, 0, 'D'},
                                            {"lease-s", required_argument, 0, 'L'},
                                            {"sync-ms", required_argument, 0, 'S'},
                                            {"no-sync", no_argument, 0, 'N'},
                                            {"journal", no_argument, 0, 'J'},
                                            {"no-journal", no_argument, 0, 'j'},
                                            {"warm-mb", required_argument, 0, 'W'},
                                            {"log-level", required_argument, 0, 'v'},
                                            {"config", required_argument, 0, 'C'},
                                            {"keys", required_argument, 0, 'k'},
                                            {"insecure", no_argument, 0, 'I'},
                                            {"speculate", no_argument, 0, 'P'},
                                            {"no-speculate", no_argument, 0, 'Q'},
                                            {"replicas", required_argument, 0, 'R'},
                                            {"http", required_argument, 0, 'T'},
                                            {"no-http", no_argument, 0, 't'},
                                            {"help", no_argument, 0, 'h'},
                                            {0, 0, 0, 0}};

/*  Sets what option CH (its value ARG) says in O or *LEVEL. Returns 0 or
    SPM_EINVAL with a detail naming the option. */
static int set_option(spm_center_opts_t *o, spm_log_level_t *level, int ch, const char *arg)
{
    switch (ch) {
    case 'l':
        o->listen = arg;
        break;
    case 's':
        o->store = arg;
        break;
    case 'k':
        o->keys = arg;
        break;
    case 'I':
        o->insecure = 1;
        break;
    case 'P':
        o->speculate = 1;
        break;
    case 'Q':
        o->speculate = 0;
        break;
    case 'C':
        break; /* loaded before the options */
    case 'H':
        return spm_parse_long("--heartbeat-ms", arg, 10, 60000, &o->heartbeat_ms);
    case 'D':
        return spm_parse_long("--dead-ms", arg, 100, 3600000, &o->dead_ms);
    case 'L':
        return spm_parse_long("--lease-s", arg, 0, 86400 * 30, &o->lease_s);
    case 'v':
        return spm_log_parse_level(arg, level);
    case 'S':
        return spm_parse_long("--sync-ms", arg, 0, 600000, &o->sync_ms);
    case 'N':
        o->no_sync = 1;
        break;
    case 'J':
        o->journal = 1;
        break;
    case 'j':
        o->journal = 0;
        break;
    case 'W':
        return spm_parse_long("--warm-mb", arg, 0, 1 << 20, &o->warm_mb);
    case 'R':
        return spm_parse_long("--replicas", arg, 1, 8, &o->replicas);
    case 'T':
        o->http = arg;
        break;
    case 't':
        o->http = "";
        break;
    }
    return 0;
}

static int center_main(int argc, char **argv)
{
    int ch, rc = spm_config_load_args(argc, argv);
    if (rc != 0)
        return spm_cli_fail("center", rc);
    spm_center_opts_t o = {.speculate = spm_config_bool("center", "speculate"),
                           .listen = spm_config_str("center", "listen"),
                           .store = spm_config_str("center", "store"),
                           .heartbeat_ms = spm_config_long("center", "heartbeat_ms"),
                           .dead_ms = spm_config_long("center", "dead_ms"),
                           .lease_s = spm_config_long("center", "lease_s"),
                           .sync_ms = spm_config_long("center", "sync_ms"),
                           .warm_mb = spm_config_long("center", "warm_mb"),
                           .replicas = spm_config_long("center", "replicas"),
                           .journal = spm_config_bool("center", "journal"),
                           .http = spm_config_str("center", "http"),
                           .http_token = spm_config_str("center", "http_token")};
    spm_log_level_t level;
    spm_log_parse_level(spm_config_str("log", "level"), &level);
    while ((ch = getopt_long(argc, argv, "", center_opts, NULL)) != -1) {
        if (ch == 'h') {
            fputs(center_help, stdout);
            return 0;
        }
        if (ch == '?')
            return spm_cli_usage("center", "invalid option");
        if ((rc = set_option(&o, &level, ch, optarg)) != 0)
            return spm_cli_fail("center", rc);
    }
    if (optind < argc)
        return spm_cli_usage("center", "unexpected argument '%s'", argv[optind]);
    spm_log_init("center", level);
    if (spm_plugins_policy(spm_config_str("center", "allow_plugins"),
                           strncmp(o.listen, "ipc://", 6) == 0, &o.plugins) != 0)
        return spm_cli_usage("center", "%s", spm_error_detail());
    spm_center_t *center = spm_center_new(&o, &rc);
    if (!center)
        return spm_cli_fail("center", rc);
    spm_center_run(center);
    spm_center_destroy(&center);
    return 0;
}

SPM_CONSTRUCTOR(center_cmd)
{
    spm_command_register(&(spm_command_t){.name = "center",
                                          .summary = "run the center of a VM (IDU and store)",
                                          .main = center_main});
}
