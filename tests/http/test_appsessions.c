/*
 * test_appsessions.c - interactive sessions through the API: what a session
 * body may say (and the clear 400s when it says more), the defaults a
 * one-click notebook gets, who sees, stops, extends and opens which session,
 * and, on the real local executor, a session whose app never answers
 * (failed with why), Debian's Jupyter Notebook answering
 * through the relay (the kernel API passes the app's own lock without the
 * browser holding it), and a notebook in an image starting the image's own
 * Jupyter. The relay's own defences, and idle culling, are
 * test_appsessions_relay.c's.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/pgextra.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SESSIONS "/api/v1/tenants/chem/sessions"

static char *ann, *bob, *vic, *cat, *pia;

static void setup_with(const char *const *env)
{
    harness_setup("appsessions", env);
    make_tenant("chem");
    make_tenant("phys");
    make_project("chem", "mol");
    make_project("phys", "quark");
    ann = make_member_login("chem", "ann", "member");
    bob = make_member_login("chem", "bob", "member");
    vic = make_member_login("chem", "vic", "viewer");
    cat = make_member_login("chem", "cat", "tenant_admin");
    pia = make_member_login("phys", "pia", "member");
}

/* a cluster to submit to, and no workers: every session stays queued */
static const char *const api_env[] = {"AIDC_WORKERS=0", NULL};

static void setup(void)
{
    setup_with(api_env);
    jobs_local_cluster("{}");
}

/* jobs move fast; an app has ready_seconds to answer, with a cluster to run it */
static void setup_running(const char *ready_seconds)
{
    const char *env[] = {"AIDC_SYNC_INTERVAL_MS=100", "AIDC_ADMISSION_INTERVAL_MS=200",
                         ready_seconds, NULL};
    setup_with(env);
    jobs_local_cluster("{\"a100\":4}");
}

static void setup_run(void)
{
    setup_running("AIDC_SESSIONS_READY_SECONDS=6");
}

/* a real Jupyter starting beside two other test programs on 2 CPUs took more than 6 s */
static void setup_jupyter(void)
{
    setup_running("AIDC_SESSIONS_READY_SECONDS=60");
}

static void teardown(void)
{
    free(ann);
    free(bob);
    free(vic);
    free(cat);
    free(pia);
    jobs_stop_shims(20); /* its sessions' apps run on without aidcd */
    harness_teardown();
}

/* r is a 400 whose errors[] name field with code. */
static void expect_field(const struct http_res *r, const char *field, const char *code)
{
    json_t *errs = json_object_get(r->json, "errors");
    for (size_t i = 0; i < json_array_size(errs); i++) {
        json_t *e = json_array_get(errs, i);
        if (strcmp(jstr(e, "field") ? jstr(e, "field") : "", field) == 0 &&
            strcmp(jstr(e, "code") ? jstr(e, "code") : "", code) == 0)
            return;
    }
    ck_abort_msg("no error %s on %s: %s", code, field, r->body ? r->body : "");
}

/* POST body as token; the new session (new reference), or the test fails. */
static json_t *create(const char *token, const char *body)
{
    struct http_res r;
    long st = reqj("POST", SESSIONS, token, body, &r);
    ck_assert_msg(st == 201, "create answered %ld: %s", st, r.body ? r.body : "");
    json_t *s = json_incref(r.json);
    http_res_free(&r);
    return s;
}

/* GET the session as token (new reference; NULL unless 200). */
static json_t *get(const char *token, const char *id)
{
    struct http_res r;
    long st = reqj("GET", fmt(SESSIONS "/%s", id), token, NULL, &r);
    json_t *s = st == 200 ? json_incref(r.json) : NULL;
    http_res_free(&r);
    return s;
}

