/*
 * metrics.c - counters for /metrics. The table is allocated once by
 * metrics_init and then only incremented atomically, so observation needs no
 * lock; rendering reads a slightly inconsistent but monotonic snapshot,
 * which Prometheus tolerates.
 */
#include "metrics.h"

#include "../audit/sealer.h"
#include "../billing/meter.h"

#include "../sched/schedstats.h"

#include "../db/db.h"
#include "router.h"
#include "sbuf.h"
#include "xalloc.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const int statuses[] = {200, 201, 202, 204, 304, 400, 401, 403, 404, 405,
                               409, 413, 415, 422, 429, 500, 501, 503};
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

void metrics_init(size_t nroutes)
{
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

char *metrics_render(void)
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
                "# HELP aidc_db_connections Database connections open (one per worker thread).\n"
                "# TYPE aidc_db_connections gauge\n"
                "aidc_db_connections %ld\n",
                atomic_load(&inflight), db_reconnect_count(), db_connection_count());
    schedstats_render(&sb);
    sealer_metrics(&sb);
    meter_metrics(&sb);
    return sbuf_steal(&sb);
}
