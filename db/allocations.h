/*
 * allocations.h - allocation requests of projects and their review thread
 * (docs/allocations.md). Requests read as JSON built here: the state
 * ("expired": an approved request whose ends_on has passed, never stored),
 * what was asked and what was approved, the GPU-hours the project used
 * within the period, and expires_in_days inside the notice window.
 */
#ifndef AIDC_DB_ALLOCATIONS_H
#define AIDC_DB_ALLOCATIONS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>

/* A live project of a tenant, for a request: its id and whether user is its PI. */
struct db_alloc_project {
    char id[37];
    bool is_pi;
};
/* AIDC_ENOTFOUND when the tenant has no such live project. */
int db_alloc_project(struct db *db, const char *tenant_id, const char *slug, const char *user_id,
                     struct db_alloc_project *out);

/* What a new request says; amounts as exact decimal text, NULL = not asked. */
struct db_alloc_new {
    const char *tenant_id, *project_id, *user_id;
    const char *resources; /* JSON object text */
    const char *gpu_hours, *storage_gib;
    const char *starts_on, *ends_on; /* YYYY-MM-DD */
    const char *justification, *funding_ref;
    const char *renews; /* NULL or a request id */
};
/* Insert; id_out[37] receives its id. */
int db_alloc_insert(struct db *db, const struct db_alloc_new *n, char *id_out);
/* Whether request id exists and is of project_id (a renewal's earlier request). */
int db_alloc_of_project(struct db *db, const char *id, const char *project_id, bool *yes);

/*
 * One request as JSON with its comment thread; tenant_id NULL: any tenant
 * (platform routes). AIDC_ENOTFOUND.
 */
int db_alloc_get(struct db *db, const char *tenant_id, const char *id, int notice_days,
                 json_t **out);
/*
 * Up to limit+1 requests after the cursor (after_ts, after_id). tenant_id
 * NULL: every tenant's, oldest first (the review queue); else the tenant's,
 * newest first. state and project (a slug) NULL: any. state "expired" and
 * "approved" follow the reads' meaning.
 */
int db_alloc_list(struct db *db, const char *tenant_id, const char *state, const char *project,
                  const char *after_ts, const char *after_id, int limit, int notice_days,
                  struct db_rows *out);

/* A request as a decision or a comment needs it. */
struct db_alloc_row {
    char id[37], tenant_id[37], project_id[37], requested_by[37]; /* requested_by "" if gone */
    char state[16]; /* as stored: pending, approved, rejected, needs_info */
    char tenant_slug[64];
    bool ended;                    /* ends_on has passed */
    double gpu_hours, storage_gib; /* asked; -1 when not */
    json_t *resources;             /* asked (new reference) */
};
/* lock: FOR UPDATE (who may decide), else a plain read (who may comment).
 * AIDC_ENOTFOUND. Release with db_alloc_row_free (also after a failure). */
int db_alloc_lock(struct db *db, const char *id, bool lock, struct db_alloc_row *out);
void db_alloc_row_free(struct db_alloc_row *r);

/* Approve (pending or needs_info) with what is granted; amounts as text, NULL = none. */
int db_alloc_approve(struct db *db, const char *id, const char *resources, const char *gpu_hours,
                     const char *storage_gib, const char *user_id);
int db_alloc_reject(struct db *db, const char *id, const char *reason, const char *user_id);
/* Set the state of an open request ("pending" or "needs_info"). */
int db_alloc_set_state(struct db *db, const char *id, const char *state);
/* Add a comment (kind "comment" or "needs_info") by user_id. */
int db_alloc_comment(struct db *db, const char *id, const char *tenant_id, const char *user_id,
                     const char *kind, const char *text);
/*
 * Replace project_id's quota with resources (a JSON object text of
 * {"limit"} per resource) and storage_gib (text, NULL: none).
 */
int db_alloc_apply_quota(struct db *db, const char *tenant_id, const char *project_id,
                         const char *resources, const char *storage_gib);

/*
 * The approved allocations overlapping [from, to] (dates), one JSON row
 * each (tenant, project, pi, funding_ref, starts_on, ends_on, gpu_hours,
 * gpu_hours_used, storage_gib, state), by tenant, project and start.
 */
int db_alloc_report(struct db *db, const char *from, const char *to, struct db_rows *out);

/*
 * Mark the approved allocations that entered the notice window and were not
 * noticed yet; *out receives a JSON array of {id, tenant_id, project,
 * ends_on, expires_in_days} for the caller's audit events.
 */
int db_alloc_notice(struct db *db, int notice_days, json_t **out);

extern const struct db_stmt *const db_allocations_stmts[];

#endif
