/*
 * test_slurm.c - the Slurm backend's reading of slurmrestd's answers: job
 * states (backends/slurm.h), errors (backends/slurmrest.h slurmrest_ok), the
 * inventory from the nodes' GRES, finding a run by its key. Real answers
 * from tests/fixtures/slurmrestd/, and synthetic ones for what the cluster
 * did not produce on its own. Nothing here talks to a network.
 */
#include "slurm_fixtures.h"

#include <limits.h>

/* ---- slurm_job_status over captured jobs ---------------------------------------- */

enum { ZERO, START, END }; /* which of the job's times a status time must be */

struct status_case {
    const char *file;
    const char *job_state; /* what the fixture holds (checked: the table documents it) */
    long long raw_exit;    /* the fixture's exit_code: a raw wait status */
    long long restart_cnt;
    int state; /* expected */
    int exit_code;
    int started, finished; /* ZERO, START or END */
    const char *reason;    /* exact, or NULL to use reason_has */
    const char *reason_has;
};

static const struct status_case status_cases[] = {
    {"11-get-job-running.json", "RUNNING", 0, 0, BS_RUNNING, -1, START, ZERO, "", NULL},
    {"50-get-job-preemptible-running.json", "RUNNING", 0, 0, BS_RUNNING, -1, START, ZERO, "", NULL},
    {"21-get-job-completed.json", "COMPLETED", 0, 0, BS_SUCCEEDED, 0, START, END, "", NULL},
    /* exit 3 is the wait status 768 = 3 << 8 */
    {"23-get-job-failed.json", "FAILED", 768, 0, BS_FAILED, 3, START, END,
     "Slurm: FAILED, NonZeroExitCode", NULL},
    /* cancelled: 15 is SIGTERM, no exit code */
    {"14-get-job-cancelled.json", "CANCELLED", 15, 0, BS_STOPPED, -1, START, END,
     "Slurm: CANCELLED", NULL},
    {"60-get-job-timeout.json", "TIMEOUT", 15, 0, BS_FAILED, -1, START, END,
     "time limit (Slurm: TIMEOUT)", NULL},
    {"53-get-job-pending-resources.json", "PENDING", 0, 0, BS_PENDING, -1, ZERO, ZERO,
     "PENDING: Resources", NULL},
    {"19-get-job-held-updated.json", "PENDING", 0, 0, BS_PENDING, -1, ZERO, ZERO,
     "PENDING: JobHeldUser", NULL},
    /* requeuehold: held, restarted 3 times; its start_time is the last run's, not reported */
    {"57-get-job-requeue-hold.json", "PENDING", 0, 3, BS_PENDING, -1, ZERO, ZERO,
     "PENDING: JobHeldUser", NULL},
    /* preempted and requeued: PENDING/BeginTime with restart_cnt 1, never "REQUEUED" */
    {"52-get-job-preempted-requeued.json", "PENDING", 0, 1, BS_PENDING, -1, ZERO, ZERO,
     "PENDING: BeginTime", NULL},
    /* after scontrol requeue the capture caught the job running again (restart_cnt 2) */
    {"56-get-job-after-requeue.json", "RUNNING", 0, 2, BS_RUNNING, -1, START, ZERO, "", NULL},
    /* no cwd: FAILED/JobLaunchFailure, exit_code 4021 is a Slurm error number */
    {"25-get-job-no-cwd.json", "FAILED", 4021, 0, BS_FAILED, -1, START, END, NULL,
     "JobLaunchFailure"},
};

static time_t pick_time(const json_t *job, int which)
{
    if (which == START)
        return (time_t)json_integer_value(json_object_get(job, "start_time"));
    if (which == END)
        return (time_t)json_integer_value(json_object_get(job, "end_time"));
    return 0;
}

