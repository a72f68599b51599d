/*
 * test_round_trips.c - how often a hot request waits for the database, as
 * the access log counts it (db_round_trips): a submit three times (its reads
 * sent ahead in one round trip, the insert, the audit event with the commit),
 * an authenticated read of a project once. A change that adds a round trip
 * to these paths fails here before it shows in a benchmark.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUBMIT                                                                                     \
    "{\"project\":\"held\",\"name\":\"rt\",\"gpus\":1,\"gpu_type\":\"a100\",\"script\":\"true\"}"

static char *ann; /* a member of tenant rt */

/* one HTTP thread and one write thread: the first request on a thread loads the
 * actor into the thread's cache, and every request after it meets the cache warm */
static const char *const env[] = {"AIDC_THREADS=1", "AIDC_WRITE_THREADS=1", NULL};

static void setup(void)
{
    harness_setup("roundtrips", env);
    jobs_local_cluster("{\"a100\":2}");
    ann = jobs_tenant_member("rt", "held", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":2}}", "ann");
    jobs_project_quota("rt", "held", "{\"jobs\":{\"limit\":0}}"); /* queued, never run */
}

static void teardown(void)
{
    free(ann);
    harness_teardown();
}

/* Send a request as token with X-Request-Id rid; its status. The answer must hold
 * `holds` (NULL: anything). */
static long send_tagged(const char *token, const char *method, const char *path, const char *body,
                        const char *rid, const char *holds)
{
    char hdr[96];
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", rid);
    const char *extra[] = {hdr, NULL};
    struct http_res r;
    long st = http_do(&harness_srv, method, path, token, body, extra, &r);
    if (holds)
        ck_assert_ptr_nonnull(r.body ? strstr(r.body, holds) : NULL);
    http_res_free(&r);
    return st;
}

/* The request's db_round_trips from its access line; -1 when the line has none. */
static long trips_of(const char *rid)
{
    json_t *j = harness_access_line(rid);
    ck_assert_msg(j != NULL, "no access line for %s", rid);
    json_t *t = json_object_get(j, "db_round_trips");
    long n = json_is_integer(t) ? (long)json_integer_value(t) : -1;
    json_decref(j);
    return n;
}

/*
 * Send method path (body) times, each answered status and waiting want times for the
 * database. The first request a thread serves may wait once more: the credential's
 * lookup, whose actor the thread then remembers (server/authcache.c). A connection's
 * first statements are prepared in the round trips that use them.
 */
static void expect_round_trips(const char *method, const char *path, const char *body, long status,
                               int times, long want)
{
    for (int i = 0; i < times; i++) {
        char rid[48];
        snprintf(rid, sizeof rid, "rt-%s-%d", method, i);
        ck_assert_int_eq(send_tagged(ann, method, path, body, rid, NULL), status);
        long n = trips_of(rid);
        ck_assert_msg(n == want || (i == 0 && n == want + 1), "%s %s #%d: %ld round trips", method,
                      path, i, n);
    }
}

START_TEST(a_submit_waits_for_the_database_three_times)
{
    expect_round_trips("POST", "/api/v1/tenants/rt/jobs", SUBMIT, 201, 12, 3);
}
END_TEST

START_TEST(a_read_waits_once)
{
    expect_round_trips("GET", "/api/v1/tenants/rt/projects/held", NULL, 200, 6, 1);
    /* a request no route serves never reached the database: no count at all */
    ck_assert_int_eq(send_tagged(ann, "GET", "/api/v1/no-such-thing", NULL, "rt-unmatched", NULL),
                     404);
    ck_assert_int_eq(trips_of("rt-unmatched"), -1);
}
END_TEST

/*
 * A streamed export reads its pages after the handler returned: they count too. The
 * second export meets the admin's actor in the thread's cache: its start is two
 * round trips (the context and the export's clock), each page one or two more.
 */
START_TEST(an_export_counts_the_pages_it_streams)
{
    for (int i = 0; i < 2; i++) {
        char rid[32];
        snprintf(rid, sizeof rid, "rt-export-%d", i);
        ck_assert_int_eq(send_tagged(harness_srv.admin_token, "GET", "/api/v1/audit/events/export",
                                     NULL, rid, "\"export\""),
                         200);
        if (i == 1)
            ck_assert_int_ge(trips_of(rid), 3); /* 2 when the pages go uncounted */
    }
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("round_trips");
    TCase *tc = tcase_create("round_trips");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_submit_waits_for_the_database_three_times);
    tcase_add_test(tc, a_read_waits_once);
    tcase_add_test(tc, an_export_counts_the_pages_it_streams);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
