/*
 * test_jobs_restart.c - aidcd killed with SIGKILL while jobs run, and started
 * again on the same database and data dir: no job is lost, none runs twice,
 * and their ends are recorded as they happened.
 *
 * Five jobs run when aidcd dies (four on the cluster's four GPUs, one on CPU
 * only that exits 3) and three more wait in the queue for GPUs. The running
 * ones block until the test creates a "go" file, which it does only once
 * aidcd is dead: their ends, written to a shared log, prove that the local
 * executor's shims kept them running without aidcd. The restarted aidcd must
 * then record those ends (with the times they happened, before it started),
 * and run the queued jobs, each exactly once.
 *
 * The test kills and starts aidcd itself, so it runs without Check's fork:
 * the server it starts must be a child of the process whose teardown stops
 * it (harness_teardown). Check enforces no timeout in that mode; every wait
 * here has a deadline of its own.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TENANT "rst"
#define PROJECT "train"
#define NGPU_JOBS 4   /* running on the four GPUs when aidcd dies */
#define NQUEUED 3     /* waiting for GPUs when aidcd dies */
#define NJOBS (NGPU_JOBS + 1 + NQUEUED)
#define FAILING NGPU_JOBS /* the CPU-only job that exits 3 */

static char *alice; /* JWT of the member who submits */
static char gofile[300], runlog[300];

/*
 * Every job: log its start, wait for the go file (giving up after about 60 s
 * so nothing outlives a broken test for long), log its end, exit EXIT_CODE.
 */
static const char script[] =
    "echo \"start $AIDC_JOB_ID\" >> \"$RUNLOG\"\n"
    "n=0\n"
    "while [ ! -e \"$GOFILE\" ]; do\n"
    "  n=$((n + 1)); [ $n -le 1200 ] || exit 75\n"
    "  sleep 0.05\n"
    "done\n"
    "echo \"end $AIDC_JOB_ID\" >> \"$RUNLOG\"\n"
    "exit $EXIT_CODE\n";

/* ---- fixture --------------------------------------------------------------------- */

static void setup(void)
{
    harness_setup("jobsrestart", jobs_fast_env);
    jobs_local_cluster("{\"a100\":4}");
    alice = jobs_tenant_member(TENANT, PROJECT, "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":4}}",
                               "alice");
    snprintf(gofile, sizeof gofile, "%s/go", jobs_shared_dir());
    snprintf(runlog, sizeof runlog, "%s/runs.log", jobs_shared_dir());
}

static void teardown(void)
{
    /* a test that failed half way may have left jobs waiting, or aidcd down */
    int fd = open(gofile, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    int left = jobs_kill_leftovers();
    if (left)
        fprintf(stderr, "teardown: killed %d processes the jobs left behind\n", left);
    if (harness_srv.pid <= 0 && jobs_restart_server(jobs_fast_env) != 0)
        fprintf(stderr, "teardown: aidcd did not start again\n");
    free(alice);
    jobs_shared_dir_remove();
    harness_teardown();
}

/* ---- helpers --------------------------------------------------------------------- */

static char *submit(const char *name, int gpus, int exit_code)
{
    json_t *b = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:{s:s, s:s, s:s, s:s}}",
                          "project", PROJECT, "name", name, "gpus", gpus, "cpus", 1,
                          "memory_gib", 1, "time_limit_minutes", 5, "script", script, "env",
                          "RUNLOG", runlog, "GOFILE", gofile, "EXIT_CODE", fmt("%d", exit_code),
                          "TEST_RUN", harness_srv.data_dir);
    if (gpus > 0)
        json_object_set_new(b, "gpu_type", json_string("a100"));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    struct http_res r;
    long st = reqj("POST", "/api/v1/tenants/" TENANT "/jobs", alice, body, &r);
    ck_assert_msg(st == 201, "submit %s answered %ld: %s", name, st, r.body);
    char *id = strdup(json_string_value(json_object_get(r.json, "id")));
    http_res_free(&r);
    free(body);
    return id;
}

static json_t *get_job(const char *id)
{
    struct http_res r;
    long st = reqj("GET", fmt("/api/v1/tenants/" TENANT "/jobs/%s", id), alice, NULL, &r);
    ck_assert_msg(st == 200, "GET job %s answered %ld: %s", id, st, r.body);
    json_t *job = json_incref(r.json);
    http_res_free(&r);
    return job;
}

