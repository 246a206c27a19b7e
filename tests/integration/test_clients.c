/*  The client commands as an operator uses them against a running center:
    a client started before its center waits for it when asked
    (--wait-center) and gives up in one line when the wait is over;
    `spm status --watch` into a pipe writes plain snapshots, never terminal
    codes; a job of `spm mine` is listed as "mine"; a job starved by one
    of a higher priority shows "waiting", not an ETA of hours. Real
    centers, agents, IEUs and clients of the spm binary. */
#include "tests/check_main.h"
#include "tests/spm_test.h"

#include <sys/time.h>

/*  Microseconds on the monotonic clock. */
static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/*  Runs `spm ARGV` and returns its stdout (malloc'd); fails the test when
    it fails. */
static char *run_ok(const char *const *argv)
{
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "spm %s exited %d: %s", argv[0], rc, err);
    free(err);
    return out;
}

/*  Counts the occurrences of NEEDLE in S. */
static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/*  A client started 2 s before its center, told to wait up to 60 s, gets
    its answer once the center is up, having said once on stderr that it
    waits (an option agents share). Without --wait-center the client
    commands knew no such option. */
START_TEST(status_waits_for_a_center_started_later)
{
    spm_test_vm_t vm;
    memset(&vm, 0, sizeof vm);
    snprintf(vm.dir, sizeof vm.dir, "%s", spm_test_tmpdir());
    snprintf(vm.ep, sizeof vm.ep, "ipc://%s/center", vm.dir);
    const char *status[] = {"status", "--center", vm.ep, "--wait-center", "60", NULL};
    spm_test_proc_t client = spm_test_start(status);
    sleep(2);
    ck_assert_msg(spm_test_running(client.pid), "the client did not wait");
    char store[128];
    snprintf(store, sizeof store, "%s/store", vm.dir);
    const char *center[] = {"center", "--listen",    vm.ep,   "--store",
                            store,    "--log-level", "error", NULL};
    vm.center = spm_test_start(center);
    char *out, *err;
    int rc = spm_test_finish(&client, 60, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(out, "center up"), "%s", out);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, "waiting for the center at") &&
                      strstr(err, "up to 60 s"),
                  "not said once: %s", err);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  With a short wait and no center, a client gives up when the wait is
    over (not after its 10 s timeout) in one line naming the center and
    the option; so do spm jobs and spm wait. */
START_TEST(short_wait_for_a_missing_center_fails_in_one_line)
{
    char dir[64], ep[160];
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
    snprintf(ep, sizeof ep, "ipc://%s/nobody", dir);
    const char *status[] = {"status", "--center", ep, "--wait-center", "2", NULL};
    const char *jobs[] = {"jobs", "--center", ep, "--wait-center", "2", "--json", NULL};
    const char *wait[] = {"wait", "7", "--center", ep, "--wait-center", "2", NULL};
    const char *const *cmds[] = {status, jobs, wait};
    for (int i = 0; i < 3; i++) {
        char *out, *err;
        long long t0 = now_us();
        int rc = spm_test_run(cmds[i], 60, &out, &err);
        double took = (now_us() - t0) / 1e6;
        ck_assert_msg(rc == 1, "spm %s: exit %d", cmds[i][0], rc);
        ck_assert_msg(took >= 1.5 && took < 9, "spm %s gave up after %.1f s", cmds[i][0], took);
        ck_assert_str_eq(out, "");
        /* the wait said, then the failure: one line each */
        ck_assert_msg(spm_test_lines(err) == 2 && strstr(err, "waiting for the center at") &&
                          strstr(err, "did not answer within 2 s (--wait-center)") &&
                          strstr(err, ep),
                      "spm %s: %s", cmds[i][0], err);
        free(out);
        free(err);
    }
    const char *bad[] = {"status", "--center", ep, "--wait-center", "soon", NULL};
    char *err;
    ck_assert_int_eq(spm_test_run(bad, 30, NULL, &err), 1);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, "--wait-center"), "%s", err);
    free(err);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/*  A job-running command with a center named waits too: `spm run` started
    before its center and agent runs its job once they are up. */
