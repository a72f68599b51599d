/*
 * test_slurm_outage.c - Slurm's bad days, on the real Slurm:
 * - slurmrestd stopped for 30 s while jobs are submitted: the cluster shows
 *   unhealthy with the error, the jobs wait with a reason (cluster-down in
 *   the queue, or backend-unavailable when admitted before the cluster was
 *   marked down), and when slurmrestd is back every job runs exactly once;
 * - a job that outlives its time limit ends failed, saying so (Slurm's
 *   TIMEOUT comes 60-90 s after the limit of 1 minute; it runs meanwhile).
 *
 * It stops slurmrestd, so no other Slurm test runs meanwhile (ctest's
 * RESOURCE_LOCK slurm_nodes, tests/CMakeLists.txt), and starts it
 * again as tests/run.sh's deploy/slurm-up.sh did (same command line, same
 * environment), recording the new pid where slurm-down.sh looks for it.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/slurmtest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T "phys"
#define NJOBS 5
#define OUTAGE_S 30

static char *ann;

static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200",
                                  "AIDC_INVENTORY_INTERVAL_SECONDS=1", NULL};

static void setup(void)
{
    harness_setup("slurm_outage", env);
    curl_global_init(CURL_GLOBAL_ALL);
    slurmtest_register_cluster();
    ann = jobs_tenant_member(T, "lab", "{\"gpu:a100\":{\"guaranteed\":8,\"limit\":8}}", "ann");
}

static void teardown(void)
{
    free(ann);
    harness_teardown();
}

/* ---- slurmrestd down and up ------------------------------------------------------------ */

static char rest_argv_buf[4096];
static char *rest_argv[32];

static pid_t rest_pid(void)
{
    char *text = harness_read_file(fmt("%s/run/slurmrestd.pid", slurm_dir));
    long pid = text ? strtol(text, NULL, 10) : 0;
    free(text);
    return pid > 1 && kill((pid_t)pid, 0) == 0 ? (pid_t)pid : 0;
}

/* Remember its command line, SIGTERM it, wait until it is gone. */
static void rest_stop(void)
{
    pid_t pid = rest_pid();
    ck_assert_msg(pid > 0, "slurmrestd is not running (%s/run/slurmrestd.pid)", slurm_dir);
    int fd = open(fmt("/proc/%d/cmdline", (int)pid), O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ssize_t n = read(fd, rest_argv_buf, sizeof rest_argv_buf - 1);
    close(fd);
    ck_assert_int_gt(n, 0);
    rest_argv_buf[n] = '\0';
    size_t k = 0;
    for (ssize_t at = 0; at < n && k + 1 < sizeof rest_argv / sizeof rest_argv[0];
         at += (ssize_t)strlen(rest_argv_buf + at) + 1)
        rest_argv[k++] = rest_argv_buf + at;
    rest_argv[k] = NULL;
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    double deadline = jobs_now() + 10;
    while (kill(pid, 0) == 0 && jobs_now() < deadline)
        jobs_nap_ms(50);
    ck_assert_msg(kill(pid, 0) != 0, "slurmrestd did not stop");
}

/* Start it again as slurm-up.sh does, and wait until it answers. */
static void rest_start(void)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (chdir(slurm_dir) != 0)
            _exit(126);
        setsid();
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int log = open(fmt("%s/log/slurmrestd.log", slurm_dir),
                       O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (in < 0 || log < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
            _exit(126);
        char conf[512];
        snprintf(conf, sizeof conf, "SLURM_CONF=%s/etc/slurm.conf", slurm_dir);
        char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", conf, "SLURM_JWT=daemon",
                              NULL};
        execve("/usr/sbin/slurmrestd", rest_argv, envp);
        _exit(127);
    }
    FILE *f = fopen(fmt("%s/run/slurmrestd.pid", slurm_dir), "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%d\n", (int)pid);
    fclose(f);
    double deadline = jobs_now() + 30;
    for (;;) {
        CURL *h = curl_easy_init();
        curl_easy_setopt(h, CURLOPT_URL, fmt("%s/", slurm_url));
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 2L);
        CURLcode rc = curl_easy_perform(h);
        curl_easy_cleanup(h);
        /* anything but a refused connection: it listens (it answers HEAD / oddly) */
        if (rc != CURLE_COULDNT_CONNECT && rc != CURLE_OPERATION_TIMEDOUT)
            return;
        ck_assert_msg(jobs_now() < deadline, "slurmrestd did not come back: %s",
                      curl_easy_strerror(rc));
        jobs_nap_ms(100);
    }
}

