/*
 * allocreview.c - allocation requests, the platform's side: approving (as
 * asked or with changes; above AIDC_ALLOCATION_DUAL_APPROVAL_GPU_HOURS
 * through dual approval, api/approvals.h), rejecting, the comment thread
 * (a platform admin's question sets needs_info, the requester's answer sets
 * pending again) and the report for finance and grant offices.
 *
 * Approving writes the project's quota from the granted resources (their
 * limits) and storage_gib at once, whatever the period: the period itself
 * is enforced by admission (allocation:gpu_hours, allocation:expired).
 */
#include "allocations.h"

#include "../db/allocations.h"
#include "../lib/config.h"
#include "../lib/csv.h"
#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../server/validate.h"
#include "approvals.h"

#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct vfield approve_fields[] = {
    {"resources", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
    {"gpu_hours", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
    {"storage_gib", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
};
static const struct vfield reject_fields[] = {
    {"reason", V_STRING, V_REQUIRED, 1, 2000, NULL, 0},
};
static const struct vfield comment_fields[] = {
    {"text", V_STRING, V_REQUIRED, 1, 8000, NULL, 0},
    {"needs_info", V_BOOL, 0, 0, 0, NULL, 0},
};

/* The state a request reads as: an approved one past its end is expired. */
static const char *shown_state(const struct db_alloc_row *r)
{
    return strcmp(r->state, "approved") == 0 && r->ended ? "expired" : r->state;
}

static bool open_state(const struct db_alloc_row *r)
{
    return strcmp(r->state, "pending") == 0 || strcmp(r->state, "needs_info") == 0;
}

/* Read request {id}, locked for a decision (lock): 0, or a problem (404) filled into rs. */
static int locked(struct req *rq, struct resp *rs, struct db_alloc_row *row, const char **id,
                  bool lock)
{
    memset(row, 0, sizeof *row);
    int e = validate_id_param(rq, rs, id);
    if (e)
        return e;
    e = db_alloc_lock(rq->db, *id, lock, row);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_ALLOC_NOT_FOUND, json_pack("{s:s}", "id", *id));
    return e;
}

static int decided(struct resp *rs, const struct db_alloc_row *row)
{
    return api_problem(rs, PROBLEM_ALLOC_DECIDED, json_pack("{s:s}", "state", shown_state(row)));
}

/* An amount of the body when given, else the asked one (-1: none), as text ("" none). */
static void granted_amount(const json_t *body, const char *field, double asked, char *out, size_t n,
                           struct resp *rs)
{
    if (json_object_get(body, field)) {
        api_alloc_amount(body, field, out, n, rs);
        return;
    }
    out[0] = '\0';
    if (asked >= 0)
        snprintf(out, n, "%.6f", asked);
}

int api_alloc_approve(struct req *rq, struct resp *rs)
{
    struct db_alloc_row row;
    const char *id;
    char gh[48], sg[48], summary[256];
    char *res_text = NULL;
    int e = locked(rq, rs, &row, &id, true);
    if (e)
        goto out;
    if (!validate_object(rq->json, approve_fields, 3, rs) ||
        !api_alloc_resources_check(json_object_get(rq->json, "resources"), "resources", rs)) {
        e = api_fail_fields(rs);
        goto out;
    }
    granted_amount(rq->json, "gpu_hours", row.gpu_hours, gh, sizeof gh, rs);
    granted_amount(rq->json, "storage_gib", row.storage_gib, sg, sizeof sg, rs);
    if (rs->err.nfields) {
        e = api_fail_fields(rs);
        goto out;
    }
    if (!open_state(&row)) {
        e = decided(rs, &row);
        goto out;
    }
    json_t *res = json_object_get(rq->json, "resources");
    res_text = json_dumps(json_is_object(res) ? res : row.resources, JSON_SORT_KEYS | JSON_COMPACT);
    if (!res_text) {
        e = AIDC_EINTERNAL;
        goto out;
    }
    if (gh[0] && strtod(gh, NULL) > rq->cfg->allocation_dual_approval_gpu_hours) {
        snprintf(summary, sizeof summary,
                 "approve allocation request %s of tenant \"%s\": %s GPU-hours", id,
                 row.tenant_slug, gh);
        e = approval_required(rq, rs, summary);
        if (e) {
            e = e < 0 ? e : 0;
            goto out;
        }
    }
    e = db_alloc_approve(rq->db, id, res_text, gh[0] ? gh : NULL, sg[0] ? sg : NULL,
                         rq->actor.user_id);
    if (!e)
        e = db_alloc_apply_quota(rq->db, row.tenant_id, row.project_id, res_text,
                                 sg[0] ? sg : NULL);
    if (e)
        goto out;
    resp_audit(rs, "allocation_request", id,
               json_pack("{s:s, s:O, s:s*, s:s*, s:b}", "tenant", row.tenant_slug, "resources",
                         json_is_object(res) ? res : row.resources, "gpu_hours", gh[0] ? gh : NULL,
                         "storage_gib", sg[0] ? sg : NULL, "changed",
                         json_object_size(rq->json) > 0));
    e = api_alloc_answer(rq, rs, id, MHD_HTTP_OK);
out:
    free(res_text);
    db_alloc_row_free(&row);
    return e;
}

int api_alloc_reject(struct req *rq, struct resp *rs)
{
    struct db_alloc_row row;
    const char *id;
    int e = locked(rq, rs, &row, &id, true);
    if (!e && !validate_object(rq->json, reject_fields, 1, rs))
        e = api_fail_fields(rs);
    if (!e && !open_state(&row))
        e = decided(rs, &row);
    if (!e)
        e = db_alloc_reject(rq->db, id, vstr(rq->json, "reason"), rq->actor.user_id);
    if (!e) {
        resp_audit(
            rs, "allocation_request", id,
            json_pack("{s:s, s:s}", "tenant", row.tenant_slug, "reason", vstr(rq->json, "reason")));
        e = api_alloc_answer(rq, rs, id, MHD_HTTP_OK);
    }
    db_alloc_row_free(&row);
    return e;
}

/* Whether the actor administers tenant_id (a membership as tenant_admin). */
static bool tenant_admin_of(const struct actor *a, const char *tenant_id)
{
    for (size_t i = 0; i < a->nmemberships; i++)
        if (strcmp(a->memberships[i].tenant_id, tenant_id) == 0 &&
            a->memberships[i].role >= TR_ADMIN && !a->memberships[i].suspended)
            return true;
    return false;
}

int api_alloc_comment(struct req *rq, struct resp *rs)
{
    struct db_alloc_row row;
    const char *id;
    const char *kind = "comment";
    /* not locked: the state changes below are conditional on the state */
    int e = locked(rq, rs, &row, &id, false);
    if (!e && !validate_object(rq->json, comment_fields, 2, rs))
        e = api_fail_fields(rs);
    if (e)
        goto out;
    bool platform = (rq->actor.roles & GR_PLATFORM_ADMIN) != 0;
    bool requester = row.requested_by[0] && strcmp(row.requested_by, rq->actor.user_id) == 0;
    bool admin = tenant_admin_of(&rq->actor, row.tenant_id);
    if (!platform && !requester && !admin) {
        e = api_problem(rs, PROBLEM_ALLOC_NOT_COMMENTER, NULL);
        goto out;
    }
    if (json_is_true(json_object_get(rq->json, "needs_info"))) {
        if (!platform) {
            e = api_problem(rs, PROBLEM_ALLOC_NEEDS_INFO_ADMIN, NULL);
            goto out;
        }
        if (!open_state(&row)) {
            e = decided(rs, &row);
            goto out;
        }
        kind = "needs_info";
        e = db_alloc_set_state(rq->db, id, "needs_info");
    } else if (strcmp(row.state, "needs_info") == 0 && (requester || admin)) {
        /* the answer to the question: back in the review queue */
        e = db_alloc_set_state(rq->db, id, "pending");
    }
    if (!e)
        e = db_alloc_comment(rq->db, id, row.tenant_id, rq->actor.user_id, kind,
                             vstr(rq->json, "text"));
    if (e)
        goto out;
    resp_audit(rs, "allocation_request", id,
               json_pack("{s:s, s:s}", "tenant", row.tenant_slug, "kind", kind));
    e = api_alloc_answer(rq, rs, id, MHD_HTTP_CREATED);
out:
    db_alloc_row_free(&row);
    return e;
}

/* ---- the report ------------------------------------------------------------------- */

static void csv_num(struct sbuf *sb, const json_t *v)
{
    char buf[64] = "";
    if (json_is_number(v)) {
        double x = json_number_value(v);
        snprintf(buf, sizeof buf, x == floor(x) && fabs(x) < 1e15 ? "%.0f" : "%.3f", x);
    }
    csv_number(sb, buf[0] ? buf : NULL);
}

static const char *const report_cols[] = {"tenant",      "project", "pi",        "funding_ref",
                                          "starts_on",   "ends_on", "gpu_hours", "gpu_hours_used",
                                          "storage_gib", "state",   "request"};

static void report_csv(struct resp *rs, const json_t *items)
{
    struct sbuf sb = SBUF_INIT;
    const size_t ncols = sizeof report_cols / sizeof report_cols[0];
    for (size_t k = 0; k < ncols; k++)
        sbuf_printf(&sb, "%s%s", k ? "," : "", report_cols[k]);
    sbuf_puts(&sb, "\r\n");
    size_t i;
    json_t *row;
    json_array_foreach(items, i, row)
    {
        for (size_t k = 0; k < ncols; k++) {
            json_t *v = json_object_get(row, report_cols[k]);
            if (k)
                sbuf_putc(&sb, ',');
            if (json_is_number(v))
                csv_num(&sb, v);
            else
                csv_cell(&sb, json_string_value(v));
        }
        sbuf_puts(&sb, "\r\n");
    }
    resp_csv(rs, &sb, "allocations.csv");
}

int api_alloc_report(struct req *rq, struct resp *rs)
{
    const char *from = req_query(rq, "from"), *to = req_query(rq, "to");
    const char *format = req_query(rq, "format");
    long f = 0, t = 0;
    if (from && !api_alloc_parse_day(from, &f))
        api_field_problem(rs, "from", PROBLEM_ALLOC_DATE, NULL);
    if (to && !api_alloc_parse_day(to, &t))
        api_field_problem(rs, "to", PROBLEM_ALLOC_DATE, NULL);
    if (!rs->err.nfields && from && to && t < f)
        api_field_problem(rs, "to", PROBLEM_ALLOC_REPORT_WINDOW, NULL);
    if (format && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0)
        api_field_problem(rs, "format", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "csv, json"));
    if (rs->err.nfields)
        return api_fail_fields(rs);
    struct db_rows rows = {0};
    int e = db_alloc_report(rq->db, from, to, &rows);
    if (e)
        return e;
    resp_audit(rs, "allocation_request", "report",
               json_pack("{s:s*, s:s*, s:I}", "from", from, "to", to, "rows",
                         (json_int_t)json_array_size(rows.items)));
    if (format && strcmp(format, "csv") == 0) {
        report_csv(rs, rows.items);
        db_rows_free(&rows);
        return 0;
    }
    e = resp_json(rs, MHD_HTTP_OK,
                  json_pack("{s:s?, s:s?, s:O}", "from", from, "to", to, "items", rows.items));
    db_rows_free(&rows);
    return e;
}
