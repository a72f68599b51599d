/*
 * test_slurm_app.c - interactive sessions on a real Slurm, at the backend's
 * level (backend_slurm, no aidcd): a run with app = true gets a free port on
 * its node, exported as PORT and reported in its comment; app_endpoint
 * answers the node's address (from Slurm) and that port, where the job's
 * HTTP app answers under $AIDC_SESSION_BASE_URL; a comment a job writes to
 * point aidcd elsewhere (a system port, another host, garbage, an earlier
 * start's report) is no endpoint.
 *
 * Needs AIDC_TEST_SLURM_* (tests/run.sh; docs/contributing.md); skipped (77)
 * without them.
 */
#include "backends/backend.h"
#include "backends/slurm.h"
#include "lib/err.h"
#include "tests/support/client.h"
#include "tests/support/slurmtest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 90

static json_t *options;
static struct backend_cluster cluster;
static char cred[600], jobs_dir[600];
/* what a failed test left running: cancelled in the tear-down */
static char running[4][24];

/* The app: the run key and the path it was asked for, under the base path only. */
static const char app_script[] =
    "#!/usr/bin/python3\n"
    "import http.server, os\n"
    "base = os.environ['AIDC_SESSION_BASE_URL']\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        body = ('app %s %s %s\\n' % (os.environ['AIDC_JOB_ID'], os.environ['PORT'],\n"
    "                                     self.path)).encode()\n"
    "        self.send_response(200 if self.path.startswith(base) else 404)\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "http.server.HTTPServer(('', int(os.environ['PORT'])), H).serve_forever()\n";

static void setup(void)
{
    slurmtest_env();
    curl_global_init(CURL_GLOBAL_ALL);
    snprintf(cred, sizeof cred, "file:%s", slurm_key);
    snprintf(jobs_dir, sizeof jobs_dir, "%s/jobs", slurm_dir);
    options = json_pack("{s:s, s:s, s:s}", "user_name", slurm_user, "partition", "gpu", "workdir",
                        jobs_dir);
    char err[256] = "";
    ck_assert_msg(backend_slurm.check_options(options, err, sizeof err), "%s", err);
    cluster = (struct backend_cluster){.id = "c",
                                       .name = "hpc",
                                       .kind = "slurm",
                                       .endpoint = slurm_url,
                                       .credentials_ref = cred,
                                       .options = options};
}

static void cancel_job(const char *bid)
{
    char err[256] = "";
    int e = backend_slurm.cancel(&cluster, "", bid, NULL, err, sizeof err);
    if (e)
        fprintf(stderr, "cancel %s: %s\n", bid, err);
}

static void teardown(void)
{
    for (size_t i = 0; i < sizeof running / sizeof running[0]; i++)
        if (running[i][0])
            cancel_job(running[i]);
    json_decref(options);
}

/* Submit run key (this run's, by pid) as a session with script; its Slurm job id into bid. */
static void submit_app(const char *key, const char *script, char *bid, size_t n, size_t slot)
{
    json_t *env =
        json_pack("{s:s, s:s}", "PORT", "8888", "AIDC_SESSION_BASE_URL", fmt("/sessions/%s/", key));
    struct backend_job job = {.id = key,
                              .tenant = "t",
                              .project = "p",
                              .user = "u",
                              .name = "session",
                              .script = script,
                              .env = env,
                              .cpus = 1,
                              .memory_gib = 1,
                              .nodes = 1,
                              .time_limit_minutes = 5,
                              .grace_seconds = 1,
                              .app = true,
                              .priority = "normal"};
    char err[256] = "";
    int e = backend_slurm.submit(&cluster, &job, bid, n, NULL, err, sizeof err);
    json_decref(env);
    ck_assert_msg(e == 0, "submit: %s", err);
    snprintf(running[slot], sizeof running[slot], "%s", bid);
}

/* app_endpoint's answer (err into err) */
static int endpoint(const char *key, const char *bid, struct backend_endpoint *ep, char *err,
                    size_t errsz)
{
    err[0] = '\0';
    return backend_slurm.app_endpoint(&cluster, key, bid, ep, err, errsz);
}

