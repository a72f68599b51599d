/* notifier.c - delivering the notifications outbox (see notifier.h). */
#include "notifier.h"

#include "../db/notify.h"
#include "../db/worker.h"
#include "../lib/config.h"
#include "../lib/curlglobal.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "notifycall.h"
#include "notifyhook.h"
#include "notifymail.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INTERVAL_MS     2000 /* retries come due between notifications */
#define BATCH           16
#define BUDGET_EVERY_S  60
#define CLEANUP_EVERY_S 3600

struct notifier {
    const struct config *cfg;
    time_t budgets_at, cleanup_at;
};

double notifier_backoff(const struct config *cfg, int attempts)
{
    double d = cfg->notify_backoff_seconds;
    for (int i = 1; i < attempts && d < cfg->notify_backoff_max_seconds; i++)
        d *= 2;
    return d < cfg->notify_backoff_max_seconds ? d : cfg->notify_backoff_max_seconds;
}

/* Run every started call of the batch to its end, together. */
static void run_all(struct notify_call *calls, size_t n, int timeout_s)
{
    CURLM *m = curl_multi_init();
    if (!m) {
        for (size_t i = 0; i < n; i++)
            if (calls[i].h)
                notifycall_refuse(&calls[i], false, "cannot start the transfer");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (calls[i].h && curl_multi_add_handle(m, calls[i].h) != CURLM_OK)
            notifycall_refuse(&calls[i], false, "cannot start the transfer");
    int running = 1;
    /* each transfer has its own timeout; this bound only guards the loop itself */
    time_t until = time(NULL) + timeout_s + 5;
    while (running > 0 && time(NULL) <= until) {
        if (curl_multi_perform(m, &running) != CURLM_OK)
            break;
        if (running > 0 && curl_multi_poll(m, NULL, 0, 200, NULL) != CURLM_OK)
            break;
    }
    CURLMsg *msg;
    int left = 0;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct notify_call *c = NULL;
        if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c) != CURLE_OK || !c)
            continue;
        CURLcode rc = msg->data.result;
        if (rc != CURLE_OK)
            snprintf(c->error, sizeof c->error, "%s",
                     c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
        else
            c->error[0] = '\0';
        c->permanent = false;
        c->ended = true;
    }
    for (size_t i = 0; i < n; i++)
        if (calls[i].h) {
            (void)curl_multi_remove_handle(m, calls[i].h);
            if (!calls[i].ended)
                snprintf(calls[i].error, sizeof calls[i].error, "did not finish in time");
        }
    curl_multi_cleanup(m);
}

/* The outcome of call c for delivery d: "delivered", or the error and retry. */
static int finish(struct db *db, const struct config *cfg, const struct db_notification *d,
                  struct notify_call *c)
{
    long status = 0;
    if (c->h)
        (void)curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
    bool webhook = strcmp(d->channel, "webhook") == 0;
    if (c->h && !c->error[0] && webhook && (status < 200 || status > 299)) {
        char snippet[NOTIFYCALL_REPLY_KEEP + 1];
        size_t k = 0;
        for (size_t i = 0; i < c->reply_len && k < sizeof snippet - 1; i++) {
            char ch = c->reply[i];
            if ((unsigned char)ch < 0x20)
                ch = ' ';
            snippet[k++] = ch;
        }
        snippet[k] = '\0';
        snprintf(c->error, sizeof c->error, "HTTP %ld%s%s", status, k ? ": " : "", snippet);
    }
    if (!c->error[0])
        return db_notify_finish(db, d->id, "delivered", status, NULL, 0);
    bool last = c->permanent || d->attempts >= cfg->notify_max_attempts;
    log_info("notifier: %s delivery %s of %s, attempt %d: %s%s", d->channel, d->id, d->event,
             d->attempts, c->error, last ? " (giving up)" : "");
    return db_notify_finish(db, d->id, last ? "failed" : "pending", status, c->error,
                            last ? 0 : notifier_backoff(cfg, d->attempts));
}

static int deliver(struct db *db, const struct notifier *nt, struct db_notifications *all)
{
    struct notify_call *calls = xcalloc(all->n, sizeof *calls);
    for (size_t i = 0; i < all->n; i++) {
        if (strcmp(all->v[i].channel, "webhook") == 0)
            notifyhook_prepare(nt->cfg, &all->v[i], &calls[i]);
        else
            notifymail_prepare(nt->cfg, &all->v[i], &calls[i]);
    }
    run_all(calls, all->n, nt->cfg->notify_timeout_seconds);
    const struct db_ctx ctx = {.roles = "system"};
    int e = db_begin(db, &ctx, false);
    for (size_t i = 0; i < all->n && !e; i++)
        e = finish(db, nt->cfg, &all->v[i], &calls[i]);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    for (size_t i = 0; i < all->n; i++)
        notifycall_free(&calls[i]);
    free(calls);
    return e;
}

/* The periodic sweeps: budget thresholds, old deliveries. */
static int sweeps(struct db *db, struct notifier *nt)
{
    time_t now = time(NULL);
    bool budgets = now - nt->budgets_at >= BUDGET_EVERY_S;
    bool cleanup = now - nt->cleanup_at >= CLEANUP_EVERY_S;
    if (!budgets && !cleanup)
        return 0;
    const struct db_ctx ctx = {.roles = "system"};
    int e = db_begin(db, &ctx, false);
    if (!e && budgets)
        e = db_notify_budgets(db);
    if (!e && cleanup)
        e = db_notify_cleanup(db);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (!e) {
        nt->budgets_at = budgets ? now : nt->budgets_at;
        nt->cleanup_at = cleanup ? now : nt->cleanup_at;
    }
    return e;
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    struct notifier *nt = arg;
    /* a failed sweep (logged by db/) is tried again next round: deliveries go on */
    (void)sweeps(db, nt);
    const struct db_ctx ctx = {.roles = "system"};
    struct db_notifications all = {0};
    /* the lease outlasts the whole batch: a crash mid-batch retries after it */
    int e = db_begin(db, &ctx, false);
    if (!e)
        e = db_notify_claim(db, BATCH, nt->cfg->notify_timeout_seconds + 30, &all);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (e || all.n == 0) {
        db_notifications_free(&all);
        return e;
    }
    e = deliver(db, nt, &all);
    bool more = all.n == BATCH;
    db_notifications_free(&all);
    if (e)
        return e;
    return more ? 1 : 0;
}

struct worker *notifier_start(const struct config *cfg)
{
    if (!curlglobal_init()) {
        log_error("notifier: libcurl cannot start; no notifications are delivered");
        return NULL;
    }
    struct notifier *nt = xcalloc(1, sizeof *nt);
    nt->cfg = cfg;
    struct worker_spec spec = {
        .name = "notifier",
        .lead = WORKER_LEAD_NOTIFIER,
        .channels = {"aidc_notify", NULL},
        .interval_ms = INTERVAL_MS,
        .round = round_fn,
        .owns_arg = true,
        .arg = nt,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
