/*  The center's store on a small file system (issue 39, case 6): a job
    that fills it fails in one line, and the space of its blocks, which its
    client discards, is reused by the jobs after it, also after a restart
    of the center. The store is an 8 MiB tmpfs mounted in a private mount
    namespace of the test's process (the center, its agent and the clients
    are its children and see it; nothing else does), so that the disk is
    really full: LMDB's file fills it, and the journal and the job history
    beside it cannot grow either. One node whose IEUs do not read the
    store in place (--no-store-reads): with a single node the store keeps
    every output's second copy. Where mounting is not permitted, the test
    says so in one line and passes. Real processes of the spm binary on an
    ipc endpoint. */
#include "tests/check_main.h"
#include "tests/spm_test.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>

static char dir[64];   /* scratch directory; DIR/store is the tmpfs */
static char ep[128];   /* the center's endpoint */
static char store[96]; /* DIR/store */

/*  Mounts an 8 MiB tmpfs at STORE in a mount namespace of this process's
    own. Returns 0, or -1 after saying why the test is skipped. */
static int mount_small_store(void)
{
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(ep, sizeof ep, "ipc://%s/center", dir);
    ck_assert_int_eq(mkdir(store, 0700), 0);
    if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", store, "tmpfs", 0, "size=8m,mode=0700") != 0) {
        printf("fullstore: skipped: cannot mount a tmpfs in a private mount namespace here "
               "(needs CAP_SYS_ADMIN): %s\n",
               strerror(errno));
        fflush(stdout);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
        return -1;
    }
    return 0;
}

static spm_test_proc_t start_center(void)
{
    const char *argv[] = {"center", "--listen", ep, "--store", store, "--log-level", "error", NULL};
    return spm_test_start(argv);
}

/*  Starts the center with its files limited to LIMIT bytes (RLIMIT_FSIZE,
    set around the fork: the child keeps it, this process takes its own
    back at once). */
static spm_test_proc_t start_center_limited(rlim_t limit)
{
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = (struct rlimit){limit, old.rlim_max};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    spm_test_proc_t p = start_center();
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    return p;
}

static spm_test_proc_t start_agent(void)
{
    char cache[96];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    const char *argv[] = {"agent",       "--center",    ep,    "--ieus",
                          "2",           "--cache-dir", cache, "--no-store-reads",
                          "--log-level", "error",       NULL};
    return spm_test_start(argv);
}

/*  `spm gen matrix --rows N --field integer --seed SEED -o DIR/NAME`. */
static void gen(const char *name, const char *n, const char *seed)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const char *argv[] = {"gen",    "matrix", "--rows", n,    "--field", "integer",
                          "--seed", seed,     "-o",     path, NULL};
    char *err;
    ck_assert_msg(spm_test_run(argv, 30, NULL, &err) == 0, "gen: %s", err);
    free(err);
}

/*  Runs `spm matmul DIR/A DIR/B --block 32 -o DIR/C.mtx` on the center;
    returns its exit status, its stderr in *ERR (malloc'd). */
static int matmul(const char *a, const char *b, char **err)
{
    char pa[128], pb[128], pc[128];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    snprintf(pc, sizeof pc, "%s/C.mtx", dir);
    const char *argv[] = {"matmul", pa,         pb, "--block", "32", "-o",
                          pc,       "--center", ep, "--quiet", NULL};
    return spm_test_run(argv, 60, NULL, err);
}

/*  The blocks in the center's store (spm status --json), waiting up to 5 s
    for them to be no more than WANT; the last count seen. */
static double store_blocks(double want)
{
    const char *argv[] = {"status", "--center", ep, "--json", NULL};
    double blocks = -1;
    for (int i = 0; i < 50; i++) {
        char *out = NULL;
        if (spm_test_run(argv, 30, &out, NULL) == 0)
            blocks = spm_test_json_num(out, "store_blocks");
        free(out);
        if (blocks >= 0 && blocks <= want)
            break;
        usleep(100000);
    }
    return blocks;
}

/*  Runs the matmul of a.mtx by itself (192 blocks, 2.3 MiB in the store)
    as job N of the test: it succeeds, and its discarded blocks leave the
    store. */
