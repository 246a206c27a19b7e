/*  Integration tests of the dashboard of `spm center --http` as an
    operator uses it: in a real browser (Chromium headless, --dump-dom)
    during and after a job on a center with two agents on hosts of their
    own (network namespaces, tests/netns.h), every node by name in the
    table of nodes, the job's page with its opcodes, then the job in the
    history; a finished job's page after a kill -9 and a restart of the
    center; and what the agents report of their processes. Where Chromium,
    curl or namespaces are missing, a test says so and skips. */
#include "tests/check_main.h"
#include "tests/netns.h"
#include "tests/spm_test.h"
#include "tests/http_test.h"

#include <fcntl.h>

static char dir[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
}

static void teardown(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static const char *browser(void)
{
    return spm_test_have("chromium")           ? "chromium"
           : spm_test_have("chromium-browser") ? "chromium-browser"
                                               : NULL;
}

/*  The output of the shell command CMD (malloc'd), or NULL. */
static char *output(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    char *all = spm_test_slurp(fileno(p));
    pclose(p);
    return all;
}

/*  GET PATH on 127.0.0.1:PORT (in namespace NS, NULL: this one) with
    curl: the body, with the status code on a last line of its own. */
static char *get(const char *ns, int port, const char *path)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s%s curl -s -m 20 -w '\\n%%{http_code}' 'http://127.0.0.1:%d%s'",
             ns ? "ip netns exec " : "", ns ? ns : "", port, path);
    return output(cmd);
}

/*  The page at PATH as Chromium has it after running its script (in
    namespace NS, or this one), malloc'd. */
static char *dom(const char *ns, int port, const char *path)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s%s %s --headless --no-sandbox --disable-gpu --no-first-run "
             "--user-data-dir=%s/chr --virtual-time-budget=4000 --dump-dom "
             "'http://127.0.0.1:%d%s' 2>/dev/null",
             ns ? "ip netns exec " : "", ns ? ns : "", browser(), dir, port, path);
    char *d = output(cmd);
    ck_assert_ptr_nonnull(d);
    return d;
}

/*  The text of the element with id ID in DOM up to its next '<' (static
    buffer), or "". */
static const char *text_of(const char *dom, const char *id)
{
    static char buf[256];
    char want[96];
    snprintf(want, sizeof want, "id=\"%s\"", id);
    const char *p = strstr(dom, want);
    p = p ? strchr(p, '>') : NULL;
    size_t n = 0;
    for (p = p ? p + 1 : ""; *p && *p != '<' && n < sizeof buf - 1; p++)
        buf[n++] = *p;
    buf[n] = '\0';
    return buf;
}

/*  The row with id ID in DOM (static buffer, up to its </tr>), or "". */
static const char *row_of(const char *dom, const char *id)
{
    static char buf[4096];
    char want[96];
    snprintf(want, sizeof want, "id=\"%s\"", id);
    const char *p = strstr(dom, want), *e = p ? strstr(p, "</tr>") : NULL;
    size_t n = e ? (size_t)(e - p) : 0;
    n = n < sizeof buf - 1 ? n : sizeof buf - 1;
    memcpy(buf, p ? p : "", n);
    buf[n] = '\0';
    return buf;
}

/* ------------------------------------------- two agents, a real browser */

#define NHOSTS 3
#define CENTER "tcp://10.77.1.1:7700"

