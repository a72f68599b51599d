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

/* Advisory-lock keys of the workers that must run on one replica at a time. */
enum db_sched_lock { DB_LOCK_ADMITTER = 1, DB_LOCK_SYNCER = 2, DB_LOCK_METER = 3 };

/* NOTIFY channel (aidc_jobs, aidc_outbox or aidc_sync) when the transaction commits. */
int db_sched_wake(struct db *db, const char *channel);
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

/*
 * The admission snapshot, one result each (columns in the order listed):
 * clusters:  id, kind, healthy, options (json text)
 * inventory: cluster_id, resource, total
 * tenants:   id, suspended
 * tquotas:   tenant_id, resource, guaranteed, limit (float8)
 * pquotas:   project_id, tenant_id, resource, limit
 * hours:     tenant_id, project_id, GPU-hours this calendar month (UTC)
 * queued:    id, tenant_id, project_id, gpu_type, gpus, cpus, memory_gib (totals over
 *            nodes), nodes, queue_rank, submitted (epoch), time limit (s),
 *            requested_cluster, reason, estimated_start (epoch), in no order
 *            (an ORDER BY spilled its sort to disk: row-level security hides
 *            the row count from the planner)
 * active:    the same first 11, then cluster_id, preemptible, stopping, admitted
 *            (epoch), expected end (epoch), gpu_indexes ("{0,1}")
 */
#define JOB_SNAP                                                                                  \
    "id, tenant_id, project_id, gpu_type, gpus * nodes, cpus * nodes, memory_gib * nodes, nodes," \
    " queue_rank, extract(epoch FROM submitted_at), time_limit_minutes * 60"
/* The snapshot's queued jobs (also timed alone by tests/bench/admission_db.c). */
#define DB_SCHED_QUEUED_SQL                                                                       \
    "SELECT " JOB_SNAP ", requested_cluster, reason, extract(epoch FROM estimated_start)"         \
    " FROM jobs WHERE state = 'queued'"
struct db_snapshot {
    PGresult *clusters, *inventory, *tenants, *tquotas, *pquotas, *hours, *queued, *active;
    PGresult *marks; /* the queue marks written last: gpu type, position, job id */
    /* GPU indexes never to hand out (open faults where aidc assigns indexes):
     * cluster_id, gpu_index (NULL: every GPU of the cluster's node) */
    PGresult *faults;
};
int db_sched_snapshot(struct db *db, struct db_snapshot *out);
void db_sched_snapshot_free(struct db_snapshot *s);

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
 * Replace the marks of queue positions (0003_queue.sql) with these (array
 * literals of equal length: GPU type or "", position, queue rank,
 * submitted_at as epoch seconds, job id).
 */
int db_sched_marks(struct db *db, const char *types, const char *positions, const char *ranks,
                   const char *submitted, const char *ids);
/* Why queued jobs wait: reasons and estimated starts (epoch, NULL elements: unknown). */
int db_sched_waits(struct db *db, const char *ids, const char *reasons, const char *estimates);

/*
 * Claim up to limit due outbox rows for lease_seconds (no other dispatcher
 * takes them meanwhile; an earlier row of the same job goes first). Columns:
 * outbox id, action, attempts, job id, run key, job state, stop_requested,
 * backend_job_id, tenant slug, project slug, user, name, image, command,
 * script, env, gpus, gpu_type, cpus, memory_gib, nodes, time_limit_minutes,
 * preemptible, gpu_indexes, cluster id, cluster name, kind, endpoint,
 * credentials_ref, options, priority, admitted_at (epoch seconds).
 */
int db_outbox_claim(struct db *db, int limit, int lease_seconds, PGresult **out);
int db_outbox_done(struct db *db, const char *outbox_id);
/* Record a failed delivery; it is tried again after delay_seconds. */
int db_outbox_failed(struct db *db, const char *outbox_id, const char *error, int delay_seconds);
/* The backend took the job: remember its id there; admitted -> pending. */
int db_job_delivered(struct db *db, const char *job_id, const char *backend_job_id);

/*
 * Active jobs the backends hold. Columns: id, cluster_id, state,
 * backend_job_id, run key, stop_requested.
 */
int db_sched_active(struct db *db, PGresult **out);
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
