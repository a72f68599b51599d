/*
 * suite.h - the main() every Check test program needs: run the suite with
 * the usual output, exit 0 only when every test passed.
 */
#ifndef AIDC_TEST_SUITE_H
#define AIDC_TEST_SUITE_H

#include <check.h>
#include <stdlib.h>

static inline int suite_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
