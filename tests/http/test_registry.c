/*
 * test_registry.c - the registry sync against real registries (CNCF
 * distribution, deploy/registry-up.sh):
 *
 * - the anonymous and the basic-auth registry of tests/run.sh, seeded with
 *   deploy/registry-seed.sh: every image with the digest, size and config
 *   labels the registry has, public under a platform prefix and a tenant's
 *   under its slug; wrong or missing credentials are a clear error;
 * - a registry of this test's own, changed under the sync with
 *   tests/support/registry-push.sh: a second sync changes nothing; a moved
 *   tag takes its new digest, unless the image is immutable (a conflict);
 *   a tag deleted upstream is flagged, not deleted, and restored when it
 *   returns; pages of two (n=2) miss nothing; an OCI index is one image of
 *   all its platforms; storage over a tenant's quota flags the tenant;
 * - the registry down: a clear error, and nothing is lost or flagged.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* seed.tsv of deploy/registry-seed.sh: the same bytes, so the same digests, every run */
#define PT24_DIGEST "sha256:817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afdf"
#define TF216_DIGEST "sha256:f06701933d31aa4feaea7adc9f1c9d16fa87e27d4e18da540820af795f8f79cf"

static const char *anon_url, *auth_url;
static char own_dir[128], own_url[64];
static bool own_up;

/* Run a shell command; its first line of output into out (if any). Returns the exit status. */
static int sh(char *out, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t n, const char *f, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, f);
    vsnprintf(cmd, sizeof cmd, f, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[512] = "";
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    char rest[512];
    while (fgets(rest, sizeof rest, p))
        ;
    int rc = pclose(p);
    line[strcspn(line, "\n")] = '\0';
    if (out)
        snprintf(out, n, "%s", line);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* registry-push.sh against the test's own registry; its first output line into out. */
static void push(char *out, size_t n, const char *args)
{
    int rc = sh(out, n, "REGISTRY_URL=%s %s/tests/support/registry-push.sh %s", own_url,
                AIDC_SOURCE_DIR, args);
    ck_assert_msg(rc == 0, "registry-push.sh %s failed: %s", args, out);
}

static void own_registry_down(void)
{
    if (own_up)
        sh(NULL, 0, "REGISTRY_DIR=%s %s/deploy/registry-down.sh --purge >/dev/null 2>&1", own_dir,
           AIDC_SOURCE_DIR);
    own_up = false;
}

/* Whether nothing listens on 127.0.0.1:port now (the registry binds it next). */
static bool port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static void setup(void)
{
    harness_require_pg();
    anon_url = getenv("AIDC_TEST_REGISTRY_URL");
    auth_url = getenv("AIDC_TEST_REGISTRY_AUTH_URL");
    if (!anon_url || !anon_url[0]) {
        fprintf(stderr, "test_registry: no test registry (tests/run.sh starts one): skipped\n");
        exit(77);
    }
    /* a registry of this test's own, which it changes (the shared ones stay as seeded) */
    /* 15520-15589, from the pid on: tests/run.sh's SMTP receiver holds 15525 (a test
     * whose pid led there failed to start its registry in CI) */
    int port = 0;
    for (int i = 0; i < 70 && !port; i++) {
        int p = 15520 + (int)((getpid() + i) % 70);
        if (port_free(p))
            port = p;
    }
    ck_assert_msg(port, "no free port in 15520-15589 for the test's own registry");
    snprintf(own_dir, sizeof own_dir, "/tmp/aidc-test-registry-own-%d", (int)getpid());
    snprintf(own_url, sizeof own_url, "http://127.0.0.1:%d", port);
    char line[512];
    int rc = sh(line, sizeof line,
                "REGISTRY_DIR=%s REGISTRY_ADDR=127.0.0.1:%d %s/deploy/registry-up.sh >/dev/null "
                "2>&1 && REGISTRY_DIR=%s REGISTRY_URL=%s %s/deploy/registry-seed.sh >/dev/null "
                "2>&1; echo $?",
                own_dir, port, AIDC_SOURCE_DIR, own_dir, own_url, AIDC_SOURCE_DIR);
    own_up = true;
    if (rc != 0 || strcmp(line, "0") != 0) {
        own_registry_down();
        audittest_setup_fail("starting the test's own registry");
    }
    char cred[160];
    snprintf(cred, sizeof cred, "AIDC_TEST_REG_CRED=%s:%s",
             getenv("AIDC_TEST_REGISTRY_USER") ? getenv("AIDC_TEST_REGISTRY_USER") : "",
             getenv("AIDC_TEST_REGISTRY_PASSWORD") ? getenv("AIDC_TEST_REGISTRY_PASSWORD") : "");
    const char *env[] = {"AIDC_REGISTRY_SYNC_SECONDS=0", cred, "AIDC_TEST_REG_BAD=aidc:wrong",
                         NULL};
    harness_setup("registry", env);
    make_tenant("pytorch");
    make_tenant("team-a");
}

static void teardown(void)
{
    own_registry_down();
    harness_teardown();
}

static const char *adm(void)
{
    return harness_srv.admin_token;
}

static void registry(const char *name, const char *url, const char *credref, const char *options)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"name\":\"%s\",\"url\":\"%s\",\"credentials_ref\":%s%s%s,"
                                "\"options\":%s}",
             name, url, credref ? "\"" : "", credref ? credref : "null", credref ? "\"" : "",
             options);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/registries", adm(), body, &r), 201);
    ck_assert_str_eq(jstr(r.json, "name"), name);
    ck_assert_str_eq(jstr(r.json, "sync_state"), "requested");
    http_res_free(&r);
}

