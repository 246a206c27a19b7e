/*  A VM across three hosts: network namespaces made for this test, joined
    by veth links to a bridge in a fourth namespace (10.77.0.0/24, nothing
    outside them is reached). The center runs on one host, an agent on each
    of the two others, all over CurveZMQ TCP. A data job gives the same
    result as on one machine; then one node's link is cut in the middle of a
    job, and the job still completes with the same result. Skipped, with a
    message, where namespaces cannot be made (not root, no iproute2). */
#include "tests/check_main.h"
#include "tests/spm_test.h"

#include <stdarg.h>

static char tag[16]; /* unique namespace prefix for this run */
static char dir[64]; /* scratch directory */
static int have_net; /* the namespaces exist */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

static void net_down(void)
{
    for (int i = 0; i < 4; i++)
        sh("ip netns del %s%d 2>/dev/null", tag, i);
}

/*  Hosts 1..3 at 10.77.0.1..3, each with a veth into the bridge host 0. */
static int net_up(void)
{
    snprintf(tag, sizeof tag, "spm%d-", (int)(getpid() % 100000));
    if (sh("ip netns add %s0 2>/dev/null", tag) != 0)
        return 0;
    int ok = sh("ip -n %s0 link add br0 type bridge && ip -n %s0 link set br0 up", tag, tag) == 0;
    for (int i = 1; ok && i <= 3; i++)
        ok = sh("ip netns add %s%d && "
                "ip -n %s0 link add h%d type veth peer name eth0 netns %s%d && "
                "ip -n %s0 link set h%d master br0 && ip -n %s0 link set h%d up && "
                "ip -n %s%d addr add 10.77.0.%d/24 dev eth0 && ip -n %s%d link set eth0 up && "
                "ip -n %s%d link set lo up",
                tag, i, tag, i, tag, i, tag, i, tag, i, tag, i, i, tag, i, tag, i) == 0;
    if (!ok)
        net_down();
    return ok;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
    have_net = net_up();
}

static void teardown(void)
{
    if (have_net)
        net_down();
    sh("rm -rf %s", dir);
}

/*  Starts `ip netns exec HOST spm ARGS...`. */
static spm_test_proc_t on_host(int host, const char *const *args)
{
    char ns[32];
    snprintf(ns, sizeof ns, "%s%d", tag, host);
    return spm_test_start_in(ns, args);
}

START_TEST(job_across_three_hosts_survives_a_cut_link)
{
    if (!have_net) {
        printf("multihost: skipped: cannot create network namespaces here (needs root and "
               "iproute2)\n");
        return;
    }
    char keys[128], store[128], c1[128], c2[128];
    snprintf(keys, sizeof keys, "%s/keys", dir);
    const char *names[] = {"center", "agent", "client"};
    for (int i = 0; i < 3; i++) {
        const char *kg[] = {"keygen", "--keys", keys, "--name", names[i], "--authorize", NULL};
        ck_assert_int_eq(spm_test_run(kg, 10, NULL, NULL), 0);
    }
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(c1, sizeof c1, "%s/c1", dir);
    snprintf(c2, sizeof c2, "%s/c2", dir);
    const char *center[] = {
        "center",    "--listen", "tcp://10.77.0.1:7700", "--store", store, "--keys", keys,
        "--dead-ms", "1500",     "--log-level",          "error",   NULL};
    spm_test_proc_t pc = on_host(1, center);
    usleep(300000);
    const char *a1[] = {"agent",
                        "--center",
                        "tcp://10.77.0.1:7700",
                        "--keys",
                        keys,
                        "--ieus",
                        "1",
                        "--cache-dir",
                        c1,
                        "--data-listen",
                        "tcp://10.77.0.2:7701",
                        NULL};
    const char *a2[] = {"agent",
                        "--center",
                        "tcp://10.77.0.1:7700",
                        "--keys",
                        keys,
                        "--ieus",
                        "1",
                        "--cache-dir",
                        c2,
                        "--data-listen",
                        "tcp://10.77.0.3:7701",
                        NULL};
    spm_test_proc_t pa1 = on_host(2, a1), pa2 = on_host(3, a2);
    usleep(600000);
    /* the reference: the same job on one machine */
    const char *ref[] = {"run",   "synthetic", "--sis",   "160",    "--sfs", "4", "--bytes",
                         "32768", "--work",    "fixed:0", "--ieus", "1",     NULL};
    char *want, *err;
    ck_assert_int_eq(spm_test_run(ref, 60, &want, &err), 0);
    free(err);
    char *sum = strstr(want, "checksum");
    ck_assert_ptr_nonnull(sum);
    const char *job[] = {"run",    "synthetic", "--center", "tcp://10.77.0.1:7700",
                         "--keys", keys,        "--sis",    "160",
                         "--sfs",  "4",         "--bytes",  "32768",
                         "--work", "fixed:0",   NULL};
    spm_test_proc_t pj = on_host(1, job);
    char *out;
    int rc = spm_test_finish(&pj, 60, &out, &err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_msg(strstr(out, sum) != NULL, "different result: %s vs %s", out, sum);
    ck_assert_msg(strstr(out, " 0 level-2 hits") == NULL, "no block crossed hosts: %s", out);
    free(out);
    free(err);
    /* a slower job; host 3's link goes down in the middle */
    const char *slow[] = {"run",    "synthetic",  "--center", "tcp://10.77.0.1:7700",
                          "--keys", keys,         "--sis",    "160",
                          "--sfs",  "4",          "--bytes",  "32768",
                          "--work", "fixed:20ms", NULL};
    pj = on_host(1, slow);
    usleep(900000);
    ck_assert_int_eq(sh("ip -n %s0 link set h3 down", tag), 0);
    rc = spm_test_finish(&pj, 90, &out, &err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_msg(strstr(out, sum) != NULL, "different result after the cut: %s", out);
    free(out);
    free(err);
    free(want);
    kill(pa2.pid, SIGKILL);
    spm_test_finish(&pa2, 10, NULL, NULL);
    kill(pc.pid, SIGTERM);
    spm_test_finish(&pc, 15, NULL, NULL);
    spm_test_finish(&pa1, 20, NULL, NULL);
}
END_TEST

static Suite *multihost_suite(void)
{
    Suite *s = suite_create("multihost");
    TCase *tc = tcase_create("namespaces");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, job_across_three_hosts_survives_a_cut_link);
    suite_add_tcase(s, tc);
    return s;
}

SPM_TEST_MAIN(multihost_suite)
