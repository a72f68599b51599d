/* effwatch.c - the efficiency worker (see effwatch.h). */
#include "effwatch.h"

#include "../backends/prometheus.h"
#include "../db/efficiency.h"
#include "../db/worker.h"
#include "../lib/config.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BATCH       50      /* jobs read per round: the rest wait for the next */
#define MAX_RANGE_S 2592000 /* 30 days: a longer run is summarised over its last 30 days */
#define SLACK_S     30      /* ranges reach past the run: the job's label bounds the series */

struct watch {
    const struct config *cfg;
};

/* One PromQL function of the job's series over range_s ending at `at`; NaN: no samples. */
static double ask(const struct db_eff_target *t, const char *agg, const char *metric,
                  const char *sel, long long range_s, long long at, double scale, bool *down)
{
    char q[768];
    int n = snprintf(q, sizeof q, "%s(%s_over_time(%s%s[%llds]))%s", agg,
                     strcmp(agg, "avg") == 0 ? "avg" : "max", metric, sel, range_s,
                     scale != 1 ? "/1024" : "");
    if (n < 0 || (size_t)n >= sizeof q || *down)
        return NAN;
    double v = NAN;
    bool found = false;
    char err[256];
    if (prometheus_scalar(t->url, q, at, &v, &found, err, sizeof err) != 0) {
        log_warn("efficiency: %s", err);
        *down = true; /* the rest of this cluster's questions wait for the next round */
        return NAN;
    }
    return found ? v : NAN;
}

/*
 * Read one job; false when its Prometheus could not be asked (nothing is
 * written). *down: that Prometheus failed this round (set here; the caller
 * skips the rest of its jobs, so a dead one costs one timeout a round).
 */
static bool read_job(const struct watch *w, const struct db_eff_target *t, struct db_eff_gpu *g,
                     bool *cluster_down)
{
    char sel[512];
    memset(g, 0, sizeof *g);
    g->util_avg = g->util_peak = g->mem_peak_gib = g->idle_util_max = NAN;
    g->idle = -1;
    g->idle_window_s = w->cfg->idle_gpu_seconds;
    if (prometheus_job_selector(sel, sizeof sel, t->kind, t->label, t->backend_id, t->namespace_) !=
        0) {
        g->final = true; /* an id PromQL cannot name: never asked again */
        return true;
    }
    long long now = (long long)time(NULL);
    long long end = t->finished ? t->finished : now;
    long long range = end - t->started + SLACK_S;
    if (range > MAX_RANGE_S)
        range = MAX_RANGE_S;
    bool down = false;
    g->util_avg = ask(t, "avg", "DCGM_FI_DEV_GPU_UTIL", sel, range, end, 1, &down);
    g->util_peak = ask(t, "max", "DCGM_FI_DEV_GPU_UTIL", sel, range, end, 1, &down);
    g->mem_peak_gib = ask(t, "max", "DCGM_FI_DEV_FB_USED", sel, range, end, 1024, &down);
    /* idle: the busiest of its GPUs stayed under the threshold for the whole window */
    int win = w->cfg->idle_gpu_seconds;
    if (!t->finished && now - t->started >= win) {
        double m = ask(t, "max", "DCGM_FI_DEV_GPU_UTIL", sel, win, now, 1, &down);
        g->idle = isnan(m) ? -1 : m < w->cfg->idle_gpu_util_percent;
        g->idle_util_max = m;
    } else if (!t->finished) {
        g->idle = 0; /* too young to have been idle that long */
    }
    if (down) {
        *cluster_down = true;
        return false;
    }
    g->final = t->finished != 0 && !isnan(g->util_avg);
    return true;
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    const struct watch *w = arg;
    const struct db_ctx ctx = {.roles = "system"};
    struct db_eff_targets all = {0};
    int e = db_begin(db, &ctx, true);
    if (!e)
        e = db_eff_targets(db, w->cfg->efficiency_interval_seconds, BATCH, &all);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (e || all.n == 0) {
        db_eff_targets_free(&all);
        return e;
    }
    struct db_eff_gpu *g = xcalloc(all.n, sizeof *g);
    bool *ok = xcalloc(all.n, sizeof *ok);
    bool *down = xcalloc(all.n, sizeof *down); /* [i]: the Prometheus of job i failed */
    for (size_t i = 0; i < all.n; i++) {       /* outside a transaction: Prometheus may be slow */
        bool skip = false;
        for (size_t k = 0; k < i && !skip; k++)
            skip = down[k] && strcmp(all.v[k].url, all.v[i].url) == 0;
        ok[i] = !skip && read_job(w, &all.v[i], &g[i], &down[i]);
    }
    free(down);
    e = db_begin(db, &ctx, false);
    /* a job whose Prometheus did not answer goes to the back, so a dead one cannot
     * keep the other clusters' jobs out of the batch */
    for (size_t i = 0; !e && i < all.n; i++)
        e = ok[i] ? db_eff_gpu(db, all.v[i].id, &g[i]) : db_eff_touch(db, all.v[i].id);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    free(ok);
    free(g);
    db_eff_targets_free(&all);
    return e;
}

struct worker *effwatch_start(const struct config *cfg)
{
    struct watch *w = xcalloc(1, sizeof *w);
    w->cfg = cfg;
    struct worker_spec spec = {
        .name = "efficiency",
        .lead = WORKER_LEAD_EFFICIENCY,
        .channels = {NULL},
        .interval_ms = cfg->efficiency_interval_seconds * 1000,
        .round = round_fn,
        .owns_arg = true,
        .arg = w,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
