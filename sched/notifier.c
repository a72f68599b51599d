/* notifier.c - delivering the notifications outbox (see notifier.h). */
#include "notifier.h"

#include "../db/notify.h"
#include "../db/worker.h"
#include "../lib/clock.h"
#include "../lib/config.h"
#include "../lib/curlglobal.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "notifycall.h"
#include "notifyhook.h"
#include "notifymail.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INTERVAL_MS     2000 /* retries come due between notifications */
#define SLOTS           16   /* deliveries in flight at once */
#define PER_USER        4    /* ... of one user (a quarter: see db_notify_claim) */
#define CLAIM_EVERY_MS  500  /* a free slot asks for more this often */
#define ROUND_MAX_S     60   /* then the round ends (the worker checks its lead, its stop) */
#define BUDGET_EVERY_S  60
#define CLEANUP_EVERY_S 3600

struct notifier {
    const struct config *cfg;
    time_t budgets_at, cleanup_at;
    atomic_bool cancel; /* the worker is stopping: claim nothing more */
};

/* One delivery in flight: what was claimed, and its transfer. */
struct slot {
    bool used;
    struct db_notification n;
    struct notify_call c;
};

double notifier_backoff(const struct config *cfg, int attempts)
{
    double d = cfg->notify_backoff_seconds;
    for (int i = 1; i < attempts && d < cfg->notify_backoff_max_seconds; i++)
        d *= 2;
    return d < cfg->notify_backoff_max_seconds ? d : cfg->notify_backoff_max_seconds;
}


/* The outcome of slot s's attempt into the log, in a transaction of its own. */
static int finish(struct db *db, const struct config *cfg, struct slot *s)
{
    struct notify_call *c = &s->c;
    const struct db_notification *d = &s->n;
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
    bool last = c->permanent || d->attempts >= cfg->notify_max_attempts;
    if (c->error[0])
        log_info("notifier: %s delivery %s of %s, attempt %d: %s%s", d->channel, d->id, d->event,
                 d->attempts, c->error, last ? " (giving up)" : "");
    const struct db_ctx ctx = {.roles = "system"};
    int e = db_begin(db, &ctx, false);
    if (!e && !c->error[0])
        e = db_notify_finish(db, d->id, "delivered", status, NULL, 0);
    else if (!e)
        e = db_notify_finish(db, d->id, last ? "failed" : "pending", status, c->error,
                             last ? 0 : notifier_backoff(cfg, d->attempts));
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    return e;
}

/* Record slot s (a failure to record leaves the row to its lease) and free it. */
static void release(struct db *db, const struct config *cfg, CURLM *m, struct slot *s, size_t *busy)
{
    (void)finish(db, cfg, s);
    if (s->c.h)
        (void)curl_multi_remove_handle(m, s->c.h);
    notifycall_free(&s->c);
    db_notification_free(&s->n);
    s->used = false;
    (*busy)--;
}

/* The users with PER_USER deliveries in flight, as a PostgreSQL array, into out. */
static void busy_users(const struct slot *slots, char *out, size_t outsz)
{
    size_t len = 0;
    out[len++] = '{';
    for (size_t i = 0; i < SLOTS; i++) {
        if (!slots[i].used)
            continue;
        int n = 0;
        bool earlier = false; /* listed already, at the first of its slots */
        for (size_t j = 0; j < SLOTS; j++)
            if (slots[j].used && strcmp(slots[j].n.user_id, slots[i].n.user_id) == 0) {
                n++;
                earlier = earlier || j < i;
            }
        if (n < PER_USER || earlier || len + 40 > outsz)
            continue;
        int k = snprintf(out + len, outsz - len, "%s%s", len > 1 ? "," : "", slots[i].n.user_id);
        if (k > 0 && (size_t)k < outsz - len)
            len += (size_t)k;
    }
    out[len++] = '}';
    out[len] = '\0';
}

/*
 * Claim due deliveries into the free slots and start them. An attempt that
 * cannot start (a refused address) is recorded at once.
 */