/* Poll the session until its state is one of states (comma-separated) or timeout_s passes. */
static json_t *wait_state(const char *token, const char *id, const char *states, int timeout_s)
{
    double until = jobs_now() + timeout_s;
    json_t *s = NULL;
    for (;;) {
        json_decref(s);
        s = get(token, id);
        ck_assert_msg(s != NULL, "session %s is gone", id);
        char want[64];
        snprintf(want, sizeof want, ",%s,", states);
        char have[32];
        snprintf(have, sizeof have, ",%s,", jstr(s, "state"));
        if (strstr(want, have))
            return s;
        ck_assert_msg(jobs_now() < until, "session %s still %s (%s) after %d s", id,
                      jstr(s, "state"), jstr(s, "reason") ? jstr(s, "reason") : "", timeout_s);
        jobs_nap_ms(200);
    }
}

/* ---- what a body may say ------------------------------------------------------------ */

START_TEST(bad_bodies_are_clear_400s)
{
    static const struct {
        const char *body, *field, *code;
    } cases[] = {
        {"{\"project\":\"mol\",\"app\":\"shell\"}", "app", "app_session.app_unknown"},
        {"{\"project\":\"mol\",\"app\":7}", "app", "validation.type_string"},
        {"{\"project\":\"mol\",\"app\":\"web\"}", "command", "app_session.command_required"},
        {"{\"project\":\"mol\",\"command\":[\"sh\"]}", "command", "app_session.command_forbidden"},
        {"{\"project\":\"mol\",\"script\":\"echo\"}", "script", "validation.unknown_field"},
        {"{\"project\":\"mol\",\"nodes\":2}", "nodes", "validation.unknown_field"},
        {"{\"project\":\"mol\",\"idle_minutes\":0}", "idle_minutes", "validation.range"},
        {"{\"project\":\"mol\",\"idle_minutes\":10081}", "idle_minutes", "validation.range"},
        {"{\"project\":\"mol\",\"idle_minutes\":\"5\"}", "idle_minutes", "validation.type_integer"},
        {"{\"project\":\"mol\",\"colour\":\"red\"}", "colour", "validation.unknown_field"},
        {"{\"app\":\"jupyter\"}", "project", "validation.required"},
        {"{\"project\":\"mol\",\"env\":{\"AIDC_SESSION_TOKEN\":\"mine\"}}",
         "env.AIDC_SESSION_TOKEN", "job.env_reserved"},
        {"{\"project\":\"mol\",\"mounts\":[{\"space\":\"elsewhere\"}]}", "mounts[0].space",
         "job.mount_space"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct http_res r;
        long st = reqj("POST", SESSIONS, ann, cases[i].body, &r);
        ck_assert_msg(st == 400, "%s answered %ld: %s", cases[i].body, st, r.body ? r.body : "");
        expect_field(&r, cases[i].field, cases[i].code);
        http_res_free(&r);
    }
    struct http_res r;
    ck_assert_int_eq(reqj("POST", SESSIONS, ann, "{\"project\":\"nope\"}", &r), 422);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", SESSIONS, vic, "{\"project\":\"mol\"}"), 403); /* a viewer */
    ck_assert_int_eq(req("POST", SESSIONS, pia, "{\"project\":\"mol\"}"), 404); /* a stranger */
    ck_assert_int_eq(count_items(SESSIONS, cat), 0); /* nothing was made */
}
END_TEST

