/*
 * test_kubeerrors.c - backend_kubernetes against a socket that answers what a
 * real API server cannot be made to answer on demand: each status of the
 * table "Errors" in docs/kubernetes.md, garbage, a list in pages, silence,
 * nobody listening, TLS that fails. Each must come back as the aidc error the
 * table says, with a message an operator can act on and never the token; what
 * was sent is checked too (request lines, the DELETE's propagationPolicy, the
 * audit record). Bodies have kube-apiserver 1.20's shape (shared/fixtures/
 * kubernetes/README.md). The TLS handshake case runs `openssl s_server`
 * (without openssl it says so and is skipped).
 */
#include "backends/backend.h"
#include "backends/kubernetes.h"
#include "lib/err.h"
#include "tests/support/cannedhttp.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKEN_VAR  "AIDC_TEST_KUBE_TOKEN"
#define TOKEN      "kube-test-token-5f2c9a7e41d8b3c6a0"
#define ENV_SECRET "s3cret-of-the-job-7d1e"
#define RUN        "0192a0b1-c2d3-7e4f-8a9b-0c1d2e3f4a5b-r1"
#define NS         "aidc-acme" /* options.namespace's default, aidc-{tenant} */
#define JOBNAME    "aidc-" RUN
#define BACKEND_ID NS "/" JOBNAME
#define JOBS_PATH  "/apis/batch/v1/namespaces/" NS "/jobs"
#define JOB_PATH   JOBS_PATH "/" JOBNAME
#define LIST_PATH  "/apis/batch/v1/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Daidc"

/* JSON text in C: JQ(s) is s between JSON-escaped quotes, as in the API server's messages */
#define JQ(s) "\\\"" s "\\\""
#define STATUS(code, reason, msg)                                                                  \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"" msg "\",\"reason\":\"" reason "\",\"code\":" #code "}"
#define LABELS(run)                                                                                \
    "{\"app.kubernetes.io/managed-by\":\"aidc\",\"aidc.io/run\":\"" run "\","                      \
    "\"aidc.io/tenant\":\"acme\",\"aidc.io/project\":\"vision\"}"
#define ST_RUNNING  "{\"startTime\":\"2026-12-02T08:00:00Z\",\"active\":1}"
#define FIELDS(name, labels)                                                                       \
    "\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" NS "\","                                 \
    "\"creationTimestamp\":\"2026-12-02T08:00:00Z\",\"labels\":" labels "},"                    \
    "\"spec\":{\"backoffLimit\":0},\"status\":" ST_RUNNING
#define ITEM(name, labels) "{" FIELDS(name, labels) "}"
#define JOB(labels)                                                                                \
    "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\"," FIELDS(JOBNAME, labels) "}"
#define JOBLIST(cont, items)                                                                       \
    "{\"kind\":\"JobList\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"resourceVersion\":\"206\"," \
    "\"continue\":\"" cont "\"},\"items\":[" items "]}"

/* ---- a cluster on a canned server ---------------------------------------------------- */

/* One canned answer: status 0 is silence; headers NULL is Content-Type: application/json. */
struct reply {
    int status;
    const char *body;
    const char *headers;
};

struct kube {
    struct cannedhttp *srv;
    json_t *options, *env;
    char endpoint[96];
    struct backend_cluster c;
    struct backend_call call;
    char err[1024];
};

static const struct backend_ops *ops = &backend_kubernetes;

/* The cluster at scheme://127.0.0.1:port, its options checked from opts (NULL: {}). */
static void kube_open(struct kube *k, const char *scheme, int port, const char *opts)
{
    json_error_t je;
    k->options = json_loads(opts ? opts : "{}", 0, &je);
    ck_assert_msg(k->options != NULL, "options %s: %s", opts, je.text);
    ck_assert_msg(ops->check_options(k->options, k->err, sizeof k->err), "options refused: %s",
                  k->err);
    k->env = json_pack("{s:s}", "WANDB_API_KEY", ENV_SECRET);
    snprintf(k->endpoint, sizeof k->endpoint, "%s://127.0.0.1:%d", scheme, port);
    k->c = (struct backend_cluster){.id = "c1", .name = "k8s-test", .kind = "kubernetes",
                                    .endpoint = k->endpoint,
                                    .credentials_ref = "env:" TOKEN_VAR, .options = k->options};
    k->err[0] = '\0';
}

