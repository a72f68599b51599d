/*
 * kdfpool.h - the threads that run password work (scrypt) off the HTTP threads.
 *
 * A login's scrypt takes tens of milliseconds of CPU and 32 MiB: on an HTTP
 * thread it holds every request queued behind it. http.c suspends such a
 * request (MHD_suspend_connection), hands it here, and the job resumes it once
 * the answer is made. The queue is bounded: a request that finds it full is
 * answered 503 at once by the HTTP thread, which never waits for this pool.
 */
#ifndef AIDC_KDFPOOL_H
#define AIDC_KDFPOOL_H

#include <stdbool.h>

struct sbuf;

/* One unit of work. run is called on a pool thread; cancel, instead of run, on
 * the thread that stops the pool when the job never started. Either must end
 * the job (the pool does not touch it after). */
struct kdfpool_job {
    void (*run)(struct kdfpool_job *job);
    void (*cancel)(struct kdfpool_job *job);
    struct kdfpool_job *next;
};

/* Start threads workers with room for queue_max waiting jobs; false on failure. */
bool kdfpool_start(int threads, int queue_max);
/*
 * Reserve a place in the queue: false when it is full or the pool stopped.
 * A true must be followed by exactly one kdfpool_push (the caller suspends its
 * connection in between, so the job cannot resume it before it is suspended).
 */
bool kdfpool_reserve(void);
void kdfpool_push(struct kdfpool_job *job);
/* Cancel the jobs still waiting, let the running ones end, join the threads. */
void kdfpool_stop(void);
/* Jobs waiting and running now (metrics, tests). */
void kdfpool_counts(long *queued, long *running);
/* The pool's gauges in Prometheus' text format. */
void kdfpool_metrics(struct sbuf *sb);

#endif
