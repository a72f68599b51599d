/*
 * approvals.c - dual control (see approvals.h).
 *
 * A sensitive operation is stored as the request that would perform it
 * (method, path, body) and answered 202. Approving runs that request then,
 * in the approver's transaction: the approval row is locked FOR UPDATE, so
 * of two concurrent approvals one runs it and the other finds it decided
 * (409) - the operation runs at most once, and it commits together with the
 * "approved" state or not at all. The approver must be another person than
 * the requester; the requester may withdraw (reject) its own request.
 *
 * Failures of the operation itself (the tenant vanished: 404; the quota no
 * longer fits: 422) are rolled back to a savepoint and decide the approval
 * all the same, with result.status saying so; a database failure fails the
 * whole approve and the request stays pending. Every approved operation is
 * audited under its own action with both names and the approval's id.
 *
 * Before it runs, the operation is authorized again by the dispatcher's own
 * code (server/authorize.c): for the approver, as whom it runs, and for the
 * requester as it is now, so that neither alone decides it.
 */
#include "approvals.h"

#include "../audit/audit.h"
#include "../db/approvals.h"
#include "../db/tenants.h"
#include "../db/users.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "../server/auditreq.h"
#include "../server/auth.h"
#include "../server/authorize.h"
#include "../server/router.h"
#include "../server/validate.h"
#include "paging.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const states[] = {"pending", "approved", "rejected", "expired"};

static json_t *id_params(const char *id)
{
    return json_pack("{s:s}", "id", id ? id : "");
}

static int not_found(struct resp *rs, const char *id)
{
    return api_problem(rs, PROBLEM_APPROVAL_NOT_FOUND, id_params(id));
}

int api_approval_list(struct req *rq, struct resp *rs)
{
    const char *state = req_query(rq, "state");
    bool known = state == NULL;
    for (size_t i = 0; !known && i < sizeof states / sizeof states[0]; i++)
        known = strcmp(state, states[i]) == 0;
    if (!known) {
        api_field_problem(rs, "state", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "pending, approved, rejected, expired"));
        return api_fail_fields(rs);
    }
    struct page pg;
    int e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    e = db_approval_list(rq->db, state, pg.after, pg.after_id, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_approval_get(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_approval_get(rq->db, id, &out);
    if (e == AIDC_ENOTFOUND)
        return not_found(rs, id);
    return e ? e : resp_json(rs, MHD_HTTP_OK, out);
}

/* ---- asking ------------------------------------------------------------------------- */

int approval_request(struct req *rq, struct resp *rs, const char *method, const char *path,
                     const json_t *body, const char *summary)
{
    /* the operation must be one the route table runs: its action names it */
    struct req probe = {0};
    const struct route *rt = NULL;
    enum route_match_result m =
        router_match(routes, routes_count, method, path, &probe, &rt, NULL, 0);
    for (size_t i = 0; i < probe.nparams; i++) {
        free(probe.params[i].key);
        free(probe.params[i].value);
    }
    if (m != ROUTE_FOUND) {
        log_error("approval for %s %s: no such route", method, path);
        return AIDC_EINTERNAL;
    }
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !text)
        return AIDC_EINTERNAL;
    struct db_approval_new n = {
        .method = method,
        .path = path,
        .action = rt->action,
        .summary = summary,
        .body = text,
        .requested_by = rq->actor.user_id,
        .ttl_hours = rq->cfg->approval_ttl_hours,
    };
    json_t *approval = NULL;
    bool created = false;
    /* overdue requests give way: a new one for the same operation may start */
    int e = db_approval_sweep(rq->db);
    if (!e)
        e = db_approval_insert(rq->db, &n, &approval, &created);
    free(text);
    if (e)
        return e;
    json_t *d = json_pack("{s:{s:s, s:s, s:s, s:s, s:O?}, s:b}", "operation", "method", method,
                          "path", path, "action", rt->action, "summary", summary, "body",
                          (json_t *)body, "created", created);
    struct audit_event ev = {
        .action = "approval.request",
        .resource_type = "approval",
        .resource_id = json_string_value(json_object_get(approval, "id")),
        .status = MHD_HTTP_ACCEPTED,
        .details = d,
    };
    e = auditreq_record(rq, &ev);
    json_decref(d);
    if (e) {
        json_decref(approval);
        return e;
    }
    return resp_json(rs, MHD_HTTP_ACCEPTED, json_pack("{s:o}", "approval", approval));
}

