/*  =========================================================================
    check_main - the main() of every test binary, and its list of tests

    Every test is a Check test case of its own, named after its function,
    so that one can be run alone by name (libuv's test/test-list.h is the
    model). A suite adds its tests with SPM_TEST_ADD, giving the timeout
    and fixtures its cases share in one spm_test_case_t:

        static const spm_test_case_t core = {.timeout_s = 30, .setup = setup};
        SPM_TEST_ADD(s, &core, raw_waits_for_the_version_it_reads);

    and ends with SPM_TEST_MAIN(its_suite). The binary then runs

        test_NAME           every test of the suite
        test_NAME TEST      only TEST (as CK_RUN_CASE=TEST does)
        test_NAME --list    prints the name of every test, one a line

    and exits non-zero when a test failed, or with 2 and one line when TEST
    (or $CK_RUN_CASE) names no test of the suite. `make check T=NAME:TEST`
    and `make check-list` (scripts/check.sh) go through these.
    =========================================================================
*/
#ifndef SPM_CHECK_MAIN_H_INCLUDED
#define SPM_CHECK_MAIN_H_INCLUDED

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  What the test cases of a group of tests share. Each test still gets a
    case of its own, so a fixture runs around each test: an unchecked one
    in the runner (its teardown runs even when the test crashes), a
    checked one in the test's own process. */
typedef struct {
    int timeout_s;           /* tcase_set_timeout; 0: Check's (4 s, $CK_DEFAULT_TIMEOUT) */
    SFun setup, teardown;    /* checked fixture; NULL for none */
    SFun unchecked_setup;    /* unchecked fixture; NULL for none */
    SFun unchecked_teardown; /* its teardown; NULL for none */
} spm_test_case_t;

/*  The names of the tests added so far (string literals, not owned), and
    how many. */
typedef struct {
    const char *names[256]; /* in the order added, which is the order run */
    int n;                  /* how many names are set */
} spm_test_list_t;

static inline spm_test_list_t *spm_test_list(void)
{
    static spm_test_list_t list;
    return &list;
}

/*  1 when NAME is a test of this binary. */
static inline int spm_test_known(const char *name)
{
    spm_test_list_t *l = spm_test_list();
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0)
            return 1;
    return 0;
}

/*  Makes the test case NAME in S with what CASE says (NULL: Check's
    defaults) and lists NAME. Returns the case (owned by S). A name added
    twice, or more than the list holds, aborts: the binary is wrong. */
static inline TCase *spm_test_case(Suite *s, const char *name, const spm_test_case_t *c)
{
    spm_test_list_t *l = spm_test_list();
    if (spm_test_known(name) || l->n == (int)(sizeof l->names / sizeof *l->names)) {
        fprintf(stderr, "test %s added twice, or too many tests in one suite\n", name);
        abort();
    }
    l->names[l->n++] = name;
    TCase *tc = tcase_create(name);
    if (c && c->timeout_s)
        tcase_set_timeout(tc, c->timeout_s);
    if (c && (c->unchecked_setup || c->unchecked_teardown))
        tcase_add_unchecked_fixture(tc, c->unchecked_setup, c->unchecked_teardown);
    if (c && (c->setup || c->teardown))
        tcase_add_checked_fixture(tc, c->setup, c->teardown);
    suite_add_tcase(s, tc);
    return tc;
}

/*  Adds the test FN (a START_TEST name) to suite S as a case of its own
    named FN; CASE (const spm_test_case_t *, may be NULL) gives its timeout
    and fixtures. The _LOOP form runs it for _i from START to END - 1. */
#define SPM_TEST_ADD(s, c, fn) tcase_add_test(spm_test_case((s), #fn, (c)), fn)
#define SPM_TEST_ADD_LOOP(s, c, fn, start, end)                                                    \
    tcase_add_loop_test(spm_test_case((s), #fn, (c)), fn, (start), (end))

/*  Runs SUITE (taken) as the command line ARGV asks (see the top of this
    file) and returns the exit status. */
static inline int spm_test_main(Suite *suite, int argc, char **argv)
{
    SRunner *sr = srunner_create(suite);
    spm_test_list_t *l = spm_test_list();
    const char *only = argc > 1 ? argv[1] : getenv("CK_RUN_CASE");
    int rc = EXIT_SUCCESS;
    if (argc > 2) {
        fprintf(stderr, "usage: %s [TEST | --list]\n", argv[0]);
        rc = 2;
    } else if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < l->n; i++)
            printf("%s\n", l->names[i]);
    } else if (only && *only && !spm_test_known(only)) {
        fprintf(stderr, "%s: no test named '%s' (--list names them)\n", argv[0], only);
        rc = 2;
    } else {
        srunner_run(sr, NULL, only && *only ? only : NULL, CK_NORMAL);
        rc = srunner_ntests_failed(sr) ? EXIT_FAILURE : EXIT_SUCCESS;
    }
    srunner_free(sr);
    return rc;
}

#define SPM_TEST_MAIN(suite_fn)                                                                    \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        return spm_test_main(suite_fn(), argc, argv);                                              \
    }

#endif
