/*
 * schedsnap.h - the admission snapshot: what one admission pass decides
 * over (sched/admitter.c), read in the pass's transaction as typed rows.
 *
 * Workers run with the "system" context (every tenant). Ids are UUID text
 * ("" where the column is NULL); strings belong to the snapshot and live
 * until db_sched_snapshot_free.
 */
#ifndef AIDC_DB_SCHEDSNAP_H
#define AIDC_DB_SCHEDSNAP_H

#include "db.h"

#include <stdbool.h>
#include <stddef.h>

/* The columns shared by the queued and the active jobs (struct db_snap_job). */
#define JOB_SNAP                                                                                   \
    "id, tenant_id, project_id, gpu_type, gpus * nodes * coalesce(array_hold, 1),"                 \
    " cpus * nodes * coalesce(array_hold, 1), memory_gib * nodes * coalesce(array_hold, 1),"       \
    " nodes,"                                                                                      \
    " queue_rank, extract(epoch FROM submitted_at), time_limit_minutes * 60"
/*
 * The snapshot's queued jobs (also timed alone by tests/bench/admission_db.c),
 * in no order: an ORDER BY spilled its sort to disk (row-level security hides
 * the row count from the planner).
 */
#define DB_SCHED_QUEUED_SQL DB_SCHED_QUEUED_OF(DB_SCHED_QUEUED_COLS ", jobs.xmin::text")
/* The same rows' ids and versions (the cached read, db_sched_snapshot_cached). */
#define DB_SCHED_QUEUED_KEYS_SQL DB_SCHED_QUEUED_OF("jobs.id, jobs.xmin::text")
#define DB_SCHED_QUEUED_OF(cols)                                                                   \
    "WITH w AS MATERIALIZED (" DB_SCHED_ARRAY_WINDOWS ")"                                          \
    " SELECT " cols " FROM jobs WHERE state = 'queued' AND array_parent IS NULL"                   \
    " AND (array_count IS NULL OR array_hold IS NOT NULL) AND " DB_SCHED_JOB_DEPS_HELD             \
    " UNION ALL SELECT " cols " FROM w JOIN jobs ON jobs.array_parent = w.pid"                     \
    " AND jobs.array_index < w.lim WHERE state = 'queued'"
/*
 * The same rows among those inserted by transaction $1 or a later one, or
 * named in $2 (db_sched_snapshot_cached, DB_QUEUE_NEW): by the index of queued
 * jobs by inserting transaction (migrations/0034), so that a pass after a
 * burst of submits reads the burst, not the queue. The windows are computed
 * only for a task among them. A value past every transaction begun yet comes
 * from another cluster (a restore) and is left to the other reads, or every
 * such pass would read those rows again.
 */
#define DB_SCHED_QUEUED_NEW_SQL                                                                    \
    "WITH w AS MATERIALIZED (" DB_SCHED_ARRAY_WINDOWS ")"                                          \
    " SELECT " DB_SCHED_QUEUED_COLS ", jobs.xmin::text FROM jobs WHERE state = 'queued'"           \
    " AND (insert_xid >= $1::xid8 AND insert_xid < pg_snapshot_xmax(pg_current_snapshot())"        \
    "      OR id = ANY($2::uuid[]))"                                                               \
    " AND (array_parent IS NULL AND (array_count IS NULL OR array_hold IS NOT NULL)"               \
    "      AND " DB_SCHED_JOB_DEPS_HELD                                                            \
    "   OR array_index < (SELECT w.lim FROM w WHERE w.pid = jobs.array_parent))"
#define DB_SCHED_JOB_DEPS_HELD DB_SCHED_DEPS_HELD("jobs")
#define DB_SCHED_QUEUED_COLS                                                                       \
    JOB_SNAP ", requested_cluster, reason, extract(epoch FROM estimated_start)"
/*
 * Job j is not held by a dependency. Only a submitted job has dependencies
 * (db/jobarrays.c): an array's tasks have their parent's, which the array's
 * window (below) asks once for all of them - asked per task, 20,000 held
 * tasks cost every pass 200 ms.
 */
#define DB_SCHED_DEPS_HELD(j)                                                                      \
    "(NOT " j ".has_deps OR NOT EXISTS (SELECT 1 FROM job_dependencies d"                          \
    "   JOIN jobs p ON p.id = d.peer_id WHERE d.job_id = " j ".id"                                 \
    "   AND NOT aidc_dep_met(d.condition, p.state)"                                                \
    "   AND NOT " DB_SCHED_DEP_IN_SLURM("p", j) "))"
