/*
 * test_actor_current.c - the actor's own check of the context statement
 * (aidc_actor_current, 0039), asked as the application role.
 *
 * Run only when the auth epoch moved since the server found its remembered
 * actor current. It must say "current" for an unchanged user with a live
 * token or session - or the server reloads actors for nothing - and "stale"
 * for every change that ends or narrows the actor's rights: its
 * auth_version moved, it was disabled, its token revoked or expired, its
 * session logged out.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct aidc_server srv;
static char user[40], token[40];

#define JTI "5b0e4f7a-4c1d-4e8f-9a2b-3c4d5e6f7a8b"

/* A new live token of user (the test's own, or another's); its id. */
static void new_token(const char *of, char *out, size_t n)
{
    const char *p[1] = {of};
    char *t = harness_sql_text(srv.owner_url,
                               "INSERT INTO api_tokens (user_id, name, token_hash, scopes,"
                               " expires_at) VALUES ($1::uuid, 'ci', md5(random()::text) ||"
                               " md5(random()::text), '{jobs:read}', now() + interval '1 day')"
                               " RETURNING id",
                               1, p);
    ck_assert_ptr_nonnull(t);
    snprintf(out, n, "%s", t);
    free(t);
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "actorcurrent");
    char *u = harness_sql_text(srv.owner_url,
                               "INSERT INTO users (username) VALUES ('ann') RETURNING id", 0, NULL);
    ck_assert_ptr_nonnull(u);
    snprintf(user, sizeof user, "%s", u);
    free(u);
    new_token(user, token, sizeof token);
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

/* aidc_actor_current(user, version, token, session) as the application role: 1 or 0. */
static long current(const char *version, const char *tok, const char *jti)
{
    const char *p[4] = {user, version, tok, jti};
    return harness_sql_long(srv.app_url,
                            "SELECT aidc_actor_current($1::uuid, $2::bigint, $3::uuid,"
                            " $4::uuid)::int",
                            4, p);
}

static long version(void)
{
    const char *p[1] = {user};
    return harness_sql_long(srv.owner_url, "SELECT auth_version FROM users WHERE id = $1::uuid",
                            1, p);
}

static void owner(const char *sql)
{
    const char *p[1] = {user};
    PGresult *r = harness_sql(srv.owner_url, sql, strstr(sql, "$1") ? 1 : 0, p);
    ck_assert_msg(r != NULL, "%s failed", sql);
    PQclear(r);
}

START_TEST(an_unchanged_actor_is_current)
{
    char v[24];
    snprintf(v, sizeof v, "%ld", version());
    ck_assert_int_eq(current(v, NULL, NULL), 1);
    ck_assert_int_eq(current(v, token, NULL), 1);
    ck_assert_int_eq(current(v, NULL, JTI), 1);
    ck_assert_int_eq(current(v, token, JTI), 1);
}
END_TEST

START_TEST(every_narrowing_change_makes_it_stale)
{
    char v[24];
    snprintf(v, sizeof v, "%ld", version());
    char older[24];
    snprintf(older, sizeof older, "%ld", version() - 1);
    ck_assert_int_eq(current(older, NULL, NULL), 0); /* its rights changed since */
    ck_assert_int_eq(current(older, token, NULL), 0);

    /* another user's live token is not this user's */
    char *other = harness_sql_text(srv.owner_url,
                                   "INSERT INTO users (username) VALUES ('bob') RETURNING id", 0,
                                   NULL);
    ck_assert_ptr_nonnull(other);
    char theirs[40];
    new_token(other, theirs, sizeof theirs);
    free(other);
    ck_assert_int_eq(current(v, theirs, NULL), 0);

    owner("INSERT INTO revoked_sessions (jti, expires_at) VALUES ('" JTI "', now() + interval"
          " '1 day')");
    ck_assert_int_eq(current(v, NULL, JTI), 0); /* logged out */

    ck_assert_int_eq(current(v, token, JTI), 0);

    owner("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'ci'"
          " AND user_id = $1::uuid");
    ck_assert_int_eq(current(v, token, NULL), 0); /* expired */
    char fresh[40];
    new_token(user, fresh, sizeof fresh);
    ck_assert_int_eq(current(v, fresh, NULL), 1);
    owner("UPDATE api_tokens SET revoked_at = now() WHERE user_id = $1::uuid");
    ck_assert_int_eq(current(v, fresh, NULL), 0); /* revoked */
    ck_assert_int_eq(current(v, "00000000-0000-4000-8000-000000000000", NULL), 0);

    owner("UPDATE users SET disabled = true WHERE id = $1::uuid");
    snprintf(v, sizeof v, "%ld", version());
    ck_assert_int_eq(current(v, NULL, NULL), 0); /* disabled, whatever its version */
}
END_TEST

static Suite *actor_suite(void)
{
    Suite *s = suite_create("actor_current");
    TCase *tc = tcase_create("actor_current");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, an_unchanged_actor_is_current);
    tcase_add_test(tc, every_narrowing_change_makes_it_stale);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(actor_suite());
}
