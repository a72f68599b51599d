/*
 * test_badinput_quotas.c - bad quota and cluster requests never crash aidcd,
 * never change a quota or a cluster, and always get a clear problem+json
 * answer: tenant quotas (resources missing or mistyped, unknown resources,
 * amounts negative, huge or not numbers, limit below guaranteed, too many
 * resources: 400; guarantees beyond the clusters' capacity: 422), project
 * quotas (guaranteed or home_storage_gib given: 400; a limit above the tenant's:
 * 422) and cluster registration (bad name, kind, options or credentials_ref:
 * 400; a kind this build lacks or options the backend refuses: 422; a second
 * local cluster or a taken name: 409). The limits are inclusive: 64
 * resources and amounts of 1e9 are accepted. Jobs: test_badinput_jobs.c.
 *
 * Most checks are "soft" (tests/support/soft.h): every discrepancy is printed
 * to stderr (prefixed DISCREPANCY) with the request and the answer, and the
 * test fails at its end, so one run lists everything that is wrong.
 */
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

#define ADM      (harness_srv.admin_token)
#define N_OF(a)  (sizeof(a) / sizeof((a)[0]))
#define TQ       "/api/v1/tenants/acme/quota"
#define PQ       "/api/v1/tenants/acme/projects/base/quota"
#define CLUSTERS "/api/v1/clusters"
#define A100     "resources.gpu:a100"

/* ---- fixture -------------------------------------------------------------------- */

/*
 * The local cluster (4 a100); tenant acme (a100 guaranteed 2, limit 4) with
 * project base (a100 limit 1); tenant small (a100 guaranteed 1, limit 2);
 * tenant spare (no quota) for the inclusive limits (a platform admin
 * "approver" approves its largest guarantee); tenant rival with
 * project secret-proj.
 */
static void setup(void)
{
    static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100", NULL};
    harness_setup("badinput_quotas", env);
    jobs_admin_ok("POST", CLUSTERS,
                  "{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":4},"
                  "\"max_time_limit_minutes\":600}}",
                  201);
    make_tenant("acme");
    make_project("acme", "base");
    make_tenant("small");
    make_tenant("spare");
    make_project("spare", "spare-proj");
    make_tenant("rival");
    make_project("rival", "secret-proj");
    jobs_admin_ok("PUT", TQ, "{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}}", 200);
    jobs_admin_ok("PUT", "/api/v1/tenants/small/quota",
                  "{\"resources\":{\"gpu:a100\":{\"guaranteed\":1,\"limit\":2}}}", 200);
    jobs_admin_ok("PUT", PQ, "{\"resources\":{\"gpu:a100\":{\"limit\":1}}}", 200);
}

/* ---- helpers -------------------------------------------------------------------- */

/* Quotas and clusters as stored (what a refused request must leave alone). */
static char *stored(void)
{
    PGresult *r = harness_sql(
        harness_srv.owner_url,
        "SELECT coalesce((SELECT string_agg(t.slug || '/' || q.resource || '=' || q.guaranteed"
        "   || '/' || q.\"limit\", ',' ORDER BY t.slug, q.resource)"
        "   FROM tenant_quotas q JOIN tenants t ON t.id = q.tenant_id), '') || ' | ' ||"
        " coalesce((SELECT string_agg(p.slug || '/' || q.resource || '=' || q.\"limit\", ','"
        "   ORDER BY p.slug, q.resource)"
        "   FROM project_quotas q JOIN projects p ON p.id = q.project_id), '') || ' | ' ||"
        " coalesce((SELECT string_agg(name || ':' || kind || ':' || endpoint || ':' ||"
        "   credentials_ref || ':' || options::text, ',' ORDER BY name) FROM clusters), '')",
        0, NULL);
    ck_assert_ptr_nonnull(r);
    char *s = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return s;
}

static void same_stored(const char *what, const char *before)
{
    char *now = stored();
    soft(strcmp(now, before) == 0,
         "%s changed stored quotas or clusters:\n  before: %s\n  after:  %s", what,
         soft_shows(before), soft_shows(now));
    free(now);
}

struct fcase {
    const char *body;
    const char *field; /* NULL: no field named */
};

