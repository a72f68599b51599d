/*
 * workpool.h - threads that serve requests off the HTTP threads.
 *
 * An HTTP thread that waits holds every request queued behind it. Two kinds
 * of request wait: one that runs the password KDF (scrypt: tens of
 * milliseconds of CPU and 32 MiB) and a write, which waits for its commit.
 * http.c suspends such a request (MHD_suspend_connection), hands it to a pool,
 * and the job resumes it once the answer is made. The queue is bounded: a
 * request that finds it full is answered by the HTTP thread (password work:
 * 503 at once; a write: served there, as without the pool).
 */
#ifndef AIDC_WORKPOOL_H
#define AIDC_WORKPOOL_H

#include <stdbool.h>

struct sbuf;
struct workpool;

/* One unit of work. run is called on a pool thread; cancel, instead of run, on
 * the thread that stops the pool when the job never started. Either must end
 * the job (the pool does not touch it after). */
struct workpool_job {
    void (*run)(struct workpool_job *job);
    void (*cancel)(struct workpool_job *job);
    struct workpool_job *next;
};

/* Start threads workers (what: for the log) with room for queue_max waiting
 * jobs; NULL on failure (logged). */
struct workpool *workpool_start(const char *what, int threads, int queue_max);
/*
 * Reserve a place in the queue: false when it is full, the pool stopped or is
 * NULL. A true must be followed by exactly one workpool_push (the caller
 * suspends its connection in between, so the job cannot resume it before it
 * is suspended).
 */
bool workpool_reserve(struct workpool *pool);
void workpool_push(struct workpool *pool, struct workpool_job *job);
/*
 * Called by a job's run: this thread could not do it (no database connection)
 * and handed it back. The thread then waits at the bottom of the idle stack,
 * so the next jobs go to threads that can, not again to the one that failed
 * fastest (the one idle last).
 */
void workpool_demote_self(void);
/* Cancel the jobs still waiting, let the running ones end, join the threads
 * (NULL: nothing; one caller at a time, again a no-op). Its counts stay
 * readable until workpool_free. */
void workpool_stop(struct workpool *pool);
void workpool_free(struct workpool *pool);
/* Jobs waiting and running now (metrics, tests); 0 and 0 for NULL. */
void workpool_counts(struct workpool *pool, long *queued, long *running);
/* The pool's gauge metric{state="queued"|"running"} in Prometheus' text format. */
void workpool_metrics(struct workpool *pool, struct sbuf *sb, const char *metric, const char *help);

#endif
