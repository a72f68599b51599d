/* billing.c - metering, usage, prices and invoices (see billing.h). */
#include "billing.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "pgcol.h"
#include "plans.h"
#include "rowjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- metering ------------------------------------------------------------------------ */

/*
 * A run is cut up to m1: its end when closed; when open, the last hour
 * boundary before the cluster last answered for its jobs (a run without a
 * cluster, from before 0006, up to now). The UPDATE re-checks the run under
 * its row lock, so a concurrent close (or a second cutter) makes it skip the
 * run rather than cut twice or past the end; the round after sees it anew.
 */
static const struct db_stmt st_meter_cut = {
    "meter_cut",
    "WITH cand AS (SELECT r.id, coalesce(r.metered_to, r.started_at) AS m0,"
    "                CASE WHEN r.ended_at IS NOT NULL THEN r.ended_at"
    "                     ELSE date_trunc('hour', least(now(), CASE WHEN r.cluster_id IS NULL"
    "                            THEN now() ELSE coalesce(c.jobs_seen_at, '-infinity') END), 'UTC')"
    "                END AS m1,"
    "                aidc_gpu_fraction(c.options, r.gpu_type) AS frac, r.ended_at IS NOT NULL AS "
    "closed"
    "           FROM job_runs r LEFT JOIN clusters c ON c.id = r.cluster_id"
    "          WHERE r.metered_to IS NULL OR r.ended_at IS NULL OR r.metered_to < r.ended_at),"
    /* a run that ended as it started is done too, with no interval */
    " due AS (SELECT * FROM cand WHERE m1 > m0 OR (closed AND m1 = m0) ORDER BY id LIMIT $1::int),"
    " u AS (UPDATE job_runs r SET metered_to = d.m1 FROM due d"
    "        WHERE r.id = d.id AND coalesce(r.metered_to, r.started_at) = d.m0"
    "          AND r.metered_to IS DISTINCT FROM d.m1"
    "          AND (r.ended_at IS NULL OR r.ended_at >= d.m1)"
    "       RETURNING r.id, r.job_id, r.tenant_id, r.project_id, r.cluster_id, r.gpu_type,"
    "                 r.gpus, r.cpus, r.memory_gib, d.m0, d.m1, d.frac),"
    " ins AS (INSERT INTO usage_intervals (run_id, job_id, tenant_id, project_id, username,"
    "           cluster_id, gpu_type, gpus, cpus, memory_gib, started_at, ended_at, period)"
    "         SELECT u.id, u.job_id, u.tenant_id, u.project_id, j.username, u.cluster_id,"
    "                u.gpu_type, u.gpus * u.frac, u.cpus, u.memory_gib, greatest(u.m0, h.h),"
    "                least(u.m1, h.h + interval '1 hour'),"
    "                (date_trunc('month', h.h, 'UTC') AT TIME ZONE 'UTC')::date"
    "           FROM u JOIN jobs j ON j.id = u.job_id CROSS JOIN LATERAL generate_series("
    "                date_trunc('hour', u.m0, 'UTC'), u.m1 - interval '1 microsecond',"
    "                interval '1 hour') h(h)"
    "          WHERE least(u.m1, h.h + interval '1 hour') > greatest(u.m0, h.h)"
    "         RETURNING tenant_id, project_id, period,"
    "                   gpus * extract(epoch FROM ended_at - started_at) AS gs),"
    " mon AS (INSERT INTO usage_monthly (tenant_id, project_id, period, gpu_seconds)"
    "         SELECT tenant_id, project_id, period, sum(gs) FROM ins WHERE gs > 0"
    "          GROUP BY tenant_id, project_id, period"
    "         ON CONFLICT (period, tenant_id, project_id) DO UPDATE"
    "           SET gpu_seconds = usage_monthly.gpu_seconds + EXCLUDED.gpu_seconds RETURNING 1)"
    " SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM ins), (SELECT count(*) FROM mon)",
    1};
static const struct db_stmt st_meter_capacity = {
    "meter_capacity",
    "INSERT INTO capacity_hours (cluster_id, resource, hour, total)"
    " SELECT cluster_id, resource, date_trunc('hour', now(), 'UTC'), total"
    "   FROM cluster_inventory WHERE resource LIKE 'gpu:%'"
    " ON CONFLICT (cluster_id, resource, hour) DO UPDATE SET total = EXCLUDED.total"
    "  WHERE capacity_hours.total <> EXCLUDED.total",
    0};

/* ---- usage --------------------------------------------------------------------------- */

