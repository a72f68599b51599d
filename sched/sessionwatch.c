/* sessionwatch.c - the session watcher (see sessionwatch.h). */
#include "sessionwatch.h"

#include "../audit/audit.h"
#include "../backends/backend.h"
#include "../db/appsessions.h"
#include "../db/jobs.h"
#include "../db/worker.h"
#include "../lib/config.h"
#include "../lib/curlglobal.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INTERVAL_MS  1000 /* a notebook is usable about a second after its app answers */
#define MAX_SESSIONS 2000
#define PROBE_MS     2000

struct watch {
    const struct config *cfg;
};

/* What a round decided for one session. */
struct verdict {
    const char *end; /* why it ends (NULL: it goes on) */
    bool cancel;     /* its job is stopped */
    bool endpoint;   /* where its app answers was found */
    struct backend_endpoint ep;
    bool ready;
};

/* Any HTTP answer of the app at host:port under its base path: it serves. */
static bool probe(const struct backend_endpoint *ep, const char *id)
{
    CURL *h = curlglobal_init() ? curl_easy_init() : NULL;
    if (!h)
        return false;
    bool v6 = strchr(ep->host, ':') != NULL;
    char *url = xasprintf("http://%s%s%s:%d" CONFIG_SESSION_PATH "%s/", v6 ? "[" : "", ep->host,
                          v6 ? "]" : "", ep->port, id);
    CURLcode e = curl_easy_setopt(h, CURLOPT_URL, url);
    if (e == CURLE_OK)
        e = curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (e == CURLE_OK)
        e = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)PROBE_MS);
    if (e == CURLE_OK)
        e = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (e == CURLE_OK)
        e = curl_easy_setopt(h, CURLOPT_PROXY, "");
    if (e == CURLE_OK)
        e = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    long code = 0;
    if (e == CURLE_OK && curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    free(url);
    return code >= 100;
}

/* Outside any transaction: backends and apps may take their time. */
static void judge(const struct config *cfg, const struct db_appsession_watch *w, struct verdict *v,
                  char *why, size_t whysz)
{
    memset(v, 0, sizeof *v);
    static const char *const ended[] = {"succeeded", "failed", "cancelled"};
    for (size_t i = 0; i < 3; i++)
        if (strcmp(w->job_state, ended[i]) == 0) {
            snprintf(why, whysz, "%s", w->job_reason);
            v->end = why;
            return;
        }
    if (strcmp(w->job_state, "running") != 0)
        return;
    if (w->expires_in >= 0 && w->expires_in <= 0) {
        v->end = "time limit";
        v->cancel = true;
        return;
    }
    if (w->ready) {
        if (w->idle_for >= (long long)w->idle_minutes * 60) {
            snprintf(why, whysz, "idle for %d minute%s", w->idle_minutes,
                     w->idle_minutes == 1 ? "" : "s");
            v->end = why;
            v->cancel = true;
        }
        return;
    }
    if (w->running_for > cfg->sessions_ready_seconds) {
        snprintf(why, whysz, "the app did not answer on its port within %d s",
                 cfg->sessions_ready_seconds);
        v->end = why;
        v->cancel = true;
        return;
    }
    const struct backend_ops *ops = backend_find(w->cluster.kind ? w->cluster.kind : "");
    if (!ops || !ops->app_endpoint || !w->cluster.id[0])
        return;
    json_t *options = json_loads(w->cluster.options ? w->cluster.options : "{}", 0, NULL);
    const struct backend_cluster bc = {.id = w->cluster.id,
                                       .name = w->cluster.name,
                                       .kind = w->cluster.kind,
                                       .endpoint = w->cluster.endpoint,
                                       .credentials_ref = w->cluster.credentials_ref,
                                       .options = options,
                                       .data_dir = cfg->data_dir,
                                       .self_exe = cfg->self_exe,
                                       .storage_root = cfg->storage_root,
                                       .storage_uid_first = cfg->storage_uid_first};
    char err[256] = "";
    int e = options ? ops->app_endpoint(&bc, w->run_key, w->backend_job_id, &v->ep, err, sizeof err)
                    : AIDC_EINTERNAL;
    json_decref(options);
    if (e) {
        if (e != AIDC_ENOTFOUND)
            log_warn("session %s: where its app answers is not known: %s", w->id, err);
        return;
    }
    v->endpoint = true;
    v->ready = probe(&v->ep, w->id);
}

static int apply(struct db *db, const struct db_appsession_watch *w, const struct verdict *v)
{
    if (v->endpoint)
        return db_appsession_set_endpoint(db, w->id, w->run_key, v->ep.host, v->ep.port, v->ready);
    if (!v->end)
        return 0;
    int e = 0;
    if (v->cancel) {
        char by[600], before[16];
        snprintf(by, sizeof by, "aidc (%s)", v->end);
        json_t *job = NULL;
        e = db_job_cancel(db, w->tenant_id, w->job_id, by, before, sizeof before, &job);
        json_decref(job);
        if (e == AIDC_ECONFLICT || e == AIDC_ENOTFOUND) /* it ended meanwhile */
            e = 0;
    }
    if (!e)
        e = db_appsession_end(db, w->id, v->end);
    if (!e && v->cancel) {
        json_t *d = json_pack("{s:s, s:s}", "reason", v->end, "job", w->job_id);
        const struct audit_event ev = {.action = "app_session.stop",
                                       .resource_type = "app_session",
                                       .resource_id = w->id,
                                       .details = d,
                                       .tenant_id = w->tenant_id,
                                       .tenant_slug = w->tenant};
        e = audit_record_system(db, &ev, true);
        json_decref(d);
    }
    return e;
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    struct watch *wt = arg;
    const struct db_ctx ctx = {.roles = "system"};
    struct db_appsession_watches all = {0};
    int e = db_begin(db, &ctx, true);
    if (!e)
        e = db_appsession_watch_list(db, MAX_SESSIONS, &all);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (e || all.n == 0) {
        db_appsession_watches_free(&all);
        return e;
    }
    struct verdict *v = xcalloc(all.n, sizeof *v);
    char(*why)[160] = xcalloc(all.n, sizeof *why);
    bool any = false;
    for (size_t i = 0; i < all.n; i++) {
        judge(wt->cfg, &all.v[i], &v[i], why[i], sizeof why[i]);
        any = any || v[i].end || v[i].endpoint;
    }
    if (any)
        e = db_begin(db, &ctx, false);
    for (size_t i = 0; any && !e && i < all.n; i++)
        e = apply(db, &all.v[i], &v[i]);
    if (any && !e)
        e = db_commit(db);
    else if (any)
        db_rollback(db);
    free(why);
    free(v);
    db_appsession_watches_free(&all);
    return e;
}

struct worker *sessionwatch_start(const struct config *cfg)
{
    struct watch *w = xcalloc(1, sizeof *w);
    w->cfg = cfg;
    struct worker_spec spec = {
        .name = "sessions",
        .lead = WORKER_LEAD_SESSIONS,
        .channels = {NULL},
        .interval_ms = INTERVAL_MS,
        .round = round_fn,
        .owns_arg = true,
        .arg = w,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
