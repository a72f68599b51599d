/*
 * admission_db.c - the database mode of bench_admission (see admission.c):
 * sched/admitter.c's admitter_pass (snapshot from PostgreSQL, decide, write
 * the decisions in one transaction) over the queue of admission_bench.h.
 *
 * The database must be migrated and dedicated to benchmarks: its name must
 * contain "bench", because every run empties the job, cluster, quota, project
 * and tenant tables first. The owner URL seeds and "completes" jobs (row-level
 * security does not apply to the owner); the passes run on the application
 * URL with the "system" context, as aidcd's admission worker does.
 *
 * Clusters: only kinds this build has a backend for count as up (sched/
 * admitter.c marks the others down), and that is the local executor alone, of
 * which one may exist. So the 1,000 GPUs are one local cluster inserted by SQL
 * (its 64-GPUs-per-type check is the API's, not the table's): a100 400,
 * h100 300, l40 300 with GPU indexes 0-999.
 *
 * No dispatcher runs: admitted jobs stay admitted until this program ends
 * them. Between passes it marks --complete-frac of the admitted jobs (those
 * with the earliest expected end) succeeded and puts jobs asked to stop for a
 * preemption back in the queue, as the syncer would after the grace period.
 */
#include "admission_bench.h"

#include "db/db.h"
#include "db/schedsnap.h"
#include "sched/admitter.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/xalloc.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COPY_CHUNK 65536

/* Copied from db/sched.c (snap_queued): timed alone to split the load time. */
#define SNAP_QUEUED DB_SCHED_QUEUED_SQL

struct ids {
    char tenant[SHAPE_TENANTS][37];
    char project[SHAPE_PROJECTS][37];
};

static bool ok(PGconn *c, PGresult *r, const char *what)
{
    ExecStatusType s = PQresultStatus(r);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK || s == PGRES_COPY_IN)
        return true;
    fprintf(stderr, "bench_admission: %s: %s", what, PQerrorMessage(c));
    return false;
}

/* Run q (with up to 2 text parameters); its first value as a number, or -1. */
static double run_value(PGconn *c, const char *q, const char *p1, const char *p2)
{
    const char *p[2] = {p1, p2};
    int n = p2 ? 2 : p1 ? 1 : 0;
    PGresult *r = PQexecParams(c, q, n, NULL, p, NULL, NULL, 0);
    double v = -1;
    if (ok(c, r, q))
        v = PQntuples(r) > 0 && PQnfields(r) > 0 ? strtod(PQgetvalue(r, 0, 0), NULL) : 0;
    PQclear(r);
    return v;
}

static bool run(PGconn *c, const char *q)
{
    return run_value(c, q, NULL, NULL) >= 0;
}

/* COPY lines (tab-separated, newline-terminated) produced by gen into table (cols). */
static bool copy_in(PGconn *c, const char *stmt, size_t n,
                    int (*gen)(char *buf, size_t sz, size_t i, void *arg), void *arg)
{
    PGresult *r = PQexec(c, stmt);
    bool good = ok(c, r, stmt) && PQresultStatus(r) == PGRES_COPY_IN;
    PQclear(r);
    char *buf = xmalloc(COPY_CHUNK + 1024);
    size_t len = 0;
    for (size_t i = 0; good && i < n; i++) {
        int w = gen(buf + len, 1024, i, arg);
        if (w < 0 || w >= 1024) {
            fprintf(stderr, "bench_admission: COPY row %zu too long\n", i);
            good = false;
            break;
        }
        len += (size_t)w;
        if (len >= COPY_CHUNK) {
            good = PQputCopyData(c, buf, (int)len) == 1;
            len = 0;
        }
    }
    if (good && len)
        good = PQputCopyData(c, buf, (int)len) == 1;
    free(buf);
    good = PQputCopyEnd(c, good ? NULL : "bench_admission: aborted") == 1 && good;
    while ((r = PQgetResult(c)) != NULL) {
        good = ok(c, r, stmt) && good;
        PQclear(r);
    }
    return good;
}

static bool reset_all(PGconn *c)
{
    double is_bench = run_value(c, "SELECT (current_database() LIKE '%bench%')::int", NULL, NULL);
    if (is_bench != 1) {
        fprintf(stderr, "bench_admission: the database name must contain \"bench\": every run"
                        " empties its job, cluster, quota, project and tenant tables\n");
        return false;
    }
    return run(c, "TRUNCATE job_events, job_runs, outbox, jobs, cluster_inventory, clusters,"
                  " tenant_quotas, project_quotas, projects, tenants CASCADE");
}