static void run_cases(const char *method, const char *path, const struct fcase *c, size_t n,
                      long status)
{
    for (size_t i = 0; i < n; i++)
        soft_bad(method, path, ADM, c[i].body, status, c[i].field);
}

/* {"resources": {<prefix>0: {"limit": 1}, ...}} with n resources (malloc'd). */
static char *many_resources(const char *prefix, size_t n)
{
    json_t *res = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(res, fmt("%s%zu", prefix, i), json_pack("{s:i}", "limit", 1));
    return soft_jdump(json_pack("{s:o}", "resources", res), 0);
}

static void ok_put(const char *path, const char *body)
{
    struct http_res r;
    reqj("PUT", path, ADM, body, &r);
    soft(r.status == 200, "PUT %s %s: %ld, expected 200: %s", path, soft_shows(body), r.status,
         soft_show(r.body, r.body_len));
    http_res_free(&r);
}

/* ---- tenant quota ----------------------------------------------------------------- */

static const struct fcase tenant_400[] = {
    {"{}", "resources"},
    {"{\"resources\":null}", "resources"},
    {"{\"resources\":[]}", "resources"},
    {"{\"resources\":\"gpu:a100\"}", "resources"},
    {"{\"resources\":{\"gpu:\":{\"limit\":1}}}", "resources.gpu:"},
    {"{\"resources\":{\"disk\":{\"limit\":1}}}", "resources.disk"},
    {"{\"resources\":{\"gpu:A100\":{\"limit\":1}}}", "resources.gpu:A100"},
    {"{\"resources\":{\"GPU:a100\":{\"limit\":1}}}", "resources.GPU:a100"},
    {"{\"resources\":{\"gpu:a100 \":{\"limit\":1}}}", "resources.gpu:a100 "},
    {"{\"resources\":{\"cpus\":{\"limit\":1}}}", "resources.cpus"},
    {"{\"resources\":{\"\":{\"limit\":1}}}", "resources."},
    {"{\"resources\":{\"gpu:a100\":4}}", A100},
    {"{\"resources\":{\"gpu:a100\":null}}", A100},
    {"{\"resources\":{\"gpu:a100\":[2,4]}}", A100},
    {"{\"resources\":{\"gpu:a100\":{}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":1}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":-1,\"limit\":2}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":0,\"limit\":-1}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":-0.5,\"limit\":1}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":\"2\",\"limit\":4}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":\"4\"}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":null}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":null,\"limit\":4}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":true}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":3,\"limit\":2}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":2.5,\"limit\":2.25}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":1,\"limit\":2,\"burst\":3}}}", A100},
    {"{\"resources\":{\"home_storage_gib\":{\"guaranteed\":1,\"limit\":2}}}",
     "resources.home_storage_gib"},
    {"{\"resources\":{\"cpu\":{\"limit\":1000000001}}}", "resources.cpu"},
    {"{\"resources\":{\"cpu\":{\"limit\":1e10}}}", "resources.cpu"},
    {"{\"resources\":{\"cpu\":{\"limit\":9223372036854775807}}}", "resources.cpu"},
    {"{\"resources\":{\"cpu\":{\"limit\":-9223372036854775807}}}", "resources.cpu"},
    {"{\"resources\":{\"jobs\":{\"guaranteed\":1000000001,\"limit\":1000000001}}}",
     "resources.jobs"},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}},\"extra\":1}", "extra"},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}},\"tenant\":\"rival\"}",
     "tenant"},
    /* numbers the JSON parser cannot hold */
    {"{\"resources\":{\"cpu\":{\"limit\":1e400}}}", NULL},
    {"{\"resources\":{\"cpu\":{\"limit\":9223372036854775808}}}", NULL},
};

static const struct fcase tenant_422[] = {
    /* capacity 4: acme may guarantee 3 more than small's 1 at most */
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":4,\"limit\":4}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":3.5,\"limit\":4}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":1000000000,\"limit\":1000000000}}}", A100},
    {"{\"resources\":{\"gpu:h100\":{\"guaranteed\":1,\"limit\":1}}}", "resources.gpu:h100"},
    /* a valid resource next to an impossible one: nothing is applied */
    {"{\"resources\":{\"cpu\":{\"limit\":8},\"gpu:a100\":{\"guaranteed\":5,\"limit\":5}}}", A100},
};

