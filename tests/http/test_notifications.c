/*
 * test_notifications.c - notifications end to end (docs/notifications.md):
 * the preferences' round trip (a webhook's secret never shown, kept when a
 * client saves what it read), every validation limit, a job's end e-mailed
 * through the real SMTP receiver of tests/run.sh (STARTTLS, AUTH) and POSTed
 * to a webhook receiver this test runs (tests/notify/webhook-receiver.py,
 * which checks the signature as a receiver would and fails the first two
 * attempts, so the delivery log shows the retries), a delivery failed after
 * AIDC_NOTIFY_MAX_ATTEMPTS, a slow receiver holding up no other delivery,
 * other users' events never delivered to you, budget.80 once a month,
 * session.ready and allocation.expiring through their producers, and
 * the server-side request forgery guard: literal loopback, link-local
 * (metadata) and private addresses refused when saved, and a name that
 * resolves to the loopback refused when delivered, once aidcd runs without
 * AIDC_WEBHOOK_ALLOW_LOOPBACK.
 *
 * The e-mail checks skip (saying so) without AIDC_TEST_SMTP_URL.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/secrets.h"
#include "tests/support/suite.h"

#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET "whsec-0123456789-abcdef"
#define ME     "/api/v1/me/notifications"
#define LOG    "/api/v1/me/notifications/deliveries"

static char *ann, *bob;
static pid_t receiver = -1;
static int receiver_port;
static char hooks_dir[300];
static char *env[16];
static bool smtp;

static void start_receiver(void)
{
    snprintf(hooks_dir, sizeof hooks_dir, "%s/hooks", harness_srv.data_dir);
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    receiver = fork();
    ck_assert_int_ge(receiver, 0);
    if (receiver == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        execl("/usr/bin/python3", "python3", AIDC_SOURCE_DIR "/tests/notify/webhook-receiver.py",
              "--dir", hooks_dir, "--secret", SECRET, "--fail-first", "2", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    ck_assert_ptr_nonnull(f);
    char line[64] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    ck_assert_msg(strncmp(line, "port ", 5) == 0, "the receiver said: %s", line);
    receiver_port = (int)strtol(line + 5, NULL, 10);
    ck_assert_int_gt(receiver_port, 0);
}

static void setup(void)
{
    int n = 0;
    const char *fixed[] = {"AIDC_SYNC_INTERVAL_MS=100",         "AIDC_ADMISSION_INTERVAL_MS=200",
                           "AIDC_WEBHOOK_ALLOW_LOOPBACK=1",     "AIDC_NOTIFY_BACKOFF_SECONDS=1",
                           "AIDC_NOTIFY_BACKOFF_MAX_SECONDS=1", "AIDC_NOTIFY_MAX_ATTEMPTS=4",
                           "AIDC_NOTIFY_TIMEOUT_SECONDS=6"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        env[n++] = strdup(fixed[i]);
    const char *url = getenv("AIDC_TEST_SMTP_URL");
    smtp = url && url[0] && getenv("AIDC_TEST_SMTP_DIR");
    if (smtp) {
        env[n++] = strdup(fmt("AIDC_SMTP_URL=%s", url));
        env[n++] = strdup("AIDC_SMTP_FROM=aidc@example.org");
        env[n++] = strdup(fmt("AIDC_SMTP_USER=%s", getenv("AIDC_TEST_SMTP_USER")));
        env[n++] =
            strdup(fmt("AIDC_SMTP_PASSWORD_REF=file:%s", getenv("AIDC_TEST_SMTP_PASSWORD_FILE")));
        env[n++] = strdup(fmt("AIDC_SMTP_CA_FILE=%s", getenv("AIDC_TEST_SMTP_CA")));
        secrets_note_file(getenv("AIDC_TEST_SMTP_PASSWORD_FILE"));
    } else
        fprintf(stderr, "test_notifications: no AIDC_TEST_SMTP_URL (tests/run.sh starts the SMTP "
                        "receiver): the e-mail checks skip\n");
    env[n] = NULL;
    secrets_note(SECRET);
    harness_setup("notifications", (const char *const *)env);
    jobs_local_cluster("{\"a100\":4}");
    ann = jobs_tenant_member("lab", "mol", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}", "ann");
    make_project("lab", "side");
    bob = jobs_tenant_member("far", "pro", "{\"gpu:a100\":{\"guaranteed\":1,\"limit\":2}}", "bob");
    jobs_admin_ok("PATCH", "/api/v1/users/ann", "{\"email\":\"ann@example.org\"}", 200);
    jobs_admin_ok("PATCH", "/api/v1/users/bob", "{\"email\":\"bob@example.org\"}", 200);
    start_receiver();
}

static void teardown(void)
{
    if (receiver > 0) {
        kill(receiver, SIGTERM);
        waitpid(receiver, NULL, 0);
    }
    free(ann);
    free(bob);
    for (int i = 0; env[i]; i++)
        free(env[i]);
    jobs_stop_shims(10);
    harness_teardown();
}

/* The receiver's URL for path (a ring of its own: fmt's is reused by the client) */
static const char *hook(const char *path)
{
    static char ring[16][256];
    static int next;
    char *b = ring[next++ % 16];
    snprintf(b, sizeof ring[0], "http://127.0.0.1:%d%s", receiver_port, path);
    return b;
}

