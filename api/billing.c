/*
 * billing.c - prices (effective-dated, never edited, each change approved by
 * a second person), invoices (draft, regenerate, finalize; JSON and CSV) and
 * the checkpoints a job reports (preemption credit counts from the last one).
 */
#include "billing.h"

#include "../lib/gputype.h"

#include "../db/billing.h"
#include "../db/tenants.h"
#include "../lib/crypto.h"
#include "../lib/csv.h"
#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "approvals.h"
#include "auditfilter.h"
#include "jobspec.h"
#include "paging.h"

#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- prices -------------------------------------------------------------------------- */

static bool is_billable(const char *s)
{
    return strcmp(s, "cpu") == 0 || strcmp(s, "memory_gib") == 0 || strcmp(s, "storage_gib") == 0 ||
           (strncmp(s, "gpu:", 4) == 0 && gputype_valid(s + 4));
}

/* A price as exact decimal text: up to 12 integer and 10 fraction digits. */
static bool decimal_text(const char *s)
{
    size_t i = 0, intd = 0, frac = 0;
    while (isdigit((unsigned char)s[i]))
        i++, intd++;
    if (s[i] == '.') {
        i++;
        while (isdigit((unsigned char)s[i]))
            i++, frac++;
        if (!frac)
            return false;
    }
    return s[i] == '\0' && intd >= 1 && intd <= 12 && frac <= 10;
}

static bool is_currency(const char *s)
{
    return strlen(s) == 3 && isupper((unsigned char)s[0]) && isupper((unsigned char)s[1]) &&
           isupper((unsigned char)s[2]);
}

