/*  Integration tests of the nodes of a VM as an operator sees them: a
    stopped agent taken back into service (never half in it), a drain that
    is not a death, a node that keeps its index across a restart of its
    agent and its name everywhere, an agent that waits for its center, and
    the center's log: one line per event, stamped with the time (not when
    journald reads it), with a peer's strings escaped. Real centers,
    agents and IEUs; a forged HELLO from a real ZeroMQ socket. */
#include "tests/check_main.h"
#include "tests/spm_test.h"
#include "transport/wire.h"

#include <regex.h>

/*  What the file PATH holds now (malloc'd). */
static char *read_path(const char *path)
{
    int fd = open(path, O_RDONLY);
    char *s = fd >= 0 ? spm_test_slurp(fd) : strdup("");
    if (fd >= 0)
        close(fd);
    return s;
}

/*  `spm status --json` of the VM (malloc'd). */
static char *status_json(spm_test_vm_t *vm)
{
    const char *argv[] = {"status", "--center", vm->ep, "--json", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(argv, 30, &out, &err) == 0, "%s", err);
    free(err);
    return out;
}

/*  `spm status` as text (malloc'd). */
static char *status_text(spm_test_vm_t *vm)
{
    const char *argv[] = {"status", "--center", vm->ep, NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(argv, 30, &out, &err) == 0, "%s", err);
    free(err);
    return out;
}

/*  Whether the status JSON says node NODE is up. */
static int node_up(const char *json, int node)
{
    char pat[64];
    snprintf(pat, sizeof pat, "{\"node\": %d, \"up\": true", node);
    return strstr(json, pat) != NULL;
}

/*  The index of the node named NAME in the status JSON, or -1. */
static int node_named(const char *json, const char *name)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"name\": \"%s\"", name);
    const char *p = strstr(json, pat);
    while (p && p > json && strncmp(p, "{\"node\": ", 9) != 0)
        p--;
    return p && p > json ? atoi(p + 9) : -1;
}

/*  IEUs of NODE in STATE in the status JSON. */
static int ieus_in(const char *json, int node, const char *state)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"node\": %d, \"slots\": 1, \"state\": \"%s\"", node, state);
    int n = 0;
    for (const char *p = json; (p = strstr(p, pat)); p++)
        n++;
    return n;
}

/*  Waits up to TIMEOUT_S for COND(json) on the VM's status; returns the
    last status JSON (malloc'd). */
#define WAIT_STATUS(vm, timeout_s, cond)                                                           \
    ({                                                                                             \
        char *json_ = NULL;                                                                        \
        for (int i_ = 0; i_ < (timeout_s)*4; i_++) {                                               \
            free(json_);                                                                           \
            json_ = status_json(vm);                                                               \
            const char *json = json_;                                                              \
            if (cond)                                                                              \
                break;                                                                             \
            usleep(250000);                                                                        \
        }                                                                                          \
        json_;                                                                                     \
    })

/*  A center logging at info with the given --dead-ms, and two agents of
    one IEU each, named n0 and n1 (vm->agents[0] and [1]), once both nodes
    are up with their IEUs. Returns the node index of n1. */
static int start_two(spm_test_vm_t *vm, const char *dead_ms)
{
    const char *extra[] = {"--log-level", "info", "--dead-ms", dead_ms, NULL};
    spm_test_vm_start(vm, extra);
    const char *n0[] = {"--name", "n0", NULL}, *n1[] = {"--name", "n1", NULL};
    spm_test_vm_agent(vm, "1", n0);
    spm_test_vm_agent(vm, "1", n1);
    char *json = WAIT_STATUS(vm, 20,
                             node_up(json, 0) && node_up(json, 1) &&
                                 ieus_in(json, 0, "idle") + ieus_in(json, 1, "idle") == 2);
    int n1_index = node_named(json, "n1");
    ck_assert_msg(n1_index >= 0 && ieus_in(json, n1_index, "idle") == 1, "%s", json);
    free(json);
    return n1_index;
}

/*  A job of SIS SIs of 1 ms on the VM must succeed. */
static void run_job(spm_test_vm_t *vm, const char *sis)
{
    const char *argv[] = {"run", "synthetic", "--center",  vm->ep,    "--sis",
                          sis,   "--work",    "fixed:1ms", "--quiet", NULL};
    char *err;
    ck_assert_msg(spm_test_run(argv, 120, NULL, &err) == 0, "%s", err);
    free(err);
}