START_TEST(the_browser_finds_every_node_the_jobs_page_and_then_its_history)
{
    if (!browser() || !spm_test_have("curl")) {
        printf("skipped: chromium or curl is not installed (scripts/deps.sh installs them)\n");
        return;
    }
    spm_netns_t net;
    spm_netns_init(&net, "spmd", "10.77.1", NHOSTS);
    if (spm_netns_up(&net, 0) != 0) {
        printf("skipped: network namespaces are not allowed here (%s)\n", net.why);
        return;
    }
    char store[160], c2[160], c3[160], http[32];
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(c2, sizeof c2, "%s/cache2", dir);
    snprintf(c3, sizeof c3, "%s/cache3", dir);
    int port = 18700 + getpid() % 1000; /* in host 1's namespace: nobody else is there */
    snprintf(http, sizeof http, "127.0.0.1:%d", port);
    const char *center[] = {"center", "--listen", CENTER,        "--store", store, "--insecure",
                            "--http", http,       "--log-level", "error",   NULL};
    spm_test_proc_t cp = spm_test_start_in(spm_netns_host(&net, 1), center);
    usleep(300000);
    const char *a2[] = {
        "agent",       "--center", CENTER,   "--insecure", "--ieus",        "2",
        "--cache-dir", c2,         "--name", "left-node",  "--data-listen", "tcp://10.77.1.2:7701",
        "--log-level", "error",    NULL};
    const char *a3[] = {
        "agent",       "--center", CENTER,   "--insecure", "--ieus",        "2",
        "--cache-dir", c3,         "--name", "right-node", "--data-listen", "tcp://10.77.1.3:7701",
        "--log-level", "error",    NULL};
    spm_test_proc_t ap2 = spm_test_start_in(spm_netns_host(&net, 2), a2);
    spm_test_proc_t ap3 = spm_test_start_in(spm_netns_host(&net, 3), a3);
    /* Both joined, with their heartbeats' figures (generous: a shared machine). */
    char *st = NULL;
    for (int i = 0; i < 300; i++) {
        free(st);
        st = get(spm_netns_host(&net, 1), port, "/api/status");
        if (st && strstr(st, "right-node") && strstr(st, "left-node") &&
            !strstr(st, "\"processes\": 0"))
            break;
        usleep(100000);
    }
    ck_assert_msg(st && strstr(st, "right-node") && strstr(st, "left-node"), "%s", st);
    free(st);
    const char *submit[] = {"submit", "synthetic", "--center", CENTER,      "--insecure",
                            "--sis",  "6000",      "--work",   "fixed:4ms", NULL};
    char *out, *err;
    spm_test_proc_t sp = spm_test_start_in(spm_netns_host(&net, 1), submit);
    ck_assert_msg(spm_test_finish(&sp, 30, &out, &err) == 0, "%s", err);
    long job = atol(out);
    ck_assert_int_gt(job, 0);
    free(out);
    free(err);
    sleep(2); /* its record has progress and opcodes (brought up to date once a second) */

    char *d = dom(spm_netns_host(&net, 1), port, "/");
    char *r0 = strdup(row_of(d, "node-0")), *r1 = strdup(row_of(d, "node-1"));
    ck_assert_msg(strstr(r0, "-node") && strstr(r1, "-node"), "no row of each node:\n%.2000s", d);
    ck_assert_msg((strstr(r0, "left-node") && strstr(r1, "right-node")) ||
                      (strstr(r0, "right-node") && strstr(r1, "left-node")),
                  "not every node's name in the table:\n%.2000s", d);
    ck_assert_msg(strstr(r0, "processes") && strstr(r1, "processes"), "no CPU: %s", r0);
    free(r0);
    free(r1);
    char id[64];
    snprintf(id, sizeof id, "job-%ld", job);
    ck_assert_msg(strstr(row_of(d, id), "running"), "no row of running job %ld:\n%.2000s", job, d);
    free(d);

    char path[64], title[96];
    snprintf(path, sizeof path, "/#job/%ld", job);
    snprintf(title, sizeof title, "job %ld (synthetic)", job);
    d = dom(spm_netns_host(&net, 1), port, path);
    ck_assert_msg(strcmp(text_of(d, "job-title"), title) == 0, "no page of job %ld:\n%.2000s", job,
                  d);
    ck_assert_str_eq(text_of(d, "job-state"), "running");
    ck_assert_msg(strstr(d, "<tr class=\"opcode\"><td class=\"l\">syn.work</td>"),
                  "no opcode on the job's page:\n%.2000s", d);
    ck_assert_msg(strstr(d, "id=\"job-chart\"") && strstr(d, "<polyline"), "no chart:\n%.2000s", d);
    ck_assert_msg(strstr(d, "download the Chrome trace"), "no trace of the running job:\n%.2000s",
                  d);
    free(d);

    snprintf(id, sizeof id, "%ld", job);
    const char *wait[] = {"wait", id, "--center", CENTER, "--insecure", NULL};
    sp = spm_test_start_in(spm_netns_host(&net, 1), wait);
    ck_assert_msg(spm_test_finish(&sp, 120, &out, &err) == 0, "%s", err);
    free(out);
    free(err);
    d = dom(spm_netns_host(&net, 1), port, "/#history");
    snprintf(id, sizeof id, "history-%ld", job);
    ck_assert_msg(strstr(row_of(d, id), "done") && strstr(row_of(d, id), "6000 / 6000"),
                  "job %ld not done in the history:\n%.2000s", job, d);
    free(d);
    d = dom(spm_netns_host(&net, 1), port, path);
    ck_assert_str_eq(text_of(d, "job-state"), "done");
    ck_assert_msg(strstr(d, "6000 committed"), "no report on the page:\n%.2000s", d);
    ck_assert_msg(strstr(d, "download the Chrome trace"), "no trace to download:\n%.2000s", d);
    ck_assert_msg(strstr(d, "syn.work"), "no opcode after the end:\n%.2000s", d);
    free(d);
    char tpath[64];
    snprintf(tpath, sizeof tpath, "/api/job/%ld/trace", job);
    char *trace = get(spm_netns_host(&net, 1), port, tpath);
    ck_assert_msg(trace && strstr(trace, "\"traceEvents\"") && strstr(trace, "syn.work"), "%.300s",
                  trace);
    free(trace);
    kill(cp.pid, SIGTERM);
    spm_test_finish(&cp, 30, NULL, NULL);
    spm_test_finish(&ap2, 30, NULL, NULL);
    spm_test_finish(&ap3, 30, NULL, NULL);
    spm_netns_down(&net);
}
END_TEST