START_TEST(run_waits_for_its_center_and_runs_the_job)
{
    spm_test_vm_t vm;
    memset(&vm, 0, sizeof vm);
    snprintf(vm.dir, sizeof vm.dir, "%s", spm_test_tmpdir());
    snprintf(vm.ep, sizeof vm.ep, "ipc://%s/center", vm.dir);
    const char *run[] = {"run",    "synthetic", "--sis",         "50", "--center", vm.ep,
                         "--json", "--quiet",   "--wait-center", "60", NULL};
    spm_test_proc_t client = spm_test_start(run);
    sleep(2);
    char store[128];
    snprintf(store, sizeof store, "%s/store", vm.dir);
    const char *center[] = {"center", "--listen",    vm.ep,   "--store",
                            store,    "--log-level", "error", NULL};
    vm.center = spm_test_start(center);
    spm_test_vm_agent(&vm, "1", NULL);
    char *out, *err;
    int rc = spm_test_finish(&client, 90, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(out, "\"committed\": 50"), "%s", out);
    ck_assert_int_eq(count(err, "waiting for the center at"), 1);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  `spm status --watch` into a file (as into a pipe or a log) writes each
    snapshot plainly under a line of its time: no clear-screen codes. */
START_TEST(watch_into_a_pipe_prints_plain_snapshots)
{
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    const char *watch[] = {"status", "--center", vm.ep, "--watch", NULL};
    spm_test_proc_t p = spm_test_start(watch);
    sleep(3);
    kill(p.pid, SIGINT);
    char *out, *err;
    int rc = spm_test_finish(&p, 30, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(!strchr(out, '\033'), "terminal codes in a pipe: %s", out);
    int snapshots = count(out, "center up");
    ck_assert_msg(snapshots >= 2, "%s", out);
    ck_assert_int_eq(count(out, "\n--- "), snapshots - 1);
    ck_assert_msg(strncmp(out, "--- ", 4) == 0, "%s", out);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  A job of `spm mine` is listed under the command's name, as the user
    ran it, in spm jobs --json and in the status. */
START_TEST(mine_jobs_are_listed_as_mine)
{
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    spm_test_vm_agent(&vm, "1", NULL);
    char data[128], rules[128];
    snprintf(data, sizeof data, "%s/t.dat", vm.dir);
    snprintf(rules, sizeof rules, "%s/rules.txt", vm.dir);
    const char *gen[] = {
        "gen", "transactions", "--transactions", "500", "--items", "50", "-o", data, NULL};
    free(run_ok(gen));
    const char *mine[] = {"mine", data,       "--min-support", "0.05",    "-o",
                          rules,  "--center", vm.ep,           "--quiet", NULL};
    free(run_ok(mine));
    const char *jobs[] = {"jobs", "--center", vm.ep, "--json", NULL};
    char *out = run_ok(jobs);
    ck_assert_msg(strstr(out, "\"program\": \"mine\"") && !strstr(out, "apriori"), "%s", out);
    free(out);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  The status's text line of JOB (a static copy), or "" when not listed. */
static const char *job_line(const char *text, const char *job)
{
    static char line[512];
    line[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        const char *q = p;
        while (*q == ' ')
            q++;
        size_t n = strlen(job);
        if (strncmp(q, job, n) == 0 && q[n] == ' ') {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            snprintf(line, sizeof line, "%.*s", (int)len, p);
            break;
        }
    }
    return line;
}

/*  The ETA column of a job's status line ("job program state SIs ready
    elapsed s ETA ..."): "waiting", "-", or the seconds followed by " s"
    (a static copy). */
static const char *eta_field(const char *line)
{
    static char eta[64];
    char words[12][48];
    int n = sscanf(line, "%47s %47s %47s %47s %47s %47s %47s %47s %47s", words[0], words[1],
                   words[2], words[3], words[4], words[5], words[6], words[7], words[8]);
    if (n < 8)
        return "";
    if (n == 9 && strcmp(words[8], "s") == 0)
        snprintf(eta, sizeof eta, "%s s", words[7]);
    else
        snprintf(eta, sizeof eta, "%s", words[7]);
    return eta;
}

/*  A job starved by one of a higher priority on the only IEU commits
    nothing: the status shows it "waiting", not an ETA made of the time it
    has been starved (3645.8 s for a minute's work), while the job that
    runs shows one. */
START_TEST(starved_job_shows_waiting_not_an_eta)
{
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    spm_test_vm_agent(&vm, "1", NULL);
    const char *low[] = {"submit",     "synthetic", "--sis",    "400", "--work",
                         "fixed:50ms", "--sleep",   "--center", vm.ep, NULL};
    char *low_id = run_ok(low);
    low_id[strcspn(low_id, "\n")] = '\0';
    const char *status[] = {"status", "--center", vm.ep, "--json", NULL};
    /* it runs a while: some SIs committed, so an old ETA had a number */
    int committed = 0;
    for (int i = 0; i < 300 && committed < 10; i++) {
        usleep(100000);
        char *j = run_ok(status);
        const char *c = strstr(j, "\"committed\": ");
        committed = c ? atoi(c + 13) : 0;
        free(j);
    }
    ck_assert_int_ge(committed, 10);
    const char *high[] = {"submit",  "synthetic",  "--sis", "2000",     "--work", "fixed:50ms",
                          "--sleep", "--priority", "10",    "--center", vm.ep,    NULL};
    char *high_id = run_ok(high);
    high_id[strcspn(high_id, "\n")] = '\0';
    const char *text_status[] = {"status", "--center", vm.ep, NULL};
    char *text = NULL;
    int waiting = 0;
    for (int i = 0; i < 60 && !waiting; i++) { /* 10 s without a commit, and some */
        sleep(1);
        free(text);
        text = run_ok(text_status);
        waiting = strcmp(eta_field(job_line(text, low_id)), "waiting") == 0;
    }
    ck_assert_msg(waiting, "the starved job %s shows no 'waiting':\n%s", low_id, text);
    const char *eta = eta_field(job_line(text, high_id));
    char *end;
    double s = strtod(eta, &end);
    ck_assert_msg(end != eta && strcmp(end, " s") == 0 && s > 0 && s < 1000,
                  "the running job shows no ETA (%s):\n%s", eta, text);
    free(text);
    const char *cancel_low[] = {"cancel", low_id, "--center", vm.ep, NULL};
    const char *cancel_high[] = {"cancel", high_id, "--center", vm.ep, NULL};
    free(run_ok(cancel_high));
    free(run_ok(cancel_low));
    free(low_id);
    free(high_id);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  `spm status` in a terminal of 100 columns: every line fits, and the
    nodes are a table with a row per node (its name, cut with "~" when
    longer than 16 characters), its state, IEUs busy/idle, cache used,
    bytes in/out and when it was last heard. */
START_TEST(status_text_has_a_table_of_nodes_in_100_columns)
{
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    const char *long_name[] = {"--name", "a-rather-long-node-name-of-the-cluster", NULL};
    const char *short_name[] = {"--name", "edge", NULL};
    spm_test_vm_agent(&vm, "2", long_name);
    spm_test_vm_agent(&vm, "1", short_name);
    const char *run[] = {"run", "synthetic", "--center",  vm.ep, "--sis",
                         "60",  "--work",    "fixed:2ms", NULL};
    free(run_ok(run));
    sleep(1); /* a heartbeat of each after the job */
    const char *status[] = {"status", "--center", vm.ep, NULL};
    char *out = run_ok(status);
    printf("%s", out);
    int longest = 0;
    for (const char *l = out; *l;) {
        const char *e = strchr(l, '\n');
        int len = e ? (int)(e - l) : (int)strlen(l);
        longest = len > longest ? len : longest;
        l += len + (e != NULL);
    }
    ck_assert_msg(longest <= 100, "a line of %d columns:\n%s", longest, out);
    const char *head = strstr(out, "node name");
    ck_assert_msg(head && strstr(head, "state") && strstr(head, "busy/idle") &&
                      strstr(head, "cache used") && strstr(head, "bytes in/out") &&
                      strstr(head, "last heard"),
                  "no table of nodes:\n%s", out);
    ck_assert_msg(strstr(out, "a-rather-long-n~ up") && strstr(out, "edge             up"),
                  "no row of each node:\n%s", out);
    ck_assert_msg(strstr(out, "2/0") || strstr(out, "0/2"), "no IEUs of node 0:\n%s", out);
    ck_assert_msg(count(out, " s ago\n") == 2, "not both nodes heard:\n%s", out);
    free(out);
    spm_test_vm_stop(&vm);
}
END_TEST

static Suite *clients_suite(void)
{
    Suite *s = suite_create("clients");
    static const spm_test_case_t c = {.timeout_s = 180};
    SPM_TEST_ADD(s, &c, status_waits_for_a_center_started_later);
    SPM_TEST_ADD(s, &c, short_wait_for_a_missing_center_fails_in_one_line);
    SPM_TEST_ADD(s, &c, run_waits_for_its_center_and_runs_the_job);
    SPM_TEST_ADD(s, &c, watch_into_a_pipe_prints_plain_snapshots);
    SPM_TEST_ADD(s, &c, mine_jobs_are_listed_as_mine);
    SPM_TEST_ADD(s, &c, starved_job_shows_waiting_not_an_eta);
    SPM_TEST_ADD(s, &c, status_text_has_a_table_of_nodes_in_100_columns);
    return s;
}

SPM_TEST_MAIN(clients_suite)