/* Each piece of usage once per resource it holds, with its quantity in hours. */
#define PER_RESOURCE                                                                               \
    " CROSS JOIN LATERAL (VALUES ('gpu:' || p.gpu_type, p.gpus, 'gpu_hour'),"                      \
    "   ('cpu', p.cpus::numeric, 'core_hour'), ('memory_gib', p.memory_gib::numeric, 'gib_hour'))" \
    "   v(res, n, unit)"
#define USAGE_WHERE(tenant)                                                                        \
    " WHERE " tenant " AND v.n > 0 AND v.res IS NOT NULL"                                          \
    "   AND p.e > p.s AND ($5::text IS NULL OR pr.slug = $5) AND ($6::text IS NULL OR"             \
    "   p.username = $6) AND ($7::text IS NULL OR v.res = $7)"
#define GROUP_KEY(name, expr) "CASE WHEN '" name "' = ANY ($4::text[]) THEN " expr " END"

/*
 * The report sums each group's GPU-, core- and GiB-seconds per GPU type (and
 * the storage spaces' byte-seconds, aidc_storage_pieces) by ids first, and names and splits them into resources after: a month of a
 * platform is hundreds of thousands of intervals, and the planner (behind
 * row-level security, with clipped ranges) expects a handful, so any join
 * made before the grouping would run once per interval.
 */
/* clang-format off */
#define USAGE_REPORT(tenant)                                                                       \
    "WITH a AS (SELECT " GROUP_KEY("tenant", "p.tenant_id") " AS tid,"                             \
    "         " GROUP_KEY("project", "p.project_id") " AS pid,"                                    \
    "         " GROUP_KEY("user", "p.username") " AS \"user\","                                    \
    "         " GROUP_KEY("day", "to_char(p.s AT TIME ZONE 'UTC', 'YYYY-MM-DD')") " AS day,"       \
    "         " GROUP_KEY("week", "to_char(p.s AT TIME ZONE 'UTC', 'IYYY-\"W\"IW')") " AS week,"   \
    "         " GROUP_KEY("month", "to_char(p.s AT TIME ZONE 'UTC', 'YYYY-MM')") " AS month,"      \
    "         p.gpu_type, sum(p.gpus * x.secs) AS g, sum(p.cpus * x.secs) AS c,"                   \
    "         sum(p.memory_gib * x.secs) AS m, sum(p.bytes * x.secs) AS b"                         \
    "    FROM (SELECT u.tenant_id, u.project_id, u.username, u.gpu_type, u.gpus, u.cpus,"          \
    "                 u.memory_gib, 0::bigint AS bytes, u.s, u.e"                                  \
    "            FROM aidc_usage_pieces($1::timestamptz, $2::timestamptz) u"                       \
    "          UNION ALL"                                                                          \
    "          SELECT st.tenant_id, st.project_id, st.username, NULL, 0, 0, 0, st.bytes, st.s,"    \
    "                 st.e FROM aidc_storage_pieces($1::timestamptz, $2::timestamptz) st) p"       \
    "    CROSS JOIN LATERAL (SELECT extract(epoch FROM p.e - p.s) AS secs) x"                      \
    "   WHERE " tenant " AND p.e > p.s"                                                            \
    "     AND ($5::text IS NULL OR p.project_id IN (SELECT id FROM projects WHERE slug = $5))"     \
    "     AND ($6::text IS NULL OR p.username = $6)"                                               \
    "   GROUP BY 1, 2, 3, 4, 5, 6, 7)"                                                             \
    " SELECT t.slug AS tenant, coalesce(pr.slug, a.pid::text) AS project, a.\"user\", a.day,"      \
    "        a.week, a.month, v.res AS resource, min(v.unit) AS unit,"                             \
    "        round(sum(v.n) / 3600, 6)::text AS quantity, t.name AS tenant_name,"                  \
    "        pr.name AS project_name"                                                              \
    "   FROM a LEFT JOIN tenants t ON t.id = a.tid LEFT JOIN projects pr ON pr.id = a.pid"         \
    "   CROSS JOIN LATERAL (VALUES ('gpu:' || a.gpu_type, a.g, 'gpu_hour'),"                       \
    "        ('cpu', a.c, 'core_hour'), ('memory_gib', a.m, 'gib_hour'),"                          \
    "        ('storage_gib', a.b / 1073741824, 'gib_hour')) v(res, n, unit)"                       \
    "  WHERE v.n > 0 AND v.res IS NOT NULL AND ($7::text IS NULL OR v.res = $7)"                   \
    "  GROUP BY 1, 2, 3, 4, 5, 6, 7, 10, 11 ORDER BY 6, 5, 4, 1, 2, 3, 7 LIMIT $8::int"
/* clang-format on */