/* PUT prefs as token; the status (the answer in *out when out). */
static long put(const char *token, const char *body, struct http_res *out)
{
    struct http_res r;
    long st = reqj("PUT", ME, token, body, &r);
    if (out)
        *out = r;
    else
        http_res_free(&r);
    return st;
}

static void put_problem(const char *body, const char *code)
{
    struct http_res r;
    long st = put(ann, body, &r);
    ck_assert_msg(st == 422 || st == 400, "PUT %s answered %ld: %s", body, st, r.body);
    expect_problem(&r, code, NULL, NULL);
    http_res_free(&r);
}

/* The receiver's record of delivery for job_id whose path starts with prefix and that was
 * answered with status (new reference), waiting up to timeout_s; NULL if none came. */
static json_t *received(const char *prefix, const char *job_id, long status, int timeout_s)
{
    double until = jobs_now() + timeout_s;
    do {
        DIR *d = opendir(hooks_dir);
        struct dirent *e;
        json_t *found = NULL;
        while (d && !found && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            json_t *rec = json_load_file(fmt("%s/%s", hooks_dir, e->d_name), 0, NULL);
            const json_t *job =
                json_object_get(json_object_get(json_object_get(rec, "body"), "data"), "job");
            if (rec && strncmp(jstr(rec, "path"), prefix, strlen(prefix)) == 0 &&
                jint(rec, "status") == status && jstr(job, "id") &&
                strcmp(jstr(job, "id"), job_id) == 0)
                found = json_incref(rec);
            json_decref(rec);
        }
        if (d)
            closedir(d);
        if (found)
            return found;
        jobs_nap_ms(100);
    } while (jobs_now() < until);
    return NULL;
}

/* How many records the receiver holds for paths starting with prefix. */
static int received_count(const char *prefix)
{
    DIR *d = opendir(hooks_dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        json_t *rec = json_load_file(fmt("%s/%s", hooks_dir, e->d_name), 0, NULL);
        if (rec && strncmp(jstr(rec, "path"), prefix, strlen(prefix)) == 0)
            n++;
        json_decref(rec);
    }
    if (d)
        closedir(d);
    return n;
}

/* The caller's delivery with url (NULL: the e-mail) for event once it is in state
 * (new reference), waiting up to timeout_s. */
static json_t *delivery(const char *token, const char *url, const char *event, const char *state,
                        int timeout_s)
{
    double until = jobs_now() + timeout_s;
    do {
        json_t *items = get_items(LOG "?limit=100", token);
        size_t i;
        json_t *it, *found = NULL;
        json_array_foreach(items, i, it)
        {
            bool same = url ? jstr(it, "url") && strcmp(jstr(it, "url"), url) == 0
                            : strcmp(jstr(it, "channel"), "email") == 0;
            if (same && strcmp(jstr(it, "event"), event) == 0 &&
                strcmp(jstr(it, "state"), state) == 0) {
                found = json_incref(it);
                break;
            }
        }
        json_decref(items);
        if (found)
            return found;
        jobs_nap_ms(100);
    } while (jobs_now() < until);
    return NULL;
}

/* The stored mail to rcpt that mentions needle and also (unless NULL) also (malloc'd text),
 * waiting up to timeout_s. */
