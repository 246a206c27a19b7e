/*  =========================================================================
    ieu - `spm ieu`: the command that runs one execution unit (ieu/ieu.h),
    started by the agent of its node
    =========================================================================
*/
#include "vm/cmd/commands.h"
#include "ieu/ieu.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/heap.h"
#include "base/log.h"

#include <getopt.h>
#include <unistd.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

/*  Its options that are not settings; spm_config_help prints the settings'. */
static const char ieu_help[] =
    "usage: spm ieu --center ENDPOINT (--node N | --node-fd FD) --cache-dir DIR [OPTIONS]\n\n"
    "Runs one execution unit. Normally started by `spm agent`, not by hand.\n\n"
    "  --center ENDPOINT   the center to pull SIs from\n"
    "  --node N            this node's index, as the center gave it to the agent\n"
    "  --node-fd FD        read the index from FD (4 bytes) before joining: how an\n"
    "                      agent starts its IEUs while the center welcomes it\n"
    "  --cache-dir DIR     the node cache (shared by all IEUs of the node)\n"
    "  --local-files       SIs may read a client's input file by its path (an\n"
    "                      embedded VM's IEUs: same machine, same user)\n";

static const struct option ieu_opts[] = {{"center", required_argument, 0, 'c'},
                                         {"node", required_argument, 0, 'n'},
                                         {"node-fd", required_argument, 0, 'N'},
                                         {"cache-dir", required_argument, 0, 'd'},
                                         {"slots", required_argument, 0, 's'},
                                         {"prefetch", required_argument, 0, 'p'},
                                         {"log-level", required_argument, 0, 'v'},
                                         {"cache-mb", required_argument, 0, 'm'},
                                         {"heap-mb", required_argument, 0, 'H'},
                                         {"keys", required_argument, 0, 'k'},
                                         {"insecure", no_argument, 0, 'I'},
                                         {"no-store-reads", no_argument, 0, 'S'},
                                         {"local-files", no_argument, 0, 'L'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};

/*  Parses ARGV into O and LEVEL. Returns -1 to go on, or the exit code: 0
    after --help, 1 or 2 (usage) after the one line printed. */
static int parse(int argc, char **argv, spm_ieu_opts_t *o, spm_log_level_t *level)
{
    int ch, rc;
    while ((ch = getopt_long(argc, argv, "", ieu_opts, NULL)) != -1) {
        rc = 0;
        switch (ch) {
        case 'c':
            o->center = optarg;
            break;
        case 'd':
            o->cache_dir = optarg;
            break;
        case 'n':
            rc = spm_parse_long("--node", optarg, 0, UINT32_MAX, &o->node);
            break;
        case 'N':
            rc = spm_parse_long("--node-fd", optarg, 0, INT_MAX, &o->node_fd);
            break;
        case 's':
            rc = spm_config_arg("agent", "slots", optarg, &o->slots);
            break;
        case 'p':
            rc = spm_config_arg("agent", "prefetch", optarg, &o->prefetch);
            break;
        case 'v':
            rc = spm_config_arg_level(optarg, level);
            break;
        case 'k':
            o->keys = optarg;
            break;
        case 'I':
            o->insecure = 1;
            break;
        case 'S':
            o->store_reads = 0;
            break;
        case 'L':
            o->local_files = 1;
            break;
        case 'm':
            rc = spm_config_arg("agent", "cache_mb", optarg, &o->cache_mb);
            break;
        case 'H':
            rc = spm_config_arg("agent", "heap_mb", optarg, &o->heap_mb);
            break;
        case 'h':
            fputs(ieu_help, stdout);
            spm_config_help(stdout, SPM_PROC_IEU);
            return 0;
        default:
            return spm_cli_usage("ieu", "invalid option");
        }
        if (rc != 0)
            return spm_cli_fail("ieu", rc);
    }
    if (!o->center || !o->cache_dir)
        return spm_cli_usage("ieu", "--center and --cache-dir are required");
    return -1;
}

int spm_cmd_ieu(int argc, char **argv)
{
    /* The agent gives an IEU the rest: defaults as the table's. */
    spm_ieu_opts_t o = {.node_fd = -1,
                        .slots = spm_config_default_long("agent", "slots"),
                        .prefetch = spm_config_default_long("agent", "prefetch"),
                        .cache_mb = spm_config_default_long("agent", "cache_mb"),
                        .heap_mb = spm_config_default_long("agent", "heap_mb"),
                        .store_reads = 1};
    spm_log_level_t level;
    spm_log_parse_level(spm_config_log_level("warn"), &level);
    int rc = parse(argc, argv, &o, &level);
    if (rc >= 0)
        return rc;
    spm_log_init("ieu", level);
    spm_ieu_proc_t *ieu = NULL;
    if ((rc = spm_ieu_new(&o, &ieu)) != 0)
        return spm_cli_fail("ieu", rc);
    rc = spm_ieu_run(ieu);
    if (rc == SPM_ESTRANGER)
        /* The center took this IEU for dead and re-issued what it held:
           nothing here is wanted, and a teardown would wait on fetches and
           copies that will never end. Its agent starts another. */
        _exit(1);
    /* A user hears of a center that refused the IEU or did not answer it;
       its other ends are logged, or its agent says why. */
    int status = rc == 0 ? 0 : 1;
    if (rc == SPM_EDENIED || rc == SPM_EUNREACH)
        status = spm_cli_fail("ieu", rc);
    spm_ieu_destroy(&ieu);
    return status;
}
