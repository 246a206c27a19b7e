/*  Chaos, long form (`make chaos`; issue 8): several rounds of a `spm
    matmul` job and three `spm mine` jobs on one long-lived center, while a
    random IEU is killed with SIGKILL every 0.5 to 1.5 s and every tenth
    fault, from the third on (the second for mine), kills the agent (in odd
    rounds with its IEUs, as a crashed node; in even rounds alone, so its
    IEUs drain) and starts a new one, at most twice per job; every second
    fault (unless it kills the agent) kills the center instead and starts
    it again on the same store, where it resumes the job from its journal.
    Every fifth fault (unless it kills the agent) overwrites 300 random
    bytes of the agent's cache file instead (at most three times per
    agent), and every third one (unless it does one of those) stops a
    process with SIGSTOP and continues it with SIGCONT: the agent, the
    center and an IEU in turn, for longer than the center's --dead-ms of 1 s
    three times, then shorter three times (chaos_stop in chaos.h).
    Every round uses new inputs and another update method and scheduling
    policy for matmul. Each job's output files must be byte-identical to an
    undisturbed run's. Prints one line per job and a closing line:

        chaos: 3 rounds, 31 IEU kills, 3 agent kills, 10 center kills, 9 stops, 5 corruptions
        (the node left service 4 times), 0 agents exited, 187 SIs re-issued, ...

    and exits 0 only when every job succeeded with identical outputs.

    Environment: CHAOS_ROUNDS (default 3), CHAOS_SEED (default from the
    clock; printed first), CHAOS_IEUS (IEUs per agent, default 3),
    CHAOS_MM_N (matrix side, default 768), CHAOS_TRANSACTIONS (default
    100000), CHAOS_CENTER_EVERY (every how many faults kill the center
    unless they kill the agent, default 2; 0: never), CHAOS_STOP_EVERY
    (every how many faults stop a process a while, default 3; 0: never),
    CHAOS_CORRUPT_EVERY (every how many faults corrupt the agent's cache,
    default 5; 0: never); a fault that is due as more than one kind is an
    agent kill, else a corruption, else a stop, else a center kill. SPM_BIN
    names the spm binary. */
#include <stdio.h>
#include <stdlib.h>

