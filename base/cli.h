/*  =========================================================================
    cli - subcommands of the spm binary

    @discuss
    Each subcommand registers itself from a constructor, so `spm matmul`
    lives in programs/matmul and vm/cmd/main.c knows no program by name. A
    command's main gets argv with argv[0] set to "spm NAME" and returns the
    process exit code. On failure it prints one line through spm_cli_fail.
    `spm gen KIND` dispatches the same way over registered generators.
    @end
    =========================================================================
*/
#ifndef SPM_CLI_H_INCLUDED
#define SPM_CLI_H_INCLUDED

typedef struct spm_command {
    const char *name;    /* "matmul"; for generators "matrix" */
    const char *summary; /* one line for `spm --help` */
    int (*main)(int argc, char **argv);
} spm_command_t;

int spm_command_register(const spm_command_t *cmd);
const spm_command_t *spm_command_find(const char *name);
const spm_command_t *spm_command_at(unsigned i);

int spm_generator_register(const spm_command_t *gen);
const spm_command_t *spm_generator_find(const char *name);
const spm_command_t *spm_generator_at(unsigned i);

/*  `spm run NAME` dispatches to registered runners: a program's own
    command line (its options plus SPM_RUN_LONGOPTS). */
int spm_runner_register(const spm_command_t *runner);
const spm_command_t *spm_runner_find(const char *name);
const spm_command_t *spm_runner_at(unsigned i);

/*  `spm run --plugin LIB PROGRAM ARG...` (DETACH 0, CMD "run") and `spm
    submit --plugin ...` (DETACH 1): see vm/client/pluginrun.c. */
int spm_plugin_run_main(int argc, char **argv, const char *cmd, int detach);

/*  Prints "spm: WHAT: DETAIL" on stderr, DETAIL being spm_error_detail() or,
    when empty, spm_strerror(CODE). Returns the exit status to use (1). */
int spm_cli_fail(const char *what, int code);

/*  Prints "spm: WHAT" (a usage error) and a hint to run --help; returns 2. */
int spm_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*  Strict number parsing for options: the whole string must be a number in
    [MIN, MAX]. Return 0 or SPM_EINVAL with a detail naming OPTION. */
int spm_parse_long(const char *option, const char *s, long min, long max, long *out);
int spm_parse_double(const char *option, const char *s, double min, double max, double *out);

#endif