/* Wait until app_endpoint answers want (0: an endpoint; AIDC_ENOTFOUND...). */
static int wait_endpoint(const char *key, const char *bid, int want, struct backend_endpoint *ep)
{
    char err[256];
    int e = 0;
    for (time_t end = time(NULL) + WAIT_S; time(NULL) < end;) {
        e = endpoint(key, bid, ep, err, sizeof err);
        if (e == want)
            return e;
        usleep(200 * 1000); /* between two reads of the condition */
    }
    ck_abort_msg("app_endpoint of %s still answers %d (%s), not %d", bid, e, err, want);
    return e;
}

/* The job's comment as slurmrestd has it (an fmt() buffer). */
static const char *comment_of(const char *bid)
{
    json_t *a = slurm_get(fmt("job/%s", bid));
    const char *c = json_string_value(
        json_object_get(json_array_get(json_object_get(a, "jobs"), 0), "comment"));
    const char *out = fmt("%s", c ? c : "");
    json_decref(a);
    return out;
}

static void wait_comment(const char *bid, const char *want)
{
    for (time_t end = time(NULL) + WAIT_S; time(NULL) < end; usleep(200 * 1000))
        if (strcmp(comment_of(bid), want) == 0)
            return;
    ck_abort_msg("job %s's comment is \"%s\", not \"%s\"", bid, comment_of(bid), want);
}

struct text {
    char buf[4096];
    size_t n;
};

static size_t sink(char *data, size_t size, size_t nmemb, void *arg)
{
    struct text *t = arg;
    size_t n = size * nmemb;
    if (n > sizeof t->buf - 1 - t->n)
        return 0;
    memcpy(t->buf + t->n, data, n);
    t->n += n;
    t->buf[t->n] = '\0';
    return n;
}

/* GET url: its status (0 when nothing answered), the body into t. */
static long http_get(const char *url, struct text *t)
{
    t->n = 0;
    t->buf[0] = '\0';
    CURL *h = curl_easy_init();
    ck_assert_ptr_nonnull(h);
    long status = 0;
    if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_WRITEDATA, t) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_NOPROXY, "*") != CURLE_OK)
        ck_abort_msg("curl_easy_setopt failed");
    if (curl_easy_perform(h) != CURLE_OK ||
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
        status = 0;
    curl_easy_cleanup(h);
    return status;
}

/* The address Slurm has for the node job bid's batch script runs on (an fmt() buffer). */
static const char *batch_host_address(const char *bid)
{
    json_t *a = slurm_get(fmt("job/%s", bid));
    const char *node = json_string_value(
        json_object_get(json_array_get(json_object_get(a, "jobs"), 0), "batch_host"));
    ck_assert_ptr_nonnull(node);
    json_t *nd = slurm_get(fmt("node/%s", node));
    json_decref(a);
    const char *addr = json_string_value(
        json_object_get(json_array_get(json_object_get(nd, "nodes"), 0), "address"));
    ck_assert_ptr_nonnull(addr);
    const char *out = fmt("%s", addr);
    json_decref(nd);
    return out;
}

/* ---- tests --------------------------------------------------------------------------- */

START_TEST(a_session_answers_on_its_node_at_the_port_it_reported)
{
    char key[64], bid[24];
    snprintf(key, sizeof key, "sapp-%d-a", (int)getpid());
    submit_app(key, app_script, bid, sizeof bid, 0);
    struct backend_endpoint ep;
    wait_endpoint(key, bid, 0, &ep);
    ck_assert_str_eq(ep.host, batch_host_address(bid));
    ck_assert_int_ge(ep.port, 1024);
    ck_assert_int_le(ep.port, 65535);
    ck_assert_int_ne(ep.port, 8888); /* the env's PORT was replaced by the node's free one */
    ck_assert_str_eq(comment_of(bid), fmt("aidc %s t/p u aidc-port=%d:0", key, ep.port));
    /* the port is reported before the app binds it: wait for the app */
    struct text t;
    const char *url = fmt("http://%s:%d/sessions/%s/hello", ep.host, ep.port, key);
    long status = 0;
    for (time_t end = time(NULL) + WAIT_S; time(NULL) < end && status == 0; usleep(200 * 1000))
        status = http_get(url, &t);
    ck_assert_int_eq(status, 200);
    ck_assert_str_eq(t.buf, fmt("app %s %d /sessions/%s/hello\n", key, ep.port, key));
    ck_assert_int_eq(http_get(fmt("http://%s:%d/elsewhere", ep.host, ep.port), &t), 404);
    cancel_job(bid);
    running[0][0] = '\0';
    /* a stopped session has no endpoint (its comment stays) */
    wait_endpoint(key, bid, AIDC_ENOTFOUND, &ep);
    ck_assert_str_eq(ep.host, "");
}
END_TEST

