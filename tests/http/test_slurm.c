/*
 * test_slurm.c - jobs through aidc on a real Slurm (deploy/slurm-up.sh,
 * started by tests/run.sh: two nodes, 8 a100 and 8 h100 fake GPUs,
 * partitions gpu and preempt): a 2-GPU job runs to completion with Slurm's
 * own times, a failing job reports its exit code, cancel, the inventory
 * from the nodes' GRES, and exactly-once delivery when aidcd dies between
 * Slurm's accept and its own commit (AIDC_FAULT=after_backend_submit).
 *
 * Needs AIDC_TEST_SLURM_URL, _USER, _JWT_KEY, _JWT and _DIR (tests/run.sh);
 * skipped (77) without them.
 */
#include "lib/rmtree.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/slurmtest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define T "phys"
#define WAIT_S 90

static char *ann;

/* ---- fixture ------------------------------------------------------------------------- */

/* the storage spaces: on the cluster's shared file system (here: the nodes are this machine) */
static char storage_root[256], storage_env[300];
static const char *fast[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200",
                             "AIDC_PREEMPT_GRACE_SECONDS=1", storage_env, NULL};

static void setup(void)
{
    snprintf(storage_root, sizeof storage_root, "%s/jobs/aidc-storage-%d", slurm_dir, (int)getpid());
    snprintf(storage_env, sizeof storage_env, "AIDC_STORAGE_ROOT=%s", storage_root);
    harness_setup("slurm", fast);
    curl_global_init(CURL_GLOBAL_ALL);
    slurmtest_register_cluster();
    ann = jobs_tenant_member(T, "lab", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":8},"
                                       "\"gpu:h100\":{\"guaranteed\":2,\"limit\":8}}",
                             "ann");
}

static void teardown(void)
{
    /* the crash test may have failed while aidcd was down */
    if (harness_srv.pid <= 0 && jobs_restart_server(fast) != 0)
        fprintf(stderr, "teardown: aidcd did not start again\n");
    free(ann);
    harness_teardown();
    if (rmtree_at(AT_FDCWD, storage_root) != 0)
        fprintf(stderr, "teardown: could not remove %s\n", storage_root);
}

static double epoch_of(const json_t *job, const char *key)
{
    return jobs_ts(json_object_get(job, key));
}

/* ---- tests --------------------------------------------------------------------------- */

START_TEST(two_gpu_job_runs_with_slurms_times)
{
    char *id = jobs_submit(ann, T, slurmtest_job("two", 2, "a100",
                                            "#!/bin/bash\necho \"gpus=$CUDA_VISIBLE_DEVICES "
                                            "job=$AIDC_JOB_ID\"\nsleep 1\n"));
    json_t *job = jobs_wait(ann, T, id, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(job, "state")), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(job, "exit_code")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(job, "cluster")), "hpc");
    json_t *sj = slurm_job_of(job);
    ck_assert_str_eq(json_string_value(json_object_get(sj, "job_state")), "COMPLETED");
    ck_assert_str_eq(json_string_value(json_object_get(sj, "name")), id);
    ck_assert_str_eq(json_string_value(json_object_get(sj, "tres_per_node")), "gres:gpu:a100:2");
    /* usage from Slurm's clock, not from when aidc looked */
    ck_assert_msg((long long)epoch_of(job, "started_at") ==
                      json_integer_value(json_object_get(sj, "start_time")),
                  "started_at %s, Slurm's start_time %lld",
                  json_string_value(json_object_get(job, "started_at")),
                  json_integer_value(json_object_get(sj, "start_time")));
    ck_assert((long long)epoch_of(job, "finished_at") ==
              json_integer_value(json_object_get(sj, "end_time")));
    /* and metered from them: 2 GPUs for Slurm's end - start, traced to this job */
    long long ran = json_integer_value(json_object_get(sj, "end_time")) -
                    json_integer_value(json_object_get(sj, "start_time"));
    struct http_res u;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/" T "/usage/jobs?resource=gpu:a100", ann, NULL,
                          &u),
                     200);
    double gpu_hours = -1;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(u.json, "items"), i, it)
    {
        if (strcmp(json_string_value(json_object_get(json_object_get(it, "job"), "id")), id) == 0)
            gpu_hours = json_number_value(
                json_object_get(json_array_get(json_object_get(it, "resources"), 0), "quantity"));
    }
    ck_assert_msg(gpu_hours > 2.0 * (double)ran / 3600 - 1e-6 &&
                      gpu_hours < 2.0 * (double)ran / 3600 + 1e-6,
                  "metered %.6f GPU-hours for %lld s of 2 GPUs", gpu_hours, ran);
    http_res_free(&u);
    /* the job saw two GPUs and its platform id */
    char *out = harness_read_file(fmt("%s/jobs/%s.out", slurm_dir, id));
    ck_assert_msg(out != NULL, "no stdout in %s/jobs", slurm_dir);
    const char *g = strstr(out, "gpus=");
    ck_assert_msg(g && strchr(g, ',') && strchr(g, ',') < strchr(g, ' '),
                  "the job did not see two GPUs: %s", out);
    ck_assert_ptr_nonnull(strstr(out, fmt("job=%s", id)));
    free(out);
    /* ... and its log through aidc (the workdir is readable here) */
    char *log = jobs_logs(ann, T, id, "stream=stdout&tail=5");
    ck_assert_msg(strstr(log, fmt("job=%s", id)) != NULL, "logs: %s", log);
    free(log);
    json_decref(sj);
    json_decref(job);
    free(id);
}
END_TEST

