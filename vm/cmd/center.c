/*  =========================================================================
    center - `spm center`: parses its options, makes the center of a VM
    (vm/center/center.h), runs it until a stop and destroys it

    The embedded VM starts its center by forking and calling the command
    registered as "center" (base/proc.c, spm_proc_fork), so the name and
    the options are the ones a user types.
    =========================================================================
*/
#include "vm/cmd/commands.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/log.h"
#include "vm/center/center.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/*  Its options that are not settings; spm_config_help prints the settings'. */
static const char center_help[] =
    "usage: spm center [OPTIONS]\n\n"
    "Runs the center of a VM: the dispatch unit (IDU) with its task pool, the\n"
    "durable SDB store and the endpoint agents, IEUs and clients connect to.\n"
    "Defaults come from the configuration (see conf/spm.conf); flags win.\n\n"
    "  --config FILE       configuration file (default $SPM_CONFIG or /etc/spm/spm.conf)\n"
    "  --no-sync           never flush the store to disk: for a store that is thrown\n"
    "                      away at the end (the embedded VM's). Commits still survive\n"
    "                      a crash of any spm process, not one of the operating system\n"
    "  --no-http           do not serve HTTP, whatever the configuration says\n"
    "  --listen-fd N       serve --listen (an ipc:// endpoint) on descriptor N, a unix\n"
    "                      socket already bound there and listening: the embedded VM's\n"
    "                      client makes it before it starts the center, so that it and\n"
    "                      the agent connect while the center starts\n";

static const struct option center_opts[] = {{"listen", required_argument, 0, 'l'},
                                            {"store", required_argument, 0, 's'},
                                            {"heartbeat-ms", required_argument, 0, 'H'},
                                            {"dead-ms", required_argument, 0, 'D'},
                                            {"lease-s", required_argument, 0, 'L'},
                                            {"sf-bound-ms", required_argument, 0, 'B'},
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
                                            {"history-jobs", required_argument, 0, 'y'},
                                            {"history-days", required_argument, 0, 'Y'},
                                            {"keep-results-s", required_argument, 0, 'K'},
                                            {"abandon-s", required_argument, 0, 'A'},
                                            {"no-http", no_argument, 0, 't'},
                                            {"listen-fd", required_argument, 0, 'F'},
                                            {"allow-plugins", required_argument, 0, 'p'},
                                            {"help", no_argument, 0, 'h'},
                                            {0, 0, 0, 0}};

/*  Sets what option CH (its value ARG) says in O or *LEVEL. Returns 0 or
    SPM_EINVAL with a detail naming the option. */
static int set_option(spm_center_opts_t *o, spm_log_level_t *level, int ch, const char *arg,
                      const char **plugins)
{
    switch (ch) {
    case 'l':
        o->listen = arg;
        return spm_config_arg("center", "listen", arg, NULL);
    case 's':
        o->store = arg;
        break;
    case 'F': {
        long fd;
        if (spm_parse_long("--listen-fd", arg, 3, 1 << 20, &fd) != 0)
            return SPM_EINVAL;
        o->listen_fd = (int)fd;
        break;
    }
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
        return spm_config_arg("center", "heartbeat_ms", arg, &o->heartbeat_ms);
    case 'D':
        return spm_config_arg("center", "dead_ms", arg, &o->dead_ms);
    case 'L':
        return spm_config_arg("center", "lease_s", arg, &o->lease_s);
    case 'B':
        return spm_config_arg("center", "sf_bound_ms", arg, &o->sf_bound_ms);
    case 'v':
        return spm_config_arg_level(arg, level);
    case 'S':
        return spm_config_arg("center", "sync_ms", arg, &o->sync_ms);
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
        return spm_config_arg("center", "warm_mb", arg, &o->warm_mb);
    case 'R':
        return spm_config_arg("center", "replicas", arg, &o->replicas);
    case 'T':
        o->http = arg;
        break;
    case 't':
        o->http = "";
        break;
    case 'y':
        return spm_config_arg("center", "history_jobs", arg, &o->history_jobs);
    case 'Y':
        return spm_config_arg("center", "history_days", arg, &o->history_days);
    case 'K':
        return spm_config_arg("center", "keep_results_s", arg, &o->keep_results_s);
    case 'A':
        return spm_config_arg("center", "abandon_s", arg, &o->abandon_s);
    case 'p':
        *plugins = arg; /* checked with the listen endpoint, below */
        break;
    }
    return 0;
}

int spm_cmd_center(int argc, char **argv)
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
                           .sf_bound_ms = spm_config_long("center", "sf_bound_ms"),
                           .sync_ms = spm_config_long("center", "sync_ms"),
                           .warm_mb = spm_config_long("center", "warm_mb"),
                           .replicas = spm_config_long("center", "replicas"),
                           .journal = spm_config_bool("center", "journal"),
                           .http = spm_config_str("center", "http"),
                           .http_token = spm_config_str("center", "http_token"),
                           .history_jobs = spm_config_long("center", "history_jobs"),
                           .history_days = spm_config_long("center", "history_days"),
                           .keep_results_s = spm_config_long("center", "keep_results_s"),
                           .abandon_s = spm_config_long("center", "abandon_s")};
    const char *plugins = spm_config_str("center", "allow_plugins");
    spm_log_level_t level;
    spm_log_parse_level(spm_config_log_level("info"), &level);
    while ((ch = getopt_long(argc, argv, "", center_opts, NULL)) != -1) {
        if (ch == 'h') {
            fputs(center_help, stdout);
            spm_config_help(stdout, SPM_PROC_CENTER);
            return 0;
        }
        if (ch == '?')
            return spm_cli_usage("center", "invalid option");
        if ((rc = set_option(&o, &level, ch, optarg, &plugins)) != 0)
            return spm_cli_fail("center", rc);
    }
    if (optind < argc)
        return spm_cli_usage("center", "unexpected argument '%s'", argv[optind]);
    if (o.listen_fd && strncmp(o.listen, "ipc://", 6) != 0)
        return spm_cli_usage("center", "--listen-fd needs an ipc:// --listen");
    spm_log_init("center", level);
    if (spm_plugins_policy(plugins, strncmp(o.listen, "ipc://", 6) == 0, &o.plugins) != 0)
        return spm_cli_usage("center", "%s", spm_error_detail());
    spm_center_t *center = spm_center_new(&o, &rc);
    if (!center)
        return spm_cli_fail("center", rc);
    spm_center_run(center);
    spm_center_destroy(&center);
    return 0;
}
