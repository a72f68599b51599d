/* waker.c - notifications sent after the commit, from a thread (see waker.h). */
#include "waker.h"

#include "../db/db.h"
#include "../db/sched.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/log.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

/* after a failed notification, the next try (the database may be restarting) */
#define RETRY_S 1

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work; /* on CLOCK_MONOTONIC, made by the first start */
    unsigned pending;    /* channels asked for and not sent yet */
    bool cond_ready, running, stopping;
    pthread_t thread;
    struct db *db;
    long long gap_ns;     /* at most one notification per gap (see pace) */
    struct timespec last; /* CLOCK_MONOTONIC, when the last one was sent; 0: never */
} waker = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Wait on work until `ns` from now on the monotonic clock, or stopping (mu held). */
static void wait_ns(long long ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    ns += until.tv_nsec;
    until.tv_sec += (time_t)(ns / 1000000000LL);
    until.tv_nsec = (long)(ns % 1000000000LL);
    while (!waker.stopping && pthread_cond_timedwait(&waker.work, &waker.mu, &until) != ETIMEDOUT)
        ;
}

/*
 * Two notifications per admission_coalesce_ms at most (mu held). The admitter
 * waits that long between passes anyway, so notifications sent closer together
 * only wake every listener - the admitter's and the meter's connections and
 * threads - for nothing: in a burst of submits that was a NOTIFY, a commit and
 * two wake-ups per job (docs/performance.md). Half the window, not all of it:
 * the last notification of a burst comes at most that much after its last
 * commit, and a pass it starts late would hold back the next lone submit. A
 * notification after a quiet spell goes at once; the marks of the wait ride
 * on it. Stopping cuts the wait short: what is asked for is sent first.
 */
static void pace(void)
{
    if (waker.gap_ns <= 0 || (waker.last.tv_sec == 0 && waker.last.tv_nsec == 0))
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long since = (long long)(now.tv_sec - waker.last.tv_sec) * 1000000000LL +
                      (now.tv_nsec - waker.last.tv_nsec);
    if (since >= 0 && since < waker.gap_ns)
        wait_ns(waker.gap_ns - since);
}

/* The channels not sent (0: all were). */
static unsigned send_channels(unsigned channels)
{
    if (channels & WAKER_JOBS) {
        int e = db_sched_wake_after(waker.db, "aidc_jobs", "submit");
        if (e) {
            log_warn("waker: cannot notify aidc_jobs (%s): trying again in %d s", aidc_err_name(e),
                     RETRY_S);
            return WAKER_JOBS;
        }
    }
    return 0;
}

static void *run(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&waker.mu);
    for (;;) {
        while (!waker.pending && !waker.stopping)
            pthread_cond_wait(&waker.work, &waker.mu);
        if (waker.pending)
            pace();
        unsigned channels = waker.pending;
        waker.pending = 0;
        if (!channels)
            break; /* stopping, nothing left to send */
        pthread_mutex_unlock(&waker.mu);
        /* the pokes that come in meanwhile ride on the next notification */
        unsigned failed = send_channels(channels);
        pthread_mutex_lock(&waker.mu);
        clock_gettime(CLOCK_MONOTONIC, &waker.last);
        if (!failed)
            continue;
        /* a committed job must not go unannounced: again after a pause, unless stopping */
        waker.pending |= failed;
        wait_ns(RETRY_S * 1000000000LL);
        if (waker.stopping)
            break;
    }
    pthread_mutex_unlock(&waker.mu);
    return NULL;
}

/* The condition variable, once per process, on the monotonic clock (mu held). */
static bool cond_make(void)
{
    pthread_condattr_t ca;
    if (waker.cond_ready || pthread_condattr_init(&ca) != 0)
        return waker.cond_ready;
    waker.cond_ready = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
                       pthread_cond_init(&waker.work, &ca) == 0;
    pthread_condattr_destroy(&ca);
    return waker.cond_ready;
}

bool waker_start(const struct config *cfg)
{
    pthread_mutex_lock(&waker.mu);
    if (waker.running) { /* one per process */
        pthread_mutex_unlock(&waker.mu);
        return true;
    }
    waker.db = db_open(cfg->database_url, "aidcd-waker");
    db_set_statement_timeout(waker.db, cfg->db_statement_timeout_ms);
    db_set_txpool(waker.db, cfg->db_txpool);
    db_set_pool(waker.db, DB_POOL_PRIMARY); /* AIDC_DATABASE_URL, as the HTTP threads' */
    waker.pending = 0;
    waker.stopping = false;
    waker.gap_ns = (long long)cfg->admission_coalesce_ms * 1000000LL / 2;
    waker.last = (struct timespec){0};
    waker.running = cond_make() && pthread_create(&waker.thread, NULL, run, NULL) == 0;
    bool ok = waker.running;
    if (!ok) {
        db_close(waker.db);
        waker.db = NULL;
    }
    pthread_mutex_unlock(&waker.mu);
    if (!ok)
        log_error("cannot start the waker thread");
    return ok;
}

void waker_poke(unsigned channels)
{
    pthread_mutex_lock(&waker.mu);
    if (waker.running && !waker.stopping) {
        /* only the idle wait needs waking: the pace and the retry waits read
         * `pending` when they end */
        if (!waker.pending)
            pthread_cond_broadcast(&waker.work);
        waker.pending |= channels;
    }
    pthread_mutex_unlock(&waker.mu);
}

void waker_stop(void)
{
    pthread_mutex_lock(&waker.mu);
    bool running = waker.running;
    waker.stopping = true;
    if (waker.cond_ready)
        pthread_cond_broadcast(&waker.work);
    pthread_mutex_unlock(&waker.mu);
    if (running)
        pthread_join(waker.thread, NULL);
    pthread_mutex_lock(&waker.mu);
    waker.running = false;
    db_close(waker.db);
    waker.db = NULL;
    pthread_mutex_unlock(&waker.mu);
}
