/* workpool.c - threads and a bounded queue of jobs (see workpool.h). */
#include "workpool.h"

#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One thread, and whether it waits in the pool's stack of idle threads. */
struct wp_thread {
    struct workpool *pool;
    pthread_t t;
    pthread_cond_t wake;
    bool listed;
    bool started; /* listed once: waiting for its first job */
};

/*
 * A job wakes the thread that went idle last (a stack, not a shared condition
 * variable, which wakes about the longest waiter): under a light load the same
 * few threads do the work, so their per-thread caches (authcache.h) stay warm
 * and the other threads never open a database connection.
 */
struct workpool {
    pthread_mutex_t mu;
    pthread_cond_t started; /* a thread listed itself for the first time */
    struct workpool_job *head, *tail;
    long reserved; /* places taken in the queue: pushed or about to be */
    long running;
    long queue_max;
    bool stopping;
    struct wp_thread *threads;
    int nthreads; /* started */
    bool joined;
    int *idle; /* indexes into threads, the last idle on top */
    int nidle;
};

static void unlist(struct workpool *pool, struct wp_thread *w)
{
    int me = (int)(w - pool->threads);
    for (int i = 0; i < pool->nidle; i++)
        if (pool->idle[i] == me) {
            pool->idle[i] = pool->idle[--pool->nidle];
            break;
        }
    w->listed = false;
}

static int count_started(const struct workpool *pool)
{
    int n = 0;
    for (int i = 0; i < pool->nthreads; i++)
        n += pool->threads[i].started;
    return n;
}

/* Set by a job that could not be done on this thread (workpool_demote_self). */
static _Thread_local bool demoted;

void workpool_demote_self(void)
{
    demoted = true;
}

/* Put w on the idle stack: on top, or at the bottom when its last job was demoted. */
static void list(struct workpool *pool, struct wp_thread *w, bool bottom)
{
    int me = (int)(w - pool->threads);
    if (bottom) {
        memmove(pool->idle + 1, pool->idle, (size_t)pool->nidle * sizeof *pool->idle);
        pool->idle[0] = me;
    } else {
        pool->idle[pool->nidle] = me;
    }
    pool->nidle++;
    w->listed = true;
}

static void *worker(void *arg)
{
    struct wp_thread *w = arg;
    struct workpool *pool = w->pool;
    bool bottom = false;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->head && !pool->stopping) {
            if (!w->listed) {
                list(pool, w, bottom);
                bottom = false;
                if (!w->started)
                    pthread_cond_signal(&pool->started);
                w->started = true;
            }
            pthread_cond_wait(&w->wake, &pool->mu);
        }
        if (w->listed) /* woken otherwise than by a push (spurious, or the stop) */
            unlist(pool, w);
        if (!pool->head)
            break; /* stopping, nothing left that started */
        struct workpool_job *job = pool->head;
        pool->head = job->next;
        if (!pool->head)
            pool->tail = NULL;
        pool->reserved--;
        pool->running++;
        pthread_mutex_unlock(&pool->mu);
        demoted = false;
        job->run(job);
        bottom = demoted;
        pthread_mutex_lock(&pool->mu);
        pool->running--;
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

struct workpool *workpool_start(const char *what, int threads, int queue_max)
{
    struct workpool *pool = xcalloc(1, sizeof *pool);
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->started, NULL);
    pool->queue_max = queue_max;
    pool->threads = xcalloc((size_t)threads, sizeof *pool->threads);
    pool->idle = xcalloc((size_t)threads, sizeof *pool->idle);
    for (int i = 0; i < threads; i++) {
        struct wp_thread *w = &pool->threads[i];
        w->pool = pool;
        pthread_cond_init(&w->wake, NULL);
        /* nthreads under the lock: a started worker reads the pool under it */
        pthread_mutex_lock(&pool->mu);
        int e = pthread_create(&w->t, NULL, worker, w);
        if (!e)
            pool->nthreads++;
        pthread_mutex_unlock(&pool->mu);
        if (e) {
            pthread_cond_destroy(&w->wake);
            log_error("cannot start the %s threads", what);
            workpool_stop(pool);
            workpool_free(pool);
            return NULL;
        }
    }
    /* every thread on the idle stack before the first job: the order is then set */
    pthread_mutex_lock(&pool->mu);
    while (count_started(pool) < pool->nthreads)
        pthread_cond_wait(&pool->started, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
    return pool;
}

bool workpool_reserve(struct workpool *pool)
{
    if (!pool)
        return false;
    pthread_mutex_lock(&pool->mu);
    bool ok = !pool->stopping && pool->nthreads > 0 && pool->reserved < pool->queue_max;
    if (ok)
        pool->reserved++;
    pthread_mutex_unlock(&pool->mu);
    return ok;
}

void workpool_push(struct workpool *pool, struct workpool_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&pool->mu);
    if (pool->stopping) {
        /* stopped between the reservation and now: it will never run */
        pool->reserved--;
        pthread_mutex_unlock(&pool->mu);
        job->cancel(job);
        return;
    }
    if (pool->tail)
        pool->tail->next = job;
    else
        pool->head = job;
    pool->tail = job;
    if (pool->nidle > 0) {
        struct wp_thread *w = &pool->threads[pool->idle[--pool->nidle]];
        w->listed = false;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&pool->mu);
}

void workpool_stop(struct workpool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stopping = true;
    struct workpool_job *left = pool->head;
    pool->head = pool->tail = NULL;
    for (int i = 0; i < pool->nthreads; i++)
        pthread_cond_signal(&pool->threads[i].wake);
    pthread_mutex_unlock(&pool->mu);
    while (left) {
        struct workpool_job *next = left->next;
        pthread_mutex_lock(&pool->mu);
        pool->reserved--;
        pthread_mutex_unlock(&pool->mu);
        left->cancel(left);
        left = next;
    }
    if (pool->joined)
        return;
    for (int i = 0; i < pool->nthreads; i++)
        pthread_join(pool->threads[i].t, NULL);
    pool->joined = true;
}

void workpool_free(struct workpool *pool)
{
    if (!pool)
        return;
    for (int i = 0; i < pool->nthreads; i++)
        pthread_cond_destroy(&pool->threads[i].wake);
    free(pool->threads);
    free(pool->idle);
    pthread_cond_destroy(&pool->started);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

void workpool_counts(struct workpool *pool, long *queued, long *running)
{
    *queued = *running = 0;
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    *queued = pool->reserved;
    *running = pool->running;
    pthread_mutex_unlock(&pool->mu);
}

void workpool_metrics(struct workpool *pool, struct sbuf *sb, const char *metric, const char *help)
{
    long queued, running;
    workpool_counts(pool, &queued, &running);
    sbuf_printf(sb,
                "# HELP %s %s\n"
                "# TYPE %s gauge\n"
                "%s{state=\"queued\"} %ld\n"
                "%s{state=\"running\"} %ld\n",
                metric, help, metric, metric, queued, metric, running);
}
