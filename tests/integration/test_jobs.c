/*  The center's job records, as an operator and a client rely on them:
    `spm submit` reaches $SPM_CENTER, `spm jobs` and `spm wait` answer from
    the history as often as asked and across a kill -9 of the center, a
    resumed job's wall time leaves the downtime out, a restart logs nothing
    twice, canceled is its own end state (exit code, jobs, status,
    /metrics), a job and its blocks belong to the key that made them (a
    forging client with another authorized key is refused), and blocks go
    when nobody will fetch them (after `spm wait`, after
    center.keep_results_s, or when the job's client is gone). Real centers,
    agents, IEUs and clients of the spm binary; real keys and a client of
    its own on TCP where ownership matters. */
#include "tests/chaos/chaos.h"
#include "tests/check_main.h"
#include "tests/forge.h"
#include "tests/scratch.h"
#include "tests/spm_test.h"
#include "spm/spm.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

/*  A VM whose center can be killed and started again on its store. */
typedef struct {
    char ep[160], store[128], keys[128], cache[128];
    const char *extra[8]; /* the center's own flags, NULL-terminated */
    spm_test_proc_t center, agent;
    char *log[4]; /* the stderr of each center started, once it ended (malloc'd) */
    int centers;  /* started so far */
} vm_t;

/*  Starts VM's center, logging at info. */
static void center_start(vm_t *vm)
{
    const char *argv[32] = {"center",      "--listen", vm->ep,      "--store", vm->store,
                            "--log-level", "info",     "--dead-ms", "2000"};
    int n = 9;
    if (vm->keys[0]) {
        argv[n++] = "--keys";
        argv[n++] = vm->keys;
    }
    spm_test_args(argv, n, 32, vm->extra);
    ck_assert_int_lt(vm->centers, 4);
    vm->centers++;
    vm->center = spm_test_start(argv);
    usleep(300000);
}

/*  Starts an agent of two IEUs for VM's center. */
static void agent_start(vm_t *vm)
{
    const char *argv[16] = {"agent",       "--center", vm->ep,        "--ieus", "2",
                            "--cache-dir", vm->cache,  "--log-level", "error"};
    int n = 9;
    if (vm->keys[0]) {
        argv[n++] = "--keys";
        argv[n++] = vm->keys;
    }
    argv[n] = NULL;
    vm->agent = spm_test_start(argv);
    usleep(300000);
}

/*  Kills VM's center with SIGKILL, a crash; its log is kept. */
static void center_kill(vm_t *vm)
{
    kill(vm->center.pid, SIGKILL);
    spm_test_finish(&vm->center, 10, NULL, &vm->log[vm->centers - 1]);
}

/*  Stops VM's center and its agent; the center's log is kept. */
static void center_stop(vm_t *vm)
{
    kill(vm->center.pid, SIGTERM);
    spm_test_finish(&vm->center, 60, NULL, &vm->log[vm->centers - 1]);
    kill(vm->agent.pid, SIGTERM); /* it drains once the center is gone, told or not */
    spm_test_finish(&vm->agent, 60, NULL, NULL);
}

static void vm_free(vm_t *vm)
{
    for (int i = 0; i < 4; i++)
        free(vm->log[i]);
}

/*  Starts a VM in the scratch directory: a center (on ipc, or TCP with the
    key directory KEYS) with the flags EXTRA and an agent of two IEUs. */
static void vm_start(vm_t *vm, const char *keys, const char *const *extra)
{
    memset(vm, 0, sizeof *vm);
    if (keys) {
        snprintf(vm->ep, sizeof vm->ep, "tcp://127.0.0.1:%d", 20000 + (int)(getpid() % 20000));
        snprintf(vm->keys, sizeof vm->keys, "%s", keys);
    } else {
        snprintf(vm->ep, sizeof vm->ep, "ipc://%s/center", base);
    }
    snprintf(vm->store, sizeof vm->store, "%s/store", base);
    snprintf(vm->cache, sizeof vm->cache, "%s/cache", base);
    for (int i = 0; extra && extra[i] && i < 7; i++)
        vm->extra[i] = extra[i];
    center_start(vm);
    agent_start(vm);
}

/*  `spm ARGS... --center VM [--keys KEYS]`: its exit status, *OUT and *ERR
    (malloc'd; either may be NULL). */
