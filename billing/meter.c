/* meter.c - the metering worker (see meter.h). */
#include "meter.h"

#include "../db/billing.h"
#include "../db/db.h"
#include "../db/sched.h"
#include "../db/worker.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 2000
/* a round every minute at most: an hour boundary is cut within a minute of the
 * cluster's first report after it; a job's end wakes the worker at once */
#define INTERVAL_MS 60000

/* figures for /metrics, of whichever meter of this process ran last */
static atomic_ulong intervals_total, runs_total;

/* at most a round a second: every job submit notifies aidc_jobs, and a storm of
 * them must not turn into a storm of metering rounds */
#define MIN_ROUND_GAP_MS 1000

struct meter {
    struct timespec last;
};

static const struct db_ctx system_ctx = {.roles = "system"};

int meter_run(struct db *db, int max)
{
    int e = db_begin(db, &system_ctx, false);
    bool got = false;
    if (!e)
        e = db_sched_lock(db, DB_LOCK_METER, &got);
    if (e || !got) {
        db_rollback(db);
        return e;
    }
    long runs = 0, intervals = 0;
    e = db_meter_capacity(db);
    if (!e)
        e = db_meter_cut(db, max, &runs, &intervals);
    if (e) {
        db_rollback(db);
        return e;
    }
    if ((e = db_commit(db)))
        return e;
    atomic_fetch_add(&runs_total, (unsigned long)runs);
    atomic_fetch_add(&intervals_total, (unsigned long)intervals);
    if (intervals)
        log_debug("metered %ld run(s) into %ld interval(s)", runs, intervals);
    return (int)runs;
}

void meter_metrics(struct sbuf *sb)
{
    sbuf_printf(sb,
                "# HELP aidc_metering_intervals_total Usage intervals written by this process.\n"
                "# TYPE aidc_metering_intervals_total counter\n"
                "aidc_metering_intervals_total %lu\n"
                "# HELP aidc_metering_runs_total Run cuts made by this process.\n"
                "# TYPE aidc_metering_runs_total counter\n"
                "aidc_metering_runs_total %lu\n",
                atomic_load(&intervals_total), atomic_load(&runs_total));
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    struct meter *m = arg;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long gap_ms = (now.tv_sec - m->last.tv_sec) * 1000L + (now.tv_nsec - m->last.tv_nsec) / 1000000L;
    if (notified && gap_ms >= 0 && gap_ms < MIN_ROUND_GAP_MS) {
        struct timespec nap = {0, (MIN_ROUND_GAP_MS - gap_ms) * 1000000L};
        nanosleep(&nap, NULL);
    }
    int n = meter_run(db, BATCH);
    clock_gettime(CLOCK_MONOTONIC, &m->last);
    return n < 0 ? n : n == BATCH;
}

struct worker *meter_start(const struct config *cfg)
{
    struct meter *m = xcalloc(1, sizeof *m);
    struct worker_spec spec = {
        .name = "meter",
        .lead = WORKER_LEAD_METER,
        .channels = {"aidc_jobs", NULL},
        .interval_ms = INTERVAL_MS,
        .round = round_fn,
        .owns_arg = true,
        .arg = m,
    };
    return worker_start(cfg->worker_database_url, &spec);
}

