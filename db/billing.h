/*
 * billing.h - statements of metering, usage reports, prices and invoices.
 *
 * The rules (hour-cut intervals, pricing, late usage, credits) are in
 * migrations/0006_billing.sql and docs/billing.md; this module only runs
 * them. Times are passed as RFC 3339 text and periods as "YYYY-MM-01".
 */
#ifndef AIDC_DB_BILLING_H
#define AIDC_DB_BILLING_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

extern const struct db_stmt *const db_billing_stmts[];

/* ---- metering (the worker, in its own transaction) ---- */

/*
 * Cut up to max runs into hour intervals as far as they can be cut: closed
 * runs to their end, open ones to the last hour boundary their cluster has
 * reported them running past. *runs and *intervals say what was done.
 */
int db_meter_cut(struct db *db, int max, long *runs, long *intervals);
/* Record every cluster's GPU capacity for the current hour. */
int db_meter_capacity(struct db *db);

/* ---- usage ---- */

struct db_usage_query {
    const char *from, *to;   /* RFC 3339 */
    const char *tenant_id;   /* NULL: every tenant the actor may read */
    const char *group_by;    /* PostgreSQL text[] literal, e.g. {day,project} */
    const char *project;     /* filters (slugs, user name, resource), or NULL */
    const char *user;
    const char *resource;
    long limit;              /* rows (jobs for usage_jobs) to return at most; one more is asked */
    const char *after;       /* usage_jobs: the last job id of the previous page */
};

/*
 * One row of a usage report: its group keys ("" where the report is not
 * grouped by them), the resource, its unit and quantity, and the display
 * names of its tenant and project ("" when none). The quantity is the exact
 * decimal PostgreSQL rounded, as text: it goes out as it is.
 */
struct db_usage_row {
    const char *tenant, *project, *user, *day, *week, *month, *resource;
    const char *unit, *quantity;
    const char *tenant_name, *project_name;
};
/* Called for each row in order; the row and its strings live for the call only. */
typedef void (*db_usage_row_fn)(const struct db_usage_row *row, void *ctx);
/*
 * Run a usage report and hand its rows to fn, ordered by month, week, day,
 * tenant, project, user, resource. AIDC_ETOOBIG, with fn not called, when
 * the report has more than q->limit rows. Rows are read one by one from
 * the result (a report can have 100,000): nothing is copied.
 */
int db_usage_report(struct db *db, const struct db_usage_query *q, db_usage_row_fn fn, void *ctx);
/*
 * Up to limit+1 jobs behind the usage, each as {job: {id, name, state}, tenant,
 * project, user, resources, intervals}, keyed by job id (after: q->after).
 */
int db_usage_jobs(struct db *db, const struct db_usage_query *q, struct db_rows *out);
/* One hour of GPU utilization. */
struct db_util_hour {
    char hour[24];    /* its start, RFC 3339 UTC ("2026-12-02T08:00:00Z") */
    double allocated; /* GPU-hours allocated in it */
    double capacity;  /* GPUs there were (as recorded then, else now) */
    int isodow;       /* its day of the week, 1 (Monday) to 7, UTC */
    int hour_of_day;  /* 0-23, UTC */
};
struct db_util_hours {
    struct db_util_hour *v; /* malloc'd */
    size_t n;
};
/*
 * Every hour from from to to with its allocation and capacity;
 * cluster_id/gpu_type may be NULL (all). Free with db_util_hours_free (also
 * after a failure).
 */
int db_usage_utilization(struct db *db, const char *cluster_id, const char *gpu_type,
                         const char *from, const char *to, struct db_util_hours *out);
void db_util_hours_free(struct db_util_hours *h);

/* ---- prices ---- */

/* Up to limit+1 prices, newest first, keyed by created_at|id; filters may be NULL. */
int db_price_list(struct db *db, const char *resource, const char *tenant_id, const char *after,
                  int limit, struct db_rows *out);
/*
 * Insert one price: resource, tenant id (or NULL), unit price, currency,
 * effective_from, the actor's name, the approval id (or NULL; the requester
 * then comes from the approval and the actor is the approver).
 * AIDC_ECONFLICT when one exists for the same key and time.
 */
int db_price_create(struct db *db, const char *const fields[7], json_t **out);

/* ---- invoices ---- */

/*
 * Why an invoice was not generated or finalized: what the caller tells the
 * client, from these facts (never English from here).
 */
enum db_invoice_refusal {
    DB_INVOICE_OK,
    DB_INVOICE_NO_PRICE,    /* some usage has no price in effect: text = the resources */
    DB_INVOICE_CURRENCIES,  /* the prices in effect disagree: text = the currencies */
    DB_INVOICE_FINAL,       /* finalize: it is final already */
    DB_INVOICE_PERIOD_OPEN, /* finalize: its month has not ended (period) */
    DB_INVOICE_UNMETERED,   /* finalize: runs of the tenant not yet metered past period's end */
    DB_INVOICE_UNMEASURED,  /* finalize: the tenant's storage not yet measured past its end */
    DB_INVOICE_CHANGED,     /* finalize: the usage is not the draft's: text = when it was made */
};

struct db_invoice_why {
    enum db_invoice_refusal refusal;
    char period[8]; /* "YYYY-MM" */
    long runs;
    char *text; /* malloc'd, or NULL */
};

/* Release why->text (and zero why). */
void db_invoice_why_free(struct db_invoice_why *why);

/*
 * Create or regenerate the draft of tenant_id for period: *id is the
 * invoice's. AIDC_ECONFLICT when it is final. When prices are missing or
 * disagree on the currency, why says which (DB_INVOICE_NO_PRICE or
 * DB_INVOICE_CURRENCIES) and nothing is to be kept (the caller rolls back).
 * An invoice without lines carries the currency of the prices that apply to
 * the tenant at the end of period (its own, else the defaults) when they
 * agree on one; none when there is no price or they disagree.
 */
int db_invoice_generate(struct db *db, const char *tenant_id, const char *period, const char *by,
                        char id[37], struct db_invoice_why *why);
/*
 * Finalize invoice id. AIDC_ENOTFOUND, or AIDC_ECONFLICT with why saying why
 * (already final, period not over, usage not yet metered, the tenant's storage
 * spaces not yet measured since the period's end, or usage changed
 * since the draft; DB_INVOICE_OK for a conflict of the database itself). 0
 * when it is final now.
 */
int db_invoice_finalize(struct db *db, const char *id, const char *by, struct db_invoice_why *why);
/*
 * The invoice with its lines and subtotals, as JSON. only: NULL, or the
 * comma-separated tenant ids whose invoices the actor may see (its tenant
 * admin roles). AIDC_ENOTFOUND when not visible.
 */
int db_invoice_get(struct db *db, const char *id, const char *only, json_t **out);
/* Up to limit+1 invoice summaries, newest period first, keyed by period|id; filters may be NULL. */
int db_invoice_list(struct db *db, const char *tenant_slug, const char *period, const char *after,
                    int limit, const char *only, struct db_rows *out);

/*
 * A job's report of a checkpoint (preemption credit counts from the last
 * one): {id, state, checkpoint_at}, checkpoint_at null when the job is not
 * running. AIDC_ENOTFOUND when there is no such job (or it may not change it).
 */
int db_job_checkpoint(struct db *db, const char *tenant_id, const char *job_id, json_t **out);

#endif