static int gen_quota(char *buf, size_t sz, size_t i, void *arg)
{
    const struct ids *ids = arg;
    int t = (int)(i / SHAPE_TYPES), g = (int)(i % SHAPE_TYPES);
    return snprintf(buf, sz, "%s\tgpu:%s\t%g\t%g\n", ids->tenant[t], shape_type_names[g],
                    shape_guaranteed(t, g), shape_limit(t, g));
}

/* Tenants adm-001.., projects p-1.. of each; ids[] in shape order. */
static bool seed_tenants(PGconn *c, struct ids *ids)
{
    char nt[16], np[16];
    snprintf(nt, sizeof nt, "%d", SHAPE_TENANTS);
    snprintf(np, sizeof np, "%d", SHAPE_PROJECTS_PER_TENANT);
    if (run_value(c, "INSERT INTO tenants (slug, name) SELECT format('adm-%s', lpad(t::text, 3,"
                     " '0')), 'admission bench ' || t FROM generate_series(1, $1::int) t",
                  nt, NULL) < 0 ||
        run_value(c, "INSERT INTO projects (tenant_id, slug, name) SELECT t.id, 'p-' || p,"
                     " 'project ' || p FROM tenants t, generate_series(1, $1::int) p",
                  np, NULL) < 0)
        return false;
    PGresult *r = PQexec(c, "SELECT t.id, p.id FROM projects p JOIN tenants t ON t.id ="
                            " p.tenant_id ORDER BY t.slug, p.slug");
    bool good = ok(c, r, "ids") && PQntuples(r) == SHAPE_PROJECTS;
    for (int i = 0; good && i < SHAPE_PROJECTS; i++) {
        snprintf(ids->tenant[i / SHAPE_PROJECTS_PER_TENANT], 37, "%s", PQgetvalue(r, i, 0));
        snprintf(ids->project[i], 37, "%s", PQgetvalue(r, i, 1));
    }
    PQclear(r);
    return good && copy_in(c, "COPY tenant_quotas (tenant_id, resource, guaranteed, \"limit\")"
                              " FROM STDIN",
                           SHAPE_TENANTS * SHAPE_TYPES, gen_quota, ids);
}

static bool seed_cluster(PGconn *c)
{
    return run(c, "WITH c AS (INSERT INTO clusters (name, kind, options, healthy, last_sync_at)"
                  " VALUES ('bench-local', 'local', '{\"gpus\": {\"a100\": 400, \"h100\": 300,"
                  " \"l40\": 300}, \"cpus\": 100000, \"memory_gib\": 1000000}', true, now())"
                  " RETURNING id)"
                  " INSERT INTO cluster_inventory (cluster_id, resource, total)"
                  " SELECT c.id, r, t FROM c, (VALUES ('gpu:a100', 400), ('gpu:h100', 300),"
                  " ('gpu:l40', 300), ('cpu', 100000), ('memory_gib', 1000000)) v(r, t)");
}

struct jobgen {
    const struct ids *ids;
    struct shape_rng rng;
    time_t now;
};

static int gen_job(char *buf, size_t sz, size_t i, void *arg)
{
    struct jobgen *g = arg;
    struct shape_job j;
    shape_job_next(&g->rng, &j);
    static const char *const prio[] = {"low", "normal", "high"};
    double at = (double)g->now - j.age_s;
    time_t secs = (time_t)at;
    struct tm tm;
    gmtime_r(&secs, &tm);
    char ts[48];
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    return snprintf(buf, sz, "%s\t%s\tbench\tbench-%zu\t%s\t%d\t%s\t%d\t%d\t1\t%d\t[\"true\"]\t"
                             "%s.%03d+00\n",
                    g->ids->tenant[j.tenant], g->ids->project[j.project], i, prio[j.priority],
                    j.gpus, shape_type_names[j.gpu_type], j.cpus, j.memory_gib,
                    j.time_limit_minutes, ts, (int)((at - (double)secs) * 1000));
}

static bool seed_jobs(PGconn *c, const struct ids *ids, size_t n, uint64_t seed)
{
    struct jobgen g = {ids, {seed}, time(NULL)};
    double t0 = bench_now();
    bool good = copy_in(c, "COPY jobs (tenant_id, project_id, username, name, priority, gpus,"
                           " gpu_type, cpus, memory_gib, nodes, time_limit_minutes, command,"
                           " submitted_at) FROM STDIN",
                        n, gen_job, &g) &&
                run(c, "ANALYZE jobs");
    if (good)
        printf("  seeded %zu queued jobs in %.2f s (COPY + ANALYZE)\n", n, bench_now() - t0);
    return good;
}