START_TEST(a_one_click_notebook_gets_the_defaults_and_keeps_its_secret)
{
    json_t *s = create(ann, "{\"project\":\"mol\"}");
    const char *id = jstr(s, "id");
    ck_assert_str_eq(jstr(s, "app"), "jupyter");
    ck_assert_str_eq(jstr(s, "state"), "queued"); /* no workers here */
    ck_assert_str_eq(jstr(s, "user"), "ann");
    ck_assert_str_eq(jstr(s, "project"), "mol");
    ck_assert_int_eq(jint(s, "idle_minutes"), 60);
    ck_assert_str_eq(jstr(s, "url"), fmt("%s/sessions/%s/", harness_srv.sessions_base, id));
    json_t *job = json_object_get(s, "job");
    ck_assert_str_eq(jstr(job, "kind"), "interactive");
    ck_assert_int_eq(jint(json_object_get(job, "resources"), "time_limit_minutes"), 240);
    char *mounts = json_dumps(json_object_get(job, "mounts"), JSON_COMPACT);
    ck_assert_str_eq(mounts, "[{\"space\":\"project\"},{\"space\":\"home\"}]");
    free(mounts);
    json_t *env = json_object_get(job, "env");
    ck_assert_str_eq(jstr(env, "PORT"), "8888");
    ck_assert_str_eq(jstr(env, "AIDC_SESSION_BASE_URL"), fmt("/sessions/%s/", id));
    ck_assert_str_eq(jstr(env, "AIDC_SESSION_ORIGIN"), harness_srv.sessions_base);
    /* the app's lock is nobody's to read, not even its owner's or an admin's */
    ck_assert_str_eq(jstr(env, "AIDC_SESSION_TOKEN"), "(hidden)");
    json_t *again = get(harness_srv.admin_token, id);
    ck_assert_str_eq(
        jstr(json_object_get(json_object_get(again, "job"), "env"), "AIDC_SESSION_TOKEN"),
        "(hidden)");
    json_t *direct = jobs_get(cat, "chem", jstr(job, "id"));
    ck_assert_str_eq(jstr(json_object_get(direct, "env"), "AIDC_SESSION_TOKEN"), "(hidden)");
    json_decref(direct);
    json_decref(again);
    /* the session was audited with who made it and its job */
    json_t *ev = get_items(fmt("/api/v1/audit/events?action=app_session.create&tenant=chem"),
                           harness_srv.admin_token);
    ck_assert_int_eq(json_array_size(ev), 1);
    json_t *e0 = json_array_get(ev, 0);
    ck_assert_str_eq(jstr(json_object_get(e0, "actor"), "user"), "ann");
    ck_assert_str_eq(jstr(json_object_get(e0, "resource"), "id"), id);
    json_decref(ev);
    json_decref(s);
}
END_TEST

START_TEST(members_see_their_own_sessions_admins_all_strangers_none)
{
    json_t *a = create(ann, "{\"project\":\"mol\",\"idle_minutes\":15}");
    json_t *b = create(bob, "{\"project\":\"mol\",\"app\":\"web\",\"command\":[\"sleep\",\"9\"]}");
    const char *aid = jstr(a, "id"), *bid = jstr(b, "id");
    json_t *mine = get_items(SESSIONS, ann);
    ck_assert_int_eq(json_array_size(mine), 1);
    ck_assert_str_eq(jstr(json_array_get(mine, 0), "id"), aid);
    ck_assert_int_eq(count_items(SESSIONS, cat), 2);
    ck_assert_ptr_null(get(bob, aid)); /* another member's: not there for bob */
    ck_assert_ptr_null(get(pia, aid));
    ck_assert_int_eq(req("GET", fmt(SESSIONS "/%s", aid), pia, NULL), 404);
    ck_assert_int_eq(
        req("GET", fmt(SESSIONS "/%s", "00000000-0000-4000-8000-000000000000"), ann, NULL), 404);
    ck_assert_int_eq(req("GET", SESSIONS "/not-a-uuid", ann, NULL), 400);
    json_t *q = get_items(SESSIONS "?state=queued", cat);
    ck_assert_int_eq(json_array_size(q), 2);
    json_decref(q);
    ck_assert_int_eq(count_items(SESSIONS "?state=ended", cat), 0);
    ck_assert_int_eq(count_items(SESSIONS "?user=bob", cat), 1);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", SESSIONS "?state=sleeping", cat, NULL, &r), 400);
    expect_field(&r, "state", "validation.one_of");
    http_res_free(&r);
    /* pages: one at a time, each once */
    ck_assert_int_eq(reqj("GET", SESSIONS "?limit=1", cat, NULL, &r), 200);
    const char *cursor = jstr(r.json, "next_cursor");
    ck_assert_ptr_nonnull(cursor);
    char *next = strdup(cursor);
    const char *first = jstr(json_array_get(json_object_get(r.json, "items"), 0), "id");
    ck_assert_str_eq(first, bid); /* newest first */
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", fmt(SESSIONS "?limit=1&cursor=%s", next), cat, NULL, &r), 200);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"), aid);
    http_res_free(&r);
    free(next);
    json_decref(mine);
    json_decref(a);
    json_decref(b);
}
END_TEST

