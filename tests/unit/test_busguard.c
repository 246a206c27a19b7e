/*  Tests of base/busguard: a call whose SIGBUS from a mapped file (or a
    library's escape) is an error, on a real file cut short under its map
    below a mkdtemp directory removed at the end. */
#include "base/busguard.h"
#include "tests/check_main.h"
#include "tests/scratch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 16

/* A map of PAGES pages of a file that is then cut to one page. */
static volatile unsigned char *cut_map(void)
{
    char file[128];
    snprintf(file, sizeof file, "%s/cut.bin", base);
    long page = sysconf(_SC_PAGESIZE);
    int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, PAGES * page), 0);
    void *map = mmap(NULL, PAGES * page, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    ck_assert_int_eq(ftruncate(fd, page), 0);
    close(fd);
    return map;
}

static int read_last_page(void *arg)
{
    volatile unsigned char *map = arg;
    long page = sysconf(_SC_PAGESIZE);
    return map[(PAGES - 1) * page] + 7; /* past the end of the file: SIGBUS */
}

static int read_first_page(void *arg)
{
    volatile unsigned char *map = arg;
    return map[0] + 7; /* backed by the file: zeros */
}

static int escapes(void *arg)
{
    int *reached = arg;
    spm_busguard_escape();
    *reached = 1;
    return 0;
}

static int nested(void *arg)
{
    int inner = 5;
    int faulted = spm_busguard_run(read_last_page, arg, &inner);
    return faulted ? 100 + inner : -1; /* the inner guard caught it; inner untouched */
}

START_TEST(a_fault_past_the_end_of_a_mapped_file_is_an_error)
{
    volatile unsigned char *map = cut_map();
    int rc = -1;
    ck_assert_int_eq(spm_busguard_run(read_first_page, (void *)map, &rc), 0);
    ck_assert_int_eq(rc, 7);
    rc = -1;
    ck_assert_int_eq(spm_busguard_run(read_last_page, (void *)map, &rc), 1);
    ck_assert_int_eq(rc, -1);
    /* the thread goes on, and faults again the same way */
    ck_assert_int_eq(spm_busguard_run(read_last_page, (void *)map, &rc), 1);
    /* guards nest: the innermost takes the fault, the outer call returns */
    ck_assert_int_eq(spm_busguard_run(nested, (void *)map, &rc), 0);
    ck_assert_int_eq(rc, 105);
}
END_TEST

START_TEST(an_escape_leaves_the_guarded_call)
{
    int reached = 0, rc = -1;
    ck_assert_int_eq(spm_busguard_run(escapes, &reached, &rc), 1);
    ck_assert_int_eq(reached, 0);
    ck_assert_int_eq(rc, -1);
    spm_busguard_escape(); /* no guard running: returns */
}
END_TEST

static void exit_42(int sig)
{
    (void)sig;
    _exit(42);
}

START_TEST(a_fault_outside_a_guard_goes_to_the_handler_before_it)
{
    /* A fault outside any guard meets the SIGBUS handler that was there
       before the first guard (by default none: the process dies; here one
       that exits 42), in a child that faults after a guard has run. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = exit_42;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGBUS, &sa, NULL), 0);
    volatile unsigned char *map = cut_map();
    int rc;
    ck_assert_int_eq(spm_busguard_run(read_last_page, (void *)map, &rc), 1);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        read_last_page((void *)map);
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 42);
}
END_TEST

static Suite *busguard_suite(void)
{
    Suite *s = suite_create("busguard");
    const spm_test_case_t c = {
        .timeout_s = 30, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, a_fault_past_the_end_of_a_mapped_file_is_an_error);
    SPM_TEST_ADD(s, &c, an_escape_leaves_the_guarded_call);
    SPM_TEST_ADD(s, &c, a_fault_outside_a_guard_goes_to_the_handler_before_it);
    return s;
}

SPM_TEST_MAIN(busguard_suite)