static int spm_at(const vm_t *vm, const char *keys, const char *const *args, char **out, char **err)
{
    const char *argv[32];
    int n = spm_test_args(argv, 0, 28, args);
    argv[n++] = "--center";
    argv[n++] = vm->ep;
    if (keys) {
        argv[n++] = "--keys";
        argv[n++] = keys;
    }
    argv[n] = NULL;
    char *o = NULL, *e = NULL;
    int rc = spm_test_run(argv, 120, &o, &e);
    if (out)
        *out = o;
    else
        free(o);
    if (err)
        *err = e;
    else
        free(e);
    return rc;
}

/*  Submits `synthetic ARGS...` to VM with KEYS; returns the job id. */
static long submit(const vm_t *vm, const char *keys, const char *const *args)
{
    const char *argv[24] = {"submit", "synthetic"};
    spm_test_args(argv, 2, 24, args);
    char *out, *err;
    int rc = spm_at(vm, keys, argv, &out, &err);
    ck_assert_msg(rc == 0, "submit: %s", err);
    long job = atol(out);
    ck_assert_int_gt(job, 0);
    free(out);
    free(err);
    return job;
}

/*  The record of JOB in `spm jobs --json` (copied into BUF), or NULL. */
static const char *record_of(const vm_t *vm, const char *keys, long job, char *buf, size_t size)
{
    const char *args[] = {"jobs", "--json", NULL};
    char *out = NULL;
    if (spm_at(vm, keys, args, &out, NULL) != 0) {
        free(out);
        return NULL;
    }
    char pat[48];
    snprintf(pat, sizeof pat, "{\"job\": %ld, ", job);
    const char *p = strstr(out, pat);
    const char *end = p ? strchr(p, '}') : NULL;
    if (end)
        snprintf(buf, size, "%.*s", (int)(end + 1 - p), p);
    free(out);
    return end ? buf : NULL;
}

/*  Waits up to TIMEOUT_S for JOB's record to hold NEEDLE; returns the
    record (in BUF) or fails the test with the last one. */
static const char *await_record(const vm_t *vm, const char *keys, long job, const char *needle,
                                int timeout_s, char *buf, size_t size)
{
    long long end = forge_now_ms() + timeout_s * 1000LL;
    const char *r = NULL;
    while (forge_now_ms() < end) {
        r = record_of(vm, keys, job, buf, size);
        if (r && strstr(r, needle))
            return r;
        usleep(100000);
    }
    ck_abort_msg("job %ld never had %s: %s", job, needle, r ? r : "(no record)");
    return NULL;
}

/*  Waits up to 30 s until JOB's record says it runs with at least MIN SIs
    committed (the records of running jobs are brought up to date once a
    second). */
static void await_running(const vm_t *vm, const char *keys, long job, double min)
{
    char buf[2048];
    const char *r = NULL;
    for (long long end = forge_now_ms() + 30000; forge_now_ms() < end; usleep(100000)) {
        r = record_of(vm, keys, job, buf, sizeof buf);
        if (r && strstr(r, "\"state\": \"running\"") && spm_test_json_num(r, "committed") >= min)
            return;
    }
    ck_abort_msg("job %ld never ran: %s", job, r ? r : "(no record)");
}

/*  How many times TEXT (may be NULL) holds NEEDLE. */
static int count_in(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/*  The job files in VM's journal (JOB.log, job 0's not counted). */
static int journal_files(const vm_t *vm)
{
    char path[192];
    snprintf(path, sizeof path, "%s/journal", vm->store);
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".log") && strcmp(e->d_name, "0.log") != 0;
    if (d)
        closedir(d);
    return n;
}

START_TEST(submit_with_spm_center_set_reaches_that_center)
{
    vm_t vm;
    vm_start(&vm, NULL, NULL);
    setenv("SPM_CENTER", vm.ep, 1);
    const char *argv[] = {"submit", "synthetic", "--sis", "40", "--work", "fixed:1ms", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(argv, 60, &out, &err) == 0, "%s", err);
    long job = atol(out);
    ck_assert_int_gt(job, 0);
    free(out);
    free(err);
    char js[32], rec[2048];
    snprintf(js, sizeof js, "%ld", job);
    const char *wait[] = {"wait", js, "--quiet", NULL}; /* $SPM_CENTER too */
    ck_assert_msg(spm_test_run(wait, 60, &out, &err) == 0, "%s", err);
    free(out);
    free(err);
    ck_assert(await_record(&vm, NULL, job, "\"state\": \"done\"", 10, rec, sizeof rec));
    ck_assert_msg(strstr(rec, "\"committed\": 40,"), "%s", rec);
    unsetenv("SPM_CENTER");
    center_stop(&vm);
    vm_free(&vm);
}
END_TEST