START_TEST(failing_job_reports_its_exit_code)
{
    char *id = jobs_submit(ann, T, slurmtest_job("three", 1, "h100", "#!/bin/sh\nexit 3\n"));
    json_t *job = jobs_wait(ann, T, id, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(job, "state")), "failed");
    ck_assert_int_eq(json_integer_value(json_object_get(job, "exit_code")), 3);
    json_t *sj = slurm_job_of(job);
    ck_assert_int_eq(json_integer_value(json_object_get(sj, "exit_code")), 768); /* raw status */
    json_decref(sj);
    json_decref(job);
    free(id);
}
END_TEST

START_TEST(cancel_stops_the_slurm_job)
{
    char *id = jobs_submit(ann, T, slurmtest_job("long", 1, "a100", "#!/bin/sh\nsleep 300\n"));
    json_decref(jobs_wait(ann, T, id, "running", WAIT_S));
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/" T "/jobs/%s/cancel", id), ann, NULL), 202);
    json_t *job = jobs_wait(ann, T, id, "cancelled,failed,succeeded", WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(job, "state")), "cancelled");
    json_t *sj = slurm_job_of(job);
    ck_assert_str_eq(json_string_value(json_object_get(sj, "job_state")), "CANCELLED");
    json_decref(sj);
    json_decref(job);
    free(id);
}
END_TEST

/* the events of a job, comma-separated "to" states */
static bool history_has(const char *token, const char *tenant, const char *id, const char *what)
{
    char *h = jobs_history(token, tenant, id);
    bool yes = strstr(h, what) != NULL;
    free(h);
    return yes;
}

/*
 * phys borrows 6 of the 8 h100 (guaranteed 2) into the preempt partition;
 * bio, guaranteed 6, then asks for them: aidc stops phys's Slurm job, bio's
 * runs, and phys's job runs again later as a new Slurm job (run key -r1).
 */
START_TEST(reclaim_preempts_a_borrowing_slurm_job_which_runs_again)
{
    char *bob = jobs_tenant_member("bio", "cells", "{\"gpu:h100\":{\"guaranteed\":6,\"limit\":6}}",
                                   "bob");
    char *a = jobs_submit(ann, T, slurmtest_job("borrower", 6, "h100",
                                           "#!/bin/sh\ncase $AIDC_JOB_ID in *-r1) exit 0;; esac\n"
                                           "sleep 300\n"));
    json_t *ja = jobs_wait(ann, T, a, "running", WAIT_S);
    ck_assert(json_is_true(json_object_get(ja, "preemptible")));
    json_t *sa = slurm_job_of(ja);
    ck_assert_str_eq(json_string_value(json_object_get(sa, "partition")), "preempt");
    json_decref(sa);

    const char *bbody = "{\"project\":\"cells\",\"name\":\"owner\",\"gpus\":6,"
                        "\"gpu_type\":\"h100\",\"cpus\":1,\"memory_gib\":1,"
                        "\"time_limit_minutes\":5,\"script\":\"#!/bin/sh\\nsleep 2\\n\"}";
    char *b = jobs_submit(bob, "bio", bbody);
    json_t *jb = jobs_wait(bob, "bio", b, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(jb, "state")), "succeeded");
    ck_assert(json_is_false(json_object_get(jb, "preemptible")));

    json_t *again = jobs_wait(ann, T, a, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(again, "state")), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(again, "preemption_count")), 1);
    ck_assert(history_has(ann, T, a, "running,preempted,queued"));
    /* two Slurm jobs: the stopped run and the one that finished */
    ck_assert_int_eq(slurm_jobs_named(a), 1);
    ck_assert_int_eq(slurm_jobs_named(fmt("%s-r1", a)), 1);
    json_t *sj = slurm_job_of(again);
    ck_assert_str_eq(json_string_value(json_object_get(sj, "name")), fmt("%s-r1", a));
    ck_assert_str_eq(json_string_value(json_object_get(sj, "job_state")), "COMPLETED");
    json_decref(sj);
    json_decref(again);
    json_decref(jb);
    json_decref(ja);
    free(a);
    free(b);
    free(bob);
}
END_TEST