START_TEST(stop_extend_and_open_follow_who_owns_the_session)
{
    json_t *s = create(ann, "{\"project\":\"mol\",\"time_limit_minutes\":60}");
    const char *id = jstr(s, "id");
    const char *path = fmt(SESSIONS "/%s", id);
    char *base = strdup(path);
    struct http_res r;
    /* extend: the owner; within the longest a session runs (1440 minutes by default) */
    ck_assert_int_eq(reqj("POST", fmt("%s/extend", base), ann, "{\"minutes\":30}", &r), 200);
    ck_assert_int_eq(
        jint(json_object_get(json_object_get(r.json, "job"), "resources"), "time_limit_minutes"),
        90);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", fmt("%s/extend", base), ann, "{\"minutes\":1400}", &r), 422);
    expect_problem(&r, "app_session.extend_limit", "limit_minutes", "1440");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", fmt("%s/extend", base), ann, "{\"minutes\":0}", &r), 400);
    expect_field(&r, "minutes", "validation.range");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", fmt("%s/extend", base), ann, "{}", &r), 400);
    expect_field(&r, "minutes", "validation.required");
    http_res_free(&r);
    ck_assert_int_eq(req("POST", fmt("%s/extend", base), cat, "{\"minutes\":10}"), 200);
    ck_assert_int_eq(req("POST", fmt("%s/extend", base), bob, "{\"minutes\":10}"), 404);
    /* open: the owner only (and platform admins, audited); a tenant admin may not */
    ck_assert_int_eq(reqj("POST", fmt("%s/open", base), cat, NULL, &r), 403);
    expect_problem(&r, "app_session.not_owner", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", fmt("%s/open", base), bob, NULL), 404);
    ck_assert_int_eq(reqj("POST", fmt("%s/open", base), ann, NULL, &r), 200);
    const char *url = jstr(r.json, "url");
    ck_assert_msg(url && strncmp(url, fmt("%s/_aidc/open?key=", harness_srv.sessions_base),
                                 strlen(harness_srv.sessions_base) + 15) == 0,
                  "link %s", url ? url : "(none)");
    ck_assert_int_eq(jint(r.json, "expires_in"), 60);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", fmt("%s/open", base), harness_srv.admin_token, NULL), 200);
    json_t *ev =
        get_items("/api/v1/audit/events?action=app_session.open&tenant=chem&outcome=success",
                  harness_srv.admin_token);
    ck_assert_int_eq(json_array_size(ev), 2);
    json_decref(ev);
    /* stop: not another member; the owner; then it has ended for everything */
    ck_assert_int_eq(req("POST", fmt("%s/stop", base), bob, NULL), 404);
    ck_assert_int_eq(reqj("POST", fmt("%s/stop", base), ann, NULL, &r), 202);
    ck_assert_str_eq(jstr(r.json, "state"), "ended");
    ck_assert_str_eq(jstr(r.json, "reason"), "stopped by ann");
    ck_assert_str_eq(jstr(json_object_get(r.json, "job"), "state"), "cancelled");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", fmt("%s/stop", base), ann, NULL, &r), 409);
    expect_problem(&r, "app_session.ended", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", fmt("%s/extend", base), ann, "{\"minutes\":5}", &r), 409);
    expect_problem(&r, "app_session.ended", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", fmt("%s/open", base), ann, NULL), 409);
    free(base);
    json_decref(s);
}
END_TEST

START_TEST(extending_a_gpu_session_stays_within_the_gpu_hours_quotas)
{
    jobs_tenant_quota("chem", "{\"gpu:a100\":{\"guaranteed\":0,\"limit\":4},"
                              "\"gpu_hours_month\":{\"guaranteed\":0,\"limit\":10}}");
    jobs_project_quota("chem", "mol", "{\"gpu_hours_month\":{\"limit\":5}}");
    /* two GPUs for an hour: 2 GPU-hours until its end */
    json_t *s = create(ann, "{\"project\":\"mol\",\"gpus\":2,\"gpu_type\":\"a100\","
                            "\"time_limit_minutes\":60}");
    const char *path = fmt(SESSIONS "/%s/extend", jstr(s, "id"));
    char *extend = strdup(path);
    struct http_res r;
    ck_assert_int_eq(req("POST", extend, ann, "{\"minutes\":60}"), 200);      /* 4 of 5 */
    ck_assert_int_eq(reqj("POST", extend, ann, "{\"minutes\":60}", &r), 422); /* 6 > 5 */
    expect_problem(&r, "app_session.extend_project_hours", "project", "mol");
    expect_problem(&r, "app_session.extend_project_hours", "requested", "6");
    http_res_free(&r);
    jobs_project_quota("chem", "mol", "{}"); /* the tenant's alone */
    ck_assert_int_eq(reqj("POST", extend, ann, "{\"minutes\":240}", &r), 422); /* 12 > 10 */
    expect_problem(&r, "app_session.extend_tenant_hours", "limit", "10");
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", fmt(SESSIONS "/%s", jstr(s, "id")), ann, NULL, &r), 200);
    ck_assert_int_eq(
        jint(json_object_get(json_object_get(r.json, "job"), "resources"), "time_limit_minutes"),
        120); /* what was refused changed nothing */
    http_res_free(&r);
    free(extend);
    json_decref(s);
}
END_TEST

/* ---- on the local executor ---------------------------------------------------------- */

/* The session's link followed: its aidc_app cookie value (malloc'd). */
static char *enter(const char *token, const char *id, struct aidc_server *relay)
{
    *relay = harness_srv;
    snprintf(relay->base, sizeof relay->base, "%s", harness_srv.sessions_base);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", fmt(SESSIONS "/%s/open", id), token, NULL, &r), 200);
    const char *url = jstr(r.json, "url");
    char *path = strdup(url + strlen(harness_srv.sessions_base));
    http_res_free(&r);
    ck_assert_int_eq(http_do(relay, "GET", path, NULL, NULL, NULL, &r), 302);
    free(path);
    char *set = http_set_cookie(&r, "aidc_app");
    ck_assert_ptr_nonnull(set);
    char *value = strdup(set + strlen("aidc_app="));
    value[strcspn(value, ";")] = '\0';
    free(set);
    http_res_free(&r);
    return value;
}

START_TEST(an_app_that_never_answers_fails_with_why)
{
    json_t *s = create(ann, "{\"project\":\"mol\",\"app\":\"web\",\"mounts\":[],"
                            "\"command\":[\"sleep\",\"600\"]}");
    const char *id = jstr(s, "id");
    json_t *started = wait_state(ann, id, "starting,ended", 30);
    ck_assert_str_eq(jstr(started, "state"), "starting");
    json_t *end = wait_state(ann, id, "ended", 30);
    ck_assert_str_eq(jstr(end, "reason"), "the app did not answer on its port within 6 s");
    json_t *job = jobs_wait(ann, "chem", jstr(json_object_get(end, "job"), "id"), "cancelled", 30);
    json_decref(job);
    json_decref(end);
    json_decref(started);
    json_decref(s);
}
END_TEST

START_TEST(jupyter_answers_through_the_relay_with_its_own_lock_kept_by_aidc)
{
    json_t *s = create(ann, "{\"project\":\"mol\"}");
    const char *id = jstr(s, "id");
    json_t *ready = wait_state(ann, id, "ready,ended", 90);
    ck_assert_msg(strcmp(jstr(ready, "state"), "ready") == 0, "ended: %s",
                  jstr(ready, "reason") ? jstr(ready, "reason") : "");
    struct aidc_server relay;
    char *cookie = enter(ann, id, &relay);
    const char *extra[] = {fmt("Cookie: aidc_app=%s", cookie), NULL};
    struct http_res r;
    /* Jupyter's own API answers: the relay adds the notebook's token, which the
     * browser never had */
    ck_assert_int_eq(http_do(&relay, "GET", fmt("/sessions/%s/api", id), NULL, NULL, extra, &r),
                     200);
    ck_assert_ptr_nonnull(jstr(r.json, "version"));
    http_res_free(&r);
    const char *post[] = {extra[0], fmt("Origin: %s", harness_srv.sessions_base), NULL};
    ck_assert_int_eq(http_do(&relay, "POST", fmt("/sessions/%s/api/kernels", id), NULL,
                             "{\"name\":\"python3\"}", post, &r),
                     201);
    ck_assert_ptr_nonnull(jstr(r.json, "id"));
    http_res_free(&r);
    /* its notebook directory is the project's space */
    ck_assert_int_eq(
        http_do(&relay, "GET", fmt("/sessions/%s/api/contents", id), NULL, NULL, extra, &r), 200);
    ck_assert_str_eq(jstr(r.json, "type"), "directory");
    http_res_free(&r);
    /* without the relay's cookie nothing reaches it */
    ck_assert_int_eq(http_do(&relay, "GET", fmt("/sessions/%s/api", id), NULL, NULL, NULL, &r),
                     401);
    expect_problem(&r, "app_session.no_entry", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", fmt(SESSIONS "/%s/stop", id), ann, NULL), 202);
    json_t *job = jobs_wait(ann, "chem", jstr(json_object_get(s, "job"), "id"), "cancelled", 30);
    json_decref(job);
    free(cookie);
    json_decref(ready);
    json_decref(s);
}
END_TEST

/* Push a runnable image whose own "Jupyter" is tests/support/registry-push.sh's stand-in. */
static void push_notebook_image(const char *url, const char *repo)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "REGISTRY_URL='%s' '%s/tests/support/registry-push.sh' push '%s' v1 --busybox "
             "--jupyter-stub >/dev/null",
             url, AIDC_SOURCE_DIR, repo);
    ck_assert_int_eq(system(cmd), 0);
    jobs_admin_ok("POST", "/api/v1/registries",
                  fmt("{\"name\":\"reg\",\"url\":\"%s\",\"credentials_ref\":\"\","
                      "\"options\":{\"public_prefixes\":[\"library/\"]}}",
                      url),
                  201);
    double until = jobs_now() + 60;
    for (;;) { /* the catalog knows the image once the registry's sync ended */
        struct http_res r;
        ck_assert_int_eq(reqj("GET", "/api/v1/registries/reg", harness_srv.admin_token, NULL, &r),
                         200);
        bool done =
            json_is_string(json_object_get(r.json, "last_sync_at")) &&
            strcmp(jstr(r.json, "sync_state") ? jstr(r.json, "sync_state") : "", "idle") == 0;
        ck_assert_msg(done || jobs_now() < until, "no sync: %s", r.body);
        http_res_free(&r);
        if (done)
            return;
        jobs_nap_ms(100);
    }
}