START_TEST(history_and_wait_outlive_a_kill_of_the_center)
{
    vm_t vm;
    vm_start(&vm, NULL, NULL);
    const char *quick[] = {"--sis", "100", "--work", "fixed:2ms", NULL};
    long a = submit(&vm, NULL, quick);
    char as[32], bs[32];
    snprintf(as, sizeof as, "%ld", a);
    const char *wait_a[] = {"wait", as, "--json", NULL};
    char *out, *out2, *err;
    ck_assert_msg(spm_at(&vm, NULL, wait_a, &out, &err) == 0, "%s", err);
    free(err);
    /* asked again, it answers the same */
    ck_assert_msg(spm_at(&vm, NULL, wait_a, &out2, &err) == 0, "second wait: %s", err);
    ck_assert_double_eq(spm_test_json_num(out, "wall_s"), spm_test_json_num(out2, "wall_s"));
    ck_assert_double_eq(spm_test_json_num(out2, "committed"), 100);
    free(out);
    free(out2);
    free(err);
    const char *slow[] = {"--sis", "800", "--work", "fixed:5ms", NULL};
    long b = submit(&vm, NULL, slow);
    snprintf(bs, sizeof bs, "%ld", b);
    char rec_a[2048], rec[2048];
    await_running(&vm, NULL, b, 1);
    ck_assert(record_of(&vm, NULL, a, rec_a, sizeof rec_a));
    usleep(500000);
    center_kill(&vm);
    sleep(4); /* downtime: not the job's */
    center_start(&vm);
    /* the history is back as it was */
    ck_assert(record_of(&vm, NULL, a, rec, sizeof rec));
    ck_assert_str_eq(rec, rec_a);
    const char *wait_b[] = {"wait", bs, "--json", NULL};
    ck_assert_msg(spm_at(&vm, NULL, wait_b, &out, &err) == 0, "%s", err);
    ck_assert_int_ge(spm_test_json_num(out, "restarts"), 1);
    free(out);
    free(err);
    ck_assert_msg(spm_at(&vm, NULL, wait_a, &out, &err) == 0, "wait after the restart: %s", err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 100);
    free(out);
    free(err);
    /* B ran 800 x 5 ms on two IEUs (about 2 s), and the center was down
       4 s in between: its wall leaves the downtime out */
    await_record(&vm, NULL, b, "\"state\": \"done\"", 10, rec, sizeof rec);
    double wall = spm_test_json_num(rec, "wall_s");
    ck_assert_msg(wall > 1.5 && wall < 12, "wall %.3f s: %s", wall, rec);
    const char *from = strstr(rec, "\"submit\": \""), *to = strstr(rec, "\"end\": \"");
    ck_assert(from && to);
    struct tm t1 = {0}, t2 = {0};
    strptime(from + 11, "%Y-%m-%dT%H:%M:%S", &t1);
    strptime(to + 8, "%Y-%m-%dT%H:%M:%S", &t2);
    double span = difftime(timegm(&t2), timegm(&t1));
    ck_assert_msg(wall <= span - 3, "wall %.3f s counts the downtime (submit to end %.0f s): %s",
                  wall, span, rec);
    center_stop(&vm);
    /* nothing logged twice: A's end by the first center only, B's once */
    char pat[64];
    snprintf(pat, sizeof pat, "job %ld (synthetic) done", a);
    ck_assert_msg(count_in(vm.log[0], pat) == 1 && count_in(vm.log[1], pat) == 0, "%s\n%s",
                  vm.log[0], vm.log[1]);
    snprintf(pat, sizeof pat, "job %ld (synthetic) done", b);
    ck_assert_msg(count_in(vm.log[0], pat) + count_in(vm.log[1], pat) == 1, "%s\n%s", vm.log[0],
                  vm.log[1]);
    vm_free(&vm);
}
END_TEST

