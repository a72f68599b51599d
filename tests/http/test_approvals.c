/*
 * test_approvals.c - dual approval end to end: the sensitive operations
 * (deleting a tenant, raising a guarantee by more than the threshold,
 * granting a global role) answer 202 and change nothing; self-approval is
 * refused (403, audited as denied); another platform admin's approval runs
 * the operation exactly once - also when two approve at the same moment -
 * and its audit event names both people; reject, withdraw, expiry; a
 * deleted tenant vanishes from lists and lookups but its rows stay; an
 * operation that fails when approved still decides the approval; so does
 * one whose requester is no longer allowed it (role taken, disabled).
 *
 * Runs with AIDC_APPROVAL_TTL_HOURS=1 and AIDC_APPROVAL_QUOTA_THRESHOLD=2;
 * the tests share one server (each works on tenants and users of its own).
 * Audit events and kept rows are read from the database as its owner.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *pa2; /* a second platform admin's JWT */

static void setup(void)
{
    static const char *const env[] = {"AIDC_APPROVAL_TTL_HOURS=1",
                                      "AIDC_APPROVAL_QUOTA_THRESHOLD=2", NULL};
    harness_setup("approvals", env);
    make_user("pa2", "pa2-password-1", "[\"platform_admin\"]");
    make_user("ann", "ann-password-1", NULL);
    pa2 = login("pa2", "pa2-password-1");
    ck_assert_ptr_nonnull(pa2);
}

static void teardown(void)
{
    free(pa2);
    pa2 = NULL;
    harness_teardown();
}

#define ADM harness_srv.admin_token

/* method path as token must answer 202 with a pending approval; its id (malloc'd). */
static char *ask(const char *method, const char *path, const char *token, const char *body)
{
    struct http_res r;
    long st = reqj(method, path, token, body, &r);
    ck_assert_msg(st == 202, "%s %s answered %ld: %s", method, path, st, r.body ? r.body : "");
    json_t *ap = json_object_get(r.json, "approval");
    ck_assert_str_eq(jstr(ap, "state"), "pending");
    ck_assert_str_eq(jstr(json_object_get(ap, "operation"), "method"), method);
    ck_assert_str_eq(jstr(json_object_get(ap, "operation"), "path"), path);
    char *id = strdup(jstr(ap, "id"));
    char *loc = http_header(&r, "Location");
    if (loc) /* the operation's own Location when it created something (a user) */
        ck_assert(strstr(loc, "/api/v1/") == loc);
    free(loc);
    http_res_free(&r);
    return id;
}

/* POST .../approve or .../reject; the answer goes to out (NULL: freed). */
static long decide(const char *id, const char *how, const char *token, const char *body,
                   struct http_res *out)
{
    struct http_res r;
    long st = reqj("POST", fmt("/api/v1/approvals/%s/%s", id, how), token, body, &r);
    if (st >= 500 || !r.json)
        fprintf(stderr, "%s %s: %ld %s\n", how, id, st, r.body ? r.body : "");
    if (out)
        *out = r;
    else
        http_res_free(&r);
    return st;
}

/* One number from SQL run as the owner (params: up to 2 texts). */
static long sql_count(const char *sql, const char *p1, const char *p2)
{
    const char *p[2] = {p1, p2};
    PGresult *r = harness_sql(harness_srv.owner_url, sql, p2 ? 2 : (p1 ? 1 : 0), p);
    ck_assert_ptr_nonnull(r);
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

/* Audit events of action with outcome about `about`: a resource id or a tenant slug. */
static long events(const char *action, const char *outcome, const char *about)
{
    const char *p[3] = {action, outcome, about};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*) FROM audit_log WHERE action = $1"
                              " AND outcome = $2 AND (resource_id = $3 OR tenant_slug = $3)",
                              3, p);
    ck_assert_ptr_nonnull(r);
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

