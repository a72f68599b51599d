/*
 * metrics.c - counters for /metrics. The table is allocated once by
 * metrics_init and then only incremented atomically, so observation needs no
 * lock; rendering reads a slightly inconsistent but monotonic snapshot,
 * which Prometheus tolerates.
 */
#include "metrics.h"

#include "../audit/sealer.h"
#include "../backends/callstats.h"
#include "../billing/meter.h"
#include "../billing/storagemeter.h"
#include "../images/sync.h"

#include "../sched/schedstats.h"
#include "../db/worker.h"

#include "../db/db.h"
#include "../db/gauges.h"
#include "http.h"
#include "router.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* every status aidcd answers itself (431 is libmicrohttpd's, before any request) */
static const int statuses[] = {200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 406,
                               409, 413, 415, 422, 429, 500, 501, 502, 503, 504};
#define NSTATUS (sizeof statuses / sizeof statuses[0] + 1) /* + "other" */
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                 0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])

struct series {
    atomic_ulong count;
    atomic_ulong sum_us;
    atomic_ulong bucket[NBUCKETS];
};

/*
 * Worker threads count into shards of their own, so two threads answering
 * requests of one route do not fight over the same cache lines; rendering
 * adds the shards up.
 */
#define NSHARDS 8
static struct series *table; /* [shard][slot][status] */
static size_t nslots;
static atomic_uint next_shard;
static _Thread_local unsigned my_shard = NSHARDS; /* NSHARDS = not assigned yet */
static atomic_long inflight;
static atomic_ulong tenant_lookups[2]; /* looked up, remembered */
static int pool_size;

/*
 * The database gauges of the last scrape, kept GAUGES_TTL_S: several
 * Prometheus servers, or one scraping every replica, cost one query per
 * replica and interval, whatever their number.
 */
#define GAUGES_TTL_S 5
static pthread_mutex_t gauges_mu = PTHREAD_MUTEX_INITIALIZER;
static char *gauges_text;
static time_t gauges_at;

void metrics_init(size_t nroutes, int threads)
{
    pool_size = threads;
    nslots = nroutes + 2;
    table = xcalloc(NSHARDS * nslots * NSTATUS, sizeof *table);
}

static size_t status_index(int status)
{
    for (size_t i = 0; i + 1 < NSTATUS; i++)
        if (statuses[i] == status)
            return i;
    return NSTATUS - 1;
}

void metrics_observe(size_t slot, int status, double seconds)
{
    if (!table || slot >= nslots)
        return;
    if (my_shard >= NSHARDS)
        my_shard = atomic_fetch_add(&next_shard, 1) % NSHARDS;
    struct series *s = &table[(my_shard * nslots + slot) * NSTATUS + status_index(status)];
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_us, (unsigned long)(seconds * 1e6), memory_order_relaxed);
    /* one bucket per observation; rendering makes them cumulative */
    for (size_t b = 0; b < NBUCKETS; b++) {
        if (seconds <= buckets[b]) {
            atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
            break;
        }
    }
}

void metrics_inflight_add(int delta)
{
    atomic_fetch_add(&inflight, delta);
}

void metrics_tenant_lookup(bool remembered)
{
    atomic_fetch_add_explicit(&tenant_lookups[remembered], 1, memory_order_relaxed);
}

static void labels(struct sbuf *sb, size_t slot, size_t st)
{
    const char *method = "", *route = "";
    if (slot < nslots - 2) {
        method = routes[slot].method;
        route = routes[slot].pattern;
    } else {
        route = slot == nslots - 2 ? "static" : "unmatched";
    }
    sbuf_printf(sb, "method=\"%s\",route=\"%s\",status=\"", method, route);
    if (st + 1 < NSTATUS)
        sbuf_printf(sb, "%d\"", statuses[st]);
    else
        sbuf_puts(sb, "other\"");
}

/* The sum over shards of one series. */
struct totals {
    unsigned long count, sum_us, bucket[NBUCKETS];
};

static void total(size_t i, struct totals *t)
{
    memset(t, 0, sizeof *t);
    for (size_t sh = 0; sh < NSHARDS; sh++) {
        struct series *s = &table[sh * nslots * NSTATUS + i];
        t->count += atomic_load(&s->count);
        t->sum_us += atomic_load(&s->sum_us);
        for (size_t b = 0; b < NBUCKETS; b++)
            t->bucket[b] += atomic_load(&s->bucket[b]);
    }
}