/*
 * Slurm requeues a running job by itself (as its partition preemption does;
 * here `scontrol requeue`): aidc records running -> pending, closes the run,
 * and opens a second one when Slurm runs it again.
 */
START_TEST(slurm_requeue_is_recorded_as_two_runs)
{
    char *id = jobs_submit(ann, T, slurmtest_job("requeued", 1, "a100",
                                            "#!/bin/sh\n[ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ] && "
                                            "exit 0\nsleep 300\n"));
    json_t *job = jobs_wait(ann, T, id, "running", WAIT_S);
    const char *bid = json_string_value(json_object_get(job, "backend_job_id"));
    ck_assert_ptr_nonnull(bid);
    int rc = slurmtest_scontrol(fmt("requeue %s", bid));
    ck_assert_msg(rc == 0, "scontrol requeue %s failed (%d)", bid, rc);
    json_decref(job);
    job = jobs_wait(ann, T, id, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(job, "state")), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(job, "preemption_count")), 0);
    ck_assert_msg(history_has(ann, T, id, "running,pending,running,succeeded"), "history: %s",
                  jobs_history(ann, T, id));
    const char *p[1] = {id};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*), count(ended_at) FROM job_runs"
                              " WHERE job_id = $1::uuid",
                              1, p);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "2");
    ck_assert_str_eq(PQgetvalue(r, 0, 1), "2");
    PQclear(r);
    json_decref(job);
    free(id);
}
END_TEST

/* a job the cluster cannot take as it is fails at once, saying why (no retries) */
START_TEST(a_job_slurm_cannot_take_fails_at_once)
{
    /* an image the tenant may use (its own), on a cluster that runs no containers */
    ck_assert_int_eq(req("POST", "/api/v1/tenants/" T "/images", ann,
                         "{\"repository\":\"nvidia/pytorch\",\"tag\":\"24.01-py3\",\"digest\":"
                         "\"sha256:2222222222222222222222222222222222222222222222222222222222222222\","
                         "\"size_bytes\":1}"),
                     201);
    char *id = jobs_submit(ann, T,
                           "{\"project\":\"lab\",\"name\":\"boxed\",\"gpus\":1,\"gpu_type\":"
                           "\"a100\",\"image\":\"nvidia/pytorch:24.01-py3\","
                           "\"command\":[\"python\",\"train.py\"]}");
    json_t *job = jobs_wait(ann, T, id, "failed,succeeded,cancelled", 20);
    ck_assert_str_eq(json_string_value(json_object_get(job, "state")), "failed");
    const char *reason = json_string_value(json_object_get(job, "reason"));
    ck_assert_msg(reason && strstr(reason, "runs no containers"), "reason: %s", reason);
    ck_assert_int_eq(slurm_jobs_named(id), 0);
    json_decref(job);
    free(id);
}
END_TEST

/* Poll cluster hpc (asking for a sync) until resource has total want. */
static void wait_total(const char *res, long long want)
{
    double deadline = jobs_now() + 30;
    for (;;) {
        ck_assert_int_eq(req("POST", "/api/v1/clusters/hpc/sync", harness_srv.admin_token, NULL),
                         202);
        long long got = slurmtest_total(res);
        if (got == want)
            return;
        ck_assert_msg(jobs_now() < deadline, "%s: %lld after 30 s, want %lld", res, got, want);
        jobs_nap_ms(200);
    }
}