static void kube_serve(struct kube *k, const struct reply *r, size_t n, const char *opts)
{
    memset(k, 0, sizeof *k);
    const char *answers[CANNEDHTTP_MAX];
    char *made[CANNEDHTTP_MAX];
    ck_assert_uint_le(n, CANNEDHTTP_MAX);
    for (size_t i = 0; i < n; i++)
        answers[i] = made[i] =
            r[i].status ? cannedhttp_answer(r[i].status, r[i].headers, r[i].body) : NULL;
    k->srv = cannedhttp_start(answers, n);
    for (size_t i = 0; i < n; i++)
        free(made[i]);
    ck_assert_msg(k->srv != NULL, "canned server: %s", strerror(errno));
    kube_open(k, "http", cannedhttp_port(k->srv), opts);
}
#define SERVE(k, ...)                                                                              \
    do {                                                                                           \
        const struct reply replies_[] = {__VA_ARGS__};                                             \
        kube_serve(k, replies_, sizeof replies_ / sizeof replies_[0], NULL);                       \
    } while (0)

static void kube_free(struct kube *k)
{
    cannedhttp_free(k->srv);
    json_decref(k->options);
    json_decref(k->env);
    backend_call_free(&k->call);
    memset(k, 0, sizeof *k);
}

/* submit the run RUN of tenant acme (its env holds ENV_SECRET) */
static int submit(struct kube *k, char *id, size_t idsz)
{
    struct backend_job j = {.id = RUN, .tenant = "acme", .project = "vision", .user = "ada",
                            .name = "train", .image = "busybox:1.36", .script = "echo hi",
                            .env = k->env, .cpus = 1, .memory_gib = 1, .nodes = 1,
                            .grace_seconds = 10, .priority = "normal"};
    id[0] = '\0';
    return ops->submit(&k->c, &j, id, idsz, &k->call, k->err, sizeof k->err);
}

/* The i-th request the server received (after cannedhttp_stop). */
static const char *req(const struct kube *k, size_t i)
{
    const char *r = cannedhttp_request(k->srv, i);
    ck_assert_msg(r != NULL, "request %zu never arrived (%zu did)", i,
                  cannedhttp_nrequests(k->srv));
    return r;
}

/* The i-th request's line is line ("METHOD target HTTP/1.1"). */
static void request_line_is(const struct kube *k, size_t i, const char *line)
{
    const char *r = req(k, i);
    size_t n = strlen(line);
    ck_assert_msg(strncmp(r, line, n) == 0 && strncmp(r + n, "\r\n", 2) == 0,
                  "request %zu is\n%.300s\nwant the line %s", i, r, line);
}

static void requests_are(const struct kube *k, size_t want)
{
    size_t n = cannedhttp_nrequests(k->srv);
    const char *last = n ? cannedhttp_request(k->srv, n - 1) : NULL;
    ck_assert_msg(n == want, "%zu requests, want %zu; the last:\n%.300s", n, want,
                  last ? last : "");
}

static void err_has(const struct kube *k, const char *want)
{
    ck_assert_msg(strstr(k->err, want) != NULL, "message \"%s\" lacks \"%s\"", k->err, want);
}

/* Neither the message nor the call's record holds the token or the job's env values. */
static void nothing_secret(const struct kube *k)
{
    ck_assert_msg(strstr(k->err, TOKEN) == NULL, "the token is in the message: %s", k->err);
    if (!k->call.request)
        return;
    char *rec = json_dumps(k->call.request, JSON_COMPACT);
    ck_assert_ptr_nonnull(rec);
    ck_assert_msg(strstr(rec, TOKEN) == NULL, "the token is in the record: %s", rec);
    ck_assert_msg(strstr(rec, ENV_SECRET) == NULL, "an env value is in the record: %s", rec);
    free(rec);
}

/* j.k1.k2 as a string (k2 NULL: j.k1), or NULL */
static const char *str_at(const json_t *j, const char *k1, const char *k2)
{
    j = json_object_get(j, k1);
    return json_string_value(k2 ? json_object_get(j, k2) : j);
}

