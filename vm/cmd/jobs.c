/*  =========================================================================
    jobs - the commands that ask a running VM about its jobs: `spm status`,
    `spm submit`, `spm wait`, `spm cancel`, `spm jobs`, `spm show`
    =========================================================================
*/
#include "vm/cmd/commands.h"
#include "vm/client/pluginrun.h"
#include "base/cli.h"
#include "base/json.h"
#include "transport/report.h"
#include "vm/client/session.h"
#include "spm/spm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/*  A client command's own options beyond the center's (--center, --keys,
    --timeout ...): a NULL or 0 member is an option the command does not
    take, and refuses. */
typedef struct {
    int *watch;         /* --watch */
    const char **state; /* --state STATE */
    const char **since; /* --since WHEN */
    int json;           /* takes --json */
    int quiet;          /* takes --quiet */
} extra_t;

/*  The --center line of these commands: never an embedded VM. */
#define CENTER_HELP                                                                                \
    "  --center ENDPOINT   the center (default $SPM_CENTER, else tcp://localhost:7700)\n"

/*  Parses the center options of a client command and those X takes; *ARG
    gets the first positional argument (may be NULL). Returns -1 to go on,
    else an exit code. */
static int parse_client(int argc, char **argv, const char *cmd, const char *help, const extra_t *x,
                        spm_run_opts_t *o, const char **arg)
{
    static const struct option opts[] = {{"watch", no_argument, 0, 'w'},
                                         {"state", required_argument, 0, 's'},
                                         {"since", required_argument, 0, 'S'},
                                         {"json", no_argument, 0, SPM_OPT_JSON},
                                         {"quiet", no_argument, 0, SPM_OPT_QUIET},
                                         {"help", no_argument, 0, 'h'},
                                         SPM_CENTER_LONGOPTS,
                                         {0, 0, 0, 0}};
    spm_run_opts_init(o);
    int ch, rc;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == 'h') {
            printf("%s", help);
            return 0;
        }
        if (ch == 'w' && x->watch)
            *x->watch = 1;
        else if (ch == 's' && x->state)
            *x->state = optarg;
        else if (ch == 'S' && x->since)
            *x->since = optarg;
        else if ((ch == SPM_OPT_JSON && !x->json) || (ch == SPM_OPT_QUIET && !x->quiet) ||
                 ch == '?' || ch == 'w' || ch == 's' || ch == 'S')
            return spm_cli_usage(cmd, "invalid option");
        else if ((rc = spm_run_opts_set(o, ch, optarg)) != 0)
            return spm_cli_fail(cmd, rc);
    }
    *arg = optind < argc ? argv[optind] : NULL;
    if (optind + (*arg ? 1 : 0) < argc)
        return spm_cli_usage(cmd, "unexpected argument '%s'", argv[argc - 1]);
    return -1;
}

static const char status_help[] =
    "usage: spm status [--json] [--watch] [--center ENDPOINT] [OPTIONS]\n\n"
    "Shows the VM: nodes, IEUs (busy, idle, dead), SIs ready, every job's progress\n"
    "and ETA, cache hits per level, the store's blocks and size, where blocks live\n"
    "(versions on the nodes, short of replicas or lost, copies ordered, bytes\n"
    "through the center; per node what it keeps, served and took), refused\n"
    "connections and recent failures.\n\n"
    "  --json              one JSON object on stdout, for scripts (with --watch, one\n"
    "                      a second, one after another)\n"
    "  --watch             show it again every second until Ctrl-C: on a terminal\n"
    "                      in place of the last, else one after another, each\n"
    "                      after a line of its time\n" CENTER_HELP SPM_CONNECT_OPTS_HELP;

/*  What --watch writes before each text snapshot: on a terminal, the
    codes that clear it, so that the status stays in place; into a pipe or
    a file, where those codes would be garbage, a line with the time, after
    a blank line but before the FIRST, so that each snapshot can be told
    apart and read plainly. */