/*
 * Whether peer p's dependency can be Slurm's own (--dependency) for job j: j
 * named the Slurm cluster p is in already (delivered, not ended). Such a
 * dependency does not hold j back in aidc: db/sched.c passes it on. Never
 * NULL: a job that named no cluster (NULL) made it NULL, NOT NULL dropped the
 * dependency from the check, and the job ran before its peer had ended.
 */
#define DB_SCHED_DEP_IN_SLURM(p, j)                                                                \
    "coalesce(" p ".state IN ('pending', 'running') AND " p ".backend_job_id IS NOT NULL"          \
    " AND " p ".cluster_id = " j ".requested_cluster"                                              \
    " AND (SELECT c.kind FROM clusters c WHERE c.id = " p ".cluster_id) = 'slurm', false)"
/*
 * A whole array's parent (array_hold: one job array in its cluster) is admitted
 * holding max_parallel tasks' resources (JOB_SNAP), its tasks never (they have no
 * window). Per other queued array parent (migrations/0022_arrays_deps.sql) not
 * held by a dependency, the array_index below which its queued tasks may be
 * admitted now: the first max_parallel - (tasks active) of them, all of them
 * without a walk when max_parallel is the count. A job held there, or by a
 * dependency that has not held yet (its own or its array's), is no part of the
 * pass: its reason says what it waits for. Every step is by an index
 * (migrations/0033): what a pass reads grows with the jobs it may admit, not
 * with the held ones.
 */
#define DB_SCHED_ARRAY_WINDOWS                                                                     \
    "SELECT a.id AS pid, CASE WHEN a.array_max_parallel >= a.array_count THEN 2147483647"          \
    " ELSE coalesce((SELECT t.array_index FROM jobs t"                                             \
    "   WHERE t.array_parent = a.id AND t.state = 'queued' ORDER BY t.array_index"                 \
    "   OFFSET greatest(a.array_max_parallel - (SELECT count(*) FROM jobs r"                       \
    "     WHERE r.array_parent = a.id AND r.state IN ('admitted', 'pending', 'running')), 0)"      \
    "   LIMIT 1), 2147483647) END AS lim"                                                          \
    " FROM jobs a WHERE a.array_count IS NOT NULL AND a.array_hold IS NULL AND a.state = 'queued'" \
    " AND " DB_SCHED_DEPS_HELD("a")

struct db_snap_cluster { /* by name */
    char id[37];
    const char *kind;
    bool healthy;
    const char *options; /* JSON text */
};

struct db_snap_inventory {
    char cluster_id[37];
    const char *resource; /* "gpu:<type>", "cpu", "memory_gib" */
    int total;
};

struct db_snap_tenant {
    char id[37];
    bool suspended;
};

struct db_snap_tquota {
    char tenant_id[37];
    const char *resource; /* "gpu:<type>", "cpu", "memory_gib", "jobs", "gpu_hours_month" */
    double guaranteed, limit;
};

struct db_snap_pquota {
    char project_id[37], tenant_id[37];
    const char *resource;
    double limit;
    const char *slug; /* the project's */
};

/* GPU-hours of a tenant's project this calendar month (UTC), metered or not yet. */
struct db_snap_hours {
    char tenant_id[37], project_id[37];
    double hours;
};

/* A project with an approved allocation: the one running now, if any. */
struct db_snap_alloc {
    char project_id[37], tenant_id[37];
    const char *slug;
    bool active;      /* one covers today */
    double gpu_hours; /* the running one's, -1 when none granted (or none runs) */
    double used;      /* GPU-hours within the running one's period */
};

struct db_snap_job {
    char id[37], tenant_id[37], project_id[37];
    const char *gpu_type;       /* NULL: CPU only */
    int gpus, cpus, memory_gib; /* totals over the job's nodes */
    int nodes;
    int queue_rank;   /* 0 = high */
    double submitted; /* epoch seconds */
    /* the same as PostgreSQL wrote it: written back into the queue marks exactly */
    const char *submitted_text;
    int time_limit_s;
    /* queued: the cluster asked for (NULL: any); active: where it runs (NULL: none) */
    const char *cluster_id;
    /* queued jobs only */
    const char *reason; /* NULL: none yet */
    bool has_estimate;
    double estimated_start; /* epoch seconds, when has_estimate */
    /* active jobs only */
    bool preemptible, stopping;
    double admitted, expected_end; /* epoch seconds: now when unknown; the time limit's end */
    const int *gpu_indexes;        /* where aidc assigned them */
    size_t ngpu_indexes;
};