static const char *state_of(const json_t *job)
{
    return json_string_value(json_object_get(job, "state"));
}

static bool is_final(const char *state)
{
    return strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
           strcmp(state, "cancelled") == 0;
}

/* Poll until ok(job) holds for every job in ids[from..to), or fail after secs. */
static void wait_states(char **ids, int from, int to, bool (*ok)(const json_t *), const char *what,
                        int secs)
{
    double deadline = jobs_now() + secs;
    for (;;) {
        int good = 0;
        char last[200] = "";
        for (int i = from; i < to; i++) {
            json_t *job = get_job(ids[i]);
            if (ok(job))
                good++;
            else
                snprintf(last, sizeof last, "job %s is %s (%s)", ids[i], state_of(job),
                         json_string_value(json_object_get(job, "reason")));
            json_decref(job);
        }
        if (good == to - from)
            return;
        ck_assert_msg(jobs_now() < deadline, "after %d s not all jobs are %s: %s", secs, what, last);
        jobs_nap_ms(100);
    }
}

static bool is_running(const json_t *job)
{
    return strcmp(state_of(job), "running") == 0;
}

static bool has_ended(const json_t *job)
{
    return is_final(state_of(job));
}

/* Queued, with the reason the admitter gave (a fresh job's is "submitted"). */
static bool is_waiting(const json_t *job)
{
    const char *reason = json_string_value(json_object_get(job, "reason"));
    return strcmp(state_of(job), "queued") == 0 && reason && strcmp(reason, "submitted") != 0;
}

/* Lines of the shared log equal to "<kind> <id>". */
static int count_lines(const char *log, const char *kind, const char *id)
{
    char want[128];
    snprintf(want, sizeof want, "%s %s", kind, id);
    int n = 0;
    for (const char *p = log; p && *p;) {
        size_t len = strcspn(p, "\n");
        if (len == strlen(want) && strncmp(p, want, len) == 0)
            n++;
        p += len + (p[len] == '\n');
    }
    return n;
}

/* The line number (from 1) of "<kind> <id>" in the log, 0 when absent. */
static int line_of(const char *log, const char *kind, const char *id)
{
    char want[128];
    snprintf(want, sizeof want, "%s %s", kind, id);
    int at = 0;
    for (const char *p = log; p && *p;) {
        size_t len = strcspn(p, "\n");
        at++;
        if (len == strlen(want) && strncmp(p, want, len) == 0)
            return at;
        p += len + (p[len] == '\n');
    }
    return 0;
}

/* Poll the shared log until each job in ids[from..to) has a "<kind>" line. */
static void wait_log(char **ids, int from, int to, const char *kind, int secs)
{
    double deadline = jobs_now() + secs;
    for (;;) {
        char *log = harness_read_file(runlog);
        int have = 0;
        for (int i = from; i < to; i++)
            have += count_lines(log, kind, ids[i]) > 0;
        if (have == to - from) {
            free(log);
            return;
        }
        ck_assert_msg(jobs_now() < deadline, "after %d s the log has %d of %d \"%s\" lines:\n%s",
                      secs, have, to - from, kind, log ? log : "");
        free(log);
        jobs_nap_ms(50);
    }
}

/* The pid in the job's shim.pid, if that shim is alive. */
static pid_t live_shim(const char *id)
{
    char *text = harness_read_file(fmt("%s/jobs/%s/shim.pid", harness_srv.data_dir, id));
    long pid = text ? strtol(text, NULL, 10) : 0;
    free(text);
    if (pid <= 1 || kill((pid_t)pid, 0) != 0)
        return 0;
    return jobs_proc_has(fmt("%ld", pid), "cmdline",
                    fmt("%s/jobs/%s", harness_srv.data_dir, id), false)
               ? (pid_t)pid
               : 0;
}

static bool job_dir_exists(const char *id)
{
    struct stat st;
    return stat(fmt("%s/jobs/%s", harness_srv.data_dir, id), &st) == 0;
}

