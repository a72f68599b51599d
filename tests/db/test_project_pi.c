/*
 * test_project_pi.c - a project's PI is an id and a username that the
 * database keeps together (projects_pi_fkey, 0042): reads answer the name the
 * row carries, so the row must never carry a name its user does not have.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct aidc_server srv;
static char project[37], alice[37];

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "projectpi");
    char tenant[37];
    harness_seed_project(&srv, tenant, alice, project);
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

/* The SQLSTATE of `sql` run as the owner ("" when it passed). */
static void run(const char *sql, char *state, size_t n)
{
    PGconn *c = PQconnectdb(srv.owner_url);
    ck_assert_int_eq(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, sql);
    const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(state, n, "%s", PQresultStatus(r) == PGRES_COMMAND_OK ? "" : st ? st : "?");
    PQclear(r);
    PQfinish(c);
}

static void refused(const char *sql)
{
    char st[8];
    run(sql, st, sizeof st);
    ck_assert_msg(strcmp(st, "23503") == 0, "%s: SQLSTATE \"%s\", not foreign_key_violation", sql,
                  st);
}

/* "id|name" of the project's PI ("|" when it has none), malloc'd. */
static char *pi(void)
{
    const char *p[1] = {project};
    return harness_sql_text(
        srv.owner_url,
        "SELECT coalesce(pi_user_id::text, '') || '|' || coalesce(pi_username, '')"
        " FROM projects WHERE id = $1::uuid",
        1, p);
}

static void expect_pi(const char *want)
{
    char *got = pi();
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(a_name_its_user_does_not_have_is_refused)
{
    refused(fmt("UPDATE projects SET pi_user_id = '%s', pi_username = 'mallory' WHERE id = '%s'",
                alice, project));
    /* half a pair: an id without its name, a name without its id (MATCH FULL) */
    refused(fmt("UPDATE projects SET pi_user_id = '%s' WHERE id = '%s'", alice, project));
    refused(fmt("UPDATE projects SET pi_username = 'alice' WHERE id = '%s'", project));
    expect_pi("|");
    char st[8];
    run(fmt("UPDATE projects SET pi_user_id = '%s', pi_username = 'alice' WHERE id = '%s'", alice,
            project),
        st, sizeof st);
    ck_assert_str_eq(st, "");
    expect_pi(fmt("%s|alice", alice));
}
END_TEST

START_TEST(the_name_follows_its_user)
{
    char st[8];
    run(fmt("UPDATE projects SET pi_user_id = '%s', pi_username = 'alice' WHERE id = '%s'", alice,
            project),
        st, sizeof st);
    ck_assert_str_eq(st, "");
    /* renamed by hand: the project names the PI by the new name */
    run(fmt("UPDATE users SET username = 'alice2' WHERE id = '%s'", alice), st, sizeof st);
    ck_assert_str_eq(st, "");
    expect_pi(fmt("%s|alice2", alice));
    /* deleted: the project has no PI, neither id nor name */
    run(fmt("DELETE FROM users WHERE id = '%s'", alice), st, sizeof st);
    ck_assert_str_eq(st, "");
    expect_pi("|");
}
END_TEST

static Suite *pi_suite(void)
{
    Suite *s = suite_create("project_pi");
    TCase *tc = tcase_create("pair");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_name_its_user_does_not_have_is_refused);
    tcase_add_test(tc, the_name_follows_its_user);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(pi_suite());
}
