/*  The main() of every test binary: runs one Check suite and exits non-zero
    when any test failed. Each test file ends with SPM_TEST_MAIN(its_suite). */
#ifndef SPM_CHECK_MAIN_H_INCLUDED
#define SPM_CHECK_MAIN_H_INCLUDED

#include <check.h>
#include <stdlib.h>

#define SPM_TEST_MAIN(suite_fn)                                                                    \
    int main(void)                                                                                 \
    {                                                                                              \
        SRunner *sr = srunner_create(suite_fn());                                                  \
        srunner_run_all(sr, CK_NORMAL);                                                            \
        int failed = srunner_ntests_failed(sr);                                                    \
        srunner_free(sr);                                                                          \
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                               \
    }

#endif
