/* waker.c - notifications sent after the commit, from a thread (see waker.h). */
#include "waker.h"

#include "../db/db.h"
#include "../db/sched.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/log.h"

#include <pthread.h>

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work;
    unsigned pending; /* channels asked for and not sent yet */
    bool running, stopping;
    pthread_t thread;
    struct db *db;
} waker = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER};

static void send_channels(unsigned channels)
{
    if (channels & WAKER_JOBS) {
        int e = db_sched_wake_after(waker.db, "aidc_jobs", "submit");
        if (e) /* the workers' timed passes find the work all the same */
            log_warn("waker: cannot notify aidc_jobs (%s): admission waits for its next pass",
                     aidc_err_name(e));
    }
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
        send_channels(channels);
        pthread_mutex_lock(&waker.mu);
    }
    pthread_mutex_unlock(&waker.mu);
    return NULL;
}

bool waker_start(const struct config *cfg)
{
    waker.db = db_open(cfg->database_url, "aidcd-waker");
    db_set_statement_timeout(waker.db, cfg->db_statement_timeout_ms);
    db_set_txpool(waker.db, cfg->db_txpool);
    pthread_mutex_lock(&waker.mu);
    waker.pending = 0;
    waker.stopping = false;
    waker.running = pthread_create(&waker.thread, NULL, run, NULL) == 0;
    bool ok = waker.running;
    pthread_mutex_unlock(&waker.mu);
    if (!ok) {
        log_error("cannot start the waker thread");
        db_close(waker.db);
        waker.db = NULL;
    }
    return ok;
}

void waker_poke(unsigned channels)
{
    pthread_mutex_lock(&waker.mu);
    if (waker.running && !waker.stopping) {
        waker.pending |= channels;
        pthread_cond_signal(&waker.work);
    }
    pthread_mutex_unlock(&waker.mu);
}

void waker_stop(void)
{
    pthread_mutex_lock(&waker.mu);
    bool running = waker.running;
    waker.stopping = true;
    pthread_cond_signal(&waker.work);
    pthread_mutex_unlock(&waker.mu);
    if (running)
        pthread_join(waker.thread, NULL);
    pthread_mutex_lock(&waker.mu);
    waker.running = false;
    pthread_mutex_unlock(&waker.mu);
    db_close(waker.db);
    waker.db = NULL;
}
