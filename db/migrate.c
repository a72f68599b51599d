/*
 * migrate.c - the migration runner. It speaks plain libpq (no pipeline, no
 * prepared statements): it must run before the tables that the prepared
 * statements name exist.
 */
#include "migrate.h"

#include "../lib/crypto.h"
#include "../lib/embed.h"
#include "../lib/err.h"
#include "../lib/log.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* pg_advisory_lock key: "aidcmigr" as a big-endian int64. */
#define MIGRATE_LOCK "7016966710478138738"

static const char sql_create[] =
    "CREATE TABLE IF NOT EXISTS aidc_schema_migrations ("
    " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL DEFAULT current_user)";
static const char sql_applied[] =
    "SELECT version, name, checksum FROM aidc_schema_migrations ORDER BY version";
static const char sql_record[] =
    "INSERT INTO aidc_schema_migrations (version, name, checksum) VALUES ($1::int, $2, $3)";
static const char sql_table_exists[] = "SELECT to_regclass('aidc_schema_migrations') IS NOT NULL";
static const char sql_role[] =
    "SELECT current_user, r.rolsuper OR r.rolbypassrls,"
    " (SELECT count(*) FROM pg_tables t WHERE t.schemaname = current_schema()"
    "   AND t.tableowner = current_user)"
    " FROM pg_roles r WHERE r.rolname = current_user";
static const char sql_grant[] = "SELECT aidc_grant_app($1::regrole)";
static const char sql_retention_floor[] =
    "UPDATE aidc_audit_policy SET retention_floor_days = $1::int"
    " WHERE retention_floor_days IS DISTINCT FROM $1::int";

static int version_of(const char *name)
{
    return (int)strtol(name, NULL, 10);
}

int migrate_latest_version(void)
{
    int v = 0;
    for (const struct embed_file *m = embed_migrations; m->name; m++)
        if (version_of(m->name) > v)
            v = version_of(m->name);
    return v;
}

static void checksum(const struct embed_file *m, char out[65])
{
    crypto_sha256_hex(m->data, m->len, out);
}

static PGconn *connect_url(const char *url, const char *what, char *err, size_t errsz)
{
    const char *keys[] = {"connect_timeout", "application_name", "client_encoding", "dbname", NULL};
    const char *vals[] = {"10", "aidcd-migrate", "UTF8", url, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        const char *msg = c ? PQerrorMessage(c) : "out of memory";
        size_t n = strcspn(msg, "\n");
        snprintf(err, errsz, "%s: cannot connect: %.*s", what, (int)n, msg);
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* Run sql (optionally with params) and keep the result; NULL + err on failure. */
static PGresult *run(PGconn *c, const char *sql, int n, const char *const *params, char *err,
                     size_t errsz)
{
    PGresult *r = n ? PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0) : PQexec(c, sql);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(c);
        size_t len = strcspn(msg, "\n");
        snprintf(err, errsz, "%.*s", (int)len, msg);
        PQclear(r);
        return NULL;
    }
    return r;
}

static bool run_ok(PGconn *c, const char *sql, char *err, size_t errsz)
{
    PGresult *r = run(c, sql, 0, NULL, err, errsz);
    PQclear(r);
    return r != NULL;
}

/*
 * Compare the applied rows with the embedded migrations. Returns 0 when they
 * agree on every applied row; sets *applied to how many are applied.
 */
static int compare_applied(PGresult *r, int *applied, int *db_max, char *err, size_t errsz)
{
    int n = PQntuples(r);
    *applied = n;
    *db_max = 0;
    for (int i = 0; i < n; i++) {
        int v = (int)strtol(PQgetvalue(r, i, 0), NULL, 10);
        if (v > *db_max)
            *db_max = v;
        const struct embed_file *m = NULL;
        for (const struct embed_file *e = embed_migrations; e->name; e++)
            if (version_of(e->name) == v)
                m = e;
        if (!m) {
            if (v > migrate_latest_version()) {
                snprintf(err, errsz,
                         "database schema version %d is newer than this aidcd (version %d): "
                         "run a newer aidcd",
                         v, migrate_latest_version());
            } else {
                snprintf(err, errsz, "database has migration %d (%s) that this aidcd does not know",
                         v, PQgetvalue(r, i, 1));
            }
            return AIDC_EINVAL;
        }
        char sum[65];
        checksum(m, sum);
        if (strcmp(sum, PQgetvalue(r, i, 2)) != 0) {
            snprintf(err, errsz,
                     "migration %s was changed after it was applied (checksum %.12s, database has "
                     "%.12s): restore the file, never edit an applied migration",
                     m->name, sum, PQgetvalue(r, i, 2));
            return AIDC_EINVAL;
        }
    }
    return 0;
}

static bool is_applied(PGresult *r, int version)
{
    for (int i = 0; i < PQntuples(r); i++)
        if ((int)strtol(PQgetvalue(r, i, 0), NULL, 10) == version)
            return true;
    return false;
}

