/*
 * jobs.h - jobs as the API sees them: submit (insert as queued), read, list,
 * history, cancel. Everything else about a job's life (admission, delivery,
 * state from the backend) is db/sched.c's.
 */
#ifndef AIDC_DB_JOBS_H
#define AIDC_DB_JOBS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>

/* A job to insert; strings may be NULL where the column allows it. */
struct db_job_new {
    const char *tenant_id, *project_slug, *user_id, *username, *name, *priority;
    const char *requested_cluster; /* cluster id or NULL */
    const char *gpu_type, *image, *command_json, *script, *env_json;
    /* the image resolved at submission (NULL: the job names none) */
    const char *image_id, *image_digest, *image_ref, *image_tagged;
    const char *mounts_json; /* the storage spaces it mounts (a JSON array; NULL: none) */
    const char *kind;        /* "batch" (NULL) or "interactive" (a session's) */
    int gpus, cpus, memory_gib, nodes, time_limit_minutes;
};

/*
 * Insert a queued job, its "submitted" event, and wake the admission
 * worker; *tenant_number receives the tenant's number (who owns its files).
 * AIDC_ENOTFOUND when the project does not exist in the tenant.
 */
int db_job_insert(struct db *db, const struct db_job_new *j, json_t **out,
                  long long *tenant_number);
/* The job id of tenant_id, with queue_position for queued jobs. */
int db_job_get(struct db *db, const char *tenant_id, const char *id, json_t **out);
/* Which jobs a list shows and in what order (api/jobhistory.c fills it). */
enum db_job_sort {
    DB_JOB_SORT_SUBMITTED,
    DB_JOB_SORT_STARTED,
    DB_JOB_SORT_ENDED,
    DB_JOB_SORT_WAIT,
    DB_JOB_SORT_RUNTIME,
};
struct db_job_filter {
    const char *states;   /* a Postgres array literal, "{failed,cancelled}" */
    const char *project, *user, *cluster, *gpu_type;
    const char *name_like; /* an ILIKE pattern, its wildcards escaped by the caller */
    const char *exit_code; /* decimal */
    /* windows: from inclusive, to exclusive (timestamps as given) */
    const char *submitted_from, *submitted_to, *started_from, *started_to;
    const char *ended_from, *ended_to;
    const char *array_parent; /* NULL: no array's tasks (their parent stands for them); else
                                 only that array's */
    enum db_job_sort sort;
    bool ascending;
};
/*
 * Up to limit+1 jobs of tenant_id that pass f (NULL members: no filter),
 * in f's order, after the cursor (after_key and after_id: the _cursor of the
 * last row seen; a cursor of another order is AIDC_EINVAL). Jobs without
 * the sorted value (not started, not ended) come last in either direction.
 */
int db_job_list(struct db *db, const char *tenant_id, const struct db_job_filter *f,
                const char *after_key, const char *after_id, int limit, struct db_rows *out);
/* Up to limit+1 events of a job with id > after (NULL: from the first). */
int db_job_events(struct db *db, const char *tenant_id, const char *id, const char *after,
                  int limit, struct db_rows *out);
/*
 * Cancel: a queued job ends at once; a job handed to a backend gets a stop
 * request and an outbox row. *state receives the state before; AIDC_ENOTFOUND
 * when no such job; AIDC_ECONFLICT when it has already ended.
 */
int db_job_cancel(struct db *db, const char *tenant_id, const char *id, const char *by,
                  char *state, size_t statesz, json_t **out);
/* Job ids: v[0..n) (malloc'd), freed by db_job_ids_free. */
struct db_job_ids {
    char (*v)[37];
    size_t n;
};
/* The ids of the tenant's jobs that have not ended, oldest first. */
int db_job_active(struct db *db, const char *tenant_id, struct db_job_ids *out);
void db_job_ids_free(struct db_job_ids *ids);
/* Where a job runs (for its logs). */
struct db_job_placement {
    char user[64], state[16];
    char cluster_id[37]; /* "" when not placed */
    char kind[16];
    char run_key[48];    /* the name of its current run in the backend */
    char *options_json;  /* the cluster's options (malloc'd), NULL when not placed */
};
int db_job_placement(struct db *db, const char *tenant_id, const char *id,
                     struct db_job_placement *out);

extern const struct db_stmt *const db_jobs_stmts[];

#endif
