/*
 * test_tenant_memory.c - a tenant named by a platform admin is looked up once
 * per auth epoch and HTTP thread (server/tenantcache.h), and what it
 * remembers never outlives a change: a suspension or a deletion made behind
 * aidcd's back (SQL, as another replica's request would be) reaches the next
 * request, and an unrelated change of the epoch costs one lookup more, not
 * an error. Likewise a member's remembered actor: a change made elsewhere
 * stops its request before the handler acts. One HTTP thread, writes on it:
 * every request meets the same memory.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define TENANT "physics"
#define PROJECT_PATH "/api/v1/tenants/" TENANT "/projects/lab"

static const char *admin;

static void setup(void)
{
    const char *env[] = {"AIDC_THREADS=1", "AIDC_WRITE_THREADS=0", NULL};
    harness_setup("tenantmem", env);
    admin = harness_srv.admin_token;
    jobs_local_cluster("{\"a100\":1}");
    make_tenant(TENANT);
    make_project(TENANT, "lab");
    jobs_tenant_quota(TENANT, "{\"cpu\":{\"guaranteed\":4,\"limit\":4}}");
    /* what is submitted stays queued */
    jobs_project_quota(TENANT, "lab", "{\"jobs\":{\"limit\":0}}");
}

static void teardown(void)
{
    harness_teardown();
}

/* aidc_tenant_lookups_total{from="<from>"} */
static long lookups(const char *from)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/metrics", NULL, NULL, &r), 200);
    const char *name = fmt("\naidc_tenant_lookups_total{from=\"%s\"} ", from);
    const char *at = strstr(r.body, name);
    ck_assert_ptr_nonnull(at);
    long n = strtol(at + strlen(name), NULL, 10);
    http_res_free(&r);
    return n;
}

/* statement as a platform admin's transaction of another replica would run it */
static void sql(const char *statement)
{
    const char *url = fmt("%s%soptions=-caidc.all%%3Dadmin", harness_srv.owner_url,
                          strchr(harness_srv.owner_url, '?') ? "&" : "?");
    ck_assert_msg(harness_sql_ok(url, statement), "%s failed", statement);
}

static long submit(void)
{
    struct http_res r;
    long st = reqj("POST", "/api/v1/tenants/" TENANT "/jobs", admin,
                   "{\"project\":\"lab\",\"name\":\"m\",\"cpus\":1,\"command\":[\"true\"]}", &r);
    if (st == 403)
        expect_problem(&r, "job.tenant_suspended", "tenant", TENANT);
    http_res_free(&r);
    return st;
}

START_TEST(a_platform_admin_names_a_tenant_once)
{
    ck_assert_int_eq(req("GET", PROJECT_PATH, admin, NULL), 200);
    long db0 = lookups("database"), mem0 = lookups("memory");
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(req("GET", PROJECT_PATH, admin, NULL), 200);
    ck_assert_int_eq(submit(), 201);
    ck_assert_int_eq(lookups("database"), db0);
    ck_assert_int_eq(lookups("memory"), mem0 + 4);
    /* another tenant is its own lookup */
    make_tenant("chem");
    ck_assert_int_eq(req("GET", "/api/v1/tenants/chem", admin, NULL), 200);
    ck_assert_int_eq(lookups("database"), db0 + 1);
}
END_TEST

/* Suspended by SQL, no request of this aidcd in between: the next submit is refused. */
START_TEST(a_suspension_reaches_a_remembered_tenant)
{
    ck_assert_int_eq(submit(), 201);
    ck_assert_int_eq(submit(), 201); /* from memory */
    sql("UPDATE tenants SET suspended = true WHERE slug = '" TENANT "'");
    ck_assert_int_eq(submit(), 403);
    ck_assert_int_eq(submit(), 403); /* remembered suspended, too */
    sql("UPDATE tenants SET suspended = false WHERE slug = '" TENANT "'");
    ck_assert_int_eq(submit(), 201);
}
END_TEST

START_TEST(a_deleted_tenant_is_not_found_from_memory)
{
    ck_assert_int_eq(req("GET", PROJECT_PATH, admin, NULL), 200);
    ck_assert_int_eq(req("GET", PROJECT_PATH, admin, NULL), 200);
    /* as the DELETE of another replica would */
    sql("UPDATE tenants SET deleted_at = now(), suspended = true WHERE slug = '" TENANT "'");
    struct http_res r;
    ck_assert_int_eq(reqj("GET", PROJECT_PATH, admin, NULL, &r), 404);
    expect_problem(&r, "tenant.not_found", "tenant", TENANT);
    http_res_free(&r);
}
END_TEST