START_TEST(test_status_fixtures)
{
    const struct status_case *c = &status_cases[_i];
    json_t *job = fixture_job(c->file);
    /* the fixture is what the table says it is */
    ck_assert_str_eq(json_string_value(json_object_get(job, "job_state")), c->job_state);
    ck_assert_int_eq(json_integer_value(json_object_get(job, "exit_code")), c->raw_exit);
    ck_assert_int_eq(json_integer_value(json_object_get(job, "restart_cnt")), c->restart_cnt);
    ck_assert(c->started == ZERO || pick_time(job, c->started) > 0);

    struct backend_status st;
    memset(&st, 0x5a, sizeof st); /* every field must be written */
    slurm_job_status(job, &st);
    ck_assert_msg(st.state == c->state, "%s: state %d, want %d", c->file, st.state, c->state);
    ck_assert_msg(st.exit_code == c->exit_code, "%s: exit_code %d, want %d", c->file, st.exit_code,
                  c->exit_code);
    ck_assert_msg(st.started_at == pick_time(job, c->started), "%s: started_at %lld", c->file,
                  (long long)st.started_at);
    ck_assert_msg(st.finished_at == pick_time(job, c->finished), "%s: finished_at %lld", c->file,
                  (long long)st.finished_at);
    ck_assert(memchr(st.reason, '\0', sizeof st.reason) != NULL);
    if (c->reason)
        ck_assert_msg(strcmp(st.reason, c->reason) == 0, "%s: reason \"%s\", want \"%s\"", c->file,
                      st.reason, c->reason);
    else
        ck_assert_msg(contains(st.reason, c->reason_has), "%s: reason \"%s\" lacks \"%s\"", c->file,
                      st.reason, c->reason_has);
    json_decref(job);
}
END_TEST

/*
 * 25-get-job-no-cwd ends with exit_code 4021, a Slurm error number, not a
 * wait status: 4021 & 0x7f is 53, but no signal 53 ever killed it.
 */
START_TEST(test_status_launch_failure_is_no_signal)
{
    json_t *job = fixture_job("25-get-job-no-cwd.json");
    struct backend_status st;
    slurm_job_status(job, &st);
    ck_assert_int_eq(st.state, BS_FAILED);
    ck_assert_msg(!contains(st.reason, "signal"),
                  "exit_code 4021 (a Slurm error number) reported as \"%s\"",
                  st.reason);
    json_decref(job);
}
END_TEST

/* ---- slurm_job_status over synthetic jobs --------------------------------------- */

struct synth_case {
    const char *job;
    int state;
    int exit_code;
    const char *reason; /* exact; NULL: not checked (nothing known) */
};

static const struct synth_case synth_cases[] = {
    /* wait status of a signal: 9 is SIGKILL, 139 is SIGSEGV with a core dump */
    {"{\"job_state\":\"FAILED\",\"state_reason\":\"NonZeroExitCode\",\"exit_code\":9,"
     "\"start_time\":100,\"end_time\":200}",
     BS_FAILED, -1, "killed by signal 9 (Slurm: FAILED, NonZeroExitCode)"},
    {"{\"job_state\":\"FAILED\",\"state_reason\":\"None\",\"exit_code\":139,"
     "\"start_time\":100,\"end_time\":200}",
     BS_FAILED, -1, "killed by signal 11 (Slurm: FAILED)"},
    {"{\"job_state\":\"FAILED\",\"state_reason\":\"NonZeroExitCode\",\"exit_code\":256,"
     "\"start_time\":100,\"end_time\":200}",
     BS_FAILED, 1, "Slurm: FAILED, NonZeroExitCode"},
    {"{\"job_state\":\"NODE_FAIL\",\"state_reason\":\"None\",\"exit_code\":0,"
     "\"start_time\":100,\"end_time\":200}",
     BS_FAILED, 0, "Slurm: NODE_FAIL"},
    {"{\"job_state\":\"OUT_OF_MEMORY\",\"state_reason\":\"OutOfMemory\",\"exit_code\":0,"
     "\"start_time\":100,\"end_time\":200}",
     BS_FAILED, 0, "Slurm: OUT_OF_MEMORY, OutOfMemory"},
    {"{\"job_state\":\"PREEMPTED\",\"state_reason\":\"None\",\"exit_code\":15,"
     "\"start_time\":100,\"end_time\":200}",
     BS_STOPPED, -1, "Slurm: PREEMPTED"},
    /* states REST did not show in the capture, but Slurm has */
    {"{\"job_state\":\"REQUEUED\",\"state_reason\":\"None\"}", BS_PENDING, -1, "REQUEUED"},
    {"{\"job_state\":\"REQUEUE_HOLD\",\"state_reason\":\"JobHeldAdmin\"}", BS_PENDING, -1,
     "REQUEUE_HOLD: JobHeldAdmin"},
    {"{\"job_state\":\"CONFIGURING\"}", BS_PENDING, -1, "CONFIGURING"},
    {"{\"job_state\":\"COMPLETING\",\"start_time\":100,\"end_time\":200}", BS_RUNNING, -1, ""},
    {"{\"job_state\":\"SUSPENDED\",\"start_time\":100}", BS_RUNNING, -1, ""},
    /* nothing known (exit_code and reason are not checked) */
    {"{\"job_state\":\"\",\"exit_code\":0}", BS_UNKNOWN, 0, NULL},
    {"{\"job_state\":\"\",\"exit_code\":768,\"state_reason\":\"None\"}", BS_UNKNOWN, 0, NULL},
    {"{\"job_id\":7}", BS_UNKNOWN, 0, NULL},
};