static char *mail_to(const char *rcpt, const char *needle, const char *also, int timeout_s)
{
    const char *dir = getenv("AIDC_TEST_SMTP_DIR");
    double until = jobs_now() + timeout_s;
    do {
        DIR *d = opendir(dir);
        struct dirent *e;
        char *found = NULL;
        while (d && !found && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char *text = harness_read_file(fmt("%s/%s", dir, e->d_name));
            if (text && strstr(text, fmt("X-Envelope-To: %s\r\n", rcpt)) && strstr(text, needle) &&
                (!also || strstr(text, also)))
                found = text;
            else
                free(text);
        }
        if (d)
            closedir(d);
        if (found)
            return found;
        jobs_nap_ms(100);
    } while (jobs_now() < until);
    return NULL;
}

START_TEST(preferences_round_trip_without_showing_secrets)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", ME, ann, NULL, &r), 200);
    ck_assert(json_is_false(json_object_get(r.json, "email")));
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "events")), 0);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "webhooks")), 0);
    http_res_free(&r);

    const char *body = fmt("{\"email\":true,\"events\":[\"job.ended\",\"job.idle\",\"budget.80\"],"
                           "\"projects\":[\"mol\"],\"webhooks\":[{\"url\":\"%s\",\"secret\":\"%s\","
                           "\"events\":[\"job.failed\"]},{\"url\":\"%s\",\"secret\":\"%s\"}]}",
                           hook("/rt/a"), SECRET, hook("/rt/b"), SECRET "-2");
    ck_assert_int_eq(put(ann, body, &r), 200);
    ck_assert_ptr_null(strstr(r.body, SECRET));
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", ME, ann, NULL, &r), 200);
    ck_assert_ptr_null(strstr(r.body, SECRET));
    ck_assert_ptr_null(strstr(r.body, "\"secret\""));
    const json_t *w = json_object_get(r.json, "webhooks");
    ck_assert_int_eq(json_array_size(w), 2);
    ck_assert(json_is_true(json_object_get(json_array_get(w, 0), "secret_set")));
    /* a webhook without events of its own takes the top-level ones */
    ck_assert_str_eq(
        json_string_value(json_array_get(json_object_get(json_array_get(w, 1), "events"), 2)),
        "budget.80");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r.json, "projects"), 0)),
                     "mol");

    /* what GET gave, saved back as it is: the secrets stay */
    char *again = json_dumps(r.json, JSON_COMPACT);
    http_res_free(&r);
    ck_assert_int_eq(put(ann, again, NULL), 200);
    free(again);
    PGresult *q = harness_sql(harness_srv.owner_url,
                              "SELECT string_agg(w->>'secret', ',' ORDER BY i) FROM "
                              "notification_prefs p, jsonb_array_elements(p.webhooks) "
                              "WITH ORDINALITY h(w, i) JOIN users u ON true "
                              "WHERE u.username = 'ann' AND p.user_id = u.id",
                              0, NULL);
    ck_assert_ptr_nonnull(q);
    ck_assert_str_eq(PQgetvalue(q, 0, 0), SECRET "," SECRET "-2");
    PQclear(q);

    /* a new URL needs its secret */
    put_problem(fmt("{\"webhooks\":[{\"url\":\"%s\"}]}", hook("/rt/new")),
                "notify.secret_required");
    /* the same PUT twice: the same answer (idempotent) */
    struct http_res r2;
    ck_assert_int_eq(put(ann, body, &r), 200);
    ck_assert_int_eq(put(ann, body, &r2), 200);
    json_object_del(r.json, "updated_at");
    json_object_del(r2.json, "updated_at");
    ck_assert(json_equal(r.json, r2.json));
    http_res_free(&r);
    http_res_free(&r2);
    ck_assert_int_eq(put(ann, "{}", NULL), 200);
}
END_TEST

