/*
 * clusters.h - clusters, their inventory, and what is allocated on them.
 * Clusters are platform objects (no row-level security): every
 * authenticated user may read them; credentials are only ever references.
 */
#ifndef AIDC_DB_CLUSTERS_H
#define AIDC_DB_CLUSTERS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* AIDC_ECONFLICT: the name is taken, or (*second_local) a local cluster exists. */
int db_cluster_create(struct db *db, const char *name, const char *kind, const char *endpoint,
                      const char *credentials_ref, const char *options_json, json_t **out,
                      bool *second_local);
/* Up to limit+1 clusters with name > after, by name, with inventory; keyed by name. */
int db_cluster_list(struct db *db, const char *after, int limit, struct db_rows *out);
/* One cluster by name, with "inventory": {"gpu:a100": {"total", "allocated"}, ...}. */
int db_cluster_get(struct db *db, const char *name, json_t **out);
/* A cluster as a backend is reached: what workers and the drift report need. */
struct db_cluster {
    char id[37];
    char *name, *kind, *endpoint, *credentials_ref;
    char *options_json; /* its options, as JSON text */
};
struct db_clusters {
    struct db_cluster *v;
    size_t n;
};
/* Every cluster, by name. Free with db_clusters_free (also after a failure). */
int db_cluster_all(struct db *db, struct db_clusters *out);
void db_clusters_free(struct db_clusters *c);
/* The cluster named name (AIDC_ENOTFOUND: none). Free with db_cluster_free. */
int db_cluster_find(struct db *db, const char *name, struct db_cluster *out);
void db_cluster_free(struct db_cluster *c);
/* Record a sync: healthy or not (error), and the inventory (resource names and totals). */
/* The cluster has just answered for every job it holds (at this transaction's time). */
int db_cluster_jobs_seen(struct db *db, const char *cluster_id);
int db_cluster_synced(struct db *db, const char *cluster_id, bool healthy, const char *error,
                      const char *resources_csv, const char *totals_csv);
/* The cluster named name: its id, kind and options (malloc'd json text); AIDC_ENOTFOUND. */
int db_cluster_lookup(struct db *db, const char *name, char *id_out, char *kind_out,
                      size_t kindsz, char **options_json);

/* A job of aidc's ledger, as the drift report compares it with a cluster's list. */
struct db_ledger_job {
    char id[37];
    char *tenant; /* slug */
    char *state;
    char *backend_job_id; /* NULL when not handed to the cluster */
};
struct db_ledger {
    struct db_ledger_job *v;
    size_t n;
};
/*
 * For the drift report: the jobs on cluster_id that are active and handed to
 * it, or whose backend job id is in backend_ids, or whose id is in job_ids
 * (array literals). Free with db_ledger_free (also after a failure).
 */
int db_cluster_ledger(struct db *db, const char *cluster_id, const char *backend_ids,
                      const char *job_ids, struct db_ledger *out);
void db_ledger_free(struct db_ledger *l);

/* What a cluster offers a job, as a submit compares its request with it. */
enum db_cluster_offer {
    DB_OFFER_GPUS,        /* GPUs of the asked-for type (0: none, or no type asked) */
    DB_OFFER_MAX_MINUTES, /* options.max_time_limit_minutes (0: no limit) */
    DB_OFFER_CPUS,        /* cores (0: not known) */
    DB_OFFER_MEMORY_GIB,  /* GiB of memory (0: not known) */
    DB_OFFER_COUNT
};
struct db_cluster_candidate {
    char id[37];
    char *name, *kind;
    bool healthy;
    long long offer[DB_OFFER_COUNT];
};
struct db_cluster_candidates {
    struct db_cluster_candidate *v;
    size_t n;
};
/*
 * Every cluster as a place a job with GPUs of gpu_type (NULL: none) could
 * run, by name. Free with db_cluster_candidates_free (also after a failure).
 */
int db_cluster_candidates(struct db *db, const char *gpu_type, struct db_cluster_candidates *out);
/* Send db_cluster_candidates' statement ahead (db_prefetch). */
void db_cluster_candidates_prefetch(struct db *db, const char *gpu_type);
void db_cluster_candidates_free(struct db_cluster_candidates *c);

extern const struct db_stmt *const db_clusters_stmts[];

#endif