/* Changed by hand alone (0041): a deletion time, a slug. */
START_TEST(a_tenant_renamed_or_deleted_by_hand_is_looked_up_again)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/" TENANT, admin, NULL, &r), 200);
    char *old_id = strdup(jstr(r.json, "id"));
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 200);
    sql("UPDATE tenants SET slug = 'physics-old' WHERE slug = '" TENANT "'");
    ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 404);
    make_tenant(TENANT);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/" TENANT, admin, NULL, &r), 200);
    ck_assert_str_ne(jstr(r.json, "id"), old_id);
    http_res_free(&r);
    free(old_id);
    sql("UPDATE tenants SET deleted_at = now() WHERE slug = '" TENANT "'");
    ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 404);
}
END_TEST

/* The epoch moved for someone else: the request runs again after one lookup. */
START_TEST(an_unrelated_change_costs_one_lookup)
{
    ck_assert_int_eq(req("GET", PROJECT_PATH, admin, NULL), 200);
    long db0 = lookups("database");
    sql("UPDATE aidc_auth_epoch SET v = v + 1");
    ck_assert_int_eq(req("GET", PROJECT_PATH, admin, NULL), 200);
    ck_assert_int_eq(submit(), 201);
    ck_assert_int_eq(lookups("database"), db0 + 1);
    /* a write meets the move first: stopped at its first statement, then once more */
    sql("UPDATE aidc_auth_epoch SET v = v + 1");
    ck_assert_int_eq(submit(), 201);
    ck_assert_int_eq(lookups("database"), db0 + 2);
    ck_assert_int_eq(
        harness_sql_long(harness_srv.owner_url,
                         "SELECT count(*) FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
                         " WHERE t.slug = '" TENANT "'",
                         0, NULL),
        2);
}
END_TEST

/* The admin's own record changed too: a fresh actor, a fresh lookup, and no
 * request after it refused (the pin once outlived its transaction). */
START_TEST(the_actor_changed_with_its_tenant_remembered)
{
    ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 200);
    sql("UPDATE users SET disabled = disabled WHERE username = '" ADMIN_USER "'");
    ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 200);
    char *again = login(ADMIN_USER, ADMIN_PASSWORD);
    ck_assert_ptr_nonnull(again);
    free(again);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 200);
}
END_TEST

/* An upload (its own admission, outside the request transaction) meets a moved epoch. */
START_TEST(an_upload_meets_a_moved_epoch)
{
    const char *dir = "/api/v1/tenants/" TENANT "/files/projects/lab/";
    ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 200);
    ck_assert_int_eq(req("PUT", fmt("%sa.txt", dir), admin, "hello"), 201);
    sql("UPDATE aidc_auth_epoch SET v = v + 1");
    ck_assert_int_eq(req("PUT", fmt("%sb.txt", dir), admin, "hello"), 201);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(req("GET", "/api/v1/tenants/" TENANT, admin, NULL), 200);
    ck_assert_int_eq(req("GET", fmt("%sb.txt", dir), admin, NULL), 200);
}
END_TEST

/*
 * A member removed by another replica, its actor still remembered here: its
 * delete of a file stops at the request's first statement, before the file is
 * touched (the files handler removed it, then the transaction was found stale).
 */
START_TEST(a_member_removed_elsewhere_deletes_nothing)
{
    const char *file = "/api/v1/tenants/" TENANT "/files/projects/lab/keep.txt";
    char *ann = make_member_login(TENANT, "ann", "member");
    ck_assert_int_eq(req("PUT", file, ann, "kept"), 201);
    sql("DELETE FROM memberships WHERE user_id = (SELECT id FROM users WHERE username = 'ann')");
    ck_assert_int_eq(req("DELETE", file, ann, NULL), 404);
    ck_assert_int_eq(req("GET", file, admin, NULL), 200);
    free(ann);
}
END_TEST

static Suite *tenant_memory_suite(void)
{
    Suite *s = suite_create("tenant_memory");
    TCase *tc = tcase_create("tenant_memory");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_platform_admin_names_a_tenant_once);
    tcase_add_test(tc, a_suspension_reaches_a_remembered_tenant);
    tcase_add_test(tc, a_deleted_tenant_is_not_found_from_memory);
    tcase_add_test(tc, a_tenant_renamed_or_deleted_by_hand_is_looked_up_again);
    tcase_add_test(tc, an_unrelated_change_costs_one_lookup);
    tcase_add_test(tc, the_actor_changed_with_its_tenant_remembered);
    tcase_add_test(tc, an_upload_meets_a_moved_epoch);
    tcase_add_test(tc, a_member_removed_elsewhere_deletes_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(tenant_memory_suite());
}
