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
    pthread_cond_t work;
    unsigned pending; /* channels asked for and not sent yet */
    bool running, stopping;
    pthread_t thread;
    struct db *db;
} waker = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER};

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
        unsigned channels = waker.pending;
        waker.pending = 0;
        if (!channels)
            break; /* stopping, nothing left to send */
        pthread_mutex_unlock(&waker.mu);
        /* the pokes that come in meanwhile ride on the next notification */
        unsigned failed = send_channels(channels);
        pthread_mutex_lock(&waker.mu);
        if (!failed)
            continue;
        /* a committed job must not go unannounced: again after a pause, unless stopping */
        waker.pending |= failed;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += RETRY_S;
        while (!waker.stopping &&
               pthread_cond_timedwait(&waker.work, &waker.mu, &until) != ETIMEDOUT)
            ;
        if (waker.stopping)
            break;
    }
    pthread_mutex_unlock(&waker.mu);
    return NULL;
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
    waker.running = pthread_create(&waker.thread, NULL, run, NULL) == 0;
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
        waker.pending |= channels;
        pthread_cond_broadcast(&waker.work);
    }
    pthread_mutex_unlock(&waker.mu);
}

void waker_stop(void)
{
    pthread_mutex_lock(&waker.mu);
    bool running = waker.running;
    waker.stopping = true;
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