START_TEST(a_notebook_in_an_image_runs_the_images_own_jupyter)
{
    /* a registry of its own: the shared one's contents are other tests' to count */
    if (access("/usr/bin/docker-registry", X_OK) != 0) {
        fprintf(stderr, "a_notebook_in_an_image_runs_the_images_own_jupyter: no "
                        "docker-registry here: skipped\n");
        return;
    }
    char dir[128], cmd[1024], line[512] = "", urlbuf[128] = "";
    snprintf(dir, sizeof dir, "/tmp/aidc-appsess-reg-%d", (int)getpid());
    snprintf(cmd, sizeof cmd,
             "REGISTRY_DIR=%s REGISTRY_ADDR=127.0.0.1:%d REGISTRY_AUTH=none "
             "'%s/deploy/registry-up.sh' 2>&1",
             dir, pgextra_free_port(), AIDC_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p))
        if (strncmp(line, "REGISTRY_URL='", 14) == 0)
            snprintf(urlbuf, sizeof urlbuf, "%.*s", (int)strcspn(line + 14, "'"), line + 14);
    ck_assert_msg(p && pclose(p) == 0 && urlbuf[0], "the test registry did not start: %s", line);
    const char *url = urlbuf;
    char repo[64];
    snprintf(repo, sizeof repo, "library/notebook-%d", (int)getpid());
    push_notebook_image(url, repo);
    const char *host = strstr(url, "://") ? strstr(url, "://") + 3 : url;
    json_t *s = create(ann, fmt("{\"project\":\"mol\",\"image\":\"%s/%s:v1\"}", host, repo));
    const char *id = jstr(s, "id");
    json_t *ready = wait_state(ann, id, "ready,ended", 90);
    ck_assert_msg(strcmp(jstr(ready, "state"), "ready") == 0, "ended: %s",
                  jstr(ready, "reason") ? jstr(ready, "reason") : "");
    struct aidc_server relay;
    char *cookie = enter(ann, id, &relay);
    const char *extra[] = {fmt("Cookie: aidc_app=%s", cookie), NULL};
    struct http_res r;
    ck_assert_int_eq(http_do(&relay, "GET", fmt("/sessions/%s/", id), NULL, NULL, extra, &r), 200);
    /* started as aidc starts a notebook: its port, under its base URL, with its token
     * (and nothing left of the secret's variable), as the tenant's uid */
    ck_assert_msg(strstr(r.body, fmt("--NotebookApp.base_url=/sessions/%s/", id)) &&
                      strstr(r.body, "--port=8888") && strstr(r.body, "token: set") &&
                      !strstr(r.body, "still in the environment") && !strstr(r.body, "uid: 0\n"),
                  "%s", r.body);
    http_res_free(&r);
    free(cookie);
    json_decref(ready);
    json_decref(s);
    snprintf(cmd, sizeof cmd,
             "REGISTRY_DIR=%s '%s/deploy/registry-down.sh' --purge >/dev/null 2>&1", dir,
             AIDC_SOURCE_DIR);
    if (system(cmd) != 0)
        fprintf(stderr, "could not stop the test registry in %s\n", dir);
}
END_TEST