/* Whether GET path (a list, as the admin) has an item with this id. */
static bool listed(const char *path, const char *id)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", path, ADM, NULL, &r), 200);
    bool found = false;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(r.json, "items"), i, it) found |=
        strcmp(jstr(it, "id"), id) == 0;
    http_res_free(&r);
    return found;
}

START_TEST(self_approval_is_refused_and_a_second_request_finds_the_first)
{
    make_tenant("keep");
    char *id = ask("DELETE", "/api/v1/tenants/keep", ADM, NULL);
    /* asking again finds the pending request instead of adding one */
    char *again = ask("DELETE", "/api/v1/tenants/keep", pa2, NULL);
    ck_assert_str_eq(again, id);
    free(again);
    struct http_res r;
    ck_assert_int_eq(decide(id, "approve", ADM, NULL, &r), 403);
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "detail"), "another platform admin"));
    ck_assert_str_eq(jstr(r.json, "code"), "approval.own_request");
    ck_assert_str_eq(jstr(json_object_get(r.json, "params"), "id"), id);
    http_res_free(&r);
    ck_assert_int_eq(events("approval.approve", "denied", id), 1);
    ck_assert_int_eq(events("approval.request", "success", id), 2);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/keep", ADM, NULL), 200);
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/approvals/%s", id), ADM, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "pending");
    ck_assert_str_eq(jstr(r.json, "requested_by"), ADMIN_USER);
    ck_assert(json_is_null(json_object_get(r.json, "decided_by")));
    http_res_free(&r);
    free(id);
}
END_TEST

/* Tenant "gone": project "held" whose quota admits no job, member ann, a queued job. */
static char *gone_with_a_queued_job(char **ann_token, char **ann_tenant_token)
{
    jobs_local_cluster("{\"a100\":1}");
    make_tenant("gone");
    make_project("gone", "held");
    jobs_project_quota("gone", "held", "{\"jobs\":{\"limit\":0}}");
    make_member("gone", "ann", "member");
    *ann_token = login("ann", "ann-password-1");
    *ann_tenant_token = make_token(*ann_token, "[\"jobs:read\"]", "gone");
    return jobs_submit(ADM, "gone", "{\"project\":\"held\",\"name\":\"q\",\"command\":[\"true\"]}");
}