/* A mark of queue positions as written last (0003_queue.sql), in queue order. */
/* A mark of queue positions as written (in order of gpu_type, then pos). */
struct db_snap_mark {
    const char *gpu_type; /* "" for CPU-only jobs */
    long pos;
    char job_id[37];
    int rank; /* the job's queue_rank when the mark was written */
};

/* An open fault where aidc assigns GPU indexes: that GPU is never handed out. */
struct db_snap_fault {
    char cluster_id[37];
    int gpu_index; /* -1: every GPU of the node */
};

struct db_strings;

struct db_snapshot {
    struct {
        struct db_snap_cluster *v;
        size_t n;
    } clusters;
    struct {
        struct db_snap_inventory *v;
        size_t n;
    } inventory;
    struct {
        struct db_snap_tenant *v;
        size_t n;
    } tenants;
    struct {
        struct db_snap_tquota *v;
        size_t n;
    } tquotas;
    struct {
        struct db_snap_pquota *v;
        size_t n;
    } pquotas;
    struct {
        struct db_snap_hours *v;
        size_t n;
    } hours;
    struct {
        struct db_snap_job *v;
        size_t n;
    } queued; /* in no order */
    struct {
        struct db_snap_job *v;
        size_t n;
    } active; /* admitted, pending, running */
    struct {
        struct db_snap_mark *v;
        size_t n;
    } marks;
    struct {
        struct db_snap_fault *v;
        size_t n;
    } faults;
    struct {
        struct db_snap_alloc *v;
        size_t n;
    } allocs;
    struct db_strings *strings[11]; /* one store per array */
};

/* Read the snapshot into *out (zeroed first); errors as db_query. */
int db_sched_snapshot(struct db *db, struct db_snapshot *out);
void db_sched_snapshot_free(struct db_snapshot *s);

/*
 * The queued jobs kept between passes (one admitter's), read one of three ways:
 *
 * DB_QUEUE_FULL     every queued row whole, all kept.
 * DB_QUEUE_CHANGED  which rows the pass takes, with their versions (xmin), and
 *                   whole only those new or changed since the last read. Which
 *                   rows are in is decided by the database, as in a full read
 *                   (a dependency that now holds, an array's window).
 * DB_QUEUE_NEW      only the rows inserted since the last read (by a
 *                   transaction at least as new as the oldest one open when it
 *                   read: a late commit is not missed) and those the last pass
 *                   touched (db_queue_cache_touch); every other kept row as it
 *                   was. For a pass that nothing but submits woke: what else
 *                   changes a queued job (a cancel, a requeue, an end that frees
 *                   a dependency or an array's place) notifies otherwise, and a
 *                   change that notifies nobody is seen by the next read of
 *                   another kind.
 *
 * A read with nothing kept is a full one (one statement, not the ids and then
 * every row by id), and so is one whose kept rows pin more than twice their
 * number in memory (a row kept unchanged holds its whole batch); a new one with
 * no earlier read to follow reads the changed ones. With a cache, the
 * snapshot's queued rows are the cache's: valid until the next snapshot with
 * it, or its free. On an error the cache is emptied.
 */
enum db_queue_read { DB_QUEUE_FULL, DB_QUEUE_CHANGED, DB_QUEUE_NEW };
struct db_queue_cache;
struct db_queue_cache *db_queue_cache_new(void);
void db_queue_cache_free(struct db_queue_cache *c);
/* Keep nothing: the next read is a full one (a new lead, a failed pass). */
void db_queue_cache_drop(struct db_queue_cache *c);
/* Rows fetched whole by the last read (all of them after a full one). */
size_t db_queue_cache_fetched(const struct db_queue_cache *c);
/* The pass wrote to this queued job (admitted it, its reason): the next read
 * takes it again, whatever its kind. */
void db_queue_cache_touch(struct db_queue_cache *c, const char *id);
int db_sched_snapshot_cached(struct db *db, struct db_queue_cache *cache, enum db_queue_read how,
                             struct db_snapshot *out);

extern const struct db_stmt *const db_schedsnap_stmts[];

#endif