/* The syncer's part: preempted jobs back to the queue, a share of the rest ends. */
static bool complete_some(PGconn *c, double frac, double *completed, double *requeued)
{
    char f[32];
    snprintf(f, sizeof f, "%.6f", frac);
    *completed = run_value(
        c,
        "WITH a AS (SELECT id FROM jobs WHERE state = 'admitted' AND stop_requested IS NULL"
        "            ORDER BY admitted_at + time_limit_minutes * interval '1 minute', id"
        "            LIMIT (SELECT ceil(count(*) * $1::float8) FROM jobs"
        "                    WHERE state = 'admitted' AND stop_requested IS NULL)),"
        " u AS (UPDATE jobs j SET state = 'succeeded', finished_at = now(), reason = NULL,"
        "         updated_at = now() FROM a WHERE j.id = a.id RETURNING 1)"
        " SELECT count(*) FROM u",
        f, NULL);
    *requeued = run_value(
        c,
        "WITH u AS (UPDATE jobs SET state = 'queued', cluster_id = NULL, gpu_indexes = NULL,"
        "         stop_requested = NULL, stop_requested_at = NULL, preempt_by = NULL,"
        "         admitted_at = NULL, preemptible = false, reason = 'preempted',"
        "         preemption_count = preemption_count + 1, updated_at = now()"
        "       WHERE state = 'admitted' AND stop_requested = 'preempt' RETURNING 1)"
        " SELECT count(*) FROM u",
        NULL, NULL);
    return *completed >= 0 && *requeued >= 0;
}

static void print_pass(const char *label, const struct admitter_stats *s)
{
    printf("  %-14s %7zu queued %5zu active  load %8.1f  decide %7.1f  write %8.1f  total"
           " %8.1f ms  %5zu admitted %4zu preempted %6zu waits written (%zu left)\n",
           label, s->queued, s->active, s->load_ms, s->decide_ms, s->write_ms,
           s->load_ms + s->decide_ms + s->write_ms, s->admitted, s->preempted, s->waits_written,
           s->waits_pending);
}

static void figure(const char *key, double value, const char *unit)
{
    printf("figure %s %.3f %s\n", key, value, unit);
}

/* A pass; with a cache, the queued jobs kept between passes, read as how says. */
static int pass_with(struct db *db, const struct config *cfg, struct db_queue_cache *qc,
                     enum db_queue_read how, struct admitter_stats *s)
{
    int e = admitter_pass_cached(db, cfg, qc, how, s);
    if (e)
        fprintf(stderr, "bench_admission: admitter_pass failed (%d)\n", e);
    else if (s->skipped)
        fprintf(stderr, "bench_admission: another admitter holds the lock: is an aidcd with"
                        " workers on this database?\n");
    return e ? e : s->skipped ? -1 : 0;
}

static int pass(struct db *db, const struct config *cfg, struct admitter_stats *s)
{
    return pass_with(db, cfg, NULL, DB_QUEUE_FULL, s);
}

struct drain_sum {
    size_t passes, admitted, preempted, waits;
    double load, decide, write, max_total, complete_ms, completed, requeued;
    double *totals;
};

static void drain_add(struct drain_sum *d, const struct admitter_stats *s)
{
    double total = s->load_ms + s->decide_ms + s->write_ms;
    d->totals[d->passes++] = total;
    d->admitted += s->admitted;
    d->preempted += s->preempted;
    d->waits += s->waits_written;
    d->load += s->load_ms;
    d->decide += s->decide_ms;
    d->write += s->write_ms;
    if (total > d->max_total)
        d->max_total = total;
}

