/*  Tests of vm/heap: memory an IEU thread touches at start is what its
    SIs' large buffers then use. Page faults are counted per thread with
    getrusage(RUSAGE_THREAD), on real threads of this process: an 8 MiB
    buffer is 2048 pages, each a fault when the kernel must supply it. */
#include "base/heap.h"
#include "tests/check_main.h"
#include "tests/spm_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define BUFFER (8u << 20) /* a dense 1024 x 1024 block of C */
#define FEW 64            /* faults allowed for a buffer whose pages are in place */

#if defined(__SANITIZE_ADDRESS__)
#define OWN_MALLOC 1 /* AddressSanitizer's allocator: mallopt does not reach it */
#else
#define OWN_MALLOC 0
#endif

/*  Whether faults cannot be checked here (and says so). */
static int own_malloc(void)
{
    if (OWN_MALLOC)
        printf("test_heap: AddressSanitizer's allocator ignores mallopt; faults not checked\n");
    return OWN_MALLOC;
}

static long thread_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt + ru.ru_majflt;
}

/*  Faults taken by allocating a BUFFER, writing every byte of it and
    freeing it, in the calling thread. */
static long faults_of_one_buffer(void)
{
    long before = thread_faults();
    volatile unsigned char *p = malloc(BUFFER);
    ck_assert_ptr_nonnull((void *)p);
    memset((void *)p, 1, BUFFER);
    ck_assert_uint_eq(p[BUFFER - 1], 1); /* read back: the memset must stay */
    free((void *)p);
    return thread_faults() - before;
}

/*  Whether the kernel backs heaps with 2 MiB pages on its own (transparent
    huge pages "always"): then an unprepared buffer takes a few faults, not
    one per 4 KiB page, and only the prepared side can be checked. */
static int huge_pages_always(void)
{
    char buf[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = '\0';
        fclose(f);
    }
    return strstr(buf, "[always]") != NULL;
}

typedef struct {
    size_t prepare; /* bytes to prepare first (0: none) */
    long first, second;
} run_t;

static void *measure(void *arg)
{
    run_t *r = arg;
    if (r->prepare)
        ck_assert_int_eq(spm_heap_prepare(r->prepare), 0);
    r->first = faults_of_one_buffer();
    r->second = faults_of_one_buffer();
    return NULL;
}

/*  Runs measure in a new thread while OTHER (may be NULL) runs in another
    one still alive, so that the two get malloc heaps of their own. */
static void *measure_beside(void *arg)
{
    run_t *pair = arg;
    measure(&pair[0]);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, measure, &pair[1]), 0);
    pthread_join(t, NULL);
    return NULL;
}

START_TEST(prepared_memory_serves_the_first_buffers_and_is_kept)
{
    if (own_malloc())
        return;
    spm_heap_keep();
    run_t pair[2] = {{.prepare = 0}, {.prepare = 2 * BUFFER + (1u << 20)}};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, measure_beside, pair), 0);
    pthread_join(t, NULL);
    /* Unprepared, a thread's first buffer comes page by page from the
       kernel: what the IEUs' first SIs paid. Kept, its second does not. */
    if (huge_pages_always())
        printf("test_heap: transparent huge pages are 'always' here; the unprepared "
               "buffer's faults are not checked\n");
    else
        ck_assert_int_gt(pair[0].first, (long)(BUFFER / 4096 / 2));
    ck_assert_int_lt(pair[0].second, FEW);
    /* Prepared, even the first is in place. */
    ck_assert_int_lt(pair[1].first, FEW);
    ck_assert_int_lt(pair[1].second, FEW);
}
END_TEST

START_TEST(the_main_thread_is_prepared_too)
{
    if (own_malloc())
        return;
    spm_heap_keep();
    ck_assert_int_eq(spm_heap_prepare(40u << 20), 0); /* several chunks */
    ck_assert_int_lt(faults_of_one_buffer(), FEW);
    ck_assert_int_lt(faults_of_one_buffer(), FEW);
}
END_TEST

START_TEST(ieu_and_agent_refuse_a_bad_size_in_one_line)
{
    const char *agent[] = {"agent", "--heap-mb", "lots", NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(agent, 10, &out, &err), 1);
    ck_assert_msg(strstr(err, "--heap-mb") && strstr(err, "'lots'"), "%s", err);
    ck_assert_uint_eq(spm_test_lines(err), 1);
    free(out);
    free(err);
    const char *ieu[] = {
        "ieu", "--center", "ipc:///nonexistent", "--cache-dir", "/tmp", "--heap-mb", "-1", NULL};
    ck_assert_int_eq(spm_test_run(ieu, 10, &out, &err), 1);
    ck_assert_msg(strstr(err, "--heap-mb") && strstr(err, "'-1'"), "%s", err);
    ck_assert_uint_eq(spm_test_lines(err), 1);
    free(out);
    free(err);
}
END_TEST

static Suite *heap_suite(void)
{
    Suite *s = suite_create("heap");
    const spm_test_case_t c = {.timeout_s = 60};
    SPM_TEST_ADD(s, &c, prepared_memory_serves_the_first_buffers_and_is_kept);
    SPM_TEST_ADD(s, &c, the_main_thread_is_prepared_too);
    SPM_TEST_ADD(s, &c, ieu_and_agent_refuse_a_bad_size_in_one_line);
    return s;
}

SPM_TEST_MAIN(heap_suite)
