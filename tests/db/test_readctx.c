/*
 * test_readctx.c - a read scope (db_begin with readonly) sends its
 * row-level-security context with every read in the same round trip: the read
 * must see exactly the context's tenants - another tenant's row stays
 * invisible, an empty answer stays empty -, the answer must be the query's own,
 * and the check that the actor is still current must come with it (a change of
 * the user is seen by the very read that follows it). Written for the
 * one-statement read that was tried and set aside (docs/performance.md, issue
 * 27 part 3); it holds for any way of sending the context. And every scope
 * runs under the statement timeout with JIT off, pooled or not.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "db/projects.h"
#include "lib/err.h"
#include "lib/sbuf.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct aidc_server srv;
static char tenant_a[37], tenant_b[37], user_a[37];

/* One row of sql as the owner (with the user id as $1 where given): its first value into out. */
static void owner_one_p(const char *sql, const char *param, char out[37])
{
    const char *p[1] = {param};
    PGresult *r = harness_sql(srv.owner_url, sql, param ? 1 : 0, param ? p : NULL);
    ck_assert_ptr_nonnull(r);
    if (out)
        snprintf(out, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static void owner_one(const char *sql, char out[37])
{
    owner_one_p(sql, NULL, out);
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "readctx");
    owner_one("INSERT INTO tenants (slug, name) VALUES ('tenant-a', 'A') RETURNING id", tenant_a);
    owner_one("INSERT INTO tenants (slug, name) VALUES ('tenant-b', 'B') RETURNING id", tenant_b);
    owner_one("INSERT INTO users (username) VALUES ('ua') RETURNING id", user_a);
    const char *ids[2] = {tenant_a, tenant_b};
    PQclear(
        harness_sql(srv.owner_url,
                    "INSERT INTO projects (tenant_id, slug, name) VALUES ($1::uuid, 'pa', 'A1'),"
                    " ($2::uuid, 'pb', 'B1')",
                    2, ids));
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

static long long owner_ll(const char *sql)
{
    char v[37];
    owner_one(sql, v);
    return atoll(v);
}

/* A context of user_a that the read checks: its version and the epoch as they are now. */
static struct db_ctx checked_ctx(const char *read_tenants, const char *roles)
{
    char version[37];
    owner_one_p("SELECT auth_version FROM users WHERE id = $1::uuid", user_a, version);
    return (struct db_ctx){.user_id = user_a,
                           .roles = roles,
                           .read_tenants = read_tenants,
                           .check_user = user_a,
                           .check_version = atoll(version),
                           .check_epoch = owner_ll("SELECT v FROM aidc_auth_epoch")};
}

/* db_project_get's answer parsed; a refused read leaves nothing in the text */
static int project_get(struct db *d, const char *tenant, const char *slug, json_t **out)
{
    struct sbuf sb = SBUF_INIT;
    int e = db_project_get(d, tenant, slug, &sb);
    *out = NULL;
    if (!e) {
        *out = json_loads(sbuf_str(&sb), 0, NULL);
        ck_assert_ptr_nonnull(*out);
    } else {
        ck_assert_uint_eq(sb.len, 0);
    }
    sbuf_free(&sb);
    return e;
}

START_TEST(a_read_sees_its_context_s_tenant_only)
{
    struct db *d = db_open(srv.app_url, "test_readctx");
    const struct db_ctx ctx = {.user_id = user_a, .read_tenants = tenant_a};
    json_t *out = NULL;
    for (int round = 0; round < 2; round++) { /* a fresh connection, then a used one */
        ck_assert_int_eq(db_begin(d, &ctx, true), 0);
        ck_assert_int_eq(project_get(d, tenant_a, "pa", &out), 0);
        /* the answer is the query's own: its columns and no others */
        ck_assert_str_eq(json_string_value(json_object_get(out, "slug")), "pa");
        ck_assert_int_eq((int)json_object_size(out), 8);
        json_decref(out);
        out = NULL;
        /* another tenant's row, even asked for by its tenant's id: not there */
        ck_assert_int_eq(project_get(d, tenant_b, "pb", &out), AIDC_ENOTFOUND);
        struct db_rows rows = {0};
        ck_assert_int_eq(db_project_list(d, tenant_b, NULL, 10, &rows), 0);
        ck_assert_int_eq((int)json_array_size(rows.items), 0);
        db_rows_free(&rows);
        ck_assert_int_eq(db_commit(d), 0);
    }
    /* the context ended with its statement: a scope without tenants sees nothing */
    const struct db_ctx none = {.user_id = user_a};
    ck_assert_int_eq(db_begin(d, &none, true), 0);
    ck_assert_int_eq(project_get(d, tenant_a, "pa", &out), AIDC_ENOTFOUND);
    ck_assert_int_eq(db_commit(d), 0);
    db_close(d);
}
END_TEST

static const struct db_stmt st_one = {"test_one", "SELECT 1", 0};

/* A read that names a write (here in a literal) is not wrapped: sent after the
 * context statement, as two. */
static const struct db_stmt st_unwrapped = {
    "test_unwrapped", "SELECT slug FROM projects WHERE name <> 'UPDATE' ORDER BY slug", 0};

START_TEST(a_read_not_wrapped_goes_with_its_context)
{
    struct db *d = db_open(srv.app_url, "test_readctx");
    const struct db_ctx ctxs[2] = {{.user_id = user_a, .read_tenants = tenant_a},
                                   {.user_id = user_a, .read_tenants = tenant_b}};
    const char *want[2] = {"pa", "pb"};
    for (int round = 0; round < 4; round++) { /* each tenant, then each again */
        ck_assert_int_eq(db_begin(d, &ctxs[round % 2], true), 0);
        int e = 0;
        PGresult *r = db_query(d, &st_unwrapped, NULL, &e);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(PQntuples(r), 1);
        ck_assert_int_eq(PQnfields(r), 1); /* the statement's own column, no epoch or tag */
        ck_assert_str_eq(PQgetvalue(r, 0, 0), want[round % 2]);
        PQclear(r);
        ck_assert_int_eq(db_commit(d), 0);
    }
    db_close(d);
}
END_TEST

START_TEST(the_check_rides_with_the_read)
{
    struct db *d = db_open(srv.app_url, "test_readctx");
    struct db_ctx ctx = checked_ctx(tenant_a, NULL);
    json_t *out = NULL;
    ck_assert_int_eq(db_begin(d, &ctx, true), 0);
    ck_assert_int_eq(project_get(d, tenant_a, "pa", &out), 0);
    json_decref(out);
    ck_assert_int_eq(db_ctx_verify(d), DB_CTX_CURRENT);
    ck_assert_int_eq(db_ctx_epoch(d), ctx.check_epoch);
    ck_assert_int_eq(db_commit(d), 0);
    /* the user is disabled: the next read's own answer says the actor is stale, and
     * the read gives nothing to a caller that would act on it */
    owner_one_p("UPDATE users SET disabled = true WHERE id = $1::uuid RETURNING id", user_a, NULL);
    ck_assert_int_eq(db_begin(d, &ctx, true), 0);
    out = NULL;
    ck_assert_int_eq(project_get(d, tenant_a, "pa", &out), AIDC_ESTALE);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(db_ctx_verify(d), DB_CTX_STALE);
    ck_assert_int_eq(db_commit(d), 0);
    /* an empty answer carries the check too */
    ck_assert_int_eq(db_begin(d, &ctx, true), 0);
    ck_assert_int_eq(project_get(d, tenant_a, "nope", &out), AIDC_ESTALE);
    ck_assert_int_eq(db_ctx_verify(d), DB_CTX_STALE);
    ck_assert_int_eq(db_commit(d), 0);
    /* outside the scope a statement is not the request's: it answers */
    ck_assert_int_eq(db_exec(d, &st_one, NULL), 0);
    db_close(d);
}
END_TEST

static const struct db_stmt st_tenants = {
    "test_tenants",
    "SELECT coalesce(current_setting('aidc.read_tenants', true), ''),"
    " coalesce(current_setting('aidc.user_id', true), '')",
    0};
static const struct db_stmt st_slugs = {
    "test_slugs", "SELECT string_agg(slug, ',' ORDER BY slug) FROM projects", 0};
static const struct db_stmt st_divide = {"test_divide", "SELECT 1 / $1::int", 1};

/* The projects ctx reads in a scope of its own (readonly or not), as "pa,pb" ("" for none). */
static void expect_slugs(struct db *d, const struct db_ctx *ctx, bool readonly, const char *want)
{
    ck_assert_int_eq(db_begin(d, ctx, readonly), 0);
    int e = 0;
    PGresult *r = db_query(d, &st_slugs, NULL, &e);
    ck_assert_msg(r != NULL, "read failed: %d", e);
    ck_assert_msg(strcmp(PQgetvalue(r, 0, 0), want) == 0, "%s scope read \"%s\", want \"%s\"",
                  readonly ? "a read" : "a write", PQgetvalue(r, 0, 0), want);
    PQclear(r);
    ck_assert_int_eq(db_commit(d), 0);
}

/*
 * A read leaves its actor's settings in the session for the next read of the
 * same actor (db/readctx.h). Nothing else may see them: a statement outside
 * any scope sees no actor, a write scope sees its own tenants only, another
 * actor's read its own.
 */
START_TEST(a_read_s_settings_reach_no_one_else)
{
    struct db *d = db_open(srv.app_url, "test_readctx");
    const struct db_ctx a = {.user_id = user_a, .read_tenants = tenant_a};
    const struct db_ctx b = {.user_id = user_a, .read_tenants = tenant_b};
    const struct db_ctx none = {0};
    expect_slugs(d, &a, true, "pa");
    expect_slugs(d, &a, true, "pa"); /* the session's settings, kept */
    int e = 0;
    PGresult *r = db_query(d, &st_tenants, NULL, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "");
    ck_assert_str_eq(PQgetvalue(r, 0, 1), "");
    PQclear(r);
    r = db_query(d, &st_slugs, NULL, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), ""); /* outside any scope: no tenant at all */
    PQclear(r);
    expect_slugs(d, &a, true, "pa");
    expect_slugs(d, &b, false, "pb");
    expect_slugs(d, &none, false, "");
    expect_slugs(d, &b, true, "pb");
    expect_slugs(d, &a, true, "pa");
    db_close(d);
}
END_TEST

/* A read that fails takes its settings back with it: the next read sets them again. */
START_TEST(a_failed_read_leaves_no_settings_believed)
{
    struct db *d = db_open(srv.app_url, "test_readctx");
    const struct db_ctx a = {.user_id = user_a, .read_tenants = tenant_a};
    const struct db_ctx b = {.user_id = user_a, .read_tenants = tenant_b};
    expect_slugs(d, &a, true, "pa");
    ck_assert_int_eq(db_begin(d, &b, true), 0);
    const char *zero[1] = {"0"};
    int e = 0;
    ck_assert_ptr_null(db_query(d, &st_divide, zero, &e)); /* b's settings went with it */
    ck_assert_int_ne(e, 0);
    db_rollback(d);
    expect_slugs(d, &b, true, "pb");
    expect_slugs(d, &a, true, "pa");
    db_close(d);
}
END_TEST

/* Another actor's change moves the epoch: the read's rows cannot vouch for the actor, the
 * context statement does, and says current - with the epoch it saw, for the next request. */
START_TEST(a_moved_epoch_is_checked_and_passes)
{
    struct db *d = db_open(srv.app_url, "test_readctx");
    struct db_ctx ctx = checked_ctx(tenant_a, NULL);
    long long moved = owner_ll("UPDATE aidc_auth_epoch SET v = v + 1 RETURNING v");
    json_t *out = NULL;
    for (int i = 0; i < 2; i++) { /* with rows, then with none */
        ck_assert_int_eq(db_begin(d, &ctx, true), 0);
        ck_assert_int_eq(project_get(d, tenant_a, i ? "nope" : "pa", &out), i ? AIDC_ENOTFOUND : 0);
        json_decref(out);
        out = NULL;
        ck_assert_int_eq(db_ctx_verify(d), DB_CTX_CURRENT);
        ck_assert_int_eq(db_ctx_epoch(d), moved);
        ck_assert_int_eq(db_commit(d), 0);
    }
    db_close(d);
}
END_TEST

/* Run once before the next context statement readctx sends after a read. */
static void (*before_check)(void);
int __real_dbint_send_ctx(struct db *db);
int __wrap_dbint_send_ctx(struct db *db); /* -Wl,--wrap (tests/CMakeLists.txt) */
int __wrap_dbint_send_ctx(struct db *db)
{
    void (*f)(void) = before_check;
    before_check = NULL;
    if (f)
        f();
    return __real_dbint_send_ctx(db);
}

/* What a tenant's suspension (or any change of who may do what) does to the epoch. */
static void move_epoch(void)
{
    owner_one("UPDATE aidc_auth_epoch SET v = v + 1 RETURNING v", NULL);
}

/*
 * The epoch a read answers with is its rows' own, even when the check that
 * follows them (the actor's epoch was older) sees a later one: a tenant
 * looked up is remembered at that epoch (server/dispatch.c), and a
 * suspension between the read and the check must leave it stale there (the
 * review's repro: remembered as not suspended, at the epoch of the suspension).
 * The actor, though, was found current at the later one.
 */
START_TEST(a_read_s_epoch_is_its_rows_not_the_later_check_s)
{
    struct db *d = db_open(srv.app_url, "test_readctx");
    const struct db_ctx ctx = checked_ctx(NULL, "platform_admin");
    long long read_at = owner_ll("UPDATE aidc_auth_epoch SET v = v + 1 RETURNING v");
    ck_assert_int_eq(db_begin(d, &ctx, true), 0);
    before_check = move_epoch; /* a suspension between the read and the check */
    json_t *out = NULL;
    ck_assert_int_eq(project_get(d, tenant_a, "pa", &out), 0);
    json_decref(out);
    ck_assert_ptr_null(before_check); /* the check ran, after the move */
    ck_assert_int_eq(db_ctx_verify(d), DB_CTX_CURRENT);
    long long now = owner_ll("SELECT v FROM aidc_auth_epoch");
    ck_assert_int_gt(now, read_at);
    ck_assert_int_eq(db_ctx_epoch(d), read_at);
    /* the actor itself was found current later: a re-admission remembers it there, past a
     * pin at read_at (dispatch.c, readmit_tenant) */
    ck_assert_int_eq(db_ctx_found_epoch(d), now);
    ck_assert_int_eq(db_commit(d), 0);
    db_close(d);
}
END_TEST

/*
 * A session that starts with settings of its own - a role's or a database's
 * defaults, what a pooler's server connection kept - lends a read none of
 * them: a new connection's first read sets every one of its own, and its first
 * statement outside any scope clears them.
 */
START_TEST(a_session_s_own_settings_reach_no_read)
{
    PGconn *su = harness_super_connect(&srv);
    ck_assert_ptr_nonnull(su);
    char sql[256];
    snprintf(sql, sizeof sql, "ALTER DATABASE \"%s\" SET \"aidc.all\" = 'read'", PQdb(su));
    PGresult *r = PQexec(su, sql);
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s", PQerrorMessage(su));
    PQclear(r);
    PQfinish(su);
    for (int first = 0; first < 2; first++) { /* a statement outside any scope, or a read */
        struct db *d = db_open(srv.app_url, "test_readctx");
        const struct db_ctx none = {0};
        if (first == 0) {
            int e = 0;
            PGresult *got = db_query(d, &st_slugs, NULL, &e);
            ck_assert_ptr_nonnull(got);
            ck_assert_str_eq(PQgetvalue(got, 0, 0), "");
            PQclear(got);
        }
        expect_slugs(d, &none, true, ""); /* the database's aidc.all would read every tenant */
        db_close(d);
    }
}
END_TEST

static const struct db_stmt st_foreign = {
    "test_foreign",
    "SELECT set_config('aidc.read_tenants', $1, false), set_config('aidc.read_tag', 'x', false)",
    1};

/*
 * Rows read under settings the connection did not set - its session changed
 * behind its back, as a transaction pooler the configuration did not name
 * would hand it another client's - are never answered: their tag is not the
 * connection's, and the read is made again under its own settings.
 */
START_TEST(rows_read_under_foreign_settings_are_read_again)
{
    struct db *d = db_open(srv.app_url, "test_readctx");
    const struct db_ctx a = {.user_id = user_a, .read_tenants = tenant_a};
    expect_slugs(d, &a, true, "pa");
    ck_assert_int_eq(db_begin(d, &a, false), 0); /* a transaction sets them for the session */
    const char *p[1] = {tenant_b};
    ck_assert_int_eq(db_exec(d, &st_foreign, p), 0);
    ck_assert_int_eq(db_commit(d), 0);
    expect_slugs(d, &a, true, "pa"); /* under the session's settings it would read "pb" */
    db_close(d);
}
END_TEST

static const struct db_stmt st_settings = {
    "test_settings", "SELECT current_setting('statement_timeout'), current_setting('jit')", 0};

/*
 * Every scope, read or write, runs under the statement timeout with JIT off:
 * on a connection of its own the session has them from its start and the
 * context leaves them alone; behind a transaction pooler the context sets them
 * for the transaction (db/context.c). Here the "pooler" is the server itself,
 * so only the context can have set them.
 */
START_TEST(every_scope_has_the_statement_timeout)
{
    const struct db_ctx ctx = {.user_id = user_a, .read_tenants = tenant_a};
    for (int pooled = 0; pooled < 2; pooled++) {
        struct db *d = db_open(srv.app_url, "test_readctx");
        db_set_statement_timeout(d, 1234);
        db_set_txpool(d, pooled);
        for (int readonly = 0; readonly < 2; readonly++) {
            ck_assert_int_eq(db_begin(d, &ctx, readonly), 0);
            int e = 0;
            PGresult *r = db_query(d, &st_settings, NULL, &e);
            ck_assert_ptr_nonnull(r);
            ck_assert_msg(strcmp(PQgetvalue(r, 0, 0), "1234ms") == 0 &&
                              strcmp(PQgetvalue(r, 0, 1), "off") == 0,
                          "pooled %d, readonly %d: statement_timeout %s, jit %s", pooled, readonly,
                          PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
            PQclear(r);
            ck_assert_int_eq(db_commit(d), 0);
        }
        db_close(d);
    }
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("readctx");
    TCase *tc = tcase_create("readctx");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_read_sees_its_context_s_tenant_only);
    tcase_add_test(tc, the_check_rides_with_the_read);
    tcase_add_test(tc, a_read_not_wrapped_goes_with_its_context);
    tcase_add_test(tc, every_scope_has_the_statement_timeout);
    tcase_add_test(tc, a_read_s_settings_reach_no_one_else);
    tcase_add_test(tc, a_failed_read_leaves_no_settings_believed);
    tcase_add_test(tc, a_moved_epoch_is_checked_and_passes);
    tcase_add_test(tc, a_session_s_own_settings_reach_no_read);
    tcase_add_test(tc, a_read_s_epoch_is_its_rows_not_the_later_check_s);
    tcase_add_test(tc, rows_read_under_foreign_settings_are_read_again);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