/* A label value as the exposition format wants it. */
static void label_value(struct sbuf *sb, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            sbuf_printf(sb, "\\%c", *v);
        else if (*v == '\n')
            sbuf_puts(sb, "\\n");
        else
            sbuf_printf(sb, "%c", *v);
    }
}

static const char *const gauge_help[][2] = {
    {"aidc_jobs_queued", "Jobs waiting for admission, by GPU type (none: CPU only)."},
    {"aidc_jobs_active", "Jobs admitted, pending in a cluster or running."},
    {"aidc_gpus_total", "GPUs of healthy clusters that can be handed out, by type."},
    {"aidc_gpus_allocated", "GPUs held by admitted, pending and running jobs, by type."},
    {"aidc_gpus_faulty", "GPUs marked faulty, by cluster and type (left out of the total)."},
    {"aidc_cluster_healthy", "1 when the cluster answered its last inventory refresh."},
    {"aidc_outbox_backlog", "Decisions not yet delivered to clusters."},
    {"aidc_outbox_oldest_seconds", "Age of the oldest undelivered decision (0: none)."},
    {"aidc_audit_seal_lag_seconds", "Age of the oldest audit event not yet chained (0: none)."},
    {"aidc_audit_checkpoint_age_seconds", "Age of the newest signed audit checkpoint."},
    {"aidc_metering_lag_seconds", "Age of the oldest run end not yet metered (0: none)."},
    {"aidc_registry_sync_ok", "1 when the registry's last sync succeeded."},
};

/* The samples of db_gauges as exposition text; NULL when the database did not answer. */
static char *gauges_query(struct db *db)
{
    const struct db_ctx ctx = {.roles = "system"};
    struct db_gauges g = {0};
    int e = db_begin(db, &ctx, true);
    if (!e)
        e = db_gauges(db, &g);
    db_commit_nowait(db);
    if (e)
        return NULL;
    struct sbuf sb = SBUF_INIT;
    for (size_t h = 0; h < sizeof gauge_help / sizeof gauge_help[0]; h++) {
        const char *name = gauge_help[h][0];
        sbuf_printf(&sb, "# HELP %s %s\n# TYPE %s gauge\n", name, gauge_help[h][1], name);
        for (size_t i = 0; i < g.n; i++) {
            const struct db_gauge *s = &g.v[i];
            if (strcmp(s->metric, name) != 0)
                continue;
            sbuf_puts(&sb, name);
            for (int l = 0; l < DB_GAUGE_LABELS; l++) {
                if (!s->label[l])
                    continue;
                sbuf_printf(&sb, "%s%s=\"", l == 0 ? "{" : ",", s->label[l]);
                label_value(&sb, s->label_value[l]);
                sbuf_puts(&sb, "\"");
            }
            if (s->label[0])
                sbuf_puts(&sb, "}");
            sbuf_printf(&sb, " %s\n", s->value);
        }
    }
    db_gauges_free(&g);
    return sbuf_steal(&sb);
}

static void render_gauges(struct sbuf *sb, struct db *db)
{
    time_t now = time(NULL);
    pthread_mutex_lock(&gauges_mu);
    bool fresh = gauges_text && now - gauges_at < GAUGES_TTL_S && now >= gauges_at;
    pthread_mutex_unlock(&gauges_mu);
    char *text = NULL;
    if (!fresh && db) {
        text = gauges_query(db);
        pthread_mutex_lock(&gauges_mu);
        free(gauges_text);
        gauges_text = text;
        gauges_at = now;
        pthread_mutex_unlock(&gauges_mu);
    }
    pthread_mutex_lock(&gauges_mu);
    bool ok = gauges_text != NULL;
    sbuf_printf(sb, "# HELP aidc_db_scrape_ok 1 when the database gauges below could be read.\n"
                    "# TYPE aidc_db_scrape_ok gauge\naidc_db_scrape_ok %d\n", ok ? 1 : 0);
    if (ok)
        sbuf_puts(sb, gauges_text);
    pthread_mutex_unlock(&gauges_mu);
}