START_TEST(tenant_quota_is_checked)
{
    char *before = stored();
    run_cases("PUT", TQ, tenant_400, N_OF(tenant_400), 400);
    run_cases("PUT", TQ, tenant_422, N_OF(tenant_422), 422);
    soft_bad("PUT", "/api/v1/tenants/small/quota", ADM,
             "{\"resources\":{\"gpu:a100\":{\"guaranteed\":3,\"limit\":3}}}", 422, A100);
    /* 65 resources are too many; 64 (next test) are not */
    char *b = many_resources("gpu:t", 65);
    soft_bad("PUT", TQ, ADM, b, 400, "resources");
    free(b);
    /* a path that is not a tenant */
    soft_bad("PUT", "/api/v1/tenants/Bad!/quota", ADM, "{\"resources\":{}}", 400, "tenant");
    soft_bad("PUT", "/api/v1/tenants/ghost-tenant/quota", ADM, "{\"resources\":{}}", 404, NULL);
    same_stored("refused tenant quotas", before);
    /* what GET shows is what was set up */
    struct http_res r;
    reqj("GET", TQ, ADM, NULL, &r);
    json_t *a = json_object_get(json_object_get(r.json, "resources"), "gpu:a100");
    soft(r.status == 200 && json_integer_value(json_object_get(a, "guaranteed")) == 2 &&
             json_integer_value(json_object_get(a, "limit")) == 4,
         "acme's quota after refused PUTs: %s", soft_show(r.body, r.body_len));
    http_res_free(&r);
    /* up to the capacity exactly (acme's own old guarantee is not counted twice) */
    ok_put(TQ, "{\"resources\":{\"gpu:a100\":{\"guaranteed\":3,\"limit\":4}}}");
    ok_put(TQ, "{\"resources\":{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}}");
    free(before);
    soft_done();
}
END_TEST

START_TEST(quota_limits_are_inclusive)
{
    char *b = many_resources("gpu:t", 64);
    ok_put("/api/v1/tenants/spare/quota", b);
    free(b);
    /* the largest amounts are accepted; a raise of a guarantee that large waits for a
     * second platform admin (the set-ups' threshold is 10^6), whose approval applies it */
    const char *big =
        "{\"resources\":{\"cpu\":{\"guaranteed\":1000000000,\"limit\":1000000000},"
        "\"gpu:a100\":{\"guaranteed\":1,\"limit\":1000000000},\"storage_gib\":{\"limit\":0}}}";
    struct http_res r;
    reqj("PUT", "/api/v1/tenants/spare/quota", ADM, big, &r);
    const char *id = json_string_value(json_object_get(json_object_get(r.json, "approval"), "id"));
    soft(r.status == 202 && id, "PUT spare's quota %s: %ld, expected 202: %s", soft_shows(big),
         r.status, soft_show(r.body, r.body_len));
    make_user("approver", "approver-password-1", "[\"platform_admin\"]");
    char *approver = login("approver", "approver-password-1");
    struct http_res a;
    reqj("POST", fmt("/api/v1/approvals/%s/approve", id ? id : "none"), approver, NULL, &a);
    json_t *status = json_object_get(json_object_get(a.json, "result"), "status");
    soft(a.status == 200 && json_integer_value(status) == 200, "approving it: %ld: %s", a.status,
         soft_show(a.body, a.body_len));
    http_res_free(&a);
    http_res_free(&r);
    free(approver);
    ok_put("/api/v1/tenants/spare/projects/spare-proj/quota",
           "{\"resources\":{\"gpu:a100\":{\"limit\":1000000000},\"cpu\":{\"limit\":0.5}}}");
    soft_done();
}
END_TEST

/* ---- project quota ---------------------------------------------------------------- */