START_TEST(approved_tenant_deletion_runs_once_and_names_both)
{
    char *ann, *ann_tok;
    char *job = gone_with_a_queued_job(&ann, &ann_tok);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/gone", ann, NULL), 200);
    char *id = ask("DELETE", "/api/v1/tenants/gone", ADM, NULL);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/gone", ann, NULL), 200); /* not yet */

    struct http_res r;
    ck_assert_int_eq(decide(id, "approve", pa2, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "approved");
    ck_assert_str_eq(jstr(r.json, "requested_by"), ADMIN_USER);
    ck_assert_str_eq(jstr(r.json, "decided_by"), "pa2");
    ck_assert(json_is_string(json_object_get(r.json, "decided_at")));
    json_t *result = json_object_get(r.json, "result");
    ck_assert_int_eq(json_integer_value(json_object_get(result, "status")), 200);
    json_t *body = json_object_get(result, "body");
    ck_assert_int_eq(json_integer_value(json_object_get(body, "jobs_cancelled")), 1);
    ck_assert(json_is_string(json_object_get(body, "deleted_at")));
    http_res_free(&r);

    /* once: a second approval and a late rejection find it decided */
    ck_assert_int_eq(decide(id, "approve", pa2, NULL, &r), 409);
    ck_assert_str_eq(jstr(r.json, "code"), "approval.already_approved");
    ck_assert_str_eq(jstr(r.json, "detail"), fmt("approval %s is already approved", id));
    http_res_free(&r);
    ck_assert_int_eq(decide(id, "reject", ADM, "{}", NULL), 409);
    ck_assert_int_eq(events("tenant.delete", "success", "gone"), 1);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM audit_log WHERE action = 'tenant.delete'"
                               " AND actor_username = 'pa2' AND details->>'requested_by' = $1"
                               " AND details->>'approved_by' = 'pa2'"
                               " AND details->>'approval_id' = $2 AND tenant_slug = 'gone'",
                               ADMIN_USER, id),
                     1);
    ck_assert_int_eq(events("approval.approve", "success", id), 1);

    /* gone from every lookup and list, for everyone */
    ck_assert_int_eq(req("GET", "/api/v1/tenants/gone", ADM, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/gone/projects", ADM, NULL), 404);
    ck_assert_int_eq(req("DELETE", "/api/v1/tenants/gone", ADM, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/gone", ann, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/me", ann_tok, NULL), 403); /* its token stops */
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants?limit=1000", ADM, NULL, &r), 200);
    ck_assert_ptr_null(strstr(r.body, "\"gone\""));
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/me", ann, NULL, &r), 200);
    ck_assert_ptr_null(strstr(r.body, "\"gone\""));
    http_res_free(&r);
    /* ...but its rows stay, the job cancelled, and its slug stays taken */
    ck_assert_int_eq(sql_count("SELECT count(*) FROM tenants WHERE slug = 'gone'"
                               " AND deleted_at IS NOT NULL AND suspended",
                               NULL, NULL),
                     1);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM projects p JOIN tenants t ON t.id = "
                               "p.tenant_id WHERE t.slug = 'gone'",
                               NULL, NULL),
                     1);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM memberships m JOIN tenants t ON t.id = "
                               "m.tenant_id WHERE t.slug = 'gone'",
                               NULL, NULL),
                     1);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM jobs WHERE id = $1::uuid"
                               " AND state = 'cancelled' AND reason LIKE '%tenant deletion%'",
                               job, NULL),
                     1);
    ck_assert_int_eq(req("POST", "/api/v1/tenants", ADM, "{\"slug\":\"gone\",\"name\":\"again\"}"),
                     409);
    free(job);
    free(id);
    free(ann);
    free(ann_tok);
}
END_TEST

struct racer {
    const char *token;
    const char *id;
    long status;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    struct http_res res;
    r->status = http_do(&harness_srv, "POST", fmt("/api/v1/approvals/%s/approve", r->id), r->token,
                        NULL, NULL, &res);
    http_res_free(&res);
    return NULL;
}

START_TEST(two_approvers_at_once_run_it_once)
{
    make_user("pa3", "pa3-password-1", "[\"platform_admin\"]");
    char *pa3 = login("pa3", "pa3-password-1");
    make_tenant("race");
    char *id = ask("PUT", "/api/v1/tenants/race/quota", ADM,
                   "{\"resources\":{\"cpu\":{\"guaranteed\":10,\"limit\":20}}}");
    struct racer a = {pa2, id, 0}, b = {pa3, id, 0};
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, race, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, race, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_msg((a.status == 200 && b.status == 409) || (a.status == 409 && b.status == 200),
                  "the two approvals answered %ld and %ld", a.status, b.status);
    ck_assert_int_eq(events("quota.update", "success", "race"), 1);
    ck_assert_int_eq(events("approval.approve", "success", id), 1);
    free(id);
    free(pa3);
}
END_TEST

