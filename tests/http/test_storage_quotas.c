/*
 * test_storage_quotas.c - quotas, measurement and metering of the storage
 * spaces (docs/storage-quotas.md) through a real aidcd, with the storage
 * worker's pass (storagemeter_run) driven by the test at times it chooses
 * (aidcd runs without workers, so nothing else measures or meters):
 *
 * - quota documents take storage_gib (a project's space) and home_storage_gib
 *   (a tenant's homes), and refuse them where they do not belong, with codes;
 *   the limits read back with the statements other modules use;
 * - a measurement shows in the quota documents (used, measured_at, complete):
 *   bytes of blocks, exactly what the test wrote; a link in a space, or one
 *   standing as a space, is not followed; a tenant's measurement holds its own
 *   files only (another tenant's space of the same name, a folder of no tenant);
 * - measurements over hours meter GiB-hours cut at hours and months, priced as
 *   storage_gib and invoiced (usage lines, homes and datasets without a
 *   project), equal to the usage report; finalizing waits for a measurement
 *   after the month;
 * - a walk cut at its bound is recorded as incomplete; a space that left the
 *   disk is forgotten.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "billing/storagemeter.h"
#include "db/db.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PW  "storage-password-1"
#define GIB 1073741824.0
#define OCT "from=2026-10-01T00:00:00Z&to=2026-11-01T00:00:00Z"

static char *fin, *adm2, *aa;
static char root[400];
/* bytes of blocks the test wrote in each space (what a measurement must find) */
static long long alpha_data, beta_data, alice, bob, imagenet;

/* ---- the tree on disk ------------------------------------------------------------- */

static const char *at_root(const char *rel)
{
    return fmt("%s/%s", root, rel);
}

static void mkdirs(const char *rel)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            ck_assert_msg(mkdir(path, 0700) == 0 || errno == EEXIST, "mkdir %s", path);
            *p = c;
            if (!c)
                break;
        }
    }
}

/* Write n bytes (no holes) to rel; the blocks it holds, in bytes. */
static long long write_file(const char *rel, size_t n)
{
    int fd = open(at_root(rel), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    static char buf[65536];
    memset(buf, 0xa5, sizeof buf);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof buf ? n - done : sizeof buf;
        ck_assert_int_eq(write(fd, buf, k), (ssize_t)k);
        done += k;
    }
    ck_assert_int_eq(fsync(fd), 0);
    close(fd);
    /* after close: a file system may give back blocks it reserved ahead of the writes */
    struct stat st;
    ck_assert_int_eq(lstat(at_root(rel), &st), 0);
    return (long long)st.st_blocks * 512;
}

/* The blocks rel itself holds (a link's own, never its target's). */
static long long blocks_of(const char *rel)
{
    struct stat st;
    ck_assert_int_eq(lstat(at_root(rel), &st), 0);
    return (long long)st.st_blocks * 512;
}

static void link_at(const char *target, const char *rel)
{
    ck_assert_int_eq(symlink(target, at_root(rel)), 0);
}

/*
 * alpha: project data (a file, a folder with a file, a link out of the storage
 * root and one into beta's space), homes alice and bob, dataset imagenet, and a
 * link standing as project "ghost"; beta: project data (the same name as
 * alpha's); nobody: a folder of no tenant.
 */
static void plant(void)
{
    mkdirs("alpha/projects/data/sub");
    alpha_data = write_file("alpha/projects/data/blob", (size_t)4 << 20);
    alpha_data += write_file("alpha/projects/data/sub/small", 10000);
    alpha_data += blocks_of("alpha/projects/data/sub");
    link_at("/usr", "alpha/projects/data/escape");
    link_at("../../../beta/projects/data", "alpha/projects/data/tobeta");
    alpha_data += blocks_of("alpha/projects/data/escape") + blocks_of("alpha/projects/data/tobeta");
    link_at("../../beta/projects/data", "alpha/projects/ghost");
    mkdirs("alpha/home/alice");
    mkdirs("alpha/home/bob");
    alice = write_file("alpha/home/alice/notes", (size_t)2 << 20);
    bob = write_file("alpha/home/bob/notes", (size_t)1 << 20);
    mkdirs("alpha/datasets/imagenet");
    imagenet = write_file("alpha/datasets/imagenet/part-0", (size_t)1 << 20);
    mkdirs("beta/projects/data");
    beta_data = write_file("beta/projects/data/big", (size_t)8 << 20);
    mkdirs("nobody/projects/data");
    (void)write_file("nobody/projects/data/f", (size_t)1 << 20);
}

