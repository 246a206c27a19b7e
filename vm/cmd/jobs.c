/*  =========================================================================
    jobs - the commands that ask a running VM about its jobs: `spm status`,
    `spm submit`, `spm wait`, `spm cancel`
    =========================================================================
*/
#include "base/cli.h"
#include "vm/client/session.h"
#include "spm/spm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*  Opens a session to the center named by --center or the configuration's
    agent.center (status, wait and cancel never start an embedded VM). */
static int open_remote(spm_run_opts_t *o, const char *cmd, spm_session_t **s)
{
    if (!o->center)
        o->center = getenv("SPM_CENTER") ? getenv("SPM_CENTER") : "tcp://localhost:7700";
    int rc = spm_session_open(o, s);
    return rc ? spm_cli_fail(cmd, rc) : 0;
}

/*  Parses the run options of a client command; *ARG gets the first
    positional argument (may be NULL). Returns -1 to go on, else an exit code. */
static int parse_client(int argc, char **argv, const char *cmd, const char *help, int *watch,
                        spm_run_opts_t *o, const char **arg)
{
    static const struct option opts[] = {{"watch", no_argument, 0, 'w'},
                                         {"help", no_argument, 0, 'h'},
                                         SPM_RUN_LONGOPTS,
                                         {0, 0, 0, 0}};
    spm_run_opts_init(o);
    int ch, rc;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == 'h') {
            printf("%s", help);
            return 0;
        }
        if (ch == 'w' && watch) {
            *watch = 1;
            continue;
        }
        if (ch == '?' || ch == 'w')
            return spm_cli_usage(cmd, "invalid option");
        if ((rc = spm_run_opts_set(o, ch, optarg)) != 0)
            return spm_cli_fail(cmd, rc);
    }
    *arg = optind < argc ? argv[optind] : NULL;
    if (optind + (*arg ? 1 : 0) < argc)
        return spm_cli_usage(cmd, "unexpected argument '%s'", argv[argc - 1]);
    return -1;
}

static const char status_help[] =
    "usage: spm status [--center ENDPOINT] [--json] [--watch] [--keys DIR] [--insecure]\n\n"
    "Shows the VM: nodes, IEUs (busy, idle, dead), SIs ready, every job's progress\n"
    "and ETA, cache hits per level, the store's blocks and size, where blocks live\n"
    "(versions on the nodes, short of replicas or lost, copies ordered, bytes\n"
    "through the center; per node what it keeps, served and took), refused\n"
    "connections and recent failures.\n"
    "--json prints one JSON object for scripts; --watch refreshes every second.\n"
    "The center defaults to $SPM_CENTER, else tcp://localhost:7700.\n";

static int status_main(int argc, char **argv)
{
    spm_run_opts_t o;
    const char *arg;
    int watch = 0;
    int rc = parse_client(argc, argv, "status", status_help, &watch, &o, &arg);
    if (rc >= 0)
        return rc;
    if (arg)
        return spm_cli_usage("status", "unexpected argument '%s'", arg);
    spm_session_t *s;
    if ((rc = open_remote(&o, "status", &s)) != 0)
        return rc;
    do {
        char *json, *text;
        if ((rc = spm_session_status(s, &json, &text)) != 0)
            break;
        if (watch && !o.json)
            printf("\033[H\033[2J");
        fputs(o.json ? json : text, stdout);
        fflush(stdout);
        free(json);
        free(text);
        if (watch)
            sleep(1);
    } while (watch && !spm_session_interrupted());
    spm_session_destroy(&s);
    return rc ? spm_cli_fail("status", rc) : 0;
}

/*  Parses a job id argument. */
static int job_arg(const char *cmd, const char *arg, uint64_t *job)
{
    long v;
    if (!arg)
        return spm_cli_usage(cmd, "which job? (a job id, as printed by spm submit)");
    if (spm_parse_long("JOB", arg, 1, INT64_MAX, &v) != 0)
        return spm_cli_fail(cmd, SPM_EINVAL);
    *job = (uint64_t)v;
    return -1;
}