/* a drained node's GPUs leave the capacity at the next sync, and come back */
START_TEST(a_drained_node_leaves_the_capacity)
{
    ck_assert_int_eq(slurmtest_total("gpu:h100"), 8);
    ck_assert_int_eq(slurmtest_scontrol("update nodename=node-h100 state=drain reason=aidc-test"),
                     0);
    wait_total("gpu:h100", 0);
    ck_assert_int_eq(slurmtest_total("gpu:a100"), 8);
    ck_assert_int_eq(slurmtest_scontrol("update nodename=node-h100 state=resume"), 0);
    wait_total("gpu:h100", 8);
}
END_TEST

/* a job submitted to Slurm behind aidc's back shows in the drift report */
START_TEST(drift_lists_a_job_aidc_does_not_know)
{
    const char *stray = fmt("{\"job\":{\"name\":\"stray\",\"partition\":\"gpu\",\"time_limit\":5,"
                            "\"current_working_directory\":\"%s/jobs\",\"environment\":{\"PATH\":"
                            "\"/usr/bin:/bin\"}},\"script\":\"#!/bin/sh\\nsleep 30\\n\"}",
                            slurm_dir);
    json_t *made = slurm_call("POST", "job/submit", stray);
    long long sid = json_integer_value(json_object_get(made, "job_id"));
    ck_assert_msg(sid > 0, "slurmrestd did not take the stray job");
    json_decref(made);

    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/clusters/hpc/drift", harness_srv.admin_token, NULL, &r),
                     200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "cluster")), "hpc");
    ck_assert_int_ge(json_integer_value(json_object_get(r.json, "cluster_jobs")), 1);
    json_t *unknown = json_object_get(r.json, "unknown_to_aidc");
    /* this aidc's jobs (the Slurm is shared with other test runs: theirs are unknown here) */
    struct http_res mine;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/" T "/jobs?limit=1000", ann, NULL, &mine), 200);
    ck_assert_int_gt(json_array_size(json_object_get(mine.json, "items")), 3);
    int strays = 0;
    size_t i, k;
    json_t *u, *job;
    json_array_foreach(unknown, i, u) {
        const char *name = json_string_value(json_object_get(u, "name"));
        ck_assert_ptr_nonnull(name);
        json_array_foreach(json_object_get(mine.json, "items"), k, job) {
            const char *id = json_string_value(json_object_get(job, "id"));
            ck_assert_msg(strncmp(name, id, strlen(id)) != 0,
                          "aidc's own job %s listed as unknown: %s", name, r.body);
        }
        strays += strcmp(json_string_value(json_object_get(u, "backend_job_id")),
                         fmt("%lld", sid)) == 0 && strcmp(name, "stray") == 0;
    }
    http_res_free(&mine);
    ck_assert_int_eq(strays, 1);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "missing_in_cluster")), 0);
    http_res_free(&r);
    json_decref(slurm_call("DELETE", fmt("job/%lld", sid), NULL));
    /* only platform admins ask */
    ck_assert_int_eq(req("GET", "/api/v1/clusters/hpc/drift", ann, NULL), 403);
}
END_TEST

/*
 * Mounts on Slurm: nothing is mounted, the job works in its project's space on the shared
 * file system and is told where it is. Slurm runs every job as one user (options.user_name):
 * the operator gives that user the tenant's folders (aidcd leaves folders that are there as
 * they are, docs/storage.md), as the test does here.
 */
