/*  =========================================================================
    config - `spm config check FILE`: check a configuration file and print
    every setting's effective value and where it comes from
    =========================================================================
*/
#include "base/cli.h"
#include "base/config.h"
#include "spm/spm.h"
#include "vm/cmd/commands.h"

#include <stdio.h>
#include <string.h>

int spm_cmd_config(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: spm config check FILE\n\n"
               "Checks a configuration file (see conf/spm.conf) and prints every\n"
               "setting's effective value and where it comes from: the environment\n"
               "(SPM_*), the file, or the default. Flags given to a command override all.\n"
               "Every refused key or variable is named on a line of its own, with the\n"
               "file's line; the exit status is then 1.\n");
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "check") != 0)
        return spm_cli_usage("config", "expected 'check FILE'");
    int rc = spm_config_load(argv[2]);
    if (rc == SPM_EINVAL) {
        /* Every problem, not only the first: one fix per run is slow. */
        const char *p;
        for (size_t i = 0; (p = spm_config_problem(i)) != NULL; i++)
            fprintf(stderr, "spm: config: %s\n", p);
        return 1;
    }
    if (rc != 0)
        return spm_cli_fail("config", rc);
    spm_config_print(stdout);
    return 0;
}