/* The report's columns, in its SELECT's order. */
enum {
    R_TENANT,
    R_PROJECT,
    R_USER,
    R_DAY,
    R_WEEK,
    R_MONTH,
    R_RESOURCE,
    R_UNIT,
    R_QUANTITY,
    R_TENANT_NAME,
    R_PROJECT_NAME,
    R_NCOLS
};
/*
 * One statement per scope: GET requests run without a transaction, so with
 * the connection's generic plans - where "$3 IS NULL OR tenant_id = $3"
 * would keep a tenant's report off the tenant's index.
 */
static const struct db_stmt st_usage_report = {"usage_report",
                                               USAGE_REPORT("p.tenant_id = $3::uuid"), 8};
static const struct db_stmt st_usage_report_all = {"usage_report_all",
                                                   USAGE_REPORT("$3::uuid IS NULL"), 8};

/* The jobs behind a usage row, each with its intervals, keyset by job id. */
#define USAGE_JOBS(tenant)                                                                         \
    "WITH x AS (SELECT p.job_id, t.slug AS tenant, coalesce(pr.slug, p.project_id::text) AS "      \
    "project,"                                                                                     \
    "                  p.username, v.res, v.unit, p.s, p.e,"                                       \
    "                  v.n * extract(epoch FROM p.e - p.s) / 3600 AS q"                            \
    "             FROM aidc_usage_pieces($1::timestamptz, $2::timestamptz) p"                      \
    "             JOIN tenants t ON t.id = p.tenant_id LEFT JOIN projects pr ON pr.id = "          \
    "p.project_id" PER_RESOURCE                                                                    \
    USAGE_WHERE(                                                                                   \
        tenant) "              AND ($4::uuid IS NULL OR p.job_id > $4::uuid)),"                    \
                " ids AS (SELECT DISTINCT x.job_id FROM x JOIN jobs jv ON jv.id = x.job_id"              \
                "           ORDER BY x.job_id LIMIT $8::int)"            \
                " SELECT json_build_object('job', json_build_object('id', j.id, 'name', j.name,"   \
                "          'state', j.state),"                                                     \
                "          'tenant', min(x.tenant), 'project', min(x.project), 'user', "           \
                "min(x.username),"                                                                 \
                "          'resources', (SELECT json_agg(json_build_object('resource', y.res, "    \
                "'unit', y.unit,"                                                                  \
                "                          'quantity', round(y.q, 6)) ORDER BY y.res)"             \
                "                          FROM (SELECT res, min(unit) AS unit, sum(q) AS q FROM " \
                "x x2"                                                                             \
                "                                 WHERE x2.job_id = j.id GROUP BY res) y),"        \
                "          'intervals', json_agg(json_build_object('resource', x.res, "            \
                "'started_at',"                                                                    \
                "             to_char(x.s AT TIME ZONE 'UTC', "                                    \
                "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"                                            \
                "             'ended_at', to_char(x.e AT TIME ZONE 'UTC', "                        \
                "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"                                            \
                "             'quantity', round(x.q, 6)) ORDER BY x.s, x.res)),"                   \
                "        j.id::text AS _cursor"                                                    \
                "   FROM ids JOIN x ON x.job_id = ids.job_id JOIN jobs j ON j.id = ids.job_id"     \
                "  GROUP BY j.id ORDER BY j.id"
static const struct db_stmt st_usage_jobs = {"usage_jobs", USAGE_JOBS("p.tenant_id = $3::uuid"), 8};
static const struct db_stmt st_usage_jobs_all = {"usage_jobs_all", USAGE_JOBS("$3::uuid IS NULL"),
                                                 8};