/* ---- helpers ---------------------------------------------------------------------- */

/* One pass of the storage worker as if at time at, walking at most max entries per space. */
static struct storagemeter_figures pass_at(const char *at, long long max)
{
    struct db *d = db_open(harness_srv.app_url, "test_storage_quotas");
    ck_assert_int_eq(db_ensure(d), 0);
    struct storagemeter_pass p = {root, max, at, NULL};
    struct storagemeter_figures f;
    ck_assert_int_eq(storagemeter_run(d, &p, &f), 0);
    db_close(d);
    return f;
}

static long long sql_num(const char *sql, int n, const char *const *params)
{
    return audittest_num(harness_srv.owner_url, sql, n, params);
}

static char *sql_text(const char *sql, int n, const char *const *params)
{
    return audittest_sql_value(harness_srv.owner_url, sql, n, params);
}

/* The field error of r for field, with its code. */
static void expect_field(const struct http_res *r, long status, const char *field, const char *code)
{
    ck_assert_msg(r->status == status, "%ld, expected %ld: %s", r->status, status, r->body);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r->json, "errors"), i, e)
    {
        if (audittest_str_is(jstr(e, "field"), field)) {
            ck_assert_msg(audittest_str_is(jstr(e, "code"), code), "%s: not %s: %s", field, code,
                          r->body);
            return;
        }
    }
    ck_abort_msg("no error for %s: %s", field, r->body);
}

static void put_refused(const char *path, const char *body, long status, const char *field,
                        const char *code)
{
    struct http_res r;
    reqj("PUT", path, harness_srv.admin_token, body, &r);
    expect_field(&r, status, field, code);
    http_res_free(&r);
}

/* resources.<res> of the quota document at path. */
static json_t *quota_entry(const char *path, const char *res, const char *token)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", path, token, NULL, &r), 200);
    json_t *e = json_incref(json_object_get(json_object_get(r.json, "resources"), res));
    http_res_free(&r);
    ck_assert_msg(e != NULL, "%s has no %s", path, res);
    return e;
}

/* bytes held for hours, in GiB-hours rounded as aidc rounds them (6 decimals) */
static double gib6(long long bytes, int hours)
{
    return round((double)bytes * hours / GIB * 1e6) / 1e6;
}

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* A price as finance, approved by the second platform admin. */
static void price(const char *body)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/prices", fin, body, &r), 202);
    const char *id = jstr(json_object_get(r.json, "approval"), "id");
    ck_assert_ptr_nonnull(id);
    const char *path = fmt("/api/v1/approvals/%s/approve", id);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", path, adm2, NULL, &r), 200);
    ck_assert_int_eq(jint(json_object_get(r.json, "result"), "status"), 201);
    http_res_free(&r);
}

/* The quantity of the invoice line of project and resource (-1: none). */
static double line_q(const json_t *inv, const char *project, const char *res, const char **amount)
{
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(inv, "lines"), i, l)
    {
        if (audittest_str_is(jstr(l, "project"), project) &&
            audittest_str_is(jstr(l, "resource"), res)) {
            ck_assert_str_eq(jstr(l, "kind"), "usage");
            ck_assert_str_eq(jstr(l, "unit"), "gib_hour");
            if (amount)
                *amount = jstr(l, "amount");
            return strtod(jstr(l, "quantity"), NULL);
        }
    }
    return -1;
}

/* ---- fixture ---------------------------------------------------------------------- */