int approval_required(struct req *rq, struct resp *rs, const char *summary)
{
    if (rq->approval_id)
        return 0; /* this is the approved run */
    int e = approval_request(rq, rs, rq->method, rq->path, rq->json, summary);
    if (e)
        return e;
    /* nothing happened yet: the request's own event is the approval.request */
    rs->audit.skip = true;
    const char *id =
        json_string_value(json_object_get(json_object_get(rs->body, "approval"), "id"));
    char *loc = xasprintf("/api/v1/approvals/%s", id ? id : "");
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    return 1;
}

/* ---- running an approved operation ------------------------------------------------- */

/* A request for the stored operation, acting as the approver. */
struct op {
    struct req rq;
    struct resp rs;
};

static void op_free(struct op *o)
{
    free(o->rq.path);
    for (size_t i = 0; i < o->rq.nparams; i++) {
        free(o->rq.params[i].key);
        free(o->rq.params[i].value);
    }
    free(o->rq.body);
    json_decref(o->rq.json);
    free(o->rq.tenant.slug);
    resp_free(&o->rs);
    /* the actor and everything else were borrowed from the approver's request */
}

/*
 * The decision of server/authorize.c for a stored operation. Its CSRF rule
 * has nothing left to decide: it keeps another site's forms from riding a
 * cookie session, and the approver's own request (the POST .../approve)
 * passed it in the dispatcher; the requester sends no request now.
 */
static int op_authorize(const struct actor *a, const struct req *q, const struct tenant_ref *t,
                        enum problem *refusal)
{
    const struct authz_req ar = {.method = q->method, .portal_header = true};
    return authorize_route(a, q->route, t, &ar, refusal);
}

static int approver_refused(struct op *o)
{
    api_problem(&o->rs, PROBLEM_APPROVAL_APPROVER_NOT_ALLOWED,
                json_pack("{s:s}", "action", o->rq.route->action));
    return 0;
}

/*
 * {tenant} as the dispatcher resolves it for the approver. It is looked up
 * in this transaction all the same: it may have been deleted since the
 * approver's memberships were read. Not found: the operation's failure.
 */
