/*
 * test_token_node.c - API tokens bound to a node (a node agent's): only with
 * machine scopes, a valid host name, shown in the token list; such a token
 * writes audit records and GPU fault reports of its own node only - a batch
 * naming another host is refused whole (403, nothing stored), as is a fault
 * report or a resolve of another node. An unbound token is not limited.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODE "gpu-07"
#define FAULTS "/api/v1/clusters/local/gpu-faults"

static char *bound, *unbound; /* audit:ingest + gpu-faults:write, bound to NODE or not */

/* POST /tokens as the admin; the status, and the new token's secret in *secret when 201. */
static long create(const char *body, char **secret)
{
    struct http_res r;
    long st = reqj("POST", "/api/v1/tokens", harness_srv.admin_token, body, &r);
    if (secret)
        *secret = st == 201 ? strdup(json_string_value(json_object_get(r.json, "token"))) : NULL;
    http_res_free(&r);
    return st;
}

static void setup(void)
{
    harness_setup("tokennode", jobs_fast_env);
    jobs_admin_ok("POST", "/api/v1/clusters",
                  "{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":2},"
                  "\"node\":\"" NODE "\"}}",
                  201);
    ck_assert_int_eq(create("{\"name\":\"agent " NODE "\",\"scopes\":[\"audit:ingest\","
                            "\"gpu-faults:write\"],\"node\":\"" NODE "\"}",
                            &bound),
                     201);
    ck_assert_int_eq(create("{\"name\":\"central\",\"scopes\":[\"audit:ingest\","
                            "\"gpu-faults:write\"]}",
                            &unbound),
                     201);
}

static void teardown(void)
{
    free(bound);
    free(unbound);
    harness_teardown();
}

START_TEST(only_machine_tokens_are_bound_to_a_valid_node)
{
    ck_assert_int_eq(create("{\"name\":\"ci\",\"scopes\":[\"jobs:read\"],\"node\":\"" NODE "\"}",
                            NULL),
                     400);
    ck_assert_int_eq(create("{\"name\":\"mix\",\"scopes\":[\"audit:ingest\",\"admin\"],"
                            "\"node\":\"" NODE "\"}",
                            NULL),
                     400);
    ck_assert_int_eq(create("{\"name\":\"bad\",\"scopes\":[\"audit:ingest\"],\"node\":\"a b\"}",
                            NULL),
                     400);
    ck_assert_int_eq(create("{\"name\":\"bad\",\"scopes\":[\"audit:ingest\"],\"node\":\"\"}",
                            NULL),
                     400);
    ck_assert_int_eq(create("{\"name\":\"bad\",\"scopes\":[\"audit:ingest\"],\"node\":7}", NULL),
                     400);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tokens", harness_srv.admin_token, NULL, &r), 200);
    int seen_bound = 0, seen_unbound = 0;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(r.json, "items"), i, t) {
        const char *node = json_string_value(json_object_get(t, "node"));
        seen_bound += node && strcmp(node, NODE) == 0;
        seen_unbound += json_is_null(json_object_get(t, "node"));
    }
    http_res_free(&r);
    ck_assert_int_eq(seen_bound, 1);
    ck_assert_int_ge(seen_unbound, 1);
}
END_TEST

/* One command record of host as NDJSON (an id of its own each time). */
static const char *record(const char *host)
{
    static int n;
    char ts[32];
    time_t now = time(NULL) - 60;
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    return fmt("{\"ts\":\"%s\",\"host\":\"%s\",\"user\":\"alice\",\"uid\":1000,\"session\":\"s\","
               "\"cwd\":\"/\",\"command\":\"make\",\"exit_code\":0,\"record_id\":\"r%d\"}\n",
               ts, host, ++n);
}

static long ingest(const char *token, const char *body, struct http_res *r)
{
    return http_raw(&harness_srv, "POST", "/api/v1/audit/commands", token, "application/x-ndjson",
                    body, strlen(body), NULL, r);
}

static long stored(const char *host)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/audit/commands?host=%s&limit=100", host),
                          harness_srv.admin_token, NULL, &r),
                     200);
    long n = (long)json_array_size(json_object_get(r.json, "items"));
    http_res_free(&r);
    return n;
}

START_TEST(a_bound_token_writes_only_its_nodes_records)
{
    struct http_res r;
    ck_assert_int_eq(ingest(bound, record(NODE), &r), 202);
    http_res_free(&r);
    /* one record of another host refuses the whole batch, naming it */
    char body[2048];
    snprintf(body, sizeof body, "%s%s", record(NODE), record("gpu-08"));
    ck_assert_int_eq(ingest(bound, body, &r), 403);
    ck_assert_msg(r.body && strstr(r.body, "record 2 names host \\\"gpu-08\\\""), "%s", r.body);
    http_res_free(&r);
    ck_assert_int_eq(stored(NODE), 1);
    ck_assert_int_eq(stored("gpu-08"), 0);
    /* the same batch with an unbound token */
    ck_assert_int_eq(ingest(unbound, body, &r), 202);
    http_res_free(&r);
    ck_assert_int_eq(stored(NODE), 2);
    ck_assert_int_eq(stored("gpu-08"), 1);
}
END_TEST

START_TEST(a_bound_token_reports_and_resolves_only_its_nodes_faults)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", FAULTS, bound, "{\"node\":\"gpu-08\",\"gpus\":[0],\"reason\":\"x\"}",
                          &r),
                     403);
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", FAULTS "/gpu-08", bound, NULL), 403);
    ck_assert_int_eq(reqj("POST", FAULTS, bound,
                          "{\"node\":\"" NODE "\",\"gpus\":[0],\"reason\":\"XID 79\"}", &r),
                     201);
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", FAULTS "/" NODE, bound, NULL), 200);
    /* the unbound token is not limited (an unknown node is merely ignored) */
    ck_assert_int_ne(reqj("POST", FAULTS, unbound,
                          "{\"node\":\"gpu-08\",\"gpus\":[0],\"reason\":\"x\"}", &r),
                     403);
    http_res_free(&r);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("token_node");
    TCase *tc = tcase_create("token_node");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, only_machine_tokens_are_bound_to_a_valid_node);
    tcase_add_test(tc, a_bound_token_writes_only_its_nodes_records);
    tcase_add_test(tc, a_bound_token_reports_and_resolves_only_its_nodes_faults);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