/* The registry's last_sync_at (malloc'd, "" when none). */
static char *last_sync_at(const char *name)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/registries/%s", name), adm(), NULL, &r), 200);
    const char *at = jstr(r.json, "last_sync_at");
    char *copy = strdup(at ? at : "");
    http_res_free(&r);
    return copy;
}

/* Wait for a sync of name newer than before (a deadline, never a fixed sleep): its registry. */
static json_t *wait_sync(const char *name, const char *before)
{
    double until = audittest_now() + 60;
    for (;;) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", fmt("/api/v1/registries/%s", name), adm(), NULL, &r), 200);
        const char *at = jstr(r.json, "last_sync_at");
        if (at && strcmp(at, before) != 0 && audittest_str_is(jstr(r.json, "sync_state"), "idle")) {
            json_t *reg = json_incref(r.json);
            http_res_free(&r);
            return reg;
        }
        http_res_free(&r);
        ck_assert_msg(audittest_now() < until, "registry %s was not synced within 60 s", name);
        audittest_nap();
    }
}

/* Ask for a sync and wait for it: the registry with its report. */
static json_t *sync_now(const char *name)
{
    char *before = last_sync_at(name);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/registries/%s/sync", name), adm(), NULL, &r), 202);
    char *loc = http_header(&r, "Location");
    ck_assert_ptr_nonnull(loc);
    ck_assert_str_eq(loc, fmt("/api/v1/registries/%s", name));
    free(loc);
    http_res_free(&r);
    json_t *reg = wait_sync(name, before);
    free(before);
    return reg;
}

static long long count(const json_t *reg, const char *k)
{
    return (long long)json_integer_value(json_object_get(json_object_get(reg, "last_sync"), k));
}

/* The live image repository:tag of registry name, as the admin sees it (NULL: none). */
static json_t *image(const char *registry_name, const char *repo, const char *tag)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/images?registry=%s&q=%s:%s&limit=1000",
                                     registry_name, repo, tag),
                          adm(), NULL, &r),
                     200);
    json_t *found = NULL, *it;
    size_t i;
    json_array_foreach(json_object_get(r.json, "items"), i, it) {
        if (audittest_str_is(jstr(it, "repository"), repo) &&
            audittest_str_is(jstr(it, "tag"), tag))
            found = json_incref(it);
    }
    http_res_free(&r);
    return found;
}

