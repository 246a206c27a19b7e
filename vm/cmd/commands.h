/*  =========================================================================
    commands - every command of the spm binary, in one table

    @discuss
    vm/cmd/commands.c lists each command once: its name, its line in
    `spm --help` and its main. The tables for `spm gen KIND` and `spm run
    PROGRAM` sit beside it. A command's main gets argv with argv[0] set to
    "spm NAME" and returns the exit status. The table is handed to base/cli
    when the binary (or a test linking the library) starts, so that
    spm_proc_fork can start `center`, `agent` and `ieu` by name.
    @end
    =========================================================================
*/
#ifndef SPM_CMD_COMMANDS_H_INCLUDED
#define SPM_CMD_COMMANDS_H_INCLUDED

#include "base/cli.h"

/*  The `spm gen KIND` generators and `spm run PROGRAM` programs, by name
    (NULL when there is none), and by index in the order --help lists them
    (NULL past the end). */
const spm_command_t *spm_generator_find(const char *name);
const spm_command_t *spm_generator_at(unsigned i);
const spm_command_t *spm_runner_find(const char *name);
const spm_command_t *spm_runner_at(unsigned i);

/*  The mains defined in vm/cmd (the programs' own are in their cmd.h). */
int spm_cmd_center(int argc, char **argv);
int spm_cmd_agent(int argc, char **argv);
int spm_cmd_ieu(int argc, char **argv);
int spm_cmd_sfhost(int argc, char **argv);
int spm_cmd_run(int argc, char **argv);
int spm_cmd_gen(int argc, char **argv);
int spm_cmd_status(int argc, char **argv);
int spm_cmd_submit(int argc, char **argv);
int spm_cmd_wait(int argc, char **argv);
int spm_cmd_cancel(int argc, char **argv);
int spm_cmd_jobs(int argc, char **argv);
int spm_cmd_show(int argc, char **argv);
int spm_cmd_plot(int argc, char **argv);
int spm_cmd_keygen(int argc, char **argv);
int spm_cmd_config(int argc, char **argv);

#endif
