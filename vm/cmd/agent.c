/*  =========================================================================
    agent - `spm agent`: the command that runs the agent of one node
    (vm/agent/agent.h), and `spm agent --drain`, which stops a running one
    =========================================================================
*/
#include "vm/cmd/commands.h"
#include "vm/agent/agent.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/heap.h"
#include "base/log.h"

#include <getopt.h>
#include <stdio.h>

/*  Its options that are not settings; spm_config_help prints the settings'. */
static const char agent_help[] =
    "usage: spm agent [OPTIONS]\n\n"
    "Runs the agent of one node: starts its IEUs, restarts them when they die\n"
    "and reports their deaths to the center. SIGTERM (or --drain) lets running\n"
    "SIs finish, takes no new ones, then exits. Defaults come from the\n"
    "configuration (see conf/spm.conf); flags win.\n\n"
    "  --config FILE       configuration file (default $SPM_CONFIG or /etc/spm/spm.conf)\n"
    "  --local-files       IEUs may read a client's input file where it lies, by its\n"
    "                      path (an embedded VM's: it shares the client's machine\n"
    "                      and user); without it, a client stages its input\n"
    "  --drain-s N         on SIGTERM, wait up to N s for running SIs (default 60)\n"
    "  --drain             drain the agent already running on CACHE-DIR (found by its\n"
    "                      pid file) and wait until it has exited\n"
    "  --no-http           do not serve /metrics, whatever the configuration says\n"
    "  --no-sync           the cache directory is thrown away with this agent (an\n"
    "                      embedded VM's): its node identity is not synced to disk\n";