static void setup(void)
{
    setenv(TOKEN_VAR, TOKEN, 1);
}

/* ---- submit -------------------------------------------------------------------------- */

START_TEST(submit_created)
{
    struct kube k;
    SERVE(&k, {201, JOB(LABELS(RUN)), NULL});
    char id[160];
    ck_assert_msg(submit(&k, id, sizeof id) == 0, "201 taken for an error: %s", k.err);
    cannedhttp_stop(k.srv);
    ck_assert_str_eq(id, BACKEND_ID);
    ck_assert_int_eq(k.call.status, 201);
    ck_assert(!k.call.adopted);
    requests_are(&k, 1);
    request_line_is(&k, 0, "POST " JOBS_PATH " HTTP/1.1");
    const char *r = req(&k, 0);
    ck_assert_ptr_nonnull(strstr(r, "\r\nAuthorization: Bearer " TOKEN "\r\n"));
    ck_assert_ptr_nonnull(strstr(r, "\r\nContent-Type: application/json\r\n"));
    json_t *sent = json_loads(cannedhttp_body(k.srv, 0), 0, NULL);
    ck_assert_msg(sent != NULL, "the body is no JSON: %s", cannedhttp_body(k.srv, 0));
    ck_assert_str_eq(str_at(sent, "metadata", "name"), JOBNAME);
    json_decref(sent);
    ck_assert_ptr_nonnull(strstr(r, ENV_SECRET)); /* the job gets its env... */
    /* ...the audit record does not, nor the token */
    ck_assert_str_eq(str_at(k.call.request, "method", NULL), "POST");
    ck_assert_str_eq(str_at(k.call.request, "headers", "Authorization"), "[redacted]");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

START_TEST(submit_401_names_the_token)
{
    struct kube k;
    SERVE(&k, {401, STATUS(401, "Unauthorized", "Unauthorized"), NULL});
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EFORBIDDEN);
    cannedhttp_stop(k.srv);
    ck_assert_int_eq(k.call.status, 401);
    err_has(&k, "401");
    err_has(&k, "token");
    err_has(&k, "credentials_ref");
    nothing_secret(&k);
    ck_assert_str_eq(id, "");
    kube_free(&k);
}
END_TEST

#define SA JQ("system:serviceaccount:aidc:aidc")
#define FORBIDDEN_MSG                                                                              \
    "jobs.batch is forbidden: User " SA " cannot create resource " JQ("jobs") " in API group "    \
    JQ("batch") " in the namespace " JQ(NS)

START_TEST(submit_403_is_rbac)
{
    struct kube k;
    SERVE(&k, {403, STATUS(403, "Forbidden", FORBIDDEN_MSG), NULL});
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EFORBIDDEN);
    cannedhttp_stop(k.srv);
    err_has(&k, "403");
    err_has(&k, "RBAC");
    err_has(&k, "User \"system:serviceaccount:aidc:aidc\" cannot create resource \"jobs\"");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

START_TEST(submit_404_names_the_namespace)
{
    struct kube k;
    SERVE(&k, {404,
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
               "\"message\":\"namespaces " JQ(NS) " not found\",\"reason\":\"NotFound\","
               "\"details\":{\"name\":\"" NS "\",\"kind\":\"namespaces\"},\"code\":404}",
               NULL});
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EINVAL); /* fails at once */
    cannedhttp_stop(k.srv);
    requests_are(&k, 1);
    err_has(&k, "namespace " NS);
    err_has(&k, "k8s-test");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

#define EXISTS_MSG "jobs.batch " JQ(JOBNAME) " already exists"