static json_t *cluster(void)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/clusters/hpc", harness_srv.admin_token, NULL, &r), 200);
    json_t *c = json_incref(r.json);
    http_res_free(&r);
    return c;
}

/* Queued for cluster-down, or admitted and waiting for the cluster (backend-unavailable). */
static bool waits_for_cluster(const json_t *job)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    const char *reason = json_string_value(json_object_get(job, "reason"));
    return reason && ((strcmp(state, "queued") == 0 && strncmp(reason, "cluster-down", 12) == 0) ||
                      (strcmp(state, "admitted") == 0 &&
                       strcmp(reason, "backend-unavailable") == 0));
}

/* ---- the test -------------------------------------------------------------------------- */

START_TEST(outage_loses_nothing_and_doubles_nothing)
{
    /* runs through the outage, then past its limit */
    char *late = jobs_submit(ann, T,
                             "{\"project\":\"lab\",\"name\":\"late\",\"gpus\":1,\"gpu_type\":"
                             "\"a100\",\"time_limit_minutes\":1,\"script\":\"#!/bin/sh\\n"
                             "sleep 600\\n\"}");
    json_t *j = jobs_wait(ann, T, late, "running", 60);
    json_decref(j);

    double down_at = jobs_now();
    rest_stop();
    char *ids[NJOBS];
    for (int i = 0; i < NJOBS; i++)
        ids[i] = jobs_submit(ann, T,
                             slurmtest_job(fmt("during-%d", i), 1, "a100", "#!/bin/sh\nsleep 1\n"));

    /* the cluster shows down, and every job says why it waits */
    double deadline = jobs_now() + 20;
    for (;;) {
        json_t *c = cluster();
        bool down = json_is_false(json_object_get(c, "healthy")) &&
                    json_string_value(json_object_get(c, "last_error"));
        json_decref(c);
        int waiting = 0;
        for (int i = 0; i < NJOBS; i++) {
            json_t *job = jobs_get(ann, T, ids[i]);
            waiting += waits_for_cluster(job);
            json_decref(job);
        }
        if (down && waiting == NJOBS)
            break;
        ck_assert_msg(jobs_now() < deadline, "after 20 s: cluster down %d, %d of %d jobs waiting "
                      "with a reason", down, waiting, NJOBS);
        jobs_nap_ms(200);
    }
    double left = OUTAGE_S - (jobs_now() - down_at);
    if (left > 0)
        jobs_nap_ms((long)(left * 1000)); /* the outage lasts its 30 s: nothing to wait for */
    rest_start();

    for (int i = 0; i < NJOBS; i++) {
        json_t *job = jobs_wait(ann, T, ids[i], "succeeded,failed,cancelled", 120);
        ck_assert_msg(strcmp(json_string_value(json_object_get(job, "state")), "succeeded") == 0,
                      "job %s: %s", ids[i], json_string_value(json_object_get(job, "reason")));
        json_decref(job);
        ck_assert_int_eq(slurm_jobs_named(ids[i]), 1);
        free(ids[i]);
    }
    json_t *c = cluster();
    ck_assert(json_is_true(json_object_get(c, "healthy")));
    json_decref(c);

    /* the long job kept running through the outage; Slurm ends it at its limit */
    j = jobs_wait(ann, T, late, "succeeded,failed,cancelled", 180);
    ck_assert_str_eq(json_string_value(json_object_get(j, "state")), "failed");
    ck_assert_msg(strstr(json_string_value(json_object_get(j, "reason")), "time limit"),
                  "reason: %s", json_string_value(json_object_get(j, "reason")));
    ck_assert_int_eq(slurm_jobs_named(late), 1);
    json_decref(j);
    free(late);
}
END_TEST

int main(void)
{
    harness_require_pg();
    slurmtest_env();
    Suite *s = suite_create("slurm_outage");
    TCase *tc = tcase_create("slurm_outage");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 400);
    tcase_add_test(tc, outage_loses_nothing_and_doubles_nothing);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