static const char wait_help[] = "usage: spm wait JOB [--center ENDPOINT] [--json] [--quiet]\n\n"
                                "Follows a submitted job: its progress on a terminal, then its\n"
                                "report. Exits 0 when the job succeeded.\n";

static int wait_main(int argc, char **argv)
{
    spm_run_opts_t o;
    const char *arg;
    uint64_t job;
    int rc = parse_client(argc, argv, "wait", wait_help, NULL, &o, &arg);
    if (rc >= 0 || (rc = job_arg("wait", arg, &job)) >= 0)
        return rc;
    spm_session_t *s;
    if ((rc = open_remote(&o, "wait", &s)) != 0)
        return rc;
    void *result = NULL;
    size_t len = 0;
    rc = spm_session_wait(s, job, &result, &len);
    if (rc == 0 && result && spm_session_text_result(s) && !o.json) {
        fwrite(result, 1, len, stdout); /* a plugin's result */
        fflush(stdout);
    }
    free(result);
    spm_session_destroy(&s);
    return rc ? spm_cli_fail("wait", rc) : 0;
}

static const char cancel_help[] = "usage: spm cancel JOB [--center ENDPOINT]\n\n"
                                  "Stops a job: its SIs are no longer issued, those running are\n"
                                  "discarded when they commit, and the job ends as canceled.\n";

static int cancel_main(int argc, char **argv)
{
    spm_run_opts_t o;
    const char *arg;
    uint64_t job;
    int rc = parse_client(argc, argv, "cancel", cancel_help, NULL, &o, &arg);
    if (rc >= 0 || (rc = job_arg("cancel", arg, &job)) >= 0)
        return rc;
    spm_session_t *s;
    if ((rc = open_remote(&o, "cancel", &s)) != 0)
        return rc;
    rc = spm_session_cancel(s, job);
    spm_session_destroy(&s);
    if (rc)
        return spm_cli_fail("cancel", rc);
    printf("job %llu canceled\n", (unsigned long long)job);
    return 0;
}

/*  `spm submit PROGRAM ...` is `spm run PROGRAM ... --detach`. */
static int submit_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: spm submit PROGRAM --center ENDPOINT [OPTIONS]\n\n"
               "Submits PROGRAM (any of 'spm run --help') to a running VM, prints its job\n"
               "id and returns at once. Follow it with 'spm wait JOB', stop it with\n"
               "'spm cancel JOB'. OPTIONS are the program's, as for spm run.\n"
               "'spm submit --plugin LIB --center ENDPOINT PROGRAM ...' submits a program\n"
               "built out of tree ('spm run --plugin --help').\n");
        return argc < 2 ? 2 : 0;
    }
    if (!strncmp(argv[1], "--plugin", 8))
        return spm_plugin_run_main(argc, argv, "submit", 1);
    const spm_command_t *r = spm_runner_find(argv[1]);
    if (!r)
        return spm_cli_usage("submit", "no PROGRAM named '%s'", argv[1]);
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args)
        return spm_cli_fail("submit", SPM_ENOMEM);
    char name[96];
    snprintf(name, sizeof name, "spm submit %s", r->name);
    args[0] = name;
    for (int i = 2; i < argc; i++)
        args[i - 1] = argv[i];
    args[argc - 1] = "--detach";
    int rc = r->main(argc, args);
    free(args);
    return rc;
}

SPM_CONSTRUCTOR(status_cmds)
{
    spm_command_register(&(spm_command_t){.name = "status",
                                          .summary = "show nodes, IEUs, jobs and caches of a VM",
                                          .main = status_main});
    spm_command_register(&(spm_command_t){.name = "submit",
                                          .summary = "submit a job to a running VM and return",
                                          .main = submit_main});
    spm_command_register(&(spm_command_t){
        .name = "wait", .summary = "follow a submitted job to its report", .main = wait_main});
    spm_command_register(
        &(spm_command_t){.name = "cancel", .summary = "stop a submitted job", .main = cancel_main});
}
