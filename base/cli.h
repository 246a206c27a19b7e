/*  =========================================================================
    cli - subcommands of the spm binary

    @discuss
    The commands are one table, in vm/cmd/commands.c; this floor only
    looks names up in it (base/proc.c starts `spm center` and `spm agent`
    by name). A command's main gets argv with argv[0] set to "spm NAME" and
    returns the process exit code. On failure it prints one line through
    spm_cli_fail.
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

/*  Makes TABLE (ended by an entry whose name is NULL; it must outlive the
    process) the commands spm_command_find and spm_command_at see. The
    table is vm/cmd/commands.c's, handed over before main. */
void spm_commands_use(const spm_command_t *table);

/*  The command named NAME in the current table (or in TABLE, for
    spm_command_in), or NULL; the I-th command, or NULL past the end. */
const spm_command_t *spm_command_find(const char *name);
const spm_command_t *spm_command_in(const spm_command_t *table, const char *name);
const spm_command_t *spm_command_at(unsigned i);

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
