/*
 * test_workpool.c - server/workpool: every job pushed runs once (or, at a
 * stop, is cancelled once), from many producers at once; a full queue refuses
 * the reservation; a stop cancels what waits and lets what runs end; and jobs
 * one at a time run on the thread that went idle last, not round the pool
 * (what keeps a light load on one write thread's connection and caches).
 */
#include "server/workpool.h"
#include "tests/support/suite.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tjob {
    struct workpool_job job; /* first: a struct workpool_job * is a struct tjob * */
    atomic_int runs, cancels;
    atomic_bool *gate; /* NULL: go; otherwise wait until it opens */
    bool demote;       /* the job says its thread could not do it */
    pthread_t ran_on;
};

static void nap(void)
{
    struct timespec t = {0, 1000 * 1000};
    nanosleep(&t, NULL); /* polling a flag another thread sets: nothing to block on */
}

static void tjob_run(struct workpool_job *j)
{
    struct tjob *t = (struct tjob *)(void *)j;
    while (t->gate && !atomic_load(t->gate))
        nap();
    t->ran_on = pthread_self();
    if (t->demote)
        workpool_demote_self();
    atomic_fetch_add(&t->runs, 1);
}

static void tjob_cancel(struct workpool_job *j)
{
    atomic_fetch_add(&((struct tjob *)(void *)j)->cancels, 1);
}

static void tjob_init(struct tjob *t, atomic_bool *gate)
{
    memset(t, 0, sizeof *t);
    t->job.run = tjob_run;
    t->job.cancel = tjob_cancel;
    t->gate = gate;
}

/* Until f(arg) holds, at most 10 s. */
static bool wait_until(bool (*f)(void *), void *arg)
{
    for (int i = 0; i < 10000; i++) {
        if (f(arg))
            return true;
        nap();
    }
    return f(arg);
}

static bool ran(void *arg)
{
    return atomic_load(&((struct tjob *)arg)->runs) > 0;
}

static bool cancelled(void *arg)
{
    return atomic_load(&((struct tjob *)arg)->cancels) > 0;
}

static bool idle(void *arg)
{
    long q, r;
    workpool_counts(arg, &q, &r);
    return q == 0 && r == 0;
}

/* One job running, none waiting. */
static bool one_running(void *arg)
{
    long q, r;
    workpool_counts(arg, &q, &r);
    return q == 0 && r == 1;
}

/* Reserve a place and push t (the place must be there). */
static void push(struct workpool *pool, struct tjob *t)
{
    ck_assert(workpool_reserve(pool));
    workpool_push(pool, &t->job);
}

/* Start job a held at gate on a one-thread pool and wait until it runs. */
static void run_held(struct workpool *pool, struct tjob *a, atomic_bool *gate)
{
    tjob_init(a, gate);
    push(pool, a);
    ck_assert(wait_until(one_running, pool));
}

#define PRODUCERS 4
#define PER       500

struct producer {
    struct workpool *pool;
    struct tjob *jobs;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    for (int i = 0; i < PER; i++) {
        while (!workpool_reserve(p->pool))
            nap();
        workpool_push(p->pool, &p->jobs[i].job);
    }
    return NULL;
}

