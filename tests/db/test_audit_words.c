/*
 * test_audit_words.c - the words of an audit event and the query of `q`
 * (0038_audit_id_words.sql), talked to PostgreSQL directly as the owner.
 *
 * A resource id that is a UUID is one word of the full-text index instead of
 * the parser's six (the hyphenated word and its five parts: six random entries
 * of the GIN index per event). A search still finds the event by that id given
 * whole, in any case, beside other words or excluded; and a UUID among the
 * strings of `details` (still parsed into six words) by the same `q`. Other
 * resource ids keep every word their parser makes.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RID "af5b16db-cb94-4c49-9cdf-877441603d7b"
#define PEER "0b7e5a52-9d3e-4f1c-8a6b-2c4d6e8f0a1b"

static struct aidc_server srv;

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "auditwords");
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

/* The number sql answers with $1 = a, $2 = b. */
static long ask(const char *sql, const char *a, const char *b)
{
    const char *p[2] = {a, b};
    return harness_sql_long(srv.owner_url, sql, b ? 2 : a ? 1 : 0, p);
}

START_TEST(a_uuid_resource_id_is_one_word)
{
    /* the action's words and the type (project.create, project, create) and the id */
    ck_assert_int_eq(ask("SELECT length(aidc_audit_tsv('project.create', 'project', $1, '{}'))",
                         RID, NULL),
                     4);
    ck_assert_int_eq(ask("SELECT count(*) FROM unnest(tsvector_to_array(aidc_audit_tsv("
                         "'project.create', 'project', $1, '{}'))) w WHERE w = $1",
                         RID, NULL),
                     1);
    /* another kind of id keeps its words: a part of it is found */
    ck_assert_int_eq(ask("SELECT (aidc_audit_tsv('node.drain', 'node', 'gpu-a100-node7', '{}')"
                         " @@ aidc_audit_query('a100'))::int",
                         NULL, NULL),
                     1); /* a node record's host: its words as they were */
    ck_assert_int_eq(ask("SELECT (aidc_audit_tsv('cluster.update', 'cluster', 'gpu-a100-node7',"
                         " '{}') @@ aidc_audit_query('a100'))::int",
                         NULL, NULL),
                     1);
}
END_TEST

/* Whether the event (resource RID, details naming PEER) matches q. */
static long matches(const char *q)
{
    const char *p[1] = {q};
    return harness_sql_long(srv.owner_url,
                            "SELECT (aidc_audit_tsv('job.submit', 'job', '" RID "',"
                            " jsonb_build_object('name', 'train resnet', 'after', '" PEER "'))"
                            " @@ aidc_audit_query($1))::int",
                            1, p);
}

START_TEST(q_finds_a_resource_by_its_whole_id)
{
    ck_assert_int_eq(matches(RID), 1);
    ck_assert_int_eq(matches("AF5B16DB-CB94-4C49-9CDF-877441603D7B"), 1);
    ck_assert_int_eq(matches("submit " RID), 1);
    ck_assert_int_eq(matches(RID " or nothinglikethis"), 1);
    ck_assert_int_eq(matches("-" RID), 0);
    ck_assert_int_eq(matches("resnet -" RID), 0);
    ck_assert_int_eq(matches("11111111-2222-4333-8444-555555555555"), 0);
    /* a UUID among the strings of details, parsed into its six words */
    ck_assert_int_eq(matches(PEER), 1);
    ck_assert_int_eq(matches("resnet " PEER " " RID), 1);
    /* words without a UUID as before */
    ck_assert_int_eq(matches("train resnet"), 1);
    ck_assert_int_eq(matches("\"resnet train\""), 0);
    /* the id holds its own place: the type and the first string of details stay apart */
    ck_assert_int_eq(matches("\"job train\""), 0);
    ck_assert_int_eq(matches("\"train resnet\""), 1);
    /* what the one word gives up: a part of the resource id */
    ck_assert_int_eq(matches("cb94"), 0);
}
END_TEST

/* A words-only search (aidc_audit_search) finds the event by its id through the index. */
START_TEST(a_search_finds_an_event_by_its_id)
{
    ck_assert(harness_sql_ok(srv.owner_url,
                             "INSERT INTO audit_events (action, resource_type, resource_id,"
                             " outcome, details) VALUES ('job.submit', 'job', '" RID "',"
                             " 'success', '{\"name\": \"train resnet\"}'),"
                             " ('job.submit', 'job', '" PEER "', 'success', '{}')"));
    PGconn *c = harness_super_connect(&srv);
    ck_assert_ptr_nonnull(c);
    /* the index, not a scan of the two rows */
    PQclear(PQexec(c, "SELECT set_config('aidc.roles', 'auditor', false),"
                      " set_config('enable_seqscan', 'off', false)"));
    const char *qs[] = {RID, "AF5B16DB-CB94-4C49-9CDF-877441603D7B", "resnet " RID,
                        "submit -" RID};
    const char *want[] = {"1", "1", "1", "1"}; /* the last: the other event */
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
        const char *p[1] = {qs[i]};
        PGresult *r = PQexecParams(c,
                                   "SELECT count(*) FROM aidc_audit_search(NULL, NULL, NULL,"
                                   " NULL, NULL, NULL, NULL, NULL, $1, NULL, NULL, NULL, NULL,"
                                   " 50, 'words')",
                                   1, NULL, p, NULL, NULL, 0);
        ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQerrorMessage(c));
        ck_assert_msg(strcmp(PQgetvalue(r, 0, 0), want[i]) == 0, "q=%s found %s events", qs[i],
                      PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    PQfinish(c);
}
END_TEST

static Suite *words_suite(void)
{
    Suite *s = suite_create("audit_words");
    TCase *tc = tcase_create("audit_words");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_uuid_resource_id_is_one_word);
    tcase_add_test(tc, q_finds_a_resource_by_its_whole_id);
    if (getenv("AIDC_TEST_SUPERUSER_URL")) /* the search as a superuser session */
        tcase_add_test(tc, a_search_finds_an_event_by_its_id);
    else
        fprintf(stderr, "skipped: a_search_finds_an_event_by_its_id"
                        " (AIDC_TEST_SUPERUSER_URL not set)\n");
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(words_suite());
}
