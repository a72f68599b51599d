/*
 * crashload.h - the load generator of the crash-consistency test
 * (tests/http/test_crash.c): client threads that keep creating things while
 * aidcd is killed and PostgreSQL restarted under them, retrying each request
 * as a careful client would (the same Idempotency-Key, the same name, the
 * same batch) until it gets a final answer, and recording that answer.
 *
 * Kinds: job submits (1 GPU, a100 and h100 in turn, with Idempotency-Key; sometimes sent once more after
 * the 2xx, as a pipeline that lost the answer would), project creates (half
 * with a key, half without: a retry of a committed create without a key
 * answers 409) and NDJSON batches of node command records (retried whole).
 * Retryable: no answer, 500, 502, 503, 504. Anything else is final. Some
 * operations of each kind are sent once only, never retried: when that one
 * try gets no final answer they stay unacknowledged, and what they made must
 * then exist whole or not at all.
 */
#ifndef AIDC_TEST_CRASHLOAD_H
#define AIDC_TEST_CRASHLOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct aidc_server;

enum crashload_kind { CRASHLOAD_JOB, CRASHLOAD_PROJECT, CRASHLOAD_BATCH };

#define CRASHLOAD_BATCH_RECORDS 3

struct crashload_op {
    enum crashload_kind kind;
    char name[64];     /* job: its name; project: its slug; batch: its record ids' prefix */
    bool with_key;     /* project: sent with an Idempotency-Key */
    bool give_up;      /* sent once: a client that does not retry (status 0: unacknowledged) */
    char id[40];       /* the id of the final answer (job, project) */
    long status;       /* the final answer (0: none before the deadline) */
    int tries;         /* requests sent before the final answer */
    bool uncertain;    /* an earlier try got no final answer (it may have committed) */
    long replay;       /* job: status of the extra resend after the 2xx (0: not resent) */
    char replay_id[40];
};

struct crashload {
    /* set by the caller before crashload_start */
    const struct aidc_server *srv; /* its base must stay the same (a fixed port) */
    const char *tenant;            /* jobs go to its project "lab" (slurmtest_job) */
    const char *member_jwt;        /* submits jobs */
    const char *admin_jwt;         /* creates projects */
    const char *ingest_token;      /* audit:ingest */
    const char *host;              /* of the command records */
    unsigned seed;
    int max_jobs;                  /* submits stop after this many */
    /* inside */
    atomic_bool stop, abandon;
    pthread_mutex_t mu;
    struct crashload_op *ops;
    size_t nops, cap;
    atomic_int retried_500; /* answers 500 that were retried (a crash should give 503) */
    struct crashload_thread {
        struct crashload *l;
        enum crashload_kind kind;
        pthread_t th;
    } threads[3];
    int started;  /* threads running */
    bool inited;  /* mu initialized (crashload_start ran) */
};

/* Start the three client threads (jobs, projects, batches). */
void crashload_start(struct crashload *l);
/*
 * Ask the threads to stop and join them: each finishes the operation it is
 * in (retrying up to a deadline), so every operation recorded has its final
 * answer when this returns.
 */
void crashload_stop(struct crashload *l);
/* After a failed test: stop the threads without waiting for final answers. */
void crashload_abandon(struct crashload *l);
/* Free the record (safe when never started, and twice). */
void crashload_free(struct crashload *l);

#endif