START_TEST(reject_and_withdraw)
{
    make_tenant("stay");
    char *id = ask("DELETE", "/api/v1/tenants/stay", ADM, NULL);
    struct http_res r;
    char *long_reason = malloc(1100);
    memset(long_reason, 'x', 1001);
    long_reason[1001] = '\0';
    ck_assert_int_eq(decide(id, "reject", pa2, fmt("{\"reason\":\"%s\"}", long_reason), NULL), 400);
    free(long_reason);
    ck_assert_int_eq(decide(id, "reject", pa2, "{\"reason\":\"still in use\",\"x\":1}", NULL), 400);
    ck_assert_int_eq(decide(id, "reject", pa2, "{\"reason\":\"still in use\"}", &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "rejected");
    ck_assert_str_eq(jstr(r.json, "reason"), "still in use");
    ck_assert_str_eq(jstr(r.json, "decided_by"), "pa2");
    ck_assert(json_is_null(json_object_get(r.json, "result")));
    http_res_free(&r);
    ck_assert_int_eq(decide(id, "approve", pa2, NULL, NULL), 409);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/stay", ADM, NULL), 200);
    ck_assert_int_eq(events("tenant.delete", "success", "stay"), 0);
    free(id);

    /* the requester withdraws its own */
    id = ask("DELETE", "/api/v1/tenants/stay", ADM, NULL);
    ck_assert_int_eq(decide(id, "reject", ADM, "{}", &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "rejected");
    ck_assert_str_eq(jstr(r.json, "decided_by"), ADMIN_USER);
    http_res_free(&r);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM audit_log WHERE action = 'approval.reject'"
                               " AND resource_id = $1 AND details->>'withdrawn' = 'true'",
                               id, NULL),
                     1);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/stay", ADM, NULL), 200);
    free(id);
}
END_TEST

START_TEST(an_expired_request_cannot_be_decided)
{
    make_tenant("slow");
    char *id = ask("DELETE", "/api/v1/tenants/slow", ADM, NULL);
    /* AIDC_APPROVAL_TTL_HOURS=1 */
    ck_assert_int_eq(sql_count("SELECT extract(epoch FROM expires_at - created_at)::int"
                               " FROM approvals WHERE id = $1::uuid",
                               id, NULL),
                     3600);
    /* an hour passes */
    PQclear(harness_sql(harness_srv.owner_url,
                        "UPDATE approvals SET expires_at = now() - interval '1 minute',"
                        " created_at = now() - interval '61 minutes' WHERE id = $1::uuid",
                        1, (const char *const[]){id}));
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/approvals/%s", id), ADM, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "expired");
    http_res_free(&r);
    ck_assert(listed("/api/v1/approvals?state=expired&limit=1000", id));
    ck_assert(!listed("/api/v1/approvals?state=pending&limit=1000", id));
    ck_assert_int_eq(decide(id, "approve", pa2, NULL, &r), 409);
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "detail"), "expired"));
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "code"), "expired")); /* approval.(already_)expired */
    http_res_free(&r);
    ck_assert_int_eq(decide(id, "reject", ADM, "{}", NULL), 409);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/slow", ADM, NULL), 200);
    /* asking again is a new request; the old one is now marked expired */
    char *again = ask("DELETE", "/api/v1/tenants/slow", ADM, NULL);
    ck_assert_str_ne(again, id);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM approvals WHERE id = $1::uuid"
                               " AND state = 'expired' AND decided_by IS NULL",
                               id, NULL),
                     1);
    free(again);
    free(id);
}
END_TEST

static double guaranteed(const char *tenant, const char *res)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/%s/quota", tenant), ADM, NULL, &r), 200);
    json_t *g =
        json_object_get(json_object_get(json_object_get(r.json, "resources"), res), "guaranteed");
    double v = json_number_value(g);
    http_res_free(&r);
    return v;
}

START_TEST(raising_a_guarantee_past_the_threshold_waits)
{
    make_tenant("qq");
    const char *path = "/api/v1/tenants/qq/quota";
    /* threshold 2: a raise by 2 is not "more than" it */
    ck_assert_int_eq(
        req("PUT", path, ADM, "{\"resources\":{\"cpu\":{\"guaranteed\":2,\"limit\":8}}}"), 200);
    char *id = ask("PUT", path, ADM, "{\"resources\":{\"cpu\":{\"guaranteed\":5,\"limit\":8}}}");
    ck_assert(guaranteed("qq", "cpu") == 2);
    /* lowering, and a raise of another resource within the threshold, never wait */
    ck_assert_int_eq(req("PUT", path, ADM,
                         "{\"resources\":{\"cpu\":{\"guaranteed\":1,\"limit\":8},"
                         "\"memory_gib\":{\"guaranteed\":2,\"limit\":4}}}"),
                     200);
    ck_assert(guaranteed("qq", "cpu") == 1);
    /* invalid bodies are refused at once, not stored for approval */
    ck_assert_int_eq(
        req("PUT", path, ADM, "{\"resources\":{\"cpu\":{\"guaranteed\":50,\"limit\":8}}}"), 400);
    struct http_res r;
    ck_assert_int_eq(decide(id, "approve", pa2, NULL, &r), 200);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(r.json, "result"), "status")), 200);
    http_res_free(&r);
    ck_assert(guaranteed("qq", "cpu") == 5);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM audit_log WHERE action = 'quota.update'"
                               " AND details->>'approved_by' = 'pa2' AND outcome = 'success'"
                               " AND tenant_slug = 'qq'",
                               NULL, NULL),
                     1);
    free(id);
}
END_TEST