/*  GET /metrics of the dashboard on 127.0.0.1:PORT (malloc'd), or NULL. */
static char *metrics(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return NULL;
    }
    const char req[] = "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n";
    ck_assert(write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1));
    char *text = spm_test_slurp(fd);
    close(fd);
    return text;
}

START_TEST(canceled_is_its_own_end_state)
{
    vm_t vm;
    int port = 20000 + (int)((getpid() + 7919) % 20000);
    char http[32];
    snprintf(http, sizeof http, "127.0.0.1:%d", port);
    const char *extra[] = {"--http", http, NULL};
    vm_start(&vm, NULL, extra);
    const char *slow[] = {"--sis", "100000", "--work", "fixed:5ms", NULL};
    long job = submit(&vm, NULL, slow);
    char js[32];
    snprintf(js, sizeof js, "%ld", job);
    await_running(&vm, NULL, job, 1);
    const char *cancel[] = {"cancel", js, NULL};
    ck_assert_int_eq(spm_at(&vm, NULL, cancel, NULL, NULL), 0);
    const char *wait[] = {"wait", js, "--quiet", NULL};
    char *out, *err;
    ck_assert_int_eq(spm_at(&vm, NULL, wait, &out, &err), 3);
    ck_assert_msg(strstr(err, "canceled") && spm_test_lines(err) == 1, "%s", err);
    free(out);
    free(err);
    const char *jobs[] = {"jobs", "--state", "canceled", NULL};
    ck_assert_int_eq(spm_at(&vm, NULL, jobs, &out, NULL), 0);
    ck_assert_msg(strstr(out, "canceled") && strstr(out, js), "%s", out);
    free(out);
    const char *st[] = {"status", "--json", NULL};
    ck_assert_int_eq(spm_at(&vm, NULL, st, &out, NULL), 0);
    ck_assert_msg(strstr(out, "\"state\": \"canceled\""), "%s", out);
    free(out);
    char *m = NULL;
    for (int tries = 0; tries < 30; tries++) { /* the page is rebuilt every tick */
        free(m);
        m = metrics(port);
        if (m && strstr(m, "spm_jobs_ended_total{state=\"canceled\"} 1"))
            break;
        usleep(200000);
    }
    ck_assert_msg(m && strstr(m, "spm_jobs_ended_total{state=\"canceled\"} 1") &&
                      strstr(m, "spm_jobs_ended_total{state=\"failed\"} 0"),
                  "%s", m ? m : "(no answer)");
    free(m);
    center_stop(&vm);
    vm_free(&vm);
}
END_TEST

/*  Key directories: KEYS (the center's: center, agent, client authorized),
    MALLORY (another authorized client) and OPS (an operator's client). */
static void make_keys(char *keys, char *mallory, char *ops, size_t size)
{
    snprintf(keys, size, "%s/keys", base);
    snprintf(mallory, size, "%s/mallory", base);
    snprintf(ops, size, "%s/ops", base);
    const char *const gens[][8] = {
        {"keygen", "--keys", keys, "--name", "center", NULL},
        {"keygen", "--keys", keys, "--name", "agent", "--authorize", NULL},
        {"keygen", "--keys", keys, "--name", "client", "--authorize", NULL},
        {"keygen", "--keys", mallory, "--name", "client", NULL},
        {"keygen", "--keys", ops, "--name", "client", NULL},
    };
    for (size_t i = 0; i < sizeof gens / sizeof *gens; i++) {
        char *err;
        ck_assert_msg(spm_test_run(gens[i], 10, NULL, &err) == 0, "keygen: %s", err);
        free(err);
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cp %s/client.pub %s/authorized/mallory.pub && cp %s/center.pub %s/ && "
             "mkdir -p %s/authorized/operators && cp %s/client.pub %s/authorized/ops.pub && "
             "cp %s/client.pub %s/authorized/operators/ops.pub && cp %s/center.pub %s/",
             mallory, keys, keys, mallory, keys, ops, keys, ops, keys, keys, ops);
    ck_assert_int_eq(system(cmd), 0);
}