START_TEST(every_limit)
{
    put_problem("{\"events\":[\"job.exploded\"]}", "notify.event");
    put_problem("{\"events\":[\"job.ended\",\"job.ended\"]}", "notify.duplicate");
    put_problem("{\"email\":\"yes\"}", "validation.type_bool");
    put_problem("{\"emails\":true}", "validation.unknown_field");
    put_problem("{\"projects\":[\"Not A Slug\"]}", "notify.project");
    put_problem("{\"projects\":[\"mol\",\"mol\"]}", "notify.duplicate");
    char many[2048] = "{\"projects\":[";
    for (int i = 0; i < 51; i++)
        strcat(many, fmt("%s\"p%02d\"", i ? "," : "", i));
    strcat(many, "]}");
    put_problem(many, "notify.too_many");
    char hooks[4096] = "{\"webhooks\":[";
    for (int i = 0; i < 6; i++)
        strcat(hooks, fmt("%s{\"url\":\"%s\",\"secret\":\"%s\"}", i ? "," : "",
                          hook(fmt("/lim/%d", i)), SECRET));
    strcat(hooks, "]}");
    put_problem(hooks, "notify.too_many");
    put_problem("{\"webhooks\":{\"url\":\"x\"}}", "validation.type_object");
    put_problem("{\"webhooks\":[\"https://example.org/\"]}", "validation.type_object");
    put_problem(fmt("{\"webhooks\":[{\"url\":\"%s\",\"secret\":\"short\"}]}", hook("/x")),
                "notify.secret");
    put_problem(fmt("{\"webhooks\":[{\"url\":\"%s\",\"secret\":\"%s\",\"events\":[\"nope\"]}]}",
                    hook("/x"), SECRET),
                "notify.event");
    put_problem(fmt("{\"webhooks\":[{\"url\":\"%s\",\"secret\":\"%s\"},{\"url\":\"%s\","
                    "\"secret\":\"%s\"}]}",
                    hook("/x"), SECRET, hook("/x"), SECRET),
                "notify.duplicate");
    const char *bad_urls[] = {"ftp://example.org/x", "https://user:pw@example.org/x",
                              "not a url",           "https://",
                              "file:///etc/passwd",  "gopher://127.0.0.1:25/x"};
    for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++)
        put_problem(fmt("{\"webhooks\":[{\"url\":\"%s\",\"secret\":\"%s\"}]}", bad_urls[i], SECRET),
                    "notify.url");
    /* a URL of 2049 characters */
    char *longurl = malloc(2100);
    strcpy(longurl, "https://example.org/");
    memset(longurl + 20, 'a', 2029);
    longurl[2049] = '\0';
    char *b = malloc(2300);
    snprintf(b, 2300, "{\"webhooks\":[{\"url\":\"%s\",\"secret\":\"%s\"}]}", longurl, SECRET);
    struct http_res r;
    long st = put(ann, b, &r);
    ck_assert_msg(st == 400 || st == 422, "%ld", st);
    http_res_free(&r);
    free(b);
    free(longurl);
    /* a token bound to a tenant covers one tenant: not the user's notifications */
    char *bound = make_token(ann, "[\"jobs:read\"]", "lab");
    ck_assert_int_eq(req("GET", ME, bound, NULL), 403);
    ck_assert_int_eq(req("GET", LOG, bound, NULL), 403);
    free(bound);
    ck_assert_int_eq(req("GET", ME, NULL, NULL), 401);
    ck_assert_int_eq(req("PUT", ME, NULL, "{}"), 401);
}
END_TEST

