/*
 * test_job_row_check.c - the rules of a job row (jobs_row_ok, 0040): the one
 * CHECK constraint that calls aidc_job_row_ok in place of the twenty it
 * replaced. Every rule still refuses what it refused - with check_violation,
 * the state db/pgerr.c maps - and still lets through what it let through,
 * NULL columns included.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct aidc_server srv;
static PGconn *c;
static char job[37], parent[37];

static void owner_id(const char *sql, int n, const char *const *p, char *out)
{
    PGresult *r = harness_sql(srv.owner_url, sql, n, p);
    ck_assert_msg(r != NULL && PQntuples(r) == 1, "%s failed", sql);
    snprintf(out, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "jobrowcheck");
    char tenant[37], project[37], user[37];
    harness_seed_project(&srv, tenant, user, project);
    const char *p[3] = {tenant, project, user};
#define NEW_JOB                                                                                    \
    "INSERT INTO jobs (tenant_id, project_id, user_id, username, name, cpus, memory_gib,"          \
    " command) VALUES ($1::uuid, $2::uuid, $3::uuid, 'alice', 'j', 1, 1, '[\"true\"]')"            \
    " RETURNING id"
    owner_id(NEW_JOB, 3, p, job);
    owner_id(NEW_JOB, 3, p, parent);
    c = PQconnectdb(srv.owner_url);
    ck_assert_int_eq(PQstatus(c), CONNECTION_OK);
}

static void teardown(void)
{
    PQfinish(c);
    harness_db_discard(&srv);
}

/* Set `set` on the test's job, in a transaction rolled back: the SQLSTATE ("" if it passed). */
static void try_set(const char *set, char *state, size_t n)
{
    PQclear(PQexec(c, "BEGIN"));
    PGresult *r = PQexec(c, fmt("UPDATE jobs SET %s WHERE id = '%s'", set, job));
    const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(state, n, "%s", PQresultStatus(r) == PGRES_COMMAND_OK ? "" : st ? st : "?");
    if (state[0] == '\0')
        ck_assert_str_eq(PQcmdTuples(r), "1");
    PQclear(r);
    PQclear(PQexec(c, "ROLLBACK"));
}

static void refused(const char *set)
{
    char st[8];
    try_set(set, st, sizeof st);
    ck_assert_msg(strcmp(st, "23514") == 0, "SET %s: SQLSTATE \"%s\", not check_violation", set,
                  st);
}

static void allowed(const char *set)
{
    char st[8];
    try_set(set, st, sizeof st);
    ck_assert_msg(st[0] == '\0', "SET %s refused (SQLSTATE %s)", set, st);
}

START_TEST(every_rule_still_refuses)
{
    static const char *const bad[] = {
        "state = 'bogus'",
        "priority = 'urgent'",
        "kind = 'service'",
        "name = ''",
        "name = repeat('x', 201)",
        "gpus = -1",
        "gpus = 65, gpu_type = 'a100'",
        "gpus = 1",                     /* a GPU job names its type */
        "gpu_type = 'a100'",            /* and a CPU job names none */
        "gpus = 1, gpu_type = 'A100'",  /* lower case */
        "gpus = 1, gpu_type = '-a100'", /* starts with a letter or digit */
        "gpus = 1, gpu_type = repeat('a', 33)",
        "cpus = 0",
        "cpus = 1025",
        "memory_gib = 0",
        "memory_gib = 16385",
        "nodes = 0",
        "nodes = 65",
        "time_limit_minutes = 0",
        "time_limit_minutes = 525601",
        "script = 'echo'", /* a command or a script, not both */
        "command = NULL",  /* and not neither */
        "mounts = '{}'",
        "mounts = '[1, 2, 3, 4, 5, 6, 7, 8, 9]'",
        "image_digest = 'sha256:abc'",
        "stop_requested = 'kill'",
        "array_index = 0", /* a task index without its array */
        "array_hold = -1",
        "array_count = 0, array_max_parallel = 0",
        "array_count = 10001, array_max_parallel = 1",
        "array_count = 5",                         /* a count without its parallelism */
        "array_max_parallel = 2",                  /* and the other way round */
        "array_count = 5, array_max_parallel = 6", /* more at once than there are */
        "array_count = 5, array_max_parallel = 0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(bad[i]);
    /* a task is no array of its own; an index stays within 0..9999 */
    refused(fmt("array_parent = '%s', array_index = 1, array_count = 2,"
                " array_max_parallel = 1",
                parent));
    refused(fmt("array_parent = '%s', array_index = 10000", parent));
    refused(fmt("array_parent = '%s', array_index = -1", parent));
}
END_TEST

START_TEST(what_the_rules_allow_still_passes)
{
    static const char *const good[] = {
        "state = 'preempted'",
        "priority = 'high', kind = 'interactive'",
        "name = repeat('x', 200)",
        "gpus = 64, gpu_type = 'a100'",
        "gpus = 2, gpu_type = 'h100-80gb_sxm.5'",
        "gpus = 1, gpu_type = repeat('a', 32)",
        "cpus = 1024, memory_gib = 16384, nodes = 64, time_limit_minutes = 525600",
        "command = NULL, script = '#!/bin/sh'",
        "mounts = '[1, 2, 3, 4, 5, 6, 7, 8]'",
        "image_digest = 'sha256:' || repeat('0a', 32)",
        "stop_requested = 'cancel'",
        "stop_requested = 'preempt'",
        "array_count = 10000, array_max_parallel = 10000, array_hold = 3",
        "array_count = 1, array_max_parallel = 1",
        /* NULL passes a rule, as a CHECK constraint lets NULL through (the
         * other nullable columns are NULL in the job every case starts from) */
        "array_hold = NULL",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        allowed(good[i]);
    allowed(fmt("array_parent = '%s', array_index = 0", parent));
    allowed(fmt("array_parent = '%s', array_index = 9999", parent));
}
END_TEST

/*
 * A new plain CHECK on jobs would bring back the parse of its node tree in
 * every statement that writes a job: its rule belongs in aidc_job_row_ok.
 */
START_TEST(jobs_has_one_check_constraint)
{
    long n = harness_sql_long(srv.owner_url,
                              "SELECT count(*) FROM pg_constraint WHERE contype = 'c'"
                              " AND conrelid = 'jobs'::regclass",
                              0, NULL);
    ck_assert_int_eq(n, 1);
    char *name = harness_sql_text(srv.owner_url,
                                  "SELECT conname FROM pg_constraint WHERE contype = 'c'"
                                  " AND conrelid = 'jobs'::regclass",
                                  0, NULL);
    ck_assert_str_eq(name, "jobs_row_ok");
    free(name);
}
END_TEST

/* The constraint came NOT VALID (0040); validating it later finds every row in line. */
START_TEST(the_constraint_validates)
{
    ck_assert(harness_sql_ok(srv.owner_url, "ALTER TABLE jobs VALIDATE CONSTRAINT jobs_row_ok"));
    ck_assert_int_eq(harness_sql_long(srv.owner_url,
                                      "SELECT convalidated::int FROM pg_constraint"
                                      " WHERE conname = 'jobs_row_ok'",
                                      0, NULL),
                     1);
    refused("cpus = 0");
}
END_TEST

static Suite *row_suite(void)
{
    Suite *s = suite_create("job_row_check");
    TCase *tc = tcase_create("rules");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, every_rule_still_refuses);
    tcase_add_test(tc, what_the_rules_allow_still_passes);
    tcase_add_test(tc, jobs_has_one_check_constraint);
    tcase_add_test(tc, the_constraint_validates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(row_suite());
}