static const struct fcase project_400[] = {
    {"{}", "resources"},
    {"{\"resources\":[]}", "resources"},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":1,\"limit\":1}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"guaranteed\":0,\"limit\":1}}}", A100},
    {"{\"resources\":{\"home_storage_gib\":{\"limit\":10}}}", "resources.home_storage_gib"},
    {"{\"resources\":{\"storage_gib\":{\"guaranteed\":1,\"limit\":10}}}", "resources.storage_gib"},
    {"{\"resources\":{\"disk\":{\"limit\":10}}}", "resources.disk"},
    {"{\"resources\":{\"gpu:a100\":{\"limit\":-1}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"limit\":\"1\"}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"limit\":1}},\"extra\":true}", "extra"},
};

static const struct fcase project_422[] = {
    {"{\"resources\":{\"gpu:a100\":{\"limit\":5}}}", A100},
    {"{\"resources\":{\"gpu:a100\":{\"limit\":4.5}}}", A100},
    {"{\"resources\":{\"gpu:h100\":{\"limit\":1}}}", "resources.gpu:h100"},
    {"{\"resources\":{\"cpu\":{\"limit\":8},\"gpu:a100\":{\"limit\":5}}}", A100},
};

START_TEST(project_quota_is_checked)
{
    char *before = stored();
    run_cases("PUT", PQ, project_400, N_OF(project_400), 400);
    run_cases("PUT", PQ, project_422, N_OF(project_422), 422);
    char *b = many_resources("gpu:t", 65);
    soft_bad("PUT", PQ, ADM, b, 400, "resources");
    free(b);
    const char *ok = "{\"resources\":{\"gpu:a100\":{\"limit\":1}}}";
    soft_bad("PUT", "/api/v1/tenants/acme/projects/Bad!/quota", ADM, ok, 400, "project");
    soft_bad("PUT", "/api/v1/tenants/acme/projects/nope/quota", ADM, ok, 404, NULL);
    /* rival's project does not exist in acme */
    soft_bad("PUT", "/api/v1/tenants/acme/projects/secret-proj/quota", ADM, ok, 404, NULL);
    struct http_res r;
    reqj("GET", "/api/v1/tenants/acme/projects/secret-proj/quota", ADM, NULL, &r);
    soft_problem("GET acme's quota of rival's project", &r, 404, NULL);
    http_res_free(&r);
    same_stored("refused project quotas", before);
    /* the tenant's own limit is allowed */
    ok_put(PQ, "{\"resources\":{\"gpu:a100\":{\"limit\":4}}}");
    ok_put(PQ, "{\"resources\":{\"gpu:a100\":{\"limit\":1}}}");
    free(before);
    soft_done();
}
END_TEST

/* ---- clusters --------------------------------------------------------------------- */

#define C1 "\"name\":\"c1\""

static const struct fcase cluster_400[] = {
    {"{\"name\":\"Bad_Name\",\"kind\":\"local\"}", "name"},
    {"{\"name\":\"a\",\"kind\":\"local\"}", "name"},
    {"{\"name\":\"\",\"kind\":\"local\"}", "name"},
    {"{\"name\":7,\"kind\":\"local\"}", "name"},
    {"{\"kind\":\"local\"}", "name"},
    {"{" C1 "}", "kind"},
    {"{" C1 ",\"kind\":\"nomad\"}", "kind"},
    {"{" C1 ",\"kind\":\"LOCAL\"}", "kind"},
    {"{" C1 ",\"kind\":\"\"}", "kind"},
    {"{" C1 ",\"kind\":1}", "kind"},
    {"{" C1 ",\"kind\":null}", "kind"},
    {"{" C1 ",\"kind\":\"local\",\"options\":\"x\"}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":[]}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":null}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":4}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"password123\"}", "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"file:relative/path\"}", "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"file:/a/../etc/shadow\"}",
     "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"env:1BAD\"}", "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"env:\"}", "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"env:A B\"}", "credentials_ref"},
    /* aidcd's own secrets: sent to an endpoint of the caller's choosing otherwise */
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"env:AIDC_DATABASE_URL\"}",
     "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"env:AIDC_ADMIN_PASSWORD\"}",
     "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"env:PGPASSWORD\"}", "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":\"file:/root/.pgpass\"}",
     "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"credentials_ref\":5}", "credentials_ref"},
    {"{" C1 ",\"kind\":\"local\",\"endpoint\":5}", "endpoint"},
    {"{" C1 ",\"kind\":\"local\",\"token\":\"secret\"}", "token"},
    {"{" C1 ",\"kind\":\"local\",\"id\":\"00000000-0000-0000-0000-000000000000\"}", "id"},
    {"{" C1 ",\"kind\":\"local\",\"healthy\":true}", "healthy"},
};

