/*
 * test_capacity.c - the cluster view (docs/efficiency.md): per GPU type the
 * total, in use, free and queued GPUs summed over every tenant, the earliest
 * start of a 1- and an 8-GPU job from the running jobs' time limits (null
 * when no inventory could ever hold it), readable by any signed-in user and
 * revealing no tenant's jobs; the per-node table for platform admins only.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static char *ann, *pia; /* chem member, phys member */

static void setup(void)
{
    harness_setup("capacity", jobs_fast_env);
    jobs_local_cluster("{\"a100\":4,\"t4\":2}");
    ann = jobs_tenant_member("chem", "mol",
                             "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4},"
                             "\"gpu:t4\":{\"guaranteed\":0,\"limit\":2}}",
                             "ann");
    pia = jobs_tenant_member("phys", "lab", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}", "pia");
    ck_assert(ann && pia);
}

static void teardown(void)
{
    free(ann);
    free(pia);
    jobs_stop_shims(10);
    harness_teardown();
}

/* The capacity item of gpu_type (new reference), as token sees it. */
static json_t *item(const char *token, const char *gpu_type)
{
    json_t *items = get_items("/api/v1/capacity", token);
    json_t *found = NULL;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) if (strcmp(jstr(it, "gpu_type"), gpu_type) == 0) found =
        json_incref(it);
    json_decref(items);
    ck_assert_msg(found, "no capacity item for %s", gpu_type);
    return found;
}

static double start_of(const json_t *it, const char *size)
{
    return jobs_ts(json_object_get(json_object_get(it, "earliest_start"), size));
}

START_TEST(totals_in_use_free_queued_and_earliest_starts)
{
    json_t *a = item(ann, "a100");
    ck_assert_int_eq(jint(a, "total"), 4);
    ck_assert_int_eq(jint(a, "in_use"), 0);
    ck_assert_int_eq(jint(a, "free"), 4);
    ck_assert_int_eq(jint(a, "queued_gpus"), 0);
    double now = jobs_now();
    ck_assert(start_of(a, "1") > now - 60 && start_of(a, "1") < now + 60); /* at once */
    ck_assert(json_is_null(json_object_get(json_object_get(a, "earliest_start"), "8")));
    json_decref(a);

    /* chem runs 3 a100 for 10 minutes, phys 1 for 30; phys queues 2 more */
    char *x = jobs_submit(ann, "chem",
                          "{\"project\":\"mol\",\"name\":\"x\",\"gpus\":3,"
                          "\"gpu_type\":\"a100\",\"time_limit_minutes\":10,"
                          "\"command\":[\"sleep\",\"300\"]}");
    char *y = jobs_submit(pia, "phys",
                          "{\"project\":\"lab\",\"name\":\"y\",\"gpus\":1,"
                          "\"gpu_type\":\"a100\",\"time_limit_minutes\":30,"
                          "\"command\":[\"sleep\",\"300\"]}");
    json_decref(jobs_wait(ann, "chem", x, "running", 30));
    json_decref(jobs_wait(pia, "phys", y, "running", 30));
    char *z = jobs_submit(pia, "phys",
                          "{\"project\":\"lab\",\"name\":\"z\",\"gpus\":2,"
                          "\"gpu_type\":\"a100\",\"command\":[\"true\"]}");
    json_decref(jobs_wait_seen(pia, "phys", z, 30));

    a = item(ann, "a100");
    ck_assert_int_eq(jint(a, "total"), 4);
    ck_assert_int_eq(jint(a, "in_use"), 4); /* phys's GPU too: sums over every tenant */
    ck_assert_int_eq(jint(a, "free"), 0);
    ck_assert_int_eq(jint(a, "queued_gpus"), 2);
    /* behind the 2 queued GPUs, one more comes when chem's 10-minute job ends */
    now = jobs_now();
    double s1 = start_of(a, "1");
    ck_assert_msg(s1 > now + 8 * 60 && s1 < now + 11 * 60, "1 GPU at %f (now %f)", s1, now);
    ck_assert(json_is_null(json_object_get(json_object_get(a, "earliest_start"), "8")));
    /* nothing of who runs what */
    ck_assert_int_eq((long long)json_object_size(a), 6);
    json_decref(a);
    json_t *t = item(pia, "t4");
    ck_assert_int_eq(jint(t, "total"), 2);
    ck_assert_int_eq(jint(t, "free"), 2);
    json_decref(t);

    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", x), ann, NULL), 202);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/phys/jobs/%s/cancel", y), pia, NULL), 202);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/phys/jobs/%s/cancel", z), pia, NULL), 202);
    free(x);
    free(y);
    free(z);
}
END_TEST

START_TEST(nodes_for_platform_admins_only)
{
    json_t *items = get_items("/api/v1/capacity/nodes", harness_srv.admin_token);
    ck_assert(json_array_size(items) >= 1);
    json_t *n = json_array_get(items, 0);
    ck_assert_str_eq(jstr(n, "cluster"), "local");
    ck_assert_ptr_nonnull(jstr(n, "node"));
    ck_assert(json_is_integer(json_object_get(n, "gpus")));
    ck_assert(json_is_boolean(json_object_get(n, "usable")));
    json_decref(items);
    ck_assert_int_eq(req("GET", "/api/v1/capacity/nodes", ann, NULL), 403);
    char *tad = make_member_login("chem", "tad", "tenant_admin");
    ck_assert_int_eq(req("GET", "/api/v1/capacity/nodes", tad, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/capacity", tad, NULL), 200);
    free(tad);
    ck_assert_int_eq(req("GET", "/api/v1/capacity", NULL, NULL), 401);
}
END_TEST

int main(void)
{
    harness_require_pg();
    jobs_reap_at_exit();
    Suite *s = suite_create("capacity");
    TCase *tc = tcase_create("capacity");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, totals_in_use_free_queued_and_earliest_starts);
    tcase_add_test(tc, nodes_for_platform_admins_only);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
