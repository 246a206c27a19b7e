/*  Integration tests of plugins: programs built out of tree as shared
    objects (tests/plugins/, examples/), sent with `spm run --plugin` to
    embedded VMs and to a center with two agents, all real processes. The
    examples are checked against plain sequential computations
    (tests/ref/examples_ref.h); bad objects, refused keys, an SI body that
    kills its IEUs and a super-function that crashes its job's host each
    end in one line. The plugins are built by `make tests` into $SPM_PLUGINS. */
#include "tests/check_main.h"
#include "tests/ref/examples_ref.h"
#include "tests/spm_test.h"

#include <math.h>
#include <sys/time.h>

/*  Runs ARGV; it must fail with exit status 1 in one line holding WANT. */
static void fails_in_one_line(const char *const *argv, const char *want)
{
    char *out, *err;
    int rc = spm_test_run(argv, 60, &out, &err);
    ck_assert_msg(rc == 1, "exit %d: %s%s", rc, out, err);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, want), "want one line with '%s': %s",
                  want, err);
    fprintf(stderr, "  %s", err);
    free(out);
    free(err);
}

/*  Runs ARGV to success and returns its stdout (malloc'd). */
static char *succeeds(const char *const *argv, int timeout_s)
{
    char *out, *err;
    int rc = spm_test_run(argv, timeout_s, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s%s", rc, out, err);
    free(err);
    return out;
}

/* ------------------------------------------------------------ examples */

#define MC_ARGS "montecarlo", "--samples", "3000000", "--blocks", "37", "--seed", "5"
#define KM_ARGS                                                                                    \
    "kmeans", "--points", "30000", "--dims", "3", "--k", "5", "--block", "1700", "--max-iter",     \
        "80", "--tol", "1e-9", "--seed", "3", "--digits", "17"

/*  The montecarlo result TEXT against the sequential count. */
static void check_montecarlo(const char *text)
{
    double pi;
    uint64_t samples, hits, want;
    ck_assert_msg(ref_montecarlo_parse(text, &pi, &samples, &hits) == 0, "%s", text);
    ck_assert_int_eq(ref_montecarlo(3000000, 37, 5, &want), 0);
    ck_assert_uint_eq(samples, 3000000);
    ck_assert_uint_eq(hits, want);
    ck_assert(pi > 3.13 && pi < 3.15);
}

/*  The kmeans result TEXT against plain sequential k-means: the same
    iterations and counts, centres within 1e-9 (the VM sums per block, in
    block order; the reference point by point). */
static void check_kmeans(const char *text)
{
    enum { K = 5, D = 3 };
    double got[K * D], want[K * D];
    uint64_t gcount[K], wcount[K];
    uint32_t giter, witer;
    ck_assert_msg(ref_kmeans_parse(text, K, D, &giter, got, gcount) == 0, "%s", text);
    ck_assert_int_eq(ref_kmeans(30000, D, K, 80, 1e-9, 3, want, wcount, &witer, NULL), 0);
    ck_assert_uint_eq(giter, witer);
    ck_assert(witer > 2); /* centres that moved: a run with dependences between stages */
    for (int c = 0; c < K; c++) {
        ck_assert_uint_eq(gcount[c], wcount[c]);
        for (int d = 0; d < D; d++)
            ck_assert_msg(
                fabs(got[c * D + d] - want[c * D + d]) <= 1e-9 * (1 + fabs(want[c * D + d])),
                "centre %d, dim %d: %.17g against %.17g", c, d, got[c * D + d], want[c * D + d]);
    }
}

/*  Both examples as plugins on an embedded VM, then on a center with two
    agents (one reading through its node cache): their results agree with
    plain sequential computations, and are the same bytes on both VMs. */
START_TEST(examples_against_sequential_references)
{
    const char *mc[] = {
        "run", "--plugin", spm_test_plugin("montecarlo"), "--ieus", "2", "--quiet", MC_ARGS, NULL};
    char *mc_embedded = succeeds(mc, 120);
    check_montecarlo(mc_embedded);
    const char *km[] = {"run",   "--plugin", spm_test_plugin("kmeans"), "--ieus", "2", "--quiet",
                        KM_ARGS, NULL};
    char *km_embedded = succeeds(km, 120);
    check_kmeans(km_embedded);

    setenv("SPM_ALLOW_PLUGINS", "yes", 1);
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    const char *cached[] = {"--no-store-reads", NULL};
    spm_test_vm_agent(&vm, "1", NULL);
    spm_test_vm_agent(&vm, "1", cached);
    usleep(300000);
    const char *mc2[] = {"run",      "--plugin", spm_test_plugin("montecarlo"),
                         "--center", vm.ep,      "--quiet",
                         MC_ARGS,    NULL};
    char *out = succeeds(mc2, 120);
    ck_assert_str_eq(out, mc_embedded);
    free(out);
    const char *km2[] = {
        "run", "--plugin", spm_test_plugin("kmeans"), "--center", vm.ep, "--quiet", KM_ARGS, NULL};
    out = succeeds(km2, 120);
    ck_assert_str_eq(out, km_embedded);
    free(out);
    /* a bad argument: the program's own line */
    const char *bad[] = {
        "run", "--plugin", spm_test_plugin("kmeans"), "--center", vm.ep, "--quiet", "kmeans", "--k",
        "0",   NULL};
    fails_in_one_line(bad, "--k");
    spm_test_vm_stop(&vm);
    fprintf(stderr, "  %s  %.*s\n", mc_embedded, (int)strcspn(km_embedded, "\n"), km_embedded);
    free(mc_embedded);
    free(km_embedded);
}
END_TEST

/*  What a programmer does with an installed spm: the header and spm.pc
    where `make install` puts them, then `make -C examples` (pkg-config
    --cflags --libs spm), from a copy of examples/ outside the tree; the
    object it builds runs. */
START_TEST(examples_build_out_of_tree_with_pkg_config)
{
    const char *src = getenv("SPM_SOURCE_DIR");
    if (!src || !*src || system("command -v pkg-config >/dev/null") != 0) {
        fprintf(stderr, "  skipped: needs SPM_SOURCE_DIR (make check sets it) and pkg-config\n");
        return;
    }
    char dir[64], cmd[2048];
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "set -e; mkdir -p %s/include/spm %s/lib/pkgconfig; cp %s/include/spm/*.h "
             "%s/include/spm/; "
             "sed 's|@PREFIX@|%s|' %s/conf/spm.pc.in > %s/lib/pkgconfig/spm.pc; "
             "cp -r %s/examples %s/examples; rm -f %s/examples/*/*.so; "
             "PKG_CONFIG_PATH=%s/lib/pkgconfig make -s -C %s/examples >%s/make.log 2>&1 || "
             "{ cat %s/make.log >&2; exit 1; }",
             dir, dir, src, dir, dir, src, dir, src, dir, dir, dir, dir, dir, dir);
    ck_assert_msg(system(cmd) == 0, "building the examples against spm.pc failed");
    char lib[128];
    snprintf(lib, sizeof lib, "%s/examples/montecarlo/libmontecarlo.so", dir);
    const char *mc[] = {"run", "--plugin", lib, "--ieus", "2", "--quiet", MC_ARGS, NULL};
    char *out = succeeds(mc, 120);
    check_montecarlo(out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ------------------------------------------------------- side by side */

/*  Two builds of one program (the same program, opcode and type names)
    submitted to one center at once: each job runs its own code only. The
    IEUs read through their node cache (--no-store-reads), so each plugin
    comes to them as a block from the center, once per node. */
START_TEST(two_versions_run_side_by_side)
{
    setenv("SPM_ALLOW_PLUGINS", "yes", 1);
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    const char *cached[] = {"--no-store-reads", NULL};
    spm_test_vm_agent(&vm, "2", cached);
    const char *v1[] = {"run",      "--plugin", spm_test_plugin("version"),
                        "--center", vm.ep,      "--quiet",
                        "version",  "200",      NULL};
    const char *v2[] = {"run",      "--plugin", spm_test_plugin("version2"),
                        "--center", vm.ep,      "--quiet",
                        "version",  "200",      NULL};
    spm_test_proc_t a = spm_test_start(v1), b = spm_test_start(v2);
    char *oa, *ob, *ea, *eb;
    int ra = spm_test_finish(&a, 120, &oa, &ea), rb = spm_test_finish(&b, 120, &ob, &eb);
    ck_assert_msg(ra == 0 && rb == 0, "exit %d, %d: %s%s", ra, rb, ea, eb);
    ck_assert_str_eq(oa, "version 1: 200 SIs, 0 from another version\n");
    ck_assert_str_eq(ob, "version 2: 200 SIs, 0 from another version\n");
    free(oa), free(ob), free(ea), free(eb);
    spm_test_vm_stop(&vm);
}
END_TEST

/* ----------------------------------------------------------- bad input */

/*  Objects that must not be loaded: each is refused in one line, before
    any of its code runs (each one's constructor would crash). */
START_TEST(bad_objects_are_refused_in_one_line)
{
    char dir[64], trunc[128], text[128];
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
    /* a whole plugin cut short */
    snprintf(trunc, sizeof trunc, "%s/libcut.so", dir);
    FILE *in = fopen(spm_test_plugin("version"), "rb"), *out = fopen(trunc, "wb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    snprintf(text, sizeof text, "%s/libtext.so", dir);
    out = fopen(text, "w");
    fputs("not an object\n", out);
    fclose(out);

    const char *abi[] = {"run", "--plugin", spm_test_plugin("bad_abi"), "--quiet", "x", NULL};
    fails_in_one_line(abi, "ABI version 99; this spm has version 1");
    const char *mark[] = {"run", "--plugin", spm_test_plugin("no_mark"), "--quiet", "x", NULL};
    fails_in_one_line(mark, "no SPM_PLUGIN mark");
    const char *cut[] = {"run", "--plugin", trunc, "--quiet", "x", NULL};
    fails_in_one_line(cut, "truncated");
    const char *txt[] = {"run", "--plugin", text, "--quiet", "x", NULL};
    fails_in_one_line(txt, "not an ELF object");
    /* These two pass the client's check: the center refuses them. */
    const char *sym[] = {"run",     "--plugin", spm_test_plugin("missing_symbol"),
                         "--quiet", "x",        NULL};
    fails_in_one_line(sym, "undefined symbol: spm_no_such_function");
    const char *prog[] = {"run", "--plugin", spm_test_plugin("version"), "--quiet", "nosuch", NULL};
    fails_in_one_line(prog, "no program 'nosuch' (it has: version)");
    const char *usage[] = {"run", "--plugin", spm_test_plugin("version"), NULL};
    char *o, *e;
    ck_assert_int_eq(spm_test_run(usage, 30, &o, &e), 2);
    free(o), free(e);
    snprintf(buf, sizeof buf, "rm -rf %s", dir);
    ck_assert_int_eq(system(buf), 0);
}
END_TEST

static void keygen(const char *keys, const char *name, const char *flag)
{
    const char *argv[] = {"keygen", "--keys", keys, "--name", name, flag, NULL};
    ck_assert_int_eq(spm_test_run(argv, 10, NULL, NULL), 0);
}

/*  A tcp:// center takes no plugins by default; with keys, only from the
    keys in authorized/plugins/; each refusal is one line naming the
    setting, and nothing of the plugin runs. */
START_TEST(who_may_send_plugins)
{
    char dir[64], keys[128], store[128], store2[128], ep[64], cache[128];
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
    snprintf(keys, sizeof keys, "%s/keys", dir);
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(store2, sizeof store2, "%s/store2", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    keygen(keys, "center", NULL);
    keygen(keys, "agent", "--authorize");
    keygen(keys, "client", "--authorize");
    srand((unsigned)getpid());
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", 20000 + rand() % 20000);

    /* the default on tcp://: no */
    const char *center[] = {"center", "--listen",    ep,      "--store", store, "--keys",
                            keys,     "--log-level", "error", NULL};
    spm_test_proc_t c = spm_test_start(center);
    usleep(300000);
    const char *run[] = {"run",      "--plugin", spm_test_plugin("crash_si"),
                         "--center", ep,         "--keys",
                         keys,       "--quiet",  "crash_si",
                         NULL};
    fails_in_one_line(run, "center.allow_plugins is no");
    kill(c.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&c, 30, NULL, NULL), 0);

    /* keys: this client is not listed, then it is */
    setenv("SPM_ALLOW_PLUGINS", "keys", 1);
    center[4] = store2;
    c = spm_test_start(center);
    const char *agent[] = {"agent", "--center",    ep,    "--keys",      keys,    "--ieus",
                           "1",     "--cache-dir", cache, "--log-level", "error", NULL};
    spm_test_proc_t a = spm_test_start(agent);
    usleep(300000);
    fails_in_one_line(run, "not in authorized/plugins/");
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/authorized/plugins && cp %s/client.pub %s/authorized/plugins/", keys,
             keys, keys);
    ck_assert_int_eq(system(cmd), 0);
    const char *ok[] = {"run",      "--plugin", spm_test_plugin("version"),
                        "--center", ep,         "--keys",
                        keys,       "--quiet",  "version",
                        "10",       NULL};
    char *out = succeeds(ok, 60);
    ck_assert_str_eq(out, "version 1: 10 SIs, 0 from another version\n");
    free(out);
    kill(c.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&c, 30, NULL, NULL), 0);
    spm_test_finish(&a, 60, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ------------------------------------------------------------- crashes */

/*  An SI body that kills its IEU: the SI is re-issued to IEUs the agent
    starts again, then the job fails in one line; the VM goes on. */
START_TEST(an_si_that_crashes_fails_its_job_not_the_vm)
{
    spm_test_crash_quietly();
    setenv("SPM_ALLOW_PLUGINS", "yes", 1);
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    spm_test_vm_agent(&vm, "2", NULL);
    const char *crash[] = {"run",      "--plugin", spm_test_plugin("crash_si"),
                           "--center", vm.ep,      "--quiet",
                           "crash_si", NULL};
    fails_in_one_line(crash, "may be what kills them");
    const char *ok[] = {"run",      "--plugin", spm_test_plugin("version"),
                        "--center", vm.ep,      "--quiet",
                        "version",  "20",       NULL};
    char *out = succeeds(ok, 60);
    ck_assert_str_eq(out, "version 1: 20 SIs, 0 from another version\n");
    free(out);
    ck_assert(spm_test_running(vm.agents[0].pid));
    spm_test_vm_stop(&vm);
}
END_TEST

/*  A super-function that crashes: it runs in its job's host, not in the
    center, so its job fails in one line naming the callback and the
    center goes on. Then the center is killed (SIGKILL) while a plugin's
    job and a built-in one run, and started again on its store: both are
    resumed (the plugin's in a new host, given the journal's events again)
    and finish with the results they would have had: kmeans's, cut in
    the middle of its iterations, is the same text as a run never cut. */
START_TEST(a_super_function_that_crashes_fails_its_job_not_the_center)
{
    spm_test_crash_quietly();
    setenv("SPM_ALLOW_PLUGINS", "yes", 1);
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    spm_test_vm_agent(&vm, "2", NULL);
    const char *crash[] = {"run",      "--plugin", spm_test_plugin("crash_sf"),
                           "--center", vm.ep,      "--quiet",
                           "crash_sf", NULL};
    fails_in_one_line(crash, "super-function crash.sf.root of program crash_sf crashed in commit "
                             "(SIGSEGV)");
    ck_assert(spm_test_running(vm.center.pid));
    const char *other[] = {"submit", "synthetic", "--center",  vm.ep,     "--sis",
                           "300",    "--work",    "fixed:5ms", "--sleep", NULL};
    char *job1 = succeeds(other, 30);
    const char *plug[] = {"submit",   "--plugin", spm_test_plugin("version"),
                          "--center", vm.ep,      "version",
                          "300",      NULL};
    char *job2 = succeeds(plug, 30);
    /* long enough (80 iterations of 118 blocks) to be cut by the kill */
#define KM_BIG                                                                                     \
    "kmeans", "--points", "200000", "--dims", "3", "--k", "5", "--block", "1700", "--max-iter",    \
        "80", "--tol", "1e-9", "--seed", "3", "--digits", "17"
    const char *fresh[] = {"run",  "--plugin", spm_test_plugin("kmeans"), "--ieus", "2", "--quiet",
                           KM_BIG, NULL};
    char *want = succeeds(fresh, 120);
    const char *km[] = {"submit", "--plugin", spm_test_plugin("kmeans"), "--center", vm.ep,
                        KM_BIG,   NULL};
    char *job3 = succeeds(km, 30);
    usleep(600000);
    spm_test_vm_restart_center(&vm, NULL);
    usleep(100000); /* 300 ms in all */
    job1[strcspn(job1, "\n")] = '\0';
    job2[strcspn(job2, "\n")] = '\0';
    job3[strcspn(job3, "\n")] = '\0';
    const char *wait1[] = {"wait", job1, "--center", vm.ep, "--quiet", NULL};
    char *out = succeeds(wait1, 120);
    free(out);
    const char *wait2[] = {"wait", job2, "--center", vm.ep, "--quiet", NULL};
    out = succeeds(wait2, 120);
    ck_assert_str_eq(out, "version 1: 300 SIs, 0 from another version\n");
    free(out);
    const char *wait3[] = {"wait", job3, "--center", vm.ep, "--quiet", NULL};
    out = succeeds(wait3, 120);
    ck_assert_str_eq(out, want);
    free(out);
    free(want);
    ck_assert(spm_test_running(vm.center.pid));
    free(job1), free(job2), free(job3);
    spm_test_vm_stop(&vm);
}
END_TEST

static Suite *plugin_suite(void)
{
    Suite *s = suite_create("plugin");
    const spm_test_case_t c = {.timeout_s = 300};
    SPM_TEST_ADD(s, &c, examples_against_sequential_references);
    SPM_TEST_ADD(s, &c, examples_build_out_of_tree_with_pkg_config);
    SPM_TEST_ADD(s, &c, two_versions_run_side_by_side);
    SPM_TEST_ADD(s, &c, bad_objects_are_refused_in_one_line);
    SPM_TEST_ADD(s, &c, who_may_send_plugins);
    SPM_TEST_ADD(s, &c, an_si_that_crashes_fails_its_job_not_the_vm);
    SPM_TEST_ADD(s, &c, a_super_function_that_crashes_fails_its_job_not_the_center);
    return s;
}

SPM_TEST_MAIN(plugin_suite)
