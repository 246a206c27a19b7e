/*  Integration tests of the center showing itself: `spm center --http`
    (the dashboard in a real browser, /api/status, /metrics checked by
    promtool and against a job's report, 404, the token, bad addresses,
    slow clients that must not stall the center), an agent's own /metrics
    (`spm agent --http`), the labels, the histogram of SI durations and
    the ended jobs' counters across a restart, and clients, agents and
    IEUs told within a second that their key was refused. */
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "tests/spm_test.h"
#include "tests/http_test.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

static double now_s(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec / 1e6;
}

/*  A connection to the loopback PORT from the loopback address FROM
    (127.0.0.FROM: the whole of 127/8 is this host), or -1. */
static int connect_from(int port, int from)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in src = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + (uint32_t)from)};
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0 ||
        connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/*  METHOD PATH on the port with the extra header lines HEADERS; returns
    the status code and sets *BODY (malloc'd; may be NULL). */
static int http_from(int from, int port, const char *method, const char *path, const char *headers,
                     char **body)
{
    int fd = connect_from(port, from);
    if (fd < 0)
        return -1;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char req[512];
    snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: localhost\r\n%s\r\n", method, path,
             headers ? headers : "");
    ck_assert(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    char *all = spm_test_slurp(fd);
    close(fd);
    int code = -1;
    if (all)
        sscanf(all, "HTTP/1.%*d %d", &code);
    char *start = all ? strstr(all, "\r\n\r\n") : NULL;
    if (body)
        *body = strdup(start ? start + 4 : "");
    free(all);
    return code;
}

/*  As http_from, from 127.0.0.1. */
static int http(int port, const char *method, const char *path, const char *headers, char **body)
{
    return http_from(1, port, method, path, headers, body);
}

/*  The number after NAME and a space at the start of a line of TEXT. */
static double metric(const char *text, const char *name)
{
    char pat[160];
    snprintf(pat, sizeof pat, "\n%s ", name);
    const char *p = strstr(text, pat);
    return p ? strtod(p + strlen(pat), NULL) : -1;
}

/*  A VM whose center serves HTTP on *PORT, with one agent of 2 IEUs. */
static void start_vm(spm_test_vm_t *vm, int *port)
{
    static char addr[64];
    *port = spm_test_free_port();
    snprintf(addr, sizeof addr, "127.0.0.1:%d", *port);
    const char *extra[] = {"--http", addr, NULL};
    spm_test_vm_start(vm, extra);
    spm_test_vm_agent(vm, "2", NULL);
    usleep(300000);
}

/*  Checks the shape of the Prometheus text TEXT as a scraper relies on it,
    promtool or not: every sample belongs to a family with a TYPE line
    (a histogram's _bucket, _sum and _count to theirs), every counter ends
    in _total, every family named before its samples. WHO names the text
    in messages. */
static void check_shape(const char *text, const char *who)
{
    char types[200][96], kinds[200][16];
    int n = 0, samples = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        line = end ? end + 1 : NULL;
        if (strncmp(buf, "# TYPE ", 7) == 0) {
            ck_assert_int_lt(n, 200);
            ck_assert_int_eq(sscanf(buf + 7, "%95s %15s", types[n], kinds[n]), 2);
            if (strcmp(kinds[n], "counter") == 0) {
                size_t l = strlen(types[n]);
                ck_assert_msg(l > 6 && strcmp(types[n] + l - 6, "_total") == 0,
                              "%s: counter %s does not end in _total", who, types[n]);
            }
            n++;
            continue;
        }
        if (!*buf || buf[0] == '#')
            continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(buf, "{ "), buf);
        int found = 0;
        for (int i = 0; i < n && !found; i++) {
            size_t l = strlen(types[i]);
            found = strcmp(name, types[i]) == 0 ||
                    (strcmp(kinds[i], "histogram") == 0 && strncmp(name, types[i], l) == 0 &&
                     (strcmp(name + l, "_bucket") == 0 || strcmp(name + l, "_sum") == 0 ||
                      strcmp(name + l, "_count") == 0));
        }
        ck_assert_msg(found, "%s: sample %s has no TYPE line before it", who, name);
        samples++;
    }
    ck_assert_msg(samples > 10, "%s: %d samples", who, samples);
}