static void drain_report(struct drain_sum *d, size_t njobs, double wall_s)
{
    double adm_ms = d->load + d->decide + d->write, n = d->passes ? (double)d->passes : 1;
    printf("  drained %zu jobs in %zu passes: %.2f s in admission passes (%.2f s wall, with"
           " %.2f s completing jobs by SQL)\n",
           njobs, d->passes, adm_ms / 1000, wall_s, d->complete_ms / 1000);
    printf("  %.0f admissions/s of pass time; %zu admitted (%.0f requeued after %zu"
           " preemptions), %.0f completed; %zu waits written\n",
           (double)d->admitted / adm_ms * 1000, d->admitted, d->requeued, d->preempted,
           d->completed, d->waits);
    printf("  per pass: load %.1f  decide %.1f  write %.1f ms (mean); total p50 %.1f  p99 %.1f"
           "  max %.1f ms\n",
           d->load / n, d->decide / n, d->write / n, bench_quantile(d->totals, d->passes, 0.5),
           bench_quantile(d->totals, d->passes, 0.99), d->max_total);
    figure("db_drain_passes", (double)d->passes, "passes");
    figure("db_drain_s", adm_ms / 1000, "s");
    figure("db_drain_wall_s", wall_s, "s");
    figure("db_drain_admissions_per_s", (double)d->admitted / adm_ms * 1000, "1/s");
    figure("db_drain_load_ms", d->load / n, "ms");
    figure("db_drain_decide_ms", d->decide / n, "ms");
    figure("db_drain_write_ms", d->write / n, "ms");
    figure("db_drain_pass_p99_ms", bench_quantile(d->totals, d->passes, 0.99), "ms");
}

static bool show_pass(size_t k)
{
    return k <= 5 || k % 10 == 0;
}

static int drain(PGconn *c, struct db *db, const struct config *cfg, size_t njobs,
                 double frac, int max_passes)
{
    struct drain_sum d = {0};
    d.totals = xcalloc((size_t)max_passes + 1, sizeof *d.totals);
    int e = 0;
    double t0 = bench_now();
    for (int k = 1; k <= max_passes; k++) {
        struct admitter_stats s;
        if ((e = pass(db, cfg, &s)) != 0)
            break;
        drain_add(&d, &s);
        char label[32];
        snprintf(label, sizeof label, "pass %d", k);
        bool last = s.queued == s.admitted;
        if (show_pass((size_t)k) || last)
            print_pass(label, &s);
        if (last)
            break;
        double t1 = bench_now(), done, req;
        if (!complete_some(c, frac, &done, &req)) {
            e = -1;
            break;
        }
        d.complete_ms += (bench_now() - t1) * 1000;
        d.completed += done;
        d.requeued += req;
        if (s.admitted == 0 && s.active == 0 && req == 0) {
            fprintf(stderr, "bench_admission: nothing admitted, nothing active: stuck\n");
            e = -1;
            break;
        }
    }
    if (!e)
        drain_report(&d, njobs, bench_now() - t0);
    free(d.totals);
    return e;
}

/* The snapshot's queued query alone, as the owner (no row-level security) and as the
 * application role in the "system" context (with it). */
static void time_queued_sql(PGconn *owner, const char *app_url, double *owner_ms, double *app_ms)
{
    double t0 = bench_now();
    run(owner, SNAP_QUEUED);
    *owner_ms = (bench_now() - t0) * 1000;
    *app_ms = -1;
    PGconn *app = PQconnectdb(app_url);
    if (PQstatus(app) == CONNECTION_OK &&
        run(app, "BEGIN") && run(app, "SELECT set_config('aidc.roles', 'system', true),"
                                      " set_config('aidc.all', 'admin', true)")) {
        t0 = bench_now();
        if (run(app, SNAP_QUEUED))
            *app_ms = (bench_now() - t0) * 1000;
        run(app, "ROLLBACK");
    }
    PQfinish(app);
}

