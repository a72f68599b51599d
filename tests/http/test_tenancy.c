/*
 * test_tenancy.c - tenants, members and projects end to end: creation,
 * reading, changes, suspension, membership changes that take effect at the
 * next request, soft-deleted projects, and the audit event of every change.
 */
#include "tests/support/suite.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static void setup(void)
{
    harness_setup("tenancy", NULL);
    make_user("ann", "ann-password-1", NULL);
    make_user("ben", "ben-password-1", NULL);
}

static void teardown(void)
{
    harness_teardown();
}

static int audit_events(const char *action, const char *resource_id, const char *tenant)
{
    const char *p[3] = {action, resource_id ? resource_id : "", tenant ? tenant : ""};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*) FROM audit_log WHERE action = $1"
                              " AND outcome = 'success' AND ($2 = '' OR resource_id = $2)"
                              " AND ($3 = '' OR tenant_slug = $3)",
                              3, p);
    ck_assert_ptr_nonnull(r);
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

START_TEST(tenant_lifecycle)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants", harness_srv.admin_token,
                          "{\"slug\":\"chem\",\"name\":\"化学学院\"}", &r),
                     201);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "slug")), "chem");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "name")), "化学学院");
    ck_assert(json_is_false(json_object_get(r.json, "suspended")));
    ck_assert(json_is_string(json_object_get(r.json, "id")));
    ck_assert(json_is_string(json_object_get(r.json, "created_at")));
    char *loc = http_header(&r, "Location");
    ck_assert_str_eq(loc, "/api/v1/tenants/chem");
    free(loc);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants", harness_srv.admin_token,
                          "{\"slug\":\"chem\",\"name\":\"again\"}", &r),
                     409);
    expect_problem(&r, "tenant.slug_taken", "tenant", "chem");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "detail")),
                     "tenant slug \"chem\" is taken (by a tenant, or by a deleted one: slugs are "
                     "never reused)");
    http_res_free(&r);
    ck_assert_int_eq(reqj("PATCH", "/api/v1/tenants/chem", harness_srv.admin_token,
                          "{\"name\":\"Chemistry\"}", &r),
                     200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "name")), "Chemistry");
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem", harness_srv.admin_token, NULL, &r), 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "name")), "Chemistry");
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/no-such", harness_srv.admin_token, NULL), 404);
    ck_assert_int_eq(audit_events("tenant.create", "chem", NULL), 1);
    ck_assert_int_eq(audit_events("tenant.update", "chem", "chem"), 1);
}
END_TEST

/* Deleting waits for a second admin (test_approvals.c approves it): nothing goes yet. */
START_TEST(tenant_delete_waits_for_approval_and_deletes_nothing)
{
    make_tenant("keepme");
    struct http_res r;
    ck_assert_int_eq(reqj("DELETE", "/api/v1/tenants/keepme", harness_srv.admin_token, NULL, &r),
                     202);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(r.json, "approval"), "state")),
        "pending");
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/keepme", harness_srv.admin_token, NULL), 200);
    ck_assert_int_eq(audit_events("tenant.delete", NULL, NULL), 0);
    ck_assert_int_eq(audit_events("approval.request", NULL, NULL), 1);
}
END_TEST

START_TEST(membership_changes_apply_at_the_next_request)
{
    make_tenant("bio");
    make_member("bio", "ann", "viewer");
    char *ann = login("ann", "ann-password-1");
    const char *proj = "{\"slug\":\"genomes\",\"name\":\"Genomes\"}";
    ck_assert_int_eq(req("GET", "/api/v1/tenants/bio/projects", ann, NULL), 200);
    ck_assert_int_eq(req("POST", "/api/v1/tenants/bio/projects", ann, proj), 403);
    struct http_res r;
    ck_assert_int_eq(reqj("PUT", "/api/v1/tenants/bio/members/ann", harness_srv.admin_token,
                          "{\"role\":\"tenant_admin\"}", &r),
                     200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "role")), "tenant_admin");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "username")), "ann");
    http_res_free(&r);
    /* the same session, promoted */
    ck_assert_int_eq(req("POST", "/api/v1/tenants/bio/projects", ann, proj), 201);
    /* a tenant admin manages members */
    ck_assert_int_eq(req("PUT", "/api/v1/tenants/bio/members/ben", ann, "{\"role\":\"member\"}"),
                     200);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/bio/members", ann, NULL, &r), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 2);
    http_res_free(&r);
    ck_assert_int_eq(reqj("PUT", "/api/v1/tenants/bio/members/nobody", ann,
                          "{\"role\":\"member\"}", &r),
                     404);
    expect_problem(&r, "user.not_found", "username", "nobody");
    http_res_free(&r);
    /* the tenant's name and suspension are the platform's */
    ck_assert_int_eq(reqj("PATCH", "/api/v1/tenants/bio", ann, "{\"name\":\"Mine\"}", &r), 403);
    expect_problem(&r, "tenant.platform_admin_fields", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(req("PUT", "/api/v1/tenants/bio/members/ben", ann, "{\"role\":\"owner\"}"),
                     400);
    /* removed: the tenant disappears for ann at once */
    ck_assert_int_eq(req("DELETE", "/api/v1/tenants/bio/members/ann", harness_srv.admin_token,
                         NULL),
                     204);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/bio/projects", ann, NULL), 404);
    ck_assert_int_eq(reqj("DELETE", "/api/v1/tenants/bio/members/ann", harness_srv.admin_token,
                          NULL, &r),
                     404);
    expect_problem(&r, "tenant.member_not_found", "username", "ann");
    expect_problem(&r, "tenant.member_not_found", "tenant", "bio");
    http_res_free(&r);
    ck_assert_int_eq(audit_events("member.put", "ann", "bio"), 2);
    ck_assert_int_eq(audit_events("member.delete", "ann", "bio"), 1);
    free(ann);
}
END_TEST