/*  Case 1 of issue 39: an agent stopped (SIGSTOP) longer than --dead-ms is
    taken out of service whole, its IEUs with it; once continued it joins
    again as the same node, with fresh IEUs, and the next job runs on it. */
START_TEST(stopped_agent_is_taken_back_whole)
{
    spm_test_vm_t vm;
    int n1 = start_two(&vm, "2000");
    char *json;
    run_job(&vm, "200");
    pid_t agent = vm.agents[1].pid;
    ck_assert_int_eq(kill(agent, SIGSTOP), 0);
    /* out of service whole: the node down and none of its IEUs in service */
    json = WAIT_STATUS(&vm, 20, !node_up(json, n1) && ieus_in(json, n1, "idle") == 0);
    ck_assert_msg(!node_up(json, n1), "node %d still up while its agent is stopped: %s", n1, json);
    ck_assert_msg(ieus_in(json, n1, "idle") == 0 && ieus_in(json, n1, "busy") == 0,
                  "the IEU of a node out of service is still in service: %s", json);
    free(json);
    sleep(6); /* 8 s stopped in all */
    ck_assert_int_eq(kill(agent, SIGCONT), 0);
    json = WAIT_STATUS(&vm, 30, node_up(json, n1) && ieus_in(json, n1, "idle") == 1);
    ck_assert_msg(node_up(json, n1), "node %d is not taken back: %s", n1, json);
    ck_assert_msg(ieus_in(json, n1, "idle") == 1, "node %d has no IEU in service: %s", n1, json);
    ck_assert_msg(strstr(json, "\"node\": 2,") == NULL, "it came back as another node: %s", json);
    free(json);
    run_job(&vm, "300");
    char *log = read_path(vm.center.err_path), want[64];
    snprintf(want, sizeof want, "agent of node %d (n1, host", n1);
    ck_assert_msg(strstr(log, want), "%s", log);
    free(log);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  A drain (spm agent --drain) logs as a drain, and counts nowhere as a
    death: no warning, no failure, no dead IEU. */
START_TEST(drain_is_not_a_death)
{
    spm_test_vm_t vm;
    int n1 = start_two(&vm, "3000");
    char *json;
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache1", vm.dir);
    const char *drain[] = {"agent", "--drain", "--cache-dir", cache, NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(drain, 60, &out, &err) == 0, "%s", err);
    free(out);
    free(err);
    ck_assert_int_eq(spm_test_finish(&vm.agents[1], 30, NULL, NULL), 0);
    vm.agents[1].pid = 0;
    sleep(4); /* past --dead-ms: a silent agent would be taken for dead now */
    json = status_json(&vm);
    ck_assert_msg(!node_up(json, n1), "%s", json);
    ck_assert_msg(ieus_in(json, n1, "left") == 1, "the drained IEU is not shown as left: %s", json);
    ck_assert_msg(strstr(json, "\"state\": \"dead\"") == NULL, "a drain counted a death: %s", json);
    ck_assert_msg(strstr(json, "\"failures\": []"), "a drain is listed as a failure: %s", json);
    free(json);
    char *log = read_path(vm.center.err_path);
    char want[64];
    snprintf(want, sizeof want, "agent of node %d (n1) drained", n1);
    ck_assert_msg(strstr(log, want), "%s", log);
    ck_assert_msg(!strstr(log, "warning"), "a drain logged a warning:\n%s", log);
    free(log);
    run_job(&vm, "100"); /* the other node carries on */
    spm_test_vm_stop(&vm);
}
END_TEST

/*  An agent killed and started again on its cache directory is the same
    node (its identity is kept there), and its name is in `spm status`. */
START_TEST(restarted_agent_keeps_its_node)
{
    spm_test_vm_t vm;
    int n0 = 1 - start_two(&vm, "3000");
    char *json;
    kill(vm.agents[0].pid, SIGKILL);
    spm_test_finish(&vm.agents[0], 30, NULL, NULL);
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache0", vm.dir);
    const char *argv[] = {"agent",       "--center", vm.ep,    "--ieus", "1",
                          "--cache-dir", cache,      "--name", "n0",     NULL};
    vm.agents[0] = spm_test_start(argv);
    json = WAIT_STATUS(&vm, 30, node_up(json, n0) && ieus_in(json, n0, "idle") == 1);
    ck_assert_msg(node_up(json, n0) && ieus_in(json, n0, "idle") == 1, "%s", json);
    ck_assert_int_eq(node_named(json, "n0"), n0);
    ck_assert_msg(strstr(json, "{\"node\": 2,") == NULL, "the agent became a new node: %s", json);
    ck_assert_msg(strstr(json, "\"name\": \"n0\"") && strstr(json, "\"name\": \"n1\""), "%s", json);
    free(json);
    char *text = status_text(&vm);
    ck_assert_msg(strstr(text, " n0 ") && strstr(text, " n1 "), "%s", text);
    free(text);
    run_job(&vm, "200");
    spm_test_vm_stop(&vm);
}
END_TEST

/*  With --no-sync (an embedded VM's agent, whose cache directory goes with
    the run) the node's identity is not synced to disk, but it is still
    written whole and renamed into place: an agent started again on the
    directory is the same node. */
START_TEST(unsynced_identity_still_keeps_the_node)
{
    spm_test_vm_t vm;
    const char *extra[] = {"--log-level", "info", NULL};
    spm_test_vm_start(&vm, extra);
    const char *nosync[] = {"--no-sync", NULL};
    spm_test_vm_agent(&vm, "1", nosync);
    char *json = WAIT_STATUS(&vm, 20, node_up(json, 0) && ieus_in(json, 0, "idle") == 1);
    ck_assert_msg(node_up(json, 0), "%s", json);
    free(json);
    char path[160];
    snprintf(path, sizeof path, "%s/cache0/node.id", vm.dir);
    char *id = read_path(path);
    ck_assert_msg(strlen(id) == 33 && strspn(id, "0123456789abcdef") == 32 && id[32] == '\n',
                  "node.id: '%s'", id);
    kill(vm.agents[0].pid, SIGKILL);
    spm_test_finish(&vm.agents[0], 30, NULL, NULL);
    vm.nagents = 0;
    spm_test_vm_agent(&vm, "1", nosync);
    json = WAIT_STATUS(&vm, 30, node_up(json, 0) && ieus_in(json, 0, "idle") == 1);
    ck_assert_msg(node_up(json, 0) && ieus_in(json, 0, "idle") == 1, "%s", json);
    ck_assert_msg(strstr(json, "{\"node\": 1,") == NULL, "the agent became a new node: %s", json);
    free(json);
    char *again = read_path(path);
    ck_assert_str_eq(again, id);
    free(again);
    free(id);
    run_job(&vm, "20");
    spm_test_vm_stop(&vm);
}
END_TEST

/*  An agent started before its center waits for it (saying so once), as
    long as it takes by default, and joins when it comes; with
    --wait-center N it gives up after N s in one line. */
START_TEST(agent_waits_for_its_center)
{
    spm_test_vm_t vm;
    memset(&vm, 0, sizeof vm);
    snprintf(vm.dir, sizeof vm.dir, "%s", spm_test_tmpdir());
    snprintf(vm.ep, sizeof vm.ep, "ipc://%s/center", vm.dir);
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache9", vm.dir);
    const char *give_up[] = {"agent",       "--center", vm.ep,           "--ieus", "1",
                             "--cache-dir", cache,      "--wait-center", "2",      NULL};
    char *err;
    ck_assert_int_ne(spm_test_run(give_up, 30, NULL, &err), 0);
    ck_assert_msg(strstr(err, "did not answer within 2 s") && spm_test_lines(err) <= 3, "%s", err);
    free(err);
    const char *n0[] = {"--name", "early", "--log-level", "warn", NULL};
    spm_test_vm_agent(&vm, "1", n0);
    sleep(13); /* past the 10 s an agent used to give up after */
    ck_assert(spm_test_running(vm.agents[0].pid));
    char store[128];
    snprintf(store, sizeof store, "%s/store", vm.dir);
    const char *center[] = {"center", "--listen", vm.ep, "--store", store, NULL};
    vm.center = spm_test_start(center);
    char *json = WAIT_STATUS(&vm, 60, node_up(json, 0) && ieus_in(json, 0, "idle") == 1);
    ck_assert_msg(node_up(json, 0) && strstr(json, "\"name\": \"early\""), "%s", json);
    free(json);
    char *log = read_path(vm.agents[0].err_path);
    const char *w = strstr(log, "waiting for the center at");
    ck_assert_msg(w && !strstr(w + 1, "waiting for the center at"), "not said once:\n%s", log);
    free(log);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  A socket of its own in CTX, connected to the VM's center, that said
    HELLO as an agent named NAME (a peer's string: anything). */
static void *hello_as_agent(spm_test_vm_t *vm, void *ctx, const char *name)
{
    void *sock = spm_wire_socket(ctx, ZMQ_DEALER);
    ck_assert_int_eq(zmq_connect(sock, vm->ep), 0);
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__AGENT;
    h.node = h.name = (char *)name;
    h.pid = 1;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    ck_assert_int_eq(spm_wire_send(sock, NULL, &env, NULL, 0, NULL), 0);
    return sock;
}

/*  Case 13 of issue 39: a HELLO from an authorized peer whose node name
    holds a newline and a terminal escape gives one line in the center's
    log, with both printed as escapes; each line starts with an ISO 8601
    time in UTC with milliseconds. */
START_TEST(peer_strings_are_escaped_in_the_log)
{
    spm_test_vm_t vm;
    const char *extra[] = {"--log-level", "info", NULL};
    spm_test_vm_start(&vm, extra);
    void *ctx = zmq_ctx_new();
    void *sock = hello_as_agent(&vm, ctx, "evil\nspm center[1]: info: job 1 (matmul) done\x1b[2J");
    char *log = NULL;
    for (int i = 0; i < 100 && (!log || !strstr(log, "joined")); i++) {
        free(log);
        usleep(100000);
        log = read_path(vm.center.err_path);
    }
    ck_assert_msg(strstr(log, "joined"), "%s", log);
    ck_assert_msg(strchr(log, '\x1b') == NULL, "a raw escape reached the log:\n%s", log);
    ck_assert_msg(strstr(log, "evil\\nspm center[1]: info: job 1 (matmul) done\\x1b[2J"),
                  "the name is not shown escaped:\n%s", log);
    regex_t re;
    ck_assert_int_eq(regcomp(&re,
                             "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
                             "spm center\\[[0-9]+\\]: (info|warning|error|debug): ",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
        ck_assert_msg(regexec(&re, line, 0, NULL, 0) == 0, "not a stamped line of its own: %s",
                      line);
    regfree(&re);
    free(log);
    /* the status, printed to terminals, shows it escaped too */
    char *text = status_text(&vm);
    ck_assert_msg(strchr(text, '\x1b') == NULL, "%s", text);
    free(text);
    zmq_close(sock);
    zmq_ctx_term(ctx);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  Case 15 of issue 39: routine faults do not flood the log. A node that
    hands the store 2,000 copies of versions no job wants (what a re-issued
    SI or a rewound job leaves: "SDB ... has no version ...") gives the
    first in full and then one counted line for the interval, at info:
    before, a line each (4,833 after one fault). */
START_TEST(routine_faults_are_counted_not_logged_each)
{
    spm_test_vm_t vm;
    const char *extra[] = {"--log-level", "info", NULL};
    spm_test_vm_start(&vm, extra);
    void *ctx = zmq_ctx_new();
    void *sock = hello_as_agent(&vm, ctx, "routine");
    uint8_t block[16] = {0};
    enum { N = 2000 };
    for (int i = 0; i < N; i++) {
        Spm__Store st = SPM__STORE__INIT;
        st.req = (uint64_t)i + 1;
        st.sdb = 4242;
        st.version = (uint64_t)i + 1;
        st.type = 1;
        Spm__Envelope e = SPM__ENVELOPE__INIT;
        e.body_case = SPM__ENVELOPE__BODY_STORE;
        e.store = &st;
        spm_frame_t f = {block, sizeof block, NULL, NULL};
        ck_assert_int_eq(spm_wire_send(sock, NULL, &e, &f, 1, NULL), 0);
    }
    /* the summary comes once the interval (SPM_LOG_RATE_S, 10 s) is over */
    char *log = NULL;
    for (int i = 0; i < 300 && (!log || !strstr(log, " more in the last ")); i++) {
        free(log);
        usleep(100000);
        log = read_path(vm.center.err_path);
    }
    size_t each = 0, counted = 0;
    for (const char *p = log; (p = strstr(p, "has no version")); p++)
        each++;
    for (const char *p = log; (p = strstr(p, " more in the last ")); p++) {
        const char *line = p;
        while (line > log && line[-1] != '\n')
            line--;
        const char *n = strstr(line, "info: ");
        ck_assert_msg(n && n < p, "the count is not an info line:\n%s", log);
        counted += strtoul(n + 6, NULL, 10);
    }
    /* the lines in full each show one event; a summary line shows the last
       of those it counts */
    size_t summaries = 0;
    for (const char *p = log; (p = strstr(p, " more in the last ")); p++)
        summaries++;
    ck_assert_msg(summaries >= 1, "no counted line:\n%.3000s", log);
    ck_assert_msg(each - summaries + counted == N,
                  "%zu lines in full + %zu counted, of %d:\n%.3000s", each - summaries, counted, N,
                  log);
    ck_assert_msg(spm_test_lines(log) < 20, "%zu lines:\n%.3000s", spm_test_lines(log), log);
    free(log);
    zmq_close(sock);
    zmq_ctx_term(ctx);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  Under systemd, journald stamps each line itself: when JOURNAL_STREAM
    names the stream stderr is, lines carry no time of their own. */
START_TEST(no_time_stamp_when_journald_reads_the_log)
{
    char dir[64], path[128], store[128], ep[160];
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
    snprintf(path, sizeof path, "%s/err", dir);
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(ep, sizeof ep, "ipc://%s/center", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    fstat(fd, &st);
    char js[64];
    snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        setenv("JOURNAL_STREAM", js, 1);
        execl(spm_test_bin(), "spm", "center", "--listen", ep, "--store", store, "--log-level",
              "info", (char *)NULL);
        _exit(127);
    }
    close(fd);
    char *log = NULL;
    for (int i = 0; i < 100 && (!log || !strstr(log, "listening on")); i++) {
        free(log);
        usleep(100000);
        log = read_path(path);
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    ck_assert_msg(strncmp(log, "spm center[", 11) == 0, "%s", log);
    free(log);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/*  The resident memory of process PID, in KiB (-1: unknown). */
static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/*  Case 16 of issue 39: the center's memory follows the jobs it holds and
    returns after a large job (it kept about 330 bytes per SI while idle:
    100 MiB after this job). */
START_TEST(center_memory_returns_after_a_large_job)
{
#ifdef __SANITIZE_ADDRESS__
    /* AddressSanitizer's allocator keeps what was freed (its quarantine
       and its own free lists): the resident size would not fall. */
    printf("test_nodes: the center's memory after a job is not measured in an "
           "AddressSanitizer build\n");
    return;
#endif
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    spm_test_vm_agent(&vm, "2", NULL);
    run_job(&vm, "1000"); /* the center's start-up allocations made */
    sleep(3);
    long before = rss_kib(vm.center.pid);
    const char *argv[] = {"run",    "synthetic", "--center", vm.ep,     "--sis",
                          "300000", "--work",    "fixed:0",  "--quiet", NULL};
    char *err;
    ck_assert_msg(spm_test_run(argv, 180, NULL, &err) == 0, "%s", err);
    free(err);
    long after = -1;
    for (int i = 0; i < 20; i++) { /* up to 10 s for it to settle */
        usleep(500000);
        after = rss_kib(vm.center.pid);
        if (after < before + 16384)
            break;
    }
    fprintf(stderr, "center RSS %ld KiB before a job of 300000 SIs, %ld KiB after it\n", before,
            after);
    ck_assert_msg(before > 0 && after < before + 16384,
                  "the center kept %ld KiB after the job (%ld KiB before)", after, before);
    spm_test_vm_stop(&vm);
}
END_TEST

static Suite *nodes_suite(void)
{
    Suite *s = suite_create("nodes");
    static const spm_test_case_t slow = {.timeout_s = 240};
    SPM_TEST_ADD(s, &slow, stopped_agent_is_taken_back_whole);
    SPM_TEST_ADD(s, &slow, drain_is_not_a_death);
    SPM_TEST_ADD(s, &slow, restarted_agent_keeps_its_node);
    SPM_TEST_ADD(s, &slow, unsynced_identity_still_keeps_the_node);
    SPM_TEST_ADD(s, &slow, agent_waits_for_its_center);
    SPM_TEST_ADD(s, &slow, peer_strings_are_escaped_in_the_log);
    SPM_TEST_ADD(s, &slow, routine_faults_are_counted_not_logged_each);
    SPM_TEST_ADD(s, &slow, no_time_stamp_when_journald_reads_the_log);
    SPM_TEST_ADD(s, &slow, center_memory_returns_after_a_large_job);
    return s;
}

SPM_TEST_MAIN(nodes_suite)
