/*
 * jobs.h - helpers for the tests of clusters, quotas and jobs: register the
 * local executor, set quotas, submit jobs, and wait (polling with a
 * deadline) until a job reaches a state.
 */
#ifndef AIDC_TEST_JOBS_H
#define AIDC_TEST_JOBS_H

#include <jansson.h>

/* harness_setup environment that makes jobs move fast (NULL-terminated). */
extern const char *const jobs_fast_env[];

/*
 * As the admin: register the local cluster with options.gpus = gpus_json
 * ({"a100":4}) and room for 64 cores and 512 GiB of jobs (this machine's
 * own few cores would make CPU the limit of every test).
 */
void jobs_local_cluster(const char *gpus_json);
/* As the admin: PUT the tenant's quota {"resources": resources_json}. */
void jobs_tenant_quota(const char *tenant, const char *resources_json);
/* As the admin: PUT a project's quota {"resources": resources_json}. */
void jobs_project_quota(const char *tenant, const char *project, const char *resources_json);
/* Submit body to tenant's jobs with token; the new job's id (malloc'd). Fails the test unless 201. */
char *jobs_submit(const char *token, const char *tenant, const char *body);
/* GET the job (new reference); fails the test unless 200. */
json_t *jobs_get(const char *token, const char *tenant, const char *id);
/*
 * Poll the job until its state is one of states ("succeeded,failed") or
 * timeout_s passes (then the test fails, naming the state it was in).
 * Returns the job (new reference).
 */
json_t *jobs_wait(const char *token, const char *tenant, const char *id, const char *states,
                  int timeout_s);
/*
 * Poll a queued job until the admission worker has looked at it (its reason
 * is no longer "submitted"); returns it (new reference).
 */
json_t *jobs_wait_seen(const char *token, const char *tenant, const char *id, int timeout_s);
/* The job's log text (malloc'd); fails the test unless 200. */
char *jobs_logs(const char *token, const char *tenant, const char *id, const char *query);
/* The "to" states of the job's events, comma-separated (malloc'd). */
char *jobs_history(const char *token, const char *tenant, const char *id);

#endif