START_TEST(every_job_runs_once_from_many_producers)
{
    struct workpool *pool = workpool_start("test", 3, 64);
    ck_assert_ptr_nonnull(pool);
    struct tjob *jobs = calloc(PRODUCERS * PER, sizeof *jobs);
    ck_assert_ptr_nonnull(jobs);
    struct producer p[PRODUCERS];
    pthread_t t[PRODUCERS];
    for (int i = 0; i < PRODUCERS * PER; i++)
        tjob_init(&jobs[i], NULL);
    for (int i = 0; i < PRODUCERS; i++) {
        p[i] = (struct producer){pool, jobs + i * PER};
        ck_assert_int_eq(pthread_create(&t[i], NULL, produce, &p[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(t[i], NULL);
    ck_assert(wait_until(idle, pool));
    workpool_stop(pool);
    for (int i = 0; i < PRODUCERS * PER; i++) {
        ck_assert_int_eq(atomic_load(&jobs[i].runs), 1);
        ck_assert_int_eq(atomic_load(&jobs[i].cancels), 0);
    }
    workpool_free(pool);
    free(jobs);
}
END_TEST

START_TEST(a_full_queue_refuses_the_reservation)
{
    struct workpool *pool = workpool_start("test", 1, 1);
    ck_assert_ptr_nonnull(pool);
    atomic_bool gate = false;
    struct tjob a, b;
    run_held(pool, &a, &gate);
    tjob_init(&b, NULL);
    push(pool, &b);                     /* the one place of the queue */
    ck_assert(!workpool_reserve(pool)); /* full */
    long q, r;
    workpool_counts(pool, &q, &r);
    ck_assert_int_eq(q, 1);
    ck_assert_int_eq(r, 1);
    atomic_store(&gate, true);
    ck_assert(wait_until(ran, &b));
    ck_assert(wait_until(idle, pool));
    push(pool, &b); /* room again */
    workpool_stop(pool);
    ck_assert_int_eq(atomic_load(&a.runs), 1);
    ck_assert_int_eq(atomic_load(&b.runs) + atomic_load(&b.cancels), 2);
    ck_assert(!workpool_reserve(pool)); /* stopped */
    workpool_free(pool);
    ck_assert(!workpool_reserve(NULL));
}
END_TEST

struct stopper {
    struct workpool *pool;
    atomic_bool done;
};

static void *stop_pool(void *arg)
{
    struct stopper *s = arg;
    workpool_stop(s->pool);
    atomic_store(&s->done, true);
    return NULL;
}

START_TEST(a_stop_cancels_what_waits_and_lets_what_runs_end)
{
    struct workpool *pool = workpool_start("test", 1, 8);
    ck_assert_ptr_nonnull(pool);
    atomic_bool gate = false;
    struct tjob a, b;
    run_held(pool, &a, &gate);
    tjob_init(&b, NULL);
    push(pool, &b);
    struct stopper s = {.pool = pool};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, stop_pool, &s), 0);
    ck_assert(wait_until(cancelled, &b)); /* waiting: cancelled, never run */
    ck_assert(!atomic_load(&s.done));     /* a still runs: the stop waits for it */
    atomic_store(&gate, true);
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&a.runs), 1);
    ck_assert_int_eq(atomic_load(&b.runs), 0);
    ck_assert_int_eq(atomic_load(&b.cancels), 1);
    workpool_stop(pool); /* again: nothing */
    workpool_free(pool);
}
END_TEST

START_TEST(jobs_one_at_a_time_run_on_the_thread_idle_last)
{
    struct workpool *pool = workpool_start("test", 8, 8);
    ck_assert_ptr_nonnull(pool);
    struct tjob jobs[32];
    for (int i = 0; i < 32; i++) {
        tjob_init(&jobs[i], NULL);
        push(pool, &jobs[i]);
        /* idle: its thread is back on the stack (running drops with it, under one lock) */
        ck_assert(wait_until(idle, pool));
        ck_assert(pthread_equal(jobs[i].ran_on, jobs[0].ran_on));
    }
    workpool_stop(pool);
    workpool_free(pool);
}
END_TEST

/* A thread whose job was demoted waits below the others: the next jobs go elsewhere. */
START_TEST(a_demoted_thread_goes_to_the_bottom_of_the_idle_stack)
{
    struct workpool *pool = workpool_start("test", 3, 8);
    ck_assert_ptr_nonnull(pool);
    struct tjob first, failed, next[6];
    tjob_init(&first, NULL);
    push(pool, &first);
    ck_assert(wait_until(idle, pool));
    tjob_init(&failed, NULL);
    failed.demote = true;
    push(pool, &failed);
    ck_assert(wait_until(idle, pool));
    ck_assert(pthread_equal(failed.ran_on, first.ran_on)); /* the one idle last */
    for (int i = 0; i < 6; i++) {
        tjob_init(&next[i], NULL);
        push(pool, &next[i]);
        ck_assert(wait_until(idle, pool));
        ck_assert(!pthread_equal(next[i].ran_on, failed.ran_on));
        ck_assert(pthread_equal(next[i].ran_on, next[0].ran_on));
    }
    workpool_stop(pool);
    workpool_free(pool);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("workpool");
    TCase *tc = tcase_create("workpool");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_job_runs_once_from_many_producers);
    tcase_add_test(tc, a_full_queue_refuses_the_reservation);
    tcase_add_test(tc, a_stop_cancels_what_waits_and_lets_what_runs_end);
    tcase_add_test(tc, jobs_one_at_a_time_run_on_the_thread_idle_last);
    tcase_add_test(tc, a_demoted_thread_goes_to_the_bottom_of_the_idle_stack);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
