/*
 * clusters.h - clusters, their inventory, and what is allocated on them.
 * Clusters are platform objects (no row-level security): every
 * authenticated user may read them; credentials are only ever references.
 */
#ifndef AIDC_DB_CLUSTERS_H
#define AIDC_DB_CLUSTERS_H

#include "db.h"

#include <jansson.h>
#include <stdbool.h>

/* AIDC_ECONFLICT: the name is taken, or (*second_local) a local cluster exists. */
int db_cluster_create(struct db *db, const char *name, const char *kind, const char *endpoint,
                      const char *credentials_ref, const char *options_json, json_t **out,
                      bool *second_local);
/* Up to limit+1 clusters with name > after, by name, with inventory. */
int db_cluster_list(struct db *db, const char *after, int limit, PGresult **out);
/* One cluster by name, with "inventory": {"gpu:a100": {"total", "allocated"}, ...}. */
int db_cluster_get(struct db *db, const char *name, json_t **out);
/*
 * Every cluster with what workers need: id, name, kind, endpoint,
 * credentials_ref, options (json text). Columns in that order.
 */
int db_cluster_all(struct db *db, PGresult **out);
/* Record a sync: healthy or not (error), and the inventory (resource names and totals). */
/* The cluster has just answered for every job it holds (at this transaction's time). */
int db_cluster_jobs_seen(struct db *db, const char *cluster_id);
int db_cluster_synced(struct db *db, const char *cluster_id, bool healthy, const char *error,
                      const char *resources_csv, const char *totals_csv);
/* The cluster named name: its id, kind and options (malloc'd json text); AIDC_ENOTFOUND. */
int db_cluster_lookup(struct db *db, const char *name, char *id_out, char *kind_out,
                      size_t kindsz, char **options_json);

/*
 * For the drift report: the jobs on cluster_id that are active and handed to
 * it, or whose backend job id is in backend_ids, or whose id is in job_ids
 * (array literals). Columns: id, tenant slug, state, backend_job_id.
 */
int db_cluster_ledger(struct db *db, const char *cluster_id, const char *backend_ids,
                      const char *job_ids, PGresult **out);

/*
 * Every cluster as a place a job could run: id, name, kind, healthy, its
 * GPUs of gpu_type (0 when none, or gpu_type NULL), its
 * options.max_time_limit_minutes (NULL when none), its cores and GiB of
 * memory (0 when not known).
 */
int db_cluster_candidates(struct db *db, const char *gpu_type, PGresult **out);

extern const struct db_stmt *const db_clusters_stmts[];

#endif