/* A finished job: e-mail through the SMTP receiver, a signed webhook retried twice. */
START_TEST(a_job_ending_sends_mail_and_a_signed_webhook)
{
    const char *url = hook("/flaky/ann");
    ck_assert_int_eq(put(ann,
                         fmt("{\"email\":true,\"events\":[\"job.ended\",\"job.failed\"],"
                             "\"webhooks\":[{\"url\":\"%s\",\"secret\":\"%s\",\"events\":"
                             "[\"job.ended\"]}]}",
                             url, SECRET),
                         NULL),
                     200);
    /* bob listens to everything, on his own path */
    ck_assert_int_eq(put(bob,
                         fmt("{\"email\":true,\"events\":[\"job.ended\",\"job.failed\"],"
                             "\"webhooks\":[{\"url\":\"%s\",\"secret\":\"%s\"}]}",
                             hook("/flaky/bob"), SECRET),
                         NULL),
                     200);
    char *id = jobs_submit(ann, "lab",
                           "{\"project\":\"mol\",\"name\":\"nötify 通知 Bcc: evil@example.org\","
                           "\"command\":[\"true\"]}");
    json_t *j = jobs_wait(ann, "lab", id, "succeeded,failed", 30);
    ck_assert_str_eq(jstr(j, "state"), "succeeded");
    json_decref(j);

    json_t *rec = received("/flaky/ann", id, 204, 20);
    ck_assert_msg(rec != NULL, "no successful webhook delivery for job %s", id);
    ck_assert(json_is_true(json_object_get(rec, "signature_ok")));
    ck_assert_str_eq(jstr(rec, "event"), "job.ended");
    ck_assert_int_eq(jint(rec, "attempt"), 3); /* two 500s first */
    const json_t *doc = json_object_get(rec, "body");
    ck_assert_str_eq(jstr(doc, "event"), "job.ended");
    ck_assert_str_eq(jstr(doc, "id"), jstr(rec, "delivery"));
    const json_t *job = json_object_get(json_object_get(doc, "data"), "job");
    ck_assert_str_eq(jstr(job, "state"), "succeeded");
    ck_assert_str_eq(jstr(job, "project"), "mol");
    json_decref(rec);

    json_t *d = delivery(ann, url, "job.ended", "delivered", 10);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(jint(d, "attempts"), 3);
    ck_assert_int_eq(jint(d, "last_status"), 204);
    json_decref(d);
    /* the two failed attempts were 500s: seen by the receiver */
    rec = received("/flaky/ann", id, 500, 1);
    ck_assert_ptr_nonnull(rec);
    json_decref(rec);

    if (smtp) {
        char *mail = mail_to("ann@example.org", id, NULL, 20);
        ck_assert_msg(mail != NULL, "no e-mail to ann about job %s", id);
        ck_assert_ptr_nonnull(strstr(mail, "X-TLS: yes\r\n"));
        ck_assert_ptr_nonnull(strstr(mail, "X-Auth: aidc\r\n"));
        ck_assert_ptr_nonnull(strstr(mail, "Subject: =?UTF-8?B?"));
        ck_assert_ptr_nonnull(strstr(mail, "X-Aidc-Event: job.ended\r\n"));
        /* the job's name is in the encoded subject and the body, never a header of its own */
        ck_assert_ptr_null(strstr(mail, "\r\nBcc:"));
        ck_assert_ptr_nonnull(strstr(mail, "name: nötify 通知"));
        free(mail);
        d = delivery(ann, NULL, "job.ended", "delivered", 10);
        ck_assert_ptr_nonnull(d);
        json_decref(d);
    }

    /* a failed job: job.ended and job.failed by e-mail, only job.ended to the webhook */
    char *bad =
        jobs_submit(ann, "lab", "{\"project\":\"mol\",\"name\":\"fails\",\"command\":[\"false\"]}");
    j = jobs_wait(ann, "lab", bad, "succeeded,failed", 30);
    ck_assert_str_eq(jstr(j, "state"), "failed");
    json_decref(j);
    rec = received("/flaky/ann", bad, 204, 20);
    ck_assert_ptr_nonnull(rec);
    ck_assert_str_eq(jstr(rec, "event"), "job.ended");
    json_decref(rec);
    if (smtp) {
        char *mail = mail_to("ann@example.org", "X-Aidc-Event: job.failed", bad, 20);
        ck_assert_ptr_nonnull(mail);
        free(mail);
    }

    /* nothing of ann's reached bob, in his log or at his URL */
    ck_assert_int_eq(count_items(LOG, bob), 0);
    ck_assert_int_eq(received_count("/flaky/bob"), 0);
    if (smtp) {
        char *none = mail_to("bob@example.org", "", NULL, 0);
        ck_assert_ptr_null(none);
    }
    free(bad);
    free(id);
    ck_assert_int_eq(put(bob, "{}", NULL), 200);
}
END_TEST

/* A receiver that keeps failing: failed after AIDC_NOTIFY_MAX_ATTEMPTS, with its last error;
 * a slow one does not hold up another delivery of the same batch. */
