/*
 * test_badinput_jobs.c - bad job submissions, bad job paths and bad queries
 * never crash aidcd, never create or change a job, and always get a clear
 * problem+json answer: every field of a submission mistyped, out of range or
 * over its limit (400, the field named), requests that no cluster or quota
 * can ever run (422), bodies too big (413), of the wrong type (415) or not a
 * JSON object (400); bad list filters and cursors, ids that are not UUIDs
 * (400, like DELETE /tokens/{id}) or that name no job of the tenant (404),
 * bad log parameters. The limits are inclusive: a submission at every
 * maximum is accepted. Quotas and clusters: test_badinput_quotas.c; storage
 * mounts: test_badinput_mounts.c.
 *
 * Most checks are "soft" (tests/support/soft.h): every discrepancy is printed
 * to stderr (prefixed DISCREPANCY) with the request and the answer, and the
 * test fails at its end, so one run lists everything that is wrong.
 */
#include "lib/crypto.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/soft.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ADM     (harness_srv.admin_token)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define MIB     ((size_t)1024 * 1024)
#define JOBS    "/api/v1/tenants/acme/jobs"
#define SMALL   "/api/v1/tenants/small/jobs"
#define NO_JOB  "6f1c2a8e-1d0b-4a7e-9a51-3c2b7d4e5f60"

/* A valid submission's fields (the controls prove it is accepted). */
#define B  "\"project\":\"base\",\"name\":\"j\",\"command\":[\"true\"]"
#define BN "\"project\":\"base\",\"name\":\"j\""
#define G  "\"gpu_type\":\"a100\""

/* ---- fixture -------------------------------------------------------------------- */

/*
 * The local cluster (4 a100, jobs of at most 600 minutes, one node); tenant
 * acme (a100 guaranteed 2, limit 4) with projects base and capped (a100
 * limit 1, 2 cores); tenant small (a100 limit 2, 8 cores, 64 GiB) with project tiny;
 * tenant rival (no a100 quota) with project secret-proj; tenant frozen
 * (suspended) with project ice and member fred. Two public images a job may
 * name: img:latest and the longest reference (repository 255, tag 128).
 */
static char *long_ref;

static void public_image(const char *repo, const char *tag)
{
    const char *p[2] = {repo, tag};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "INSERT INTO images (visibility, repository, tag, digest, size_bytes,"
                              " source) VALUES ('public', $1, $2, 'sha256:' || repeat('ab', 32), 1,"
                              " 'sync') RETURNING 1",
                              2, p);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
}

static void setup(void)
{
    static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100", NULL};
    harness_setup("badinput_jobs", env);
    public_image("img", "latest");
    char *repo = soft_rep("r", 255), *tag = soft_rep("T", 128);
    public_image(repo, tag);
    long_ref = soft_jdump(json_string(fmt("%s:%s", repo, tag)), JSON_ENCODE_ANY);
    free(repo);
    free(tag);
    jobs_admin_ok("POST", "/api/v1/clusters",
                  "{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":4},"
                  "\"max_time_limit_minutes\":600,\"cpus\":64,\"memory_gib\":512}}",
                  201);
    make_tenant("acme");
    make_project("acme", "base");
    make_project("acme", "capped");
    make_tenant("small");
    make_project("small", "tiny");
    make_tenant("rival");
    make_project("rival", "secret-proj");
    make_tenant("frozen");
    make_project("frozen", "ice");
    make_user("fred", "fred-password-1", NULL);
    make_member("frozen", "fred", "member");
    jobs_admin_ok("PATCH", "/api/v1/tenants/frozen", "{\"suspended\":true}", 200);
    jobs_admin_ok("PUT", "/api/v1/tenants/acme/quota",
                  "{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}}", 200);
    jobs_admin_ok(
        "PUT", "/api/v1/tenants/small/quota",
        "{\"resources\":{\"gpu:a100\":{\"guaranteed\":0,\"limit\":2},\"cpu\":{\"limit\":8},"
        "\"memory_gib\":{\"limit\":64}}}",
        200);
    jobs_admin_ok("PUT", "/api/v1/tenants/acme/projects/capped/quota",
                  "{\"resources\":{\"gpu:a100\":{\"limit\":1},\"cpu\":{\"limit\":2}}}", 200);
}

/* ---- helpers -------------------------------------------------------------------- */

