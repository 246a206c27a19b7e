/*  =========================================================================
    main - the spm binary: one program, many subcommands (like git)

    The commands are one table (vm/cmd/commands.c); this file only
    dispatches and prints the top-level help.
    =========================================================================
*/
#include "base/build.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/heap.h"
#include "base/log.h"
#include "base/proc.h"
#include "spm/spm.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: spm COMMAND [OPTIONS]\n\n"
                 "spm turns the machines of a cluster into one virtual computer that runs\n"
                 "super-instructions (coarse tasks of milliseconds) pulled by execution units.\n\n"
                 "commands:\n");
    const spm_command_t *c;
    for (unsigned i = 0; (c = spm_command_at(i)) != NULL; i++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out, "\n'spm COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    /* OpenBLAS starts its thread pool in a library constructor, and each of
       its threads spins for about 0.1 s of CPU before it sleeps. An SI runs
       BLAS on one thread (IEU slots, not BLAS threads, use the cores), so
       every spm process this one starts (an embedded VM's center, agent and
       IEUs) gets one BLAS thread from the outset, unless the user chose. */
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit is a full disk: an error, not death */
    spm_heap_keep();          /* large blocks from malloc's heaps, kept when freed */
    /* A client's own log lines (a process sets its own level again):
       SPM_LOG_LEVEL, else warn. A client reads no configuration file. */
    spm_log_level_t level;
    spm_log_parse_level(spm_config_log_level("warn"), &level);
    spm_log_init("spm", level);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("spm %s (commit %s)\n", spm_build_version(), spm_build_commit());
        return 0;
    }
    const spm_command_t *cmd = spm_command_find(argv[1]);
    if (!cmd) {
        fprintf(stderr, "spm: unknown command '%s' (see 'spm --help')\n", argv[1]);
        return 2;
    }
    return spm_proc_run(cmd, argc - 1, argv + 1);
}