START_TEST(a_comment_the_job_writes_never_points_elsewhere)
{
    char key[64], bid[24];
    snprintf(key, sizeof key, "sapp-%d-b", (int)getpid());
    /* a session whose job, once aidc's lines reported its port, says port 22 (sshd) */
    const char *hostile = fmt("aidc %s t/p u aidc-port=22:0", key);
    submit_app(key, fmt("scontrol update JobId=$SLURM_JOB_ID Comment='%s'\nsleep 300\n", hostile),
               bid, sizeof bid, 1);
    wait_comment(bid, hostile);
    struct backend_endpoint ep;
    char err[256];
    ck_assert_int_eq(endpoint(key, bid, &ep, err, sizeof err), AIDC_EINVAL);
    ck_assert_msg(strstr(err, "port 22") != NULL, "%s", err);
    ck_assert_str_eq(ep.host, "");
    /* what else the job's user may write there (the same as the job may, through
     * slurmrestd): each no endpoint */
    static const struct {
        const char *comment;
        int want;
    } cases[] = {
        {"aidc-port=10.1.2.3:8080", AIDC_EINVAL},           /* another host */
        {"aidc-port=8080:0 host=10.1.2.3", AIDC_ENOTFOUND}, /* a host after the report */
        {"aidc-port=evil.example.com:443", AIDC_EINVAL},
        {"aidc-port=70000:0", AIDC_EINVAL},
        {"aidc-port=8080:0:1", AIDC_EINVAL},
        {"aidc-port=-8080:0", AIDC_EINVAL},
        {"aidc-port=8080:3", AIDC_ENOTFOUND}, /* a report of another start */
        {"garbage \x01\x7f", AIDC_ENOTFOUND},
        {"", AIDC_ENOTFOUND},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *body = json_pack("{s:s}", "comment", cases[i].comment);
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        ck_assert_ptr_nonnull(text);
        json_t *a = slurm_call("POST", fmt("job/%s", bid), text);
        free(text);
        ck_assert_int_eq(json_array_size(json_object_get(a, "errors")), 0);
        json_decref(a);
        ck_assert_str_eq(comment_of(bid), cases[i].comment);
        int e = endpoint(key, bid, &ep, err, sizeof err);
        ck_assert_msg(e == cases[i].want, "comment \"%s\": %d (%s), not %d", cases[i].comment, e,
                      err, cases[i].want);
        ck_assert_str_eq(ep.host, "");
    }
    /* a good report again: the host is still Slurm's, whatever the job wrote before */
    json_t *a = slurm_call("POST", fmt("job/%s", bid), "{\"comment\":\"x aidc-port=8080:0\"}");
    json_decref(a);
    ck_assert_int_eq(endpoint(key, bid, &ep, err, sizeof err), 0);
    ck_assert_str_eq(ep.host, batch_host_address(bid));
    ck_assert_int_eq(ep.port, 8080);
    /* another run's job is not this run's session */
    ck_assert_int_eq(endpoint("sapp-someone-else", bid, &ep, err, sizeof err), AIDC_EINVAL);
    ck_assert_int_eq(endpoint(key, "no-such-job", &ep, err, sizeof err), AIDC_ENOTFOUND);
    ck_assert_int_eq(endpoint(key, "999999999", &ep, err, sizeof err), AIDC_ENOTFOUND);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("slurm_app");
    TCase *tc = tcase_create("slurm_app");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 3 * WAIT_S);
    tcase_add_test(tc, a_session_answers_on_its_node_at_the_port_it_reported);
    tcase_add_test(tc, a_comment_the_job_writes_never_points_elsewhere);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* the tear-down cancels what a failed test left running */
}
