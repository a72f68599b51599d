/*
 * test_slurm_app.c - the Slurm backend's sessions without a cluster: the
 * lines a session's batch script starts with (backends/slurmscript.h), and
 * what a job's comment and Slurm's own record make of its endpoint
 * (backends/slurmapp.h), over slurmrestd's real answers (a running job, a
 * node) with the comment a job may write. tests/http/test_slurm_app.c runs
 * the same on the real Slurm.
 */
#include "backends/slurmapp.h"
#include "backends/slurmscript.h"
#include "slurm_fixtures.h"

/* fixture 11 (node-a100 runs train-a100, restart_cnt 0) with comment, state and batch_host */
static json_t *job_with(const char *comment, const char *state, const char *batch_host)
{
    json_t *job = fixture_job("11-get-job-running.json");
    ck_assert_int_eq(json_object_set_new(job, "comment", json_string(comment)), 0);
    ck_assert_int_eq(json_object_set_new(job, "job_state", json_string(state)), 0);
    ck_assert_int_eq(json_object_set_new(job, "batch_host", json_string(batch_host)), 0);
    return job;
}

static int port_of(json_t *job, int *port, char *node, char *err)
{
    int e = slurmapp_job_port(job, "train-a100", "aidc", port, node, 64, err, 256);
    json_decref(job);
    return e;
}

START_TEST(the_port_comes_from_the_comment_the_node_from_slurm)
{
    int port = 0;
    char node[64] = "", err[256] = "";
    ck_assert_int_eq(port_of(job_with("aidc r t/p u aidc-port=40001:0", "RUNNING", "node-a100"),
                             &port, node, err),
                     0);
    ck_assert_int_eq(port, 40001);
    ck_assert_str_eq(node, "node-a100");
    /* the whole comment the job wrote will do as well */
    ck_assert_int_eq(
        port_of(job_with("aidc-port=1024:0", "RUNNING", "node-a100"), &port, node, err), 0);
    ck_assert_int_eq(port, 1024);
}
END_TEST

START_TEST(no_report_yet_or_no_longer_running_is_not_found)
{
    int port = 0;
    char node[64], err[256];
    ck_assert_int_eq(port_of(job_with("aidc r t/p u", "RUNNING", "node-a100"), &port, node, err),
                     AIDC_ENOTFOUND);
    ck_assert_int_eq(port_of(job_with("aidc-port=40001:0", "PENDING", ""), &port, node, err),
                     AIDC_ENOTFOUND);
    ck_assert_int_eq(
        port_of(job_with("aidc-port=40001:0", "COMPLETING", "node-a100"), &port, node, err),
        AIDC_ENOTFOUND);
    ck_assert_int_eq(
        port_of(job_with("aidc-port=40001:0", "CANCELLED", "node-a100"), &port, node, err),
        AIDC_ENOTFOUND);
    /* requeued and running again: the report of the start before is no endpoint */
    json_t *job = job_with("aidc-port=40001:0", "RUNNING", "node-a100");
    ck_assert_int_eq(json_object_set_new(job, "restart_cnt", json_integer(1)), 0);
    ck_assert_int_eq(port_of(job, &port, node, err), AIDC_ENOTFOUND);
    ck_assert_int_eq(port, 0);
}
END_TEST

START_TEST(what_a_job_writes_cannot_choose_the_host_or_a_system_port)
{
    static const char *const bad[] = {"aidc-port=22:0",
                                      "aidc-port=1023:0",
                                      "aidc-port=65536:0",
                                      "aidc-port=0:0",
                                      "aidc-port=10.0.0.9:80",
                                      "aidc-port=evil.example:8080",
                                      "aidc-port=8080",
                                      "aidc-port=8080:0:x",
                                      "aidc-port=:0",
                                      "aidc-port=8080:",
                                      "aidc-port=+8080:0",
                                      "aidc-port=0008080000:0",
                                      NULL};
    int port = 0;
    char node[64], err[256];
    for (size_t i = 0; bad[i]; i++) {
        err[0] = '\0';
        int e = port_of(job_with(bad[i], "RUNNING", "node-a100"), &port, node, err);
        ck_assert_msg(e == AIDC_EINVAL, "%s: %d", bad[i], e);
        ck_assert_msg(err[0], "%s: no message", bad[i]);
        ck_assert_int_eq(port, 0);
    }
    /* a batch host that is not among the job's nodes (slurmrestd's word, but checked) */
    ck_assert_int_eq(
        port_of(job_with("aidc-port=40001:0", "RUNNING", "node-h100"), &port, node, err),
        AIDC_EINVAL);
    ck_assert_int_eq(
        port_of(job_with("aidc-port=40001:0", "RUNNING", "10.0.0.9"), &port, node, err),
        AIDC_EINVAL);
    /* another run's job, or another user's */
    json_t *job = job_with("aidc-port=40001:0", "RUNNING", "node-a100");
    ck_assert_int_eq(
        slurmapp_job_port(job, "other-run", "aidc", &port, node, sizeof node, err, sizeof err),
        AIDC_EINVAL);
    ck_assert_int_eq(
        slurmapp_job_port(job, "train-a100", "mallory", &port, node, sizeof node, err, sizeof err),
        AIDC_EINVAL);
    json_decref(job);
    ck_assert_int_eq(port, 0);
}
END_TEST