START_TEST(submit_409_adopts_the_runs_job)
{
    struct kube k;
    SERVE(&k, {409, STATUS(409, "AlreadyExists", EXISTS_MSG), NULL},
          {200, JOB(LABELS(RUN)), NULL});
    char id[160];
    ck_assert_msg(submit(&k, id, sizeof id) == 0, "the run's own Job not adopted: %s", k.err);
    cannedhttp_stop(k.srv);
    ck_assert(k.call.adopted);
    ck_assert_str_eq(id, BACKEND_ID);
    requests_are(&k, 2);
    request_line_is(&k, 0, "POST " JOBS_PATH " HTTP/1.1");
    request_line_is(&k, 1, "GET " JOB_PATH " HTTP/1.1");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

/* a Job of that name aidc did not make for this run: another run's, or a stranger's */
static const char *const strangers[] = {
    JOB(LABELS("0192a0b1-c2d3-7e4f-8a9b-0c1d2e3f4a5b-r0")),
    JOB("{\"app\":\"someone-elses\"}"),
    "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"" JOBNAME "\"}}",
};

START_TEST(submit_409_of_a_stranger_fails)
{
    struct kube k;
    SERVE(&k, {409, STATUS(409, "AlreadyExists", EXISTS_MSG), NULL}, {200, strangers[_i], NULL});
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EINVAL);
    cannedhttp_stop(k.srv);
    ck_assert(!k.call.adopted);
    requests_are(&k, 2);
    request_line_is(&k, 1, "GET " JOB_PATH " HTTP/1.1");
    err_has(&k, NS "/" JOBNAME);
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

#define INVALID_MSG                                                                                \
    "Job.batch " JQ(JOBNAME) " is invalid: spec.template.spec.containers[0].image: Required value"

START_TEST(submit_422_says_why)
{
    struct kube k;
    SERVE(&k, {422,
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
               "\"message\":\"" INVALID_MSG "\",\"reason\":\"Invalid\",\"details\":{\"name\":\""
               JOBNAME "\",\"group\":\"batch\",\"kind\":\"Job\",\"causes\":[{\"reason\":"
               "\"FieldValueRequired\",\"message\":\"Required value\",\"field\":"
               "\"spec.template.spec.containers[0].image\"}]},\"code\":422}",
               NULL});
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EINVAL);
    cannedhttp_stop(k.srv);
    ck_assert_int_eq(k.call.status, 422);
    err_has(&k, "422");
    err_has(&k, "spec.template.spec.containers[0].image: Required value");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

/* tried again later (AIDC_EUNAVAIL), saying what the server said */
static const struct {
    struct reply r;
    const char *says;
} busy[] = {
    {{429, STATUS(429, "TooManyRequests", "Too many requests, please try again later."),
      "Content-Type: application/json\r\nRetry-After: 1\r\n"},
     "Too many requests"},
    {{500, STATUS(500, "InternalError", "Internal error occurred: etcdserver: request timed out"),
      NULL},
     "etcdserver: request timed out"},
    {{503, "no healthy upstream", "Content-Type: text/plain\r\n"}, "no healthy upstream"},
    {{502, "<html><body>502 Bad Gateway</body></html>", "Content-Type: text/html\r\n"},
     "502 Bad Gateway"},
};

START_TEST(submit_busy_is_retried)
{
    struct kube k;
    kube_serve(&k, &busy[_i].r, 1, NULL);
    char id[160], code[8];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EUNAVAIL);
    cannedhttp_stop(k.srv);
    requests_are(&k, 1);
    ck_assert_int_eq(k.call.status, busy[_i].r.status);
    snprintf(code, sizeof code, "%d", busy[_i].r.status);
    err_has(&k, code);
    err_has(&k, busy[_i].says);
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

START_TEST(submit_without_token_sends_nothing)
{
    unsetenv(TOKEN_VAR);
    struct kube k;
    SERVE(&k, {201, JOB(LABELS(RUN)), NULL});
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EFORBIDDEN);
    cannedhttp_stop(k.srv);
    requests_are(&k, 0);
    err_has(&k, TOKEN_VAR);
    kube_free(&k);
}
END_TEST

/* ---- lists --------------------------------------------------------------------------- */

struct seen {
    int n;
    char ids[4][160], runs[4][64];
    int states[4];
};

static void remember(void *arg, const char *backend_id, const char *run_key,
                     const struct backend_status *st)
{
    struct seen *s = arg;
    if (s->n < 4) {
        snprintf(s->ids[s->n], sizeof s->ids[0], "%s", backend_id);
        snprintf(s->runs[s->n], sizeof s->runs[0], "%s", run_key);
        s->states[s->n] = st->state;
    }
    s->n++;
}