static void setup(void)
{
    /* no workers: the test alone measures and meters, at the times it chooses */
    const char *env[] = {"AIDC_WORKERS=0", NULL};
    harness_setup("storage_quotas", env);
    make_user("fin", PW, "[\"finance\"]");
    make_user("adm2", PW, "[\"platform_admin\"]");
    make_user("aa", PW, NULL);
    make_tenant("alpha");
    make_tenant("beta");
    make_member("alpha", "aa", "tenant_admin");
    make_project("alpha", "data");
    make_project("alpha", "web");
    make_project("beta", "data");
    fin = login("fin", PW);
    adm2 = login("adm2", PW);
    aa = login("aa", PW);
    if (!fin || !adm2 || !aa)
        audittest_setup_fail("logins");
    /* a root of the test's own (aidcd's would be <data dir>/storage) */
    int n = snprintf(root, sizeof root, "%s/spaces", harness_srv.data_dir);
    if (n < 0 || (size_t)n >= sizeof root || mkdir(root, 0700) != 0)
        audittest_setup_fail("the storage root");
}

static void teardown(void)
{
    free(fin);
    free(adm2);
    free(aa);
    harness_teardown();
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(quota_documents_take_storage_limits)
{
    const char *tq = "/api/v1/tenants/alpha/quota",
               *pq = "/api/v1/tenants/alpha/projects/data/quota";
    /* a home has a limit only; homes are the tenant's, not a project's */
    put_refused(tq, "{\"resources\":{\"home_storage_gib\":{\"guaranteed\":1,\"limit\":5}}}", 400,
                "resources.home_storage_gib", "quota.limit_only");
    put_refused(tq, "{\"resources\":{\"home_storage_gib\":{\"limit\":-1}}}", 400,
                "resources.home_storage_gib", "quota.limit_required");
    put_refused(tq, "{\"resources\":{\"homes_gib\":{\"limit\":1}}}", 400, "resources.homes_gib",
                "quota.resource_unknown");
    put_refused(pq, "{\"resources\":{\"home_storage_gib\":{\"limit\":5}}}", 400,
                "resources.home_storage_gib", "quota.project_resource_unknown");
    put_refused(pq, "{\"resources\":{\"storage_gib\":{\"limit\":\"10\"}}}", 400,
                "resources.storage_gib", "quota.limit_required");
    put_refused(pq, "{\"resources\":{\"storage_gib\":{\"guaranteed\":1,\"limit\":10}}}", 400,
                "resources.storage_gib", "quota.amount_unknown_field");
    /* the tenant's storage_gib (its images: 1 GiB) is no ceiling for a project's space */
    ck_assert_int_eq(req("PUT", tq, harness_srv.admin_token,
                         "{\"resources\":{\"storage_gib\":{\"limit\":1},"
                         "\"home_storage_gib\":{\"guaranteed\":0,\"limit\":0.5}}}"),
                     200);
    ck_assert_int_eq(req("PUT", pq, aa, "{\"resources\":{\"storage_gib\":{\"limit\":2.5}}}"), 200);
    ck_assert_int_eq(req("PUT", "/api/v1/tenants/beta/projects/data/quota", harness_srv.admin_token,
                         "{\"resources\":{\"storage_gib\":{\"limit\":3}}}"),
                     200);
    /* the statements the upload code reads the limits with */
    char *pid = sql_text("SELECT p.id FROM projects p JOIN tenants t ON t.id = p.tenant_id"
                         " WHERE t.slug = 'alpha' AND p.slug = 'data'",
                         0, NULL);
    char *tid = sql_text("SELECT id FROM tenants WHERE slug = 'alpha'", 0, NULL);
    const char *pp[1] = {pid}, *tp[1] = {tid};
    char *pl = sql_text("SELECT \"limit\" FROM project_quotas WHERE project_id=$1 AND "
                        "resource='storage_gib'",
                        1, pp);
    char *hl = sql_text("SELECT \"limit\" FROM tenant_quotas WHERE tenant_id=$1 AND "
                        "resource='home_storage_gib'",
                        1, tp);
    ck_assert_double_eq_tol(strtod(pl, NULL), 2.5, 1e-9);
    ck_assert_double_eq_tol(strtod(hl, NULL), 0.5, 1e-9);
    free(pid);
    free(tid);
    free(pl);
    free(hl);
    /* nothing measured yet: nothing used, and no time of measurement */
    json_t *e = quota_entry(pq, "storage_gib", aa);
    ck_assert_double_eq_tol(num(e, "limit"), 2.5, 1e-9);
    ck_assert_double_eq_tol(num(e, "used"), 0, 1e-12);
    ck_assert(json_is_null(json_object_get(e, "measured_at")));
    json_decref(e);
    e = quota_entry(tq, "home_storage_gib", aa);
    ck_assert_double_eq_tol(num(e, "limit"), 0.5, 1e-9);
    ck_assert(json_is_null(json_object_get(e, "guaranteed")) || num(e, "guaranteed") == 0);
    json_decref(e);
    /* the tenant's storage_gib is still its images' */
    e = quota_entry(tq, "storage_gib", aa);
    ck_assert_double_eq_tol(num(e, "limit"), 1, 1e-9);
    ck_assert_ptr_null(json_object_get(e, "measured_at"));
    json_decref(e);
    /* storage has a price like the other resources; "storage" is none */
    struct http_res r;
    reqj("POST", "/api/v1/prices", fin,
         "{\"resource\":\"storage\",\"unit_price\":\"1\",\"currency\":\"CNY\","
         "\"effective_from\":\"2026-10-01T00:00:00Z\"}",
         &r);
    expect_field(&r, 400, "resource", "price.resource");
    http_res_free(&r);
}
END_TEST

START_TEST(a_measurement_shows_in_the_quota_documents)
{
    plant();
    struct storagemeter_figures f = pass_at("2026-10-31T20:00:00Z", 1000);
    /* alpha: data, alice, bob, imagenet; beta: data; no ghost, nobody */
    ck_assert_int_eq(f.spaces, 5);
    ck_assert_int_eq(f.pieces, 0); /* a first measurement has no time before it */
    ck_assert_int_eq(f.incomplete, 0);
    ck_assert_int_eq(sql_num("SELECT count(*) FROM storage_spaces", 0, NULL), 5);
    ck_assert_int_eq(sql_num("SELECT count(*) FROM storage_spaces WHERE name IN ('ghost')"
                             " OR tenant_id NOT IN (SELECT id FROM tenants WHERE slug IN"
                             " ('alpha', 'beta'))",
                             0, NULL),
                     0);
    /* exactly the blocks written: neither link was followed, nor beta's space counted */
    ck_assert_int_eq(sql_num("SELECT bytes FROM storage_spaces s JOIN tenants t ON"
                             " t.id = s.tenant_id WHERE t.slug = 'alpha' AND s.name = 'data'",
                             0, NULL),
                     alpha_data);
    ck_assert_int_eq(sql_num("SELECT entries FROM storage_spaces s JOIN tenants t ON"
                             " t.id = s.tenant_id WHERE t.slug = 'alpha' AND s.name = 'data'",
                             0, NULL),
                     5);
    ck_assert_int_eq(sql_num("SELECT bytes FROM storage_spaces s JOIN tenants t ON"
                             " t.id = s.tenant_id WHERE t.slug = 'beta' AND s.name = 'data'",
                             0, NULL),
                     beta_data);
    /* tied to each tenant's own project of that name */
    ck_assert_int_eq(sql_num("SELECT count(*) FROM storage_spaces s JOIN projects p ON"
                             " p.id = s.project_id AND p.tenant_id = s.tenant_id"
                             " WHERE s.kind = 'project'",
                             0, NULL),
                     2);
    json_t *e = quota_entry("/api/v1/tenants/alpha/projects/data/quota", "storage_gib", aa);
    ck_assert_double_eq_tol(num(e, "used"), gib6(alpha_data, 1), 1e-9);
    ck_assert_str_eq(jstr(e, "measured_at"), "2026-10-31T20:00:00Z");
    ck_assert(json_is_true(json_object_get(e, "complete")));
    json_decref(e);
    e = quota_entry("/api/v1/tenants/beta/projects/data/quota", "storage_gib",
                    harness_srv.admin_token);
    ck_assert_double_eq_tol(num(e, "used"), gib6(beta_data, 1), 1e-9);
    json_decref(e);
    /* a project without a space uses nothing */
    e = quota_entry("/api/v1/tenants/alpha/projects/web/quota", "storage_gib", aa);
    ck_assert_double_eq_tol(num(e, "used"), 0, 1e-12);
    json_decref(e);
    /* the tenant's homes: the largest one (alice's) */
    e = quota_entry("/api/v1/tenants/alpha/quota", "home_storage_gib", aa);
    ck_assert_double_eq_tol(num(e, "used"), gib6(alice, 1), 1e-9);
    ck_assert_str_eq(jstr(e, "measured_at"), "2026-10-31T20:00:00Z");
    json_decref(e);
    /* a tenant's readers read its own spaces only (row-level security, as the app role) */
    char *beta = sql_text("SELECT id FROM tenants WHERE slug = 'beta'", 0, NULL);
    PGconn *c = PQconnectdb(harness_srv.app_url);
    ck_assert_int_eq(PQstatus(c), CONNECTION_OK);
    const char *bp[1] = {beta};
    PQclear(PQexecParams(c, "SELECT set_config('aidc.read_tenants', $1, false)", 1, NULL, bp, NULL,
                         NULL, 0));
    PGresult *r = PQexec(c, "SELECT string_agg(kind || '/' || name, ',') FROM storage_spaces");
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "project/data");
    PQclear(r);
    PQfinish(c);
    free(beta);
}
END_TEST