char *metrics_render(struct db *db)
{
    struct sbuf sb = SBUF_INIT;
    struct totals t;
    sbuf_puts(&sb, "# HELP aidc_http_requests_total HTTP requests answered.\n"
                   "# TYPE aidc_http_requests_total counter\n");
    for (size_t i = 0; table && i < nslots * NSTATUS; i++) {
        total(i, &t);
        if (!t.count)
            continue;
        sbuf_puts(&sb, "aidc_http_requests_total{");
        labels(&sb, i / NSTATUS, i % NSTATUS);
        sbuf_printf(&sb, "} %lu\n", t.count);
    }
    sbuf_puts(&sb, "# HELP aidc_http_request_duration_seconds Time to answer a request.\n"
                   "# TYPE aidc_http_request_duration_seconds histogram\n");
    for (size_t i = 0; table && i < nslots * NSTATUS; i++) {
        total(i, &t);
        if (!t.count)
            continue;
        unsigned long cumulative = 0;
        for (size_t b = 0; b < NBUCKETS; b++) {
            cumulative += t.bucket[b];
            sbuf_puts(&sb, "aidc_http_request_duration_seconds_bucket{");
            labels(&sb, i / NSTATUS, i % NSTATUS);
            sbuf_printf(&sb, ",le=\"%g\"} %lu\n", buckets[b], cumulative);
        }
        sbuf_puts(&sb, "aidc_http_request_duration_seconds_bucket{");
        labels(&sb, i / NSTATUS, i % NSTATUS);
        sbuf_printf(&sb, ",le=\"+Inf\"} %lu\n", t.count);
        sbuf_puts(&sb, "aidc_http_request_duration_seconds_sum{");
        labels(&sb, i / NSTATUS, i % NSTATUS);
        sbuf_printf(&sb, "} %.6f\n", (double)t.sum_us / 1e6);
        sbuf_puts(&sb, "aidc_http_request_duration_seconds_count{");
        labels(&sb, i / NSTATUS, i % NSTATUS);
        sbuf_printf(&sb, "} %lu\n", t.count);
    }
    sbuf_printf(&sb,
                "# HELP aidc_http_requests_in_flight Requests being served.\n"
                "# TYPE aidc_http_requests_in_flight gauge\n"
                "aidc_http_requests_in_flight %ld\n"
                "# HELP aidc_db_reconnects_total Database reconnections after a failure.\n"
                "# TYPE aidc_db_reconnects_total counter\n"
                "aidc_db_reconnects_total %lu\n"
                "# HELP aidc_db_pool_size HTTP threads, each with its own primary connection.\n"
                "# TYPE aidc_db_pool_size gauge\n"
                "aidc_db_pool_size %d\n"
                "# HELP aidc_tenant_lookups_total Tenants named by platform-wide roles, by where"
                " they were found.\n"
                "# TYPE aidc_tenant_lookups_total counter\n"
                "aidc_tenant_lookups_total{from=\"memory\"} %lu\n"
                "aidc_tenant_lookups_total{from=\"database\"} %lu\n",
                atomic_load(&inflight), db_reconnect_count(), pool_size,
                atomic_load(&tenant_lookups[1]), atomic_load(&tenant_lookups[0]));
    static const char *const pools[DB_POOL_COUNT] = {"worker", "primary", "read"};
    sbuf_puts(&sb, "# HELP aidc_db_connections Database connections open, by use.\n"
                   "# TYPE aidc_db_connections gauge\n");
    for (int p = 0; p < DB_POOL_COUNT; p++)
        sbuf_printf(&sb, "aidc_db_connections{pool=\"%s\"} %ld\n", pools[p],
                    db_connection_count((enum db_pool)p));
    sbuf_puts(&sb, "# HELP aidc_db_connections_busy Connections serving a request now.\n"
                   "# TYPE aidc_db_connections_busy gauge\n");
    for (int p = DB_POOL_PRIMARY; p < DB_POOL_COUNT; p++)
        sbuf_printf(&sb, "aidc_db_connections_busy{pool=\"%s\"} %ld\n", pools[p],
                    db_busy_count((enum db_pool)p));
    schedstats_render(&sb);
    worker_metrics(&sb);
    http_pool_metrics(&sb);
    callstats_render(&sb);
    sealer_metrics(&sb);
    meter_metrics(&sb);
    storagemeter_metrics(&sb);
    regsync_metrics(&sb);
    render_gauges(&sb, db);
    return sbuf_steal(&sb);
}