START_TEST(an_operation_that_fails_when_approved_still_decides_it)
{
    make_tenant("brief");
    char *quota = ask("PUT", "/api/v1/tenants/brief/quota", ADM,
                      "{\"resources\":{\"cpu\":{\"guaranteed\":9,\"limit\":9}}}");
    char *del = ask("DELETE", "/api/v1/tenants/brief", ADM, NULL);
    ck_assert_int_eq(decide(del, "approve", pa2, NULL, NULL), 200);
    struct http_res r;
    ck_assert_int_eq(decide(quota, "approve", pa2, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "approved");
    json_t *result = json_object_get(r.json, "result");
    ck_assert_int_eq(json_integer_value(json_object_get(result, "status")), 404);
    ck_assert_ptr_nonnull(strstr(jstr(json_object_get(result, "body"), "detail"), "not found"));
    /* the operation's problem as the API would have answered it: its code and params */
    ck_assert_str_eq(jstr(json_object_get(result, "body"), "code"), "tenant.not_found");
    ck_assert_str_eq(jstr(json_object_get(json_object_get(result, "body"), "params"), "tenant"),
                     "brief");
    http_res_free(&r);
    ck_assert_int_eq(events("quota.update", "error", "brief"), 1);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM audit_log WHERE action = 'quota.update'"
                               " AND outcome = 'error' AND details->>'error_code' = $1"
                               " AND details->>'error' = $2",
                               "tenant.not_found", "tenant \"brief\" not found"),
                     1);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM tenant_quotas q JOIN tenants t"
                               " ON t.id = q.tenant_id WHERE t.slug = 'brief'",
                               NULL, NULL),
                     0);
    free(quota);
    free(del);
}
END_TEST

