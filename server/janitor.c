/* janitor.c - periodic clean-up thread (see janitor.h). */
#include "janitor.h"

#include "../audit/audit.h"
#include "../db/allocations.h"
#include "../db/appsessions.h"
#include "../db/db.h"
#include "../db/identity.h"
#include "../db/notify.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

struct janitor {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    int interval_s;
    int notice_days;
    struct db *db;
};

/* allocation.expiring, once per allocation that entered its notice window */
static int notice_allocations(struct janitor *j)
{
    json_t *items = NULL;
    int e = db_alloc_notice(j->db, j->notice_days, &items);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        if (e)
            break;
        const struct audit_event ev = {
            .action = "allocation.expiring",
            .resource_type = "allocation_request",
            .resource_id = json_string_value(json_object_get(it, "id")),
            .details = it,
            .tenant_id = json_string_value(json_object_get(it, "tenant_id")),
            .tenant_slug = json_string_value(json_object_get(it, "tenant")),
        };
        e = audit_record_system(j->db, &ev, true);
        if (!e) /* in the same transaction: noticed once, notified once */
            e = db_notify_allocation(j->db, ev.resource_id);
    }
    json_decref(items);
    return e;
}

static void clean_once(struct janitor *j)
{
    struct db_ctx ctx = {.roles = "system"};
    int e = db_ensure(j->db); /* its connection idles for minutes: probe it */
    if (!e)
        e = db_begin(j->db, &ctx, false);
    if (!e)
        e = db_identity_cleanup(j->db);
    if (!e) /* spent or stale session links and cookies: every POST .../open adds one */
        e = db_appsession_keys_expire(j->db);
    if (!e)
        e = notice_allocations(j);
    if (!e)
        e = db_commit(j->db);
    else
        db_rollback(j->db);
    if (e)
        log_debug("clean-up skipped: database unavailable or busy");
}

static void *run(void *arg)
{
    struct janitor *j = arg;
    pthread_mutex_lock(&j->mu);
    while (!j->stop) {
        pthread_mutex_unlock(&j->mu);
        clean_once(j);
        pthread_mutex_lock(&j->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += j->interval_s;
        while (!j->stop && pthread_cond_timedwait(&j->cv, &j->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

struct janitor *janitor_start(const char *url, int interval_s, int notice_days)
{
    struct janitor *j = xcalloc(1, sizeof *j);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->interval_s = interval_s;
    j->notice_days = notice_days;
    j->db = db_open(url, "aidcd-janitor");
    if (pthread_create(&j->thread, NULL, run, j) != 0) {
        log_error("cannot start the clean-up thread");
        db_close(j->db);
        free(j);
        return NULL;
    }
    return j;
}

void janitor_stop(struct janitor *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    j->stop = true;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->thread, NULL);
    db_close(j->db);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}
