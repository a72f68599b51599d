/*
 * sched.h - the statements of the background workers: the admission
 * snapshot and its decisions, the outbox, and job state transitions.
 *
 * Workers run with the "system" context (every tenant). Batches travel as
 * array parameters (db/pgarray.h), so one admission pass writes its
 * decisions in a handful of statements whatever their number. Every state
 * change is guarded by the state it starts from, so a change that lost a race
 * (a cancel, another replica) does nothing, and writes the job's event in the
 * same statement.
 */
#ifndef AIDC_DB_SCHED_H
#define AIDC_DB_SCHED_H

#include "db.h"

#include <stdbool.h>
#include <stddef.h>

/* Advisory-lock keys of the workers that must run on one replica at a time. */
enum db_sched_lock { DB_LOCK_ADMITTER = 1, DB_LOCK_SYNCER = 2, DB_LOCK_METER = 3 };

/* NOTIFY channel (aidc_jobs, aidc_outbox or aidc_sync) when the transaction commits. */
int db_sched_wake(struct db *db, const char *channel);
/* NOTIFY channel with payload at once, in a transaction of its own (outside any
 * db_begin), without waiting for its commit to reach the disk. */
int db_sched_wake_after(struct db *db, const char *channel, const char *payload);
/* Take the worker's transaction-scoped lock; *got is false when another replica holds it. */
int db_sched_lock(struct db *db, int which, bool *got);
/*
 * Take a session-scoped advisory lock (key: enum worker_lead): held until the
 * connection ends. *got is false when another session holds it.
 */
int db_sched_lead(struct db *db, int key, bool *got);
/* Give the lead taken with db_sched_lead back. */
int db_sched_unlead(struct db *db, int key);
/* Make every undelivered outbox row due now (a new dispatcher leader). */
int db_outbox_release(struct db *db);

/* The admission snapshot: db/schedsnap.h. */

/*
 * Admit queued jobs (array literals of equal length: job ids, cluster ids,
 * "t"/"f" preemptible, GPU indexes "{0,1}" or NULL): state, events and the
 * outbox rows for the dispatcher. *count: how many were still queued.
 */
int db_sched_admit(struct db *db, const char *ids, const char *clusters, const char *preemptible,
                   const char *gpu_indexes, long *count);
/* Ask active borrowed jobs (ids) to stop for the queued jobs (for). */
int db_sched_preempt(struct db *db, const char *ids, const char *for_ids, int grace_seconds,
                     long *count);
/*
 * Change the marks of queue positions (0003_queue.sql, 0036): remove those of
 * GPU type gone_types[i] at position gone_positions[i], then write these
 * (array literals of equal length: GPU type or "", position, queue rank,
 * submitted_at as epoch seconds, job id), replacing the mark a position has.
 */
int db_sched_marks(struct db *db, const char *gone_types, const char *gone_positions,
                   const char *types, const char *positions, const char *ranks,
                   const char *submitted, const char *ids);
/* Why queued jobs wait: reasons and estimated starts (epoch, NULL elements: unknown). */
int db_sched_waits(struct db *db, const char *ids, const char *reasons, const char *estimates);
/* What db_sched_follow_queue found. */
enum db_follow {
    DB_FOLLOW_KNOWN,    /* the statistics of jobs know the queue */
    DB_FOLLOW_ANALYZED, /* they did not: jobs was analysed */
    DB_FOLLOW_BUSY,     /* they did not, and a vacuum or analyze held the table */
};
/*
 * Bring the statistics of jobs up to its queue where they make far fewer
 * queued jobs (0035_jobs_follow_queue.sql), so that plans made on a
 * near-empty queue are made again. In a writing transaction of its own: the
 * analysis holds a lock on jobs until it ends.
 */
int db_sched_follow_queue(struct db *db, enum db_follow *found);

/* The cluster an outbox row goes to; strings as its row's. */
struct db_outbox_cluster {
    char id[37];
    const char *name, *kind, *endpoint, *credentials_ref;
    const char *options; /* JSON text */
};

