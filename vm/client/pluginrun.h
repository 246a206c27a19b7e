/*  =========================================================================
    pluginrun - the command side of a program built out of tree

    `spm run --plugin LIB PROGRAM ARG...` (DETACH 0, CMD "run") and `spm
    submit --plugin ...` (DETACH 1, CMD "submit"): loads LIB, sends it to
    the VM with the job and runs or submits PROGRAM. Returns the exit status.
    =========================================================================
*/
#ifndef SPM_PLUGINRUN_H_INCLUDED
#define SPM_PLUGINRUN_H_INCLUDED

int spm_plugin_run_main(int argc, char **argv, const char *cmd, int detach);

#endif