/* 200 with what is no list: an error (tried again), never a crash, nothing reported */
static const struct reply garbage[] = {
    {200, "{\"items\":[{\"metadata\":", NULL},
    {200, "<html><body>Welcome to nginx!</body></html>", "Content-Type: text/html\r\n"},
    {200, "{\"kind\":\"JobList\",\"items\":{\"not\":\"an array\"}}", NULL},
    {200, "", NULL},
};

START_TEST(list_of_garbage_is_an_error)
{
    struct kube k;
    kube_serve(&k, &garbage[_i], 1, NULL);
    struct seen s = {0};
    int e = ops->poll_changed(&k.c, 0, remember, &s, k.err, sizeof k.err);
    ck_assert_msg(e == AIDC_EUNAVAIL, "poll_changed of %s: %d (%s)", garbage[_i].body, e, k.err);
    ck_assert_int_eq(s.n, 0);
    ck_assert_msg(k.err[0], "no message");
    kube_free(&k);

    kube_serve(&k, &garbage[_i], 1, NULL);
    struct backend_resource res[8];
    ck_assert_int_eq(ops->inventory(&k.c, res, 8, k.err, sizeof k.err), -1);
    ck_assert_msg(k.err[0], "no message");
    cannedhttp_stop(k.srv);
    request_line_is(&k, 0, "GET /api/v1/nodes?watch=false&limit=500 HTTP/1.1");
    kube_free(&k);
}
END_TEST

/* metadata.continue of a real 1.20 server (base64 with '='), and a '/' for good measure */
#define CONT "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjA2LCJzdGFydCI6ImFpZGMtYiJ9/x="
#define CONT_ESCAPED                                                                               \
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjA2LCJzdGFydCI6ImFpZGMtYiJ9%2Fx%3D"

START_TEST(list_follows_continue)
{
    struct kube k;
    SERVE(&k, {200, JOBLIST(CONT, ITEM("aidc-a", LABELS("run-a"))), NULL},
          {200, JOBLIST("", ITEM("aidc-b", LABELS("run-b"))), NULL});
    struct seen s = {0};
    ck_assert_msg(ops->poll_changed(&k.c, 0, remember, &s, k.err, sizeof k.err) == 0, "%s",
                  k.err);
    cannedhttp_stop(k.srv);
    requests_are(&k, 2);
    request_line_is(&k, 0, "GET " LIST_PATH "&limit=500 HTTP/1.1");
    request_line_is(&k, 1, "GET " LIST_PATH "&limit=500&continue=" CONT_ESCAPED " HTTP/1.1");
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(s.ids[0], NS "/aidc-a");
    ck_assert_str_eq(s.runs[0], "run-a");
    ck_assert_str_eq(s.ids[1], NS "/aidc-b");
    ck_assert_int_eq(s.states[1], BS_RUNNING);
    kube_free(&k);
}
END_TEST