START_TEST(suspended_tenant_is_locked_for_its_members)
{
    make_tenant("geo");
    make_member("geo", "ben", "tenant_admin");
    make_project("geo", "maps");
    char *ben = login("ben", "ben-password-1");
    char *tok = make_token(ben, "[\"admin\"]", "geo");
    ck_assert_int_eq(req("GET", "/api/v1/tenants/geo/projects/maps", ben, NULL), 200);
    struct http_res r;
    ck_assert_int_eq(reqj("PATCH", "/api/v1/tenants/geo", harness_srv.admin_token,
                          "{\"suspended\":true}", &r),
                     200);
    ck_assert(json_is_true(json_object_get(r.json, "suspended")));
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/geo/projects/maps", ben, NULL, &r), 403);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(r.json, "detail")), "suspended"));
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 403); /* the tenant's token stops */
    ck_assert_int_eq(req("GET", "/api/v1/me", ben, NULL), 200); /* the person is still there */
    ck_assert_int_eq(req("GET", "/api/v1/tenants/geo/projects/maps", harness_srv.admin_token, NULL),
                     200);
    ck_assert_int_eq(req("PATCH", "/api/v1/tenants/geo", harness_srv.admin_token,
                         "{\"suspended\":false}"),
                     200);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/geo/projects/maps", ben, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 200);
    free(ben);
    free(tok);
}
END_TEST

START_TEST(project_lifecycle)
{
    make_tenant("astro");
    make_tenant("astro2");
    struct http_res r;
    const char *body = "{\"slug\":\"telescope\",\"name\":\"Telescope\",\"description\":\"望远镜\"}";
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/astro/projects", harness_srv.admin_token, body,
                          &r),
                     201);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "tenant")), "astro");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "description")), "望远镜");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "created_by")), ADMIN_USER);
    char *id = strdup(json_string_value(json_object_get(r.json, "id")));
    char *loc = http_header(&r, "Location");
    ck_assert_str_eq(loc, "/api/v1/tenants/astro/projects/telescope");
    free(loc);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/astro/projects", harness_srv.admin_token, body,
                          &r),
                     409);
    expect_problem(&r, "project.exists", "project", "telescope");
    expect_problem(&r, "project.exists", "tenant", "astro");
    http_res_free(&r);
    /* the same slug in another tenant is another project */
    ck_assert_int_eq(req("POST", "/api/v1/tenants/astro2/projects", harness_srv.admin_token, body),
                     201);
    ck_assert_int_eq(reqj("PATCH", "/api/v1/tenants/astro/projects/telescope",
                          harness_srv.admin_token, "{\"description\":\"\"}", &r),
                     200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "description")), "");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "name")), "Telescope");
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", "/api/v1/tenants/astro/projects/telescope",
                         harness_srv.admin_token, NULL),
                     204);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/astro/projects/telescope",
                          harness_srv.admin_token, NULL, &r),
                     404);
    expect_problem(&r, "project.not_found", "project", "telescope");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "detail")),
                     "project \"telescope\" not found in tenant \"astro\"");
    http_res_free(&r);
    ck_assert_int_eq(req("PATCH", "/api/v1/tenants/astro/projects/telescope",
                         harness_srv.admin_token, "{\"name\":\"x\"}"),
                     404);
    ck_assert_int_eq(req("DELETE", "/api/v1/tenants/astro/projects/telescope",
                         harness_srv.admin_token, NULL),
                     404);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/astro/projects", harness_srv.admin_token, NULL,
                          &r),
                     200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    http_res_free(&r);
    /* the slug is free again; the deleted project is kept for history */
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/astro/projects", harness_srv.admin_token, body,
                          &r),
                     201);
    ck_assert_str_ne(json_string_value(json_object_get(r.json, "id")), id);
    http_res_free(&r);
    const char *p[1] = {id};
    PGresult *q = harness_sql(harness_srv.owner_url,
                              "SELECT deleted_at IS NOT NULL FROM projects WHERE id = $1", 1, p);
    ck_assert_str_eq(PQgetvalue(q, 0, 0), "t");
    PQclear(q);
    ck_assert_int_eq(audit_events("project.create", id, "astro"), 1);
    ck_assert_int_eq(audit_events("project.delete", id, "astro"), 1);
    free(id);
}
END_TEST

START_TEST(a_refused_change_leaves_no_event)
{
    make_tenant("dup");
    int before = audit_events("tenant.create", NULL, NULL);
    ck_assert_int_eq(req("POST", "/api/v1/tenants", harness_srv.admin_token,
                         "{\"slug\":\"dup\",\"name\":\"x\"}"),
                     409);
    ck_assert_int_eq(audit_events("tenant.create", NULL, NULL), before);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("tenancy");
    TCase *tc = tcase_create("tenancy");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tenant_lifecycle);
    tcase_add_test(tc, tenant_delete_waits_for_approval_and_deletes_nothing);
    tcase_add_test(tc, membership_changes_apply_at_the_next_request);
    tcase_add_test(tc, suspended_tenant_is_locked_for_its_members);
    tcase_add_test(tc, project_lifecycle);
    tcase_add_test(tc, a_refused_change_leaves_no_event);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