START_TEST(granting_a_global_role_waits)
{
    /* a new user with a role: created at once, the role waits */
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/users", ADM,
                          "{\"username\":\"carl\",\"password\":\"carl-password-1\","
                          "\"roles\":[\"auditor\"]}",
                          &r),
                     202);
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(r.json, "user"), "roles")), 0);
    json_t *ap = json_object_get(r.json, "approval");
    ck_assert_str_eq(jstr(json_object_get(ap, "operation"), "path"), "/api/v1/users/carl");
    ck_assert_ptr_null(strstr(r.body, "carl-password-1"));
    char *id = strdup(jstr(ap, "id"));
    http_res_free(&r);
    ck_assert_int_eq(
        sql_count("SELECT count(*) FROM approvals WHERE body::text LIKE '%password%'", NULL, NULL),
        0);
    char *carl = login("carl", "carl-password-1");
    ck_assert_int_eq(req("GET", "/api/v1/users", carl, NULL), 403);
    ck_assert_int_eq(decide(id, "approve", pa2, NULL, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/users", carl, NULL), 200); /* an auditor now */
    free(id);

    /* keeping or removing roles needs nobody; adding one does, password or not */
    ck_assert_int_eq(req("PATCH", "/api/v1/users/carl", ADM, "{\"roles\":[\"auditor\"]}"), 200);
    ck_assert_int_eq(req("PATCH", "/api/v1/users/carl", ADM, "{\"roles\":[]}"), 200);
    ck_assert_int_eq(req("GET", "/api/v1/users", carl, NULL), 403);
    ck_assert_int_eq(req("PATCH", "/api/v1/users/carl", ADM,
                         "{\"roles\":[\"finance\"],\"password\":\"carl-password-2\"}"),
                     400);
    id = ask("PATCH", "/api/v1/users/carl", ADM,
             "{\"roles\":[\"finance\"],\"display_name\":\"Carl\"}");
    ck_assert_int_eq(reqj("GET", "/api/v1/users/carl", ADM, NULL, &r), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "roles")), 0);
    ck_assert_str_ne(jstr(r.json, "display_name"), "Carl"); /* nothing of it yet */
    http_res_free(&r);
    ck_assert_int_eq(req("PATCH", "/api/v1/users/nobody", ADM, "{\"roles\":[\"finance\"]}"), 404);
    free(id);

    /* nobody grants themselves a role */
    id = ask("PATCH", "/api/v1/users/" ADMIN_USER, ADM,
             "{\"roles\":[\"platform_admin\",\"auditor\"]}");
    ck_assert_int_eq(decide(id, "approve", ADM, NULL, NULL), 403);
    ck_assert_int_eq(decide(id, "approve", pa2, NULL, NULL), 200);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM audit_log WHERE action = 'user.update'"
                               " AND resource_id = $1 AND details->>'approved_by' = 'pa2'",
                               ADMIN_USER, NULL),
                     1);
    free(id);
    free(carl);
}
END_TEST

/* The requester is authorized again when its operation runs: an admin whose role was
 * taken, or who was disabled, since it asked cannot have it done by someone else. */