START_TEST(test_status_synthetic)
{
    const struct synth_case *c = &synth_cases[_i];
    json_t *job = parse(c->job);
    struct backend_status st;
    memset(&st, 0x5a, sizeof st);
    slurm_job_status(job, &st);
    ck_assert_msg(st.state == c->state, "%s: state %d, want %d", c->job, st.state, c->state);
    ck_assert(memchr(st.reason, '\0', sizeof st.reason) != NULL);
    if (!c->reason) {
        ck_assert_int_eq(st.started_at, 0);
        json_decref(job);
        return;
    }
    ck_assert_msg(st.exit_code == c->exit_code, "%s: exit_code %d, want %d", c->job, st.exit_code,
                  c->exit_code);
    ck_assert_msg(strcmp(st.reason, c->reason) == 0, "%s: reason \"%s\", want \"%s\"", c->job,
                  st.reason, c->reason);
    if (st.state == BS_FAILED || st.state == BS_STOPPED) {
        ck_assert_int_eq(st.started_at, 100);
        ck_assert_int_eq(st.finished_at, 200);
    }
    if (st.state == BS_PENDING) {
        ck_assert_int_eq(st.started_at, 0);
        ck_assert_int_eq(st.finished_at, 0);
    }
    if (st.state == BS_RUNNING) {
        ck_assert_int_eq(st.started_at, 100);
        ck_assert_int_eq(st.finished_at, 0); /* a running job's end_time is only expected */
    }
    json_decref(job);
}
END_TEST

/* Wrong types, absent fields, not an object: a state, never a crash. */
static const char *const garbage_jobs[] = {
    "{\"job_state\":42,\"exit_code\":\"768\",\"state_reason\":7,\"start_time\":\"x\"}",
    "{\"job_state\":null,\"exit_code\":null}",
    "{\"job_state\":[\"RUNNING\"],\"exit_code\":{}}",
    "{\"job_state\":{\"a\":1},\"end_time\":-5}",
    "[1,2,3]",
    "{}",
};

START_TEST(test_status_garbage)
{
    json_t *job = parse(garbage_jobs[_i]);
    struct backend_status st;
    memset(&st, 0x5a, sizeof st);
    slurm_job_status(job, &st);
    ck_assert_msg(st.state == BS_UNKNOWN, "%s: state %d", garbage_jobs[_i], st.state);
    ck_assert_int_eq(st.started_at, 0);
    ck_assert(memchr(st.reason, '\0', sizeof st.reason) != NULL);
    json_decref(job);
}
END_TEST

START_TEST(test_status_garbage_values)
{
    /* NULL job; a COMPLETED job whose exit code is a string reads as 0 */
    struct backend_status st;
    slurm_job_status(NULL, &st);
    ck_assert_int_eq(st.state, BS_UNKNOWN);
    json_t *job = parse("{\"job_state\":\"COMPLETED\",\"exit_code\":\"1\"}");
    slurm_job_status(job, &st);
    ck_assert(st.state >= BS_UNKNOWN && st.state <= BS_STOPPED);
    json_decref(job);
    /* a huge state_reason is cut to the buffer */
    char big[1200];
    memset(big, 'r', 1000);
    big[1000] = '\0';
    char text[1300];
    int w = snprintf(text, sizeof text, "{\"job_state\":\"PENDING\",\"state_reason\":\"%s\"}", big);
    ck_assert(w > 0 && (size_t)w < sizeof text);
    job = parse(text);
    slurm_job_status(job, &st);
    ck_assert_int_eq(st.state, BS_PENDING);
    ck_assert_uint_eq(strlen(st.reason), sizeof st.reason - 1);
    ck_assert(strncmp(st.reason, "PENDING: rrr", 12) == 0);
    json_decref(job);
}
END_TEST

