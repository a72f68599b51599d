/*
 * jobs.h - helpers for the tests of clusters, quotas and jobs: register the
 * local executor, set quotas, submit jobs, and wait (polling with a
 * deadline) until a job reaches a state.
 */
#ifndef AIDC_TEST_JOBS_H
#define AIDC_TEST_JOBS_H

#include <jansson.h>
#include <stdbool.h>

/* As the admin: method path body must answer want, or the test fails. */
void jobs_admin_ok(const char *method, const char *path, const char *body, long want);
/* Wall-clock seconds (timestamps in answers are wall-clock too). */
double jobs_now(void);
/* The pause between two looks at something polled for. */
void jobs_nap_ms(long ms);
/* Seconds since the epoch of an RFC 3339 UTC timestamp ("...Z"); -1 if not one. */
double jobs_ts(const json_t *v);

/*
 * Whether the NUL-separated file /proc/<pid>/<what> (cmdline, environ) has an
 * entry equal to want, or starting with it when prefix.
 */
bool jobs_proc_has(const char *pid, const char *what, const char *want, bool prefix);
/*
 * SIGKILL what this program's jobs left running: their shims (`aidcd
 * local-shim <data dir>/jobs/<id>`) and every process whose environment holds
 * TEST_RUN=<data dir> (give jobs that env entry). Returns how many it found.
 * jobs_reap_at_exit() registers it to run when the program exits (in the
 * process that called it, not in Check's forked tests).
 */
int jobs_kill_leftovers(void);
/*
 * Ask every shim of this test's aidcd to stop its job (SIGTERM, what a cancel
 * does) and wait up to timeout_s for them to end; what is left then is killed
 * as jobs_kill_leftovers does. For teardowns whose jobs (sessions) run on.
 */
int jobs_stop_shims(int timeout_s);
/* As jobs_kill_leftovers, without killing: how many still run (zombies not counted). */
int jobs_count_leftovers(void);
void jobs_reap_at_exit(void);

/*
 * Start aidcd again for harness_srv (same database and data dir) with env,
 * once the one before has exited (harness_srv.pid 0): its log moves aside
 * first (harness_server_start reads the port from the first "listening"
 * line). 0, or -1 when the old log has a sanitizer report or it did not start.
 */
int jobs_restart_server(const char *const *env);

/*
 * A directory the test and its jobs share (logs, locks, go files): jobs see
 * nothing of the machine's but what their cluster's writable_paths bind into
 * their sandbox (jobs_local_cluster binds this one). It is made beside
 * harness_srv.data_dir (mode 1777: jobs run as their tenants' uids) at the
 * first call, which must come before the jobs start;
 * jobs_shared_dir_remove() removes it.
 */
const char *jobs_shared_dir(void);
void jobs_shared_dir_remove(void);

/* harness_setup environment that makes jobs move fast (NULL-terminated). */
extern const char *const jobs_fast_env[];

/*
 * As the admin: register the local cluster with options.gpus = gpus_json
 * ({"a100":4}), room for 64 cores and 512 GiB of jobs (this machine's own
 * few cores would make CPU the limit of every test) and jobs_shared_dir()
 * writable in its jobs' sandboxes.
 */
void jobs_local_cluster(const char *gpus_json);
/* As the admin: PUT the tenant's quota {"resources": resources_json}. */
void jobs_tenant_quota(const char *tenant, const char *resources_json);
/* As the admin: PUT a project's quota {"resources": resources_json}. */
void jobs_project_quota(const char *tenant, const char *project, const char *resources_json);
/*
 * As the admin: tenant with project, quota {"resources": resources_json} and
 * member user (password "<user>-password-1"). Returns the member's JWT (malloc'd).
 */
char *jobs_tenant_member(const char *tenant, const char *project, const char *resources_json,
                         const char *user);
/* Submit body to tenant's jobs with token; the new job's id (malloc'd). Fails the test unless 201. */
char *jobs_submit(const char *token, const char *tenant, const char *body);
/*
 * As jobs_submit, with Idempotency-Key key, for a submit that sets off a crash
 * (an AIDC_FAULT after the backend's accept): the crash may come before the
 * answer. NULL when no answer came and unanswered_ok; once aidcd is back, the
 * same call with the same key and body gets the job's id - what a client that
 * repeats an unanswered request does.
 */
char *jobs_submit_keyed(const char *token, const char *tenant, const char *body, const char *key,
                        bool unanswered_ok);
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
