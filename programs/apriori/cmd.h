/*  =========================================================================
    cmd - the commands of the apriori program: `spm mine` and
    `spm gen transactions` (listed in vm/cmd/commands.c)

    Each is a command's main: argv[0] is "spm mine" (or "spm gen
    transactions"), and the return value is the process's exit status.
    =========================================================================
*/
#ifndef SPM_APRIORI_CMD_H_INCLUDED
#define SPM_APRIORI_CMD_H_INCLUDED

int spm_cmd_mine(int argc, char **argv);
int spm_cmd_gen_transactions(int argc, char **argv);

#endif
