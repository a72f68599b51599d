/*
 * test_jobs_sandbox_user.c - the attacks of sandbox_fixture.h against an
 * aidcd running as an unprivileged user (the systemd unit's way): its jobs
 * run as that user in user namespaces of their own, within a cgroup
 * delegated to it.
 */
#define SANDBOX_RUN_AS 61234
#include "tests/http/sandbox_cases.h"

int main(void)
{
    harness_require_pg();
    jobs_reap_at_exit();
    return suite_run(sb_suite());
}
