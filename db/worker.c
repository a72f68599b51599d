/* worker.c - the background worker loop (see worker.h). */
#include "worker.h"

#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "db.h"
#include "health.h"
#include "migrate.h"
#include "sched.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RETRY_MS   1000
#define FAIL_REPEAT 60   /* a failing round is said again every this many failures (a minute) */
#define STANDBY_MS 1000 /* a standby asks for the lead this often */
/* advisory lock keys of the leads: clear of the per-round locks (enum db_sched_lock) */
#define LEAD_KEY_BASE  100
#define SCHEMA_CHECK_S 10 /* how often a worker checks the schema is still its binary's */

static const char *const lead_names[WORKER_LEAD_COUNT] = {
    "",        "admitter", "dispatcher", "syncer",   "meter",      "sealer", "registry_sync",
    "storage", "sessions", "efficiency", "notifier", "arraycancel"};
static atomic_int leading[WORKER_LEAD_COUNT];
static atomic_ulong lead_changes[WORKER_LEAD_COUNT];
static atomic_ulong rounds_failed[WORKER_LEAD_COUNT];

struct worker {
    struct worker_spec spec;
    pthread_t thread;
    int wake[2]; /* a pipe: stop writes a byte, the wait sees it */
    atomic_bool stop;
    struct db *db;
    bool leading;
    unsigned lead_conn; /* db_generation of the connection holding the lead */
    bool schema_ok;
    time_t schema_checked;
    long failures; /* rounds failed in a row */
};

static void nap(struct worker *w, int ms)
{
    struct pollfd p = {.fd = w->wake[0], .events = POLLIN};
    (void)poll(&p, 1, ms);
}

static void set_leading(struct worker *w, bool on)
{
    w->leading = on;
    /* a leader's statements run only on the session holding its lock: after a
     * failover its round fails instead of going on, unled, on the new primary */
    db_bind_session(w->db, on ? w->lead_conn : 0);
    atomic_store(&leading[w->spec.lead], on ? 1 : 0);
}

/*
 * Whether the schema is still this binary's. A rolling upgrade migrates the
 * database while older replicas still run: their workers must stand by (and
 * give up a lead) rather than run old code against the new schema, while
 * the upgraded replicas take over. Checked every SCHEMA_CHECK_S; a failed
 * check keeps the last verdict (the round after it will fail anyway).
 */
static bool schema_current(struct worker *w)
{
    time_t now = time(NULL);
    if (w->schema_checked && now >= w->schema_checked && now - w->schema_checked < SCHEMA_CHECK_S)
        return w->schema_ok;
    int v = 0;
    if (db_health_schema_version(w->db, &v) != 0)
        return w->schema_ok;
    w->schema_checked = now;
    bool ok = v == migrate_latest_version();
    if (ok != w->schema_ok)
        log_warn(ok ? "%s: the database schema is version %d again, as this aidcd's: working"
                    : "%s: the database schema is at version %d, not this aidcd's: standing by",
                 w->spec.name, v);
    w->schema_ok = ok;
    return ok;
}

/* True when this replica leads w (taking the lead if it is free), or w needs none. */
static bool lead(struct worker *w)
{
    enum worker_lead l = w->spec.lead;
    if (!schema_current(w)) {
        if (w->leading) {
            if (w->spec.on_unlead)
                w->spec.on_unlead(w->spec.arg);
            if (w->lead_conn == db_generation(w->db))
                (void)db_sched_unlead(w->db, LEAD_KEY_BASE + (int)l);
            set_leading(w, false);
        }
        return false;
    }
    if (l == WORKER_LEAD_NONE)
        return true;
    unsigned conn = db_generation(w->db);
    if (w->leading && conn != 0 && conn == w->lead_conn)
        return true;
    if (w->leading) {
        log_warn("%s: its database session ended, and the lead with it; asking again on a "
                 "new one (after a failover: on the new primary)",
                 w->spec.name);
        set_leading(w, false);
    }
    bool got = false;
    if (db_sched_lead(w->db, LEAD_KEY_BASE + (int)l, &got) != 0 || !got)
        return false;
    w->lead_conn = db_generation(w->db);
    set_leading(w, true);
    atomic_fetch_add(&lead_changes[l], 1);
    log_info("%s: leading on this replica", w->spec.name);
    if (w->spec.on_lead) {
        int e = w->spec.on_lead(w->db, w->spec.arg);
        if (e)
            log_warn("%s: cannot take over from the previous leader (%s); its leftovers wait "
                     "for their leases",
                     w->spec.name, aidc_err_name(e));
    }
    return true;
}

/*
 * A round that keeps failing (a statement the database refuses, a backend
 * down) is said at its first failure and then once every FAIL_REPEAT, with the
 * database's word: a worker that silently retries every second for hours is
 * worse than a noisy one. The failures between are debug.
 */