/* ------------------------------------------------ across a kill -9 restart */

/*  Starts a center on STORE serving HTTP on PORT; returns it once it answers. */
static spm_test_proc_t center_on(const char *ep, const char *store, int port)
{
    char http[32];
    snprintf(http, sizeof http, "127.0.0.1:%d", port);
    const char *argv[] = {"center", "--listen",    ep,      "--store", store, "--http",
                          http,     "--log-level", "error", NULL};
    spm_test_proc_t p = spm_test_start(argv);
    for (int i = 0; i < 200; i++) {
        char *s = get(NULL, port, "/api/status");
        int up = s && strstr(s, "uptime_s");
        free(s);
        if (up)
            break;
        usleep(100000);
    }
    return p;
}

/*  A center on this host serving HTTP and one agent of IEUS IEUs named
    NAME (NULL: its host's name), on ipc:// endpoints in the scratch
    directory. */
typedef struct {
    char ep[160], store[160];
    int port;
    spm_test_proc_t center, agent;
} local_t;

static void local_up(local_t *v, const char *ieus, const char *name)
{
    char cache[160];
    snprintf(v->ep, sizeof v->ep, "ipc://%s/center", dir);
    snprintf(v->store, sizeof v->store, "%s/store", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    v->port = spm_test_free_port();
    v->center = center_on(v->ep, v->store, v->port);
    const char *agent[] = {"agent", "--center",    v->ep,   "--ieus", ieus, "--cache-dir",
                           cache,   "--log-level", "error", "--name", name, NULL};
    if (!name)
        agent[9] = NULL;
    v->agent = spm_test_start(agent);
}

static void local_down(local_t *v)
{
    kill(v->center.pid, SIGTERM);
    spm_test_finish(&v->center, 30, NULL, NULL);
    spm_test_finish(&v->agent, 30, NULL, NULL);
}

START_TEST(a_finished_jobs_page_answers_after_a_kill_9_and_a_restart)
{
    if (!spm_test_have("curl")) {
        printf("skipped: curl is not installed\n");
        return;
    }
    local_t v;
    local_up(&v, "2", NULL);
    const char *ep = v.ep;
    int port = v.port;
    const char *run[] = {"run", "synthetic", "--center",  ep,       "--sis",
                         "400", "--work",    "fixed:2ms", "--json", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(run, 60, &out, &err) == 0, "%s", err);
    long job = (long)spm_test_json_num(out, "job");
    free(out);
    free(err);
    char path[64];
    snprintf(path, sizeof path, "/api/job/%ld", job);
    char *before = get(NULL, port, path);
    ck_assert_msg(before && strstr(before, "\"state\": \"done\"") && strstr(before, "\n200"), "%s",
                  before);
    ck_assert_msg(strstr(before, "\"trace\": \"kept\""), "%s", before);
    free(before);

    kill(v.center.pid, SIGKILL);
    spm_test_finish(&v.center, 10, NULL, NULL);
    v.center = center_on(ep, v.store, port);
    char *after = get(NULL, port, path);
    ck_assert_msg(after && strstr(after, "\n200"), "no page after the restart: %s", after);
    ck_assert_msg(strstr(after, "\"state\": \"done\"") && strstr(after, "\"committed\": 400"), "%s",
                  after);
    ck_assert_msg(strstr(after, "\"name\": \"syn.work\", \"sis\": 400"), "no opcodes: %s", after);
    ck_assert_msg(strstr(after, "\"progress\": [[") && strstr(after, "\"report_text\": \"job"),
                  "no progress or report: %s", after);
    /* What is not kept across a restart says so. */
    ck_assert_msg(strstr(after, "\"trace\": \"gone\""), "%s", after);
    free(after);
    char *list = get(NULL, port, "/api/jobs");
    char want[64];
    snprintf(want, sizeof want, "{\"job\": %ld, \"program\": \"synthetic\", \"state\": \"done\"",
             job);
    ck_assert_msg(list && strstr(list, want), "%s", list);
    free(list);
    char *none = get(NULL, port, "/api/job/999999");
    ck_assert_msg(none && strstr(none, "no record") && strstr(none, "\n404"), "%s", none);
    free(none);
    local_down(&v);
}
END_TEST

/* ------------------------------------------------- a running job's trace */

/*  GETs PATH on loopback PORT into FILE with curl; prints and returns the
    HTTP code, with the bytes and the seconds it took. */
static int fetch_to(int port, const char *path, const char *file)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "curl -s -m 20 -o %s -w '%%{http_code} %%{size_download} %%{time_total}' "
             "'http://127.0.0.1:%d%s'",
             file, port, path);
    char *o = output(cmd);
    int code = o ? atoi(o) : 0;
    printf("GET %s: HTTP code, bytes, seconds: %s\n", path, o ? o : "?");
    free(o);
    return code;
}

