/*  Tests of base/busguard: a call whose SIGBUS from a mapped file, whose
    SIGSEGV from a wild pointer (or a library's escape) is an error, on a
    real file cut short under its map below a mkdtemp directory removed at
    the end and on real PROT_NONE and read-only maps; the faults that must
    still kill run in child processes. */
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

/* A page of address space that may not be touched: a wild pointer. */
static volatile unsigned char *no_access(void)
{
    void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    return p;
}

static int read_wild(void *arg)
{
    volatile unsigned char *p = arg;
    return p[100] + 7; /* PROT_NONE: SIGSEGV */
}

static int write_read_only(void *arg)
{
    volatile unsigned char *p = arg;
    p[0] = 1; /* a read-only map: SIGSEGV, and nothing is written */
    return 0;
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
    return faulted == SIGBUS ? 100 + inner : -1; /* the inner guard caught it; inner untouched */
}

START_TEST(a_fault_past_the_end_of_a_mapped_file_is_an_error)
{
    volatile unsigned char *map = cut_map();
    int rc = -1;
    ck_assert_int_eq(spm_busguard_run(read_first_page, (void *)map, &rc), 0);
    ck_assert_int_eq(rc, 7);
    rc = -1;
    ck_assert_int_eq(spm_busguard_run(read_last_page, (void *)map, &rc), SIGBUS);
    ck_assert_int_eq(rc, -1);
    /* the thread goes on, and faults again the same way */
    ck_assert_int_eq(spm_busguard_run(read_last_page, (void *)map, &rc), SIGBUS);
    /* guards nest: the innermost takes the fault, the outer call returns */
    ck_assert_int_eq(spm_busguard_run(nested, (void *)map, &rc), 0);
    ck_assert_int_eq(rc, 105);
}
END_TEST

START_TEST(an_escape_leaves_the_guarded_call)
{
    int reached = 0, rc = -1;
    ck_assert_int_eq(spm_busguard_run(escapes, &reached, &rc), SIGABRT);
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
    ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
    volatile unsigned char *map = cut_map();
    int rc;
    ck_assert_int_eq(spm_busguard_run(read_last_page, (void *)map, &rc), SIGBUS);
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
    /* the same for SIGSEGV */
    volatile unsigned char *wild = no_access();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        read_wild((void *)wild);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 42);
}
END_TEST

START_TEST(a_wild_pointer_inside_a_guard_is_an_error)
{
    /* LMDB that follows a corrupted offset out of its map, or writes a
       page of its read-only map it takes for its own: the call fails with
       SIGSEGV, and this process goes on (to use the file no more). */
    volatile unsigned char *wild = no_access();
    int rc = -1;
    ck_assert_int_eq(spm_busguard_run(read_wild, (void *)wild, &rc), SIGSEGV);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(spm_busguard_run(read_wild, (void *)wild, &rc), SIGSEGV);
    void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(ro, MAP_FAILED);
    ck_assert_int_eq(spm_busguard_run(write_read_only, ro, &rc), SIGSEGV);
    ck_assert_int_eq(((unsigned char *)ro)[0], 0);
    /* and a SIGBUS after them is still a SIGBUS */
    volatile unsigned char *map = cut_map();
    ck_assert_int_eq(spm_busguard_run(read_last_page, (void *)map, &rc), SIGBUS);
    ck_assert_int_eq(spm_busguard_run(read_first_page, (void *)map, &rc), 0);
    ck_assert_int_eq(rc, 7);
}
END_TEST

/* Runs FN(ARG) in a child process that has run a guard, and returns its wait status. */
static int in_child(int (*fn)(void *), void *arg)
{
    int rc;
    ck_assert_int_eq(spm_busguard_run(read_first_page, (void *)cut_map(), &rc), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* Whether STATUS is the death by SIGSEGV of a process (under AddressSanitizer, whose handler
   was there before the first guard: its report, and its exit status 1). */
static int died_of_segv(int status)
{
#ifdef __SANITIZE_ADDRESS__
    if (WIFEXITED(status))
        return WEXITSTATUS(status) != 0;
#endif
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

static int paused_read_wild(void *arg)
{
    void *guard = spm_busguard_pause();
    int rc = read_wild(arg); /* the caller's own code, called back: its bug */
    spm_busguard_resume(guard);
    return rc;
}

static int guarded_paused_read_wild(void *arg)
{
    int rc;
    spm_busguard_run(paused_read_wild, arg, &rc);
    return 0;
}

static volatile int bottom; /* never set: the recursion below runs over the stack */

static int recurse(void *arg)
{
    volatile char pad[1024];
    pad[0] = (char)(uintptr_t)arg;
    if (bottom)
        return pad[0];
    return recurse((void *)(uintptr_t)(pad[0] + 1)) + pad[0]; /* not a tail call */
}

static int guarded_overflow(void *arg)
{
    /* an alternate stack, so that the handler runs after the overflow */
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    sigaltstack(&ss, NULL);
    int rc;
    spm_busguard_run(recurse, arg, &rc);
    return 0;
}

START_TEST(a_segv_outside_a_guard_still_kills)
{
    /* A real bug is not swallowed: a wild pointer outside any guard, in
       code a guarded call calls back (paused), or a stack overflow inside
       a guard kills the process by SIGSEGV as it did before. */
    volatile unsigned char *wild = no_access();
    int status = in_child(read_wild, (void *)wild);
    ck_assert_msg(died_of_segv(status), "outside a guard: status %#x", status);
    status = in_child(guarded_paused_read_wild, (void *)wild);
    ck_assert_msg(died_of_segv(status), "paused: status %#x", status);
    status = in_child(guarded_overflow, NULL);
    ck_assert_msg(died_of_segv(status), "stack overflow: status %#x", status);
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
    SPM_TEST_ADD(s, &c, a_wild_pointer_inside_a_guard_is_an_error);
    SPM_TEST_ADD(s, &c, a_segv_outside_a_guard_still_kills);
    return s;
}

SPM_TEST_MAIN(busguard_suite)