START_TEST(storage_is_metered_priced_and_invoiced)
{
    /* three hours later: 21:00-24:00 of October 31, at the bytes found now */
    struct storagemeter_figures f = pass_at("2026-10-31T23:00:00Z", 1000);
    ck_assert_int_eq(f.spaces, 5);
    ck_assert_int_eq(f.pieces, 5 * 3); /* each space, one piece per hour */
    ck_assert_int_eq(sql_num("SELECT count(*) FROM storage_usage WHERE ended_at >"
                             " date_trunc('hour', started_at, 'UTC') + interval '1 hour'",
                             0, NULL),
                     0);
    price("{\"resource\":\"storage_gib\",\"unit_price\":\"1000.00\",\"currency\":\"CNY\","
          "\"effective_from\":\"2026-10-01T00:00:00Z\"}");
    struct http_res r;
    ck_assert_int_eq(
        reqj("POST", "/api/v1/invoices", fin, "{\"tenant\":\"alpha\",\"period\":\"2026-10\"}", &r),
        201);
    const char *amount = NULL;
    double q = line_q(r.json, "data", "storage_gib", &amount);
    ck_assert_double_eq_tol(q, gib6(alpha_data, 3), 1e-9);
    char want[32];
    snprintf(want, sizeof want, "%.2f", round(gib6(alpha_data, 3) * 1e5) / 100);
    ck_assert_str_eq(amount, want);
    /* homes and the dataset belong to no project: one line of the tenant's own */
    ck_assert_double_eq_tol(line_q(r.json, "", "storage_gib", NULL),
                            gib6(alice + bob + imagenet, 3), 1e-9);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "lines")), 2); /* beta's not here */
    char id[64];
    snprintf(id, sizeof id, "%s", jstr(r.json, "id"));
    http_res_free(&r);
    /* October's last hour is metered only by a measurement after it */
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/invoices/%s/finalize", id), fin, NULL, &r), 409);
    expect_problem(&r, "invoice.storage_unmeasured", "period", "2026-10");
    http_res_free(&r);
    f = pass_at("2026-11-01T01:00:00Z", 1000);
    ck_assert_int_eq(f.pieces, 5 * 2); /* 23:00-24:00 in October, 00:00-01:00 in November */
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/invoices/%s/finalize", id), fin, NULL, &r), 409);
    expect_problem(&r, "invoice.usage_changed", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(
        reqj("POST", "/api/v1/invoices", fin, "{\"tenant\":\"alpha\",\"period\":\"2026-10\"}", &r),
        201);
    double data4 = line_q(r.json, "data", "storage_gib", NULL);
    double own4 = line_q(r.json, "", "storage_gib", NULL);
    ck_assert_double_eq_tol(data4, gib6(alpha_data, 4), 1e-9);
    ck_assert_double_eq_tol(own4, gib6(alice + bob + imagenet, 4), 1e-9);
    http_res_free(&r);
    /* finance reconciles: the usage report of the month says the same */
    ck_assert_int_eq(
        reqj("GET", "/api/v1/tenants/alpha/usage?" OCT "&group_by=project&resource=storage_gib", aa,
             NULL, &r),
        200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "rows")), 2);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(r.json, "rows"), i, row)
    {
        const char *p = jstr(json_object_get(row, "key"), "project");
        ck_assert_str_eq(jstr(row, "unit"), "gib_hour");
        ck_assert_double_eq_tol(num(row, "quantity"), audittest_str_is(p, "data") ? data4 : own4,
                                1e-9);
    }
    http_res_free(&r);
    /* homes by their owner */
    ck_assert_int_eq(
        reqj("GET", "/api/v1/tenants/alpha/usage?" OCT "&group_by=user&user=alice", aa, NULL, &r),
        200);
    ck_assert_double_eq_tol(num(json_array_get(json_object_get(r.json, "rows"), 0), "quantity"),
                            gib6(alice, 4), 1e-9);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/invoices/%s/finalize", id), fin, NULL, &r), 200);
    http_res_free(&r);
    /* October's pieces are billed once, by this invoice; November's wait */
    const char *p[1] = {id};
    ck_assert_int_eq(sql_num("SELECT count(*) FROM storage_usage u JOIN tenants t ON"
                             " t.id = u.tenant_id WHERE t.slug = 'alpha' AND u.period ="
                             " '2026-10-01' AND u.invoice_id IS DISTINCT FROM $1::uuid",
                             1, p),
                     0);
    ck_assert_int_eq(sql_num("SELECT count(*) FROM storage_usage WHERE period = '2026-11-01'"
                             " AND invoice_id IS NOT NULL",
                             0, NULL),
                     0);
}
END_TEST