/* A claimed outbox row of a job, with what its delivery needs. */
struct db_outbox_job {
    long long id;
    const char *action; /* submit, cancel, preempt */
    int attempts;       /* this claim included */
    char job_id[37];
    const char *run_key; /* the job's name in its backend (db/sched.c RUN_KEY) */
    const char *state;
    const char *stop;             /* stop_requested: NULL, "cancel" or "preempt" */
    const char *backend_job_id;   /* NULL: not delivered yet */
    const char *tenant, *project; /* slugs */
    const char *user, *name;
    const char *image;   /* NULL: none (a script on the host) */
    const char *command; /* JSON text, or NULL */
    const char *script;  /* NULL: none */
    const char *env;     /* JSON text */
    int gpus;
    const char *gpu_type; /* NULL: CPU only */
    int cpus, memory_gib, nodes, time_limit_minutes;
    bool preemptible;
    const int *gpu_indexes; /* where aidc assigned them; NULL (0) when not */
    size_t ngpu_indexes;
    struct db_outbox_cluster cluster;
    const char *priority;                    /* high, normal, low */
    long long admitted_at;                   /* epoch seconds (now when not admitted) */
    const char *image_digest, *image_tagged; /* NULL: not known */
    long long tenant_number;
    const char *registry_url, *registry_credentials_ref; /* the image's registry, or NULL */
    const char *mounts; /* the storage spaces it mounts: JSON array text ("[]": none) */
    bool app;           /* an interactive session's run (its app is reached by the relay) */
    /* a whole array (one job array in the cluster): its tasks and how many run at
     * once; 0 when the job is no such array */
    int array_count, array_max_parallel;
    const char *dependency; /* Slurm's --dependency ("afterok:12,afterany:13"), or NULL */
};

struct db_strings;
struct db_outbox_jobs {
    struct db_outbox_job *v;
    size_t n;
    struct db_strings *strings;
};

/*
 * Claim up to limit due outbox rows of jobs for lease_seconds (no other
 * dispatcher takes them meanwhile; an earlier row of the same job goes first),
 * in outbox order, into *out (free with db_outbox_jobs_free). Rows of the
 * clusters in skip_clusters (a uuid[] literal; NULL: none) stay for later, and
 * the rows skip_ids (a bigint[] literal of outbox ids; NULL: none) are never
 * taken: the caller holds them still, whatever their lease says.
 */
int db_outbox_claim(struct db *db, int limit, int lease_seconds, const char *skip_clusters,
                    const char *skip_ids, struct db_outbox_jobs *out);
void db_outbox_jobs_free(struct db_outbox_jobs *rows);
int db_outbox_done(struct db *db, long long outbox_id);
/* Record a failed delivery; it is tried again after delay_seconds. */
int db_outbox_failed(struct db *db, long long outbox_id, const char *error, int delay_seconds);
/* The backend took the job: remember its id there; admitted -> pending. */
int db_job_delivered(struct db *db, const char *job_id, const char *backend_job_id);

/* An active job its backend holds. */
struct db_active_job {
    char id[37], cluster_id[37];
    const char *state;          /* admitted, pending, running */
    const char *backend_job_id; /* never NULL: only delivered jobs are listed */
    const char *run_key;
    const char *stop; /* stop_requested, or NULL */
    /* a whole array's parent (migrations/0022_arrays_deps.sql): it follows its
     * tasks, never what the cluster says of the array's own id */
    bool whole_array;
};
struct db_active_jobs {
    struct db_active_job *v;
    size_t n;
    struct db_strings *strings;
};
/* The active jobs the backends hold, by cluster, into *out (free with db_active_jobs_free). */
int db_sched_active(struct db *db, struct db_active_jobs *out);
void db_active_jobs_free(struct db_active_jobs *rows);
/* A job's stop_requested now ("" when none), its row locked for the transaction. */
int db_sched_stop_now(struct db *db, const char *job_id, char *stop, size_t n);

/* What became of a job, as a transition from the state the worker saw. */
struct db_transition {
    const char *job_id;
    const char *from;      /* the state it was seen in: nothing happens if it moved */
    const char *to;        /* pending, running, succeeded, failed, cancelled; or queued (requeue) */
    const char *reason;
    double started_at;     /* epoch, 0 = not known */
    double finished_at;    /* epoch, 0 = now */
    int exit_code;         /* -1 = none */
};
/* Apply t; *changed is false when the job was no longer in t->from. */
int db_job_transition(struct db *db, const struct db_transition *t, bool *changed);
/*
 * A pending job's reason: what it waits for in its cluster ("pulling image
 * ..."), written only when it changed and no stop was asked for. No event:
 * its state is the same.
 */
int db_job_pending_reason(struct db *db, const char *job_id, const char *reason);

extern const struct db_stmt *const db_sched_stmts[];

#endif