/*  promtool check metrics on TEXT, where promtool is installed. */
static void promtool_check(const char *text, const char *who)
{
    if (!spm_test_have("promtool")) {
        fprintf(stderr,
                "skipped promtool on %s: it is not installed (Debian's prometheus "
                "package)\n",
                who);
        return;
    }
    char path[128], cmd[400];
    snprintf(path, sizeof path, "%s/%s.txt", base, who);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s > %s.out 2>&1", path, path);
    int rc = system(cmd);
    snprintf(cmd, sizeof cmd, "%s.out", path);
    int fd = open(cmd, O_RDONLY);
    char *lint = spm_test_slurp(fd);
    close(fd);
    ck_assert_msg(rc == 0, "promtool check metrics on %s: %.300s", who, lint);
    free(lint);
}

START_TEST(metrics_pass_promtool_and_match_the_run_report)
{
    spm_test_vm_t vm;
    int port;
    start_vm(&vm, &port);
    const char *job[] = {"run", "synthetic", "--center",  vm.ep,    "--sis",
                         "300", "--work",    "fixed:1ms", "--json", NULL};
    char *out, *err, *body;
    ck_assert_msg(spm_test_run(job, 60, &out, &err) == 0, "%s", err);
    double committed = spm_test_json_num(out, "committed");
    double reissued = spm_test_json_num(out, "reissued");
    ck_assert_double_eq(committed, 300);
    free(out);
    free(err);
    /* the snapshot is at most a tick old */
    double seen = -1;
    for (int i = 0; i < 50 && seen != committed; i++) {
        usleep(100000);
        ck_assert_int_eq(http(port, "GET", "/metrics", NULL, &body), 200);
        seen = metric(body, "spm_sis_committed_total");
        if (seen != committed)
            free(body);
    }
    ck_assert_msg(seen == committed, "spm_sis_committed_total %g, the report %g", seen, committed);
    ck_assert_double_eq(metric(body, "spm_sis_reissued_total"), reissued);
    ck_assert_double_eq(metric(body, "spm_jobs_ended_total{state=\"done\"}"), 1);
    ck_assert_double_eq(metric(body, "spm_jobs_running"), 0);
    ck_assert_double_eq(metric(body, "spm_ieus{state=\"idle\"}"), 2);
    ck_assert(metric(body, "spm_center_cpu_seconds_total") > 0);
    ck_assert(metric(body, "spm_store_bytes") >= 0);
    ck_assert(metric(body, "spm_refused_connections_total") == 0);
    promtool_check(body, "center");
    free(body);
    /* /api/status is what spm status --json prints */
    ck_assert_int_eq(http(port, "GET", "/api/status", NULL, &body), 200);
    const char *status[] = {"status", "--center", vm.ep, "--json", NULL};
    ck_assert_int_eq(spm_test_run(status, 20, &out, &err), 0);
    ck_assert_double_eq(spm_test_json_num(body, "nodes"), spm_test_json_num(out, "nodes"));
    ck_assert_ptr_nonnull(strstr(body, "\"state\": \"idle\""));
    free(out);
    free(err);
    free(body);
    ck_assert_int_eq(http(port, "GET", "/nope", NULL, NULL), 404);
    ck_assert_int_eq(http(port, "GET", "/metrics/x", NULL, NULL), 404);
    ck_assert_int_eq(http(port, "DELETE", "/metrics", NULL, NULL), 405);
    ck_assert_int_eq(http(port, "GET", "/api/history", NULL, &body), 200);
    ck_assert_double_eq(spm_test_json_num(body, "committed"), committed);
    free(body);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(dashboard_shows_the_running_job_in_a_browser)
{
    const char *browser = spm_test_have("chromium")           ? "chromium"
                          : spm_test_have("chromium-browser") ? "chromium-browser"
                                                              : NULL;
    if (!browser) {
        fprintf(stderr, "skipped: chromium is not installed (.ci/run installs it)\n");
        return;
    }
    spm_test_vm_t vm;
    int port;
    start_vm(&vm, &port);
    const char *submit[] = {"submit", "synthetic", "--center",  vm.ep, "--sis",
                            "4000",   "--work",    "fixed:5ms", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(submit, 20, &out, &err) == 0, "%s", err);
    long job = atol(out);
    free(out);
    free(err);
    usleep(500000);
    char cmd[512], path[128];
    snprintf(path, sizeof path, "%s/dom.html", base);
    snprintf(cmd, sizeof cmd,
             "%s --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=%s/chr "
             "--virtual-time-budget=3000 --dump-dom http://127.0.0.1:%d/ > %s 2>/dev/null",
             browser, base, port, path);
    ck_assert_int_eq(system(cmd), 0);
    int fd = open(path, O_RDONLY);
    char *dom = spm_test_slurp(fd);
    close(fd);
    char want[64];
    snprintf(want, sizeof want, "id=\"job-%ld\"", job);
    ck_assert_msg(strstr(dom, want) != NULL, "no row of job %ld:\n%s", job, dom);
    ck_assert_msg(strstr(dom, "synthetic") != NULL, "%s", dom);
    const char *ieus = strstr(dom, "id=\"ieu-count\">");
    ck_assert_msg(ieus && atoi(ieus + 15) == 2, "IEU count not 2:\n%s", dom);
    free(dom);
    snprintf(want, sizeof want, "%ld", job);
    const char *cancel[] = {"cancel", want, "--center", vm.ep, NULL};
    ck_assert_int_eq(spm_test_run(cancel, 20, NULL, NULL), 0);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  The center's one line and exit code for --http ADDR. */
static void refused_at_start(const char *addr, const char *want)
{
    char store[128], ep[160];
    snprintf(store, sizeof store, "%s/store-refused", base);
    snprintf(ep, sizeof ep, "ipc://%s/center-refused", base);
    const char *argv[] = {"center", "--listen", ep, "--store", store, "--http", addr, NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(argv, 20, &out, &err), 1);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, want), "--http %s: %s", addr, err);
    free(out);
    free(err);
}