/* Allocated GPU-hours and capacity, hour by hour (capacity as recorded then, else now). */
enum { U_HOUR, U_ALLOCATED, U_CAPACITY, U_ISODOW, U_HOUR_OF_DAY };
static const struct db_stmt st_utilization = {
    "usage_utilization",
    "WITH h AS (SELECT generate_series(date_trunc('hour', $3::timestamptz, 'UTC'),"
    "                                  $4::timestamptz - interval '1 microsecond',"
    "                                  interval '1 hour') AS hour),"
    " inv AS (SELECT cluster_id, resource, total FROM cluster_inventory"
    "          WHERE resource LIKE 'gpu:%' AND ($1::uuid IS NULL OR cluster_id = $1::uuid)"
    "            AND ($2::text IS NULL OR resource = 'gpu:' || $2)),"
    " cap AS (SELECT h.hour, sum(coalesce((SELECT c.total FROM capacity_hours c"
    "                  WHERE c.cluster_id = inv.cluster_id AND c.resource = inv.resource"
    "                    AND c.hour <= h.hour ORDER BY c.hour DESC LIMIT 1), inv.total)) AS total"
    "           FROM h CROSS JOIN inv GROUP BY h.hour),"
    " alloc AS (SELECT date_trunc('hour', p.s, 'UTC') AS hour,"
    "                  sum(p.gpus * extract(epoch FROM p.e - p.s)) / 3600 AS gh"
    "             FROM aidc_usage_pieces($3::timestamptz, $4::timestamptz) p"
    "            WHERE p.gpus > 0 AND p.e > p.s AND ($1::uuid IS NULL OR p.cluster_id = $1::uuid)"
    "              AND ($2::text IS NULL OR p.gpu_type = $2) GROUP BY 1)"
    " SELECT to_char(h.hour AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:00:00\"Z\"'),"
    "        round(coalesce(alloc.gh, 0), 6)::text, coalesce(cap.total, 0)::text,"
    "        extract(isodow FROM h.hour AT TIME ZONE 'UTC')::int,"
    "        extract(hour FROM h.hour AT TIME ZONE 'UTC')::int"
    "   FROM h LEFT JOIN cap USING (hour) LEFT JOIN alloc USING (hour) ORDER BY h.hour",
    4};

/* ---- prices -------------------------------------------------------------------------- */

#define PRICE_COLS                                                                                 \
    "p.id, p.resource, t.slug AS tenant, p.unit_price::text AS unit_price, p.currency,"            \
    " CASE WHEN p.resource LIKE 'gpu:%' THEN 'gpu_hour' WHEN p.resource = 'cpu' THEN 'core_hour'"  \
    " ELSE 'gib_hour' END AS unit, p.effective_from, p.created_by, p.approved_by,"                 \
    " p.approval_id, p.created_at"

static const struct db_stmt st_price_list = {
    "price_list",
    "SELECT " PRICE_COLS ", p.created_at::text || '|' || p.id AS _cursor"
    " FROM prices p LEFT JOIN tenants t ON t.id = p.tenant_id"
    " WHERE ($1::text IS NULL OR p.resource = $1) AND ($2::uuid IS NULL OR p.tenant_id = $2::uuid)"
    "   AND ($3::text IS NULL OR (p.created_at, p.id) < (split_part($3, '|', 1)::timestamptz,"
    "                                                  split_part($3, '|', 2)::uuid))"
    " ORDER BY p.created_at DESC, p.id DESC LIMIT $4::int + 1",
    4};
static const struct db_stmt st_price_create = {
    "price_create",
    "WITH p AS (INSERT INTO prices (resource, tenant_id, unit_price, currency, effective_from,"
    "             created_by, approved_by, approval_id)"
    "           VALUES ($1, $2::uuid, $3::numeric, $4, $5::timestamptz,"
    "                   coalesce((SELECT u.username FROM approvals a JOIN users u"
    "                              ON u.id = a.requested_by WHERE a.id = $7::uuid), $6),"
    "                   CASE WHEN $7::uuid IS NOT NULL THEN $6 END, $7::uuid) RETURNING *)"
    " SELECT " PRICE_COLS " FROM p LEFT JOIN tenants t ON t.id = p.tenant_id",
    7};

/* ---- invoices ------------------------------------------------------------------------ */

static const struct db_stmt st_inv_upsert = {
    "invoice_upsert",
    "INSERT INTO invoices (tenant_id, period, generated_by) VALUES ($1::uuid, $2::date, $3)"
    " ON CONFLICT (tenant_id, period) DO UPDATE SET generated_at = now(),"
    "   generated_by = EXCLUDED.generated_by WHERE invoices.state = 'draft'"
    " RETURNING id",
    3};
static const struct db_stmt st_inv_clear = {
    "invoice_clear", "DELETE FROM invoice_lines WHERE invoice_id = $1::uuid", 1};
/*
 * The draft's lines from aidc_invoice_compute, and its total; the last row
 * names what is wrong (resources without a price, several currencies), in
 * which case the caller rolls back. The currency is the lines' prices'; an
 * invoice without lines takes that of the prices that apply to the tenant at
 * the end of the month (per resource its own, else the default, as
 * aidc_invoice_compute chooses them) when they agree on one, so its total
 * reads like any other ({"amount": "0.00", "currency": "CNY"}).
 */