START_TEST(anonymous_registry_images_public_and_per_tenant)
{
    registry("anon", anon_url, NULL, "{\"public_prefixes\":[\"tensorflow/\"]}");
    json_t *reg = wait_sync("anon", "");
    ck_assert(json_is_true(json_object_get(reg, "last_sync_ok")));
    ck_assert_int_eq(count(reg, "repositories"), 2);
    ck_assert_int_eq(count(reg, "added"), 4);
    ck_assert_int_eq(count(reg, "errors"), 0);
    json_decref(reg);

    json_t *pt = image("anon", "pytorch/pytorch", "2.4-cuda12.4");
    ck_assert_ptr_nonnull(pt);
    ck_assert_str_eq(jstr(pt, "digest"), PT24_DIGEST);
    ck_assert_int_eq(json_integer_value(json_object_get(pt, "size_bytes")), 1294);
    ck_assert_str_eq(jstr(pt, "visibility"), "tenant");
    ck_assert_str_eq(jstr(pt, "tenant"), "pytorch");
    ck_assert_str_eq(jstr(pt, "source"), "sync");
    ck_assert_str_eq(jstr(pt, "media_type"),
                     "application/vnd.docker.distribution.manifest.v2+json");
    json_t *labels = json_object_get(pt, "labels");
    ck_assert_str_eq(jstr(labels, "framework"), "pytorch");
    ck_assert_str_eq(jstr(labels, "framework_version"), "2.4.0");
    ck_assert_str_eq(jstr(labels, "cuda_version"), "12.4");
    ck_assert_str_eq(jstr(labels, "python_version"), "3.11");
    ck_assert_str_eq(jstr(labels, "architecture"), "amd64");
    json_decref(pt);

    json_t *tf = image("anon", "tensorflow/tensorflow", "2.16-gpu");
    ck_assert_ptr_nonnull(tf);
    ck_assert_str_eq(jstr(tf, "digest"), TF216_DIGEST);
    ck_assert_int_eq(json_integer_value(json_object_get(tf, "size_bytes")), 1314);
    ck_assert_str_eq(jstr(tf, "visibility"), "public");
    ck_assert(json_is_null(json_object_get(tf, "tenant")));
    ck_assert_str_eq(jstr(tf, "media_type"), "application/vnd.oci.image.manifest.v1+json");
    json_decref(tf);

    /* the filters find them by label */
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/images?registry=anon&label=framework=tensorflow", adm(),
                          NULL, &r),
                     200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 2);
    http_res_free(&r);

    /* the sync is audited with its counts */
    ck_assert_int_ge(audittest_num(harness_srv.owner_url,
                                   "SELECT count(*) FROM audit_log WHERE action = 'registry.sync'"
                                   " AND resource_id = 'anon' AND outcome = 'success'"
                                   " AND (details ->> 'added')::int = 4",
                                   0, NULL),
                     1);
}
END_TEST

START_TEST(basic_auth_with_good_missing_and_wrong_credentials)
{
    if (!auth_url || !auth_url[0])
        return; /* run.sh could not start the basic-auth registry (htpasswd missing) */
    const char *opts = "{\"public_prefixes\":[\"pytorch/\",\"tensorflow/\"]}";
    registry("authed", auth_url, "env:AIDC_TEST_REG_CRED", opts);
    json_t *reg = wait_sync("authed", "");
    ck_assert(json_is_true(json_object_get(reg, "last_sync_ok")));
    ck_assert_int_eq(count(reg, "added"), 4);
    json_decref(reg);
    json_t *pt = image("authed", "pytorch/pytorch", "2.4-cuda12.4");
    ck_assert_ptr_nonnull(pt);
    ck_assert_str_eq(jstr(pt, "digest"), PT24_DIGEST);
    ck_assert_str_eq(jstr(pt, "visibility"), "public");
    json_decref(pt);

    /* names are unique */
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/registries", adm(),
                          fmt("{\"name\":\"authed\",\"url\":\"%s\"}", auth_url), &r),
                     409);
    ck_assert_str_eq(jstr(r.json, "code"), "registry.exists");
    ck_assert_str_eq(jstr(json_object_get(r.json, "params"), "registry"), "authed");
    ck_assert_str_eq(jstr(r.json, "detail"), "registry \"authed\" exists already");
    http_res_free(&r);

    /* the same registry without credentials, and with wrong ones: a clear error */
    const char *cases[][2] = {{"nocred", NULL}, {"badcred", "env:AIDC_TEST_REG_BAD"}};
    for (size_t i = 0; i < 2; i++) {
        registry(cases[i][0], auth_url, cases[i][1], opts);
        reg = wait_sync(cases[i][0], "");
        ck_assert(json_is_false(json_object_get(reg, "last_sync_ok")));
        const char *err = jstr(json_object_get(reg, "last_sync"), "error");
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strstr(err, i == 0 ? "wants credentials" : "refused the credentials"),
                      "error: %s", err);
        ck_assert_msg(!strstr(err, "aidc:wrong") && !strstr(err, "wrong"), "secret shown: %s", err);
        json_decref(reg);
    }
}
END_TEST

