/* kdfpool.c - the password work's threads and bounded queue (see kdfpool.h). */
#include "kdfpool.h"

#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <pthread.h>
#include <stdlib.h>

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work;
    struct kdfpool_job *head, *tail;
    long reserved; /* places taken in the queue: pushed or about to be */
    long running;
    long queue_max;
    bool stopping;
    pthread_t *threads;
    int nthreads;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER};

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (!pool.head && !pool.stopping)
            pthread_cond_wait(&pool.work, &pool.mu);
        if (!pool.head)
            break; /* stopping, nothing left that started */
        struct kdfpool_job *job = pool.head;
        pool.head = job->next;
        if (!pool.head)
            pool.tail = NULL;
        pool.reserved--;
        pool.running++;
        pthread_mutex_unlock(&pool.mu);
        job->run(job);
        pthread_mutex_lock(&pool.mu);
        pool.running--;
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

bool kdfpool_start(int threads, int queue_max)
{
    pthread_mutex_lock(&pool.mu);
    pool.stopping = false;
    pool.queue_max = queue_max;
    pool.threads = xcalloc((size_t)threads, sizeof *pool.threads);
    pool.nthreads = 0;
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&pool.threads[i], NULL, worker, NULL) != 0) {
            log_error("cannot start the password threads");
            kdfpool_stop();
            return false;
        }
        pool.nthreads++;
    }
    return true;
}

bool kdfpool_reserve(void)
{
    pthread_mutex_lock(&pool.mu);
    bool ok = !pool.stopping && pool.nthreads > 0 && pool.reserved < pool.queue_max;
    if (ok)
        pool.reserved++;
    pthread_mutex_unlock(&pool.mu);
    return ok;
}

void kdfpool_push(struct kdfpool_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&pool.mu);
    if (pool.stopping) {
        /* stopped between the reservation and now: it will never run */
        pool.reserved--;
        pthread_mutex_unlock(&pool.mu);
        job->cancel(job);
        return;
    }
    if (pool.tail)
        pool.tail->next = job;
    else
        pool.head = job;
    pool.tail = job;
    pthread_cond_signal(&pool.work);
    pthread_mutex_unlock(&pool.mu);
}

void kdfpool_stop(void)
{
    pthread_mutex_lock(&pool.mu);
    pool.stopping = true;
    struct kdfpool_job *left = pool.head;
    pool.head = pool.tail = NULL;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);
    while (left) {
        struct kdfpool_job *next = left->next;
        pthread_mutex_lock(&pool.mu);
        pool.reserved--;
        pthread_mutex_unlock(&pool.mu);
        left->cancel(left);
        left = next;
    }
    for (int i = 0; i < pool.nthreads; i++)
        pthread_join(pool.threads[i], NULL);
    free(pool.threads);
    pool.threads = NULL;
    pool.nthreads = 0;
}

void kdfpool_counts(long *queued, long *running)
{
    pthread_mutex_lock(&pool.mu);
    *queued = pool.reserved;
    *running = pool.running;
    pthread_mutex_unlock(&pool.mu);
}

void kdfpool_metrics(struct sbuf *sb)
{
    long queued, running;
    kdfpool_counts(&queued, &running);
    sbuf_printf(sb,
                "# HELP aidc_password_jobs Requests with password work (scrypt) on the "
                "password threads, by state.\n"
                "# TYPE aidc_password_jobs gauge\n"
                "aidc_password_jobs{state=\"queued\"} %ld\n"
                "aidc_password_jobs{state=\"running\"} %ld\n",
                queued, running);
}