static const struct db_stmt st_inv_fill = {
    "invoice_fill",
    "WITH c AS (SELECT * FROM aidc_invoice_compute($2::uuid, $3::date, NULL)),"
    " chk AS (SELECT (SELECT string_agg(DISTINCT resource, ', ' ORDER BY resource) FROM c"
    "                  WHERE unit_price IS NULL) AS missing,"
    "                (SELECT string_agg(DISTINCT currency, ', ' ORDER BY currency) FROM c) AS cur,"
    "                (SELECT count(DISTINCT currency) FROM c) AS ncur),"
    " dflt AS (SELECT CASE WHEN count(DISTINCT x.currency) = 1 THEN min(x.currency) END AS cur"
    "            FROM (SELECT DISTINCT ON (p.resource) p.currency FROM prices p"
    "                   WHERE (p.tenant_id = $2::uuid OR p.tenant_id IS NULL)"
    "                     AND p.effective_from < $3::date + interval '1 month'"
    "                   ORDER BY p.resource, p.tenant_id IS NULL, p.effective_from DESC) x),"
    " ins AS (INSERT INTO invoice_lines (invoice_id, line_no, tenant_id, project_id, project,"
    "           project_name, resource, kind, original_period, quantity, unit, unit_price, amount)"
    "         SELECT $1::uuid, row_number() OVER (ORDER BY pr.slug, c.project_id, c.resource,"
    "                  c.kind DESC, c.original_period, c.unit_price),"
    "                $2::uuid, c.project_id, coalesce(pr.slug, c.project_id::text, ''),"
    "                coalesce(pr.name, ''), c.resource,"
    "                c.kind, c.original_period, round(c.quantity, 6),"
    "                CASE WHEN c.resource LIKE 'gpu:%' THEN 'gpu_hour'"
    "                     WHEN c.resource = 'cpu' THEN 'core_hour' ELSE 'gib_hour' END,"
    "                c.unit_price, round(round(c.quantity, 6) * c.unit_price, 2)"
    "           FROM c LEFT JOIN projects pr ON pr.id = c.project_id, chk"
    "          WHERE chk.missing IS NULL AND chk.ncur <= 1 AND round(c.quantity, 6) <> 0"
    "         RETURNING amount),"
    " up AS (UPDATE invoices SET currency = CASE WHEN chk.ncur = 1 THEN chk.cur"
    "                                              WHEN chk.ncur = 0 THEN dflt.cur END,"
    "          total = (SELECT round(coalesce(sum(amount), 0), 2)"
    "          FROM ins) FROM chk, dflt WHERE id = $1::uuid RETURNING 1)"
    " SELECT chk.missing, chk.ncur, chk.cur, (SELECT count(*) FROM up) FROM chk",
    3};
static const struct db_stmt st_inv_lock = {
    "invoice_lock",
    "SELECT tenant_id, to_char(period, 'YYYY-MM-DD'), state,"
    "       (period + interval '1 month') > now(),"
    "       to_char(generated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
    "  FROM invoices WHERE id = $1::uuid FOR UPDATE",
    1};
static const struct db_stmt st_inv_unmetered = {
    "invoice_unmetered",
    "SELECT count(*) FROM job_runs r WHERE r.tenant_id = $1::uuid"
    "   AND (r.metered_to IS NULL OR r.ended_at IS NULL OR r.metered_to < r.ended_at)"
    "   AND coalesce(r.metered_to, r.started_at) < $2::date + interval '1 month'",
    2};
/* the tenant's storage (when it has any) measured since the month's end? */
static const struct db_stmt st_inv_unmeasured = {
    "invoice_unmeasured",
    "SELECT (EXISTS (SELECT 1 FROM storage_spaces WHERE tenant_id = $1::uuid)"
    "   AND coalesce((SELECT last_at FROM storage_scan), '-infinity')"
    "       < $2::date + interval '1 month')::int",
    2};
static const struct db_stmt st_inv_mark_storage = {
    "invoice_mark_storage",
    "UPDATE storage_usage u SET invoice_id = $1::uuid"
    " WHERE u.tenant_id = $2::uuid AND u.invoice_id IS NULL"
    "   AND (u.period = $3::date OR (u.period < $3::date AND EXISTS (SELECT 1 FROM invoices i"
    "        WHERE i.tenant_id = $2::uuid AND i.period = u.period AND i.state = 'final')))",
    3};
static const struct db_stmt st_inv_mark = {
    "invoice_mark",
    "UPDATE usage_intervals u SET invoice_id = $1::uuid"
    " WHERE u.tenant_id = $2::uuid AND u.invoice_id IS NULL"
    "   AND (u.period = $3::date OR (u.period < $3::date AND EXISTS (SELECT 1 FROM invoices i"
    "        WHERE i.tenant_id = $2::uuid AND i.period = u.period AND i.state = 'final')))",
    3};