static void round_failed(struct worker *w, int r)
{
    w->failures++;
    enum log_level lv = w->failures == 1 || w->failures % FAIL_REPEAT == 0 ? LOG_WARN : LOG_DEBUG;
    if (!log_enabled(lv))
        return;
    const struct db_error *de = db_last_error(w->db);
    log_write(lv, "%s: round failed %ld time%s in a row (%s%s%s); again in a second", w->spec.name,
              w->failures, w->failures == 1 ? "" : "s", aidc_err_name(r),
              de->message[0] ? "; the database's last error: " : "", de->message);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    bool notified = true; /* the first round looks at everything */
    while (!atomic_load(&w->stop)) {
        if (!lead(w)) {
            /* a standby: wake at the next notification or STANDBY_MS and ask again */
            if (db_wait(w->db, STANDBY_MS, w->wake[0]) < 0)
                nap(w, RETRY_MS);
            notified = true; /* whoever leads next looks at everything */
            continue;
        }
        int r = w->spec.round(w->db, notified, w->spec.arg);
        notified = false;
        if (atomic_load(&w->stop))
            break;
        if (r > 0)
            continue;
        if (r < 0) {
            atomic_fetch_add(&rounds_failed[w->spec.lead], 1);
            round_failed(w, r);
            nap(w, RETRY_MS);
            notified = true;
            continue;
        }
        if (w->failures > 0)
            log_info("%s: rounds succeed again after %ld failed", w->spec.name, w->failures);
        w->failures = 0;
        /* wake at least every SCHEMA_CHECK_S to see a migration (a long interval
         * would keep an old leader at work) */
        int wait_ms = w->spec.interval_ms < SCHEMA_CHECK_S * 1000 ? w->spec.interval_ms
                                                                  : SCHEMA_CHECK_S * 1000;
        int got = db_wait(w->db, wait_ms, w->wake[0]);
        if (got < 0) {
            nap(w, RETRY_MS);
            notified = true; /* notifications may have been missed */
        } else {
            notified = got > 0;
        }
    }
    return NULL;
}

struct worker *worker_start(const char *url, const struct worker_spec *spec)
{
    struct worker *w = xcalloc(1, sizeof *w);
    w->spec = *spec;
    void *owned = spec->owns_arg ? spec->arg : NULL;
    void (*release)(void *) = spec->free_arg ? spec->free_arg : free;
    w->schema_ok = true; /* serve checked it before starting the workers */
    atomic_init(&w->stop, false);
    if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        log_error("%s: cannot create its wake-up pipe: %s", spec->name, strerror(errno));
        free(w);
        if (owned)
            release(owned);
        return NULL;
    }
    char *app = xasprintf("aidcd-%s", spec->name);
    w->db = db_open(url, app);
    free(app);
    for (int i = 0; i < 4 && spec->channels[i]; i++)
        db_listen(w->db, spec->channels[i]);
    if (pthread_create(&w->thread, NULL, run, w) != 0) {
        log_error("cannot start the %s thread", spec->name);
        db_close(w->db);
        close(w->wake[0]);
        close(w->wake[1]);
        free(w);
        if (owned)
            release(owned);
        return NULL;
    }
    return w;
}

void worker_metrics(struct sbuf *sb)
{
    sbuf_puts(sb, "# HELP aidc_worker_leader 1 when this replica leads the worker.\n"
                  "# TYPE aidc_worker_leader gauge\n");
    for (int l = 1; l < WORKER_LEAD_COUNT; l++)
        sbuf_printf(sb, "aidc_worker_leader{worker=\"%s\"} %d\n", lead_names[l],
                    atomic_load(&leading[l]));
    sbuf_puts(sb, "# HELP aidc_worker_leader_changes_total Times this replica took the lead.\n"
                  "# TYPE aidc_worker_leader_changes_total counter\n");
    for (int l = 1; l < WORKER_LEAD_COUNT; l++)
        sbuf_printf(sb, "aidc_worker_leader_changes_total{worker=\"%s\"} %lu\n", lead_names[l],
                    atomic_load(&lead_changes[l]));
    sbuf_puts(sb, "# HELP aidc_worker_rounds_failed_total Rounds that failed (retried a second "
                  "later).\n"
                  "# TYPE aidc_worker_rounds_failed_total counter\n");
    for (int l = 1; l < WORKER_LEAD_COUNT; l++)
        sbuf_printf(sb, "aidc_worker_rounds_failed_total{worker=\"%s\"} %lu\n", lead_names[l],
                    atomic_load(&rounds_failed[l]));
}

void worker_stop(struct worker *w)
{
    if (!w)
        return;
    atomic_store(&w->stop, true);
    if (w->spec.cancel)
        atomic_store(w->spec.cancel, true);
    char b = 1;
    while (write(w->wake[1], &b, 1) < 0 && errno == EINTR)
        ;
    pthread_join(w->thread, NULL);
    if (w->leading && w->spec.on_unlead)
        w->spec.on_unlead(w->spec.arg);
    if (w->leading)
        set_leading(w, false);
    db_close(w->db); /* ends the session: a standby takes the lead at once */
    close(w->wake[0]);
    close(w->wake[1]);
    if (w->spec.owns_arg)
        (w->spec.free_arg ? w->spec.free_arg : free)(w->spec.arg);
    free(w);
}
