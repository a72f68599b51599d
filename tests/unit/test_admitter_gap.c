/*
 * test_admitter_gap.c - how long the admitter lets a burst of notifications
 * gather before its next pass (sched/admitter.h): the coalescing window while
 * passes are short, twice the last pass's length once they are longer (the
 * admitter busy at most half the time), never more than ADMITTER_GAP_MAX_S.
 */
#include "sched/admitter.h"
#include "tests/support/suite.h"

#include <check.h>

START_TEST(short_passes_wait_the_coalescing_window)
{
    ck_assert_double_eq_tol(admitter_gap_s(0.020, 0.0), 0.020, 1e-9);
    ck_assert_double_eq_tol(admitter_gap_s(0.020, 0.004), 0.020, 1e-9);
    ck_assert_double_eq_tol(admitter_gap_s(0.020, 0.010), 0.020, 1e-9);
    ck_assert_double_eq_tol(admitter_gap_s(0.0, 0.0), 0.0, 1e-9); /* a pass per wake-up */
}
END_TEST

START_TEST(long_passes_keep_the_admitter_busy_half_the_time)
{
    ck_assert_double_eq_tol(admitter_gap_s(0.020, 0.015), 0.030, 1e-9);
    ck_assert_double_eq_tol(admitter_gap_s(0.020, 0.250), 0.500, 1e-9);
    ck_assert_double_eq_tol(admitter_gap_s(0.0, 0.100), 0.200, 1e-9);
    ck_assert_double_eq_tol(admitter_gap_s(1.0, 3.0), 6.0, 1e-9);
}
END_TEST

START_TEST(the_gap_has_a_ceiling)
{
    ck_assert_double_eq_tol(admitter_gap_s(0.020, 30.0), ADMITTER_GAP_MAX_S, 1e-9);
    ck_assert_double_eq_tol(admitter_gap_s(0.020, 1e9), ADMITTER_GAP_MAX_S, 1e-9);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("admitter_gap");
    TCase *tc = tcase_create("admitter_gap");
    tcase_add_test(tc, short_passes_wait_the_coalescing_window);
    tcase_add_test(tc, long_passes_keep_the_admitter_busy_half_the_time);
    tcase_add_test(tc, the_gap_has_a_ceiling);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