/* ---- slurmrest_ok ------------------------------------------------------------------- */

struct ok_case {
    const char *file;
    long status; /* what the fixture holds */
    bool json;   /* whether its body is JSON */
    bool ok;
    const char *msg; /* exact, or NULL */
    const char *has; /* substrings when msg is NULL */
    const char *has2;
};

static const struct ok_case ok_cases[] = {
    {"10-submit-job.json", 200, true, true, "", NULL, NULL},
    {"11-get-job-running.json", 200, true, true, "", NULL, NULL},
    {"12-list-jobs.json", 200, true, true, "", NULL, NULL},
    {"03-nodes.json", 200, true, true, "", NULL, NULL},
    {"13-cancel-job.json", 200, true, true, "", NULL, NULL},
    /* DELETE of an already cancelled or completed job: 200, idempotent */
    {"15-cancel-job-again.json", 200, true, true, "", NULL, NULL},
    {"16-cancel-completed-job.json", 200, true, true, "", NULL, NULL},
    {"18-update-job.json", 200, true, true, "", NULL, NULL},
    {"30-error-invalid-partition.json", 500, true, false,
     "Invalid partition name specified (error 2000)", NULL, NULL},
    {"31-error-missing-environment.json", 400, true, false,
     "environment must be set (error 2127); Failure during parsing (error 9001)", NULL, NULL},
    /* a description without "error" */
    {"32-error-unknown-field.json", 400, true, false, NULL, "Unknown key \"gpus_typo\"",
     "Failure during parsing (error 9001)"},
    {"33-error-unsatisfiable-gres.json", 500, true, false,
     "Requested node configuration is not available (error 2014)", NULL, NULL},
    /* the error_number shape, with description */
    {"35-error-job-not-found.json", 500, true, false,
     "Unable to find JobId=999999: Invalid job id specified (error 2017)", NULL, NULL},
    {"36-error-cancel-not-found.json", 500, true, false, NULL,
     "unable to kill JobId=999999 with signal 9", "(error 2017)"},
    /* a bad token: slurmctld refuses, slurmrestd says 500 */
    {"37-error-bad-token-ping.json", 500, true, false,
     "slurmctld config is unable to load: Unspecified error (error -1)", NULL, NULL},
    {"38-error-bad-token-jobs.json", 500, true, false,
     "Failed while looking for jobs: Unspecified error (error -1)", NULL, NULL},
    {"39-error-bad-token-submit.json", 500, true, false,
     "Zero Bytes were transmitted or received (error 5005)", NULL, NULL},
    /* text/plain answers */
    {"40-error-no-auth-headers.json", 401, false, false, "HTTP 401: Authentication failure", NULL,
     NULL},
    {"41-error-malformed-json.json", 400, false, false, "HTTP 400: Unable to parse query.", NULL,
     NULL},
    {"42-error-no-content-type.json", 400, false, false, "HTTP 400: Unable to parse query.", NULL,
     NULL},
    {"43-error-unknown-path-slurmdb.json", 404, false, false,
     "HTTP 404: Unable find requested URL. Please view /openapi/v3 for API reference.", NULL, NULL},
};