START_TEST(failure_after_max_attempts_and_slow_receivers)
{
    const char *down = hook("/down/ann"), *slow = hook("/slow/ann"), *fine = hook("/fine/ann");
    ck_assert_int_eq(
        put(ann,
            fmt("{\"events\":[\"job.ended\"],\"webhooks\":["
                "{\"url\":\"%s\",\"secret\":\"%s\"},{\"url\":\"%s\",\"secret\":\"%s\"},"
                "{\"url\":\"%s\",\"secret\":\"%s\"}]}",
                down, SECRET, slow, SECRET, fine, SECRET),
            NULL),
        200);
    char *id =
        jobs_submit(ann, "lab", "{\"project\":\"mol\",\"name\":\"down\",\"command\":[\"true\"]}");
    json_t *j = jobs_wait(ann, "lab", id, "succeeded,failed", 30);
    json_decref(j);
    double t0 = jobs_now();
    json_t *ok = delivery(ann, fine, "job.ended", "delivered", 10);
    ck_assert_ptr_nonnull(ok);
    /* the slow receiver holds its answer for 30 s (its attempt ends after 6): the fine one
     * is delivered and recorded while the slow one is still in its first attempt */
    ck_assert_msg(jobs_now() - t0 < 6, "the fine receiver waited %.1f s", jobs_now() - t0);
    ck_assert_int_eq(jint(ok, "attempts"), 1);
    json_decref(ok);
    json_t *busy = delivery(ann, slow, "job.ended", "pending", 0);
    ck_assert_ptr_nonnull(busy);
    ck_assert_msg(json_is_null(json_object_get(busy, "last_error")),
                  "the slow attempt had ended before the fine one was recorded: %s",
                  jstr(busy, "last_error"));
    json_decref(busy);

    json_t *d = delivery(ann, down, "job.ended", "failed", 30);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(jint(d, "attempts"), 4);
    ck_assert_int_eq(jint(d, "last_status"), 500);
    ck_assert_ptr_nonnull(strstr(jstr(d, "last_error"), "HTTP 500"));
    ck_assert(json_is_null(json_object_get(d, "next_attempt_at")));
    json_decref(d);
    d = delivery(ann, slow, "job.ended", "pending", 10);
    if (!d)
        d = delivery(ann, slow, "job.ended", "failed", 30);
    ck_assert_ptr_nonnull(d);
    json_decref(d);

    /* the log pages newest first, keyset by (created_at, id) */
    json_t *all = get_items(LOG "?limit=100", ann);
    size_t n = json_array_size(all);
    ck_assert_uint_ge(n, 3);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", LOG "?limit=1", ann, NULL, &r), 200);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"),
                     jstr(json_array_get(all, 0), "id"));
    const char *cursor = jstr(r.json, "next_cursor");
    ck_assert_ptr_nonnull(cursor);
    struct http_res r2;
    ck_assert_int_eq(reqj("GET", fmt(LOG "?limit=1&cursor=%s", cursor), ann, NULL, &r2), 200);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r2.json, "items"), 0), "id"),
                     jstr(json_array_get(all, 1), "id"));
    http_res_free(&r);
    http_res_free(&r2);
    json_decref(all);
    ck_assert_int_eq(req("GET", LOG "?cursor=bm9wZQ", ann, NULL), 400);
    free(id);
    ck_assert_int_eq(put(ann, "{}", NULL), 200);
}
END_TEST

/* budget.80 once per month and threshold, to the tenant's members who asked for it;
 * projects narrow job events (a job of another project is not notified). */
