/*  Integration tests of operating a VM: CurveZMQ keys on TCP (a wrong or
    missing key is refused and counted, the job is untouched), several jobs
    sharing the IEUs by priority, submit/wait/cancel, draining an agent, and
    the configuration file. */
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "tests/spm_test.h"
#include "base/config.h"
#include "transport/wire.h"

#include <sys/resource.h>
#include <sys/stat.h>

/*  A TCP port for this test run. */
static const char *tcp_endpoint(char *buf, size_t size)
{
    snprintf(buf, size, "tcp://127.0.0.1:%d", 20000 + (int)(getpid() % 20000));
    return buf;
}

static void keygen(const char *keys, const char *name, int authorize)
{
    const char *argv[] = {
        "keygen", "--keys", keys, "--name", name, authorize ? "--authorize" : NULL, NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(argv, 10, &out, &err) == 0, "keygen: %s", err);
    free(out);
    free(err);
}

static void copy_file(const char *from, const char *to)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s %s", from, to);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(only_authorized_keys_get_in)
{
    char keys[128], bad[128], ep[64], store[128], cache[128], path[256], path2[256];
    snprintf(keys, sizeof keys, "%s/keys", base);
    snprintf(bad, sizeof bad, "%s/intruder", base);
    keygen(keys, "center", 0);
    keygen(keys, "agent", 1);
    keygen(keys, "client", 1);
    keygen(bad, "client", 0); /* a key pair the center never authorized */
    keygen(bad, "agent", 0);
    snprintf(path, sizeof path, "%s/center.pub", keys);
    snprintf(path2, sizeof path2, "%s/center.pub", bad);
    copy_file(path, path2);
    tcp_endpoint(ep, sizeof ep);
    snprintf(store, sizeof store, "%s/store", base);
    snprintf(cache, sizeof cache, "%s/cache", base);
    const char *center[] = {"center", "--listen",    ep,      "--store", store, "--keys",
                            keys,     "--log-level", "error", NULL};
    spm_test_proc_t pc = spm_test_start(center);
    usleep(300000);
    const char *agent[] = {"agent", "--center",    ep,    "--keys", keys, "--ieus",
                           "1",     "--cache-dir", cache, NULL};
    spm_test_proc_t pa = spm_test_start(agent);
    snprintf(path, sizeof path, "%s/cache-bad", base);
    const char *intruder_agent[] = {"agent", "--center",    ep,   "--keys", bad, "--ieus",
                                    "1",     "--cache-dir", path, NULL};
    spm_test_proc_t pbad = spm_test_start(intruder_agent);
    /* a job of the authorized client, while intruders knock */
    const char *job[] = {"run",   "synthetic", "--center", ep,          "--keys", keys,
                         "--sis", "300",       "--work",   "fixed:2ms", "--json", NULL};
    spm_test_proc_t pj = spm_test_start(job);
    const char *intruder[] = {"run", "synthetic", "--center", ep,  "--keys",
                              bad,   "--timeout", "1500",     NULL};
    char *out, *err;
    int rc = spm_test_run(intruder, 20, &out, &err);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "refused the key") != NULL, "%s", err);
    free(out);
    free(err);
    snprintf(path, sizeof path, "%s/none", base);
    const char *keyless[] = {"status", "--center", ep, "--keys", path, NULL};
    ck_assert_int_eq(spm_test_run(keyless, 20, &out, &err), 1);
    ck_assert_msg(strstr(err, "no key pair") != NULL, "%s", err);
    free(out);
    free(err);
    rc = spm_test_finish(&pj, 60, &out, &err);
    ck_assert_msg(rc == 0, "the authorized job failed: %s", err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 300);
    free(out);
    free(err);
    const char *status[] = {"status", "--center", ep, "--keys", keys, "--json", NULL};
    ck_assert_int_eq(spm_test_run(status, 20, &out, &err), 0);
    ck_assert_msg(spm_test_json_num(out, "refused") >= 2, "refusals not counted: %s", out);
    ck_assert_msg(strstr(out, "\"node\": 1") == NULL, "the intruder's IEU joined: %s", out);
    free(out);
    free(err);
    kill(pbad.pid, SIGKILL);
    spm_test_finish(&pbad, 10, NULL, NULL);
    kill(pc.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&pc, 15, NULL, NULL), 0);
    spm_test_finish(&pa, 20, NULL, NULL);
}
END_TEST

/*  A center with flags EXTRA (may be NULL) and one agent of IEUS IEUs. */
static void start_vm(spm_test_vm_t *vm, const char *const *extra, const char *ieus)
{
    spm_test_vm_start(vm, extra);
    spm_test_vm_agent(vm, ieus, NULL);
    usleep(300000);
}

