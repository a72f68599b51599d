/*
 * test_jobs_sandbox.c - the local executor's sandbox against a member's
 * attacks, with aidcd running as root (what deploy/dev.sh and containers
 * do): sandbox_fixture.h says what is tried.
 */
#include "tests/http/sandbox_cases.h"

int main(void)
{
    harness_require_pg();
    jobs_reap_at_exit();
    return suite_run(sb_suite());
}