static int apply_one(PGconn *c, const struct embed_file *m, char *err, size_t errsz)
{
    char sum[65], ver[16];
    checksum(m, sum);
    snprintf(ver, sizeof ver, "%d", version_of(m->name));
    const char *params[3] = {ver, m->name, sum};
    char msg[512];
    if (!run_ok(c, "BEGIN", msg, sizeof msg))
        goto fail;
    if (!run_ok(c, (const char *)m->data, msg, sizeof msg))
        goto fail;
    PGresult *r = run(c, sql_record, 3, params, msg, sizeof msg);
    if (!r)
        goto fail;
    PQclear(r);
    if (!run_ok(c, "COMMIT", msg, sizeof msg))
        goto fail;
    log_info("applied migration %s", m->name);
    return 0;
fail:
    snprintf(err, errsz, "migration %s failed: %s", m->name, msg);
    char ignored[64];
    (void)run_ok(c, "ROLLBACK", ignored, sizeof ignored);
    return AIDC_EINTERNAL;
}

static int grant_app(PGconn *owner, const char *owner_url, const char *app_url, char *err,
                     size_t errsz)
{
    if (strcmp(owner_url, app_url) == 0) {
        log_warn("AIDC_MIGRATE_DATABASE_URL equals AIDC_DATABASE_URL: the application role owns "
                 "the tables, and `serve` will refuse to run as it");
        return 0;
    }
    PGconn *app = connect_url(app_url, "AIDC_DATABASE_URL", err, errsz);
    if (!app)
        return AIDC_EUNAVAIL;
    char *role = NULL;
    PGresult *r = run(app, "SELECT quote_ident(current_user)", 0, NULL, err, errsz);
    if (r)
        role = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(app);
    if (!role)
        return AIDC_EINTERNAL;
    const char *p[1] = {role};
    r = run(owner, sql_grant, 1, p, err, errsz);
    if (r)
        log_info("granted the application role %s its privileges", role);
    PQclear(r);
    free(role);
    return r ? 0 : AIDC_EINTERNAL;
}

/* The shortest audit retention the application role may ask for (migration 0010). */
static int set_retention_floor(PGconn *owner, int days, char *err, size_t errsz)
{
    char v[16], msg[512];
    snprintf(v, sizeof v, "%d", days);
    const char *p[1] = {v};
    PGresult *r = run(owner, sql_retention_floor, 1, p, msg, sizeof msg);
    if (!r) {
        snprintf(err, errsz, "cannot record the audit retention (AIDC_AUDIT_RETENTION_DAYS): %s",
                 msg);
        return AIDC_EINTERNAL;
    }
    if (strcmp(PQcmdTuples(r), "0") != 0)
        log_info("audit retention is at least %d days now (AIDC_AUDIT_RETENTION_DAYS)", days);
    PQclear(r);
    return 0;
}

int migrate_run(const char *owner_url, const char *app_url, int audit_retention_days, char *err,
                size_t errsz)
{
    int rc = AIDC_EINTERNAL, napplied = 0, db_max = 0, done = 0;
    PGresult *applied = NULL;
    if (!owner_url || !owner_url[0]) {
        snprintf(err, errsz, "AIDC_MIGRATE_DATABASE_URL (or AIDC_DATABASE_URL) is not set");
        return AIDC_EINVAL;
    }
    PGconn *c = connect_url(owner_url, "AIDC_MIGRATE_DATABASE_URL", err, errsz);
    if (!c)
        return AIDC_EUNAVAIL;
    char msg[512];
    PGresult *lock = run(c, "SELECT pg_advisory_lock(" MIGRATE_LOCK ")", 0, NULL, msg, sizeof msg);
    if (!lock) {
        snprintf(err, errsz, "cannot take the migration lock: %s", msg);
        goto out;
    }
    PQclear(lock);
    if (!run_ok(c, "SET client_min_messages = warning", msg, sizeof msg) ||
        !run_ok(c, sql_create, msg, sizeof msg)) {
        snprintf(err, errsz, "cannot create aidc_schema_migrations: %s", msg);
        goto out;
    }
    applied = run(c, sql_applied, 0, NULL, msg, sizeof msg);
    if (!applied) {
        snprintf(err, errsz, "cannot read aidc_schema_migrations: %s", msg);
        goto out;
    }
    rc = compare_applied(applied, &napplied, &db_max, err, errsz);
    if (rc)
        goto out;
    for (const struct embed_file *m = embed_migrations; m->name; m++) {
        if (is_applied(applied, version_of(m->name)))
            continue;
        rc = apply_one(c, m, err, errsz);
        if (rc)
            goto out;
        done++;
    }
    rc = set_retention_floor(c, audit_retention_days, err, errsz);
    if (!rc)
        rc = grant_app(c, owner_url, app_url ? app_url : owner_url, err, errsz);
    if (!rc)
        log_info("database schema is at version %d (%d migration%s applied now)",
                 migrate_latest_version(), done, done == 1 ? "" : "s");
out:
    PQclear(applied);
    PQfinish(c); /* ends the session, which releases the advisory lock */
    return rc;
}