static void watch_heading(int tty, int first)
{
    if (tty) {
        printf("\033[H\033[2J");
        return;
    }
    time_t now = time(NULL);
    struct tm tm;
    char when[32] = "?";
    if (localtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    printf("%s--- %s\n", first ? "" : "\n", when);
}

int spm_cmd_status(int argc, char **argv)
{
    spm_run_opts_t o;
    const char *arg;
    int watch = 0;
    int rc = parse_client(argc, argv, "status", status_help, &(extra_t){.watch = &watch, .json = 1},
                          &o, &arg);
    if (rc >= 0)
        return rc;
    if (arg)
        return spm_cli_usage("status", "unexpected argument '%s'", arg);
    spm_session_t *s;
    if ((rc = open_remote(&o, "status", &s)) != 0)
        return rc;
    int tty = isatty(STDOUT_FILENO), first = 1;
    do {
        char *json, *text;
        if ((rc = spm_session_status(s, &json, &text)) != 0)
            break;
        if (watch && !o.json)
            watch_heading(tty, first);
        first = 0;
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

#define EXIT_CANCELED 3 /* spm wait: the job was canceled (docs/man/spm.1) */

static const char wait_help[] =
    "usage: spm wait JOB [--json] [--quiet] [--center ENDPOINT] [OPTIONS]\n\n"
    "Follows a submitted job: its progress on a terminal, then its report. A job\n"
    "that has ended is answered from the center's records (spm jobs), as often as\n"
    "it is asked. Exits 0 when the job succeeded, 1 when it failed, 3 when it was\n"
    "canceled (spm cancel, or abandoned by its client).\n\n"
    "  --json              print the report as JSON on stdout\n"
    "  --quiet             no progress bar, no text report\n" CENTER_HELP SPM_CONNECT_OPTS_HELP;

int spm_cmd_wait(int argc, char **argv)
{
    spm_run_opts_t o;
    const char *arg;
    uint64_t job;
    int rc =
        parse_client(argc, argv, "wait", wait_help, &(extra_t){.json = 1, .quiet = 1}, &o, &arg);
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
    if (rc == SPM_ECANCELED && !spm_session_interrupted()) {
        spm_cli_fail("wait", rc);
        return EXIT_CANCELED;
    }
    return rc ? spm_cli_fail("wait", rc) : 0;
}

static const char cancel_help[] =
    "usage: spm cancel JOB [--center ENDPOINT] [OPTIONS]\n\n"
    "Stops a job: its SIs are no longer issued, those running are discarded when\n"
    "they commit, and the job ends as canceled. Only the key that submitted it, or\n"
    "an operator's, may (spm keygen --help).\n\n" CENTER_HELP SPM_CONNECT_OPTS_HELP;

int spm_cmd_cancel(int argc, char **argv)
{
    spm_run_opts_t o;
    const char *arg;
    uint64_t job;
    int rc = parse_client(argc, argv, "cancel", cancel_help, &(extra_t){0}, &o, &arg);
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
int spm_cmd_submit(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: spm submit PROGRAM [--center ENDPOINT] [OPTIONS]\n\n"
               "Submits PROGRAM (any of 'spm run --help') to a running VM, prints its job\n"
               "id and returns at once. Follow it with 'spm wait JOB', stop it with\n"
               "'spm cancel JOB', find it with 'spm jobs'. OPTIONS are the program's, as\n"
               "for spm run. The center defaults to $SPM_CENTER, else\n"
               "tcp://localhost:7700 (never an embedded VM: the job would go with it).\n"
               "Its blocks are freed once 'spm wait' delivered its report, or\n"
               "center.keep_results_s after it ended; its record stays (spm jobs).\n"
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

/* --------------------------------------------------- spm jobs, spm show */

static const char *const states[] = {"running", "done", "failed", "canceled"};

/*  Parses --since WHEN into Unix microseconds: an age ("30s", "90m", "12h",
    "7d": that long ago) or a local date and time ("2026-05-01",
    "2026-05-01 10:00", "2026-05-01T10:00:30"). Returns 0 or SPM_EINVAL. */
static int parse_since(const char *s, uint64_t *us)
{
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    static const char units[] = "smhd";
    static const long long secs[] = {1, 60, 3600, 86400};
    const char *u = *end && !end[1] ? strchr(units, *end) : NULL;
    time_t now = time(NULL);
    if (!errno && end != s && n >= 0 && u && n < 1000000000LL) {
        long long ago = n * secs[u - units];
        *us = now > ago ? (uint64_t)(now - ago) * 1000000u : 0;
        return 0;
    }
    static const char *const formats[] = {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S",
                                          "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        struct tm tm = {.tm_isdst = -1};
        const char *rest = strptime(s, formats[i], &tm);
        time_t t = rest && !*rest ? mktime(&tm) : (time_t)-1;
        if (t != (time_t)-1 && t >= 0) {
            *us = (uint64_t)t * 1000000u;
            return 0;
        }
    }
    return spm_error(SPM_EINVAL,
                     "--since: '%s' is neither an age (30s, 90m, 12h, 7d) nor a date "
                     "(2026-05-01, 2026-05-01 10:00)",
                     s);
}

/*  Writes Unix time US (0: none) as local "YYYY-MM-DD HH:MM:SS" (WITH_DAY)
    or "HH:MM:SS" into BUF, "-" when there is none. */
static const char *local_time(uint64_t us, int with_day, char *buf, size_t size)
{
    time_t t = (time_t)(us / 1000000u);
    struct tm tm;
    if (!us || !localtime_r(&t, &tm))
        return "-";
    strftime(buf, size, with_day ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
    return buf;
}

/*  Writes Unix time US as a JSON value: an ISO 8601 UTC string, or null. */
static void json_time(FILE *out, uint64_t us)
{
    time_t t = (time_t)(us / 1000000u);
    struct tm tm;
    char buf[40];
    if (!us || !gmtime_r(&t, &tm)) {
        fputs("null", out);
        return;
    }
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(out, "\"%s.%06uZ\"", buf, (unsigned)(us % 1000000u));
}

/*  Prints record R as one JSON object (with its report when it has one
    and WITH_REPORT), no newline. */
static void record_json(FILE *out, const Spm__JobRecord *r, int with_report)
{
    fprintf(out, "{\"job\": %llu, \"program\": ", (unsigned long long)r->job);
    spm_json_string(out, r->program);
    fprintf(out, ", \"state\": ");
    spm_json_string(out, r->state);
    fprintf(out, ", \"status\": %d, \"error\": ", r->status);
    spm_json_string(out, r->error);
    fprintf(out, ", \"priority\": %d, \"owner\": ", r->priority);
    spm_json_string(out, r->owner);
    fprintf(out, ", \"submit\": ");
    json_time(out, r->submit_us);
    fprintf(out, ", \"start\": ");
    json_time(out, r->start_us);
    fprintf(out, ", \"end\": ");
    json_time(out, r->end_us);
    fprintf(out,
            ", \"committed\": %llu, \"known\": %llu, \"wall_s\": %.3f, \"restarts\": %u, "
            "\"detached\": %s, \"delivered\": %s, \"freed\": %s",
            (unsigned long long)r->committed, (unsigned long long)r->known, r->run_us / 1e6,
            r->restarts, r->detached ? "true" : "false", r->delivered ? "true" : "false",
            r->freed ? "true" : "false");
    if (with_report && r->report) {
        fprintf(out, ", \"report\": ");
        char *rep = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&rep, &len);
        if (m) {
            spm_report_print(r->report, 1, m);
            fclose(m);
            while (len && rep[len - 1] == '\n')
                rep[--len] = '\0';
            fputs(rep, out);
        } else {
            fputs("null", out);
        }
        free(rep);
    }
    fputc('}', out);
}

static const char jobs_help[] =
    "usage: spm jobs [--state STATE] [--since WHEN] [--json] [--center ENDPOINT]\n"
    "                [OPTIONS]\n\n"
    "Lists the jobs the center knows, running and ended, newest first, as sacct\n"
    "does Slurm's: id, program, state (running, done, failed, canceled), priority,\n"
    "the owner's key name, submit, start and end times, SIs committed of those known,\n"
    "and wall time (the time it ran: a center's downtime is not counted). The\n"
    "center keeps the records across restarts (STORE/history) for\n"
    "center.history_jobs ended jobs and center.history_days days.\n\n"
    "  --state STATE       only jobs in STATE\n"
    "  --since WHEN        only jobs submitted since WHEN: an age (30s, 90m, 12h, 7d)\n"
    "                      or a local date and time (2026-05-01, '2026-05-01 10:00')\n"
    "  --json              one JSON object {\"jobs\": [...]} on stdout; times in ISO\n"
    "                      8601 UTC\n" CENTER_HELP SPM_CONNECT_OPTS_HELP;

int spm_cmd_jobs(int argc, char **argv)
{
    spm_run_opts_t o;
    const char *arg, *state = NULL, *since = NULL;
    int rc = parse_client(argc, argv, "jobs", jobs_help,
                          &(extra_t){.state = &state, .since = &since, .json = 1}, &o, &arg);
    if (rc >= 0)
        return rc;
    if (arg)
        return spm_cli_usage("jobs", "unexpected argument '%s'", arg);
    int known = !state;
    for (size_t i = 0; state && i < sizeof states / sizeof *states; i++)
        known |= !strcmp(state, states[i]);
    if (!known)
        return spm_cli_usage("jobs", "--state: '%s' is not running, done, failed or canceled",
                             state);
    uint64_t since_us = 0;
    if (since && parse_since(since, &since_us) != 0)
        return spm_cli_usage("jobs", "%s", spm_error_detail());
    spm_session_t *s;
    if ((rc = open_remote(&o, "jobs", &s)) != 0)
        return rc;
    Spm__JobsReply *r = NULL;
    rc = spm_session_jobs(s, 0, state, since_us, &r);
    spm_session_destroy(&s);
    if (rc)
        return spm_cli_fail("jobs", rc);
    if (o.json) {
        printf("{\"jobs\": [");
        for (size_t i = 0; i < r->n_jobs; i++) {
            fputs(i ? ", " : "", stdout);
            record_json(stdout, r->jobs[i], 0);
        }
        printf("]}\n");
    } else {
        printf("%6s  %-12s %-8s %4s  %-12s %-19s  %-8s  %-8s  %15s %10s\n", "job", "program",
               "state", "pri", "owner", "submitted", "started", "ended", "SIs", "wall");
        for (size_t i = 0; i < r->n_jobs; i++) {
            const Spm__JobRecord *j = r->jobs[i];
            char t1[32], t2[32], t3[32], sis[48];
            snprintf(sis, sizeof sis, "%llu/%llu", (unsigned long long)j->committed,
                     (unsigned long long)j->known);
            printf("%6llu  %-12.12s %-8s %4d  %-12.12s %-19s  %-8s  %-8s  %15s %8.1f s\n",
                   (unsigned long long)j->job, j->program, j->state, j->priority,
                   j->owner[0] ? j->owner : "-", local_time(j->submit_us, 1, t1, sizeof t1),
                   local_time(j->start_us, 0, t2, sizeof t2),
                   local_time(j->end_us, 0, t3, sizeof t3), sis, j->run_us / 1e6);
        }
    }
    fflush(stdout);
    spm__jobs_reply__free_unpacked(r, NULL);
    return 0;
}

static const char show_help[] =
    "usage: spm show JOB [--json] [--center ENDPOINT] [OPTIONS]\n\n"
    "Shows one job's record (as spm jobs lists it, with its error and whether its\n"
    "blocks are still kept) and, once it ended, its report. Only the key that\n"
    "submitted it, or an operator's, gets the report (spm keygen --help).\n\n"
    "  --json              the record, and its report, as one JSON object on stdout\n" CENTER_HELP
        SPM_CONNECT_OPTS_HELP;

int spm_cmd_show(int argc, char **argv)
{
    spm_run_opts_t o;
    const char *arg;
    uint64_t job;
    int rc = parse_client(argc, argv, "show", show_help, &(extra_t){.json = 1}, &o, &arg);
    if (rc >= 0 || (rc = job_arg("show", arg, &job)) >= 0)
        return rc;
    spm_session_t *s;
    if ((rc = open_remote(&o, "show", &s)) != 0)
        return rc;
    Spm__JobsReply *r = NULL;
    rc = spm_session_jobs(s, job, NULL, 0, &r);
    spm_session_destroy(&s);
    if (rc == 0 && r->n_jobs != 1)
        rc = spm_error(SPM_ENOTFOUND, "job %llu: no such job", (unsigned long long)job);
    if (rc) {
        if (r)
            spm__jobs_reply__free_unpacked(r, NULL);
        return spm_cli_fail("show", rc);
    }
    const Spm__JobRecord *j = r->jobs[0];
    if (o.json) {
        record_json(stdout, j, 1);
        putchar('\n');
    } else {
        char t1[32], t2[32], t3[32];
        printf("job %llu (%s): %s%s%s\n", (unsigned long long)j->job, j->program, j->state,
               j->error[0] ? ": " : "", j->error);
        printf("  owner %s, priority %d%s\n", j->owner[0] ? j->owner : "- (no keys)", j->priority,
               j->detached ? ", submitted with spm submit" : "");
        printf("  submitted %s, started %s, ended %s\n", local_time(j->submit_us, 1, t1, sizeof t1),
               local_time(j->start_us, 1, t2, sizeof t2), local_time(j->end_us, 1, t3, sizeof t3));
        printf("  %llu of %llu SIs committed, ran %.3f s", (unsigned long long)j->committed,
               (unsigned long long)j->known, j->run_us / 1e6);
        if (j->restarts)
            printf(", resumed after %u center restart%s", j->restarts, j->restarts == 1 ? "" : "s");
        printf("\n  blocks %s\n", j->freed ? "freed" : "kept");
        if (j->report) {
            printf("\n");
            spm_report_print(j->report, 0, stdout);
        }
    }
    fflush(stdout);
    spm__jobs_reply__free_unpacked(r, NULL);
    return 0;
}