START_TEST(bad_http_addresses_are_refused_at_start)
{
    int port = spm_test_free_port();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    refused_at_start(addr, "address already in use");
    snprintf(addr, sizeof addr, "%d", port); /* a bare port is 127.0.0.1's */
    refused_at_start(addr, "address already in use");
    close(fd);
    refused_at_start("127.0.0.1:99999", "expected ADDR:PORT");
    refused_at_start("localhost:http", "expected ADDR:PORT");
    refused_at_start("300.1.1.1:8080", "--http 300.1.1.1:8080");
}
END_TEST

START_TEST(a_token_restricts_the_port)
{
    setenv("SPM_CENTER_HTTP_TOKEN", "s3cret", 1);
    spm_test_vm_t vm;
    int port;
    start_vm(&vm, &port);
    unsetenv("SPM_CENTER_HTTP_TOKEN");
    ck_assert_int_eq(http(port, "GET", "/metrics", NULL, NULL), 401);
    ck_assert_int_eq(http(port, "GET", "/", NULL, NULL), 401);
    ck_assert_int_eq(http(port, "GET", "/metrics", "Authorization: Bearer wrong\r\n", NULL), 401);
    ck_assert_int_eq(http(port, "GET", "/metrics", "Authorization: Bearer s3cret\r\n", NULL), 200);
    ck_assert_int_eq(http(port, "GET", "/?token=s3cret", NULL, NULL), 200);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  Wall time of a 400-SI job of 5 ms on 2 IEUs, from its report. */
static double job_wall(const char *ep)
{
    const char *job[] = {"run", "synthetic", "--center",  ep,       "--sis",
                         "400", "--work",    "fixed:5ms", "--json", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(job, 60, &out, &err) == 0, "%s", err);
    double wall = spm_test_json_num(out, "wall_s");
    ck_assert_msg(wall > 0, "%s", out);
    free(out);
    free(err);
    return wall;
}

START_TEST(slow_http_clients_do_not_stall_the_center)
{
    spm_test_vm_t vm;
    int port;
    start_vm(&vm, &port);
    double alone = job_wall(vm.ep);
    /* 200 connections: half say nothing, half send half a request */
    int fds[200], open_fds = 0;
    for (int i = 0; i < 200; i++) {
        fds[i] = connect_to(port);
        if (fds[i] < 0)
            continue;
        open_fds++;
        if (i % 2)
            ck_assert(write(fds[i], "GET /metrics HTTP/1.1\r\nHo", 25) == 25);
    }
    ck_assert_int_ge(open_fds, 190);
    double held = job_wall(vm.ep);
    /* the port still answers beside them, another address's requests */
    ck_assert_int_eq(http_from(2, port, "GET", "/api/status", NULL, NULL), 200);
    for (int i = 0; i < 200; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    fprintf(stderr, "job wall time %.3f s alone, %.3f s with %d HTTP connections held open\n",
            alone, held, open_fds);
    ck_assert_msg(held < alone * 1.5 + 0.3, "%.3f s against %.3f s", held, alone);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  Case 12 of issue 39: 300 connections that connect and say nothing (from
    one address, as one hostile host would) do not keep the token holder,
    at another address, from /metrics: an answer within a few seconds,
    again and again. */
START_TEST(half_open_connections_do_not_lock_out_the_token_holder)
{
    setenv("SPM_CENTER_HTTP_TOKEN", "s3cret", 1);
    spm_test_vm_t vm;
    int port;
    start_vm(&vm, &port);
    int fds[300], held = 0;
    for (int i = 0; i < 300; i++)
        held += (fds[i] = connect_from(port, 1)) >= 0;
    ck_assert_int_ge(held, 250);
    for (int probe = 0; probe < 5; probe++) {
        double t0 = now_s();
        char *body = NULL;
        int code = http_from(2, port, "GET", "/metrics", "Authorization: Bearer s3cret\r\n", &body);
        double took = now_s() - t0;
        ck_assert_msg(code == 200, "probe %d: /metrics answered %d after %.2f s", probe, code,
                      took);
        ck_assert_msg(took < 3.0, "probe %d: /metrics took %.2f s", probe, took);
        ck_assert_ptr_nonnull(strstr(body, "spm_sis_committed_total"));
        free(body);
        /* and without the token, nothing */
        ck_assert_int_eq(http_from(2, port, "GET", "/metrics", NULL, NULL), 401);
        usleep(500000);
    }
    for (int i = 0; i < 300; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    spm_test_vm_stop(&vm);
}
END_TEST

/* ----------------------------------------------------- refused clients */

static void keygen(const char *keys, const char *name, int authorize)
{
    const char *argv[] = {
        "keygen", "--keys", keys, "--name", name, authorize ? "--authorize" : NULL, NULL};
    ck_assert_int_eq(spm_test_run(argv, 10, NULL, NULL), 0);
}

/*  Runs ARGV; it must fail within a second in one line holding WANT and
    WANT2. */
static void told_at_once(const char *const *argv, const char *want, const char *want2)
{
    char *out, *err;
    double t0 = now_s();
    int rc = spm_test_run(argv, 30, &out, &err);
    double took = now_s() - t0;
    ck_assert_msg(rc != 0, "%s %s succeeded", argv[0], argv[1]);
    /* one line; --insecure's warning may come before it */
    size_t warned = strstr(err, "plain TCP (--insecure)") != NULL;
    ck_assert_msg(spm_test_lines(err) == 1 + warned, "not one line: %s", err);
    ck_assert_msg(strstr(err, want) && strstr(err, want2), "%s", err);
    ck_assert_msg(took < 1.0, "%s told after %.2f s: %s", argv[0], took, err);
    fprintf(stderr, "%s: %.2f s: %s", argv[0], took, err);
    free(out);
    free(err);
}

START_TEST(refused_keys_are_told_within_a_second)
{
    char keys[128], bad[128], other[128], ep[64], store[128], path[256], cmd[1200];
    snprintf(keys, sizeof keys, "%s/keys", base);
    snprintf(bad, sizeof bad, "%s/intruder", base);
    snprintf(other, sizeof other, "%s/otherpub", base);
    keygen(keys, "center", 0);
    keygen(keys, "client", 1);
    keygen(keys, "agent", 1);
    keygen(bad, "client", 0);
    keygen(bad, "agent", 0);
    keygen(other, "center", 0); /* a center.pub of another center */
    snprintf(cmd, sizeof cmd,
             "cp %s/center.pub %s/ && cp %s/client.key %s/client.pub %s/ && "
             "cp %s/agent.key %s/agent.pub %s/",
             keys, bad, keys, keys, other, keys, keys, other);
    ck_assert_int_eq(system(cmd), 0);
    int p = spm_test_free_port();
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", p);
    snprintf(store, sizeof store, "%s/store", base);
    const char *center[] = {"center", "--listen",    ep,      "--store", store, "--keys",
                            keys,     "--log-level", "error", NULL};
    spm_test_proc_t pc = spm_test_start(center);
    usleep(300000);
    /* a key the center never authorized */
    const char *intruder[] = {"status", "--center", ep, "--keys", bad, NULL};
    snprintf(path, sizeof path, "%s/client.key", bad);
    told_at_once(intruder, path, "authorized/");
    /* a client without keys */
    const char *keyless[] = {"status", "--center", ep, "--insecure", NULL};
    told_at_once(keyless, "without (--insecure)", "spm keygen");
    /* the right keys, but center.pub of another center */
    const char *wrong_pub[] = {"status", "--center", ep, "--keys", other, NULL};
    snprintf(path, sizeof path, "%s/center.pub", other);
    told_at_once(wrong_pub, path, "not that center's key");
    /* an agent and an IEU with a refused key */
    char cache[160];
    snprintf(cache, sizeof cache, "%s/cache", base);
    const char *agent[] = {"agent", "--center",    ep,    "--keys", bad, "--ieus",
                           "1",     "--cache-dir", cache, NULL};
    snprintf(path, sizeof path, "%s/agent.key", bad);
    told_at_once(agent, path, "authorized/");
    const char *ieu[] = {"ieu", "--center", ep, "--keys", bad, "--cache-dir", cache, NULL};
    told_at_once(ieu, path, "authorized/");
    /* the allowed client is let in */
    const char *ok[] = {"status", "--center", ep, "--keys", keys, "--json", NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(ok, 20, &out, &err), 0);
    ck_assert(spm_test_json_num(out, "refused") >= 3);
    free(out);
    free(err);
    kill(pc.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&pc, 15, NULL, NULL), 0);
}
END_TEST

/*  GET /metrics on PORT until the value of SERIES (a sample's name and
    labels) is WANT (or, WANT < 0, is there at all), for up to 15 s;
    returns the last text (malloc'd). */
static char *metrics_when(int port, const char *series, double want)
{
    char *body = NULL;
    for (int i = 0; i < 150; i++) {
        free(body);
        body = NULL;
        if (http(port, "GET", "/metrics", NULL, &body) == 200) {
            double v = metric(body, series);
            if (want < 0 ? v >= 0 : v == want)
                return body;
        }
        usleep(100000);
    }
    if (body)
        fputs(body, stderr);
    ck_abort_msg("%s never %g on port %d (the last text is on stderr)", series, want, port);
    return body;
}

START_TEST(center_and_agent_metrics_have_labels_and_pass_promtool_during_a_job)
{
    spm_test_vm_t vm;
    int port, agent_port = spm_test_free_port();
    start_vm(&vm, &port);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", agent_port);
    const char *named[] = {"--name", "alpha \"one\"", "--http", addr, "--cache-mb", "64", NULL};
    spm_test_vm_agent(&vm, "2", named);
    /* both IEUs of the named node in service before the job, so that it
       runs some of its SIs however slowly the machine starts processes */
    free(metrics_when(port, "spm_node_ieus{node=\"alpha \\\"one\\\"\",state=\"idle\"}", 2));
    const char *submit[] = {"submit", "synthetic", "--center",  vm.ep, "--sis",
                            "600",    "--work",    "fixed:5ms", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(submit, 20, &out, &err) == 0, "%s", err);
    long job = atol(out);
    free(out);
    free(err);
    /* during the job: its own series, labelled */
    char series[160];
    snprintf(series, sizeof series, "spm_job_sis_known{job_id=\"%ld\",program=\"synthetic\"}", job);
    char *center = metrics_when(port, series, 600);
    check_shape(center, "center");
    promtool_check(center, "center");
    ck_assert_double_eq(metric(center, "spm_jobs_running"), 1);
    /* the named node's series, its name escaped as the format wants */
    ck_assert_msg(strstr(center, "spm_node_ieus{node=\"alpha \\\"one\\\"\",state=\"busy\"}"),
                  "no busy series of the named node in the center's metrics (%zu bytes)",
                  strlen(center));
    ck_assert_msg(strstr(center, "spm_build_info{version=\"") && strstr(center, "commit=\""),
                  "no spm_build_info with a version and a commit in the center's metrics");
    free(center);
    char *agent =
        metrics_when(agent_port, "spm_node_ieus{node=\"alpha \\\"one\\\"\",state=\"running\"}", 2);
    check_shape(agent, "agent");
    promtool_check(agent, "agent");
    ck_assert_double_eq(metric(agent, "spm_node_cache_capacity_bytes{node=\"alpha \\\"one\\\"\"}"),
                        64 << 20);
    ck_assert(metric(agent, "process_resident_memory_bytes") > 0);
    ck_assert(metric(agent, "spm_node_cpu_seconds_total{node=\"alpha \\\"one\\\"\"}") >= 0);
    ck_assert_msg(strstr(agent, "spm_build_info{version=\""), "%.300s", agent);
    free(agent);
    /* after it: the histogram counts each opcode's SIs as the report does */
    snprintf(series, sizeof series, "%ld", job);
    const char *wait[] = {"wait", series, "--center", vm.ep, "--json", NULL};
    ck_assert_msg(spm_test_run(wait, 60, &out, &err) == 0, "%s", err);
    free(err);
    double committed = spm_test_json_num(out, "committed");
    ck_assert_double_eq(committed, 600);
    center = metrics_when(port, "spm_jobs_running", 0);
    const char *ops = strstr(out, "\"opcodes\": [");
    ck_assert_ptr_nonnull(ops);
    int nops = 0;
    for (const char *o = strstr(ops, "{\"name\": \""); o; o = strstr(o + 1, "{\"name\": \"")) {
        char name[64];
        ck_assert_int_eq(sscanf(o + 10, "%63[^\"]", name), 1);
        double sis = spm_test_json_num(o, "sis");
        char h[160];
        snprintf(h, sizeof h, "spm_si_duration_seconds_count{opcode=\"%s\"}", name);
        ck_assert_msg(metric(center, h) == sis, "%s %g, the report %g", h, metric(center, h), sis);
        snprintf(h, sizeof h, "spm_si_duration_seconds_bucket{opcode=\"%s\",le=\"+Inf\"}", name);
        ck_assert_double_eq(metric(center, h), sis);
        nops++;
    }
    ck_assert_int_ge(nops, 1);
    /* 5 ms each: none in the buckets below 5 ms but those the clock rounded */
    ck_assert(metric(center, "spm_si_duration_seconds_bucket{opcode=\"syn.work\",le=\"0.001\"}") <
              committed / 2);
    /* the agent hears its node's count from the center (two nodes ran the job) */
    double alpha = metric(center, "spm_node_sis_total{node=\"alpha \\\"one\\\"\"}");
    ck_assert(alpha > 0 && alpha <= committed);
    free(center);
    free(out);
    agent = metrics_when(agent_port, "spm_node_sis_total{node=\"alpha \\\"one\\\"\"}", alpha);
    free(agent);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  GET /metrics on PORT until SERIES is WANT; fails after 15 s. */
static void expect_metric(int port, const char *series, double want)
{
    free(metrics_when(port, series, want));
}

START_TEST(ended_jobs_are_counted_by_end_state_across_a_restart)
{
    spm_test_vm_t vm;
    int port;
    start_vm(&vm, &port);
    const char *quick[] = {"run", "synthetic", "--center",  vm.ep, "--sis",
                           "50",  "--work",    "fixed:1ms", NULL};
    ck_assert_int_eq(spm_test_run(quick, 60, NULL, NULL), 0);
    const char *slow[] = {"submit", "synthetic", "--center",  vm.ep, "--sis",
                          "100000", "--work",    "fixed:5ms", NULL};
    char *out;
    ck_assert_int_eq(spm_test_run(slow, 20, &out, NULL), 0);
    char job[32];
    snprintf(job, sizeof job, "%ld", atol(out));
    free(out);
    expect_metric(port, "spm_jobs_running", 1);
    const char *cancel[] = {"cancel", job, "--center", vm.ep, NULL};
    ck_assert_int_eq(spm_test_run(cancel, 20, NULL, NULL), 0);
    expect_metric(port, "spm_jobs_ended_total{state=\"canceled\"}", 1);
    expect_metric(port, "spm_jobs_ended_total{state=\"done\"}", 1);
    expect_metric(port, "spm_jobs_ended_total{state=\"failed\"}", 0);
    expect_metric(port, "spm_jobs_running", 0);
    /* a crash and a restart on the same store: the history counts them */
    kill(vm.center.pid, SIGKILL);
    spm_test_finish(&vm.center, 10, NULL, NULL);
    char store[128], addr[64];
    snprintf(store, sizeof store, "%s/store", vm.dir);
    port = spm_test_free_port();
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    const char *again[] = {"center",      "--listen", vm.ep,    "--store", store,
                           "--log-level", "error",    "--http", addr,      NULL};
    vm.center = spm_test_start(again);
    expect_metric(port, "spm_jobs_ended_total{state=\"canceled\"}", 1);
    expect_metric(port, "spm_jobs_ended_total{state=\"done\"}", 1);
    expect_metric(port, "spm_jobs_ended_total{state=\"failed\"}", 0);
    /* and one more end counts on top */
    ck_assert_int_eq(spm_test_run(quick, 60, NULL, NULL), 0);
    expect_metric(port, "spm_jobs_ended_total{state=\"done\"}", 2);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  Whether family NAME (or a histogram's NAME_bucket ...) has a TYPE line
    in TEXT. */
static int has_family(const char *text, const char *name)
{
    char pat[160];
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    snprintf(pat, sizeof pat, "# TYPE %s ", name);
    if (strstr(text, pat))
        return 1;
    for (int i = 0; i < 3; i++) {
        size_t l = strlen(name), sl = strlen(suffixes[i]);
        if (l > sl && strcmp(name + l - sl, suffixes[i]) == 0) {
            snprintf(pat, sizeof pat, "# TYPE %.*s histogram", (int)(l - sl), name);
            if (strstr(text, pat))
                return 1;
        }
    }
    return 0;
}

START_TEST(grafana_dashboard_is_json_and_draws_only_served_metrics)
{
    const char *src = getenv("SPM_SOURCE_DIR");
    char path[512], cmd[700];
    snprintf(path, sizeof path, "%s/conf/grafana-dashboard.json", src ? src : ".");
    if (spm_test_have("python3")) {
        snprintf(cmd, sizeof cmd, "python3 -m json.tool %s >/dev/null", path);
        ck_assert_msg(system(cmd) == 0, "%s is not valid JSON", path);
    } else {
        fprintf(stderr, "skipped the JSON check of %s: python3 is not installed\n", path);
    }
    int fd = open(path, O_RDONLY);
    ck_assert_msg(fd >= 0, "%s: cannot open", path);
    char *json = spm_test_slurp(fd);
    close(fd);
    /* what a center and an agent serve, a job run */
    spm_test_vm_t vm;
    int port, agent_port = spm_test_free_port();
    start_vm(&vm, &port);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", agent_port);
    const char *http_agent[] = {"--http", addr, "--cache-mb", "16", NULL};
    spm_test_vm_agent(&vm, "1", http_agent);
    const char *job[] = {"run", "synthetic", "--center",  vm.ep, "--sis",
                         "400", "--work",    "fixed:2ms", NULL};
    ck_assert_int_eq(spm_test_run(job, 60, NULL, NULL), 0);
    char *center = metrics_when(port, "spm_jobs_ended_total{state=\"done\"}", 1);
    char *agent = metrics_when(agent_port, "process_cpu_seconds_total", -1);
    int names = 0;
    for (const char *p = strstr(json, "spm_"); p; p = strstr(p + 1, "spm_")) {
        if (p > json && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        char name[128];
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p);
        ck_assert_msg(has_family(center, name) || has_family(agent, name),
                      "conf/grafana-dashboard.json draws %s, which neither the center nor an "
                      "agent serves",
                      name);
        names++;
    }
    ck_assert_int_ge(names, 20);
    free(center);
    free(agent);
    free(json);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(agent_http_is_refused_at_start_in_one_line)
{
    char cache[128], ep[160];
    snprintf(cache, sizeof cache, "%s/cache", base);
    snprintf(ep, sizeof ep, "ipc://%s/nobody", base);
    const char *argv[] = {"agent",           "--center",      ep,  "--cache-dir", cache, "--http",
                          "127.0.0.1:99999", "--wait-center", "1", NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(argv, 20, &out, &err), 1);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, "expected ADDR:PORT"), "%s", err);
    free(out);
    free(err);
}
END_TEST

static Suite *http_suite(void)
{
    Suite *s = suite_create("http");
    const spm_test_case_t c = {.timeout_s = 120, .setup = base_setup, .teardown = base_teardown};
    SPM_TEST_ADD(s, &c, metrics_pass_promtool_and_match_the_run_report);
    SPM_TEST_ADD(s, &c, dashboard_shows_the_running_job_in_a_browser);
    SPM_TEST_ADD(s, &c, bad_http_addresses_are_refused_at_start);
    SPM_TEST_ADD(s, &c, a_token_restricts_the_port);
    SPM_TEST_ADD(s, &c, slow_http_clients_do_not_stall_the_center);
    SPM_TEST_ADD(s, &c, half_open_connections_do_not_lock_out_the_token_holder);
    SPM_TEST_ADD(s, &c, refused_keys_are_told_within_a_second);
    SPM_TEST_ADD(s, &c, center_and_agent_metrics_have_labels_and_pass_promtool_during_a_job);
    SPM_TEST_ADD(s, &c, ended_jobs_are_counted_by_end_state_across_a_restart);
    SPM_TEST_ADD(s, &c, agent_http_is_refused_at_start_in_one_line);
    SPM_TEST_ADD(s, &c, grafana_dashboard_is_json_and_draws_only_served_metrics);
    return s;
}

SPM_TEST_MAIN(http_suite)