static const struct fcase cluster_422[] = {
    {"{" C1 ",\"kind\":\"slurm\"}", "endpoint"},
    {"{" C1 ",\"kind\":\"slurm\",\"endpoint\":\"ftp://h\",\"credentials_ref\":\"env:T\"}",
     "endpoint"},
    {"{" C1 ",\"kind\":\"slurm\",\"endpoint\":\"http://h:6820\"}", "credentials_ref"},
    {"{" C1 ",\"kind\":\"slurm\",\"endpoint\":\"http://h:6820\",\"credentials_ref\":\"env:T\"}",
     "options"},
    {"{" C1 ",\"kind\":\"slurm\",\"endpoint\":\"http://h:6820\",\"credentials_ref\":\"env:T\","
     "\"options\":{\"user_name\":\"aidc\",\"api_version\":\"v9\"}}",
     "options"},
    {"{" C1 ",\"kind\":\"slurm\",\"endpoint\":\"http://h:6820\",\"credentials_ref\":\"env:T\","
     "\"options\":{\"user_name\":\"aidc\",\"gpus\":{\"a100\":4}}}",
     "options"},
    {"{" C1 ",\"kind\":\"slurm\",\"endpoint\":\"http://h:6820\",\"credentials_ref\":\"env:T\","
     "\"options\":{\"user_name\":\"a b\"}}",
     "options"},
    {"{" C1 ",\"kind\":\"kubernetes\",\"endpoint\":\"https://k8s.example\"}", "credentials_ref"},
    /* a bearer token never crosses the network in clear */
    {"{" C1 ",\"kind\":\"kubernetes\",\"endpoint\":\"http://k8s.example\",\"credentials_ref\":"
     "\"env:T\"}",
     "endpoint"},
    {"{" C1 ",\"kind\":\"kubernetes\",\"endpoint\":\"https://k8s.example\",\"credentials_ref\":"
     "\"env:T\",\"options\":{\"namespace\":\"ml-{project}\"}}",
     "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"bogus\":1}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":[]}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":\"a100\"}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":-1}}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":65}}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":\"4\"}}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":1.5}}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":{\"A100\":1}}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":{\"\":1}}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"gpus\":{\"a 100\":1}}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"workdir\":\"relative/dir\"}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"workdir\":5}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"workdir\":\"\"}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"cpus\":0}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"memory_gib\":\"8\"}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"max_time_limit_minutes\":0}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"max_time_limit_minutes\":525601}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"sandbox\":\"maybe\"}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"sandbox\":true}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"writable_paths\":\"/scratch\"}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"writable_paths\":[\"scratch\"]}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"hidden_paths\":[5]}}", "options"},
    {"{" C1 ",\"kind\":\"local\",\"options\":{\"hidden_paths\":[\"/a\",\"/a\",\"/a\",\"/a\","
     "\"/a\",\"/a\",\"/a\",\"/a\",\"/a\",\"/a\",\"/a\",\"/a\",\"/a\",\"/a\",\"/a\",\"/a\",\"/a\"]}}",
     "options"},
};