START_TEST(second_sync_changes_nothing_then_a_moved_tag_and_immutability)
{
    registry("own", own_url, NULL, "{\"public_prefixes\":[\"tensorflow/\"]}");
    json_t *reg = wait_sync("own", "");
    ck_assert_int_eq(count(reg, "added"), 4);
    json_decref(reg);
    reg = sync_now("own");
    ck_assert_int_eq(count(reg, "added"), 0);
    ck_assert_int_eq(count(reg, "updated"), 0);
    ck_assert_int_eq(count(reg, "unchanged"), 4);
    json_decref(reg);

    /* 2.4 moves to a new image; 2.3, made immutable first, too */
    json_t *pt23 = image("own", "pytorch/pytorch", "2.3-cuda12.1");
    const char *id23 = jstr(pt23, "id");
    ck_assert_int_eq(req("PATCH", fmt("/api/v1/tenants/pytorch/images/%s", id23), adm(),
                         "{\"immutable\":true}"),
                     200);
    char moved[200], moved23[200];
    push(moved, sizeof moved, "push pytorch/pytorch 2.4-cuda12.4 --label framework=pytorch "
                              "--label framework_version=2.4.1 --filler 777");
    push(moved23, sizeof moved23, "push pytorch/pytorch 2.3-cuda12.1 --filler 778");
    moved[strcspn(moved, " ")] = '\0';
    moved23[strcspn(moved23, " ")] = '\0';
    reg = sync_now("own");
    ck_assert_int_eq(count(reg, "updated"), 1);
    ck_assert_int_eq(count(reg, "conflicts"), 1);
    json_decref(reg);
    json_t *pt = image("own", "pytorch/pytorch", "2.4-cuda12.4");
    ck_assert_str_eq(jstr(pt, "digest"), moved);
    ck_assert_str_eq(jstr(json_object_get(pt, "labels"), "framework_version"), "2.4.1");
    json_decref(pt);
    json_t *still = image("own", "pytorch/pytorch", "2.3-cuda12.1");
    ck_assert_str_eq(jstr(still, "digest"), jstr(pt23, "digest"));
    ck_assert_str_ne(jstr(still, "digest"), moved23);
    json_decref(still);
    json_decref(pt23);
}
END_TEST

START_TEST(a_tag_deleted_upstream_is_flagged_and_restored)
{
    char d[200];
    push(d, sizeof d, "push team-a/tools v1 --label framework=jax");
    d[strcspn(d, " ")] = '\0';
    json_t *reg = sync_now("own");
    ck_assert_int_eq(count(reg, "added"), 1);
    json_decref(reg);
    json_t *img = image("own", "team-a/tools", "v1");
    ck_assert_ptr_nonnull(img);
    ck_assert_str_eq(jstr(img, "tenant"), "team-a");
    char *id = strdup(jstr(img, "id"));
    json_decref(img);

    push(d, sizeof d, "delete team-a/tools v1");
    reg = sync_now("own");
    ck_assert_int_eq(count(reg, "deleted_upstream"), 1);
    json_decref(reg);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/team-a/images/%s", id), adm(), NULL, &r),
                     200);
    ck_assert_ptr_nonnull(jstr(r.json, "upstream_deleted_at"));
    http_res_free(&r);
    /* the flagged image no longer counts against storage, and a job cannot use it */
    ck_assert_int_eq(audittest_num(harness_srv.owner_url,
                                   "SELECT count(*) FROM images WHERE upstream_deleted_at IS NOT NULL",
                                   0, NULL),
                     1);

    push(d, sizeof d, "push team-a/tools v1 --label framework=jax"); /* the same bytes again */
    reg = sync_now("own");
    ck_assert_int_eq(count(reg, "restored"), 1);
    json_decref(reg);
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/team-a/images/%s", id), adm(), NULL, &r),
                     200);
    ck_assert(json_is_null(json_object_get(r.json, "upstream_deleted_at")));
    http_res_free(&r);
    free(id);
}
END_TEST