START_TEST(the_host_is_the_nodes_address)
{
    json_t *body = fixture_body("05-node-by-name.json");
    json_t *node = json_array_get(json_object_get(body, "nodes"), 0);
    char host[254], err[256];
    ck_assert_int_eq(slurmapp_node_host(node, "node-a100", host, sizeof host, err, sizeof err), 0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_int_eq(slurmapp_node_host(node, "node-h100", host, sizeof host, err, sizeof err),
                     AIDC_EINVAL);
    static const char *const bad[] = {"a b", "http://x/", "x/y", "-x", "x..y", "::zz", NULL};
    for (size_t i = 0; bad[i]; i++) {
        json_object_set_new(node, "address", json_string(bad[i]));
        ck_assert_msg(slurmapp_node_host(node, "node-a100", host, sizeof host, err, sizeof err) ==
                          AIDC_EINVAL,
                      "%s", bad[i]);
    }
    json_object_set_new(node, "address", json_string("fd00::7"));
    ck_assert_int_eq(slurmapp_node_host(node, "node-a100", host, sizeof host, err, sizeof err), 0);
    ck_assert_str_eq(host, "fd00::7");
    json_object_set_new(node, "address", json_string("")); /* NodeAddr defaults to the name */
    ck_assert_int_eq(slurmapp_node_host(node, "node-a100", host, sizeof host, err, sizeof err), 0);
    ck_assert_str_eq(host, "node-a100");
    json_decref(body);
}
END_TEST

static char *script_of(const char *script, const char *const *command, bool app)
{
    json_t *cmd = NULL;
    if (command) {
        cmd = json_array();
        for (size_t i = 0; command[i]; i++)
            json_array_append_new(cmd, json_string(command[i]));
    }
    struct backend_job job = {.id = "r1", .script = script, .command = cmd, .app = app};
    char err[256] = "";
    char *s = slurmscript_build(&job, "none", "aidc r1 t/p u", err, sizeof err);
    json_decref(cmd);
    ck_assert_msg(s != NULL, "%s", err);
    return s;
}

START_TEST(a_sessions_script_reports_its_port_first)
{
    /* a bash script: aidc's lines, then it, in the same shell */
    char *s = script_of("echo hi\n", NULL, true);
    ck_assert_msg(strncmp(s, "#!/bin/bash\n", 12) == 0, "%s", s);
    const char *report = strstr(s, "scontrol update JobId=\"$SLURM_JOB_ID\" Comment='aidc r1 t/p u'"
                                   "\" aidc-port=$PORT:${SLURM_RESTART_COUNT:-0}\"");
    ck_assert_msg(report != NULL, "%s", s);
    ck_assert_ptr_nonnull(strstr(s, "export PORT="));
    ck_assert_msg(strstr(report, "\necho hi\n") != NULL, "%s", s);
    free(s);
    /* a script of another interpreter: into a file, whose heredoc's end word is none of
     * its lines */
    s = script_of("#!/usr/bin/python3\nprint('AIDC_SCRIPT_END_0')\nAIDC_SCRIPT_END_0\n", NULL,
                  true);
    ck_assert_msg(strstr(s, "<<'AIDC_SCRIPT_END_1'\n#!/usr/bin/python3\n") != NULL, "%s", s);
    ck_assert_msg(strstr(s, "\nAIDC_SCRIPT_END_0\nAIDC_SCRIPT_END_1\n") != NULL, "%s", s);
    free(s);
    /* a command */
    s = script_of(NULL, (const char *const[]){"jupyter", "lab", "--port=$PORT", NULL}, true);
    ck_assert_msg(strstr(s, "exec 'jupyter' 'lab' '--port=$PORT'\n") != NULL, "%s", s);
    ck_assert_ptr_nonnull(strstr(s, "aidc-port="));
    free(s);
    /* not a session: the script as it was */
    s = script_of("#!/bin/sh\necho hi", NULL, false);
    ck_assert_str_eq(s, "#!/bin/sh\necho hi\n");
    free(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("slurm_app");
    TCase *tc = tcase_create("slurm_app");
    tcase_add_test(tc, the_port_comes_from_the_comment_the_node_from_slurm);
    tcase_add_test(tc, no_report_yet_or_no_longer_running_is_not_found);
    tcase_add_test(tc, what_a_job_writes_cannot_choose_the_host_or_a_system_port);
    tcase_add_test(tc, the_host_is_the_nodes_address);
    tcase_add_test(tc, a_sessions_script_reports_its_port_first);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
