/*
 * test_gpu_faults_slurm.c - a GPU fault on the real test Slurm (node-a100 and
 * node-h100, 8 GPUs each): the report drains the node through the
 * configured drain command (scontrol: slurmrestd 22.05 cannot), slurmrestd's
 * GET /nodes shows it DRAIN with aidc's reason, the job running there is
 * stopped and requeued naming the fault, the node's 8 GPUs leave aidc's
 * inventory; giving the GPU back resumes the node and the job runs again. A
 * node an administrator drained is neither drained over nor resumed by aidc.
 * Every drain and resume is an audit event with the command run.
 *
 * The test Slurm is shared: node states are put back as they were found,
 * also when a test fails (its process resumes at exit what it drained).
 * ctest keeps the programs that drain the test Slurm's nodes apart
 * (RESOURCE_LOCK slurm_nodes).
 *
 * Needs AIDC_TEST_SLURM_URL, _USER, _JWT_KEY, _JWT and _DIR (tests/run.sh), and
 * root (scontrol with munge): skipped (77) without them.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/slurmtest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T "phys"
#define WAIT_S 90
#define FAULTS "/api/v1/clusters/hpc/gpu-faults"

static char *ann;
static const char *const fast[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200",
                                   "AIDC_PREEMPT_GRACE_SECONDS=1",
                                   "AIDC_INVENTORY_INTERVAL_SECONDS=1", NULL};

/* Whether node is drained in slurmrestd's eyes, and its reason (into why). */
static bool drained(const char *node, char *why, size_t n)
{
    json_t *b = slurm_get(fmt("node/%s", node));
    json_t *nd = json_array_get(json_object_get(b, "nodes"), 0);
    ck_assert_msg(nd != NULL, "slurmrestd does not know %s", node);
    bool d = jstr(nd, "state") && strncmp(jstr(nd, "state"), "drain", 5) == 0;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(nd, "state_flags"), i, f)
        d |= json_string_value(f) && strcmp(json_string_value(f), "DRAIN") == 0;
    if (why)
        snprintf(why, n, "%s", jstr(nd, "reason") ? jstr(nd, "reason") : "");
    json_decref(b);
    return d;
}

static void wait_drained(const char *node, bool want)
{
    double deadline = jobs_now() + 30;
    while (drained(node, NULL, 0) != want) {
        ck_assert_msg(jobs_now() < deadline, "%s is %sdrained after 30 s", node,
                      want ? "not " : "still ");
        jobs_nap_ms(100);
    }
}

/* Put back what a failed test may have left: nodes drained by aidc, or by the h100 test. */
static void resume_ours(void)
{
    static const char *const nodes[] = {"node-a100", "node-h100"};
    for (size_t i = 0; i < 2; i++) {
        char why[256] = "";
        if (drained(nodes[i], why, sizeof why) &&
            (strncmp(why, "aidc:", 5) == 0 || strcmp(why, "gpu-faults-test") == 0))
            slurmtest_scontrol(fmt("update nodename=%s state=resume", nodes[i]));
    }
}

/*
 * The nodes this process drained (or had aidc drain), found undrained before:
 * a failed assertion ends a test's process at once, without its tear-down, so
 * they are resumed at its exit (no assertion may run there).
 */
static bool touched[2];

static void resume_touched(void)
{
    static const char *const nodes[] = {"node-a100", "node-h100"};
    for (size_t i = 0; i < 2; i++)
        if (touched[i] && slurmtest_scontrol(fmt("update nodename=%s state=resume", nodes[i])))
            fprintf(stderr, "could not resume %s (it may be resumed already)\n", nodes[i]);
}