int migrate_check(const char *app_url, bool *pending, char *err, size_t errsz)
{
    int rc = AIDC_EINVAL, napplied = 0, db_max = 0;
    PGresult *r = NULL;
    *pending = false;
    if (!app_url || !app_url[0]) {
        snprintf(err, errsz, "AIDC_DATABASE_URL is not set");
        return AIDC_EINVAL;
    }
    PGconn *c = connect_url(app_url, "AIDC_DATABASE_URL", err, errsz);
    if (!c)
        return AIDC_EUNAVAIL;
    char msg[512];
    r = run(c, sql_role, 0, NULL, msg, sizeof msg);
    if (!r || PQntuples(r) != 1) {
        snprintf(err, errsz, "cannot inspect the application role: %s", msg);
        goto out;
    }
    if (PQgetvalue(r, 0, 1)[0] == 't') {
        snprintf(err, errsz,
                 "AIDC_DATABASE_URL logs in as %s, a superuser or BYPASSRLS role: row-level "
                 "security would not apply; use a plain application role",
                 PQgetvalue(r, 0, 0));
        goto out;
    }
    if ((int)strtol(PQgetvalue(r, 0, 2), NULL, 10) > 0) {
        snprintf(err, errsz,
                 "AIDC_DATABASE_URL logs in as %s, which owns the aidc tables: row-level security "
                 "would not apply; run migrations as the owner (AIDC_MIGRATE_DATABASE_URL) and serve "
                 "as a separate application role",
                 PQgetvalue(r, 0, 0));
        goto out;
    }
    PQclear(r);
    r = run(c, sql_table_exists, 0, NULL, msg, sizeof msg);
    if (!r) {
        snprintf(err, errsz, "cannot inspect the schema: %s", msg);
        goto out;
    }
    if (PQgetvalue(r, 0, 0)[0] != 't') {
        *pending = true;
        snprintf(err, errsz, "the database has no aidc schema yet: run `aidcd migrate`");
        goto out;
    }
    PQclear(r);
    r = run(c, sql_applied, 0, NULL, msg, sizeof msg);
    if (!r) {
        snprintf(err, errsz, "cannot read aidc_schema_migrations: %s", msg);
        goto out;
    }
    rc = compare_applied(r, &napplied, &db_max, err, errsz);
    if (rc)
        goto out;
    /* every migration of this binary, not only the highest: one applied out of order
     * (or its row lost) would leave a hole behind a current-looking version */
    const struct embed_file *missing = NULL;
    for (const struct embed_file *m = embed_migrations; m->name && !missing; m++)
        if (!is_applied(r, version_of(m->name)))
            missing = m;
    if (missing && db_max < version_of(missing->name)) {
        *pending = true;
        snprintf(err, errsz, "database schema is at version %d, this aidcd needs %d: run `aidcd migrate`",
                 db_max, migrate_latest_version());
        rc = AIDC_EINVAL;
        goto out;
    }
    if (missing) {
        snprintf(err, errsz,
                 "migration %s is not applied although later ones are (version %d): restore "
                 "the database from a backup, or apply it by hand and record it",
                 missing->name, db_max);
        rc = AIDC_EINVAL;
        goto out;
    }
    rc = 0;
out:
    PQclear(r);
    PQfinish(c);
    return rc;
}

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int migrate_wait_reachable(const char *url, const char *what, int seconds)
{
    const char *keys[] = {"connect_timeout", "dbname", NULL};
    const char *vals[] = {"5", url, NULL};
    double start = mono_seconds(), logged = -1e9;
    long delay_ms = 250;
    for (;;) {
        PGPing p = PQpingParams(keys, vals, 1);
        if (p == PQPING_OK || p == PQPING_NO_ATTEMPT)
            return 0;
        double waited = mono_seconds() - start;
        if (waited >= seconds)
            return AIDC_EUNAVAIL;
        /* a line now and then, not one per attempt: a long outage stays readable */
        if (waited - logged >= 10) {
            log_warn("the PostgreSQL server of %s %s; waiting up to %d s more", what,
                     p == PQPING_REJECT ? "refuses connections (starting or stopping?)"
                                        : "does not answer",
                     (int)(seconds - waited + 0.5));
            logged = waited;
        }
        double left_ms = (seconds - waited) * 1000;
        long nap = left_ms < (double)delay_ms ? (long)left_ms + 1 : delay_ms;
        struct timespec t = {nap / 1000, (nap % 1000) * 1000000L};
        nanosleep(&t, NULL); /* nothing to block on: the server is not there yet */
        delay_ms = delay_ms * 2 > 2000 ? 2000 : delay_ms * 2;
    }
}
