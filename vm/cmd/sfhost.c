/*  =========================================================================
    sfhost - `spm sfhost`: the command that runs one plugin job's
    super-functions (vm/sfhost/host.h), started by the center
    =========================================================================
*/
#include "vm/cmd/commands.h"
#include "vm/sfhost/host.h"
#include "base/cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static const char sfhost_help[] =
    "usage: spm sfhost --fd FD --page-fd FD\n\n"
    "Runs the super-functions of one plugin job. Started by `spm center`, not by hand:\n"
    "the center never runs a plugin's code itself.\n\n"
    "  --fd FD        the socket to the center\n"
    "  --page-fd FD   the page it shares with the center\n";

/*  The descriptor of option NAME at ARGV[I + 1], or -1. */
static int fd_arg(char **argv, int argc, int i)
{
    if (i + 1 >= argc)
        return -1;
    char *end;
    long v = strtol(argv[i + 1], &end, 10);
    return *end || v < 0 || v > 65535 ? -1 : (int)v;
}

int spm_cmd_sfhost(int argc, char **argv)
{
    int fd = -1, page = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            fputs(sfhost_help, stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--fd"))
            fd = fd_arg(argv, argc, i++);
        else if (!strcmp(argv[i], "--page-fd"))
            page = fd_arg(argv, argc, i++);
        else
            return spm_cli_usage("sfhost", "unexpected argument '%s'", argv[i]);
    }
    if (fd < 0 || page < 0)
        return spm_cli_usage("sfhost", "--fd and --page-fd are needed");
    /* dies with the center, whatever the plugin does with SIGTERM */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1)
        return 1;
    return spm_sfhost_run(fd, page);
}
