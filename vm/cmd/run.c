/*  =========================================================================
    run - `spm run PROGRAM` and `spm gen KIND`: dispatch to registered
    runners and generators
    =========================================================================
*/
#include "vm/cmd/commands.h"
#include "vm/client/pluginrun.h"
#include "base/cli.h"
#include "spm/spm.h"

#include <stdio.h>
#include <string.h>

/*  Dispatches argv[1] to the table behind FIND, or prints the list. */
static int dispatch(const char *cmd, const char *what, int argc, char **argv,
                    const spm_command_t *(*find)(const char *),
                    const spm_command_t *(*at)(unsigned))
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        FILE *out = argc < 2 ? stderr : stdout;
        fprintf(out, "usage: spm %s %s [OPTIONS]\n\n%ss:\n", cmd, what, what);
        const spm_command_t *c;
        for (unsigned i = 0; (c = at(i)) != NULL; i++)
            fprintf(out, "  %-14s %s\n", c->name, c->summary);
        fprintf(out, "\n'spm %s %s --help' describes its options.\n", cmd, what);
        if (!strcmp(cmd, "run"))
            fprintf(out, "'spm run --plugin LIB PROGRAM ...' runs a program built out of tree "
                         "('spm run --plugin --help').\n");
        return argc < 2 ? 2 : 0;
    }
    const spm_command_t *c = find(argv[1]);
    if (!c)
        return spm_cli_usage(cmd, "no %s named '%s'", what, argv[1]);
    char name[96];
    snprintf(name, sizeof name, "spm %s %s", cmd, c->name);
    argv[1] = name;
    return c->main(argc - 1, argv + 1);
}

int spm_cmd_run(int argc, char **argv)
{
    if (argc >= 2 && !strncmp(argv[1], "--plugin", 8))
        return spm_plugin_run_main(argc, argv, "run", 0);
    return dispatch("run", "PROGRAM", argc, argv, spm_runner_find, spm_runner_at);
}

int spm_cmd_gen(int argc, char **argv)
{
    return dispatch("gen", "KIND", argc, argv, spm_generator_find, spm_generator_at);
}