START_TEST(budgets_once_and_project_narrowing)
{
    ck_assert_int_eq(put(ann,
                         fmt("{\"events\":[\"budget.80\",\"budget.100\",\"job.ended\"],"
                             "\"projects\":[\"side\"],\"webhooks\":[{\"url\":\"%s\","
                             "\"secret\":\"%s\"}]}",
                             hook("/budget/ann"), SECRET),
                         NULL),
                     200);
    char *id =
        jobs_submit(ann, "lab", "{\"project\":\"mol\",\"name\":\"other\",\"command\":[\"true\"]}");
    json_t *j = jobs_wait(ann, "lab", id, "succeeded,failed", 30);
    json_decref(j);
    jobs_tenant_quota("lab", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4},"
                             "\"gpu_hours_month\":{\"guaranteed\":0,\"limit\":10}}");
    PGresult *q = harness_sql(
        harness_srv.owner_url,
        "INSERT INTO usage_monthly (tenant_id, project_id, period, gpu_seconds)"
        " SELECT t.id, p.id, (date_trunc('month', now(), 'UTC') AT TIME ZONE 'UTC')::date,"
        "        8.5 * 3600 FROM tenants t JOIN projects p ON p.tenant_id = t.id"
        " WHERE t.slug = 'lab' AND p.slug = 'mol'"
        " ON CONFLICT (period, tenant_id, project_id) DO UPDATE SET gpu_seconds = 8.5 * 3600",
        0, NULL);
    ck_assert_ptr_nonnull(q);
    PQclear(q);
    for (int i = 0; i < 2; i++) {
        q = harness_sql(harness_srv.owner_url, "SELECT aidc_notify_budgets()", 0, NULL);
        ck_assert_ptr_nonnull(q);
        PQclear(q);
    }
    q = harness_sql(harness_srv.owner_url,
                    "SELECT n.event, count(*) FROM notifications n JOIN users u ON u.id = n.user_id"
                    " WHERE u.username = 'ann' AND n.event LIKE 'budget.%' GROUP BY n.event",
                    0, NULL);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(PQntuples(q), 1);
    ck_assert_str_eq(PQgetvalue(q, 0, 0), "budget.80");
    ck_assert_str_eq(PQgetvalue(q, 0, 1), "1");
    PQclear(q);
    json_t *d = delivery(ann, hook("/budget/ann"), "budget.80", "delivered", 15);
    ck_assert_ptr_nonnull(d);
    json_decref(d);
    /* the job of project mol was never queued for ann (she narrowed to side) */
    q = harness_sql(harness_srv.owner_url,
                    "SELECT count(*) FROM notifications WHERE payload->'job'->>'id' = $1", 1,
                    (const char *const[]){id});
    ck_assert_ptr_nonnull(q);
    ck_assert_str_eq(PQgetvalue(q, 0, 0), "0");
    PQclear(q);
    free(id);
    ck_assert_int_eq(put(ann, "{}", NULL), 200);
}
END_TEST

/* session.ready (a trigger on app_sessions: once, when ready_at is first set) and
 * allocation.expiring (the janitor's notice): both reach the webhook, signed. */
START_TEST(session_ready_and_allocation_expiring)
{
    const char *url = hook("/misc/ann");
    ck_assert_int_eq(put(ann,
                         fmt("{\"events\":[\"session.ready\",\"allocation.expiring\"],"
                             "\"webhooks\":[{\"url\":\"%s\",\"secret\":\"%s\"}]}",
                             url, SECRET),
                         NULL),
                     200);
    char *id =
        jobs_submit(ann, "lab", "{\"project\":\"mol\",\"name\":\"app\",\"command\":[\"true\"]}");
    json_t *j = jobs_wait(ann, "lab", id, "succeeded,failed", 30);
    json_decref(j);
    /* the session row as the sessions API would have made it; then ready, twice */
    const char *p1[1] = {id};
    PGresult *q = harness_sql(
        harness_srv.owner_url,
        "INSERT INTO app_sessions (tenant_id, job_id, user_id, app, idle_minutes, secret)"
        " SELECT tenant_id, id, user_id, 'jupyter', 60, repeat('ab', 24) FROM jobs"
        " WHERE id = $1::uuid",
        1, p1);
    ck_assert_ptr_nonnull(q);
    PQclear(q);
    for (int i = 0; i < 2; i++) {
        q = harness_sql(harness_srv.owner_url,
                        "UPDATE app_sessions SET ready_at = coalesce(ready_at, now())"
                        " WHERE job_id = $1::uuid",
                        1, p1);
        ck_assert_ptr_nonnull(q);
        PQclear(q);
    }
    q = harness_sql(harness_srv.owner_url,
                    "INSERT INTO allocation_requests (tenant_id, project_id, requested_by,"
                    " requested_by_name, state, starts_on, ends_on, justification)"
                    " SELECT p.tenant_id, p.id, u.id, 'ann', 'approved', current_date - 30,"
                    " current_date + 5, 'notify test' FROM projects p JOIN users u"
                    " ON u.username = 'ann' WHERE p.slug = 'mol' RETURNING id",
                    0, NULL);
    ck_assert_ptr_nonnull(q);
    const char *p2[1] = {PQgetvalue(q, 0, 0)};
    PGresult *n =
        harness_sql(harness_srv.owner_url, "SELECT aidc_notify_allocation($1::uuid)", 1, p2);
    ck_assert_ptr_nonnull(n);
    ck_assert_str_eq(PQgetvalue(n, 0, 0), "1");
    PQclear(n);
    PQclear(q);

    json_t *d = delivery(ann, url, "session.ready", "delivered", 15);
    ck_assert_ptr_nonnull(d);
    json_decref(d);
    d = delivery(ann, url, "allocation.expiring", "delivered", 15);
    ck_assert_ptr_nonnull(d);
    json_decref(d);
    q = harness_sql(harness_srv.owner_url,
                    "SELECT count(*) FROM notifications WHERE event = 'session.ready'"
                    " AND payload->'session'->>'job' = $1",
                    1, p1);
    ck_assert_ptr_nonnull(q);
    ck_assert_str_eq(PQgetvalue(q, 0, 0), "1");
    PQclear(q);
    free(id);
    ck_assert_int_eq(put(ann, "{}", NULL), 200);
}
END_TEST