static void setup(void)
{
    resume_ours(); /* what an earlier failed test left */
    harness_setup("gpu_faults_slurm", fast);
    curl_global_init(CURL_GLOBAL_ALL);
    const char *conf = fmt("SLURM_CONF=%s/etc/slurm.conf", slurm_dir);
    json_t *body = json_pack(
        "{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:[s, s, s, s, s, s, s],"
        " s:[s, s, s, s, s, s]}}",
        "name", "hpc", "kind", "slurm", "endpoint", slurm_url, "credentials_ref",
        fmt("file:%s", slurm_key), "options", "user_name", slurm_user, "partition", "gpu",
        "preemptible_partition", "preempt", "workdir", fmt("%s/jobs", slurm_dir), "drain_command",
        "/usr/bin/env", conf, "/usr/bin/scontrol", "update", "nodename={node}", "state=drain",
        "reason={reason}", "resume_command", "/usr/bin/env", conf, "/usr/bin/scontrol", "update",
        "nodename={node}", "state=resume");
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    jobs_admin_ok("POST", "/api/v1/clusters", text, 201);
    free(text);
    double deadline = jobs_now() + 30;
    while (slurmtest_total("gpu:a100") != 8) {
        ck_assert_msg(jobs_now() < deadline, "no a100 inventory from Slurm after 30 s");
        jobs_nap_ms(100);
    }
    ann = jobs_tenant_member(T, "lab", "{\"gpu:a100\":{\"guaranteed\":8,\"limit\":8}}", "ann");
}

static void teardown(void)
{
    resume_ours();
    free(ann);
    harness_teardown();
}

static long long faulty(const char *res)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/clusters/hpc", harness_srv.admin_token, NULL, &r), 200);
    long long f = json_integer_value(json_object_get(
        json_object_get(json_object_get(r.json, "inventory"), res), "faulty"));
    http_res_free(&r);
    return f;
}

static void wait_total(const char *res, long long want)
{
    double deadline = jobs_now() + 30;
    while (slurmtest_total(res) != want) {
        ck_assert_msg(jobs_now() < deadline, "%s total is %lld, not %lld, after 30 s", res,
                      slurmtest_total(res), want);
        jobs_nap_ms(100);
    }
}

START_TEST(a_fault_drains_the_node_and_requeues_its_job)
{
    ck_assert_msg(!drained("node-a100", NULL, 0), "node-a100 is drained before the test");
    touched[0] = true;
    char *id = jobs_submit(ann, T, slurmtest_job("victim", 1, "a100",
                                                 "#!/bin/bash\nsleep 300\n"));
    json_t *job = jobs_wait(ann, T, id, "running", WAIT_S);
    json_t *sj = slurm_job_of(job);
    ck_assert_str_eq(jstr(sj, "nodes"), "node-a100");
    json_decref(sj);
    json_decref(job);

    struct http_res r;
    ck_assert_int_eq(reqj("POST", FAULTS, harness_srv.admin_token,
                          "{\"node\":\"node-a100\",\"gpus\":[0],\"reason\":\"XID 79\"}", &r),
                     201);
    json_t *d0 = json_array_get(json_object_get(r.json, "drains"), 0);
    ck_assert_str_eq(jstr(d0, "node"), "node-a100");
    ck_assert_str_eq(jstr(d0, "action"), "drain");
    http_res_free(&r);
    /* at once: the whole node leaves aidc's inventory (Slurm drains nodes, not GPUs) */
    ck_assert_int_eq(slurmtest_total("gpu:a100"), 0);
    ck_assert_int_eq(faulty("gpu:a100"), 8);

    /* Slurm drains it, with aidc's reason */
    wait_drained("node-a100", true);
    char why[256];
    drained("node-a100", why, sizeof why);
    ck_assert_msg(strcmp(why, "aidc: XID 79") == 0, "Slurm's reason: %s", why);

    /* the job on it is stopped for the fault and goes back to the queue */
    /* details.jobs_stopped names it */
    json_t *ev = audittest_event_with("backend.drain", id, 30);
    json_t *sent = json_object_get(json_object_get(ev, "details"), "request");
    char *cmd = json_dumps(json_object_get(sent, "command"), JSON_COMPACT);
    ck_assert_msg(cmd && strstr(cmd, "\"nodename=node-a100\",\"state=drain\",\"reason=aidc: XID 79\""),
                  "command %s", cmd ? cmd : "(none)");
    ck_assert_int_eq(json_integer_value(json_object_get(sent, "exit_status")), 0);
    ck_assert_str_eq(jstr(ev, "outcome"), "success");
    free(cmd);
    json_decref(ev);
    job = jobs_wait(ann, T, id, "queued", WAIT_S);
    ck_assert_int_eq(json_integer_value(json_object_get(job, "preemption_count")), 1);
    json_decref(job);
    char *h = jobs_history(ann, T, id);
    ck_assert_msg(strstr(h, "running,running,preempted,queued") != NULL, "history %s", h);
    free(h);
    ck_assert_int_eq(reqj("GET", FAULTS, harness_srv.admin_token, NULL, &r), 200);
    json_t *nd = json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "node_drain");
    ck_assert_str_eq(jstr(nd, "action"), "drain");
    ck_assert_ptr_nonnull(jstr(nd, "delivered_at"));
    http_res_free(&r);
    /* the syncer sees the drained node: still no a100 (it left Slurm's count, not twice) */
    wait_total("gpu:a100", 0);
    ck_assert_int_eq(faulty("gpu:a100"), 8);

    /* healthy again: resumed, back in the inventory, and the job runs again */
    ck_assert_int_eq(reqj("DELETE", FAULTS "/node-a100", harness_srv.admin_token, NULL, &r), 200);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "drains"), 0), "action"),
                     "undrain");
    http_res_free(&r);
    wait_drained("node-a100", false);
    touched[0] = false;
    json_decref(audittest_event_with("backend.undrain", "state=resume", 30));
    wait_total("gpu:a100", 8);
    ck_assert_int_eq(faulty("gpu:a100"), 0);
    json_decref(jobs_wait(ann, T, id, "running", WAIT_S));
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/%s/jobs/%s/cancel", T, id), ann, NULL), 202);
    json_decref(jobs_wait(ann, T, id, "cancelled", WAIT_S));
    free(id);
}
END_TEST

