/*  =========================================================================
    commands - the table of the spm binary's commands

    One line per command, in the order `spm --help` lists them: first what
    a user runs, then the processes an operator starts, then the tools.
    Adding a command is adding a line here and its main.
    =========================================================================
*/
#include "vm/cmd/commands.h"
#include "programs/apriori/cmd.h"
#include "programs/matmul/cmd.h"
#include "programs/synthetic/cmd.h"
#include "spm/spm.h"

#include <string.h>

static const spm_command_t commands[] = {
    {"run", "run a program on a VM (embedded by default)", spm_cmd_run},
    {"matmul", "multiply two Matrix Market files: C = A x B", spm_cmd_matmul},
    {"mine", "mine frequent itemsets and association rules from a transaction file", spm_cmd_mine},
    {"gen", "generate input data (matrices, transactions)", spm_cmd_gen},
    {"submit", "submit a job to a running VM and return", spm_cmd_submit},
    {"wait", "follow a submitted job to its report", spm_cmd_wait},
    {"cancel", "stop a submitted job", spm_cmd_cancel},
    {"status", "show nodes, IEUs, jobs and caches of a VM", spm_cmd_status},
    {"jobs", "list the jobs of a VM, running and ended", spm_cmd_jobs},
    {"show", "show one job's record and report", spm_cmd_show},
    {"center", "run the center of a VM (IDU and store)", spm_cmd_center},
    {"agent", "run the agent of one node (starts its IEUs)", spm_cmd_agent},
    {"ieu", "run one execution unit (started by the agent)", spm_cmd_ieu},
    {"sfhost", "run a plugin job's super-functions (started by the center)", spm_cmd_sfhost},
    {"keygen", "create CurveZMQ keys for TCP endpoints", spm_cmd_keygen},
    {"config", "check a configuration file", spm_cmd_config},
    {"plot", "draw a traced run (Gantt chart, utilisation)", spm_cmd_plot},
    {NULL, NULL, NULL},
};

static const spm_command_t generators[] = {
    {"matrix", "a random matrix in Matrix Market format", spm_cmd_gen_matrix},
    {"transactions", "synthetic transactions (IBM Quest generator, FIMI format)",
     spm_cmd_gen_transactions},
    {NULL, NULL, NULL},
};

static const spm_command_t runners[] = {
    {"synthetic", "SIs of synthetic CPU work (load-balancing workload)", spm_cmd_run_synthetic},
    {NULL, NULL, NULL},
};

const spm_command_t *spm_generator_find(const char *name)
{
    return spm_command_in(generators, name);
}

const spm_command_t *spm_generator_at(unsigned i)
{
    return i < sizeof generators / sizeof *generators - 1 ? &generators[i] : NULL;
}

const spm_command_t *spm_runner_find(const char *name)
{
    return spm_command_in(runners, name);
}

const spm_command_t *spm_runner_at(unsigned i)
{
    return i < sizeof runners / sizeof *runners - 1 ? &runners[i] : NULL;
}

/*  Before main (and in a test binary, which has another main): base/cli
    must know the commands before anything forks a center or an agent. */
SPM_CONSTRUCTOR(commands)
{
    spm_commands_use(commands);
}