START_TEST(cluster_registration_is_checked)
{
    char *before = stored();
    run_cases("POST", CLUSTERS, cluster_400, N_OF(cluster_400), 400);
    run_cases("POST", CLUSTERS, cluster_422, N_OF(cluster_422), 422);
    char *ep = soft_rep("e", 2049);
    char *b =
        soft_jdump(json_pack("{s:s, s:s, s:s}", "name", "c1", "kind", "local", "endpoint", ep), 0);
    soft_bad("POST", CLUSTERS, ADM, b, 400, "endpoint");
    free(b);
    free(ep);
    char *wd = soft_rep("d", 512);
    wd[0] = '/';
    b = soft_jdump(
        json_pack("{s:s, s:s, s:{s:s}}", "name", "c1", "kind", "local", "options", "workdir", wd),
        0);
    free(wd);
    wd = NULL;
    soft_bad("POST", CLUSTERS, ADM, b, 409, NULL); /* 512 bytes are fine: then the second local */
    free(b);
    wd = soft_rep("d", 513);
    wd[0] = '/';
    b = soft_jdump(
        json_pack("{s:s, s:s, s:{s:s}}", "name", "c1", "kind", "local", "options", "workdir", wd),
        0);
    soft_bad("POST", CLUSTERS, ADM, b, 422, "options");
    free(b);
    free(wd);
    /* 17 GPU types are too many */
    json_t *gpus = json_object();
    for (int i = 0; i < 17; i++)
        json_object_set_new(gpus, fmt("t%d", i), json_integer(1));
    b = soft_jdump(
        json_pack("{s:s, s:s, s:{s:o}}", "name", "c1", "kind", "local", "options", "gpus", gpus),
        0);
    soft_bad("POST", CLUSTERS, ADM, b, 422, "options");
    free(b);
    /* the session key and anything in aidcd's data directory are aidcd's own */
    char ref[400];
    snprintf(ref, sizeof ref, "file:%s/jwt.key", harness_srv.data_dir);
    b = soft_jdump(json_pack("{s:s, s:s, s:s, s:s}", "name", "c1", "kind", "slurm", "endpoint",
                             "http://127.0.0.1:9", "credentials_ref", ref),
                   0);
    soft_bad("POST", CLUSTERS, ADM, b, 400, "credentials_ref");
    free(b);
    snprintf(ref, sizeof ref, "file:%s/not-yet", harness_srv.data_dir);
    b = soft_jdump(json_pack("{s:s, s:s, s:s, s:s}", "name", "c1", "kind", "slurm", "endpoint",
                             "http://127.0.0.1:9", "credentials_ref", ref),
                   0);
    soft_bad("POST", CLUSTERS, ADM, b, 400, "credentials_ref");
    free(b);
    /* one local cluster per platform, one cluster per name */
    soft_bad("POST", CLUSTERS, ADM, "{\"name\":\"local2\",\"kind\":\"local\"}", 409, NULL);
    soft_bad("POST", CLUSTERS, ADM,
             "{\"name\":\"local2\",\"kind\":\"local\",\"options\":{\"gpus\":{\"h100\":8}}}", 409,
             NULL);
    soft_bad("POST", CLUSTERS, ADM, "{\"name\":\"local\",\"kind\":\"local\",\"options\":{}}", 409,
             NULL);
    /* cluster paths */
    static const struct {
        const char *method, *path;
        long status;
        const char *field;
    } paths[] = {
        {"GET", CLUSTERS "/Bad_Name", 400, "name"},
        {"GET", CLUSTERS "/a", 400, "name"},
        {"GET", CLUSTERS "/nope", 404, NULL},
        {"POST", CLUSTERS "/Bad_Name/sync", 400, "name"},
        {"POST", CLUSTERS "/nope/sync", 404, NULL},
        {"GET", CLUSTERS "?limit=0", 400, "limit"},
        {"GET", CLUSTERS "?cursor=%FF", 400, "cursor"},
        {"GET", CLUSTERS "?kind=local", 400, "kind"},
    };
    for (size_t i = 0; i < N_OF(paths); i++) {
        struct http_res r;
        http_do(&harness_srv, paths[i].method, paths[i].path, ADM, NULL, NULL, &r);
        soft_problem(fmt("%s %s", paths[i].method, paths[i].path), &r, paths[i].status,
                     paths[i].field);
        http_res_free(&r);
    }
    same_stored("refused clusters", before);
    free(before);
    soft_done();
}
END_TEST

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("badinput_quotas");
    TCase *tc = tcase_create("badinput_quotas");
    tcase_add_unchecked_fixture(tc, setup, harness_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tenant_quota_is_checked);
    tcase_add_test(tc, quota_limits_are_inclusive);
    tcase_add_test(tc, project_quota_is_checked);
    tcase_add_test(tc, cluster_registration_is_checked);
    soft_add_server_check(tc);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    curl_global_cleanup();
    return rc;
}