START_TEST(a_slurm_job_writes_into_its_project_space)
{
    struct passwd *pw = getpwnam(slurm_user);
    ck_assert_ptr_nonnull(pw);
    const char *dirs[] = {"", "/" T, "/" T "/projects", "/" T "/projects/lab"};
    for (size_t i = 0; i < 4; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s%s", storage_root, dirs[i]);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        ck_assert_int_eq(chown(path, i == 3 ? pw->pw_uid : 0, i ? pw->pw_gid : 0), 0);
        ck_assert_int_eq(chmod(path, i == 0 ? 0711 : i == 3 ? 0770 : 0750), 0);
    }
    json_t *b = json_loads(slurmtest_job("mounted", 0, NULL,
                                         "#!/bin/sh\necho \"cwd=$(pwd) p=$AIDC_PROJECT_DIR\"\n"
                                         "echo from-slurm > \"$AIDC_PROJECT_DIR/out.txt\"\n"),
                           0, NULL);
    json_object_set_new(b, "mounts", json_pack("[{s:s}]", "space", "project"));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char *id = jobs_submit(ann, T, body);
    free(body);
    json_t *job = jobs_wait(ann, T, id, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_msg(strcmp(json_string_value(json_object_get(job, "state")), "succeeded") == 0,
                  "%s: %s", json_string_value(json_object_get(job, "state")),
                  json_string_value(json_object_get(job, "reason")));
    json_t *sj = slurm_job_of(job);
    char project[400];
    snprintf(project, sizeof project, "%s/" T "/projects/lab", storage_root);
    ck_assert_str_eq(json_string_value(json_object_get(sj, "current_working_directory")), project);
    json_decref(sj);
    char *text = harness_read_file(fmt("%s/out.txt", project));
    ck_assert_msg(text && strcmp(text, "from-slurm\n") == 0, "out.txt: %s", text ? text : "none");
    free(text);
    /* ... and the files API reads it back, as the space's owner, the Slurm user */
    struct http_res fr;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/" T "/files/projects/lab/out.txt", ann, NULL, &fr),
                     200);
    ck_assert_str_eq(fr.body, "from-slurm\n");
    http_res_free(&fr);
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/" T "/jobs/%s/files/stdout", id), ann, NULL,
                          &fr),
                     200);
    ck_assert_ptr_nonnull(strstr(fr.body, "cwd="));
    http_res_free(&fr);
    char *out = harness_read_file(fmt("%s/jobs/%s.out", slurm_dir, id));
    ck_assert_msg(out && strstr(out, fmt("cwd=%s p=%s\n", project, project)), "stdout: %s",
                  out ? out : "none");
    free(out);
    struct stat st;
    ck_assert_int_eq(stat(fmt("%s/out.txt", project), &st), 0);
    ck_assert_int_eq(st.st_uid, pw->pw_uid);
    json_decref(job);
    free(id);
}
END_TEST

/* aidcd dies right after slurmrestd accepted the job: after a restart, one Slurm job */
START_TEST(delivery_is_exactly_once_across_a_crash)
{
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    const char *const faulty[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200",
                                  "AIDC_FAULT=after_backend_submit",
                                  /* the delivery is tried again this soon after the crash */
                                  "AIDC_OUTBOX_LEASE_SECONDS=5", NULL};
    ck_assert_int_eq(jobs_restart_server(faulty), 0);
    char *body = strdup(slurmtest_job("once", 1, "a100", "#!/bin/sh\nsleep 2\n"));
    ck_assert_ptr_nonnull(body);
    /* NULL when the crash it sets off beat its answer */
    char *id = jobs_submit_keyed(ann, T, body, "crash-once", true);
    int st = 0;
    ck_assert_int_eq(waitpid(harness_srv.pid, &st, 0), harness_srv.pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 99, "aidcd ended with status %d", st);
    harness_srv.pid = 0;
    if (id) /* Slurm has it; aidc has not recorded it */
        ck_assert_int_eq(slurm_jobs_named(id), 1);
    ck_assert_int_eq(jobs_restart_server(fast), 0);
    if (!id) /* asked again, the key gives the answer the crash lost */
        id = jobs_submit_keyed(ann, T, body, "crash-once", false);
    free(body);
    json_t *job = jobs_wait(ann, T, id, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(job, "state")), "succeeded");
    ck_assert_int_eq(slurm_jobs_named(id), 1);
    json_decref(job);
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    slurmtest_env();
    Suite *s = suite_create("slurm");
    TCase *tc = tcase_create("slurm");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, two_gpu_job_runs_with_slurms_times);
    tcase_add_test(tc, failing_job_reports_its_exit_code);
    tcase_add_test(tc, cancel_stops_the_slurm_job);
    tcase_add_test(tc, reclaim_preempts_a_borrowing_slurm_job_which_runs_again);
    tcase_add_test(tc, drift_lists_a_job_aidc_does_not_know);
    tcase_add_test(tc, a_drained_node_leaves_the_capacity);
    tcase_add_test(tc, a_job_slurm_cannot_take_fails_at_once);
    tcase_add_test(tc, slurm_requeue_is_recorded_as_two_runs);
    tcase_add_test(tc, a_slurm_job_writes_into_its_project_space);
    tcase_add_test(tc, delivery_is_exactly_once_across_a_crash); /* kills aidcd: last */
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* the crash test waits for aidcd itself */
}