/*  Sends a Cancel of JOB from F; returns the Ack's status. */
static int forged_cancel(forge_t *f, uint64_t job)
{
    Spm__Cancel c = SPM__CANCEL__INIT;
    c.job = job;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_CANCEL;
    env.cancel = &c;
    Spm__Envelope *r = forge_ask(f, &env, SPM__ENVELOPE__BODY_ACK, 10000);
    ck_assert(r);
    int status = r->ack->status;
    spm__envelope__free_unpacked(r, NULL);
    return status;
}

/*  Sends a Discard of jobs 1..40 and puts 1..200 from F; returns the Ack's status. */
static int forged_discard(forge_t *f)
{
    uint64_t jobs[40], sdbs[200];
    for (int i = 0; i < 40; i++)
        jobs[i] = (uint64_t)i + 1;
    for (int i = 0; i < 200; i++)
        sdbs[i] = (uint64_t)i + 1;
    Spm__Discard d = SPM__DISCARD__INIT;
    d.jobs = jobs;
    d.n_jobs = 40;
    d.sdbs = sdbs;
    d.n_sdbs = 200;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_DISCARD;
    env.discard = &d;
    Spm__Envelope *r = forge_ask(f, &env, SPM__ENVELOPE__BODY_ACK, 10000);
    ck_assert(r);
    int status = r->ack->status;
    spm__envelope__free_unpacked(r, NULL);
    return status;
}

/*  Sends a Get of the newest version of SDB from F; returns the reply's status. */
static int forged_get(forge_t *f, uint64_t sdb)
{
    Spm__Get g = SPM__GET__INIT;
    g.req = 1;
    g.sdb = sdb;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_GET;
    env.get = &g;
    Spm__Envelope *r = forge_ask(f, &env, SPM__ENVELOPE__BODY_GET_REPLY, 10000);
    ck_assert(r);
    int status = r->get_reply->status;
    spm__envelope__free_unpacked(r, NULL);
    return status;
}

START_TEST(another_key_cannot_cancel_discard_or_fetch_a_job)
{
    char keys[128], mallory[128], ops[128];
    make_keys(keys, mallory, ops, sizeof keys);
    vm_t vm;
    vm_start(&vm, keys, NULL);
    /* the owner's job, submitted: its blocks stay until it is waited for */
    const char *work[] = {"--sis", "200", "--work", "fixed:10ms", "--bytes", "4096", NULL};
    long job = submit(&vm, keys, work);
    char js[32], rec[2048];
    snprintf(js, sizeof js, "%ld", job);
    await_running(&vm, keys, job, 1);
    ck_assert(record_of(&vm, keys, job, rec, sizeof rec));
    ck_assert_msg(strstr(rec, "\"owner\": \"client\""), "%s", rec);
    forge_t f;
    forge_open(&f, vm.ep, mallory);
    ck_assert_int_eq(forged_cancel(&f, (uint64_t)job), SPM_EDENIED);
    ck_assert_int_eq(forged_discard(&f), SPM_EDENIED);
    const char *cancel[] = {"cancel", js, NULL};
    char *out, *err;
    ck_assert_int_eq(spm_at(&vm, mallory, cancel, &out, &err), 1);
    ck_assert_msg(strstr(err, "not yours") && strstr(err, "'client'"), "%s", err);
    free(out);
    free(err);
    await_record(&vm, keys, job, "\"state\": \"done\"", 60, rec, sizeof rec);
    /* ended: still not another key's to discard or fetch; the owner's */
    ck_assert_int_eq(forged_discard(&f), SPM_EDENIED);
    uint64_t sdb = (uint64_t)job << 32 | 1;
    ck_assert_int_eq(forged_get(&f, sdb), SPM_EDENIED);
    forge_close(&f);
    forge_t owner;
    forge_open(&owner, vm.ep, keys);
    ck_assert_int_eq(forged_get(&owner, sdb), 0);
    forge_close(&owner);
    const char *wait[] = {"wait", js, "--json", NULL};
    ck_assert_int_eq(spm_at(&vm, mallory, wait, NULL, NULL), 1);
    ck_assert_int_eq(spm_at(&vm, keys, wait, &out, &err), 0);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 200);
    free(out);
    free(err);
    /* an operator's key may cancel anyone's job */
    const char *slow[] = {"--sis", "100000", "--work", "fixed:5ms", NULL};
    long other = submit(&vm, keys, slow);
    snprintf(js, sizeof js, "%ld", other);
    ck_assert_int_eq(spm_at(&vm, mallory, cancel, NULL, NULL), 1);
    ck_assert_int_eq(spm_at(&vm, ops, cancel, NULL, NULL), 0);
    await_record(&vm, keys, other, "\"state\": \"canceled\"", 20, rec, sizeof rec);
    center_stop(&vm);
    vm_free(&vm);
}
END_TEST