int main(void)
{
    harness_require_pg();
    jobs_reap_at_exit();
    Suite *s = suite_create("appsessions");
    TCase *api = tcase_create("api");
    tcase_add_checked_fixture(api, setup, teardown);
    tcase_set_timeout(api, 60);
    tcase_add_test(api, bad_bodies_are_clear_400s);
    tcase_add_test(api, a_one_click_notebook_gets_the_defaults_and_keeps_its_secret);
    tcase_add_test(api, members_see_their_own_sessions_admins_all_strangers_none);
    tcase_add_test(api, stop_extend_and_open_follow_who_owns_the_session);
    suite_add_tcase(s, api);
    TCase *run = tcase_create("run");
    tcase_add_checked_fixture(run, setup_run, teardown);
    tcase_set_timeout(run, 150);
    tcase_add_test(run, an_app_that_never_answers_fails_with_why);
    suite_add_tcase(s, run);
    TCase *jupyter = tcase_create("jupyter");
    tcase_add_checked_fixture(jupyter, setup_jupyter, teardown);
    tcase_set_timeout(jupyter, 150);
    tcase_add_test(jupyter, extending_a_gpu_session_stays_within_the_gpu_hours_quotas);
    tcase_add_test(jupyter, jupyter_answers_through_the_relay_with_its_own_lock_kept_by_aidc);
    tcase_add_test(jupyter, a_notebook_in_an_image_runs_the_images_own_jupyter);
    suite_add_tcase(s, jupyter);
    return suite_run(s);
}
