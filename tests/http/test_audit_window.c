/*
 * test_audit_window.c - the time window of audit searches, against the real
 * aidcd and PostgreSQL: without from and to a search covers the last 30 days
 * and says so in its answer ("window"); an explicit from or to reaches older
 * events; whatever the window, the answer is newest first and its pages
 * visit every match once, across the time steps the search reads in
 * (0028_audit_search_window.sql); refused events are found by an action
 * prefix and their outcome.
 *
 * Five events (resource type "probe": the searches, audited themselves, name
 * the word too), 1 hour to 120 days old, are written as the owner before aidcd
 * starts (so that the sealer chains them in order), in monthly partitions
 * made for them.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AUD_USER "winaud"
#define AUD_PW   "auditor-password-1"

static char aud[1024]; /* JWT of the auditor */

/* The events: age, action and outcome; resource_id "win<n>" (n from 1, newest first). */
static const struct {
    const char *age, *action, *outcome;
} EV[] = {
    {"1 hour", "winprobe.read", "success"},   {"3 days", "winprobe.write", "denied"},
    {"20 days", "winprobe.read", "success"},  {"50 days", "winprobe.write", "denied"},
    {"120 days", "winprobe.read", "success"},
};
#define NEV (sizeof EV / sizeof EV[0])

static void setup(void)
{
    harness_require_pg();
    const char *env[] = {"AIDC_AUDIT_SEAL_GRACE_MS=0", NULL};
    harness_db_create(&harness_srv, "auditwin");
    PGresult *r =
        harness_sql(harness_srv.owner_url,
                    "SELECT aidc_audit_partitions(now() - interval '130 days', 3)", 0, NULL);
    if (!r)
        audittest_setup_fail("cannot make the old partitions");
    PQclear(r);
    for (size_t i = 0; i < NEV; i++) {
        char n[8];
        snprintf(n, sizeof n, "%zu", i + 1);
        const char *p[4] = {EV[i].age, EV[i].action, EV[i].outcome, n};
        r = harness_sql(harness_srv.owner_url,
                        "INSERT INTO audit_events (ts, actor_username, actor_roles, action,"
                        " resource_type, resource_id, outcome, status, details)"
                        " VALUES (now() - $1::interval, 'legacy', '{admin}', $2, 'probe',"
                        " 'win' || $4, $3, 200, jsonb_build_object('note', 'winmark', 'n', $4))",
                        4, p);
        if (!r || strcmp(PQcmdTuples(r), "1") != 0)
            audittest_setup_fail("cannot write the old events");
        PQclear(r);
    }
    if (harness_server_start(&harness_srv, env) != 0)
        audittest_setup_fail("aidcd did not start");
    if (!harness_login_admin())
        audittest_setup_fail("cannot log in");
    audittest_auditor(AUD_USER, AUD_PW, aud, sizeof aud);
}

static void teardown(void)
{
    harness_teardown();
}

/* RFC 3339 of now - days (UTC, whole seconds) in a static buffer. */
static const char *days_ago(int days)
{
    static char buf[32];
    time_t t = time(NULL) - (time_t)days * 86400;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/* GET path as the auditor: 200 and its body (a new reference). */
static json_t *search(const char *path)
{
    struct http_res r;
    long st = reqj("GET", path, aud, NULL, &r);
    ck_assert_msg(st == 200, "GET %s answered %ld: %s", path, st, r.body);
    json_t *body = json_incref(r.json);
    http_res_free(&r);
    return body;
}

/* The resource ids of items joined by commas ("win1,win3"). */
static const char *ids(const json_t *items)
{
    static char buf[256];
    buf[0] = '\0';
    size_t i;
    json_t *ev;
    json_array_foreach(items, i, ev)
    {
        const char *id = jstr(json_object_get(ev, "resource"), "id");
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "", id ? id : "?");
    }
    return buf;
}

/* The window of an answer: from (or NULL), to (or NULL), default. */
static void window_is(const json_t *body, const char *from, const char *to, bool is_default)
{
    const json_t *w = json_object_get(body, "window");
    ck_assert_msg(json_is_object(w), "no window in the answer");
    ck_assert(json_is_boolean(json_object_get(w, "default")));
    ck_assert_int_eq(json_is_true(json_object_get(w, "default")), is_default);
    const json_t *f = json_object_get(w, "from"), *t = json_object_get(w, "to");
    if (from)
        ck_assert_str_eq(json_string_value(f), from);
    if (!to)
        ck_assert(json_is_null(t));
    else
        ck_assert_str_eq(json_string_value(t), to);
}