START_TEST(test_ok_fixtures)
{
    const struct ok_case *c = &ok_cases[_i];
    struct slurmrest_answer a = {0};
    answer_fixture(&a, c->file);
    ck_assert_int_eq(a.status, c->status);
    ck_assert_msg((a.json != NULL) == c->json, "%s: json %p", c->file, (void *)a.json);
    char msg[512];
    memset(msg, 'x', sizeof msg);
    bool ok = slurmrest_ok(&a, msg, sizeof msg);
    ck_assert_msg(ok == c->ok, "%s: ok %d, msg \"%s\"", c->file, ok, msg);
    if (c->msg)
        ck_assert_msg(strcmp(msg, c->msg) == 0, "%s: msg \"%s\", want \"%s\"", c->file, msg,
                      c->msg);
    if (c->has)
        ck_assert_msg(contains(msg, c->has), "%s: msg \"%s\" lacks \"%s\"", c->file, msg, c->has);
    if (c->has2)
        ck_assert_msg(contains(msg, c->has2), "%s: msg \"%s\" lacks \"%s\"", c->file, msg, c->has2);
    slurmrest_answer_free(&a);
    ck_assert(a.body == NULL && a.json == NULL && a.len == 0);
}
END_TEST

struct ok_synth {
    long status;
    const char *body;
    bool ok;
    const char *msg;
};

static const struct ok_synth ok_synth_cases[] = {
    /* 200 but no JSON: not a success */
    {200, "<html>proxy error</html>", false, "HTTP 200: <html>proxy error</html>"},
    {200, "", false, "HTTP 200: "},
    {200, "{\"jobs\": [", false, "HTTP 200: {\"jobs\": ["},
    /* 200 with errors */
    {200, "{\"errors\":[{\"error\":\"boom\",\"error_code\":7}]}", false, "boom (error 7)"},
    /* JSON without errors but not 200 */
    {502, "{\"meta\":{}}", false, "HTTP 502: (no message)"},
    {500, "line one\nline two\r\n", false, "HTTP 500: line one line two  "},
    /* success: errors empty or absent */
    {200, "{\"errors\":[],\"job_id\":5}", true, ""},
    {200, "{\"jobs\":[]}", true, ""},
};

START_TEST(test_ok_synthetic)
{
    const struct ok_synth *c = &ok_synth_cases[_i];
    struct slurmrest_answer a = {0};
    answer_text(&a, c->status, c->body);
    char msg[256];
    bool ok = slurmrest_ok(&a, msg, sizeof msg);
    ck_assert_msg(ok == c->ok, "%ld %s: ok %d", c->status, c->body, ok);
    ck_assert_msg(strcmp(msg, c->msg) == 0, "%ld %s: msg \"%s\", want \"%s\"", c->status, c->body,
                  msg, c->msg);
    slurmrest_answer_free(&a);
}
END_TEST

START_TEST(test_ok_small_buffer)
{
    /* the message is cut to the buffer (a heap buffer: ASan sees any overrun) */
    static const char *const files[] = {"31-error-missing-environment.json",
                                        "35-error-job-not-found.json",
                                        "43-error-unknown-path-slurmdb.json"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++)
        for (size_t n = 1; n <= 40; n++) {
            struct slurmrest_answer a = {0};
            answer_fixture(&a, files[f]);
            char *msg = malloc(n);
            ck_assert(msg != NULL);
            ck_assert(!slurmrest_ok(&a, msg, n));
            ck_assert(strlen(msg) < n);
            free(msg);
            slurmrest_answer_free(&a);
        }
}
END_TEST

/* ---- slurm_inventory_parse ------------------------------------------------------ */

static long long total_of(const struct backend_resource *r, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].name, name) == 0)
            return r[i].total;
    return -1;
}

START_TEST(test_inventory_fixture)
{
    json_t *body = fixture_body("03-nodes.json");
    json_t *nodes = json_object_get(body, "nodes");
    ck_assert_uint_eq(json_array_size(nodes), 2);
    /* what the fixture says, computed from it: MB / 1024 per node, then summed */
    long long cpus = 0, mem = 0;
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        cpus += json_integer_value(json_object_get(node, "cpus"));
        mem += json_integer_value(json_object_get(node, "real_memory")) / 1024;
    }
    ck_assert_int_eq(cpus, 32);
    ck_assert_int_eq(mem, 124); /* 2 x 64000 MB: 62 GiB each */

    struct backend_resource out[16];
    memset(out, 0, sizeof out);
    int n = slurm_inventory_parse(nodes, out, 16);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(out[0].name, "cpu");
    ck_assert_int_eq(out[0].total, cpus);
    ck_assert_str_eq(out[1].name, "memory_gib");
    ck_assert_int_eq(out[1].total, mem);
    ck_assert_int_eq(total_of(out, n, "gpu:a100"), 8);
    ck_assert_int_eq(total_of(out, n, "gpu:h100"), 8);
    json_decref(body);
}
END_TEST

