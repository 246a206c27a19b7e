/*  Chaos, short form (issue 8): a `spm matmul` and a `spm mine` job on a
    real center and agent of three IEUs, while the whole node (agent and
    IEUs) is killed with SIGKILL once and a new agent started, and an IEU
    is killed every one to two seconds. Each job must complete with output
    files byte-identical to an undisturbed run's, and its report must
    count re-issued SIs. `make chaos` runs the long form
    (tests/chaos/chaos.c). */
#include "tests/check_main.h"
#include "tests/chaos/chaos.h"

/*  Runs JOB undisturbed and under chaos on VM (three IEUs), checks the
    faults, the re-issues and the outputs, and stops VM. */
static void survives_chaos(chaos_vm_t *vm, const chaos_job_t *job)
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
    const char *what = job->args[0];
    int ok = chaos_compare(vm, &plan, &tally, job->args, vm->dir, seed);
    int killed = chaos_vm_stop(vm);
    fprintf(stderr, "chaos %s: %d IEU kills, %d agent kills, %.0f SIs re-issued, seed %llu\n", what,
            tally.ieu_kills, tally.agent_kills, tally.reissued, (unsigned long long)seed);
    ck_assert_msg(ok == 1, "%s under faults: see stderr (seed %llu)", what,
                  (unsigned long long)seed);
    ck_assert_msg(tally.agent_kills == 1 && tally.ieu_kills >= 1,
                  "%s ended before its faults: %d IEU kills, %d agent kills (seed %llu)", what,
                  tally.ieu_kills, tally.agent_kills, (unsigned long long)seed);
    ck_assert_msg(tally.reissued >= 1, "%s: no re-issued SI in the report (seed %llu)", what,
                  (unsigned long long)seed);
    ck_assert_msg(killed == 0, "%d processes of the VM outlived its center", killed);
}

START_TEST(matmul_survives_killed_ieus_and_node)
{
    chaos_vm_t vm;
    chaos_vm_start(&vm, 3, 1000);
    chaos_job_t job;
    chaos_matmul(&job, vm.dir, 512, 7, "write", "ss"); /* about 35,000 SIs */
    survives_chaos(&vm, &job);
}
END_TEST

START_TEST(mine_survives_killed_ieus_and_node)
{
    chaos_vm_t vm;
    chaos_vm_start(&vm, 3, 1000);
    chaos_job_t job;
    chaos_mine(&job, vm.dir, 40000, 8, "0.4%", 3, 250); /* 620 SIs, none over 0.2 s */
    survives_chaos(&vm, &job);
}
END_TEST

START_TEST(agent_restarts_ieus_that_ran_before_dying)
{
    /* The agent gives up on an IEU that keeps dying as it starts (a crash
       loop); one killed after it ran a while is restarted at once, however
       often: more often here than the agent's cap of 10 restarts. */
    chaos_vm_t vm;
    chaos_vm_start(&vm, 1, 1000);
    pid_t ieu = 0;
    for (int kills = 0; kills <= 11; kills++) {
        long long end = chaos_now_ms() + 3000;
        int n = 0;
        while ((n = chaos_ieu_pids(vm.agent.pid, &ieu, 1)) == 0 && chaos_now_ms() < end)
            usleep(20000);
        ck_assert_msg(n == 1, "no IEU 3 s after it was killed %d times", kills);
        if (kills == 11)
            break;
        usleep(1100000); /* it ran past starting */
        kill(ieu, SIGKILL);
    }
    ck_assert_int_eq(chaos_vm_stop(&vm), 0);
}
END_TEST

static Suite *chaos_suite(void)
{
    Suite *s = suite_create("chaos");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, matmul_survives_killed_ieus_and_node);
    tcase_add_test(tc, mine_survives_killed_ieus_and_node);
    tcase_add_test(tc, agent_restarts_ieus_that_ran_before_dying);
    suite_add_tcase(s, tc);
    return s;
}

SPM_TEST_MAIN(chaos_suite)