START_TEST(without_from_and_to_the_last_30_days_are_searched_and_named)
{
    json_t *b = search("/api/v1/audit/events?q=winmark&resource_type=probe");
    ck_assert_str_eq(ids(json_object_get(b, "items")), "win1,win2,win3");
    window_is(b, NULL, NULL, true);
    /* 30 days before the start of this hour */
    const char *from = jstr(json_object_get(b, "window"), "from");
    ck_assert_ptr_nonnull(from);
    struct tm tm = {0};
    ck_assert_ptr_nonnull(strptime(from, "%Y-%m-%dT%H:%M:%SZ", &tm));
    time_t f = timegm(&tm), now = time(NULL);
    ck_assert_int_eq(f % 3600, 0);
    ck_assert_int_le(f, now - 30 * 86400);
    ck_assert_int_ge(f, now - 30 * 86400 - 3600 - 60);
    json_decref(b);

    b = search("/api/v1/audit/events?action=winprobe.*&outcome=denied");
    ck_assert_str_eq(ids(json_object_get(b, "items")), "win2");
    json_decref(b);

    b = search("/api/v1/audit/commands");
    window_is(b, NULL, NULL, true);
    json_decref(b);
}
END_TEST

START_TEST(an_explicit_window_reaches_older_events_newest_first)
{
    char from[32];
    snprintf(from, sizeof from, "%s", days_ago(400));
    json_t *b = search(fmt("/api/v1/audit/events?q=winmark&resource_type=probe&from=%s", from));
    ck_assert_str_eq(ids(json_object_get(b, "items")), "win1,win2,win3,win4,win5");
    window_is(b, from, NULL, false);
    json_decref(b);

    /* to alone: everything before it */
    char to[32];
    snprintf(to, sizeof to, "%s", days_ago(40));
    b = search(fmt("/api/v1/audit/events?q=winmark&resource_type=probe&to=%s", to));
    ck_assert_str_eq(ids(json_object_get(b, "items")), "win4,win5");
    window_is(b, NULL, to, false);
    json_decref(b);

    /* a window that ends between the steps of the search */
    char mid[32];
    snprintf(mid, sizeof mid, "%s", days_ago(10));
    b = search(fmt("/api/v1/audit/events?resource_type=probe&from=%s&to=%s", from, mid));
    ck_assert_str_eq(ids(json_object_get(b, "items")), "win3,win4,win5");
    json_decref(b);

    b = search(fmt("/api/v1/audit/events?action=winprobe.*&outcome=denied&from=%s", from));
    ck_assert_str_eq(ids(json_object_get(b, "items")), "win2,win4");
    json_decref(b);
    b = search(fmt("/api/v1/audit/events?action=winprobe.*&outcome=success&from=%s", from));
    ck_assert_str_eq(ids(json_object_get(b, "items")), "win1,win3,win5");
    json_decref(b);
}
END_TEST

START_TEST(pages_visit_every_match_once_across_the_steps)
{
    char from[32];
    snprintf(from, sizeof from, "%s", days_ago(400));
    char seen[256] = "";
    const char *cursor = NULL;
    for (int page = 0; page < 10; page++) {
        json_t *b =
            search(fmt("/api/v1/audit/events?q=winmark&resource_type=probe&limit=2&from=%s%s%s",
                       from, cursor ? "&cursor=" : "", cursor ? cursor : ""));
        window_is(b, from, NULL, false);
        snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s%s", seen[0] ? "," : "",
                 ids(json_object_get(b, "items")));
        const char *next = jstr(b, "next_cursor");
        static char keep[512];
        if (next)
            snprintf(keep, sizeof keep, "%s", next);
        cursor = next ? keep : NULL;
        json_decref(b);
        if (!cursor)
            break;
    }
    ck_assert_str_eq(seen, "win1,win2,win3,win4,win5");
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("audit_window");
    TCase *tc = tcase_create("audit_window");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, without_from_and_to_the_last_30_days_are_searched_and_named);
    tcase_add_test(tc, an_explicit_window_reaches_older_events_newest_first);
    tcase_add_test(tc, pages_visit_every_match_once_across_the_steps);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