START_TEST(test_inventory_synthetic)
{
    json_t *nodes = parse(
        "["
        /* usable: two types, with socket suffixes */
        "{\"state\":\"idle\",\"state_flags\":[],\"gres\":\"gpu:a100:4(S:0),gpu:h100:2(S:1)\","
        "\"cpus\":8,\"real_memory\":16384},"
        /* usable, untyped GPUs and junk are not counted */
        "{\"state\":\"mixed\",\"state_flags\":[],\"gres\":\"gpu:8\",\"cpus\":4,"
        "\"real_memory\":2048},"
        "{\"state\":\"allocated\",\"gres\":\"gpu:a100:x,gpu::3,gpu:a100:-2,gpu:a100:0,"
        "gpu:a100:3junk,tpu:v4:8,,gpu,:::,gpu:a100:\",\"cpus\":2,\"real_memory\":1023},"
        "{\"state\":\"idle\",\"gres\":12,\"cpus\":1,\"real_memory\":1024},"
        "{\"state\":\"idle\",\"gres\":null,\"cpus\":1},"
        /* left out: down, drained, draining, failing, not responding, maintenance, future */
        "{\"state\":\"down\",\"gres\":\"gpu:a100:8\",\"cpus\":100,\"real_memory\":999999},"
        "{\"state\":\"DOWN\",\"gres\":\"gpu:a100:8\",\"cpus\":100},"
        "{\"state\":\"idle\",\"state_flags\":[\"DRAIN\"],\"gres\":\"gpu:a100:8\",\"cpus\":100},"
        "{\"state\":\"idle\",\"state_flags\":[\"DRAINING\"],\"gres\":\"gpu:h100:8\",\"cpus\":100},"
        "{\"state\":\"allocated\",\"state_flags\":[\"FAIL\"],\"gres\":\"gpu:h100:8\",\"cpus\":100},"
        "{\"state\":\"idle\",\"state_flags\":[\"NOT_RESPONDING\"],\"cpus\":100},"
        "{\"state\":\"idle\",\"state_flags\":[\"MAINTENANCE\"],\"cpus\":100},"
        "{\"state\":\"drained\",\"cpus\":100},"
        "{\"state\":\"future\",\"cpus\":100},"
        "{\"state\":\"unknown\",\"cpus\":100},"
        "{\"gres\":\"gpu:a100:8\",\"cpus\":100},"
        "{\"state\":5,\"cpus\":100},"
        "\"not a node\",17,null"
        "]");
    struct backend_resource out[16];
    memset(out, 0, sizeof out);
    int n = slurm_inventory_parse(nodes, out, 16);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(total_of(out, n, "cpu"), 8 + 4 + 2 + 1 + 1);
    ck_assert_int_eq(total_of(out, n, "memory_gib"), 16 + 2 + 0 + 1);
    ck_assert_int_eq(total_of(out, n, "gpu:a100"), 4);
    ck_assert_int_eq(total_of(out, n, "gpu:h100"), 2);
    json_decref(nodes);

    /* absurd counts (fuzz_slurm: the sum overflowed): negative adds nothing, the sum stops
     * at the largest */
    nodes = json_loads("[{\"state\":\"idle\",\"cpus\":-5,\"real_memory\":-4096,"
                       "\"gres\":\"gpu:a100:9223372036854775807,gpu:a100:12\"},"
                       "{\"state\":\"idle\",\"cpus\":9223372036854775807,"
                       "\"gres\":\"gpu:a100:99999999999999999999\"},"
                       "{\"state\":\"idle\",\"cpus\":3}]",
                       0, NULL);
    ck_assert_ptr_nonnull(nodes);
    n = slurm_inventory_parse(nodes, out, 16);
    ck_assert_int_eq(n, 3);
    ck_assert(total_of(out, n, "cpu") == LLONG_MAX);
    ck_assert_int_eq(total_of(out, n, "memory_gib"), 0);
    ck_assert(total_of(out, n, "gpu:a100") == LLONG_MAX);
    json_decref(nodes);

    /* no nodes, or not a list: zero cpu and memory */
    n = slurm_inventory_parse(NULL, out, 16);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(total_of(out, n, "cpu"), 0);
    ck_assert_int_eq(total_of(out, n, "memory_gib"), 0);
}
END_TEST