static int op_tenant(struct op *o, const char *slug)
{
    struct req *q = &o->rq;
    enum authorize_tenant seen = authorize_tenant_find(&q->actor, slug, &q->tenant);
    bool suspended = false;
    int e = seen == AUTHZ_TENANT_HIDDEN ? AIDC_ENOTFOUND
                                        : db_tenant_resolve(q->db, slug, q->tenant.id, &suspended);
    if (e == AIDC_ENOTFOUND) {
        free(q->tenant.slug); /* unresolved: the audit event names it from the path */
        memset(&q->tenant, 0, sizeof q->tenant);
        api_problem(&o->rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", slug));
        return 0;
    }
    if (e)
        return e;
    if (seen == AUTHZ_TENANT_LOOKUP) {
        q->tenant.slug = xstrdup(slug);
        q->tenant.role = TR_NONE;
    }
    q->tenant.suspended = suspended;
    return 0;
}

/*
 * The requester as a session of it would be loaded now: its global roles and
 * memberships (tenant ids left empty: only the operation's tenant matters,
 * and the approver found that). The credential it asked with is not known;
 * its scopes were checked then. AIDC_ENOTFOUND: no such user.
 */
static int requester_load(struct db *db, const char *user_id, struct actor *a, bool *disabled)
{
    json_t *u = NULL, *v;
    size_t i;
    int e = db_user_me(db, user_id, &u);
    if (e)
        return e;
    snprintf(a->user_id, sizeof a->user_id, "%s", user_id);
    a->authenticated = true;
    a->scopes = SC_ALL;
    *disabled = json_is_true(json_object_get(u, "disabled"));
    json_array_foreach(json_object_get(u, "roles"), i, v)
    {
        const char *name = json_string_value(v);
        a->roles |= name ? auth_global_role_parse(name) : 0;
    }
    json_t *ms = json_object_get(u, "memberships"); /* null when it has none */
    a->nmemberships = json_array_size(ms);
    a->memberships = a->nmemberships ? xcalloc(a->nmemberships, sizeof *a->memberships) : NULL;
    json_array_foreach(ms, i, v)
    {
        struct membership *m = &a->memberships[i];
        const char *slug = json_string_value(json_object_get(v, "tenant"));
        const char *role = json_string_value(json_object_get(v, "role"));
        m->slug = xstrdup(slug ? slug : "");
        m->role = role ? auth_tenant_role_parse(role) : TR_NONE;
        m->suspended = json_is_true(json_object_get(v, "suspended"));
        m->members_see_all_jobs = json_is_true(json_object_get(v, "members_see_all_jobs"));
    }
    json_decref(u);
    return 0;
}

/* Whether the requester a is refused q now; *p and *params (new) say why. */
static bool requester_refused(const struct req *q, const struct actor *a, enum problem *p,
                              json_t **params)
{
    struct tenant_ref t = {0};
    bool refused = true;
    *p = PROBLEM_ROLE;
    if (q->tenant.slug) {
        /* the dispatcher would say 404, keeping the tenant from an outsider; the approver,
         * who reads this answer, sees the tenant: what fails is the requester's role */
        if (authorize_tenant_find(a, q->tenant.slug, &t) == AUTHZ_TENANT_HIDDEN)
            goto out;
        if (!t.slug)
            t.slug = xstrdup(q->tenant.slug); /* seen through a global role */
        /* the approver's tenant, as looked up in this transaction */
        memcpy(t.id, q->tenant.id, sizeof t.id);
        t.suspended = q->tenant.suspended;
    }
    refused = op_authorize(a, q, &t, p) != 0;
    if (refused)
        *params = authorize_refusal_params(*p, q->route, &t);
out:
    free(t.slug);
    return refused;
}

/*
 * Dual control needs two people allowed to act when the operation runs, not
 * only when it was asked for: the requester is decided again with the
 * dispatcher's own code, as it is now. Taken roles, a disabled account, a
 * membership ended or a tenant suspended since refuse the operation (its
 * failure, o->rs.err set), as the dispatcher would refuse the requester.
 */
static int requester_check(struct op *o, const char *user_id)
{
    struct actor a = {0};
    bool disabled = false;
    enum problem p = PROBLEM_ROLE; /* a user that no longer exists has no role */
    json_t *params = NULL;
    int e = requester_load(o->rq.db, user_id, &a, &disabled);
    if (e && e != AIDC_ENOTFOUND)
        goto out;
    if (!e && disabled)
        p = PROBLEM_USER_DISABLED;
    if (e || disabled || requester_refused(&o->rq, &a, &p, &params))
        api_problem(&o->rs, p, params);
    e = 0;
out:
    actor_free(&a);
    return e;
}

/* The stored operation as a request of the approver (everything borrowed from rq). */
static void op_build(struct req *rq, const struct db_approval_row *ap, const char *id, struct op *o)
{
    struct req *q = &o->rq;
    q->method = ap->method;
    q->path = xstrdup(ap->path);
    q->actor = rq->actor; /* borrowed: op_free leaves it */
    q->db = rq->db;
    q->cfg = rq->cfg;
    q->started = rq->started;
    q->user_agent = rq->user_agent;
    memcpy(q->request_id, rq->request_id, sizeof q->request_id);
    memcpy(q->source_ip, rq->source_ip, sizeof q->source_ip);
    q->approval_id = id;
    q->approved_by = rq->actor.username;
}

/*
 * Build o for ap and decide it as the dispatcher would, with its code: the
 * route, the approver (role, token scope, the {tenant}, suspension), then
 * the requester. A refusal is the operation's failure (o->rs.err set, 0
 * returned); an error is fatal.
 */
static int op_prepare(struct req *rq, const struct db_approval_row *ap, const char *id,
                      struct op *o)
{
    struct req *q = &o->rq;
    const struct route *rt = NULL;
    enum problem refusal;
    op_build(rq, ap, id, o);
    if (router_match(routes, routes_count, ap->method, ap->path, q, &rt, NULL, 0) != ROUTE_FOUND) {
        api_problem(&o->rs, PROBLEM_APPROVAL_OPERATION_UNKNOWN,
                    json_pack("{s:s, s:s}", "method", ap->method ? ap->method : "", "path",
                              ap->path ? ap->path : ""));
        return 0;
    }
    q->route = rt;
    /* the approver approves as a platform-wide role: a tenant role (or a route open to
     * any user) never makes one an approver, whatever a future operation allows */
    if (!(q->actor.roles & rt->global_roles) || op_authorize(&q->actor, q, NULL, &refusal))
        return approver_refused(o);
    if (ap->body) {
        q->body = xstrdup(ap->body);
        q->body_len = strlen(q->body);
        q->json = json_loads(ap->body, 0, NULL);
        if (!q->json)
            return AIDC_EINTERNAL;
    }
    const char *slug = req_param(q, "tenant");
    int e = slug ? op_tenant(o, slug) : 0;
    if (e || o->rs.err.status)
        return e;
    if (op_authorize(&q->actor, q, &q->tenant, &refusal))
        return approver_refused(o);
    return requester_check(o, ap->requested_by);
}

/* Run the operation's handler; a failure of it leaves nothing behind. */
static int op_run(struct op *o)
{
    int e = db_approval_savepoint(o->rq.db);
    if (e)
        return e;
    e = o->rq.route->handler(&o->rq, &o->rs);
    if (o->rs.err.status) /* refused or failed as the API says: undo what it did */
        return db_approval_savepoint_rollback(o->rq.db);
    if (e)
        return e; /* the database failed: so does the approval */
    return db_approval_savepoint_release(o->rq.db);
}

/* Audit the operation under its own action, naming both people. */
static int op_audit(struct op *o, const struct db_approval_row *ap, const char *id)
{
    bool failed = o->rs.err.status != 0;
    json_t *d = json_object();
    if (json_is_object(o->rs.audit.details))
        json_object_update(d, o->rs.audit.details);
    const char *requester = json_string_value(json_object_get(ap->obj, "requested_by"));
    json_object_set_new(d, "approval_id", json_string(id));
    json_object_set_new(d, "requested_by", json_string(requester ? requester : ""));
    json_object_set_new(d, "approved_by", json_string(o->rq.actor.username));
    if (failed) { /* the refusal as the API would have answered it: its text and its code */
        json_object_set_new(d, "error", json_string(o->rs.err.detail ? o->rs.err.detail : ""));
        json_object_set_new(d, "error_code", json_string(problem_def(o->rs.err.problem)->code));
    }
    struct audit_event ev = {
        .action = ap->action,
        .resource_type = o->rs.audit.resource_type,
        .resource_id = o->rs.audit.resource_id,
        .outcome = failed ? "error" : "success",
        .status = failed ? o->rs.err.status : o->rs.status,
        .details = d,
        /* a tenant that vanished before the approval is still named */
        .tenant_slug = o->rq.tenant.slug ? NULL : req_param(&o->rq, "tenant"),
    };
    int e = auditreq_record(&o->rq, &ev);
    json_decref(d);
    return e;
}

/* {"status", "body"} of the operation's answer (a failure: its problem's status, code,
 * detail and params, so a client translates it as it would the answer itself). */
static json_t *op_result(const struct op *o)
{
    if (o->rs.err.status)
        return json_pack("{s:i, s:{s:i, s:s, s:s, s:o}}", "status", o->rs.err.status, "body",
                         "status", o->rs.err.status, "code", problem_def(o->rs.err.problem)->code,
                         "detail", o->rs.err.detail ? o->rs.err.detail : "", "params",
                         json_is_object(o->rs.err.params) ? json_deep_copy(o->rs.err.params)
                                                          : json_object());
    return json_pack("{s:i, s:O?}", "status", o->rs.status, "body", o->rs.body);
}

/* Lock approval id and refuse unless it is pending and in time. */
static int lock_pending(struct req *rq, struct resp *rs, const char *id, struct db_approval_row *ap)
{
    int e = db_approval_lock(rq->db, id, ap);
    if (e == AIDC_ENOTFOUND)
        return not_found(rs, id);
    if (e)
        return e;
    if (ap->overdue) {
        const char *at = json_string_value(json_object_get(ap->obj, "expires_at"));
        return api_problem(rs, PROBLEM_APPROVAL_EXPIRED,
                           json_pack("{s:s, s:s}", "id", id, "expires_at", at ? at : ""));
    }
    if (strcmp(ap->state, "pending") == 0)
        return 0;
    /* one entry per state: a translation needs no English state name */
    enum problem p = strcmp(ap->state, "approved") == 0   ? PROBLEM_APPROVAL_ALREADY_APPROVED
                     : strcmp(ap->state, "rejected") == 0 ? PROBLEM_APPROVAL_ALREADY_REJECTED
                     : strcmp(ap->state, "expired") == 0  ? PROBLEM_APPROVAL_ALREADY_EXPIRED
                                                          : PROBLEM_APPROVAL_DECIDED_MEANWHILE;
    return api_problem(rs, p, id_params(id));
}

static json_t *decision_details(const struct db_approval_row *ap)
{
    return json_pack("{s:O?, s:O?}", "operation", json_object_get(ap->obj, "operation"),
                     "requested_by", json_object_get(ap->obj, "requested_by"));
}

int api_approval_approve(struct req *rq, struct resp *rs)
{
    const char *id;
    struct db_approval_row ap = {0};
    struct op o = {0};
    json_t *result = NULL, *out = NULL;
    char *result_text = NULL;
    int e = validate_id_param(rq, rs, &id);
    if (!e)
        e = db_approval_sweep(rq->db);
    if (!e)
        e = lock_pending(rq, rs, id, &ap);
    if (e)
        goto out;
    resp_audit(rs, "approval", id, decision_details(&ap));
    if (strcmp(ap.requested_by, rq->actor.user_id) == 0) {
        e = api_problem(rs, PROBLEM_APPROVAL_OWN, id_params(id));
        goto out;
    }
    e = op_prepare(rq, &ap, id, &o);
    if (!e && !o.rs.err.status)
        e = op_run(&o);
    rq->wake |= o.rq.wake; /* the operation's workers wake with the approval's commit */
    if (!e)
        e = op_audit(&o, &ap, id);
    if (e)
        goto out;
    result = op_result(&o);
    result_text = result ? json_dumps(result, JSON_COMPACT) : NULL;
    if (!result_text) {
        e = AIDC_EINTERNAL;
        goto out;
    }
    e = db_approval_decide(rq->db, id, "approved", rq->actor.user_id, NULL, result_text, &out);
    if (e == AIDC_ECONFLICT)
        e = api_problem(rs, PROBLEM_APPROVAL_DECIDED_MEANWHILE, id_params(id));
    if (e)
        goto out;
    json_object_set(rs->audit.details, "result_status", json_object_get(result, "status"));
    e = resp_json(rs, MHD_HTTP_OK, out);
out:
    json_decref(result);
    free(result_text);
    op_free(&o);
    db_approval_row_free(&ap);
    return e;
}

static const struct vfield reject_fields[] = {
    {"reason", V_STRING, V_NULLABLE, 0, 1000, NULL, 0},
};

int api_approval_reject(struct req *rq, struct resp *rs)
{
    const char *id;
    struct db_approval_row ap = {0};
    json_t *out = NULL;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    if (!validate_object(rq->json, reject_fields, 1, rs))
        return api_fail_fields(rs);
    const char *reason = vstr(rq->json, "reason");
    e = db_approval_sweep(rq->db);
    if (!e)
        e = lock_pending(rq, rs, id, &ap);
    if (e)
        goto out;
    /* anyone of the platform admins may say no; the requester so withdraws */
    bool withdrawn = strcmp(ap.requested_by, rq->actor.user_id) == 0;
    e = db_approval_decide(rq->db, id, "rejected", rq->actor.user_id, reason, NULL, &out);
    if (e == AIDC_ECONFLICT)
        e = api_problem(rs, PROBLEM_APPROVAL_DECIDED_MEANWHILE, id_params(id));
    if (e)
        goto out;
    json_t *d = decision_details(&ap);
    json_object_set_new(d, "reason", reason ? json_string(reason) : json_null());
    json_object_set_new(d, "withdrawn", json_boolean(withdrawn));
    resp_audit(rs, "approval", id, d);
    e = resp_json(rs, MHD_HTTP_OK, out);
out:
    db_approval_row_free(&ap);
    return e;
}