/*  Asserts that FILE is JSON (python3's parser, where it is installed)
    with a traceEvents array holding a slice of syn.work, and that its
    text has WANT (NULL: anything) and not AVOID (NULL: anything). */
static void assert_trace(const char *file, const char *want, const char *avoid)
{
    int fd = open(file, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    char *t = spm_test_slurp(fd);
    close(fd);
    ck_assert_msg(t && strstr(t, "\"traceEvents\": [") && strstr(t, "\"name\": \"syn.work\""),
                  "not a trace of the job: %.300s", t);
    ck_assert_msg(!want || strstr(t, want), "no '%s' in %.400s", want, t);
    ck_assert_msg(!avoid || !strstr(t, avoid), "'%s' in %.400s", avoid, t);
    free(t);
    if (spm_test_have("python3")) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                 "assert isinstance(d[\"traceEvents\"], list)' %s",
                 file);
        ck_assert_msg(system(cmd) == 0, "%s is not JSON with traceEvents", file);
    }
}

/*  The committed SIs of JOB on the center's HTTP PORT, from its page. */
static double committed(int port, long job)
{
    char path[64];
    snprintf(path, sizeof path, "/api/job/%ld", job);
    char *page = get(NULL, port, path);
    double n = page && strstr(page, "\"committed\"") ? spm_test_json_num(page, "committed") : 0;
    free(page);
    return n;
}

