/* storage.c - measurements and metering of storage spaces (see storage.h). */
#include "storage.h"

#include "../lib/err.h"
#include "pgcol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CL_AT, CL_SINCE };
static const struct db_stmt st_clock = {
    "storage_clock",
    "SELECT to_char(coalesce($1::timestamptz, now()) AT TIME ZONE 'UTC',"
    "               'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
    "       coalesce(extract(epoch FROM now() - (SELECT last_at FROM storage_scan)), 1e12)::float8",
    1};

static const struct db_stmt st_tenant = {"storage_tenant", "SELECT id FROM tenants WHERE slug = $1",
                                         1};

/*
 * The space's row is locked first (st_prev: its last measurement), then
 * replaced, so two measurements of one space - a second replica, a test
 * driving a pass - meter each stretch of time once: the later one waits and
 * sees the earlier one's measured_at. (One statement cannot do both: its
 * upsert would change the row before its own FOR UPDATE reached it.) The
 * pieces run from the previous measurement to this one, at this one's bytes,
 * cut at UTC hours like usage_intervals (a piece never crosses an hour, so
 * any hour, day or month is a sum of whole pieces).
 */
static const struct db_stmt st_prev = {
    "storage_prev",
    "SELECT to_char(measured_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    "  FROM storage_spaces WHERE tenant_id = $1::uuid AND kind = $2 AND name = $3 FOR UPDATE",
    3};
enum { RE_UPDATED, RE_PIECES };
static const struct db_stmt st_record = {
    "storage_record",
    "WITH sp AS (SELECT $1::uuid AS tenant_id, $2::text AS kind, $3::text AS name,"
    "                   CASE WHEN $2 = 'project' THEN (SELECT p.id FROM projects p"
    "                     WHERE p.tenant_id = $1::uuid AND p.slug = $3"
    "                     ORDER BY p.deleted_at IS NOT NULL, p.deleted_at DESC LIMIT 1) END"
    "                     AS project_id,"
    "                   $4::bigint AS bytes, $5::bigint AS entries, $6::boolean AS complete,"
    "                   coalesce($7::timestamptz, now()) AS at, $8::timestamptz AS prev),"
    " up AS (INSERT INTO storage_spaces (tenant_id, kind, name, project_id, bytes, entries,"
    "          complete, measured_at)"
    "        SELECT tenant_id, kind, name, project_id, bytes, entries, complete, at FROM sp"
    "        ON CONFLICT (tenant_id, kind, name) DO UPDATE SET project_id = EXCLUDED.project_id,"
    "          bytes = EXCLUDED.bytes, entries = EXCLUDED.entries, complete = EXCLUDED.complete,"
    "          measured_at = EXCLUDED.measured_at"
    "        WHERE storage_spaces.measured_at < EXCLUDED.measured_at RETURNING 1),"
    " ins AS (INSERT INTO storage_usage (tenant_id, project_id, kind, name, username, bytes,"
    "           started_at, ended_at, period)"
    "         SELECT sp.tenant_id, sp.project_id, sp.kind, sp.name,"
    "                CASE WHEN sp.kind = 'home' THEN sp.name END, sp.bytes,"
    "                greatest(sp.prev, h.h), least(sp.at, h.h + interval '1 hour'),"
    "                (date_trunc('month', h.h, 'UTC') AT TIME ZONE 'UTC')::date"
    "           FROM sp CROSS JOIN LATERAL generate_series(date_trunc('hour', sp.prev, 'UTC'),"
    "                sp.at - interval '1 microsecond', interval '1 hour') h(h)"
    "          WHERE sp.prev < sp.at AND sp.bytes > 0 AND EXISTS (SELECT 1 FROM up)"
    "            AND least(sp.at, h.h + interval '1 hour') > greatest(sp.prev, h.h)"
    "         RETURNING 1)"
    " SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM ins)",
    8};

static const struct db_stmt st_forget = {"storage_forget",
                                         "DELETE FROM storage_spaces WHERE tenant_id = $1::uuid"
                                         "   AND NOT (kind || '/' || name = ANY ($2::text[]))",
                                         2};

static const struct db_stmt st_scan_done = {
    "storage_scan_done",
    "INSERT INTO storage_scan (one, last_at) VALUES (true, $1::timestamptz)"
    " ON CONFLICT (one) DO UPDATE SET last_at = greatest(storage_scan.last_at, EXCLUDED.last_at)",
    1};

const struct db_stmt *const db_storage_stmts[] = {&st_clock,  &st_tenant,    &st_prev, &st_record,
                                                  &st_forget, &st_scan_done, NULL};

int db_storage_clock(struct db *db, const char *at, char at_out[40], double *since)
{
    const char *p[1] = {at};
    int e;
    PGresult *r = db_query(db, &st_clock, p, &e);
    if (!r)
        return e;
    e = pgcol_copy(r, 0, CL_AT, at_out, 40);
    if (!e)
        e = pgcol_double(r, 0, CL_SINCE, 1e12, since);
    PQclear(r);
    return e;
}

int db_storage_tenant(struct db *db, const char *slug, char id[37])
{
    const char *p[1] = {slug};
    int e;
    PGresult *r = db_query(db, &st_tenant, p, &e);
    if (!r)
        return e;
    e = PQntuples(r) == 1 ? pgcol_copy(r, 0, 0, id, 37) : AIDC_ENOTFOUND;
    PQclear(r);
    return e;
}

int db_storage_record(struct db *db, const struct db_storage_figures *f, long *pieces)
{
    const char *pk[3] = {f->tenant_id, f->kind, f->name};
    int e;
    PGresult *r = db_query(db, &st_prev, pk, &e);
    if (!r)
        return e;
    char prev[40] = "";
    if (PQntuples(r) == 1)
        e = pgcol_copy(r, 0, 0, prev, sizeof prev);
    PQclear(r);
    if (e)
        return e;
    char bytes[24], entries[24];
    snprintf(bytes, sizeof bytes, "%lld", f->bytes);
    snprintf(entries, sizeof entries, "%lld", f->entries);
    const char *p[8] = {
        f->tenant_id,         f->kind, f->name, bytes, entries, f->complete ? "t" : "f", f->at,
        prev[0] ? prev : NULL};
    if (!(r = db_query(db, &st_record, p, &e)))
        return e;
    long long n = 0;
    e = pgcol_ll(r, 0, RE_PIECES, 0, &n);
    *pieces = (long)n;
    PQclear(r);
    return e;
}

int db_storage_forget(struct db *db, const char *tenant_id, const char *present)
{
    const char *p[2] = {tenant_id, present};
    return db_exec(db, &st_forget, p);
}

int db_storage_scan_done(struct db *db, const char *at)
{
    const char *p[1] = {at};
    return db_exec(db, &st_scan_done, p);
}
