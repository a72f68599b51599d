/*
 * suite.h - the main() every Check test program needs: run the suite with
 * the usual output, exit 0 only when every test passed.
 */
#ifndef AIDC_TEST_SUITE_H
#define AIDC_TEST_SUITE_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

/* xorshift64: the same pseudo-random values at every run (*state: anything but 0) */
static inline uint64_t suite_xorshift(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static inline int suite_run_mode(Suite *s, enum fork_status mode)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, mode);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int suite_run(Suite *s)
{
    return suite_run_mode(s, CK_FORK);
}

/*
 * For tests that kill and start aidcd themselves: the server must be a child
 * of the process that waits for it, so no fork per test. Check enforces no
 * timeout then; every wait needs a deadline of its own.
 */
static inline int suite_run_nofork(Suite *s)
{
    return suite_run_mode(s, CK_NOFORK);
}

#endif
