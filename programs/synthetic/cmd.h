/*  =========================================================================
    cmd - the command of the synthetic program: `spm run synthetic` (and
    `spm submit synthetic`, which adds --detach), listed in
    vm/cmd/commands.c
    =========================================================================
*/
#ifndef SPM_SYNTHETIC_CMD_H_INCLUDED
#define SPM_SYNTHETIC_CMD_H_INCLUDED

int spm_cmd_run_synthetic(int argc, char **argv);

#endif
