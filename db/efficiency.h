/*
 * efficiency.h - job efficiency rows (migration 0025): what the efficiency
 * worker and the syncer record, the idle-GPU report, and the capacity
 * aggregates of the cluster view. Measurements are written by workers in
 * the system context only; the API reads them.
 */
#ifndef AIDC_DB_EFFICIENCY_H
#define AIDC_DB_EFFICIENCY_H

#include "db.h"
#include "rowjson.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * A job's end as its cgroup measured it: cpu_seconds (< 0: unknown) over
 * run_seconds on the job's cpus, peak memory mem_peak_bytes (< 0: unknown)
 * over its memory_gib. 0 or a database error; a job without either does nothing.
 */
int db_eff_usage(struct db *db, const char *job_id, double cpu_seconds, double run_seconds,
                 double mem_peak_bytes);

/* A job whose GPU metrics are due, on a cluster with a Prometheus. */
struct db_eff_target {
    char id[37];
    char backend_id[160];
    char kind[16];
    char url[1024];      /* the cluster's metrics.prometheus_url */
    char label[64];      /* the DCGM label that names the job (metrics.job_label, "hpc_job") */
    char namespace_[64]; /* Kubernetes: the cluster's namespace ("" elsewhere) */
    long long started, finished; /* epoch seconds; finished 0 while it runs */
    int attempts;                /* reads of an ended job that found no samples */
};
struct db_eff_targets {
    struct db_eff_target *v;
    size_t n;
};
/*
 * Up to limit jobs with GPUs whose metrics are due: running ones not read
 * for refresh_s, and ended ones (the last day) not read since their end.
 */
int db_eff_targets(struct db *db, int refresh_s, int limit, struct db_eff_targets *out);
void db_eff_targets_free(struct db_eff_targets *t);

/* What Prometheus said of a job's GPUs; NaN: no samples. */
struct db_eff_gpu {
    double util_avg, util_peak, mem_peak_gib;
    bool final; /* the job has ended and this read covers its whole run */
    /* idle: 1 under the threshold for the whole window, 0 not, -1 unknown (leave as is) */
    int idle;
    double idle_util_max;
    int idle_window_s;
};
int db_eff_gpu(struct db *db, const char *job_id, const struct db_eff_gpu *g);
/* A read that could not be made (its Prometheus down): the job waits its next turn. */
int db_eff_touch(struct db *db, const char *job_id);

/*
 * The idle report: running jobs whose GPUs have been idle, oldest idle
 * first, keyed (idle_since, id) from after/after_id; tenant_id NULL: every
 * tenant the context reads. Rows as in API.md's idle report.
 */
int db_eff_idle_list(struct db *db, const char *tenant_id, const char *after, const char *after_id,
                     int limit, struct db_rows *out);

/* One GPU type of the cluster view. */
struct db_capacity_type {
    char gpu_type[40];
    long long total, in_use, queued_gpus;
};
/* When admitted jobs of a type give their GPUs back. */
struct db_capacity_end {
    char gpu_type[40];
    double at;
    long long gpus;
};
struct db_capacity {
    struct db_capacity_type *types;
    size_t ntypes;
    struct db_capacity_end *ends; /* by type, then time */
    size_t nends;
    double now;
};
/* Every tenant's totals (only sums leave the database). */
int db_capacity_read(struct db *db, struct db_capacity *out);
void db_capacity_free(struct db_capacity *c);
/* The nodes of every cluster (platform admins, operators): a new array in *out. */
int db_capacity_nodes(struct db *db, json_t **out);

extern const struct db_stmt *const db_efficiency_stmts[];

#endif