static int big_pass(PGconn *c, struct db *db, const struct config *cfg, const char *app_url,
                    const struct ids *ids, size_t nbig, double frac)
{
    printf("-- one pass over %zu queued jobs (target: under 1 s)\n", nbig);
    if (!run(c, "TRUNCATE job_events, job_runs, outbox, jobs CASCADE") ||
        !seed_jobs(c, ids, nbig, 43))
        return -1;
    struct admitter_stats a, b, s;
    double done, req;
    int e = pass(db, cfg, &a);
    /* the reasons the first pass left for later (a cap per pass), as aidcd's
     * admitter writes them: passes at once until none is left */
    int catchup = 0;
    double catchup_ms = 0, catchup_max = 0;
    for (b = a; !e && b.waits_pending > 0; catchup++) {
        e = pass(db, cfg, &b);
        double t = b.load_ms + b.decide_ms + b.write_ms;
        catchup_ms += t;
        catchup_max = t > catchup_max ? t : catchup_max;
    }
    if (!e)
        e = pass(db, cfg, &b);
    /* the same queue again with the queued jobs kept: what a pass of a burst reads */
    struct db_queue_cache *qc = db_queue_cache_new();
    struct admitter_stats k0, k, nw;
    if (!e)
        e = pass_with(db, cfg, qc, DB_QUEUE_FULL, &k0);
    if (!e)
        e = pass_with(db, cfg, qc, DB_QUEUE_CHANGED, &k);
    /* and as a pass that only submits woke reads it (none came) */
    if (!e)
        e = pass_with(db, cfg, qc, DB_QUEUE_NEW, &nw);
    db_queue_cache_free(qc);
    if (!e && !complete_some(c, frac, &done, &req))
        e = -1;
    if (!e)
        e = pass(db, cfg, &s);
    if (e)
        return e;
    print_pass("first (cold)", &a);
    printf("  then %d passes at once wrote the reasons left: %.1f ms in all, %.1f ms the longest\n",
           catchup, catchup_ms, catchup_max);
    print_pass("again (full)", &b);
    print_pass("again (kept)", &k);
    print_pass("again (new)", &nw);
    printf("  (kept: %zu of %zu queued rows fetched whole; the first kept pass %.1f ms load)\n",
           k.fetched, k.queued, k0.load_ms);
    print_pass("after ends", &s);
    double owner_ms, app_ms;
    time_queued_sql(c, app_url, &owner_ms, &app_ms);
    printf("  load split: the queued query alone %.1f ms as the owner (no row-level security),"
           " %.1f ms as the application role; the rest of load is building the snapshot\n",
           owner_ms, app_ms);
    /* what a page of the job list pays for its queue positions (the marks of 0003_queue.sql) */
    double t0 = bench_now();
    bool ok = run(c, "SELECT sum(aidc_queue_position(id)) FROM (SELECT id FROM jobs"
                     " WHERE state = 'queued' ORDER BY submitted_at DESC LIMIT 100) x");
    double page_ms = (bench_now() - t0) * 1000;
    if (ok)
        printf("  queue positions of the 100 jobs submitted last: %.1f ms\n", page_ms);
    figure("db_big_positions_page_ms", ok ? page_ms : -1, "ms");
    figure("db_big_cold_ms", a.load_ms + a.decide_ms + a.write_ms, "ms");
    figure("db_big_catchup_passes", catchup, "passes");
    figure("db_big_catchup_max_ms", catchup_max, "ms");
    figure("db_big_full_ms", b.load_ms + b.decide_ms + b.write_ms, "ms");
    figure("db_big_full_load_ms", b.load_ms, "ms");
    figure("db_big_kept_load_ms", k.load_ms, "ms");
    figure("db_big_kept_ms", k.load_ms + k.decide_ms + k.write_ms, "ms");
    figure("db_big_new_load_ms", nw.load_ms, "ms");
    figure("db_big_new_ms", nw.load_ms + nw.decide_ms + nw.write_ms, "ms");
    figure("db_big_full_decide_ms", b.decide_ms, "ms");
    figure("db_big_full_write_ms", b.write_ms, "ms");
    figure("db_big_after_ends_ms", s.load_ms + s.decide_ms + s.write_ms, "ms");
    figure("db_big_queued_sql_owner_ms", owner_ms, "ms");
    figure("db_big_queued_sql_app_ms", app_ms, "ms");
    return 0;
}

int bench_db_run(const char *owner_url, const char *app_url, size_t njobs, size_t nbig,
                 double complete_frac, int max_passes)
{
    log_set_level(LOG_WARN);
    PGconn *c = PQconnectdb(owner_url);
    struct db *db = db_open(app_url, "bench_admission");
    struct config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preempt_grace_seconds = SHAPE_GRACE_S;
    cfg.starvation_seconds = SHAPE_STARVATION_S;
    struct ids ids;
    int e = -1;
    printf("== admitter_pass (PostgreSQL: load, decide, write in one transaction): %d tenants,"
           " one local cluster of 1000 GPUs\n",
           SHAPE_TENANTS);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_admission: cannot connect: %s", PQerrorMessage(c));
        goto out;
    }
    run(c, "SET client_min_messages = warning");
    if (!reset_all(c) || !seed_tenants(c, &ids) || !seed_cluster(c) ||
        !seed_jobs(c, &ids, njobs, 42))
        goto out;
    printf("-- drain %zu queued jobs (between passes %.0f %% of the admitted jobs end)\n", njobs,
           complete_frac * 100);
    e = drain(c, db, &cfg, njobs, complete_frac, max_passes);
    if (!e && nbig > 0)
        e = big_pass(c, db, &cfg, app_url, &ids, nbig, complete_frac);
out:
    db_close(db);
    PQfinish(c);
    return e ? 1 : 0;
}