START_TEST(a_cut_walk_is_incomplete_and_a_gone_space_forgotten)
{
    mkdirs("alpha/projects/web");
    for (int i = 0; i < 20; i++)
        (void)write_file(fmt("alpha/projects/web/f%02d", i), 100);
    /* a link planted in beta's space toward alpha's files counts as the link only */
    link_at("../../../alpha/projects/data", "beta/projects/data/toalpha");
    beta_data += blocks_of("beta/projects/data/toalpha");
    struct storagemeter_figures f = pass_at("2026-11-01T02:00:00Z", 10);
    ck_assert_int_eq(f.spaces, 6);
    ck_assert_int_eq(f.incomplete, 1);
    json_t *e = quota_entry("/api/v1/tenants/alpha/projects/web/quota", "storage_gib", aa);
    ck_assert(json_is_false(json_object_get(e, "complete")));
    json_decref(e);
    ck_assert_int_eq(sql_num("SELECT entries FROM storage_spaces WHERE name = 'web'", 0, NULL), 10);
    ck_assert_int_eq(sql_num("SELECT bytes FROM storage_spaces s JOIN tenants t ON"
                             " t.id = s.tenant_id WHERE t.slug = 'beta' AND s.name = 'data'",
                             0, NULL),
                     beta_data);
    /* bob's home leaves the disk: forgotten, and no longer the tenant's concern */
    ck_assert_int_eq(unlink(at_root("alpha/home/bob/notes")), 0);
    ck_assert_int_eq(rmdir(at_root("alpha/home/bob")), 0);
    ck_assert_int_eq(unlink(at_root("alpha/home/alice/notes")), 0);
    f = pass_at("2026-11-01T03:00:00Z", 1000);
    ck_assert_int_eq(f.spaces, 5);
    ck_assert_int_eq(sql_num("SELECT count(*) FROM storage_spaces WHERE kind = 'home'", 0, NULL),
                     1);
    e = quota_entry("/api/v1/tenants/alpha/quota", "home_storage_gib", aa);
    ck_assert_double_eq_tol(num(e, "used"), 0, 1e-12);
    json_decref(e);
    /* a measurement older than the last one changes nothing */
    f = pass_at("2026-11-01T02:30:00Z", 1000);
    ck_assert_int_eq(f.pieces, 0);
    ck_assert_int_eq(sql_num("SELECT count(*) FROM storage_spaces WHERE measured_at <>"
                             " '2026-11-01T03:00:00Z'",
                             0, NULL),
                     0);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("storage_quotas");
    TCase *tc = tcase_create("storage_quotas");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    /* in order: each stands on the measurements of the one before */
    tcase_add_test(tc, quota_documents_take_storage_limits);
    tcase_add_test(tc, a_measurement_shows_in_the_quota_documents);
    tcase_add_test(tc, storage_is_metered_priced_and_invoiced);
    tcase_add_test(tc, a_cut_walk_is_incomplete_and_a_gone_space_forgotten);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s);
}