static const struct option agent_opts[] = {{"center", required_argument, 0, 'c'},
                                           {"ieus", required_argument, 0, 'n'},
                                           {"slots", required_argument, 0, 's'},
                                           {"prefetch", required_argument, 0, 'p'},
                                           {"cache-dir", required_argument, 0, 'd'},
                                           {"log-level", required_argument, 0, 'v'},
                                           {"cache-mb", required_argument, 0, 'm'},
                                           {"heap-mb", required_argument, 0, 'H'},
                                           {"data-listen", required_argument, 0, 'L'},
                                           {"data-advertise", required_argument, 0, 'A'},
                                           {"config", required_argument, 0, 'C'},
                                           {"keys", required_argument, 0, 'k'},
                                           {"insecure", no_argument, 0, 'I'},
                                           {"drain-s", required_argument, 0, 'T'},
                                           {"drain", no_argument, 0, 'R'},
                                           {"no-store-reads", no_argument, 0, 'S'},
                                           {"local-files", no_argument, 0, 'F'},
                                           {"name", required_argument, 0, 'N'},
                                           {"wait-center", required_argument, 0, 'W'},
                                           {"http", required_argument, 0, 'P'},
                                           {"no-http", no_argument, 0, 'O'},
                                           {"no-sync", no_argument, 0, 'Y'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};

/*  Parses ARGV into O, DRAIN and LEVEL, over the configuration's agent.*
    settings (loaded first: --config). Returns -1 to go on, or the exit
    code: 0 after --help, 1 or 2 (usage) after the one line printed. */
static int parse(int argc, char **argv, spm_agent_opts_t *o, int *drain, spm_log_level_t *level)
{
    int ch, rc = spm_config_load_args(argc, argv);
    if (rc != 0)
        return spm_cli_fail("agent", rc);
    *o = (spm_agent_opts_t){.center = spm_config_str("agent", "center"),
                            .ieus = spm_config_long("agent", "ieus"),
                            .slots = spm_config_long("agent", "slots"),
                            .prefetch = spm_config_long("agent", "prefetch"),
                            .cache_mb = spm_config_long("agent", "cache_mb"),
                            .heap_mb = spm_config_long("agent", "heap_mb"),
                            .cache_dir = spm_config_str("agent", "cache_dir"),
                            .data_listen = spm_config_str("agent", "data_listen"),
                            .data_advertise = spm_config_str("agent", "data_advertise"),
                            .store_reads = spm_config_bool("agent", "store_reads"),
                            .log_level = spm_config_log_level("warn"),
                            .name = spm_config_str("agent", "name"),
                            .wait_center_s = spm_config_long("agent", "wait_center_s"),
                            .http = spm_config_str("agent", "http"),
                            .http_token = spm_config_str("agent", "http_token"),
                            .drain_s = 60};
    spm_log_parse_level(o->log_level, level);
    while ((ch = getopt_long(argc, argv, "", agent_opts, NULL)) != -1) {
        rc = 0;
        switch (ch) {
        case 'c':
            o->center = optarg;
            rc = spm_config_arg("agent", "center", optarg, NULL);
            break;
        case 'n':
            rc = spm_config_arg("agent", "ieus", optarg, &o->ieus);
            break;
        case 's':
            rc = spm_config_arg("agent", "slots", optarg, &o->slots);
            break;
        case 'p':
            rc = spm_config_arg("agent", "prefetch", optarg, &o->prefetch);
            break;
        case 'd':
            o->cache_dir = optarg;
            break;
        case 'm':
            rc = spm_config_arg("agent", "cache_mb", optarg, &o->cache_mb);
            break;
        case 'H':
            rc = spm_config_arg("agent", "heap_mb", optarg, &o->heap_mb);
            break;
        case 'L':
            o->data_listen = optarg;
            rc = spm_config_arg("agent", "data_listen", optarg, NULL);
            break;
        case 'A':
            o->data_advertise = optarg;
            rc = spm_config_arg("agent", "data_advertise", optarg, NULL);
            break;
        case 'C':
            break; /* loaded above */
        case 'k':
            o->keys = optarg;
            break;
        case 'I':
            o->insecure = 1;
            break;
        case 'T':
            rc = spm_parse_long("--drain-s", optarg, 0, 86400, &o->drain_s);
            break;
        case 'R':
            *drain = 1;
            break;
        case 'S':
            o->store_reads = 0;
            break;
        case 'F':
            o->local_files = 1;
            break;
        case 'N':
            o->name = optarg;
            break;
        case 'W':
            rc = spm_config_arg("agent", "wait_center_s", optarg, &o->wait_center_s);
            break;
        case 'P':
            o->http = optarg;
            rc = spm_config_arg("agent", "http", optarg, NULL);
            break;
        case 'O':
            o->http = "";
            break;
        case 'Y':
            o->no_sync = 1;
            break;
        case 'v':
            rc = spm_config_arg_level(optarg, level);
            o->log_level = optarg;
            break;
        case 'h':
            fputs(agent_help, stdout);
            spm_config_help(stdout, SPM_PROC_AGENT);
            return 0;
        default:
            return spm_cli_usage("agent", "invalid option");
        }
        if (rc != 0)
            return spm_cli_fail("agent", rc);
    }
    if (optind < argc)
        return spm_cli_usage("agent", "unexpected argument '%s'", argv[optind]);
    return -1;
}

/*  `spm agent --drain`: SIGTERM to the agent whose pid file is in
    CACHE_DIR, then wait for it to exit. */
static int drain_running(const char *cache_dir)
{
    int pid, rc;
    if (!cache_dir || !*cache_dir)
        return spm_cli_usage("agent", "--drain needs the running agent's --cache-dir");
    if ((rc = spm_agent_drain(cache_dir, &pid)) != 0)
        return spm_cli_fail("agent", rc);
    printf("agent %d drained\n", pid);
    return 0;
}

int spm_cmd_agent(int argc, char **argv)
{
    spm_agent_opts_t o;
    spm_log_level_t level;
    int drain = 0, rc = parse(argc, argv, &o, &drain, &level);
    if (rc >= 0)
        return rc;
    if (drain)
        return drain_running(o.cache_dir);
    spm_log_init("agent", level);
    spm_agent_t *agent = NULL;
    if ((rc = spm_agent_new(&o, &agent)) != 0)
        return spm_cli_fail("agent", rc);
    rc = spm_agent_run(agent);
    /* A signal before the center welcomed the node ends it without a word. */
    int status = rc == 0 ? 0 : rc == SPM_ECANCELED ? 1 : spm_cli_fail("agent", rc);
    spm_agent_destroy(&agent);
    return status;
}
