/*  =========================================================================
    cmd - the commands of the matmul program: `spm matmul` and
    `spm gen matrix` (listed in vm/cmd/commands.c)

    Each is a command's main: argv[0] is "spm matmul" (or "spm gen matrix"),
    and the return value is the process's exit status.
    =========================================================================
*/
#ifndef SPM_MATMUL_CMD_H_INCLUDED
#define SPM_MATMUL_CMD_H_INCLUDED

int spm_cmd_matmul(int argc, char **argv);
int spm_cmd_gen_matrix(int argc, char **argv);

#endif