START_TEST(an_administrators_drain_is_left_alone)
{
    ck_assert_msg(!drained("node-h100", NULL, 0), "node-h100 is drained before the test");
    touched[1] = true;
    ck_assert_int_eq(slurmtest_scontrol("update nodename=node-h100 state=drain "
                                        "reason=gpu-faults-test"),
                     0);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", FAULTS, harness_srv.admin_token,
                          "{\"node\":\"node-h100\",\"reason\":\"fans\"}", &r),
                     201);
    http_res_free(&r);
    json_t *ev = audittest_event_with("backend.drain", "node-h100", 30);
    ck_assert(json_is_null(json_object_get(json_object_get(ev, "details"), "request")));
    json_decref(ev);
    ck_assert_int_eq(reqj("DELETE", FAULTS "/node-h100", harness_srv.admin_token, NULL, &r), 200);
    http_res_free(&r);
    ev = audittest_event_with("backend.undrain", "node-h100", 30);
    ck_assert(json_is_null(json_object_get(json_object_get(ev, "details"), "request")));
    json_decref(ev);
    char why[256];
    ck_assert(drained("node-h100", why, sizeof why));
    ck_assert_str_eq(why, "gpu-faults-test");
    ck_assert_int_eq(slurmtest_scontrol("update nodename=node-h100 state=resume"), 0);
    touched[1] = false;
    wait_drained("node-h100", false);
}
END_TEST

int main(void)
{
    slurmtest_env();
    harness_require_pg();
    if (geteuid() != 0) {
        fprintf(stderr, "the drain command (scontrol) needs root's munge credentials: skipped\n");
        return 77;
    }
    atexit(resume_touched); /* inherited by each test's process */
    Suite *s = suite_create("gpu_faults_slurm");
    TCase *tc = tcase_create("gpu_faults_slurm");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, a_fault_drains_the_node_and_requeues_its_job);
    tcase_add_test(tc, an_administrators_drain_is_left_alone);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