START_TEST(test_inventory_max)
{
    json_t *body = fixture_body("03-nodes.json");
    json_t *nodes = json_object_get(body, "nodes");
    for (size_t max = 0; max <= 4; max++) {
        struct backend_resource out[8];
        memset(out, 0x7e, sizeof out);
        int n = slurm_inventory_parse(nodes, out, max);
        ck_assert_msg(n == (int)max, "max %zu: %d", max, n);
        for (size_t k = max; k < 8; k++) {
            const unsigned char *p = (const unsigned char *)&out[k];
            for (size_t b = 0; b < sizeof out[k]; b++)
                ck_assert_msg(p[b] == 0x7e, "max %zu: out[%zu] written", max, k);
        }
        if (max >= 1)
            ck_assert_int_eq(total_of(out, n, "cpu"), 32);
        if (max >= 3)
            ck_assert_int_eq(total_of(out, n, "gpu:a100"), 8);
    }
    json_decref(body);
}
END_TEST

/* ---- slurm_find_run ----------------------------------------------------------------- */

START_TEST(test_find_run)
{
    json_t *body = fixture_body("12-list-jobs.json");
    json_t *jobs = json_object_get(body, "jobs");
    ck_assert(json_array_size(jobs) >= 2);
    const json_t *j = slurm_find_run(jobs, "train-a100", "aidc");
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "job_id")), 2);
    j = slurm_find_run(jobs, "timeout", "aidc");
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "job_id")), 1);
    ck_assert_ptr_null(slurm_find_run(jobs, "train-a100", "bob"));
    ck_assert_ptr_null(slurm_find_run(jobs, "no-such-run", "aidc"));
    ck_assert_ptr_null(slurm_find_run(jobs, "train", "aidc")); /* no prefix match */
    ck_assert_ptr_null(slurm_find_run(jobs, "train-a100x", "aidc"));
    ck_assert_ptr_null(slurm_find_run(NULL, "train-a100", "aidc"));
    json_decref(body);

    /* the same name for another user first: the one of ours is found */
    jobs = parse("[{\"job_id\":1,\"name\":\"run-7\",\"user_name\":\"bob\"},"
                 "{\"job_id\":\"x\",\"name\":7},"
                 "{\"job_id\":2,\"name\":\"run-7\",\"user_name\":\"aidc\"}]");
    j = slurm_find_run(jobs, "run-7", "aidc");
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "job_id")), 2);
    ck_assert_ptr_null(slurm_find_run(jobs, "run-7", "carol"));
    json_decref(jobs);
}
END_TEST


/* ---- suite -------------------------------------------------------------------------- */

int main(void)
{
    Suite *s = suite_create("slurm");
    TCase *tc = slurm_tcase(s, "job_status");
    tcase_add_loop_test(tc, test_status_fixtures, 0, COUNT(status_cases));
    tcase_add_loop_test(tc, test_status_synthetic, 0, COUNT(synth_cases));
    tcase_add_loop_test(tc, test_status_garbage, 0, COUNT(garbage_jobs));
    tcase_add_test(tc, test_status_garbage_values);
    tcase_add_test(tc, test_status_launch_failure_is_no_signal);

    tc = slurm_tcase(s, "answers");
    tcase_add_loop_test(tc, test_ok_fixtures, 0, COUNT(ok_cases));
    tcase_add_loop_test(tc, test_ok_synthetic, 0, COUNT(ok_synth_cases));
    tcase_add_test(tc, test_ok_small_buffer);

    tc = slurm_tcase(s, "inventory");
    tcase_add_test(tc, test_inventory_fixture);
    tcase_add_test(tc, test_inventory_synthetic);
    tcase_add_test(tc, test_inventory_max);
    tcase_add_test(tc, test_find_run);
    return suite_run(s);
}