#define SPM_TEST_ASSERT(c)                                                                         \
    ((c) ? (void)0 : (void)(fprintf(stderr, "chaos: %s failed\n", #c), exit(1)))
#define SPM_TEST_FAIL(...) (fprintf(stderr, "chaos: " __VA_ARGS__), exit(1))

#include "tests/chaos/chaos.h"

/*  The VM of the run, killed when an assertion exits early. */
static chaos_vm_t *running;

static void kill_running(void)
{
    if (running && running->agent.pid > 0)
        kill(running->agent.pid, SIGKILL); /* its IEUs follow (SIGTERM) */
    if (running)
        kill(running->center.pid, SIGKILL);
}

/*  The integer in environment variable NAME, else DEF. */
static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && atol(v) > 0 ? atol(v) : def;
}

/*  Runs JOB on VM under PLAN, prints its line and adds to TALLY. Returns 1
    when it succeeded with identical outputs. */
static int round_job(chaos_vm_t *vm, chaos_plan_t *plan, chaos_tally_t *tally, int round,
                     const chaos_job_t *job, const char *label, uint64_t seed)
{
    chaos_tally_t t = {0};
    long long start = chaos_now_ms();
    int centers = vm->center_kills;
    int ok = chaos_compare(vm, plan, &t, job->args, vm->dir, seed);
    printf("round %d %-34s %3d IEU kills, %d agent kills, %d center kills, %d stops, "
           "%d corruptions, %4.0f SIs re-issued, %s, %.1f s\n",
           round, label, t.ieu_kills, t.agent_kills, vm->center_kills - centers, t.stops,
           t.corruptions, t.reissued,
           ok > 0 ? "identical"
           : ok   ? "FAILED"
                  : "DIFFERENT",
           (chaos_now_ms() - start) / 1000.0);
    fflush(stdout);
    tally->ieu_kills += t.ieu_kills;
    tally->agent_kills += t.agent_kills;
    tally->reissued += t.reissued;
    tally->stops += t.stops;
    tally->corruptions += t.corruptions;
    tally->agent_exits += t.agent_exits;
    return ok > 0;
}

int main(void)
{
    int rounds = (int)env_long("CHAOS_ROUNDS", 3), ieus = (int)env_long("CHAOS_IEUS", 3);
    int mm_n = (int)env_long("CHAOS_MM_N", 768);
    int transactions = (int)env_long("CHAOS_TRANSACTIONS", 100000);
    const char *ce = getenv("CHAOS_CENTER_EVERY");
    int center_every = ce && *ce ? atoi(ce) : 2;
    const char *se = getenv("CHAOS_STOP_EVERY"), *ke = getenv("CHAOS_CORRUPT_EVERY");
    int stop_every = se && *se ? atoi(se) : 3, corrupt_every = ke && *ke ? atoi(ke) : 5;
    const char *s = getenv("CHAOS_SEED");
    uint64_t seed = s && strtoull(s, NULL, 10) ? strtoull(s, NULL, 10) : chaos_seed();
    printf("chaos: seed %llu (CHAOS_SEED repeats the choices), %d rounds, %d IEUs per agent\n",
           (unsigned long long)seed, rounds, ieus);
    fflush(stdout);
    static const char *updates[] = {"write", "distributed", "update"};
    static const char *policies[] = {"ss", "r", "sr"};
    static const int blocks[] = {250, 200, 500};
    chaos_plan_t plan = {.rng = seed,
                         .min_ms = 500,
                         .max_ms = 1500,
                         .agent_first = 3,
                         .agent_every = 10,
                         .agent_max = 2,
                         .timeout_s = 600,
                         .center_every = center_every,
                         .stop_every = stop_every,
                         .corrupt_every = corrupt_every};
    chaos_tally_t tally = {0};
    int bad = 0;
    long long start = chaos_now_ms();
    chaos_vm_t vm;
    chaos_vm_start_with(&vm, ieus, 1000, corrupt_every > 0);
    running = &vm;
    atexit(kill_running);
    for (int r = 1; r <= rounds && spm_test_running(vm.center.pid); r++) {
        plan.node_too = r % 2;
        char label[64];
        chaos_job_t job;
        const char *update = updates[(r - 1) % 3], *policy = policies[(r - 1) % 3];
        chaos_matmul(&job, vm.dir, mm_n, 100 * r, update, policy);
        snprintf(label, sizeof label, "matmul %d, --update %s --policy %s", mm_n, update, policy);
        bad += !round_job(&vm, &plan, &tally, r, &job, label, seed);
        /* A mining job is short (its SIs must be): three per round, and
           the agent killed at the second fault. */
        plan.agent_first = 2;
        for (int j = 0; j < 3 && spm_test_running(vm.center.pid); j++) {
            int block = blocks[(r - 1 + j) % 3];
            chaos_mine(&job, vm.dir, transactions, 6, "0.5%", 10 * r + j, block);
            snprintf(label, sizeof label, "mine %d, --block %d", transactions, block);
            bad += !round_job(&vm, &plan, &tally, r, &job, label, seed);
        }
        plan.agent_first = 3;
    }
    if (!spm_test_running(vm.center.pid)) {
        int fd = open(vm.center.err_path, O_RDONLY);
        char *e = spm_test_slurp(fd);
        close(fd);
        printf("chaos: the center died: %s\n", e && *e ? e : "(nothing on its stderr)");
        free(e);
        bad++;
    }
    running = NULL;
    int left = chaos_vm_stop(&vm);
    if (left)
        printf("chaos: %d processes of the VM outlived its center\n", left);
    printf("chaos: %d rounds, %d IEU kills, %d agent kills, %d center kills, %d stops, "
           "%d corruptions (the node left service %d times), %d agents exited, %.0f SIs "
           "re-issued, %s (%.0f s)\n",
           rounds, tally.ieu_kills, tally.agent_kills, vm.center_kills, tally.stops,
           tally.corruptions, vm.renewals, tally.agent_exits, tally.reissued,
           bad ? "outputs DIFFER or jobs failed" : "outputs identical",
           (chaos_now_ms() - start) / 1000.0);
    return bad || left || tally.agent_exits ? 1 : 0;
}