START_TEST(abandoned_job_is_canceled_and_its_blocks_freed)
{
    vm_t vm;
    const char *extra[] = {"--abandon-s", "2", NULL};
    vm_start(&vm, NULL, extra);
    const char *job[] = {"run",    "synthetic", "--center", vm.ep,  "--sis",   "100000",
                         "--work", "fixed:5ms", "--bytes",  "1024", "--quiet", NULL};
    spm_test_proc_t client = spm_test_start(job);
    char rec[2048];
    await_running(&vm, NULL, 1, 1);
    kill(client.pid, SIGKILL); /* its client is gone: nobody will fetch what it makes */
    spm_test_finish(&client, 10, NULL, NULL);
    await_record(&vm, NULL, 1, "\"freed\": true", 30, rec, sizeof rec);
    ck_assert_msg(strstr(rec, "\"state\": \"canceled\"") && strstr(rec, "abandoned"), "%s", rec);
    ck_assert_int_eq(journal_files(&vm), 0);
    center_stop(&vm);
    vm_free(&vm);
}
END_TEST

START_TEST(submitted_jobs_leave_nothing_once_waited_for)
{
    vm_t vm;
    vm_start(&vm, NULL, NULL);
    const char *work[] = {"--sis", "40", "--work", "fixed:0", "--bytes", "1024", NULL};
    long first = 0;
    for (int i = 0; i < 50; i++) {
        long job = submit(&vm, NULL, work);
        first = first ? first : job;
        char js[32];
        snprintf(js, sizeof js, "%ld", job);
        const char *wait[] = {"wait", js, "--quiet", NULL};
        char *err;
        ck_assert_msg(spm_at(&vm, NULL, wait, NULL, &err) == 0, "%s", err);
        free(err);
    }
    char rec[2048];
    await_record(&vm, NULL, first + 49, "\"freed\": true", 10, rec, sizeof rec);
    ck_assert_int_eq(journal_files(&vm), 0);
    const char *st[] = {"status", "--json", NULL};
    char *out;
    double versions = -1;
    for (int tries = 0; tries < 50 && versions != 0; tries++) { /* drops go each turn */
        ck_assert_int_eq(spm_at(&vm, NULL, st, &out, NULL), 0);
        versions = spm_test_json_num(strstr(out, "\"blocks\""), "versions");
        free(out);
        usleep(100000);
    }
    ck_assert_msg(versions == 0, "%.0f versions stay", versions);
    /* the records stay: spm wait may be asked again */
    char js[32];
    snprintf(js, sizeof js, "%ld", first);
    const char *wait[] = {"wait", js, "--json", NULL};
    ck_assert_int_eq(spm_at(&vm, NULL, wait, &out, NULL), 0);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 40);
    free(out);
    /* a job nobody waits for has its blocks freed after center.keep_results_s */
    center_stop(&vm);
    vm.extra[0] = "--keep-results-s";
    vm.extra[1] = "2";
    center_start(&vm);
    agent_start(&vm);
    long lone = submit(&vm, NULL, work);
    await_record(&vm, NULL, lone, "\"state\": \"done\"", 30, rec, sizeof rec);
    ck_assert_msg(strstr(rec, "\"freed\": false"), "%s", rec);
    await_record(&vm, NULL, lone, "\"freed\": true", 20, rec, sizeof rec);
    ck_assert_int_eq(journal_files(&vm), 0);
    center_stop(&vm);
    vm_free(&vm);
}
END_TEST

/*  Cuts the file PATH to PERCENT of its size. Returns the bytes cut. */
static long cut_file(const char *path, int percent)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    off_t keep = st.st_size * percent / 100;
    ck_assert_int_eq(truncate(path, keep), 0);
    return (long)(st.st_size - keep);
}