START_TEST(list_page_refused_is_an_error)
{
    struct kube k;
    SERVE(&k, {200, JOBLIST(CONT, ITEM("aidc-a", LABELS("run-a"))), NULL},
          {403, STATUS(403, "Forbidden", "jobs.batch is forbidden"), NULL});
    struct seen s = {0};
    ck_assert_int_eq(ops->poll_changed(&k.c, 0, remember, &s, k.err, sizeof k.err),
                     AIDC_EFORBIDDEN);
    cannedhttp_stop(k.srv);
    requests_are(&k, 2);
    err_has(&k, "RBAC");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

/* ---- cancel, preempt, poll ----------------------------------------------------------- */

static int stop_job(struct kube *k, int preempt)
{
    return preempt ? ops->preempt(&k->c, RUN, BACKEND_ID, 30, &k->call, k->err, sizeof k->err)
                   : ops->cancel(&k->c, RUN, BACKEND_ID, &k->call, k->err, sizeof k->err);
}

START_TEST(stop_deletes_with_its_pods)
{
    struct kube k;
    SERVE(&k, {200,
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\","
               "\"details\":{\"name\":\"" JOBNAME "\",\"group\":\"batch\",\"kind\":\"jobs\","
               "\"uid\":\"d95f6be6-af7b-4d46-8206-3d2470eb2674\"}}",
               NULL}, /* then a session's Service of its name: none */
          {404, STATUS(404, "NotFound", "services " JQ(JOBNAME) " not found"), NULL});
    ck_assert_msg(stop_job(&k, _i) == 0, "%s", k.err);
    cannedhttp_stop(k.srv);
    requests_are(&k, 2);
    request_line_is(&k, 0, "DELETE " JOB_PATH " HTTP/1.1");
    request_line_is(&k, 1, "DELETE /api/v1/namespaces/" NS "/services/" JOBNAME " HTTP/1.1");
    ck_assert_str_eq(str_at(k.call.request, "service", "method"), "DELETE"); /* redacted: below */
    ck_assert_ptr_nonnull(strstr(req(&k, 0), "\r\nAuthorization: Bearer " TOKEN "\r\n"));
    json_t *body = json_loads(cannedhttp_body(k.srv, 0), 0, NULL);
    ck_assert_msg(body != NULL, "the DELETE has no JSON body: %s", req(&k, 0));
    ck_assert_str_eq(str_at(body, "propagationPolicy", NULL), "Background");
    json_decref(body);
    ck_assert_int_eq(k.call.status, 200);
    ck_assert_str_eq(str_at(k.call.request, "method", NULL), "DELETE");
    ck_assert_str_eq(str_at(k.call.request, "headers", "Authorization"), "[redacted]");
    ck_assert_str_eq(str_at(k.call.request, "body", "propagationPolicy"), "Background");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

/* a Job (then its Service) gone is stopped; a busy server is tried again, at either */
#define GONE(what) {404, STATUS(404, "NotFound", what " " JQ(JOBNAME) " not found"), NULL}
#define BUSY {503, "no healthy upstream", "Content-Type: text/plain\r\n"}
static const struct {
    struct reply r[2];
    int rc;
} stops[] = {{{GONE("jobs.batch"), GONE("services")}, 0}, {{BUSY, {0, NULL, NULL}}, AIDC_EUNAVAIL},
             {{GONE("jobs.batch"), BUSY}, AIDC_EUNAVAIL}};

START_TEST(stop_answers)
{
    struct kube k;
    kube_serve(&k, stops[_i / 2].r, 2, NULL);
    int e = stop_job(&k, _i % 2);
    cannedhttp_stop(k.srv);
    ck_assert_msg(e == stops[_i / 2].rc, "%s answered %d: %d (%s)", _i % 2 ? "preempt" : "cancel",
                  stops[_i / 2].r[0].status, e, k.err);
    ck_assert_int_eq(k.call.status, stops[_i / 2].r[0].status);
    request_line_is(&k, 0, "DELETE " JOB_PATH " HTTP/1.1");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

/* GET of one Job: gone is BS_UNKNOWN (no error); refusals and a busy server are errors */
static const struct {
    struct reply r;
    int rc, state;
} polls[] = {
    {{404, STATUS(404, "NotFound", "jobs.batch " JQ(JOBNAME) " not found"), NULL}, 0, BS_UNKNOWN},
    {{200, JOB(LABELS(RUN)), NULL}, 0, BS_RUNNING},
    {{401, STATUS(401, "Unauthorized", "Unauthorized"), NULL}, AIDC_EFORBIDDEN, 0},
    {{429, STATUS(429, "TooManyRequests", "Too many requests"), NULL}, AIDC_EUNAVAIL, 0},
};

START_TEST(poll_answers)
{
    struct kube k;
    kube_serve(&k, &polls[_i].r, 1, NULL);
    struct backend_status st;
    int e = ops->poll(&k.c, RUN, BACKEND_ID, &st, k.err, sizeof k.err);
    cannedhttp_stop(k.srv);
    ck_assert_msg(e == polls[_i].rc, "poll answered %d: %d (%s)", polls[_i].r.status, e, k.err);
    request_line_is(&k, 0, "GET " JOB_PATH " HTTP/1.1");
    if (!e)
        ck_assert_int_eq(st.state, polls[_i].state);
    ck_assert_msg(e || st.state != BS_UNKNOWN || st.reason[0], "gone, and no reason");
    ck_assert_msg(!e || k.err[0], "no message");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

/* ---- no answer ----------------------------------------------------------------------- */

START_TEST(silence_times_out)
{
    struct kube k;
    const struct reply silent = {0, NULL, NULL};
    kube_serve(&k, &silent, 1, "{\"timeout_seconds\":1}");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EUNAVAIL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(took < 2.5, "the call took %.1f s with timeout_seconds 1", took);
    ck_assert_msg(strstr(k.err, "imed out") || strstr(k.err, "imeout"), "err: %s", k.err);
    ck_assert_ptr_nonnull(k.call.request); /* it was sent all the same: audited */
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

START_TEST(nobody_listening_is_unavailable)
{
    /* a port that was free a moment ago: nobody listens there once the server stops */
    struct cannedhttp *s = cannedhttp_start(NULL, 0);
    ck_assert_ptr_nonnull(s);
    int port = cannedhttp_port(s);
    cannedhttp_free(s);
    struct kube k;
    memset(&k, 0, sizeof k);
    kube_open(&k, "http", port, NULL);
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EUNAVAIL);
    err_has(&k, "127.0.0.1");
    struct backend_status st;
    ck_assert_int_eq(ops->poll(&k.c, RUN, BACKEND_ID, &st, k.err, sizeof k.err), AIDC_EUNAVAIL);
    kube_free(&k);
}
END_TEST

/* ---- TLS ----------------------------------------------------------------------------- */

static char tmpdir[64];

static void path_of(char *out, size_t n, const char *file)
{
    snprintf(out, n, "%.63s/%.40s", tmpdir, file);
}

static void tls_setup(void)
{
    setup();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/aidc-kubeerrors-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tls_teardown(void)
{
    static const char *const files[] = {"not-pem", "server.pem", "server.key", "other.pem",
                                        "other.key"};
    char p[128];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        path_of(p, sizeof p, files[i]);
        (void)unlink(p);
    }
    (void)rmdir(tmpdir);
}

START_TEST(ca_file_not_pem_fails_naming_it)
{
    char ca[128], opts[256];
    path_of(ca, sizeof ca, "not-pem");
    FILE *f = fopen(ca, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs("this is no PEM bundle\n", f), 0);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(opts, sizeof opts, "{\"ca_file\":\"%s\",\"timeout_seconds\":2}", ca);
    struct kube k;
    const struct reply silent = {0, NULL, NULL};
    kube_serve(&k, &silent, 1, opts);
    snprintf(k.endpoint, sizeof k.endpoint, "https://127.0.0.1:%d", cannedhttp_port(k.srv));
    char id[160];
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EUNAVAIL);
    err_has(&k, "TLS");
    err_has(&k, "ca_file");
    nothing_secret(&k);
    kube_free(&k);
}
END_TEST

/* Start argv quietly, its stdout to out_fd (-1: none); its pid. */
static pid_t run(char *const argv[], int out_fd)
{
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(out_fd >= 0 ? out_fd : nul, 1) < 0 ||
            dup2(nul, 2) < 0)
            _exit(127);
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL); /* a test that fails leaves no server */
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* A self-signed certificate for 127.0.0.1 (and key) named name in tmpdir; false without openssl. */
static bool make_cert(const char *name, const char *extra)
{
    char cert[128], key[128];
    snprintf(cert, sizeof cert, "%.63s/%.20s.pem", tmpdir, name);
    snprintf(key, sizeof key, "%.63s/%.20s.key", tmpdir, name);
    char *argv[] = {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-addext",
                    (char *)extra, NULL};
    int st;
    pid_t pid = run(argv, -1);
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* openssl s_server with server.pem on a free port of 127.0.0.1 (-1: none) */
static pid_t tls_server(int *port)
{
    char cert[128], key[128];
    path_of(cert, sizeof cert, "server.pem");
    path_of(key, sizeof key, "server.key");
    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    char *argv[] = {"openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key,
                    "-www", NULL};
    pid_t pid = run(argv, p[1]);
    close(p[1]);
    char out[512] = "";
    size_t got = 0;
    const char *acc = NULL;
    /* it says "ACCEPT 127.0.0.1:<port>" once it listens */
    while (pid > 0 && !(acc = strstr(out, "ACCEPT 127.0.0.1:")) && got < sizeof out - 1) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        if (poll(&pf, 1, 10000) <= 0)
            break;
        ssize_t n = read(p[0], out + got, sizeof out - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        out[got] = '\0';
    }
    close(p[0]);
    *port = acc ? (int)strtol(acc + strlen("ACCEPT 127.0.0.1:"), NULL, 10) : -1;
    return pid;
}

START_TEST(untrusted_server_fails_naming_ca_file)
{
    if (!make_cert("server", "basicConstraints=critical,CA:TRUE") ||
        !make_cert("other", "basicConstraints=critical,CA:FALSE")) {
        fprintf(stderr, "test_kubeerrors: no openssl to make certificates: TLS handshake "
                        "case not run\n");
        return;
    }
    int port;
    pid_t pid = tls_server(&port);
    ck_assert_msg(port > 0, "openssl s_server did not start");
    char ca[128], opts[256], id[160];
    /* ca_file a certificate that is no CA, and not the server's: the handshake fails */
    path_of(ca, sizeof ca, "other.pem");
    snprintf(opts, sizeof opts, "{\"ca_file\":\"%s\",\"timeout_seconds\":5}", ca);
    struct kube k;
    memset(&k, 0, sizeof k);
    kube_open(&k, "https", port, opts);
    ck_assert_int_eq(submit(&k, id, sizeof id), AIDC_EUNAVAIL);
    err_has(&k, "TLS");
    err_has(&k, "ca_file");
    nothing_secret(&k);
    kube_free(&k);
    /* the server's own: TLS passes (and the HTML that s_server answers is no JobList) */
    path_of(ca, sizeof ca, "server.pem");
    snprintf(opts, sizeof opts, "{\"ca_file\":\"%s\",\"timeout_seconds\":5}", ca);
    kube_open(&k, "https", port, opts);
    struct seen s = {0};
    ck_assert_int_eq(ops->poll_changed(&k.c, 0, remember, &s, k.err, sizeof k.err),
                     AIDC_EUNAVAIL);
    ck_assert_msg(strstr(k.err, "TLS") == NULL, "TLS failed with the right CA: %s", k.err);
    err_has(&k, "no items");
    kube_free(&k);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kubeerrors");
    TCase *tc = tcase_create("answers");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, submit_created);
    tcase_add_test(tc, submit_401_names_the_token);
    tcase_add_test(tc, submit_403_is_rbac);
    tcase_add_test(tc, submit_404_names_the_namespace);
    tcase_add_test(tc, submit_409_adopts_the_runs_job);
    tcase_add_loop_test(tc, submit_409_of_a_stranger_fails, 0,
                        (int)(sizeof strangers / sizeof strangers[0]));
    tcase_add_test(tc, submit_422_says_why);
    tcase_add_loop_test(tc, submit_busy_is_retried, 0, (int)(sizeof busy / sizeof busy[0]));
    tcase_add_test(tc, submit_without_token_sends_nothing);
    tcase_add_loop_test(tc, list_of_garbage_is_an_error, 0,
                        (int)(sizeof garbage / sizeof garbage[0]));
    tcase_add_test(tc, list_follows_continue);
    tcase_add_test(tc, list_page_refused_is_an_error);
    tcase_add_loop_test(tc, stop_deletes_with_its_pods, 0, 2); /* cancel, preempt */
    tcase_add_loop_test(tc, stop_answers, 0, (int)(2 * sizeof stops / sizeof stops[0]));
    tcase_add_loop_test(tc, poll_answers, 0, (int)(sizeof polls / sizeof polls[0]));
    tcase_add_test(tc, silence_times_out);
    tcase_add_test(tc, nobody_listening_is_unavailable);
    suite_add_tcase(s, tc);
    TCase *tls = tcase_create("tls");
    tcase_add_checked_fixture(tls, tls_setup, tls_teardown);
    tcase_set_timeout(tls, 30);
    tcase_add_test(tls, ca_file_not_pem_fails_naming_it);
    tcase_add_test(tls, untrusted_server_fails_naming_ca_file);
    suite_add_tcase(s, tls);
    return suite_run(s);
}