/* Check a job's history: exactly one run, ended once, in state final. */
static void check_history(const char *id, const char *final)
{
    struct http_res r;
    ck_assert_int_eq(
        reqj("GET", fmt("/api/v1/tenants/" TENANT "/jobs/%s/events?limit=100", id), alice, NULL,
             &r),
        200);
    json_t *items = json_object_get(r.json, "items");
    int to_running = 0, running_to_end = 0, admitted = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(items, i, ev) {
        const char *from = json_string_value(json_object_get(ev, "from"));
        const char *to = json_string_value(json_object_get(ev, "to"));
        to_running += strcmp(to, "running") == 0;
        admitted += strcmp(to, "admitted") == 0;
        if (from && strcmp(from, "running") == 0 && is_final(to)) {
            running_to_end++;
            ck_assert_msg(strcmp(to, final) == 0, "job %s: running -> %s, want %s", id, to,
                          final);
        }
        ck_assert_msg(strcmp(to, "preempted") != 0 && strcmp(to, "cancelled") != 0,
                      "job %s was %s: %s", id, to, r.body);
    }
    ck_assert_msg(to_running == 1 && running_to_end == 1 && admitted == 1,
                  "job %s: %d admissions, %d starts, %d running -> end: %s", id, admitted,
                  to_running, running_to_end, r.body);
    const json_t *first = json_array_get(items, 0), *last = json_array_get(items, i - 1);
    ck_assert(json_is_null(json_object_get(first, "from")));
    ck_assert_str_eq(json_string_value(json_object_get(first, "to")), "queued");
    ck_assert_str_eq(json_string_value(json_object_get(last, "to")), final);
    http_res_free(&r);
}

/* ---- the test -------------------------------------------------------------------- */

