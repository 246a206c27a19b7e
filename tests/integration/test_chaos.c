/*  Chaos, short form (issue 8): a `spm matmul` and a `spm mine` job on a
    real center and agent of three IEUs, while an IEU is killed with
    SIGKILL every one to two seconds and once the whole node (agent and
    IEUs) is killed and a new agent started. Each job must complete with
    output files byte-identical to an undisturbed run's, and its report
    must count re-issued SIs. `make chaos` runs the long form
    (tests/chaos/chaos.c). */
#include "tests/check_main.h"
#include "tests/chaos/chaos.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/*  Writes DIR/NAME with `spm gen ARGS...`. */
static const char *gen(const char *name, const char *const *args)
{
    static char path[4][128];
    static int turn;
    char *p = path[turn++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", dir, name);
    const char *argv[24];
    int n = 0;
    argv[n++] = "gen";
    for (; *args && n < 20; args++)
        argv[n++] = *args;
    argv[n++] = "-o";
    argv[n++] = p;
    argv[n] = NULL;
    char *out, *err;
    int rc = spm_test_run(argv, 60, &out, &err);
    ck_assert_msg(rc == 0, "spm gen %s: %s", name, err);
    free(out);
    free(err);
    return p;
}

/*  Runs ARGS undisturbed and under chaos on a new VM of three IEUs and
    checks the faults, the re-issues and the outputs. */
static void survives_chaos(const char *const *args)
{
    uint64_t seed = chaos_seed();
    chaos_plan_t plan = {.rng = seed,
                         .min_ms = 1000,
                         .max_ms = 2000,
                         .agent_first = 1, /* the node first, then single IEUs */
                         .agent_every = 1,
                         .agent_max = 1,
                         .node_too = 1,
                         .timeout_s = 90};
    chaos_tally_t tally = {0, 0, 0};
    chaos_vm_t vm;
    chaos_vm_start(&vm, 3, 1000);
    int ok = chaos_compare(&vm, &plan, &tally, args, dir, seed);
    int killed = chaos_vm_stop(&vm);
    fprintf(stderr, "chaos %s: %d IEU kills, %d agent kills, %.0f SIs re-issued, seed %llu\n",
            args[0], tally.ieu_kills, tally.agent_kills, tally.reissued, (unsigned long long)seed);
    ck_assert_msg(ok, "%s under faults: see stderr (seed %llu)", args[0], (unsigned long long)seed);
    ck_assert_msg(tally.agent_kills == 1 && tally.ieu_kills >= 1,
                  "%s ended before its faults: %d IEU kills, %d agent kills (seed %llu)", args[0],
                  tally.ieu_kills, tally.agent_kills, (unsigned long long)seed);
    ck_assert_msg(tally.reissued >= 1, "%s: no re-issued SI in the report (seed %llu)", args[0],
                  (unsigned long long)seed);
    ck_assert_msg(killed == 0, "%d processes of the VM outlived its center", killed);
}

START_TEST(matmul_survives_killed_ieus_and_node)
{
    /* Integer entries: C is exact whatever order products are added in,
       so only a lost, doubled or damaged product changes a byte. Blocks of
       16 and one product per SI make about 35,000 SIs of well under a
       millisecond each, so every kill finds SIs held. */
    const char *ga[] = {"matrix", "--rows", "512", "--field", "integer", "--seed", "7", NULL};
    const char *gb[] = {"matrix", "--rows", "512", "--field", "integer", "--seed", "8", NULL};
    const char *a = gen("A.mtx", ga), *b = gen("B.mtx", gb);
    const char *args[] = {"matmul", a, b, "--block", "16", "--per-si", "1", "-o", "@C.mtx", NULL};
    survives_chaos(args);
}
END_TEST

START_TEST(mine_survives_killed_ieus_and_node)
{
    /* Blocks of 250 transactions: about 550 SIs of some 8 ms each. */
    const char *gt[] = {"transactions",
                        "--transactions",
                        "40000",
                        "--avg-size",
                        "20",
                        "--avg-pattern",
                        "8",
                        "--items",
                        "500",
                        "--patterns",
                        "2000",
                        "--seed",
                        "3",
                        NULL};
    const char *t = gen("T.dat", gt);
    const char *args[] = {"mine",
                          t,
                          "--min-support",
                          "0.4%",
                          "--min-confidence",
                          "95%",
                          "--block",
                          "250",
                          "--itemsets",
                          "@sets.txt",
                          "-o",
                          "@rules.txt",
                          NULL};
    survives_chaos(args);
}
END_TEST

static Suite *chaos_suite(void)
{
    Suite *s = suite_create("chaos");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 240);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, matmul_survives_killed_ieus_and_node);
    tcase_add_test(tc, mine_survives_killed_ieus_and_node);
    suite_add_tcase(s, tc);
    return s;
}

SPM_TEST_MAIN(chaos_suite)