START_TEST(pages_of_two_miss_nothing_and_an_index_is_one_image)
{
    char out[200];
    for (int i = 1; i <= 5; i++)
        push(out, sizeof out, fmt("push team-a/many t%d --filler %d", i, i));
    char idx[200];
    push(idx, sizeof idx, "index tensorflow/tensorflow multi --label framework=tensorflow");
    char *space = strchr(idx, ' ');
    ck_assert_ptr_nonnull(space);
    *space = '\0';
    long long idx_size = strtoll(space + 1, NULL, 10);

    registry("paged", own_url, NULL, "{\"public_prefixes\":[\"tensorflow/\"],\"page_size\":2}");
    json_t *reg = wait_sync("paged", "");
    ck_assert(json_is_true(json_object_get(reg, "last_sync_ok")));
    /* pytorch (2), tensorflow (3 with the index), team-a/tools (1), team-a/many (5) */
    ck_assert_int_eq(count(reg, "repositories"), 4);
    ck_assert_int_eq(count(reg, "added"), 11);
    json_decref(reg);
    for (int i = 1; i <= 5; i++) {
        json_t *m = image("paged", "team-a/many", fmt("t%d", i));
        ck_assert_msg(m != NULL, "team-a/many:t%d missing", i);
        json_decref(m);
    }
    json_t *multi = image("paged", "tensorflow/tensorflow", "multi");
    ck_assert_ptr_nonnull(multi);
    ck_assert_str_eq(jstr(multi, "digest"), idx);
    ck_assert_str_eq(jstr(multi, "media_type"), "application/vnd.oci.image.index.v1+json");
    ck_assert_int_eq(json_integer_value(json_object_get(multi, "size_bytes")), idx_size);
    ck_assert_str_eq(jstr(json_object_get(multi, "labels"), "platforms"),
                     "linux/amd64,linux/arm64");
    ck_assert_str_eq(jstr(json_object_get(multi, "labels"), "framework"), "tensorflow");
    json_decref(multi);
}
END_TEST

START_TEST(storage_over_quota_flags_the_tenant)
{
    /* team-a's images in "own" and "paged" are a few KiB: a limit below that */
    ck_assert_int_eq(req("PUT", "/api/v1/tenants/team-a/quota", adm(),
                         "{\"resources\":{\"storage_gib\":{\"guaranteed\":0,"
                         "\"limit\":0.000001}}}"),
                     200);
    json_t *reg = sync_now("own");
    json_t *over = json_object_get(json_object_get(reg, "last_sync"), "over_quota");
    ck_assert_int_eq(json_array_size(over), 1);
    ck_assert_str_eq(jstr(json_array_get(over, 0), "tenant"), "team-a");
    json_decref(reg);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/team-a", adm(), NULL, &r), 200);
    ck_assert_ptr_nonnull(jstr(r.json, "storage_over_quota_since"));
    http_res_free(&r);
    ck_assert_int_eq(audittest_num(harness_srv.owner_url,
                                   "SELECT count(*) FROM audit_log"
                                   " WHERE action = 'tenant.storage_over_quota'"
                                   " AND resource_id = 'team-a'",
                                   0, NULL),
                     1);
    /* the limit raised: the flag goes at the next sync */
    ck_assert_int_eq(req("PUT", "/api/v1/tenants/team-a/quota", adm(),
                         "{\"resources\":{\"storage_gib\":{\"guaranteed\":0,\"limit\":10}}}"),
                     200);
    json_decref(sync_now("own"));
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/team-a", adm(), NULL, &r), 200);
    ck_assert(json_is_null(json_object_get(r.json, "storage_over_quota_since")));
    http_res_free(&r);
}
END_TEST

START_TEST(registry_down_is_a_clear_error_and_nothing_is_lost)
{
    long long before = audittest_num(harness_srv.owner_url,
                                     "SELECT count(*) FROM images i JOIN registries r"
                                     " ON r.id = i.registry_id WHERE r.name = 'own'"
                                     " AND i.upstream_deleted_at IS NULL",
                                     0, NULL);
    ck_assert_int_gt(before, 5);
    own_registry_down();
    json_t *reg = sync_now("own");
    ck_assert(json_is_false(json_object_get(reg, "last_sync_ok")));
    const char *err = jstr(json_object_get(reg, "last_sync"), "error");
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, own_url) && strstr(err, "/v2/"), "error names no URL: %s", err);
    json_decref(reg);
    ck_assert_int_eq(audittest_num(harness_srv.owner_url,
                                   "SELECT count(*) FROM images i JOIN registries r"
                                   " ON r.id = i.registry_id WHERE r.name = 'own'"
                                   " AND i.upstream_deleted_at IS NULL",
                                   0, NULL),
                     before);
    ck_assert_int_ge(audittest_num(harness_srv.owner_url,
                                   "SELECT count(*) FROM audit_log WHERE action = 'registry.sync'"
                                   " AND resource_id = 'own' AND outcome = 'error'",
                                   0, NULL),
                     1);
    /* the registry's answer is still a 404 for a name that is not there */
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/registries/nosuch/sync", adm(), NULL, &r), 404);
    ck_assert_str_eq(jstr(r.json, "code"), "registry.not_found");
    ck_assert_str_eq(jstr(json_object_get(r.json, "params"), "registry"), "nosuch");
    http_res_free(&r);
}
END_TEST