static long jobs_count(void)
{
    PGresult *r = harness_sql(harness_srv.owner_url, "SELECT count(*) FROM jobs", 0, NULL);
    ck_assert_ptr_nonnull(r);
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

static void same_jobs(const char *what, long before)
{
    long now = jobs_count();
    soft(now == before,
         "%s: %ld jobs exist, %ld before: requests that must be refused created jobs", what, now,
         before);
}

struct fcase {
    const char *body;
    const char *field; /* NULL: no field named (e.g. not JSON) */
};

static void run_cases(const char *path, const struct fcase *c, size_t n, long status)
{
    for (size_t i = 0; i < n; i++)
        soft_bad("POST", path, ADM, c[i].body, status, c[i].field);
}

/* Submit body (malloc'd, freed here) to JOBS expecting status and field. */
static void bad_big(char *body, long status, const char *field)
{
    soft_bad("POST", JOBS, ADM, body, status, field);
    free(body);
}

static void ok_submit(const char *what, const char *path, char *body)
{
    struct http_res r;
    soft_send_json("POST", path, ADM, body, strlen(body), &r);
    soft(r.status == 201 && json_is_string(json_object_get(r.json, "id")),
         "%s: a valid submission got %ld, expected 201: %s", what, r.status,
         soft_show(r.body, r.body_len));
    http_res_free(&r);
    free(body);
}

static void bad_req(const char *method, const char *path, long status, const char *field)
{
    struct http_res r;
    char what[700];
    http_do(&harness_srv, method, path, ADM, NULL, NULL, &r);
    snprintf(what, sizeof what, "%s %s", method, soft_shows(path));
    soft_problem(what, &r, status, field);
    http_res_free(&r);
}

/* base64url of a cursor's text, as the server encodes cursors */
static void b64url(const char *in, char *out, size_t outsz)
{
    crypto_b64url_encode((const unsigned char *)in, strlen(in), out, outsz);
}

/* A submission whose env has n variables V0..Vn-1 (malloc'd). */
static char *env_body(size_t n)
{
    json_t *env = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(env, fmt("V%zu", i), json_string("x"));
    return soft_jdump(json_pack("{s:s, s:s, s:[s], s:o}", "project", "base", "name", "j", "command",
                                "true", "env", env),
                      0);
}

/* A submission with one string field set to n copies of unit (malloc'd). */
static char *str_body(const char *field, const char *unit, size_t n)
{
    char *s = soft_rep(unit, n);
    json_t *o = json_pack("{s:s, s:s, s:[s]}", "project", "base", "name", "j", "command", "true");
    json_object_set_new(o, field, json_string(s));
    if (strcmp(field, "script") == 0)
        json_object_del(o, "command");
    free(s);
    return soft_jdump(o, 0);
}

/* A submission whose command is argv0 plus n - 1 copies of item (malloc'd). */
static char *cmd_body(size_t n, const char *item)
{
    json_t *cmd = json_pack("[s]", "true");
    for (size_t i = 1; i < n; i++)
        json_array_append_new(cmd, json_string(item));
    return soft_jdump(json_pack("{s:s, s:s, s:o}", "project", "base", "name", "j", "command", cmd),
                      0);
}

static void teardown(void)
{
    free(long_ref);
    harness_teardown();
}

/* ---- the limits are inclusive --------------------------------------------------- */

START_TEST(valid_submissions_at_every_limit)
{
    long before = jobs_count();
    size_t n = 0;
#define OK(what, body) (ok_submit(what, JOBS, body), n++)
    OK("plain", strdup("{" B "}"));
    OK("script", strdup("{" BN ",\"script\":\"echo hi\\n\",\"command\":null}"));
    OK("every field", strdup("{" B ",\"gpus\":1," G ",\"cpus\":2,\"memory_gib\":8,\"nodes\":1,"
                             "\"time_limit_minutes\":600,\"priority\":\"low\",\"image\":\"img\","
                             "\"env\":{\"A_B\":\"1\"},\"cluster\":\"local\"}"));
    OK("gpus 4 (cluster size and tenant limit)", strdup("{" B ",\"gpus\":4," G "}"));
    OK("nulls", strdup("{" B ",\"image\":null,\"env\":null,\"cluster\":null,\"gpu_type\":null}"));
    OK("name 200 characters", str_body("name", "n", 200));
    OK("name 200 CJK characters", str_body("name", "\xe4\xb8\xad", 200));
    /* the longest reference (384 characters); longer ones are not references (below) */
    OK("image repository 255 and tag 128 characters",
       strdup(fmt("{\"project\":\"base\",\"name\":\"j\",\"command\":[\"true\"],\"image\":%s}",
                  long_ref)));
    OK("script 262144 bytes", str_body("script", "#", 262144));
    OK("command 1024 items", cmd_body(1024, "a"));
    char *item = soft_rep("a", 32768);
    OK("command item 32768 bytes", cmd_body(2, item));
    free(item);
    OK("env 256 variables", env_body(256));
    char *v = soft_rep("v", 32768), *k = soft_rep("K", 128);
    OK("env value 32768 bytes",
       soft_jdump(json_pack("{s:s, s:s, s:[s], s:{s:s}}", "project", "base", "name", "j", "command",
                            "true", "env", "BIG", v),
                  0));
    OK("env name 128 characters",
       soft_jdump(json_pack("{s:s, s:s, s:[s], s:{s:s}}", "project", "base", "name", "j", "command",
                            "true", "env", k, "1"),
                  0));
    free(v);
    free(k);
    OK("lower-case aidc_ is not reserved", strdup("{" B ",\"env\":{\"aidc_x\":\"1\"}}"));
#undef OK
    /* a charset parameter is still JSON */
    struct http_res r;
    const char *b = "{" B "}";
    http_raw(&harness_srv, "POST", JOBS, ADM, "application/json; charset=utf-8", b, strlen(b), NULL,
             &r);
    soft(r.status == 201, "application/json; charset=utf-8: %ld: %s", r.status,
         soft_show(r.body, r.body_len));
    n += r.status == 201;
    http_res_free(&r);
    soft(jobs_count() == before + (long)n, "%zu accepted submissions made %ld jobs", n,
         jobs_count() - before);
    soft_done();
}
END_TEST

/* ---- 400: field by field -------------------------------------------------------- */

static const struct fcase field_cases[] = {
    /* wrong types */
    {"{" B ",\"gpus\":\"1\"," G "}", "gpus"},
    {"{" B ",\"gpus\":true," G "}", "gpus"},
    {"{" B ",\"gpus\":[1]," G "}", "gpus"},
    {"{" B ",\"gpus\":null}", "gpus"},
    {"{" B ",\"cpus\":\"2\"}", "cpus"},
    {"{" B ",\"memory_gib\":{}}", "memory_gib"},
    {"{" B ",\"nodes\":\"1\"}", "nodes"},
    {"{" B ",\"time_limit_minutes\":\"60\"}", "time_limit_minutes"},
    {"{\"project\":\"base\",\"name\":42,\"command\":[\"true\"]}", "name"},
    {"{\"project\":\"base\",\"name\":null,\"command\":[\"true\"]}", "name"},
    {"{\"project\":\"base\",\"name\":[\"j\"],\"command\":[\"true\"]}", "name"},
    {"{\"project\":7,\"name\":\"j\",\"command\":[\"true\"]}", "project"},
    {"{" BN ",\"command\":{\"0\":\"true\"}}", "command"},
    {"{" BN ",\"command\":\"true\"}", "command"},
    {"{" BN ",\"command\":[\"true\",1]}", "command"},
    {"{" BN ",\"command\":[\"true\",null]}", "command"},
    {"{" BN ",\"command\":[[\"true\"]]}", "command"},
    {"{" BN ",\"command\":[{\"a\":\"b\"}]}", "command"},
    {"{" BN ",\"script\":1}", "script"},
    {"{" BN ",\"script\":[\"true\"]}", "script"},
    {"{" B ",\"env\":[]}", "env"},
    {"{" B ",\"env\":\"A=1\"}", "env"},
    {"{" B ",\"env\":{\"A\":1}}", "env.A"},
    {"{" B ",\"env\":{\"A\":null}}", "env.A"},
    {"{" B ",\"env\":{\"A\":true}}", "env.A"},
    {"{" B ",\"env\":{\"A\":{\"b\":\"c\"}}}", "env.A"},
    {"{" B ",\"priority\":1}", "priority"},
    {"{" B ",\"priority\":null}", "priority"},
    {"{" B ",\"image\":5}", "image"},
    {"{" B ",\"cluster\":5}", "cluster"},
    {"{" B ",\"gpus\":1,\"gpu_type\":7}", "gpu_type"},
    /* ranges */
    {"{" B ",\"gpus\":-1," G "}", "gpus"},
    {"{" B ",\"gpus\":65," G "}", "gpus"},
    {"{" B ",\"gpus\":4.5," G "}", "gpus"},
    {"{" B ",\"gpus\":4294967297," G "}", "gpus"},
    {"{" B ",\"gpus\":-4294967295," G "}", "gpus"},
    {"{" B ",\"gpus\":9223372036854775807," G "}", "gpus"},
    {"{" B ",\"cpus\":0}", "cpus"},
    {"{" B ",\"cpus\":-1}", "cpus"},
    {"{" B ",\"cpus\":1025}", "cpus"},
    {"{" B ",\"memory_gib\":0}", "memory_gib"},
    {"{" B ",\"memory_gib\":16385}", "memory_gib"},
    {"{" B ",\"nodes\":0}", "nodes"},
    {"{" B ",\"nodes\":65}", "nodes"},
    {"{" B ",\"time_limit_minutes\":0}", "time_limit_minutes"},
    {"{" B ",\"time_limit_minutes\":525601}", "time_limit_minutes"},
    {"{" B ",\"time_limit_minutes\":1.5}", "time_limit_minutes"},
    {"{" B ",\"priority\":\"urgent\"}", "priority"},
    {"{" B ",\"priority\":\"HIGH\"}", "priority"},
    {"{" B ",\"priority\":\"\"}", "priority"},
    /* unknown and read-only fields */
    {"{" B ",\"foo\":1}", "foo"},
    {"{" B ",\"id\":\"" NO_JOB "\"}", "id"},
    {"{" B ",\"state\":\"running\"}", "state"},
    {"{" B ",\"user\":\"admin\"}", "user"},
    {"{" B ",\"preemptible\":true}", "preemptible"},
    {"{" B ",\"tenant\":\"rival\"}", "tenant"},
    /* project and name */
    {"{\"name\":\"j\",\"command\":[\"true\"]}", "project"},
    {"{\"project\":\"base\",\"command\":[\"true\"]}", "name"},
    {"{\"project\":\"Bad!\",\"name\":\"j\",\"command\":[\"true\"]}", "project"},
    {"{\"project\":\"\",\"name\":\"j\",\"command\":[\"true\"]}", "project"},
    {"{\"project\":\"base\",\"name\":\"\",\"command\":[\"true\"]}", "name"},
    {"{\"project\":\"base\",\"name\":\"a\\u0001b\",\"command\":[\"true\"]}", "name"},
    {"{\"project\":\"base\",\"name\":\"a\\nb\",\"command\":[\"true\"]}", "name"},
    {"{\"project\":\"base\",\"name\":\"a\\u007f\",\"command\":[\"true\"]}", "name"},
    /* C1 controls are control characters too (U+009B is a terminal's CSI) */
    {"{\"project\":\"base\",\"name\":\"a\\u0085b\",\"command\":[\"true\"]}", "name"},
    {"{\"project\":\"base\",\"name\":\"\\u009b31mred\",\"command\":[\"true\"]}", "name"},
    /* command and script */
    {"{" BN ",\"command\":[]}", "command"},
    {"{" BN ",\"command\":[\"\"]}", "command"},
    {"{" BN ",\"command\":[\"   \"]}", "command"},
    {"{" BN ",\"command\":[\"\\t\\n\"]}", "command"},
    {"{" BN ",\"script\":\"\"}", "script"},
    {"{" BN ",\"script\":\"   \"}", "script"},
    {"{" BN ",\"script\":\"\\n\\t\\r\\n\"}", "script"},
    {"{" BN ",\"command\":[\"true\"],\"script\":\"true\"}", "command"},
    {"{" BN "}", "command"},
    {"{" BN ",\"command\":null,\"script\":null}", "command"},
    /* GPUs */
    {"{" B ",\"gpus\":1}", "gpu_type"},
    {"{" B ",\"gpus\":1,\"gpu_type\":null}", "gpu_type"},
    {"{" B ",\"gpus\":0," G "}", "gpu_type"},
    {"{" B "," G "}", "gpu_type"},
    {"{" B ",\"gpus\":1,\"gpu_type\":\"A100\"}", "gpu_type"},
    {"{" B ",\"gpus\":1,\"gpu_type\":\"\"}", "gpu_type"},
    {"{" B ",\"gpus\":1,\"gpu_type\":\"a100!\"}", "gpu_type"},
    {"{" B ",\"gpus\":1,\"gpu_type\":\"-a\"}", "gpu_type"},
    {"{" B ",\"gpus\":1,\"gpu_type\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", "gpu_type"},
    /* env */
    {"{" B ",\"env\":{\"1BAD\":\"x\"}}", "env"},
    {"{" B ",\"env\":{\"\":\"x\"}}", "env"},
    {"{" B ",\"env\":{\"A-B\":\"x\"}}", "env"},
    {"{" B ",\"env\":{\"A B\":\"x\"}}", "env"},
    {"{" B ",\"env\":{\"A=B\":\"x\"}}", "env"},
    {"{" B ",\"env\":{\"AIDC_X\":\"1\"}}", "env.AIDC_X"},
    {"{" B ",\"env\":{\"AIDC_\":\"1\"}}", "env.AIDC_"},
    {"{" B ",\"env\":{\"CUDA_VISIBLE_DEVICES\":\"0,1,2,3\"}}", "env.CUDA_VISIBLE_DEVICES"},
    {"{" B ",\"env\":{\"NVIDIA_VISIBLE_DEVICES\":\"all\"}}", "env.NVIDIA_VISIBLE_DEVICES"},
    /* image and cluster */
    {"{" B ",\"image\":\"\"}", "image"},
    {"{" B ",\"image\":\"img\\u0001\"}", "image"},
    {"{" B ",\"image\":\"img\\u009b\"}", "image"},
    /* not an image reference */
    {"{" B ",\"image\":\"UPPER/case\"}", "image"},
    {"{" B ",\"image\":\"img@sha256:1234\"}", "image"},
    {"{" B ",\"image\":\"img:-bad\"}", "image"},
    {"{" B ",\"cluster\":\"Bad_Name\"}", "cluster"},
    {"{" B ",\"cluster\":\"\"}", "cluster"},
    {"{" B ",\"cluster\":\"a\"}", "cluster"},
};

START_TEST(submission_fields_are_400)
{
    long before = jobs_count();
    run_cases(JOBS, field_cases, N_OF(field_cases), 400);
    /* numbers the JSON parser cannot hold: 400, with or without the field named */
    soft_bad("POST", JOBS, ADM, "{" B ",\"gpus\":9223372036854775808," G "}", 400, NULL);
    soft_bad("POST", JOBS, ADM, "{" B ",\"gpus\":1e400," G "}", 400, NULL);
    soft_bad("POST", JOBS, ADM, "{" B ",\"gpus\":-1e400," G "}", 400, NULL);
    /* every problem is reported at once */
    const char *all[] = {"gpus", "cpus", "priority", "cluster", "foo", NULL};
    struct http_res r;
    const char *b = "{" B ",\"gpus\":65," G ",\"cpus\":0,\"priority\":\"x\",\"cluster\":\"X\","
                    "\"foo\":1}";
    soft_send_json("POST", JOBS, ADM, b, strlen(b), &r);
    soft_problem_fields(fmt("POST %s body %s", JOBS, b), &r, 400, all);
    http_res_free(&r);
    /* a field error wins over what would be a 422 */
    soft_bad("POST", JOBS, ADM,
             "{\"project\":\"no-such-proj\",\"name\":\"\",\"command\":[\"true\"]}", 400, "name");
    soft_bad("POST", JOBS, ADM, "{" B ",\"gpus\":65,\"gpu_type\":\"h100\"}", 400, "gpus");
    same_jobs("400 fields", before);
    soft_done();
}
END_TEST

START_TEST(submission_sizes_are_400)
{
    long before = jobs_count();
    bad_big(str_body("name", "n", 201), 400, "name");
    bad_big(str_body("name", "\xe4\xb8\xad", 201), 400, "name");
    bad_big(str_body("image", "i", 513), 400, "image");
    bad_big(str_body("script", "#", 262145), 400, "script");
    bad_big(cmd_body(1025, "a"), 400, "command");
    char *item = soft_rep("a", 32769);
    bad_big(cmd_body(2, item), 400, "command");
    free(item);
    bad_big(env_body(257), 400, "env");
    char *v = soft_rep("v", 32769), *k = soft_rep("K", 129);
    bad_big(soft_jdump(json_pack("{s:s, s:s, s:[s], s:{s:s}}", "project", "base", "name", "j",
                                 "command", "true", "env", "BIG", v),
                       0),
            400, "env.BIG");
    bad_big(soft_jdump(json_pack("{s:s, s:s, s:[s], s:{s:s}}", "project", "base", "name", "j",
                                 "command", "true", "env", k, "1"),
                       0),
            400, "env");
    free(v);
    free(k);
    /* 10,000 variables: refused quickly, the server does not choke */
    char *big = env_body(10000);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    soft_bad("POST", JOBS, ADM, big, 400, "env");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    soft(secs < 0.5, "env with 10,000 variables took %.3f s to refuse (%zu bytes)", secs,
         strlen(big));
    free(big);
    same_jobs("400 sizes", before);
    soft_done();
}
END_TEST

/* ---- 422: valid, but impossible ------------------------------------------------- */

static const struct fcase impossible_acme[] = {
    /* images the tenant may not use: unknown, a tag or digest it does not have */
    {"{" B ",\"image\":\"nvcr.io/nvidia/pytorch:24.01-py3\"}", "image"},
    {"{" B ",\"image\":\"img:other\"}", "image"},
    {"{" B ",\"image\":\"img@sha256:cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd\"}",
     "image"},
    {"{" B ",\"gpus\":1,\"gpu_type\":\"h100\"}", "gpu_type"},
    {"{" B ",\"gpus\":1,\"gpu_type\":\"h100\",\"cluster\":\"local\"}", "gpu_type"},
    {"{" B ",\"gpus\":5," G "}", "gpus"},
    {"{" B ",\"gpus\":64," G "}", "gpus"},
    {"{" B ",\"nodes\":2}", "nodes"},
    {"{" B ",\"nodes\":2,\"gpus\":1," G "}", "nodes"},
    {"{" B ",\"time_limit_minutes\":601}", "time_limit_minutes"},
    {"{" B ",\"time_limit_minutes\":525600}", "time_limit_minutes"},
    {"{" B ",\"cluster\":\"nope\"}", "cluster"},
    {"{\"project\":\"no-such-proj\",\"name\":\"j\",\"command\":[\"true\"]}", "project"},
    {"{\"project\":\"capped\",\"name\":\"j\",\"command\":[\"true\"],\"gpus\":2," G "}", "gpus"},
    {"{\"project\":\"capped\",\"name\":\"j\",\"command\":[\"true\"],\"cpus\":3}", "cpus"},
};

static const struct fcase impossible_small[] = {
    {"{\"project\":\"tiny\",\"name\":\"j\",\"command\":[\"true\"],\"gpus\":3," G "}", "gpus"},
    {"{\"project\":\"tiny\",\"name\":\"j\",\"command\":[\"true\"],\"cpus\":9}", "cpus"},
    {"{\"project\":\"tiny\",\"name\":\"j\",\"command\":[\"true\"],\"memory_gib\":65}",
     "memory_gib"},
};

static const struct fcase impossible_rival[] = {
    {"{\"project\":\"secret-proj\",\"name\":\"j\",\"command\":[\"true\"],\"gpus\":1," G "}",
     "gpu_type"},
};

/* errors[0].message of r, or "" */
static const char *first_message(const struct http_res *r)
{
    const char *m = json_string_value(
        json_object_get(json_array_get(json_object_get(r->json, "errors"), 0), "message"));
    return m ? m : "";
}

START_TEST(impossible_submissions_are_422)
{
    long before = jobs_count();
    run_cases(JOBS, impossible_acme, N_OF(impossible_acme), 422);
    run_cases(SMALL, impossible_small, N_OF(impossible_small), 422);
    run_cases("/api/v1/tenants/rival/jobs", impossible_rival, N_OF(impossible_rival), 422);
    /* whose limit a refusal names: both quotas come in one statement (db_quota_both_get) */
#define WHOSE(p, x) "{\"project\":\"" p "\",\"name\":\"j\",\"command\":[\"true\"]," x "}"
    static const char *const whose[][4] = {
        {JOBS, WHOSE("capped", "\"gpus\":2," G), "quota.limit_exceeded.project_gpus", "1"},
        {JOBS, WHOSE("capped", "\"cpus\":3"), "quota.limit_exceeded.project_cpus", "2"},
        {SMALL, WHOSE("tiny", "\"gpus\":3," G), "quota.limit_exceeded.tenant_gpus", "2"},
        {SMALL, WHOSE("tiny", "\"memory_gib\":65"), "quota.limit_exceeded.tenant_memory", "64"}};
    for (size_t i = 0; i < N_OF(whose); i++) {
        struct http_res w;
        soft_send_json("POST", whose[i][0], ADM, whose[i][1], strlen(whose[i][1]), &w);
        const json_t *e0 = json_array_get(json_object_get(w.json, "errors"), 0);
        const char *code = json_string_value(json_object_get(e0, "code"));
        char lim[32]; /* json_object_get of NULL is NULL, json_number_value of it 0 */
        snprintf(lim, sizeof lim, "%g",
                 json_number_value(json_object_get(json_object_get(e0, "params"), "limit")));
        soft(w.status == 422 && code && !strcmp(code, whose[i][2]) && !strcmp(lim, whose[i][3]),
             "%s: %ld, %s (limit %s), expected %s (limit %s)", soft_shows(whose[i][1]), w.status,
             code ? code : "no code", lim, whose[i][2], whose[i][3]);
        http_res_free(&w);
    }
    /* at the limits of small it is possible: the 422s above are the limits, not the body */
    ok_submit("small at its limits", SMALL,
              strdup("{\"project\":\"tiny\",\"name\":\"j\",\"command\":[\"true\"],\"gpus\":2," G
                     ",\"cpus\":4,\"memory_gib\":32}"));
    before++;
    /* a suspended tenant's members cannot submit (platform admins may: the job waits) */
    char *fred = login("fred", "fred-password-1");
    ck_assert_ptr_nonnull(fred);
    soft_bad("POST", "/api/v1/tenants/frozen/jobs", fred,
             "{\"project\":\"ice\",\"name\":\"j\",\"command\":[\"true\"]}", 403, NULL);
    free(fred);
    /*
     * A project of another tenant is answered exactly like one that does not
     * exist (same length slugs): nothing about rival leaks.
     */
    struct http_res f, m;
    const char *fb = "{\"project\":\"secret-proj\",\"name\":\"j\",\"command\":[\"true\"]}";
    const char *mb = "{\"project\":\"secret-proz\",\"name\":\"j\",\"command\":[\"true\"]}";
    soft_send_json("POST", JOBS, ADM, fb, strlen(fb), &f);
    soft_send_json("POST", JOBS, ADM, mb, strlen(mb), &m);
    soft_problem("foreign project", &f, 422, "project");
    char *fm = strdup(first_message(&f)), *at = strstr(fm, "secret-proj");
    if (at)
        memcpy(at, "secret-proz", 11);
    soft(strcmp(fm, first_message(&m)) == 0,
         "a foreign project is answered differently from a missing one: \"%s\" vs \"%s\"",
         soft_shows(first_message(&f)), soft_shows(first_message(&m)));
    free(fm);
    PGresult *pr = harness_sql(harness_srv.owner_url,
                               "SELECT id::text FROM projects WHERE slug = 'secret-proj'", 0, NULL);
    ck_assert_ptr_nonnull(pr);
    soft(f.body && !strstr(f.body, "rival") && !strstr(f.body, PQgetvalue(pr, 0, 0)),
         "the foreign-project answer names the other tenant or the project's id: %s",
         soft_show(f.body, f.body_len));
    PQclear(pr);
    http_res_free(&f);
    http_res_free(&m);
    same_jobs("422 submissions", before);
    soft_done();
}
END_TEST

/*
 * More cores or memory than any cluster has can never run, as 5 GPUs cannot:
 * 422 (API.md: "valid JSON but impossible request"), not a job queued forever.
 */
START_TEST(beyond_every_cluster_is_422)
{
    long before = jobs_count();
    struct http_res c;
    reqj("GET", "/api/v1/clusters/local", ADM, NULL, &c);
    json_t *inv = json_object_get(c.json, "inventory");
    json_int_t cpu = json_integer_value(json_object_get(json_object_get(inv, "cpu"), "total"));
    json_int_t mem =
        json_integer_value(json_object_get(json_object_get(inv, "memory_gib"), "total"));
    soft(cpu > 0 && mem > 0, "the local cluster's inventory lacks cpu or memory_gib: %s",
         soft_show(c.body, c.body_len));
    http_res_free(&c);
    if (cpu > 0 && cpu < 1024)
        soft_bad("POST", JOBS, ADM, fmt("{" B ",\"cpus\":%lld}", (long long)cpu + 1), 422, "cpus");
    if (mem > 0 && mem < 16384)
        soft_bad("POST", JOBS, ADM, fmt("{" B ",\"memory_gib\":%lld}", (long long)mem + 1), 422,
                 "memory_gib");
    same_jobs("jobs larger than every cluster", before);
    soft_done();
}
END_TEST

/* ---- bodies: 413, 415, malformed, not an object --------------------------------- */

START_TEST(bodies_413_415_400)
{
    long before = jobs_count();
    const char *b = "{" B "}";
    static const char *const types[] = {"text/plain", NULL, "application/x-www-form-urlencoded",
                                        "application/jsonx", "multipart/form-data"};
    for (size_t i = 0; i < N_OF(types); i++) {
        struct http_res r;
        http_raw(&harness_srv, "POST", JOBS, ADM, types[i], b, strlen(b), NULL, &r);
        soft_problem(fmt("POST %s as %s", JOBS, types[i] ? types[i] : "(no type)"), &r, 415, NULL);
        http_res_free(&r);
    }
    /* valid JSON over 1 MiB: a script of 1 MiB */
    char *s = soft_rep("#", MIB);
    char *big =
        soft_jdump(json_pack("{s:s, s:s, s:s}", "project", "base", "name", "j", "script", s), 0);
    soft_bad("POST", JOBS, ADM, big, 413, NULL);
    free(big);
    /* just under 1 MiB: read, and refused for the script's size */
    free(s);
    s = soft_rep("#", MIB - 200);
    bad_big(
        soft_jdump(json_pack("{s:s, s:s, s:s}", "project", "base", "name", "j", "script", s), 0),
        400, "script");
    free(s);
    static const char *const junk[] = {
        "{\"project\":\"base\"",
        "{" B ",}",
        "{" B "}x",
        "{'project':'base'}",
        "{" B ",\"gpus\":01}",
        "",
        "[]",
        "[{" B "}]",
        "\"job\"",
        "42",
        "null",
        "true",
        "{" B ",\"gpus\":NaN}",
        "{" B ",\"gpus\":1,\"gpus\":2," G "}",
    };
    for (size_t i = 0; i < N_OF(junk); i++)
        soft_bad("POST", JOBS, ADM, junk[i], 400, NULL);
    same_jobs("413/415/400 bodies", before);
    soft_done();
}
END_TEST

/* ---- list filters, ids, events, logs -------------------------------------------- */

START_TEST(list_filters_are_400)
{
    long before = jobs_count();
    static const struct {
        const char *q, *field;
    } cases[] = {
        {"state=bogus", "state"},
        {"state=QUEUED", "state"},
        {"state=queued%00", "state"},
        {"project=Bad%21", "project"},
        {"project=a", "project"},
        {"project=%27%3B--", "project"},
        {"user=BAD%20USER", "user"},
        {"user=%E4%B8%AD", "user"},
        {"limit=0", "limit"},
        {"limit=1001", "limit"},
        {"limit=abc", "limit"},
        {"limit=-1", "limit"},
        {"limit=1e3", "limit"},
        {"limit=", "limit"},
        {"limit=99999999999999999999", "limit"},
        {"cursor=garbage", "cursor"},
        {"cursor=%FF%FE", "cursor"},
        {"bogus=1", "bogus"},
    };
    for (size_t i = 0; i < N_OF(cases); i++)
        bad_req("GET", fmt(JOBS "?%s", cases[i].q), 400, cases[i].field);
    /* cursors that decode but were not issued here: 400, never a 500 */
    static const char *const forged[] = {
        "notatime|00000000-0000-0000-0000-000000000000",
        "2026-01-01 00:00:00+00|not-a-uuid",
        "2026-01-01 00:00:00+00",
        "99999-99-99|00000000-0000-0000-0000-000000000000",
        "|",
    };
    char c[256];
    for (size_t i = 0; i < N_OF(forged); i++) {
        b64url(forged[i], c, sizeof c);
        bad_req("GET", fmt(JOBS "?cursor=%s", c), 400, "cursor");
    }
    /* events cursors are event numbers */
    b64url("-1", c, sizeof c);
    bad_req("GET", fmt(JOBS "/%s/events?cursor=%s", NO_JOB, c), 400, "cursor");
    b64url("1234567890123456789", c, sizeof c);
    bad_req("GET", fmt(JOBS "/%s/events?cursor=%s", NO_JOB, c), 400, "cursor");
    bad_req("GET", fmt(JOBS "/%s/events?limit=0", NO_JOB), 400, "limit");
    bad_req("GET", fmt(JOBS "/%s/events?state=queued", NO_JOB), 400, "state");
    /* the filters themselves work */
    struct http_res r;
    reqj("GET", JOBS "?state=queued&project=base&user=admin&limit=1000", ADM, NULL, &r);
    soft(r.status == 200, "GET with valid filters: %ld: %s", r.status,
         soft_show(r.body, r.body_len));
    http_res_free(&r);
    same_jobs("list filters", before);
    soft_done();
}
END_TEST

START_TEST(job_ids_and_log_params)
{
    struct http_res r;
    const char *b = "{\"project\":\"base\",\"name\":\"target\",\"command\":[\"true\"]}";
    soft_send_json("POST", JOBS, ADM, b, strlen(b), &r);
    ck_assert_int_eq(r.status, 201);
    char id[64];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(r.json, "id")));
    http_res_free(&r);
    long before = jobs_count();
    static const char *const bad_ids[] = {
        "not-a-uuid",
        "123",
        "00000000-0000-0000-0000-00000000000g",
        "00000000-0000-0000-0000-0000000000000",
        "00000000000000000000000000000000",
        "%7B00000000-0000-0000-0000-000000000000%7D",
        "%27%3B%20DROP%20TABLE%20jobs%3B--",
        "%FF",
    };
    static const char *const ops[][2] = {
        {"GET", ""}, {"GET", "/events"}, {"POST", "/cancel"}, {"GET", "/logs"}};
    for (size_t i = 0; i < N_OF(bad_ids); i++)
        for (size_t o = 0; o < N_OF(ops); o++)
            bad_req(ops[o][0], fmt(JOBS "/%s%s", bad_ids[i], ops[o][1]), 400, "id");
    /* a UUID that names no job of the tenant: 404, also acme's job seen from rival */
    const char *absent[] = {NO_JOB, "6F1C2A8E-1D0B-4A7E-9A51-3C2B7D4E5F60",
                            "00000000-0000-0000-0000-000000000000"};
    for (size_t i = 0; i < N_OF(absent); i++)
        for (size_t o = 0; o < N_OF(ops); o++)
            bad_req(ops[o][0], fmt(JOBS "/%s%s", absent[i], ops[o][1]), 404, NULL);
    for (size_t o = 0; o < N_OF(ops); o++)
        bad_req(ops[o][0], fmt("/api/v1/tenants/rival/jobs/%s%s", id, ops[o][1]), 404, NULL);
    /* log parameters, on the real job and on one that does not exist */
    static const char *const bad_logs[][2] = {
        {"stream=both", "stream"},
        {"stream=", "stream"},
        {"stream=STDOUT", "stream"},
        {"tail=0", "tail"},
        {"tail=10001", "tail"},
        {"tail=-1", "tail"},
        {"tail=x", "tail"},
        {"tail=", "tail"},
        {"tail=1.5", "tail"},
        {"tail=%201", "tail"},
        {"tail=99999999999999999999", "tail"},
        {"since=1", "since"},
    };
    const char *jids[] = {id, NO_JOB};
    for (size_t j = 0; j < N_OF(jids); j++)
        for (size_t i = 0; i < N_OF(bad_logs); i++)
            bad_req("GET", fmt(JOBS "/%s/logs?%s", jids[j], bad_logs[i][0]), 400, bad_logs[i][1]);
    /* a finished job cannot be cancelled (409) and stays as it ended */
    char state[32] = "";
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (now = t0; now.tv_sec - t0.tv_sec < 30; clock_gettime(CLOCK_MONOTONIC, &now)) {
        reqj("GET", fmt(JOBS "/%s", id), ADM, NULL, &r);
        snprintf(state, sizeof state, "%s",
                 soft_shows(json_string_value(json_object_get(r.json, "state"))));
        http_res_free(&r);
        if (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0)
            break;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL); /* poll, not a fixed wait */
    }
    soft(strcmp(state, "succeeded") == 0, "job %s running `true` ended as \"%s\" within 30 s", id,
         state);
    if (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0) {
        bad_req("POST", fmt(JOBS "/%s/cancel", id), 409, NULL);
        reqj("GET", fmt(JOBS "/%s", id), ADM, NULL, &r);
        soft(strcmp(soft_shows(json_string_value(json_object_get(r.json, "state"))), state) == 0,
             "a refused cancel changed the ended job: %s", soft_show(r.body, r.body_len));
        http_res_free(&r);
    }
    /* the job is untouched by the refused cancels and reads */
    const char *p[] = {id};
    PGresult *q = harness_sql(harness_srv.owner_url,
                              "SELECT state <> 'cancelled' AND stop_requested IS NULL"
                              " FROM jobs WHERE id = $1::uuid",
                              1, p);
    ck_assert_ptr_nonnull(q);
    soft(PQntuples(q) == 1 && strcmp(PQgetvalue(q, 0, 0), "t") == 0,
         "job %s was cancelled by a refused cancel", id);
    PQclear(q);
    same_jobs("bad ids", before);
    soft_done();
}
END_TEST

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("badinput_jobs");
    TCase *tc = tcase_create("badinput_jobs");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, valid_submissions_at_every_limit);
    tcase_add_test(tc, submission_fields_are_400);
    tcase_add_test(tc, submission_sizes_are_400);
    tcase_add_test(tc, impossible_submissions_are_422);
    tcase_add_test(tc, beyond_every_cluster_is_422);
    tcase_add_test(tc, bodies_413_415_400);
    tcase_add_test(tc, list_filters_are_400);
    tcase_add_test(tc, job_ids_and_log_params);
    soft_add_server_check(tc);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    curl_global_cleanup();
    return rc;
}