START_TEST(cut_journal_resumes_what_it_can_and_fails_the_rest_in_one_line)
{
    /* A matmul whose products are added into C as they commit (a chain of
       versions of each C block, older ones deleted as garbage), the center
       killed mid-job, and the job's journal cut: the last 3%, then half.
       Either the job finishes with the undisturbed result, or it fails in
       one line saying how much of its journal was lost; never into an SI
       that finds its block gone. */
    const int percents[] = {97, 50};
    for (int round = 0; round < 2; round++) {
        chaos_job_t mm;
        chaos_matmul(&mm, base, 512, 11, "update", "syn");
        const char *want[CHAOS_MAX_ARGS], *got[CHAOS_MAX_ARGS];
        char wbuf[CHAOS_MAX_ARGS][256], gbuf[CHAOS_MAX_ARGS][256];
        int n = 0;
        for (; mm.args[n]; n++) {
            want[n] = chaos_arg(mm.args[n], base, "want", wbuf[n], sizeof wbuf[n]);
            got[n] = chaos_arg(mm.args[n], base, "got", gbuf[n], sizeof gbuf[n]);
        }
        want[n] = "--ieus", want[n + 1] = "2", want[n + 2] = "--quiet", want[n + 3] = NULL;
        char *out, *err;
        ck_assert_msg(spm_test_run(want, 120, &out, &err) == 0, "undisturbed: %s", err);
        free(out);
        free(err);
        vm_t vm;
        vm_start(&vm, NULL, NULL);
        got[n] = "--center", got[n + 1] = vm.ep, got[n + 2] = "--quiet", got[n + 3] = NULL;
        spm_test_proc_t client = spm_test_start(got);
        /* killed by the live count of `spm status` (records lag by up to a second) */
        double done = -1;
        for (long long end = forge_now_ms() + 60000; forge_now_ms() < end && done < 3000;) {
            chaos_vm_t cv = {0};
            snprintf(cv.ep, sizeof cv.ep, "%s", vm.ep);
            char *st = chaos_status(&cv), entry[1024];
            const char *e = chaos_status_job(st, "matmul", entry, sizeof entry);
            done =
                e && strstr(e, "\"state\": \"running\"") ? spm_test_json_num(e, "committed") : -1;
            free(st);
            usleep(20000);
        }
        ck_assert_msg(done >= 3000, "the matmul was not seen running");
        center_kill(&vm);
        char path[256];
        snprintf(path, sizeof path, "%s/journal/1.log", vm.store);
        long lost = cut_file(path, percents[round]);
        center_start(&vm);
        int rc = spm_test_finish(&client, 120, &out, &err);
        if (rc == 0) {
            ck_assert_msg(chaos_same_file(wbuf[12], gbuf[12]), "cut %d%%: C differs",
                          percents[round]);
        } else {
            ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, "journal was cut") &&
                              !strstr(err, "in the VM"),
                          "cut %d%% (%ld bytes): %s", percents[round], lost, err);
        }
        free(out);
        free(err);
        char rec[2048];
        await_record(&vm, NULL, 1, rc == 0 ? "\"state\": \"done\"" : "\"state\": \"failed\"", 20,
                     rec, sizeof rec);
        center_stop(&vm);
        vm_free(&vm);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf %s/store %s/cache", base, base);
        ck_assert_int_eq(system(cmd), 0);
    }
}
END_TEST

static Suite *jobs_suite(void)
{
    Suite *s = suite_create("jobs");
    const spm_test_case_t c = {
        .timeout_s = 180, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD(s, &c, submit_with_spm_center_set_reaches_that_center);
    SPM_TEST_ADD(s, &c, history_and_wait_outlive_a_kill_of_the_center);
    SPM_TEST_ADD(s, &c, canceled_is_its_own_end_state);
    SPM_TEST_ADD(s, &c, another_key_cannot_cancel_discard_or_fetch_a_job);
    SPM_TEST_ADD(s, &c, abandoned_job_is_canceled_and_its_blocks_freed);
    SPM_TEST_ADD(s, &c, submitted_jobs_leave_nothing_once_waited_for);
    SPM_TEST_ADD(s, &c, cut_journal_resumes_what_it_can_and_fails_the_rest_in_one_line);
    return s;
}

SPM_TEST_MAIN(jobs_suite)