START_TEST(bad_registries_are_refused)
{
    /* each with the code of what is wrong (for one field, the problem's own) */
    static const struct {
        const char *body, *code;
    } bad[] = {
        {"{\"name\":\"x1\",\"url\":\"ftp://h\"}", "registry.url"},
        {"{\"name\":\"x1\",\"url\":\"http://h\",\"credentials_ref\":\"plain\"}",
         "registry.credentials_ref"},
        {"{\"name\":\"X1\",\"url\":\"http://h\"}", "validation.slug"},
        {"{\"name\":\"x1\",\"url\":\"http://h\",\"options\":{\"page_size\":0}}",
         "registry.options"},
        {"{\"name\":\"x1\",\"url\":\"http://h\",\"extra\":1}", "validation.unknown_field"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct http_res r;
        ck_assert_int_eq(reqj("POST", "/api/v1/registries", adm(), bad[i].body, &r), 400);
        ck_assert_msg(strcmp(jstr(r.json, "code"), bad[i].code) == 0, "%s: %s", bad[i].body,
                      r.body);
        http_res_free(&r);
    }
    /* the sync's reason is the option's message, whole */
    struct http_res ro;
    ck_assert_int_eq(reqj("POST", "/api/v1/registries", adm(),
                          "{\"name\":\"x1\",\"url\":\"http://h\",\"options\":{\"page_size\":0}}",
                          &ro),
                     400);
    json_t *fe = json_array_get(json_object_get(ro.json, "errors"), 0);
    ck_assert_str_eq(jstr(fe, "field"), "options");
    ck_assert_str_eq(jstr(fe, "message"), "page_size must be an integer from 1 to 1000");
    ck_assert_str_eq(jstr(json_object_get(fe, "params"), "reason"),
                     "page_size must be an integer from 1 to 1000");
    http_res_free(&ro);
    static const char *const bodies[] = {
        "{\"name\":\"x1\",\"url\":\"ftp://h\"}",
        "{\"name\":\"x1\",\"url\":\"http://h/path\"}",
        "{\"name\":\"x1\",\"url\":\"http://user:pw@h\"}",
        "{\"name\":\"x1\",\"url\":\"http://h\",\"credentials_ref\":\"plain\"}",
        "{\"name\":\"X1\",\"url\":\"http://h\"}",
        "{\"name\":\"x1\",\"url\":\"http://h\",\"options\":{\"page_size\":0}}",
        "{\"name\":\"x1\",\"url\":\"http://h\",\"options\":{\"public_prefixes\":[\"a\"]}}",
        "{\"name\":\"x1\",\"url\":\"http://h\",\"options\":{\"tenant_prefix\":\"Teams/\"}}",
        "{\"name\":\"x1\",\"url\":\"http://h\",\"options\":{\"bogus\":1}}",
        "{\"name\":\"x1\",\"url\":\"http://h\",\"extra\":1}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        struct http_res r;
        long st = reqj("POST", "/api/v1/registries", adm(), bodies[i], &r);
        ck_assert_msg(st == 400, "%s: %ld", bodies[i], st);
        ck_assert_ptr_nonnull(json_object_get(r.json, "errors"));
        http_res_free(&r);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("registry");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, anonymous_registry_images_public_and_per_tenant);
    tcase_add_test(tc, basic_auth_with_good_missing_and_wrong_credentials);
    tcase_add_test(tc, second_sync_changes_nothing_then_a_moved_tag_and_immutability);
    tcase_add_test(tc, a_tag_deleted_upstream_is_flagged_and_restored);
    tcase_add_test(tc, pages_of_two_miss_nothing_and_an_index_is_one_image);
    tcase_add_test(tc, storage_over_quota_flags_the_tenant);
    tcase_add_test(tc, registry_down_is_a_clear_error_and_nothing_is_lost);
    tcase_add_test(tc, bad_registries_are_refused);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s);
}