int api_price_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    const char *resource = req_query(rq, "resource"), *tenant = req_query(rq, "tenant");
    char tenant_id[UUID_LEN + 1];
    bool suspended;
    if (resource && !is_billable(resource))
        api_field_problem(rs, "resource", PROBLEM_PRICE_RESOURCE, NULL);
    if (tenant && !validate_slug(tenant))
        api_field_problem(rs, "tenant", PROBLEM_V_TENANT, NULL);
    if (rs->err.nfields) {
        e = api_fail_fields(rs);
    } else if (tenant) {
        e = db_tenant_resolve(rq->db, tenant, tenant_id, &suspended);
        if (e == AIDC_ENOTFOUND)
            e = api_problem(rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", tenant));
    }
    if (!e)
        e = db_price_list(rq->db, resource, tenant ? tenant_id : NULL, pg.after, pg.limit,
                          &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

static const struct vfield price_fields[] = {
    {"resource", V_STRING, V_REQUIRED, 1, 36, is_billable, PROBLEM_PRICE_RESOURCE},
    {"unit_price", V_STRING, V_REQUIRED, 1, 24, decimal_text, PROBLEM_PRICE_DECIMAL},
    {"currency", V_STRING, V_REQUIRED, 3, 3, is_currency, PROBLEM_PRICE_CURRENCY},
    {"effective_from", V_STRING, V_REQUIRED, 20, 40, NULL, 0},
    {"tenant", V_STRING, V_NULLABLE, 2, 63, validate_slug, PROBLEM_V_TENANT},
};

int api_price_create(struct req *rq, struct resp *rs)
{
    json_t *b = rq->json;
    /* a JSON number is not exact decimal: ask for the text of the price instead */
    if (json_is_number(json_object_get(b, "unit_price")))
        api_field_problem(rs, "unit_price", PROBLEM_PRICE_NUMBER, NULL);
    if (!validate_object(b, price_fields, sizeof price_fields / sizeof price_fields[0], rs) ||
        rs->err.nfields)
        return api_fail_fields(rs);
    const char *from = vstr(b, "effective_from"), *tenant = vstr(b, "tenant");
    time_t t;
    long nsec = 0;
    if (!auditfilter_time(from, &t, &nsec)) {
        api_field_problem(rs, "effective_from", PROBLEM_V_TIME, NULL);
        return api_fail_fields(rs);
    }
    if (t % 3600 != 0 || nsec != 0) {
        api_field_problem(rs, "effective_from", PROBLEM_PRICE_WHOLE_HOUR, NULL);
        return api_fail_fields(rs);
    }
    char tenant_id[UUID_LEN + 1];
    bool suspended;
    if (tenant) {
        int e = db_tenant_resolve(rq->db, tenant, tenant_id, &suspended);
        if (e == AIDC_ENOTFOUND) /* named in the body: the request, not the URL, is wrong */
            return api_problem_status(rs, MHD_HTTP_UNPROCESSABLE_CONTENT, PROBLEM_TENANT_NOT_FOUND,
                                      json_pack("{s:s}", "tenant", tenant));
        if (e)
            return e;
    }
    char summary[200];
    snprintf(summary, sizeof summary, "price of %s%s%s: %s %s from %s", vstr(b, "resource"),
             tenant ? " for " : "", tenant ? tenant : "", vstr(b, "unit_price"),
             vstr(b, "currency"), from);
    int e = approval_required(rq, rs, summary);
    if (e)
        return e < 0 ? e : 0;
    const char *f[7] = {vstr(b, "resource"),
                        tenant ? tenant_id : NULL,
                        vstr(b, "unit_price"),
                        vstr(b, "currency"),
                        from,
                        rq->actor.username,
                        rq->approval_id};
    json_t *out = NULL;
    e = db_price_create(rq->db, f, &out);
    if (e == AIDC_ECONFLICT && tenant)
        return api_problem(rs, PROBLEM_PRICE_EXISTS_TENANT,
                           json_pack("{s:s, s:s, s:s}", "resource", vstr(b, "resource"), "tenant",
                                     tenant, "effective_from", from));
    if (e == AIDC_ECONFLICT)
        return api_problem(
            rs, PROBLEM_PRICE_EXISTS,
            json_pack("{s:s, s:s}", "resource", vstr(b, "resource"), "effective_from", from));
    if (e)
        return e;
    resp_audit(rs, "price", json_string_value(json_object_get(out, "id")),
               json_pack("{s:O, s:O, s:O, s:O}", "resource", json_object_get(out, "resource"),
                         "unit_price", json_object_get(out, "unit_price"), "currency",
                         json_object_get(out, "currency"), "effective_from",
                         json_object_get(out, "effective_from")));
    return resp_json(rs, MHD_HTTP_CREATED, out);
}

/* ---- invoices ------------------------------------------------------------------------ */

/* "2026-11" -> "2026-11-01"; false for anything else. */
static bool period_date(const char *s, char out[11])
{
    if (!s || strlen(s) != 7 || s[4] != '-')
        return false;
    for (int i = 0; i < 7; i++)
        if (i != 4 && !isdigit((unsigned char)s[i]))
            return false;
    long y = strtol(s, NULL, 10), m = strtol(s + 5, NULL, 10);
    if (y < 2000 || y > 9999 || m < 1 || m > 12)
        return false;
    snprintf(out, 11, "%04ld-%02ld-01", y, m);
    return true;
}

static bool is_period(const char *s)
{
    char d[11];
    return period_date(s, d);
}

static const struct vfield invoice_fields[] = {
    {"tenant", V_STRING, V_REQUIRED, 2, 63, validate_slug, PROBLEM_V_TENANT},
    {"period", V_STRING, V_REQUIRED, 7, 7, is_period, PROBLEM_V_MONTH},
};

/* The refusal db_invoice_generate or db_invoice_finalize gave, filled into rs. */
static int invoice_refused(struct resp *rs, const struct db_invoice_why *why)
{
    const char *text = why->text ? why->text : "";
    switch (why->refusal) {
    case DB_INVOICE_NO_PRICE:
        return api_problem(rs, PROBLEM_INVOICE_NO_PRICE, json_pack("{s:s}", "resources", text));
    case DB_INVOICE_CURRENCIES:
        return api_problem(rs, PROBLEM_INVOICE_CURRENCIES, json_pack("{s:s}", "currencies", text));
    case DB_INVOICE_FINAL:
        return api_problem(rs, PROBLEM_INVOICE_ALREADY_FINAL, NULL);
    case DB_INVOICE_PERIOD_OPEN:
        return api_problem(rs, PROBLEM_INVOICE_PERIOD_OPEN,
                           json_pack("{s:s}", "period", why->period));
    case DB_INVOICE_UNMETERED:
        if (why->runs == 1)
            return api_problem(rs, PROBLEM_INVOICE_UNMETERED_RUN,
                               json_pack("{s:s}", "period", why->period));
        return api_problem(
            rs, PROBLEM_INVOICE_UNMETERED_RUNS,
            json_pack("{s:I, s:s}", "runs", (json_int_t)why->runs, "period", why->period));
    case DB_INVOICE_UNMEASURED:
        return api_problem(rs, PROBLEM_INVOICE_STORAGE_UNMEASURED,
                           json_pack("{s:s}", "period", why->period));
    case DB_INVOICE_CHANGED:
        return api_problem(rs, PROBLEM_INVOICE_USAGE_CHANGED,
                           json_pack("{s:s}", "generated_at", text));
    case DB_INVOICE_OK:
        break;
    }
    return api_problem(rs, PROBLEM_CONFLICT, NULL); /* the database's own conflict */
}

int api_invoice_create(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, invoice_fields, 2, rs))
        return api_fail_fields(rs);
    const char *tenant = vstr(rq->json, "tenant"), *period = vstr(rq->json, "period");
    char pdate[11], tenant_id[UUID_LEN + 1], id[UUID_LEN + 1];
    period_date(period, pdate);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char current[8];
    strftime(current, sizeof current, "%Y-%m", &tm);
    if (strcmp(period, current) > 0)
        return api_problem(rs, PROBLEM_INVOICE_PERIOD_NOT_STARTED,
                           json_pack("{s:s}", "period", period));
    bool suspended;
    int e = db_tenant_resolve(rq->db, tenant, tenant_id, &suspended);
    if (e == AIDC_ENOTFOUND)
        return api_problem_status(rs, MHD_HTTP_UNPROCESSABLE_CONTENT, PROBLEM_TENANT_NOT_FOUND,
                                  json_pack("{s:s}", "tenant", tenant));
    struct db_invoice_why why = {0};
    if (!e)
        e = db_invoice_generate(rq->db, tenant_id, pdate, rq->actor.username, id, &why);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_INVOICE_FINAL,
                           json_pack("{s:s, s:s}", "tenant", tenant, "period", period));
    if (!e && why.refusal != DB_INVOICE_OK) {
        e = invoice_refused(rs, &why);
        db_invoice_why_free(&why);
        return e;
    }
    json_t *out = NULL;
    if (!e)
        e = db_invoice_get(rq->db, id, NULL, &out);
    if (e)
        return e;
    resp_audit(rs, "invoice", id,
               json_pack("{s:s, s:s, s:O}", "tenant", tenant, "period", period, "total",
                         json_object_get(out, "total")));
    return resp_json(rs, MHD_HTTP_CREATED, out);
}