/*  Submits SIS synthetic SIs of 10 ms to V and returns the job's id once
    it committed N of them (10 s at most). */
static long submit_running(local_t *v, const char *sis, double n)
{
    const char *submit[] = {"submit", "synthetic", "--center",   v->ep, "--sis",
                            sis,      "--work",    "fixed:10ms", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(submit, 30, &out, &err) == 0, "%s", err);
    long job = atol(out);
    ck_assert_int_gt(job, 0);
    free(out);
    free(err);
    for (int i = 0; i < 100 && committed(v->port, job) < n; i++)
        usleep(100000);
    return job;
}

START_TEST(a_running_jobs_trace_downloads_while_it_runs_and_after_a_restart)
{
    if (!spm_test_have("curl")) {
        printf("skipped: curl is not installed\n");
        return;
    }
    local_t v;
    local_up(&v, "2", NULL);
    long job = submit_running(&v, "1000", 20); /* about 5 s on two IEUs */
    char tpath[64], file[192];
    snprintf(tpath, sizeof tpath, "/api/job/%ld/trace", job);
    snprintf(file, sizeof file, "%s/trace.json", dir);
    for (int i = 0; i < 3; i++) { /* a copy is made at most once a second; each is served */
        ck_assert_int_eq(fetch_to(v.port, tpath, file), 200);
        assert_trace(file, "\"note\": \"a copy made while the job ran", NULL);
    }
    char path[64];
    snprintf(path, sizeof path, "/api/job/%ld", job);
    char *page = get(NULL, v.port, path);
    ck_assert_msg(page && strstr(page, "\"state\": \"running\"") &&
                      strstr(page, "\"trace\": \"running\""),
                  "%s", page);
    free(page);

    /* Killed mid-job and restarted: the job goes on, traced from the restart. */
    kill(v.center.pid, SIGKILL);
    spm_test_finish(&v.center, 10, NULL, NULL);
    v.center = center_on(v.ep, v.store, v.port);
    double at_restart = committed(v.port, job);
    for (int i = 0; i < 150 && committed(v.port, job) < at_restart + 20; i++)
        usleep(100000);
    ck_assert_int_eq(fetch_to(v.port, tpath, file), 200);
    assert_trace(file, "traced from the center's restart", NULL);

    char id[32];
    snprintf(id, sizeof id, "%ld", job);
    const char *wait[] = {"wait", id, "--center", v.ep, NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(wait, 120, &out, &err) == 0, "%s", err);
    free(out);
    free(err);
    ck_assert_int_eq(fetch_to(v.port, tpath, file), 200); /* the whole trace, kept */
    assert_trace(file, "traced from the center's restart", "a copy made while the job ran");
    page = get(NULL, v.port, path);
    ck_assert_msg(page && strstr(page, "\"trace\": \"kept\""), "%s", page);
    free(page);
    local_down(&v);
}
END_TEST

/*  Unix time in ms. */
static double unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