static void medium_job(const char *when, int n)
{
    char *err;
    int rc = matmul("a.mtx", "a.mtx", &err);
    ck_assert_msg(rc == 0, "%s, job %d: exit %d: %s", when, n, rc, err);
    free(err);
    double left = store_blocks(0);
    ck_assert_msg(left == 0, "%s, job %d: %.0f blocks left in the store after it was discarded",
                  when, n, left);
}

/*  Asserts that the job that filled the store (its exit RC, its stderr
    ERR, freed here) failed in one line, and that its discarded blocks
    left the store. */
static void filled_and_emptied(int rc, char *err)
{
    ck_assert_msg(rc != 0, "the job that fills the store succeeded");
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, "disk full while committing"),
                  "the job that fills the store did not fail in one line: %s", err);
    free(err);
    double left = store_blocks(0);
    ck_assert_msg(left == 0, "%.0f blocks of the discarded job are left in the store", left);
}

START_TEST(a_full_store_takes_jobs_again_once_its_blocks_are_discarded)
{
    if (mount_small_store() != 0)
        return;
    gen("A.mtx", "512", "1");
    gen("B.mtx", "512", "2");
    gen("a.mtx", "256", "3");
    spm_test_proc_t center = start_center();
    usleep(200000);
    spm_test_proc_t agent = start_agent();

    /* 512 x 512 by blocks of 32: 4 MiB of input and as much of output, with
       each output's copy in the store: more than 8 MiB */
    char *err;
    int rc = matmul("A.mtx", "B.mtx", &err);
    filled_and_emptied(rc, err);
    for (int i = 1; i <= 4; i++)
        medium_job("after the job that filled the store", i);

    /* A restart: nothing is left, and jobs still run. */
    kill(center.pid, SIGTERM);
    spm_test_finish(&center, 30, NULL, NULL);
    spm_test_finish(&agent, 30, NULL, NULL);
    center = start_center();
    usleep(200000);
    agent = start_agent();
    double left = store_blocks(0);
    ck_assert_msg(left == 0, "%.0f blocks are left in the store after a restart", left);
    medium_job("after a restart", 5);

    kill(center.pid, SIGTERM);
    spm_test_finish(&center, 30, NULL, NULL);
    spm_test_finish(&agent, 30, NULL, NULL);
    ck_assert_int_eq(umount(store), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/*  `spm run synthetic --sis SIS --bytes 262144 --work fixed:0` on the
    center; returns its exit status, its stderr in *ERR (malloc'd). */
static int synthetic(const char *sis, char **err)
{
    const char *argv[] = {"run",    "synthetic", "--sis",    sis, "--bytes", "262144",
                          "--work", "fixed:0",   "--center", ep,  "--quiet", NULL};
    return spm_test_run(argv, 60, NULL, err);
}

START_TEST(space_a_failed_job_held_serves_the_next_jobs)
{
    /* The first report's case: the center's files limited to 4 MiB, blocks
       of 256 KiB (65 pages each). Once the failed job's blocks were deleted,
       LMDB reused their pages only after one more commit, and every put
       that failed committed nothing: of three jobs after it, one
       succeeded. No namespace is needed. */
    snprintf(dir, sizeof dir, "%s", spm_test_tmpdir());
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(ep, sizeof ep, "ipc://%s/center", dir);
    spm_test_proc_t center = start_center_limited(4 << 20);
    usleep(200000);
    spm_test_proc_t agent = start_agent();
    char *err;
    int rc = synthetic("100", &err);
    filled_and_emptied(rc, err);
    for (int i = 1; i <= 3; i++) {
        rc = synthetic("10", &err);
        ck_assert_msg(rc == 0,
                      "job %d of 10 x 256 KiB after the one that filled the store: exit "
                      "%d: %s",
                      i, rc, err);
        free(err);
    }
    kill(center.pid, SIGTERM);
    spm_test_finish(&center, 30, NULL, NULL);
    spm_test_finish(&agent, 30, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *fullstore_suite(void)
{
    Suite *s = suite_create("fullstore");
    const spm_test_case_t c = {.timeout_s = 120};
    SPM_TEST_ADD(s, &c, a_full_store_takes_jobs_again_once_its_blocks_are_discarded);
    SPM_TEST_ADD(s, &c, space_a_failed_job_held_serves_the_next_jobs);
    return s;
}

SPM_TEST_MAIN(fullstore_suite)