START_TEST(sigkill_restart_loses_nothing_runs_nothing_twice)
{
    char *ids[NJOBS];
    for (int i = 0; i < NGPU_JOBS; i++)
        ids[i] = submit(fmt("long-%d", i), 1, 0);
    ids[FAILING] = submit("fails", 0, 3);
    wait_states(ids, 0, NGPU_JOBS + 1, is_running, "running", 30);
    for (int i = FAILING + 1; i < NJOBS; i++)
        ids[i] = submit(fmt("queued-%d", i), 1, 0);
    wait_log(ids, 0, NGPU_JOBS + 1, "start", 20);

    /* the queued ones wait for GPUs (the admitter looked at them and wrote
     * why they wait): never handed to the executor */
    wait_states(ids, FAILING + 1, NJOBS, is_waiting, "waiting for a reason", 20);
    for (int i = FAILING + 1; i < NJOBS; i++)
        ck_assert(!job_dir_exists(ids[i]));

    /* SIGKILL: no shutdown of any kind */
    pid_t old = harness_srv.pid;
    double killed_at = jobs_now();
    ck_assert_int_eq(kill(old, SIGKILL), 0);
    int st = 0;
    ck_assert_int_eq(waitpid(old, &st, 0), old);
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    harness_srv.pid = 0;

    /* the jobs live on without aidcd, and end while it is down */
    for (int i = 0; i <= FAILING; i++)
        ck_assert_msg(live_shim(ids[i]) > 0, "the shim of job %s died with aidcd", ids[i]);
    int fd = open(gofile, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    wait_log(ids, 0, NGPU_JOBS + 1, "end", 20);
    double deadline = jobs_now() + 20;
    for (int i = 0; i <= FAILING; i++) {
        char *path = strdup(fmt("%s/jobs/%s/status.json", harness_srv.data_dir, ids[i]));
        json_t *status;
        while (!(status = json_load_file(path, 0, NULL)) && jobs_now() < deadline)
            jobs_nap_ms(50);
        ck_assert_msg(status != NULL, "job %s: the shim wrote no %s", ids[i], path);
        ck_assert_int_eq(json_integer_value(json_object_get(status, "exit_code")),
                         i == FAILING ? 3 : 0);
        json_decref(status);
        free(path);
    }
    for (int i = FAILING + 1; i < NJOBS; i++)
        ck_assert(!job_dir_exists(ids[i]));

    /* start again on the same database and data dir */
    fd = open(runlog, O_WRONLY | O_APPEND | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "restart\n", 8), 8);
    close(fd);
    double restarted_at = jobs_now();
    ck_assert_msg(jobs_restart_server(jobs_fast_env) == 0, "aidcd did not start again, see %s",
                  harness_srv.log_path);

    /* everything ends; the tokens issued before the restart still work */
    wait_states(ids, 0, NJOBS, has_ended, "over", 60);

    char *log = harness_read_file(runlog);
    ck_assert_ptr_nonnull(log);
    int restart_line = 0;
    for (const char *p = log; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n')) {
        restart_line++;
        if (strncmp(p, "restart\n", 8) == 0)
            break;
    }
    for (int i = 0; i < NJOBS; i++) {
        json_t *job = get_job(ids[i]);
        const char *want = i == FAILING ? "failed" : "succeeded";
        ck_assert_msg(strcmp(state_of(job), want) == 0, "job %s is %s (%s), want %s", ids[i],
                      state_of(job), json_string_value(json_object_get(job, "reason")), want);
        ck_assert_int_eq(json_integer_value(json_object_get(job, "exit_code")),
                         i == FAILING ? 3 : 0);
        ck_assert_int_eq(json_integer_value(json_object_get(job, "preemption_count")), 0);
        double started = jobs_ts(json_object_get(job, "started_at")),
               finished = jobs_ts(json_object_get(job, "finished_at"));
        ck_assert_msg(started > 0 && finished >= started, "job %s: started_at %s, finished_at %s",
                      ids[i], json_string_value(json_object_get(job, "started_at")),
                      json_string_value(json_object_get(job, "finished_at")));
        if (i <= FAILING) {
            /* ended while aidcd was down: recorded with the time it ended
             * (the executor counts whole seconds), not when aidcd noticed */
            ck_assert_msg(finished >= floor(killed_at) && finished <= restarted_at,
                          "job %s: finished_at %s, but it ended between %.3f and %.3f", ids[i],
                          json_string_value(json_object_get(job, "finished_at")), killed_at,
                          restarted_at);
            ck_assert_msg(started <= killed_at, "job %s: started_at %s is after the kill (%.3f)",
                          ids[i], json_string_value(json_object_get(job, "started_at")),
                          killed_at);
        } else {
            ck_assert_msg(started >= floor(restarted_at),
                          "queued job %s: started_at %s is before the restart (%.3f)", ids[i],
                          json_string_value(json_object_get(job, "started_at")), restarted_at);
        }
        json_decref(job);

        /* each ran exactly once; the queued ones after the restart */
        int starts = count_lines(log, "start", ids[i]), ends = count_lines(log, "end", ids[i]);
        ck_assert_msg(starts == 1 && ends == 1, "job %s: %d starts and %d ends in the log:\n%s",
                      ids[i], starts, ends, log);
        if (i <= FAILING)
            ck_assert_int_lt(line_of(log, "end", ids[i]), restart_line);
        else
            ck_assert_int_gt(line_of(log, "start", ids[i]), restart_line);
        check_history(ids[i], want);

        /* one run interval (metering), closed */
        const char *p[1] = {ids[i]};
        PGresult *r = harness_sql(harness_srv.owner_url,
                                  "SELECT count(*), count(ended_at) FROM job_runs"
                                  " WHERE job_id = $1::uuid",
                                  1, p);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(atoi(PQgetvalue(r, 0, 0)) == 1 && atoi(PQgetvalue(r, 0, 1)) == 1,
                      "job %s has %s runs, %s of them closed", ids[i], PQgetvalue(r, 0, 0),
                      PQgetvalue(r, 0, 1));
        PQclear(r);
    }
    free(log);

    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/" TENANT "/quota", alice, NULL, &r), 200);
    ck_assert(json_number_value(json_object_get(
                  json_object_get(json_object_get(r.json, "resources"), "gpu:a100"), "used")) ==
              0);
    http_res_free(&r);
    for (int i = 0; i < NJOBS; i++)
        free(ids[i]);
}
END_TEST

int main(void)
{
    harness_require_pg();
    jobs_reap_at_exit();
    Suite *s = suite_create("jobs_restart");
    TCase *tc = tcase_create("jobs_restart");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120); /* not enforced without fork; the waits have deadlines */
    tcase_add_test(tc, sigkill_restart_loses_nothing_runs_nothing_twice);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* see the top of the file */
}