/*
 * Whose invoices the actor may read: NULL for finance and platform admins
 * (all), else the tenants it administers (malloc'd; "" for none).
 */
static char *readable_tenants(const struct req *rq)
{
    if (rq->actor.roles & (GR_PLATFORM_ADMIN | GR_FINANCE))
        return NULL;
    struct sbuf sb = SBUF_INIT;
    for (size_t i = 0; i < rq->actor.nmemberships; i++)
        if (rq->actor.memberships[i].role >= TR_ADMIN)
            sbuf_printf(&sb, "%s%s", sb.len ? "," : "", rq->actor.memberships[i].tenant_id);
    return sbuf_steal(&sb);
}

static int invoice_not_found(struct resp *rs, const char *id)
{
    /* an id that is not a UUID is still the client's: named as valid UTF-8 */
    struct sbuf sb = SBUF_INIT;
    sbuf_utf8(&sb, id ? id : "");
    int e = api_problem(rs, PROBLEM_INVOICE_NOT_FOUND, json_pack("{s:s}", "id", sbuf_str(&sb)));
    sbuf_free(&sb);
    return e;
}

static int invoice_id(struct req *rq, struct resp *rs, const char **id)
{
    *id = req_param(rq, "id");
    if (!*id || !crypto_uuid_valid(*id))
        return invoice_not_found(rs, *id);
    return 0;
}

static int answer_csv(struct resp *rs, const json_t *inv)
{
    struct sbuf sb = SBUF_INIT;
    sbuf_puts(&sb, "tenant,period,state,project,project_name,resource,kind,original_period,"
                   "quantity,unit,unit_price,amount,currency\r\n");
    const json_t *total = json_object_get(inv, "total");
    const char *cur = json_string_value(json_object_get(total, "currency"));
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(inv, "lines"), i, l)
    {
        const char *text[] = {json_string_value(json_object_get(inv, "tenant")),
                              json_string_value(json_object_get(inv, "period")),
                              json_string_value(json_object_get(inv, "state")),
                              json_string_value(json_object_get(l, "project")),
                              json_string_value(json_object_get(l, "project_name")),
                              json_string_value(json_object_get(l, "resource")),
                              json_string_value(json_object_get(l, "kind")),
                              json_string_value(json_object_get(l, "original_period"))};
        for (size_t k = 0; k < sizeof text / sizeof text[0]; k++) {
            csv_cell(&sb, text[k]);
            sbuf_putc(&sb, ',');
        }
        csv_number(&sb, json_string_value(json_object_get(l, "quantity")));
        sbuf_putc(&sb, ',');
        csv_cell(&sb, json_string_value(json_object_get(l, "unit")));
        sbuf_putc(&sb, ',');
        csv_number(&sb, json_string_value(json_object_get(l, "unit_price")));
        sbuf_putc(&sb, ',');
        csv_number(&sb, json_string_value(json_object_get(l, "amount")));
        sbuf_putc(&sb, ',');
        csv_cell(&sb, cur);
        sbuf_puts(&sb, "\r\n");
    }
    /* the total, as a line of its own that a spreadsheet can check */
    csv_cell(&sb, json_string_value(json_object_get(inv, "tenant")));
    sbuf_putc(&sb, ',');
    csv_cell(&sb, json_string_value(json_object_get(inv, "period")));
    sbuf_putc(&sb, ',');
    csv_cell(&sb, json_string_value(json_object_get(inv, "state")));
    sbuf_puts(&sb, ",,,,total,,,,,");
    csv_number(&sb, json_string_value(json_object_get(total, "amount")));
    sbuf_putc(&sb, ',');
    csv_cell(&sb, cur);
    sbuf_puts(&sb, "\r\n");
    char name[128];
    snprintf(name, sizeof name, "invoice-%s-%s.csv",
             json_string_value(json_object_get(inv, "tenant")),
             json_string_value(json_object_get(inv, "period")));
    resp_csv(rs, &sb, name);
    return 0;
}