/* Without AIDC_WEBHOOK_ALLOW_LOOPBACK: no loopback, link-local or private target, as a
 * literal (refused when saved) or behind a name (refused when delivered). */
START_TEST(ssrf_targets_are_refused)
{
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    const char *guarded[] = {"AIDC_SYNC_INTERVAL_MS=100",     "AIDC_ADMISSION_INTERVAL_MS=200",
                             "AIDC_NOTIFY_BACKOFF_SECONDS=1", "AIDC_NOTIFY_MAX_ATTEMPTS=2",
                             "AIDC_NOTIFY_TIMEOUT_SECONDS=3", NULL};
    ck_assert_msg(jobs_restart_server(guarded) == 0, "aidcd did not start again, see %s",
                  harness_srv.log_path);
    free(ann);
    ann = login("ann", "ann-password-1");
    ck_assert_ptr_nonnull(ann);
    char guard[128];
    snprintf(guard, sizeof guard, "%s", hook("/guard"));
    const char *refused[] = {
        "https://127.0.0.1/x",
        "https://127.1.2.3:8443/x",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://[::ffff:169.254.169.254]/x",
        "https://10.1.2.3/x",
        "https://192.168.1.1/x",
        "https://172.16.0.1/x",
        "https://100.64.0.1/x",
        "https://[fd00::1]/x",
        "https://[fe80::1]/x",
        "https://0.0.0.0/x",
        "https://[::]/x",
        "https://224.0.0.1/x",
        "https://[64:ff9b::a9fe:a9fe]/x",
        "http://example.org/x", /* plain http: only to the loopback, and only when allowed */
        guard,
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        put_problem(fmt("{\"events\":[\"job.ended\"],\"webhooks\":[{\"url\":\"%s\",\"secret\":"
                        "\"%s\"}]}",
                        refused[i], SECRET),
                    "notify.url");
    /* a name is resolved at delivery: localhost is the loopback, and refused then */
    char named[128];
    snprintf(named, sizeof named, "https://localhost:%d/guard", receiver_port);
    ck_assert_int_eq(put(ann,
                         fmt("{\"events\":[\"job.ended\"],\"webhooks\":[{\"url\":\"%s\","
                             "\"secret\":\"%s\"}]}",
                             named, SECRET),
                         NULL),
                     200);
    char *id =
        jobs_submit(ann, "lab", "{\"project\":\"mol\",\"name\":\"guard\",\"command\":[\"true\"]}");
    json_t *j = jobs_wait(ann, "lab", id, "succeeded,failed", 30);
    json_decref(j);
    json_t *d = delivery(ann, named, "job.ended", "failed", 20);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(jint(d, "attempts"), 1); /* refused for good: no retries */
    ck_assert_ptr_nonnull(strstr(jstr(d, "last_error"), "not a public address"));
    json_decref(d);
    ck_assert_int_eq(received_count("/guard"), 0);
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("notifications");
    TCase *tc = tcase_create("notifications");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, preferences_round_trip_without_showing_secrets);
    tcase_add_test(tc, every_limit);
    tcase_add_test(tc, a_job_ending_sends_mail_and_a_signed_webhook);
    tcase_add_test(tc, failure_after_max_attempts_and_slow_receivers);
    tcase_add_test(tc, budgets_once_and_project_narrowing);
    tcase_add_test(tc, session_ready_and_allocation_expiring);
    tcase_add_test(tc, ssrf_targets_are_refused); /* last: restarts aidcd without the loopback */
    suite_add_tcase(s, tc);
    return suite_run_nofork(s);
}
