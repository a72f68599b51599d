/*
 * test_idempotency.c - Idempotency-Key on every creating endpoint (routes
 * with RF_CREATES: POST /tenants, /tenants/{tenant}/projects, /users,
 * /tokens): a retry with the same key and body answers the first response
 * byte for byte with "Idempotent-Replayed: true" and creates nothing; the
 * same key with another body is 409; keys are per user; failures are not
 * remembered; malformed keys are 400; concurrent retries create exactly one
 * object; a replayed token creation returns the same, working secret.
 *
 * Checks are "soft" (tests/support/soft.h): every discrepancy is printed to
 * stderr (DISCREPANCY: ...) and the test fails at its end, so one run lists
 * all of them.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/soft.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADM      (harness_srv.admin_token)
#define N_OF(a)  (sizeof(a) / sizeof((a)[0]))
#define NTHREADS 8

static char bob_token[1024];

/* ---- requests -------------------------------------------------------------------- */

/*
 * POST body to path with Idempotency-Key key (NULL: no header; "": an empty
 * header). Thread-safe: no shared buffers.
 */
static long post_key(const char *path, const char *token, const char *key, const char *body,
                     struct http_res *r)
{
    char h[700];
    const char *extra[] = {h, NULL};
    if (key && key[0])
        snprintf(h, sizeof h, "Idempotency-Key: %s", key);
    else
        snprintf(h, sizeof h, "Idempotency-Key;"); /* curl: send the header with no value */
    return http_raw(&harness_srv, "POST", path, token, "application/json", body, strlen(body),
                    key ? extra : NULL, r);
}

static bool replayed(const struct http_res *r)
{
    char *v = http_header(r, "Idempotent-Replayed");
    bool yes = v && strcmp(v, "true") == 0;
    free(v);
    return yes;
}

static int count(const char *list, const char *token)
{
    struct http_res r;
    reqj("GET", fmt("%s?limit=1000", list), token, NULL, &r);
    ck_assert_msg(r.status == 200, "GET %s: %ld", list, r.status);
    int n = (int)json_array_size(json_object_get(r.json, "items"));
    http_res_free(&r);
    return n;
}

static const char *id_of(const struct http_res *r)
{
    const char *id = json_string_value(json_object_get(r->json, "id"));
    return id ? id : "";
}

static void problem(const char *what, const struct http_res *r, long status)
{
    char *ct = http_header(r, "Content-Type");
    if (r->status != status) {
        soft(false, "%s: status %ld (%s), expected %ld: %s", what, r->status, soft_shows(ct),
             status, soft_show(r->body, r->body_len));
        free(ct);
        return;
    }
    soft(ct && strncmp(ct, "application/problem+json", 24) == 0,
         "%s: Content-Type %s, expected application/problem+json", what, soft_shows(ct));
    free(ct);
    char *rid = http_header(r, "X-Request-Id");
    const char *jrid = json_string_value(json_object_get(r->json, "request_id"));
    soft(json_integer_value(json_object_get(r->json, "status")) == status && rid && jrid &&
             strcmp(rid, jrid) == 0 && json_is_string(json_object_get(r->json, "detail")),
         "%s: not a complete problem document (status, detail, request_id): %s", what,
         soft_show(r->body, r->body_len));
    free(rid);
    soft(!replayed(r), "%s: an error answer carries Idempotent-Replayed: true", what);
}

/* ---- the creating endpoints -------------------------------------------------------- */

struct cep {
    const char *name;
    const char *path;       /* POST here */
    const char *list;       /* count here (as the same user) */
    const char *pre, *post; /* the body: pre + a unique, valid name + post */
};

static const struct cep ceps[] = {
    {"tenant", "/api/v1/tenants", "/api/v1/tenants", "{\"slug\":\"", "\",\"name\":\"Tenant\"}"},
    {"project", "/api/v1/tenants/idem/projects", "/api/v1/tenants/idem/projects", "{\"slug\":\"",
     "\",\"name\":\"Project\",\"description\":\"d\"}"},
    {"user", "/api/v1/users", "/api/v1/users", "{\"username\":\"",
     "\",\"password\":\"long-enough-pw\",\"display_name\":\"U\"}"},
    {"token", "/api/v1/tokens", "/api/v1/tokens", "{\"name\":\"", "\",\"scopes\":[\"jobs:read\"]}"},
};