START_TEST(a_running_jobs_page_tells_when_it_started_and_how_long_it_has_run)
{
    if (!spm_test_have("curl")) {
        printf("skipped: curl is not installed\n");
        return;
    }
    local_t v;
    local_up(&v, "2", NULL);
    long job = submit_running(&v, "800", 10);
    char path[64];
    snprintf(path, sizeof path, "/api/job/%ld", job);
    /* Over more than a second (the records' period), every answer's
       running time is the time since the submit, as the clock says it. */
    double worst = 0;
    for (int i = 0; i < 12; i++) {
        double before = unix_ms();
        char *page = get(NULL, v.port, path);
        double after = unix_ms();
        ck_assert_msg(page && strstr(page, "\"state\": \"running\""), "%s", page);
        double submit_ms = spm_test_json_num(page, "submit_ms");
        double start_ms = spm_test_json_num(page, "start_ms");
        double run_ms = 1e3 * spm_test_json_num(page, "run_s");
        ck_assert_msg(start_ms >= submit_ms && start_ms - submit_ms < 400,
                      "started %.0f ms after its submit, its first SI went out at once: %.300s",
                      start_ms - submit_ms, page);
        double lag = run_ms < before - submit_ms  ? before - submit_ms - run_ms
                     : run_ms > after - submit_ms ? run_ms - (after - submit_ms)
                                                  : 0;
        worst = lag > worst ? lag : worst;
        free(page);
        usleep(100000);
    }
    printf("running time on the page: at most %.0f ms off the clock\n", worst);
    ck_assert_msg(worst < 250, "the running time was %.0f ms off", worst);
    local_down(&v);
}
END_TEST

/* ------------------------------------------ what agents say of themselves */

START_TEST(nodes_report_the_cpu_and_memory_of_their_spm_processes)
{
    if (!spm_test_have("curl")) {
        printf("skipped: curl is not installed\n");
        return;
    }
    local_t v;
    local_up(&v, "3", "busy-node");
    const char *ep = v.ep;
    int port = v.port;
    const char *run[] = {"run", "synthetic", "--center",  ep,  "--sis",
                         "300", "--work",    "fixed:3ms", NULL};
    ck_assert_int_eq(spm_test_run(run, 60, NULL, NULL), 0);
    sleep(2); /* two heartbeats after the job */
    char *s = get(NULL, port, "/api/status");
    ck_assert_ptr_nonnull(s);
    const char *n = strstr(s, "\"name\": \"busy-node\"");
    ck_assert_msg(n, "%s", s);
    /* The agent and its three IEUs; the IEUs spun 0.9 s between them. */
    ck_assert_msg(spm_test_json_num(n, "processes") == 4, "%s", n);
    ck_assert_msg(spm_test_json_num(n, "cpu_s") >= 0.5, "%s", n);
    ck_assert_msg(spm_test_json_num(n, "rss_bytes") > 4 << 20, "%s", n);
    ck_assert_msg(spm_test_json_num(n, "heard_s_ago") >= 0 &&
                      spm_test_json_num(n, "heard_s_ago") < 10,
                  "%s", n);
    ck_assert_msg(spm_test_json_num(n, "ieus_idle") == 3, "%s", n);
    free(s);
    local_down(&v);
}
END_TEST

static Suite *dashboard_suite(void)
{
    Suite *s = suite_create("dashboard");
    const spm_test_case_t c = {.timeout_s = 240, .setup = setup, .teardown = teardown};
    SPM_TEST_ADD(s, &c, the_browser_finds_every_node_the_jobs_page_and_then_its_history);
    SPM_TEST_ADD(s, &c, a_finished_jobs_page_answers_after_a_kill_9_and_a_restart);
    SPM_TEST_ADD(s, &c, a_running_jobs_trace_downloads_while_it_runs_and_after_a_restart);
    SPM_TEST_ADD(s, &c, a_running_jobs_page_tells_when_it_started_and_how_long_it_has_run);
    SPM_TEST_ADD(s, &c, nodes_report_the_cpu_and_memory_of_their_spm_processes);
    return s;
}

SPM_TEST_MAIN(dashboard_suite)