int api_invoice_get(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = invoice_id(rq, rs, &id);
    if (e)
        return e;
    const char *format = req_query(rq, "format");
    if (format && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0) {
        api_field_problem(rs, "format", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "json, csv"));
        return api_fail_fields(rs);
    }
    bool csv =
        format ? strcmp(format, "csv") == 0 : rq->accept && strstr(rq->accept, "text/csv") != NULL;
    json_t *out = NULL;
    char *only = readable_tenants(rq);
    e = only && !*only ? AIDC_ENOTFOUND : db_invoice_get(rq->db, id, only, &out);
    free(only);
    if (e == AIDC_ENOTFOUND)
        return invoice_not_found(rs, id);
    if (e)
        return e;
    if (!csv)
        return resp_json(rs, MHD_HTTP_OK, out);
    e = answer_csv(rs, out);
    json_decref(out);
    return e;
}

int api_invoice_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    const char *tenant = req_query(rq, "tenant"), *period = req_query(rq, "period");
    char pdate[11];
    if (tenant && !validate_slug(tenant))
        api_field_problem(rs, "tenant", PROBLEM_V_TENANT, NULL);
    if (period && !period_date(period, pdate))
        api_field_problem(rs, "period", PROBLEM_V_MONTH, NULL);
    if (rs->err.nfields)
        e = api_fail_fields(rs);
    char *only = readable_tenants(rq);
    if (!e)
        e = db_invoice_list(rq->db, tenant, period ? pdate : NULL, pg.after, pg.limit,
                            only && !*only ? "00000000-0000-0000-0000-000000000000" : only,
                            &pg.rows);
    free(only);
    return paging_finish(rs, &pg, e, NULL);
}

int api_invoice_finalize(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = invoice_id(rq, rs, &id);
    if (e)
        return e;
    struct db_invoice_why why = {0};
    e = db_invoice_finalize(rq->db, id, rq->actor.username, &why);
    if (e == AIDC_ENOTFOUND)
        e = invoice_not_found(rs, id);
    else if (e == AIDC_ECONFLICT)
        e = invoice_refused(rs, &why);
    db_invoice_why_free(&why);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_invoice_get(rq->db, id, NULL, &out);
    if (e)
        return e;
    resp_audit(rs, "invoice", id,
               json_pack("{s:O, s:O, s:O}", "tenant", json_object_get(out, "tenant"), "period",
                         json_object_get(out, "period"), "total", json_object_get(out, "total")));
    return resp_json(rs, MHD_HTTP_OK, out);
}

/* ---- checkpoints --------------------------------------------------------------------- */

static int job_not_found(struct req *rq, struct resp *rs, const char *id)
{
    struct sbuf sb = SBUF_INIT; /* a non-UUID id is the client's: named as valid UTF-8 */
    sbuf_utf8(&sb, id ? id : "");
    int e = api_problem(rs, PROBLEM_JOB_NOT_FOUND,
                        json_pack("{s:s, s:s}", "id", sbuf_str(&sb), "tenant", rq->tenant.slug));
    sbuf_free(&sb);
    return e;
}

int api_job_checkpoint(struct req *rq, struct resp *rs)
{
    const char *id = req_param(rq, "id");
    if (!id || !crypto_uuid_valid(id))
        return job_not_found(rq, rs, id);
    json_t *out = NULL;
    int e = db_job_checkpoint(rq->db, rq->tenant.id, id, &out);
    if (e == AIDC_ENOTFOUND)
        return job_not_found(rq, rs, id);
    if (e)
        return e;
    if (json_is_null(json_object_get(out, "checkpoint_at"))) {
        const char *state = json_string_value(json_object_get(out, "state"));
        if (state && strcmp(state, "running") == 0) /* row-level security kept it */
            e = api_problem(rs, PROBLEM_CHECKPOINT_NOT_OWNER, NULL);
        else
            e = api_problem(rs, PROBLEM_CHECKPOINT_NOT_RUNNING,
                            json_pack("{s:s, s:s?}", "id", id, "state", state));
        json_decref(out);
        return e;
    }
    resp_audit(rs, "job", id, NULL);
    return resp_json(rs, MHD_HTTP_OK, out);
}