/* lines of the claimed intervals that the draft does not have, or the other way round */
static const struct db_stmt st_inv_diff = {
    "invoice_diff",
    "WITH now_ AS (SELECT project_id, resource, kind, original_period, unit_price,"
    "                     round(quantity, 6) AS q FROM aidc_invoice_compute($2::uuid, $3::date, "
    "$1::uuid)"
    "               WHERE round(quantity, 6) <> 0),"
    " was AS (SELECT project_id, resource, kind, original_period, unit_price, quantity AS q"
    "           FROM invoice_lines WHERE invoice_id = $1::uuid)"
    " SELECT (SELECT count(*) FROM (SELECT * FROM now_ EXCEPT ALL SELECT * FROM was) a)"
    "      + (SELECT count(*) FROM (SELECT * FROM was EXCEPT ALL SELECT * FROM now_) b)",
    3};
static const struct db_stmt st_inv_final = {
    "invoice_final",
    "UPDATE invoices SET state = 'final', finalized_at = now(), finalized_by = $2"
    " WHERE id = $1::uuid",
    2};
#define INVOICE_SUMMARY                                                                            \
    "'id', i.id, 'tenant', t.slug, 'period', to_char(i.period, 'YYYY-MM'), 'state', i.state,"      \
    " 'total', json_build_object('amount', i.total::text, 'currency', i.currency),"                \
    " 'generated_at', to_char(i.generated_at AT TIME ZONE 'UTC', "                                 \
    "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"                                                           \
    " 'generated_by', i.generated_by,"                                                             \
    " 'finalized_at', to_char(i.finalized_at AT TIME ZONE 'UTC', "                                 \
    "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"                                                           \
    " 'finalized_by', i.finalized_by"
static const struct db_stmt st_inv_get = {
    "invoice_get",
    "SELECT json_build_object(" INVOICE_SUMMARY ","
    "  'lines', coalesce((SELECT json_agg(json_build_object('project', l.project,"
    "      'project_name', l.project_name,"
    "      'resource', l.resource, 'kind', l.kind,"
    "      'original_period', to_char(l.original_period, 'YYYY-MM'), 'quantity', l.quantity::text,"
    "      'unit', l.unit, 'unit_price', l.unit_price::text, 'amount', l.amount::text)"
    "      ORDER BY l.line_no) FROM invoice_lines l WHERE l.invoice_id = i.id), '[]'),"
    "  'subtotals', coalesce((SELECT json_agg(json_build_object('project', s.project,"
    "      'amount', s.amount::text) ORDER BY s.project)"
    "      FROM (SELECT project, sum(amount) AS amount FROM invoice_lines"
    "             WHERE invoice_id = i.id GROUP BY project) s), '[]'))"
    " FROM invoices i JOIN tenants t ON t.id = i.tenant_id WHERE i.id = $1::uuid"
    "   AND ($2::text IS NULL OR i.tenant_id = ANY (string_to_array($2, ',')::uuid[]))",
    2};
static const struct db_stmt st_inv_list = {
    "invoice_list",
    "SELECT json_build_object(" INVOICE_SUMMARY "),"
    "       to_char(i.period, 'YYYY-MM-DD') || '|' || i.id AS _cursor"
    "  FROM invoices i JOIN tenants t ON t.id = i.tenant_id"
    " WHERE ($1::text IS NULL OR t.slug = $1) AND ($2::date IS NULL OR i.period = $2::date)"
    "   AND ($3::text IS NULL OR (i.period, i.id) < (split_part($3, '|', 1)::date,"
    "                                              split_part($3, '|', 2)::uuid))"
    "   AND ($5::text IS NULL OR i.tenant_id = ANY (string_to_array($5, ',')::uuid[]))"
    " ORDER BY i.period DESC, i.id DESC LIMIT $4::int + 1",
    5};

static const struct db_stmt st_checkpoint = {
    "job_checkpoint",
    "WITH j AS (SELECT id, state FROM jobs WHERE tenant_id = $1::uuid AND id = $2::uuid),"
    " u AS (UPDATE jobs SET checkpoint_at = now(), updated_at = now()"
    "        WHERE id = (SELECT id FROM j WHERE state = 'running') RETURNING id, checkpoint_at)"
    " SELECT j.id, j.state, u.checkpoint_at FROM j LEFT JOIN u ON u.id = j.id",
    2};

const struct db_stmt *const db_billing_stmts[] = {&st_meter_cut,      &st_meter_capacity,
                                                        &st_usage_report,
                                                  &st_usage_jobs,     &st_usage_report_all,
                                                  &st_usage_jobs_all, &st_utilization,
                                                  &st_price_list,     &st_price_create,
                                                  &st_inv_upsert,     &st_inv_clear,
                                                  &st_inv_fill,       &st_inv_lock,
                                                  &st_inv_unmetered,  &st_inv_mark,
                                                  &st_inv_unmeasured, &st_inv_mark_storage,
                                                  &st_inv_diff,       &st_inv_final,
                                                  &st_inv_get,        &st_inv_list,
                                                  &st_checkpoint,     NULL};