START_TEST(a_requester_no_longer_allowed_cannot_have_it_run)
{
    make_user("pa4", "pa4-password-1", "[\"platform_admin\"]");
    make_user("pa5", "pa5-password-1", "[\"platform_admin\"]");
    char *pa4 = login("pa4", "pa4-password-1");
    char *pa5 = login("pa5", "pa5-password-1");
    make_tenant("prey");
    char *del = ask("DELETE", "/api/v1/tenants/prey", pa4, NULL);
    char *quota = ask("PUT", "/api/v1/tenants/prey/quota", pa5,
                      "{\"resources\":{\"cpu\":{\"guaranteed\":7,\"limit\":9}}}");
    /* taking a role and disabling need no approval */
    ck_assert_int_eq(req("PATCH", "/api/v1/users/pa4", ADM, "{\"roles\":[]}"), 200);
    ck_assert_int_eq(req("PATCH", "/api/v1/users/pa5", ADM, "{\"disabled\":true}"), 200);

    struct http_res r;
    ck_assert_int_eq(decide(del, "approve", pa2, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "approved"); /* decided, but it did not run */
    json_t *result = json_object_get(r.json, "result");
    ck_assert_int_eq(json_integer_value(json_object_get(result, "status")), 403);
    ck_assert_str_eq(jstr(json_object_get(result, "body"), "code"), "auth.role"); /* not a 404 */
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/prey", ADM, NULL), 200);
    ck_assert_int_eq(events("tenant.delete", "success", "prey"), 0);
    ck_assert_int_eq(events("tenant.delete", "error", "prey"), 1);

    ck_assert_int_eq(decide(quota, "approve", pa2, NULL, &r), 200);
    result = json_object_get(r.json, "result");
    ck_assert_int_eq(json_integer_value(json_object_get(result, "status")), 401);
    ck_assert_str_eq(jstr(json_object_get(result, "body"), "code"), "auth.user_disabled");
    http_res_free(&r);
    ck_assert_int_eq(sql_count("SELECT count(*) FROM tenant_quotas q JOIN tenants t"
                               " ON t.id = q.tenant_id WHERE t.slug = 'prey'",
                               NULL, NULL),
                     0);
    ck_assert_int_eq(events("quota.update", "error", "prey"), 1);
    free(del);
    free(quota);
    free(pa4);
    free(pa5);
}
END_TEST

START_TEST(listing_and_reading)
{
    make_tenant("l1");
    make_tenant("l2");
    make_tenant("l3");
    char *a = ask("DELETE", "/api/v1/tenants/l1", ADM, NULL);
    char *b = ask("DELETE", "/api/v1/tenants/l2", ADM, NULL);
    char *c = ask("DELETE", "/api/v1/tenants/l3", ADM, NULL);
    ck_assert_int_eq(decide(b, "reject", pa2, "{}", NULL), 200);
    struct http_res r;
    /* newest first, a page at a time */
    const char *want[] = {c, b, a};
    char cursor[512] = "";
    for (int i = 0; i < 3; i++) {
        const char *path = cursor[0] ? fmt("/api/v1/approvals?limit=1&cursor=%s", cursor)
                                     : "/api/v1/approvals?limit=1";
        ck_assert_int_eq(reqj("GET", path, pa2, NULL, &r), 200);
        json_t *items = json_object_get(r.json, "items");
        ck_assert_int_eq(json_array_size(items), 1);
        ck_assert_str_eq(jstr(json_array_get(items, 0), "id"), want[i]);
        const char *next = jstr(r.json, "next_cursor");
        ck_assert(next != NULL); /* older ones, of the tests before, follow */
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        http_res_free(&r);
    }
    const char *rejected = "/api/v1/approvals?state=rejected&limit=1000";
    const char *pending = "/api/v1/approvals?state=pending&limit=1000";
    ck_assert(listed(rejected, b) && !listed(rejected, a) && !listed(rejected, c));
    ck_assert(!listed(pending, b) && listed(pending, a) && listed(pending, c));
    ck_assert_int_eq(reqj("GET", "/api/v1/approvals?state=maybe", ADM, NULL, &r), 400);
    ck_assert_str_eq(jstr(r.json, "code"), "validation.one_of");
    ck_assert_str_eq(jstr(json_object_get(r.json, "params"), "allowed"),
                     "pending, approved, rejected, expired");
    ck_assert_str_eq(jstr(json_object_get(r.json, "params"), "field"), "state");
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/approvals/not-a-uuid", ADM, NULL), 400);
    ck_assert_int_eq(
        reqj("GET", "/api/v1/approvals/00000000-0000-4000-8000-000000000000", ADM, NULL, &r), 404);
    ck_assert_str_eq(jstr(r.json, "code"), "approval.not_found");
    ck_assert_str_eq(jstr(json_object_get(r.json, "params"), "id"),
                     "00000000-0000-4000-8000-000000000000");
    http_res_free(&r);
    ck_assert_int_eq(decide("00000000-0000-4000-8000-000000000000", "approve", pa2, NULL, NULL),
                     404);
    char *ann = login("ann", "ann-password-1");
    ck_assert_int_eq(req("GET", "/api/v1/approvals", ann, NULL), 403);
    ck_assert_int_eq(decide(a, "approve", ann, NULL, NULL), 403);
    free(ann);
    free(a);
    free(b);
    free(c);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("approvals");
    TCase *tc = tcase_create("approvals");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, self_approval_is_refused_and_a_second_request_finds_the_first);
    tcase_add_test(tc, approved_tenant_deletion_runs_once_and_names_both);
    tcase_add_test(tc, two_approvers_at_once_run_it_once);
    tcase_add_test(tc, reject_and_withdraw);
    tcase_add_test(tc, an_expired_request_cannot_be_decided);
    tcase_add_test(tc, raising_a_guarantee_past_the_threshold_waits);
    tcase_add_test(tc, an_operation_that_fails_when_approved_still_decides_it);
    tcase_add_test(tc, granting_a_global_role_waits);
    tcase_add_test(tc, a_requester_no_longer_allowed_cannot_have_it_run);
    tcase_add_test(tc, listing_and_reading);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