static int claim(struct db *db, struct notifier *nt, CURLM *m, struct slot *slots, size_t *busy)
{
    const struct db_ctx ctx = {.roles = "system"};
    struct db_notifications got = {0};
    char skip[SLOTS * 40 + 3];
    busy_users(slots, skip, sizeof skip);
    int e = db_begin(db, &ctx, false);
    if (!e) /* the lease outlasts an attempt: a crash mid-attempt retries after it */
        e = db_notify_claim(db, (int)(SLOTS - *busy), nt->cfg->notify_timeout_seconds + 30, skip,
                            &got);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (e) {
        db_notifications_free(&got);
        return e;
    }
    size_t k = 0;
    for (size_t i = 0; i < SLOTS && k < got.n; i++) {
        if (slots[i].used)
            continue;
        struct slot *s = &slots[i];
        s->n = got.v[k];
        memset(&got.v[k++], 0, sizeof got.v[0]); /* moved: the slot owns it now */
        s->used = true;
        (*busy)++;
        if (strcmp(s->n.channel, "webhook") == 0)
            notifyhook_prepare(nt->cfg, &s->n, &s->c);
        else
            notifymail_prepare(nt->cfg, &s->n, &s->c);
        /* reap() finds the slot from the handle */
        if (s->c.h && (curl_easy_setopt(s->c.h, CURLOPT_PRIVATE, s) != CURLE_OK ||
                       curl_multi_add_handle(m, s->c.h) != CURLM_OK))
            notifycall_refuse(&s->c, false, "cannot start the transfer");
        if (!s->c.h)
            release(db, nt->cfg, m, s, busy);
    }
    db_notifications_free(&got);
    return 0;
}

/* Record every transfer that ended. */
static void reap(struct db *db, const struct config *cfg, CURLM *m, size_t *busy)
{
    CURLMsg *msg;
    int left = 0;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct slot *s = NULL;
        if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s) != CURLE_OK || !s)
            continue;
        CURLcode rc = msg->data.result;
        if (rc != CURLE_OK)
            snprintf(s->c.error, sizeof s->c.error, "%s",
                     s->c.errbuf[0] ? s->c.errbuf : curl_easy_strerror(rc));
        release(db, cfg, m, s, busy);
    }
}

/* The periodic sweeps: budget thresholds, idle GPUs, old deliveries. */
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
    if (!e && budgets) /* same pace: idle is judged over 30 minutes */
        e = db_notify_idle(db);
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

/*
 * A round keeps up to SLOTS deliveries in flight: each one that ends is
 * recorded at once and its slot claims the next due one, so a slow receiver
 * holds its own slot and nobody else's. The round ends when nothing is due
 * and nothing in flight, or after ROUND_MAX_S (the transfers in flight are
 * finished first: each is bounded by its timeout).
 */
static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    struct notifier *nt = arg;
    /* a failed sweep (logged by db/) is tried again next round: deliveries go on */
    (void)sweeps(db, nt);
    CURLM *m = curl_multi_init();
    if (!m)
        return AIDC_EINTERNAL;
    struct slot *slots = xcalloc(SLOTS, sizeof *slots);
    size_t busy = 0;
    int e = 0;
    bool claiming = true;
    double started = clock_now_ms(), claimed_at = -CLAIM_EVERY_MS;
    for (;;) {
        if (claiming && (atomic_load(&nt->cancel) || clock_now_ms() - started > ROUND_MAX_S * 1000.0))
            claiming = false;
        if (claiming && busy < SLOTS && clock_now_ms() - claimed_at >= CLAIM_EVERY_MS) {
            size_t before = busy;
            e = claim(db, nt, m, slots, &busy);
            claimed_at = clock_now_ms();
            if (e || (busy == before && busy == 0))
                claiming = false;
        }
        if (busy == 0)
            break;
        int running = 0;
        if (curl_multi_perform(m, &running) != CURLM_OK)
            break;
        reap(db, nt->cfg, m, &busy);
        if (busy > 0 && curl_multi_poll(m, NULL, 0, 100, NULL) != CURLM_OK)
            break;
    }
    for (size_t i = 0; i < SLOTS; i++) /* only after a multi failure: left to their lease */
        if (slots[i].used) {
            if (slots[i].c.h)
                (void)curl_multi_remove_handle(m, slots[i].c.h);
            notifycall_free(&slots[i].c);
            db_notification_free(&slots[i].n);
        }
    free(slots);
    curl_multi_cleanup(m);
    return e;
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
        .cancel = &nt->cancel,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