/* ---- metering ---- */

int db_meter_cut(struct db *db, int max, long *runs, long *intervals)
{
    char n[16];
    snprintf(n, sizeof n, "%d", max);
    const char *p[1] = {n};
    int e;
    PGresult *r = db_query(db, &st_meter_cut, p, &e);
    if (!r)
        return e;
    *runs = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    *intervals = strtol(PQgetvalue(r, 0, 1), NULL, 10);
    PQclear(r);
    return 0;
}

int db_meter_capacity(struct db *db)
{
    return db_exec(db, &st_meter_capacity, NULL);
}

/* ---- usage ---- */

static void usage_params(const struct db_usage_query *q, char limit[24], const char *p[8])
{
    snprintf(limit, 24, "%ld", q->limit + 1);
    const char *v[8] = {q->from,    q->to,   q->tenant_id, q->group_by ? q->group_by : "{}",
                        q->project, q->user, q->resource,  limit};
    memcpy(p, v, sizeof v);
}

int db_usage_report(struct db *db, const struct db_usage_query *q, db_usage_row_fn fn, void *ctx)
{
    char limit[24];
    const char *p[8];
    usage_params(q, limit, p);
    int e;
    PGresult *r = db_query(db, q->tenant_id ? &st_usage_report : &st_usage_report_all, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    if (PQnfields(r) < R_NCOLS) { /* a read carries the auth epoch after them (readctx.h) */
        e = AIDC_EINTERNAL;
    } else if (n > q->limit) {
        e = AIDC_ETOOBIG;
    } else {
        /* PQgetvalue gives "" for NULL: a key the report is not grouped by */
        for (int i = 0; i < n; i++) {
            struct db_usage_row row = {
                PQgetvalue(r, i, R_TENANT),      PQgetvalue(r, i, R_PROJECT),
                PQgetvalue(r, i, R_USER),        PQgetvalue(r, i, R_DAY),
                PQgetvalue(r, i, R_WEEK),        PQgetvalue(r, i, R_MONTH),
                PQgetvalue(r, i, R_RESOURCE),    PQgetvalue(r, i, R_UNIT),
                PQgetvalue(r, i, R_QUANTITY),    PQgetvalue(r, i, R_TENANT_NAME),
                PQgetvalue(r, i, R_PROJECT_NAME)};
            fn(&row, ctx);
        }
    }
    PQclear(r);
    return e;
}

int db_usage_jobs(struct db *db, const struct db_usage_query *q, struct db_rows *out)
{
    char limit[24];
    const char *p[8];
    usage_params(q, limit, p);
    p[3] = q->after; /* no grouping here: the slot carries the cursor */
    return rowjson_query_rows(db, q->tenant_id ? &st_usage_jobs : &st_usage_jobs_all, p, true, out);
}

int db_usage_utilization(struct db *db, const char *cluster_id, const char *gpu_type,
                         const char *from, const char *to, struct db_util_hours *out)
{
    const char *p[4] = {cluster_id, gpu_type, from, to};
    int e;
    memset(out, 0, sizeof *out);
    PGresult *r = db_query(db, &st_utilization, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++) {
        struct db_util_hour *h = &out->v[i];
        long long dow = 0, hod = 0;
        e = pgcol_copy(r, i, U_HOUR, h->hour, sizeof h->hour);
        if (!e)
            e = pgcol_double(r, i, U_ALLOCATED, 0, &h->allocated);
        if (!e)
            e = pgcol_double(r, i, U_CAPACITY, 0, &h->capacity);
        if (!e)
            e = pgcol_ll(r, i, U_ISODOW, 0, &dow);
        if (!e)
            e = pgcol_ll(r, i, U_HOUR_OF_DAY, 0, &hod);
        h->isodow = (int)dow;
        h->hour_of_day = (int)hod;
        out->n += !e;
    }
    PQclear(r);
    return e;
}

void db_util_hours_free(struct db_util_hours *h)
{
    free(h->v);
    memset(h, 0, sizeof *h);
}

/* ---- prices ---- */

int db_price_list(struct db *db, const char *resource, const char *tenant_id, const char *after,
                  int limit, struct db_rows *out)
{
    char n[16];
    snprintf(n, sizeof n, "%d", limit);
    const char *p[4] = {resource, tenant_id, after, n};
    return rowjson_query_rows(db, &st_price_list, p, false, out);
}

int db_price_create(struct db *db, const char *const fields[7], json_t **out)
{
    return rowjson_query_one(db, &st_price_create, fields, out);
}

/* ---- invoices ---- */

void db_invoice_why_free(struct db_invoice_why *why)
{
    free(why->text);
    memset(why, 0, sizeof *why);
}

int db_invoice_generate(struct db *db, const char *tenant_id, const char *period, const char *by,
                        char id[37], struct db_invoice_why *why)
{
    memset(why, 0, sizeof *why);
    const char *p[3] = {tenant_id, period, by};
    int e = db_custom_plans(db);
    if (e)
        return e;
    PGresult *r = db_query(db, &st_inv_upsert, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ECONFLICT;
    }
    snprintf(id, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    const char *pc[1] = {id};
    if ((e = db_exec(db, &st_inv_clear, pc)))
        return e;
    const char *pf[3] = {id, tenant_id, period};
    if (!(r = db_query(db, &st_inv_fill, pf, &e)))
        return e;
    if (!PQgetisnull(r, 0, 0)) {
        why->refusal = DB_INVOICE_NO_PRICE;
        why->text = xstrdup(PQgetvalue(r, 0, 0));
    } else if (strtol(PQgetvalue(r, 0, 1), NULL, 10) > 1) {
        why->refusal = DB_INVOICE_CURRENCIES;
        why->text = xstrdup(PQgetvalue(r, 0, 2));
    }
    PQclear(r);
    return 0;
}

static long count_of(struct db *db, const struct db_stmt *st, const char *const *p, int *e)
{
    PGresult *r = db_query(db, st, p, e);
    if (!r)
        return -1;
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

int db_invoice_finalize(struct db *db, const char *id, const char *by, struct db_invoice_why *why)
{
    memset(why, 0, sizeof *why);
    const char *p[1] = {id};
    int e;
    PGresult *r = db_query(db, &st_inv_lock, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    char tenant[37], period[11], generated[64];
    snprintf(tenant, sizeof tenant, "%s", PQgetvalue(r, 0, 0));
    snprintf(period, sizeof period, "%s", PQgetvalue(r, 0, 1));
    snprintf(generated, sizeof generated, "%s", PQgetvalue(r, 0, 4));
    bool final = strcmp(PQgetvalue(r, 0, 2), "final") == 0;
    bool open = PQgetvalue(r, 0, 3)[0] == 't';
    PQclear(r);
    snprintf(why->period, sizeof why->period, "%.7s", period);
    if (final || open) {
        why->refusal = final ? DB_INVOICE_FINAL : DB_INVOICE_PERIOD_OPEN;
        return AIDC_ECONFLICT;
    }
    const char *pu[2] = {tenant, period};
    long unmetered = count_of(db, &st_inv_unmetered, pu, &e);
    if (unmetered < 0)
        return e;
    if (unmetered > 0) {
        why->refusal = DB_INVOICE_UNMETERED;
        why->runs = unmetered;
        return AIDC_ECONFLICT;
    }
    long unmeasured = count_of(db, &st_inv_unmeasured, pu, &e);
    if (unmeasured < 0)
        return e;
    if (unmeasured > 0) {
        why->refusal = DB_INVOICE_UNMEASURED;
        return AIDC_ECONFLICT;
    }
    const char *pm[3] = {id, tenant, period};
    if ((e = db_custom_plans(db)) || (e = db_exec(db, &st_inv_mark, pm)) ||
        (e = db_exec(db, &st_inv_mark_storage, pm)))
        return e;
    long diff = count_of(db, &st_inv_diff, pm, &e);
    if (diff < 0)
        return e;
    if (diff > 0) {
        why->refusal = DB_INVOICE_CHANGED;
        why->text = xstrdup(generated);
        return AIDC_ECONFLICT;
    }
    const char *pf[2] = {id, by};
    return db_exec(db, &st_inv_final, pf);
}

int db_invoice_get(struct db *db, const char *id, const char *only, json_t **out)
{
    const char *p[2] = {id, only};
    int e;
    PGresult *r = db_query(db, &st_inv_get, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    *out = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    PQclear(r);
    return *out ? 0 : AIDC_EINTERNAL;
}

int db_invoice_list(struct db *db, const char *tenant_slug, const char *period, const char *after,
                    int limit, const char *only, struct db_rows *out)
{
    char n[16];
    snprintf(n, sizeof n, "%d", limit);
    const char *p[5] = {tenant_slug, period, after, n, only};
    return rowjson_query_rows(db, &st_inv_list, p, true, out);
}

int db_job_checkpoint(struct db *db, const char *tenant_id, const char *job_id, json_t **out)
{
    const char *p[2] = {tenant_id, job_id};
    return rowjson_query_one(db, &st_checkpoint, p, out);
}