/*  Submits synthetic; returns the job id. */
static long submit(const char *ep, const char *sis, const char *priority)
{
    const char *argv[] = {"submit", "synthetic", "--center",   ep,       "--sis", sis,
                          "--work", "fixed:5ms", "--priority", priority, NULL};
    return spm_test_submit(argv, 20);
}

/*  COMMITTED of JOB in the center's status JSON. */
static double committed_of(const char *status, long job)
{
    char pat[64];
    snprintf(pat, sizeof pat, "{\"job\": %ld,", job);
    const char *p = strstr(status, pat);
    return p ? spm_test_json_num(p, "committed") : -1;
}

START_TEST(jobs_share_fairly_and_priority_overtakes)
{
    spm_test_vm_t vm;
    start_vm(&vm, NULL, "1");
    const char *ep = vm.ep;
    long a = submit(ep, "400", "0"), b = submit(ep, "400", "0");
    usleep(1000000);
    const char *st[] = {"status", "--center", ep, "--json", NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(st, 20, &out, &err), 0);
    double ca = committed_of(out, a), cb = committed_of(out, b);
    ck_assert_msg(ca > 10 && cb > 10, "a job starves: %s", out);
    ck_assert_msg(ca / cb < 2 && cb / ca < 2, "unfair share %.0f vs %.0f", ca, cb);
    free(out);
    free(err);
    long c = submit(ep, "40", "10");
    char cs[32];
    snprintf(cs, sizeof cs, "%ld", c);
    const char *wait[] = {"wait", cs, "--center", ep, "--json", NULL};
    ck_assert_int_eq(spm_test_run(wait, 60, &out, &err), 0);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 40);
    free(out);
    free(err);
    ck_assert_int_eq(spm_test_run(st, 20, &out, &err), 0);
    ck_assert_msg(strstr(out, "\"state\": \"running\"") != NULL,
                  "the high-priority job did not overtake: %s", out);
    free(out);
    free(err);
    char as[32];
    snprintf(as, sizeof as, "%ld", a);
    const char *cancel[] = {"cancel", as, "--center", ep, NULL};
    ck_assert_int_eq(spm_test_run(cancel, 20, &out, &err), 0);
    free(out);
    free(err);
    const char *wait_a[] = {"wait", as, "--center", ep, "--quiet", NULL};
    ck_assert_int_eq(spm_test_run(wait_a, 20, &out, &err), 3); /* canceled */
    ck_assert_msg(strstr(err, "canceled") != NULL, "%s", err);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(drained_agent_finishes_running_sis)
{
    spm_test_vm_t vm;
    start_vm(&vm, NULL, "1");
    const char *ep = vm.ep;
    char cache2[128];
    int second = spm_test_vm_agent(&vm, "1", NULL);
    snprintf(cache2, sizeof cache2, "%s/cache%d", vm.dir, second);
    usleep(300000);
    const char *job[] = {"run", "synthetic", "--center",   ep,       "--sis",
                         "60",  "--work",    "fixed:50ms", "--json", NULL};
    spm_test_proc_t pj = spm_test_start(job);
    usleep(800000);
    const char *drain[] = {"agent", "--drain", "--cache-dir", cache2, NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(drain, 30, &out, &err), 0);
    free(out);
    free(err);
    ck_assert_int_eq(spm_test_finish(&vm.agents[second], 10, NULL, NULL), 0);
    vm.agents[second].pid = 0;
    int rc = spm_test_finish(&pj, 60, &out, &err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 60);
    /* only SIs held and not started go back: at most slots + prefetch (2) */
    ck_assert_msg(spm_test_json_num(out, "reissued") <= 2, "%s", out);
    ck_assert_msg(spm_test_json_num(out, "stale") == 0, "%s", out);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  Runs `spm ARGS... --center EP` and the same on an embedded VM, both
    writing OUT (a path with %s for "center" or "embedded"); the two
    outputs must be the same bytes. */
static void same_on_center_and_embedded(const char *ep, const char **args, int n, const char *out)
{
    char paths[2][160], cmd[400];
    for (int k = 0; k < 2; k++) {
        snprintf(paths[k], sizeof paths[k], out, k ? "embedded" : "center");
        const char *argv[24];
        memcpy(argv, args, (size_t)n * sizeof *argv);
        int m = n;
        argv[m++] = "-o";
        argv[m++] = paths[k];
        argv[m++] = "--quiet";
        if (k == 0) {
            argv[m++] = "--center";
            argv[m++] = ep;
        } else {
            argv[m++] = "--ieus";
            argv[m++] = "2";
        }
        argv[m] = NULL;
        char *o, *e;
        int rc = spm_test_run(argv, 120, &o, &e);
        ck_assert_msg(rc == 0, "%s: %s", args[0], e);
        free(o);
        free(e);
    }
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", paths[0], paths[1]);
    ck_assert_msg(system(cmd) == 0, "%s: %s differs from %s", args[0], paths[0], paths[1]);
}

START_TEST(finished_runs_leave_nothing_in_the_centers_store)
{
    /* A center serves run after run: what a client staged and what its job
       made must go once the client has its results, or the store grows by
       every run's inputs and outputs until the disk is full. */
    spm_test_vm_t vm;
    start_vm(&vm, NULL, "2");
    char dat[128], a[128], b[128], out[128];
    snprintf(dat, sizeof dat, "%s/t.dat", vm.dir);
    snprintf(a, sizeof a, "%s/a.mtx", vm.dir);
    snprintf(b, sizeof b, "%s/b.mtx", vm.dir);
    const char *gens[][16] = {
        {"gen", "transactions", "--transactions", "3000", "--items", "200", "--seed", "4", "-o",
         dat, NULL},
        {"gen", "matrix", "--rows", "300", "--density", "0.05", "--seed", "5", "-o", a, NULL},
        {"gen", "matrix", "--rows", "300", "--density", "0.05", "--seed", "6", "-o", b, NULL}};
    for (int i = 0; i < 3; i++) {
        char *o, *e;
        ck_assert_int_eq(spm_test_run(gens[i], 60, &o, &e), 0);
        free(o);
        free(e);
    }
    const char *mine[] = {"mine", dat, "--min-support", "2%", "--block", "500"};
    snprintf(out, sizeof out, "%s/rules.%%s", vm.dir);
    same_on_center_and_embedded(vm.ep, mine, 6, out);
    const char *matmul[] = {"matmul", a, b, "--block", "64"};
    snprintf(out, sizeof out, "%s/c.%%s.mtx", vm.dir);
    same_on_center_and_embedded(vm.ep, matmul, 5, out);

    /* A run that fails while staging (a bad line after the first blocks
       went) leaves nothing either. */
    char bad[128], cmd[512];
    snprintf(bad, sizeof bad, "%s/bad.dat", vm.dir);
    snprintf(cmd, sizeof cmd, "cp %s %s && echo '1 2 x' >> %s", dat, bad, bad);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(out, sizeof out, "%s/bad.rules", vm.dir);
    const char *failing[] = {"mine", bad, "--min-support", "2%",  "--block", "500",
                             "-o",   out, "--center",      vm.ep, NULL};
    char *json, *err;
    ck_assert_int_ne(spm_test_run(failing, 60, &json, &err), 0);
    ck_assert_msg(strstr(err, "bad.dat") != NULL, "%s", err);
    free(json);
    free(err);

    /* Discarded blocks are deleted once the discard is on disk (the
       center syncs every 100 ms by default). */
    const char *st[] = {"status", "--center", vm.ep, "--json", NULL};
    for (int k = 0;; k++) {
        ck_assert_int_eq(spm_test_run(st, 20, &json, &err), 0);
        if (spm_test_json_num(json, "store_blocks") == 0 || k == 50)
            break;
        free(json);
        free(err);
        usleep(100000);
    }
    ck_assert_msg(spm_test_json_num(json, "store_blocks") == 0, "%s", json);
    ck_assert_msg(spm_test_json_num(json, "discarded") > 20, "%s", json);
    free(json);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(interrupted_client_cancels_its_job_on_the_center)
{
    /* Ctrl-C on a client of a running center: nobody will fetch what the
       job makes, so it must not go on taking the cluster's time. */
    spm_test_vm_t vm;
    start_vm(&vm, NULL, "2");
    const char *job[] = {"run",    "synthetic", "--center",  vm.ep,     "--sis",
                         "100000", "--work",    "fixed:5ms", "--quiet", NULL};
    spm_test_proc_t pj = spm_test_start(job);
    const char *st[] = {"status", "--center", vm.ep, "--json", NULL};
    char *json = NULL, *err;
    for (int tries = 0; tries < 100; tries++) { /* until it runs */
        free(json);
        ck_assert_int_eq(spm_test_run(st, 20, &json, NULL), 0);
        if (spm_test_json_num(json, "committed") > 0)
            break;
        usleep(50000);
    }
    ck_assert_msg(strstr(json, "\"state\": \"running\"") != NULL, "%s", json);
    free(json);
    kill(pj.pid, SIGINT);
    int rc = spm_test_finish(&pj, 20, NULL, &err);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(err, "interrupted") != NULL, "%s", err);
    free(err);
    ck_assert_int_eq(spm_test_run(st, 20, &json, NULL), 0);
    ck_assert_msg(strstr(json, "\"state\": \"running\"") == NULL, "%s", json);
    ck_assert_msg(strstr(json, "canceled by a client") != NULL, "%s", json);
    ck_assert_msg(spm_test_json_num(json, "ready") == 0, "%s", json);
    free(json);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(example_config_parses_and_bad_values_name_file_line_key)
{
    const char *example = getenv("SPM_SOURCE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/conf/spm.conf", example ? example : ".");
    const char *ok[] = {"config", "check", path, NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(ok, 10, &out, &err) == 0, "%s", err);
    size_t settings = 0;
    while (spm_config_at(settings))
        settings++;
    ck_assert_uint_eq(spm_test_lines(out), settings); /* every setting printed */
    ck_assert_ptr_nonnull(strstr(out, "center.dead_ms"));
    free(out);
    free(err);
    char bad[128];
    snprintf(bad, sizeof bad, "%s/bad.conf", base);
    FILE *f = fopen(bad, "w");
    fprintf(f, "[center]\nlisten = tcp://*:1\n\n[agent]\nslots = many\n");
    fclose(f);
    const char *check[] = {"config", "check", bad, NULL};
    ck_assert_int_eq(spm_test_run(check, 10, &out, &err), 1);
    char want[256];
    snprintf(want, sizeof want, "%s:5: agent.slots: 'many'", bad);
    ck_assert_msg(strstr(err, want) != NULL, "%s", err);
    free(out);
    free(err);
    /* environment beats the file */
    setenv("SPM_DEAD_MS", "777", 1);
    ck_assert_int_eq(spm_test_run(ok, 10, &out, &err), 0);
    ck_assert_ptr_nonnull(strstr(out, "777"));
    ck_assert_ptr_nonnull(strstr(out, "SPM_DEAD_MS"));
    unsetenv("SPM_DEAD_MS");
    free(out);
    free(err);
}
END_TEST

START_TEST(restarted_center_resumes_its_job_and_agents_rejoin)
{
    const char *extra[] = {"--dead-ms", "500", NULL};
    spm_test_vm_t vm;
    start_vm(&vm, extra, "1");
    const char *ep = vm.ep;
    long job = submit(ep, "2000", "0");
    usleep(500000);
    spm_test_vm_restart_center(&vm, extra); /* the same store */
    char js[32];
    snprintf(js, sizeof js, "%ld", job);
    const char *wait[] = {"wait", js, "--center", ep, "--json", "--quiet", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(wait, 60, &out, &err) == 0, "%s", err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 2000);
    ck_assert_double_eq(spm_test_json_num(out, "restarts"), 1);
    ck_assert_msg(spm_test_json_num(out, "resumed") >= 1, "no commit taken from the journal: %s",
                  out);
    free(out);
    free(err);
    /* the agent rejoined by itself; new work runs, with a fresh job id */
    const char *next[] = {"run",    "synthetic", "--center", ep,          "--sis", "50",
                          "--work", "fixed:1ms", "--json",   "--timeout", "30000", NULL};
    ck_assert_int_eq(spm_test_run(next, 60, &out, &err), 0);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 50);
    ck_assert_msg(spm_test_json_num(out, "job") > job, "job ids restarted: %s", out);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(short_dead_interval_keeps_healthy_nodes_in_service)
{
    /* --dead-ms 500 with the default beat of a second: the center must
       ask for faster beats, or it takes a healthy node for dead between
       two of them (the job then crawls from one rejoin to the next) */
    const char *extra[] = {"--dead-ms", "500", NULL};
    spm_test_vm_t vm;
    start_vm(&vm, extra, "1");
    const char *job[] = {"run", "synthetic", "--center",  vm.ep,     "--sis",
                         "300", "--work",    "fixed:5ms", "--quiet", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(job, 60, &out, &err) == 0, "%s", err);
    free(out);
    free(err);
    const char *status[] = {"status", "--center", vm.ep, "--json", NULL};
    ck_assert_int_eq(spm_test_run(status, 20, &out, &err), 0);
    ck_assert_msg(strstr(out, "\"dead\"") == NULL, "a healthy IEU was taken for dead: %s", out);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(stuck_ieu_is_overtaken_by_speculation)
{
    /* heartbeats would find the stuck IEU only after a minute */
    const char *extra[] = {"--dead-ms", "60000", "--speculate", NULL};
    spm_test_vm_t vm;
    start_vm(&vm, extra, "2");
    const char *ep = vm.ep;
    usleep(100000);
    pid_t ieus[2];
    ck_assert_int_eq(spm_test_children(vm.agents[0].pid, ieus, 2), 2);
    const char *job[] = {"run", "synthetic", "--center",   ep,       "--sis",
                         "60",  "--work",    "fixed:20ms", "--json", NULL};
    spm_test_proc_t pj = spm_test_start(job);
    usleep(400000);
    kill(ieus[1], SIGSTOP); /* stuck, but alive: no death, no lease expiry */
    uint64_t t0 = spm_now_us();
    char *out, *err;
    int rc = spm_test_finish(&pj, 50, &out, &err);
    double waited = (spm_now_us() - t0) / 1e6;
    kill(ieus[1], SIGCONT); /* its late commits are stale now */
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_msg(waited < 20, "the job waited %.1f s for the stuck IEU", waited);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 60);
    ck_assert_msg(spm_test_json_num(out, "spec_wins") >= 1, "%s", out);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(ieus_of_one_node_copy_no_long_si_from_each_other)
{
    /* One SI in 33 takes 300 ms, the rest 1 ms: at the job's end the IEU
       with nothing left would copy the long one its neighbour runs. Both
       run at one speed and keep beating, so a copy cannot finish first and
       only keeps the asking IEU from the work an SF issues next. */
    const char *extra[] = {"--speculate", NULL};
    spm_test_vm_t vm;
    start_vm(&vm, extra, "2");
    const char *job[] = {"run",    "synthetic", "--center", vm.ep,
                         "--sis",  "200",       "--work",   "bimodal:1ms:300ms:0.03",
                         "--json", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(job, 60, &out, &err) == 0, "%s", err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 200);
    ck_assert_msg(spm_test_json_num(out, "speculated") == 0, "copies on one node: %s", out);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

START_TEST(full_disk_fails_the_job_not_the_center)
{
    /* the center's files may not grow past 4 MiB: a disk that fills up */
    struct rlimit old, small = {4 << 20, 4 << 20};
    getrlimit(RLIMIT_FSIZE, &old);
    setrlimit(RLIMIT_FSIZE, &small);
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    setrlimit(RLIMIT_FSIZE, &old);
    spm_test_vm_agent(&vm, "2", NULL);
    usleep(300000);
    const char *ep = vm.ep;
    const char *big[] = {"run",     "synthetic", "--center", ep,        "--sis",   "100",
                         "--bytes", "262144",    "--work",   "fixed:0", "--quiet", NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(big, 60, &out, &err), 1);
    ck_assert_msg(strstr(err, "full") != NULL && spm_test_lines(err) == 1, "%s", err);
    free(out);
    free(err);
    /* the center lives on, its store readable; work without data still runs */
    const char *small_job[] = {"run", "synthetic", "--center",  ep,       "--sis",
                               "50",  "--work",    "fixed:1ms", "--json", NULL};
    ck_assert_int_eq(spm_test_run(small_job, 60, &out, &err), 0);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 50);
    free(out);
    free(err);
    spm_test_vm_stop(&vm);
}
END_TEST

static Suite *ops_suite(void)
{
    Suite *s = suite_create("ops");
    const spm_test_case_t c = {
        .timeout_s = 120, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD(s, &c, only_authorized_keys_get_in);
    SPM_TEST_ADD(s, &c, jobs_share_fairly_and_priority_overtakes);
    SPM_TEST_ADD(s, &c, drained_agent_finishes_running_sis);
    SPM_TEST_ADD(s, &c, finished_runs_leave_nothing_in_the_centers_store);
    SPM_TEST_ADD(s, &c, interrupted_client_cancels_its_job_on_the_center);
    SPM_TEST_ADD(s, &c, example_config_parses_and_bad_values_name_file_line_key);
    SPM_TEST_ADD(s, &c, restarted_center_resumes_its_job_and_agents_rejoin);
    SPM_TEST_ADD(s, &c, short_dead_interval_keeps_healthy_nodes_in_service);
    SPM_TEST_ADD(s, &c, stuck_ieu_is_overtaken_by_speculation);
    SPM_TEST_ADD(s, &c, ieus_of_one_node_copy_no_long_si_from_each_other);
    SPM_TEST_ADD(s, &c, full_disk_fails_the_job_not_the_center);
    return s;
}

SPM_TEST_MAIN(ops_suite)
