/* workpool.c - threads and a bounded queue of jobs (see workpool.h). */
#include "workpool.h"

#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <pthread.h>
#include <stdlib.h>

struct workpool {
    pthread_mutex_t mu;
    pthread_cond_t work;
    struct workpool_job *head, *tail;
    long reserved; /* places taken in the queue: pushed or about to be */
    long running;
    long queue_max;
    bool stopping;
    pthread_t *threads;
    int nthreads;
};

static void *worker(void *arg)
{
    struct workpool *pool = arg;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->head && !pool->stopping)
            pthread_cond_wait(&pool->work, &pool->mu);
        if (!pool->head)
            break; /* stopping, nothing left that started */
        struct workpool_job *job = pool->head;
        pool->head = job->next;
        if (!pool->head)
            pool->tail = NULL;
        pool->reserved--;
        pool->running++;
        pthread_mutex_unlock(&pool->mu);
        job->run(job);
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
    pthread_cond_init(&pool->work, NULL);
    pool->queue_max = queue_max;
    pool->threads = xcalloc((size_t)threads, sizeof *pool->threads);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&pool->threads[i], NULL, worker, pool) != 0) {
            log_error("cannot start the %s threads", what);
            workpool_stop(pool);
            workpool_free(pool);
            return NULL;
        }
        pool->nthreads++; /* not yet seen by any other thread: no lock */
    }
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
    pthread_cond_signal(&pool->work);
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
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->mu);
    while (left) {
        struct workpool_job *next = left->next;
        pthread_mutex_lock(&pool->mu);
        pool->reserved--;
        pthread_mutex_unlock(&pool->mu);
        left->cancel(left);
        left = next;
    }
    pthread_mutex_lock(&pool->mu);
    int n = pool->nthreads;
    pool->nthreads = 0;
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < n; i++)
        pthread_join(pool->threads[i], NULL);
}

void workpool_free(struct workpool *pool)
{
    if (!pool)
        return;
    free(pool->threads);
    pthread_cond_destroy(&pool->work);
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
