/*
 * jobarrays.h - job arrays (a parent job and its tasks) and dependencies
 * between jobs, as the API records them at submission. What happens later
 * (a task's or a peer's end) is the database's own: the triggers of
 * migrations/0022_arrays_deps.sql; what the admitter may take is
 * db/schedsnap.h's DB_SCHED_QUEUED_SQL.
 */
#ifndef AIDC_DB_JOBARRAYS_H
#define AIDC_DB_JOBARRAYS_H

#include "db.h"

#include <stdbool.h>

/*
 * The job's array and dependency fields of the job object (API.md "Jobs,
 * more"), appended to db/jobs.c's columns: j is the job row.
 */
#define DB_JOBARRAY_COLS                                                                           \
    " j.array_parent, j.array_index,"                                                              \
    " CASE WHEN j.array_count IS NOT NULL THEN json_build_object('count', j.array_count,"          \
    "   'max_parallel', j.array_max_parallel) END AS \"array\","                                   \
    " CASE WHEN j.array_count IS NOT NULL THEN (SELECT json_build_object("                         \
    "   'queued', count(*) FILTER (WHERE s.state = 'queued'),"                                     \
    "   'running', count(*) FILTER (WHERE s.state IN ('admitted', 'pending', 'running')),"         \
    "   'succeeded', count(*) FILTER (WHERE s.state = 'succeeded'),"                               \
    "   'failed', count(*) FILTER (WHERE s.state = 'failed'),"                                     \
    "   'cancelled', count(*) FILTER (WHERE s.state = 'cancelled'))"                               \
    "   FROM jobs s WHERE s.array_parent = j.id) END AS array_tasks,"                              \
    " coalesce((SELECT json_agg(json_build_object('job', d.peer_id, 'condition', d.condition)"     \
    "   ORDER BY d.position) FROM job_dependencies d WHERE d.job_id = j.id), '[]') AS depends_on"

#define DB_JOBARRAY_CHUNK 1000

/*
 * Make parent_id (a job of tenant_id just inserted, still queued) the parent
 * of an array of count tasks, at most max_parallel of them admitted at once:
 * the tasks are copies of it with array_index 0..count-1 (their env adds
 * AIDC_ARRAY_INDEX and SLURM_ARRAY_TASK_ID), each with its "submitted" event.
 * When the job named a Slurm or Kubernetes cluster the array is whole: the
 * parent is admitted and delivered as one job array (array_hold).
 * AIDC_ENOTFOUND when there is no such queued job. The tasks are inserted
 * DB_JOBARRAY_CHUNK at a time, one statement each, in the caller's transaction.
 */
int db_jobarray_make(struct db *db, const char *tenant_id, const char *parent_id, int count,
                     int max_parallel);
/* How many tasks of tenant_id's arrays have not ended, into *n (those of an array
 * being cancelled aside: they are ending). */
int db_jobarray_open_tasks(struct db *db, const char *tenant_id, long *n);
/*
 * Whether job id of tenant_id is a queued task of a whole array: the cluster
 * runs it with its array whatever aidc's row says, so it is not cancelled alone
 * (it would run unmetered) until the cluster shows it.
 */
int db_jobarray_task_waits(struct db *db, const char *tenant_id, const char *id, bool *waits);
/* Whether an array on cluster_id is whole (a Slurm or Kubernetes cluster's). */
int db_jobarray_whole(struct db *db, const char *cluster_id, bool *whole);
/*
 * The first of peers (a uuid[] literal) that is no job of tenant_id other
 * than job_id and its tasks (job_id NULL: before the job exists): its place
 * (0-based) into *unknown, -1 when every one is known.
 */
int db_jobarray_unknown_peer(struct db *db, const char *tenant_id, const char *job_id,
                             const char *peers, long *unknown);
/*
 * Record job_id's dependencies (peers: uuid[], conditions: text[], in the
 * order given); their trigger settles the job at once (its reason, or its
 * cancellation when a condition can no longer hold). Unknown peers are
 * skipped: check them with db_jobarray_unknown_peer first.
 */
int db_jobarray_depend(struct db *db, const char *tenant_id, const char *job_id, const char *peers,
                       const char *conditions);

/* A task of a whole array as the syncer needs it (db_jobarray_task_seen). */
struct db_jobarray_task {
    char id[37];
    char run_key[48];
    char stop[16]; /* stop_requested, "" when none */
};
/*
 * The cluster shows backend_id "<array's backend id>_<index>", a task of a
 * whole array (array_hold) whose row is still queued: it is pending there
 * from now on (its cluster, its backend id, an event), into *out; *found is
 * false when no such task waits. Workers' transaction.
 */
int db_jobarray_task_seen(struct db *db, const char *cluster_id, const char *backend_id,
                          struct db_jobarray_task *out, bool *found);

extern const struct db_stmt *const db_jobarrays_stmts[];

#endif