/* The body of ep for name (rotating static buffers, see fmt). */
static const char *body_of(const struct cep *ep, const char *name)
{
    return fmt("%s%s%s", ep->pre, name, ep->post);
}

static void setup(void)
{
    const char *env[] = {"AIDC_THREADS=8", NULL};
    harness_setup("idempotency", env);
    make_tenant("idem");
    make_user("bob", "bob-password-12", NULL);
    make_member("idem", "bob", "tenant_admin");
    char *t = login("bob", "bob-password-12");
    if (!t) {
        fprintf(stderr, "setup: bob cannot log in\n");
        exit(1);
    }
    snprintf(bob_token, sizeof bob_token, "%s", t);
    free(t);
}

static void teardown(void)
{
    harness_teardown();
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(retry_replays_the_first_answer)
{
    for (size_t e = 0; e < N_OF(ceps); e++) {
        const struct cep *ep = &ceps[e];
        char key[64], name[64];
        snprintf(key, sizeof key, "replay-%s-1", ep->name);
        snprintf(name, sizeof name, "replay-%s", ep->name);
        char *body = strdup(body_of(ep, name));
        int before = count(ep->list, ADM);
        struct http_res first, again;
        post_key(ep->path, ADM, key, body, &first);
        soft(first.status == 201, "%s: first POST with a key: %ld %s", ep->name, first.status,
             soft_show(first.body, first.body_len));
        soft(!replayed(&first), "%s: the first answer says Idempotent-Replayed", ep->name);
        soft(count(ep->list, ADM) == before + 1, "%s: the first POST did not create one object",
             ep->name);
        char *loc1 = http_header(&first, "Location");
        for (int i = 0; i < 3; i++) {
            post_key(ep->path, ADM, key, body, &again);
            soft(again.status == first.status, "%s: retry %d answered %ld, first %ld: %s", ep->name,
                 i + 1, again.status, first.status, soft_show(again.body, again.body_len));
            soft(again.body_len == first.body_len &&
                     memcmp(again.body, first.body, first.body_len) == 0,
                 "%s: retry %d body differs:\n  first: %s\n  retry: %s", ep->name, i + 1,
                 soft_show(first.body, first.body_len), soft_show(again.body, again.body_len));
            soft(replayed(&again), "%s: retry %d lacks Idempotent-Replayed: true", ep->name, i + 1);
            char *ct = http_header(&again, "Content-Type");
            soft(ct && strncmp(ct, "application/json", 16) == 0, "%s: retry %d Content-Type %s",
                 ep->name, i + 1, soft_shows(ct));
            free(ct);
            char *loc2 = http_header(&again, "Location");
            soft((!loc1 && !loc2) || (loc1 && loc2 && strcmp(loc1, loc2) == 0),
                 "%s: retry %d Location %s, first %s", ep->name, i + 1, soft_shows(loc2),
                 soft_shows(loc1));
            free(loc2);
            http_res_free(&again);
        }
        free(loc1);
        soft(count(ep->list, ADM) == before + 1, "%s: retries created objects (%d before, %d now)",
             ep->name, before, count(ep->list, ADM));
        http_res_free(&first);
        free(body);
    }
    soft_done();
}
END_TEST

START_TEST(same_key_other_body_is_409)
{
    for (size_t e = 0; e < N_OF(ceps); e++) {
        const struct cep *ep = &ceps[e];
        char key[64], name[64], what[160];
        snprintf(key, sizeof key, "conflict-%s", ep->name);
        snprintf(name, sizeof name, "conflict-%s", ep->name);
        char *body = strdup(body_of(ep, name));
        struct http_res r, first;
        post_key(ep->path, ADM, key, body, &first);
        soft(first.status == 201, "%s: first POST: %ld %s", ep->name, first.status,
             soft_show(first.body, first.body_len));
        int before = count(ep->list, ADM);
        /* another body */
        snprintf(name, sizeof name, "conflict-%s-b", ep->name);
        post_key(ep->path, ADM, key, body_of(ep, name), &r);
        snprintf(what, sizeof what, "%s: same key, different body", ep->name);
        problem(what, &r, 409);
        http_res_free(&r);
        /* the same JSON written differently: a replay or a 409, never a second object */
        size_t bl = strlen(body);
        char *spaced = malloc(bl + 2);
        spaced[0] = ' ';
        memcpy(spaced + 1, body, bl + 1);
        post_key(ep->path, ADM, key, spaced, &r);
        soft(r.status == 409 || (r.status == 201 && replayed(&r)),
             "%s: same key, same JSON with a leading space: %ld %s", ep->name, r.status,
             soft_show(r.body, r.body_len));
        http_res_free(&r);
        free(spaced);
        /* the same key and body on another creating endpoint */
        const struct cep *other = &ceps[(e + 1) % N_OF(ceps)];
        post_key(other->path, ADM, key, body, &r);
        snprintf(what, sizeof what, "%s key reused on %s", ep->name, other->path);
        soft(r.status == 409 || r.status == 400,
             "%s: %ld, expected 409 (or 400 for a body that endpoint cannot take): %s", what,
             r.status, soft_show(r.body, r.body_len));
        soft(!replayed(&r), "%s: answered as a replay", what);
        http_res_free(&r);
        soft(count(ep->list, ADM) == before, "%s: a conflicting request created an object",
             ep->name);
        /* the key still replays the original */
        post_key(ep->path, ADM, key, body, &r);
        soft(r.status == 201 && replayed(&r) && r.body_len == first.body_len &&
                 memcmp(r.body, first.body, r.body_len) == 0,
             "%s: after the conflicts the original is not replayed: %ld %s", ep->name, r.status,
             soft_show(r.body, r.body_len));
        http_res_free(&r);
        http_res_free(&first);
        free(body);
    }
    soft_done();
}
END_TEST

START_TEST(other_key_acts_like_no_key)
{
    for (size_t e = 0; e < N_OF(ceps); e++) {
        const struct cep *ep = &ceps[e];
        char name[64];
        snprintf(name, sizeof name, "other-key-%s", ep->name);
        char *body = strdup(body_of(ep, name));
        int before = count(ep->list, ADM);
        struct http_res a, b;
        post_key(ep->path, ADM, fmt("other-a-%s", ep->name), body, &a);
        soft(a.status == 201, "%s: key A: %ld %s", ep->name, a.status,
             soft_show(a.body, a.body_len));
        post_key(ep->path, ADM, fmt("other-b-%s", ep->name), body, &b);
        soft(!replayed(&b), "%s: another key was answered as a replay", ep->name);
        if (strcmp(ep->name, "token") == 0) {
            /* tokens have no natural key: a new one */
            soft(b.status == 201 && strcmp(id_of(&a), id_of(&b)) != 0,
                 "token: a second key did not create a second token: %ld %s", b.status,
                 soft_show(b.body, b.body_len));
            soft(count(ep->list, ADM) == before + 2, "token: expected two new tokens");
        } else {
            /* a duplicate slug/username: 409, as without keys */
            char what[100];
            snprintf(what, sizeof what, "%s: duplicate under another key", ep->name);
            problem(what, &b, 409);
            soft(count(ep->list, ADM) == before + 1, "%s: expected exactly one new object",
                 ep->name);
        }
        http_res_free(&a);
        http_res_free(&b);
        free(body);
    }
    soft_done();
}
END_TEST

START_TEST(keys_are_per_user)
{
    /* tokens: anyone may create them */
    const char *body = "{\"name\":\"shared\",\"scopes\":[\"jobs:read\"]}";
    int adm0 = count("/api/v1/tokens", ADM), bob0 = count("/api/v1/tokens", bob_token);
    struct http_res a, b, r;
    post_key("/api/v1/tokens", ADM, "shared-key", body, &a);
    soft(a.status == 201, "admin token with shared-key: %ld", a.status);
    post_key("/api/v1/tokens", bob_token, "shared-key", body, &b);
    soft(b.status == 201 && !replayed(&b), "bob token with the admin's key: %ld replayed=%d %s",
         b.status, replayed(&b), soft_show(b.body, b.body_len));
    soft(strcmp(id_of(&a), id_of(&b)) != 0, "bob got the admin's token %s", id_of(&a));
    soft(strcmp(json_string_value(json_object_get(a.json, "token"))
                    ? json_string_value(json_object_get(a.json, "token"))
                    : "",
                json_string_value(json_object_get(b.json, "token"))
                    ? json_string_value(json_object_get(b.json, "token"))
                    : "") != 0,
         "bob was handed the admin's secret");
    soft(count("/api/v1/tokens", ADM) == adm0 + 1 && count("/api/v1/tokens", bob_token) == bob0 + 1,
         "tokens: expected one new token each");
    post_key("/api/v1/tokens", bob_token, "shared-key", body, &r);
    soft(r.status == 201 && replayed(&r) && strcmp(id_of(&r), id_of(&b)) == 0,
         "bob's retry does not replay bob's token: %ld %s", r.status,
         soft_show(r.body, r.body_len));
    http_res_free(&r);
    post_key("/api/v1/tokens", ADM, "shared-key", body, &r);
    soft(r.status == 201 && replayed(&r) && strcmp(id_of(&r), id_of(&a)) == 0,
         "admin's retry does not replay the admin's token: %ld %s", r.status,
         soft_show(r.body, r.body_len));
    http_res_free(&r);
    http_res_free(&a);
    http_res_free(&b);
    /* projects: the admin and bob (tenant_admin) with one key, different bodies */
    int p0 = count("/api/v1/tenants/idem/projects", ADM);
    post_key("/api/v1/tenants/idem/projects", ADM, "shared-project-key",
             "{\"slug\":\"per-user-admin\",\"name\":\"A\"}", &a);
    soft(a.status == 201, "admin project with shared-project-key: %ld %s", a.status,
         soft_show(a.body, a.body_len));
    post_key("/api/v1/tenants/idem/projects", bob_token, "shared-project-key",
             "{\"slug\":\"per-user-bob\",\"name\":\"B\"}", &b);
    soft(b.status == 201 && !replayed(&b),
         "bob's project with the admin's key (different body): %ld %s", b.status,
         soft_show(b.body, b.body_len));
    soft(count("/api/v1/tenants/idem/projects", ADM) == p0 + 2, "projects: expected two new");
    http_res_free(&a);
    http_res_free(&b);
    /* one user, two credentials (JWT and API token): the key names a request of
     * one credential - another credential reusing it is refused, creates nothing */
    char *api = make_token(ADM, "[\"admin\"]", NULL);
    const char *tb = "{\"slug\":\"via-two-creds\",\"name\":\"x\"}";
    post_key("/api/v1/tenants", ADM, "two-creds", tb, &a);
    post_key("/api/v1/tenants", api, "two-creds", tb, &b);
    soft(a.status == 201 && b.status == 409 && !replayed(&b),
         "the admin's API token reusing its JWT's key: %ld %ld (expected 201, 409)", a.status,
         b.status);
    http_res_free(&a);
    http_res_free(&b);
    free(api);
    soft_done();
}
END_TEST

START_TEST(failures_are_not_remembered)
{
    struct http_res r;
    char what[200];
    struct {
        const char *path, *key, *bad, *good;
        long bad_status;
    } cases[] = {
        {"/api/v1/tenants", "fail-400", "{\"slug\":\"Bad Slug\",\"name\":\"x\"}",
         "{\"slug\":\"fixed-400\",\"name\":\"x\"}", 400},
        {"/api/v1/tenants", "fail-json", "{\"slug\":\"fixed-json\",",
         "{\"slug\":\"fixed-json\",\"name\":\"x\"}", 400},
        {"/api/v1/tenants", "fail-409", "{\"slug\":\"taken\",\"name\":\"x\"}",
         "{\"slug\":\"taken-2\",\"name\":\"x\"}", 409},
        {"/api/v1/tenants/idem/projects", "fail-p409", "{\"slug\":\"taken-p\",\"name\":\"x\"}",
         "{\"slug\":\"taken-p2\",\"name\":\"x\"}", 409},
        {"/api/v1/users", "fail-pw", "{\"username\":\"fixed-pw\",\"password\":\"short\"}",
         "{\"username\":\"fixed-pw\",\"password\":\"long-enough-pw\"}", 400},
        {"/api/v1/tokens", "fail-422",
         "{\"name\":\"t\",\"scopes\":[\"jobs:read\"],\"tenant\":\"ghost\"}",
         "{\"name\":\"t\",\"scopes\":[\"jobs:read\"]}", 422},
        {"/api/v1/tokens", "fail-scope", "{\"name\":\"t\",\"scopes\":[\"nope\"]}",
         "{\"name\":\"t\",\"scopes\":[\"jobs:read\"]}", 400},
    };
    make_tenant("taken");
    make_project("idem", "taken-p");
    for (size_t i = 0; i < N_OF(cases); i++) {
        const char *tok = ADM;
        for (int k = 0; k < 2; k++) {
            post_key(cases[i].path, tok, cases[i].key, cases[i].bad, &r);
            snprintf(what, sizeof what, "POST %s key %s failing body %s (try %d)", cases[i].path,
                     cases[i].key, cases[i].bad, k + 1);
            problem(what, &r, cases[i].bad_status);
            http_res_free(&r);
        }
        struct http_res good, again;
        post_key(cases[i].path, tok, cases[i].key, cases[i].good, &good);
        soft(good.status == 201 && !replayed(&good),
             "POST %s key %s: after a %ld the corrected body answered %ld %s", cases[i].path,
             cases[i].key, cases[i].bad_status, good.status, soft_show(good.body, good.body_len));
        post_key(cases[i].path, tok, cases[i].key, cases[i].good, &again);
        soft(again.status == 201 && replayed(&again) && again.body_len == good.body_len &&
                 memcmp(again.body, good.body, good.body_len) == 0,
             "POST %s key %s: the corrected request is not replayed: %ld %s", cases[i].path,
             cases[i].key, again.status, soft_show(again.body, again.body_len));
        /* and now the failing body is a different request under a used key */
        post_key(cases[i].path, tok, cases[i].key, cases[i].bad, &r);
        soft(r.status == 409 || r.status == cases[i].bad_status,
             "POST %s key %s: the failing body after success: %ld", cases[i].path, cases[i].key,
             r.status);
        http_res_free(&r);
        http_res_free(&good);
        http_res_free(&again);
    }
    /* a 404 (no such tenant) does not use up the key for the right tenant */
    post_key("/api/v1/tenants/ghost/projects", ADM, "fail-404",
             "{\"slug\":\"p404\",\"name\":\"x\"}", &r);
    problem("POST /api/v1/tenants/ghost/projects with a key", &r, 404);
    http_res_free(&r);
    post_key("/api/v1/tenants/idem/projects", ADM, "fail-404", "{\"slug\":\"p404\",\"name\":\"x\"}",
             &r);
    soft(r.status == 201, "the key of a 404 cannot be used on the right path: %ld %s", r.status,
         soft_show(r.body, r.body_len));
    http_res_free(&r);
    /* a 403 of one user leaves the key free (bob may not create tenants) */
    post_key("/api/v1/tenants", bob_token, "fail-403", "{\"slug\":\"bobs\",\"name\":\"x\"}", &r);
    problem("bob POST /api/v1/tenants with a key", &r, 403);
    http_res_free(&r);
    post_key("/api/v1/tokens", bob_token, "fail-403", "{\"name\":\"t\",\"scopes\":[\"jobs:read\"]}",
             &r);
    soft(r.status == 201 && !replayed(&r), "bob's key of a 403 is used up: %ld %s", r.status,
         soft_show(r.body, r.body_len));
    http_res_free(&r);
    soft_done();
}
END_TEST

START_TEST(malformed_keys_are_400)
{
    char *k256 = malloc(257), *k255 = malloc(256);
    memset(k256, 'k', 256);
    k256[256] = '\0';
    memset(k255, 'k', 255);
    k255[255] = '\0';
    const char *bad_keys[] = {
        "",
        k256,
        "has space",
        "ctl\001char",
        "tab\tkey",
        "del\x7f",
        "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87",
        "emoji-\xf0\x9f\x98\x80",
    };
    for (size_t e = 0; e < N_OF(ceps); e++) {
        const struct cep *ep = &ceps[e];
        int before = count(ep->list, ADM);
        for (size_t i = 0; i < N_OF(bad_keys); i++) {
            struct http_res r;
            char what[400];
            post_key(ep->path, ADM, bad_keys[i], body_of(ep, fmt("badkey-%s-%zu", ep->name, i)),
                     &r);
            snprintf(what, sizeof what, "POST %s with Idempotency-Key \"%s\"", ep->path,
                     soft_show(bad_keys[i], strlen(bad_keys[i])));
            problem(what, &r, 400);
            http_res_free(&r);
        }
        soft(count(ep->list, ADM) == before, "%s: a request with a malformed key created something",
             ep->name);
    }
    /* the edges that are fine: 1 and 255 characters, every printable ASCII character */
    const char *good_keys[] = {"a", k255, "!\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`{|}~"};
    for (size_t i = 0; i < N_OF(good_keys); i++) {
        struct http_res r, again;
        const char *body = fmt("{\"name\":\"goodkey-%zu\",\"scopes\":[\"jobs:read\"]}", i);
        post_key("/api/v1/tokens", ADM, good_keys[i], body, &r);
        soft(r.status == 201, "Idempotency-Key \"%s\": %ld %s", soft_shows(good_keys[i]), r.status,
             soft_show(r.body, r.body_len));
        post_key("/api/v1/tokens", ADM, good_keys[i], body, &again);
        soft(again.status == 201 && replayed(&again) && strcmp(id_of(&r), id_of(&again)) == 0,
             "Idempotency-Key \"%s\": retry not replayed: %ld", soft_shows(good_keys[i]),
             again.status);
        http_res_free(&r);
        http_res_free(&again);
    }
    free(k256);
    free(k255);
    soft_done();
}
END_TEST

/* ---- concurrency ------------------------------------------------------------------ */

struct shot {
    pthread_barrier_t *bar;
    const char *path, *key, *body;
    long status;
    bool replayed;
    char id[64];
    char *answer;
    size_t answer_len;
};

static void *fire(void *arg)
{
    struct shot *s = arg;
    struct http_res r;
    pthread_barrier_wait(s->bar);
    post_key(s->path, ADM, s->key, s->body, &r);
    s->status = r.status;
    s->replayed = replayed(&r);
    snprintf(s->id, sizeof s->id, "%s", id_of(&r));
    s->answer = malloc(r.body_len + 1);
    memcpy(s->answer, r.body, r.body_len + 1);
    s->answer_len = r.body_len;
    http_res_free(&r);
    return NULL;
}

START_TEST(concurrent_retries_create_one_object)
{
    for (int round = 0; round < 3; round++) {
        for (size_t e = 0; e < N_OF(ceps); e++) {
            const struct cep *ep = &ceps[e];
            char key[64], name[64];
            snprintf(key, sizeof key, "race-%s-%d", ep->name, round);
            snprintf(name, sizeof name, "race-%s-%d", ep->name, round);
            char *body = strdup(body_of(ep, name));
            int before = count(ep->list, ADM);
            pthread_barrier_t bar;
            pthread_barrier_init(&bar, NULL, NTHREADS);
            struct shot shots[NTHREADS];
            pthread_t th[NTHREADS];
            for (int i = 0; i < NTHREADS; i++) {
                shots[i] = (struct shot){.bar = &bar, .path = ep->path, .key = key, .body = body};
                ck_assert_int_eq(pthread_create(&th[i], NULL, fire, &shots[i]), 0);
            }
            for (int i = 0; i < NTHREADS; i++)
                pthread_join(th[i], NULL);
            pthread_barrier_destroy(&bar);
            int fresh = 0;
            const char *id = NULL;
            const struct shot *orig = NULL;
            for (int i = 0; i < NTHREADS; i++) {
                const struct shot *s = &shots[i];
                soft(s->status == 201,
                     "%s round %d: concurrent request %d with one key answered %ld (replayed=%d): "
                     "%s",
                     ep->name, round, i, s->status, s->replayed,
                     soft_show(s->answer, s->answer_len));
                if (s->status != 201)
                    continue;
                if (!s->replayed) {
                    fresh++;
                    orig = s;
                }
                if (!id)
                    id = s->id;
                soft(strcmp(id, s->id) == 0, "%s round %d: two different ids %s and %s", ep->name,
                     round, id, s->id);
            }
            soft(fresh == 1, "%s round %d: %d answers were not replays (expected exactly one)",
                 ep->name, round, fresh);
            for (int i = 0; orig && i < NTHREADS; i++)
                if (shots[i].status == 201)
                    soft(shots[i].answer_len == orig->answer_len &&
                             memcmp(shots[i].answer, orig->answer, orig->answer_len) == 0,
                         "%s round %d: answer %d differs from the original:\n  %s\n  %s", ep->name,
                         round, i, soft_show(orig->answer, orig->answer_len),
                         soft_show(shots[i].answer, shots[i].answer_len));
            int after = count(ep->list, ADM);
            soft(after == before + 1, "%s round %d: %d objects created, expected 1", ep->name,
                 round, after - before);
            for (int i = 0; i < NTHREADS; i++)
                free(shots[i].answer);
            free(body);
        }
    }
    struct http_res r;
    reqj("GET", "/healthz", NULL, NULL, &r);
    soft(r.status == 200, "healthz after the races: %ld", r.status);
    http_res_free(&r);
    soft_done();
}
END_TEST

/* ---- tokens: the replay hands back the same, working secret ------------------------- */

START_TEST(token_replay_returns_the_same_working_secret)
{
    const char *body = "{\"name\":\"ci-pipeline\",\"scopes\":[\"jobs:read\",\"admin\"]}";
    int before = count("/api/v1/tokens", ADM);
    struct http_res first, again, me;
    post_key("/api/v1/tokens", ADM, "token-replay", body, &first);
    ck_assert_int_eq(first.status, 201);
    const char *secret = json_string_value(json_object_get(first.json, "token"));
    ck_assert_ptr_nonnull(secret);
    post_key("/api/v1/tokens", ADM, "token-replay", body, &again);
    const char *secret2 = json_string_value(json_object_get(again.json, "token"));
    soft(again.status == 201 && replayed(&again), "token replay: %ld replayed=%d", again.status,
         replayed(&again));
    soft(secret2 && strcmp(secret, secret2) == 0, "token replay minted another secret: %s",
         soft_shows(secret2));
    soft(strcmp(id_of(&first), id_of(&again)) == 0, "token replay has another id");
    soft(count("/api/v1/tokens", ADM) == before + 1, "token replay created a second token");
    reqj("GET", "/api/v1/me", secret2 ? secret2 : secret, NULL, &me);
    soft(me.status == 200, "the replayed secret does not work: %ld %s", me.status,
         soft_show(me.body, me.body_len));
    const char *tid = json_string_value(json_object_get(json_object_get(me.json, "token"), "id"));
    soft(tid && strcmp(tid, id_of(&first)) == 0, "the replayed secret is token %s, expected %s",
         soft_shows(tid), id_of(&first));
    http_res_free(&me);
    /* a token created with a token, replayed through that token */
    struct http_res t1, t2;
    const char *b2 = "{\"name\":\"child\",\"scopes\":[\"jobs:read\"]}";
    post_key("/api/v1/tokens", secret, "child-key", b2, &t1);
    post_key("/api/v1/tokens", secret, "child-key", b2, &t2);
    soft(t1.status == 201 && t2.status == 201 && replayed(&t2) && t1.body_len == t2.body_len &&
             memcmp(t1.body, t2.body, t1.body_len) == 0,
         "token created through an API token is not replayed: %ld %ld", t1.status, t2.status);
    http_res_free(&t1);
    http_res_free(&t2);
    /* revoked afterwards: a retry still creates nothing */
    int mid = count("/api/v1/tokens", ADM);
    ck_assert_int_eq(req("DELETE", fmt("/api/v1/tokens/%s", id_of(&first)), ADM, NULL), 204);
    struct http_res late;
    post_key("/api/v1/tokens", ADM, "token-replay", body, &late);
    soft(late.status == 201 && replayed(&late) && strcmp(id_of(&late), id_of(&first)) == 0,
         "retry after revoking: %ld replayed=%d %s", late.status, replayed(&late),
         soft_show(late.body, late.body_len));
    /* the token went, and with it the child it created */
    soft(count("/api/v1/tokens", ADM) == mid - 2, "retry after revoking created a token");
    soft(req("GET", "/api/v1/me", secret, NULL) == 401, "the revoked secret still works");
    http_res_free(&late);
    http_res_free(&first);
    http_res_free(&again);
    soft_done();
}
END_TEST

/* ---- and the log is clean ----------------------------------------------------------- */

START_TEST(no_errors_logged)
{
    soft_log_check(false);
    soft_done();
}
END_TEST

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("idempotency");
    TCase *tc = tcase_create("idempotency");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, retry_replays_the_first_answer);
    tcase_add_test(tc, same_key_other_body_is_409);
    tcase_add_test(tc, other_key_acts_like_no_key);
    tcase_add_test(tc, keys_are_per_user);
    tcase_add_test(tc, failures_are_not_remembered);
    tcase_add_test(tc, malformed_keys_are_400);
    tcase_add_test(tc, concurrent_retries_create_one_object);
    tcase_add_test(tc, token_replay_returns_the_same_working_secret);
    tcase_add_test(tc, no_errors_logged);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    curl_global_cleanup();
    return rc;
}
