/*  Tests of base/procstat: the CPU time and resident memory an agent
    reports of its node's processes are those the kernel counts, of this
    process and of a real child, and a process gone reads as gone. */
#include "base/procstat.h"
#include "spm/spm.h"
#include "tests/check_main.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*  Spins on the CPU for about MS milliseconds of this thread's CPU time. */
static void burn(long ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

START_TEST(cpu_time_grows_with_the_work_done)
{
    spm_procstat_t a, b;
    ck_assert_int_eq(spm_procstat_read(0, &a), 0);
    burn(300);
    ck_assert_int_eq(spm_procstat_read(getpid(), &b), 0);
    /* 300 ms spun; the kernel counts in ticks of 10 ms, and the machine is
       shared: at least 200 ms counted, and not more than wall time allows. */
    ck_assert_msg(b.cpu_us >= a.cpu_us + 200000, "%llu -> %llu us", (unsigned long long)a.cpu_us,
                  (unsigned long long)b.cpu_us);
    ck_assert_uint_lt(b.cpu_us - a.cpu_us, 30000000);
}
END_TEST

START_TEST(resident_memory_counts_the_pages_touched)
{
    spm_procstat_t a, b;
    ck_assert_int_eq(spm_procstat_read(0, &a), 0);
    ck_assert_uint_gt(a.rss_bytes, 0);
    size_t len = 64u << 20;
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    memset(p, 1, len);
    ck_assert_int_eq(spm_procstat_read(0, &b), 0);
    ck_assert_msg(b.rss_bytes >= a.rss_bytes + (48u << 20), "%llu -> %llu bytes",
                  (unsigned long long)a.rss_bytes, (unsigned long long)b.rss_bytes);
    munmap(p, len);
}
END_TEST

START_TEST(a_child_is_read_while_it_lives_and_is_gone_once_reaped)
{
    pid_t kid = fork();
    ck_assert_int_ge(kid, 0);
    if (kid == 0) {
        burn(200);
        pause();
        _exit(0);
    }
    spm_procstat_t st = {0};
    /* Until it has spun (generous: the machine is shared). */
    for (int i = 0; i < 200 && st.cpu_us < 150000; i++) {
        ck_assert_int_eq(spm_procstat_read(kid, &st), 0);
        usleep(50000);
    }
    ck_assert_uint_ge(st.cpu_us, 150000);
    ck_assert_uint_gt(st.rss_bytes, 0);
    pid_t both[] = {0, kid, getpid()};
    spm_procstat_t sum = {0}, self;
    ck_assert_int_eq(spm_procstat_sum(both, 3, &sum), 2);
    ck_assert_int_eq(spm_procstat_read(0, &self), 0);
    ck_assert_uint_ge(sum.cpu_us, st.cpu_us);
    ck_assert_uint_ge(sum.rss_bytes, st.rss_bytes + self.rss_bytes / 2);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    ck_assert_int_eq(spm_procstat_read(kid, &st), SPM_ENOTFOUND);
    ck_assert_uint_eq(st.cpu_us, 0);
    sum = (spm_procstat_t){0};
    ck_assert_int_eq(spm_procstat_sum(both, 3, &sum), 1);
}
END_TEST

static Suite *procstat_suite(void)
{
    Suite *s = suite_create("procstat");
    const spm_test_case_t c = {.timeout_s = 60};
    SPM_TEST_ADD(s, &c, cpu_time_grows_with_the_work_done);
    SPM_TEST_ADD(s, &c, resident_memory_counts_the_pages_touched);
    SPM_TEST_ADD(s, &c, a_child_is_read_while_it_lives_and_is_gone_once_reaped);
    return s;
}

SPM_TEST_MAIN(procstat_suite)
