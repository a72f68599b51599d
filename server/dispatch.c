/*
 * dispatch.c - the request pipeline (see dispatch.h).
 *
 * Order matters and is part of the contract: unknown query arguments (400),
 * database reachable (503), credentials (401), CSRF rule and token scope (403),
 * tenant visible (404), role (403), tenant suspended (403), then the handler.
 * Who may do what is decided by server/authorize.c, which api/approvals.c
 * asks again when an approved operation runs.
 */
#include "dispatch.h"

#include "../audit/audit.h"
#include "auditreq.h"
#include "metrics.h"
#include "../db/db.h"
#include "../db/idempotency.h"
#include "../db/tenants.h"
#include "auth.h"
#include "authcache.h"
#include "authorize.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/jsonlimit.h"
#include "ratelimit.h"
#include "../lib/log.h"
#include "router.h"
#include "tenantcache.h"
#include "seal.h"
#include "../lib/sbuf.h"
#include "threaddb.h"
#include "validate.h"
#include "waker.h"
#include "../lib/xalloc.h"

#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_RETRIES 3

static bool is_read_method(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

/* Audit a refusal (401/403/404 of a foreign tenant) in its own transaction. */
static void audit_denied(struct req *rq, struct resp *rs, const char *reason)
{
    struct sbuf path = SBUF_INIT; /* the path is the client's: keep the record valid UTF-8 */
    sbuf_utf8(&path, rq->path);
    json_t *d = json_pack("{s:s, s:s, s:s}", "method", rq->method, "path", sbuf_str(&path),
                          "reason", reason ? reason : "");
    sbuf_free(&path);
    if (rs->audit.details && d)
        json_object_update(d, rs->audit.details);
    struct audit_event ev = {
        .action = rq->route->action,
        .resource_type = rs->audit.resource_type,
        .resource_id = rs->audit.resource_id,
        .outcome = "denied",
        .status = rs->err.status,
        .details = d,
    };
    if (db_in_tx(rq->db))
        db_rollback(rq->db);
    (void)auditreq_record_now(rq, &ev);
    json_decref(d);
}

static int deny(struct resp *rs, enum problem p, json_t *params)
{
    api_problem(rs, p, params);
    rs->denied = true; /* audited once the refusal is final (see dispatch) */
    return AIDC_EFORBIDDEN;
}

static int check_query(struct req *rq, struct resp *rs)
{
    if (rq->query_dup)
        return api_problem(rs, PROBLEM_QUERY_REPEATED, NULL);
    for (size_t i = 0; i < rq->nquery; i++) {
        if (!router_accepts_query(rq->route, rq->query[i].key)) {
            api_field_problem(rs, rq->query[i].key, PROBLEM_V_UNKNOWN_PARAMETER, NULL);
            return api_fail_fields(rs);
        }
    }
    return 0;
}

/*
 * Comma-separated tenant ids of the actor's memberships with role >= min,
 * leaving out suspended tenants: their members get 403 on the tenant's own
 * routes, so routes without {tenant} (image and invoice lists, ?tenant=)
 * must not show them the tenant's data either.
 */
static char *tenant_list(const struct actor *a, int min)
{
    struct sbuf sb = SBUF_INIT;
    for (size_t i = 0; i < a->nmemberships; i++) {
        const struct membership *m = &a->memberships[i];
        if (m->role < min || m->suspended)
            continue;
        if (sb.len)
            sbuf_putc(&sb, ',');
        sbuf_puts(&sb, m->tenant_id);
    }
    return sbuf_steal(&sb);
}

/* Comma-separated tenant ids where the actor, a member, reads only its own jobs;
 * none for a platform-wide role, which reads every tenant's jobs whatever its
 * memberships (a platform admin who is also a member of one tenant still
 * cancels all of its jobs when it is deleted). */
static char *own_jobs_list(const struct actor *a)
{
    struct sbuf sb = SBUF_INIT;
    if (a->roles & GR_ANY_GLOBAL)
        return sbuf_steal(&sb);
    for (size_t i = 0; i < a->nmemberships; i++) {
        const struct membership *m = &a->memberships[i];
        if (m->role != TR_MEMBER || m->members_see_all_jobs)
            continue;
        if (sb.len)
            sbuf_putc(&sb, ',');
        sbuf_puts(&sb, m->tenant_id);
    }
    return sbuf_steal(&sb);
}

struct ctx_strings {
    char roles[64];
    char *read, *admin, *member, *own_jobs;
};

static void ctx_build(const struct req *rq, struct ctx_strings *cs, struct db_ctx *ctx)
{
    const struct actor *a = &rq->actor;
    actor_roles_csv(a->roles, cs->roles, sizeof cs->roles);
    if (rq->tenant.id[0]) {
        /* least privilege: only the tenant this request is about */
        int r = rq->tenant.suspended ? TR_NONE : rq->tenant.role;
        cs->read = xstrdup(rq->tenant.role >= TR_VIEWER ? rq->tenant.id : "");
        cs->admin = xstrdup(r >= TR_ADMIN ? rq->tenant.id : "");
        cs->member = xstrdup(r >= TR_MEMBER ? rq->tenant.id : "");
        cs->own_jobs = xstrdup(rq->tenant.own_jobs_only ? rq->tenant.id : "");
    } else {
        cs->read = tenant_list(a, TR_VIEWER);
        cs->admin = tenant_list(a, TR_ADMIN);
        cs->member = tenant_list(a, TR_MEMBER);
        cs->own_jobs = own_jobs_list(a);
    }
    *ctx = (struct db_ctx){
        .user_id = a->user_id[0] ? a->user_id : NULL,
        .roles = cs->roles,
        .read_tenants = cs->read,
        .admin_tenants = cs->admin,
        .member_tenants = cs->member,
        .own_jobs_tenants = cs->own_jobs,
        .check_user = a->authenticated ? a->user_id : NULL,
        .check_version = a->auth_version,
        .check_epoch = a->auth_epoch,
        .check_token = a->authenticated && a->via_token ? a->token_id : NULL,
        .check_jti = a->authenticated && a->jti[0] ? a->jti : NULL,
        .remembered_at = rq->tenant.remembered ? &rq->tenant.epoch : NULL,
    };
}

static void ctx_free(struct ctx_strings *cs)
{
    free(cs->read);
    free(cs->admin);
    free(cs->member);
    free(cs->own_jobs);
}

/*
 * Resolve {tenant}: a member sees its tenant; platform-wide roles see every
 * tenant (looked up in the database); anyone else gets 404, as if it did
 * not exist.
 */
static int resolve_tenant(struct req *rq, struct resp *rs)
{
    const char *slug = req_param(rq, "tenant");
    if (!slug)
        return 0;
    if (!validate_slug(slug)) {
        api_field_problem(rs, "tenant", PROBLEM_V_SLUG, NULL);
        return api_fail_fields(rs);
    }
    enum authorize_tenant seen = authorize_tenant_find(&rq->actor, slug, &rq->tenant);
    if (seen == AUTHZ_TENANT_MEMBER)
        return 0;
    if (seen == AUTHZ_TENANT_HIDDEN)
        return deny(rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", slug));
    /* remembered at the epoch the actor was last found current, or later: the
     * request's transaction then holds only at that epoch (tenantcache.h) */
    time_t now = time(NULL);
    struct tenantcache_hit hit;
    if (tenantcache_get(slug, rq->actor.auth_epoch, now, &hit)) {
        memcpy(rq->tenant.id, hit.id, sizeof rq->tenant.id);
        rq->tenant.slug = xstrdup(slug);
        rq->tenant.role = TR_NONE;
        rq->tenant.suspended = hit.suspended;
        rq->tenant.remembered = true;
        rq->tenant.epoch = hit.epoch;
        metrics_tenant_lookup(true);
        return 0;
    }
    struct ctx_strings cs = {0};
    struct db_ctx ctx;
    ctx_build(rq, &cs, &ctx);
    bool suspended = false;
    int e = db_begin(rq->db, &ctx, true);
    ctx_free(&cs);
    metrics_tenant_lookup(false);
    if (!e)
        e = db_tenant_resolve(rq->db, slug, rq->tenant.id, &suspended);
    int state = e ? DB_CTX_UNKNOWN : db_ctx_verify(rq->db);
    if (state == DB_CTX_STALE)
        e = AIDC_ESTALE;
    /* the epoch the lookup read at (db/readctx.h): a later change moved it past this */
    long long epoch = db_ctx_epoch(rq->db);
    db_commit_nowait(rq->db);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", slug));
    if (e)
        return e;
    if (state == DB_CTX_CURRENT && epoch >= 0)
        tenantcache_put(slug, rq->tenant.id, suspended, epoch, now);
    rq->tenant.slug = xstrdup(slug);
    rq->tenant.role = TR_NONE;
    rq->tenant.suspended = suspended;
    return 0;
}

/* Forget the route's tenant (the log's request context names it: not any more). */
static void forget_tenant(struct req *rq)
{
    log_set_request(rq->request_id, NULL);
    free(rq->tenant.slug);
    memset(&rq->tenant, 0, sizeof rq->tenant);
}

static struct authz_req authz_of(const struct req *rq)
{
    return (struct authz_req){
        .method = rq->method,
        .portal_header = rq->requested_with && strcmp(rq->requested_with, "aidc-portal") == 0,
    };
}

/* The route's {tenant}: resolved, and the actor's rights there. */
static int admit_tenant(struct req *rq, struct resp *rs)
{
    enum problem refusal = PROBLEM_AUTH_REQUIRED;
    struct authz_req ar = authz_of(rq);
    int e = resolve_tenant(rq, rs);
    if (e)
        return e;
    if (authorize_route(&rq->actor, rq->route, &rq->tenant, &ar, &refusal))
        return deny(rs, refusal, authorize_refusal_params(refusal, rq->route, &rq->tenant));
    return 0;
}

/* Authentication and authorization; 0 when the handler may run. */
static int admit(struct req *rq, struct resp *rs)
{
    const struct route *rt = rq->route;
    enum problem refusal = PROBLEM_AUTH_REQUIRED;
    if (rt->flags & RF_PUBLIC)
        return 0;
    int e = auth_authenticate(rq, &refusal);
    if (e == AIDC_EUNAVAIL)
        return e;
    if (e == AIDC_EFORBIDDEN) {
        if (rt->flags & RF_OPTIONAL_AUTH)
            return 0; /* e.g. logout with an expired session: still clears the cookie */
        return deny(rs, refusal, NULL);
    }
    if (e)
        return e;
    if (!rq->actor.authenticated && (rt->flags & RF_OPTIONAL_AUTH))
        return 0;
    /* the decision is authorize.c's, the same that approvals make again */
    struct authz_req ar = authz_of(rq);
    if (authorize_route(&rq->actor, rt, NULL, &ar, &refusal))
        return deny(rs, refusal, authorize_refusal_params(refusal, rt, NULL));
    return admit_tenant(rq, rs);
}

/*
 * Only what was remembered of the tenant was stale (db_ctx_only_pin_moved): the
 * actor itself was found current at the epoch that moved, so it is remembered
 * there, and the tenant is looked up again - not the whole actor.
 */
static int readmit_tenant(struct req *rq, struct resp *rs)
{
    long long epoch = db_ctx_found_epoch(rq->db); /* not the reads': the pin was there */
    rq->actor.auth_epoch = epoch;
    if (rq->actor.cache_key[0])
        authcache_set_epoch(rq->actor.cache_key, epoch);
    forget_tenant(rq);
    resp_free(rs);
    return admit_tenant(rq, rs);
}

static int parse_body(struct req *rq, struct resp *rs)
{
    if (!(rq->route->flags & RF_BODY))
        return 0;
    if (!rq->body || rq->body_len == 0)
        return api_problem(rs, PROBLEM_BODY_REQUIRED, NULL);
    int e = api_json_shape(rs, rq->body, rq->body_len, rq->cfg->json_max_depth,
                           rq->cfg->json_max_values);
    if (e)
        return e;
    json_error_t jerr;
    rq->json = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!rq->json)
        return api_problem(rs, PROBLEM_JSON_MALFORMED,
                           json_pack("{s:i, s:i, s:s}", "line", jerr.line, "column", jerr.column,
                                     "error", jerr.text));
    if (!json_is_object(rq->json))
        return api_problem(rs, PROBLEM_BODY_NOT_OBJECT, NULL);
    return 0;
}

/* ---- Idempotency-Key --------------------------------------------------------------- */

static bool idem_active(const struct req *rq)
{
    return (rq->route->flags & RF_CREATES) && rq->idempotency_key && rq->actor.user_id[0];
}

static void request_hash(const struct req *rq, char out[65])
{
    struct sbuf sb = SBUF_INIT;
    sbuf_puts(&sb, rq->method);
    sbuf_putc(&sb, ' ');
    sbuf_puts(&sb, rq->path);
    /* the same key from another credential of the user is another request: a
     * tenant-bound token must not replay what a session created */
    if (rq->actor.via_token)
        sbuf_printf(&sb, "\ntoken %s", rq->actor.token_id);
    else
        sbuf_puts(&sb, "\nsession");
    sbuf_putc(&sb, '\n');
    if (rq->body)
        sbuf_append(&sb, rq->body, rq->body_len);
    crypto_sha256_hex(sb.buf, sb.len, out);
    sbuf_free(&sb);
}

static int idem_check_key(const char *key, struct resp *rs)
{
    size_t n = strlen(key);
    bool ok = n >= 1 && n <= 255;
    for (size_t i = 0; ok && i < n; i++)
        ok = key[i] > 0x20 && key[i] < 0x7f;
    if (!ok)
        return api_problem(rs, PROBLEM_IDEMPOTENCY_KEY_INVALID, NULL);
    return 0;
}

/* What a sealed answer is bound to: it opens only as the answer to this key
 * of this user for this request, wherever the row is moved. */
static const char *idem_aad(const struct req *rq, const char *hash)
{
    static _Thread_local char aad[512];
    snprintf(aad, sizeof aad, "%s\n%s\n%s", rq->actor.user_id, hash, rq->idempotency_key);
    return aad;
}

/* 1 when rs was filled from the store (replay or conflict), 0 to go on; hit
 * (the caller frees it) says what the first request changed. */
static int idem_lookup(struct req *rq, struct resp *rs, const char *hash, struct idem_hit *hit,
                       int *err)
{
    *err = db_idem_get(rq->db, rq->actor.user_id, rq->idempotency_key, hit);
    if (*err || !hit->found)
        return 0;
    if (strcmp(hit->request_hash, hash) != 0) {
        *err = api_problem(rs, PROBLEM_IDEMPOTENCY_KEY_REUSED, NULL);
    } else if (!(rs->raw = seal_open(hit->response, idem_aad(rq, hash)))) {
        *err = api_problem(rs, PROBLEM_IDEMPOTENCY_ANSWER_LOST, NULL);
    } else {
        rs->status = hit->status;
        rs->raw_len = strlen(rs->raw);
        rs->content_type = "application/json";
        if (hit->location)
            resp_header(rs, MHD_HTTP_HEADER_LOCATION, hit->location);
        resp_header(rs, "Idempotent-Replayed", "true");
        rs->replayed = true;
    }
    return 1;
}

static const char *find_header(const struct resp *rs, const char *name)
{
    for (size_t i = 0; i < rs->nheaders; i++)
        if (strcasecmp(rs->headers[i].name, name) == 0)
            return rs->headers[i].value;
    return NULL;
}

static int idem_store(struct req *rq, struct resp *rs, const char *hash)
{
    char *body = rs->body ? json_dumps(rs->body, JSON_COMPACT | JSON_REAL_PRECISION(15)) : xstrdup("");
    /* sealed: the answer may hold a secret shown once (a new API token) */
    char *sealed = body ? seal_text(body, idem_aad(rq, hash)) : NULL;
    free(body);
    if (!sealed)
        return AIDC_EINTERNAL;
    struct db_idem_answer a = {.status = rs->status, .response = sealed,
                               .location = find_header(rs, MHD_HTTP_HEADER_LOCATION),
                               .resource_type = rs->audit.resource_type,
                               .resource_id = rs->audit.resource_id};
    int e = db_idem_put(rq->db, rq->actor.user_id, rq->idempotency_key, hash, &a,
                        rq->cfg->idempotency_ttl_seconds);
    free(sealed);
    return e;
}

/* ---- running the handler ---------------------------------------------------------- */

static int record_change(struct req *rq, struct resp *rs)
{
    if (rs->audit.skip || (is_read_method(rq->method) && !(rq->route->flags & RF_AUDIT_READ)))
        return 0;
    struct audit_event ev = {
        .action = rq->route->action,
        .resource_type = rs->audit.resource_type,
        .resource_id = rs->audit.resource_id,
        .status = rs->status,
        .details = rs->audit.details,
    };
    return (rq->route->flags & RF_NO_TX) ? auditreq_record_now(rq, &ev) : auditreq_record(rq, &ev);
}

static void reset_resp(struct resp *rs)
{
    resp_free(rs);
}

/*
 * The actor was found current at a newer auth epoch (something changed for
 * someone else): remember that, so its next requests take the cheap check.
 */
static void remember_epoch(struct req *rq)
{
    long long epoch = db_ctx_epoch(rq->db);
    if (rq->actor.authenticated && rq->actor.cache_key[0] && epoch >= 0 &&
        epoch != rq->actor.auth_epoch && db_ctx_verify(rq->db) == DB_CTX_CURRENT) {
        rq->actor.auth_epoch = epoch;
        authcache_set_epoch(rq->actor.cache_key, epoch);
    }
}

/*
 * Heavy reads (reports, audit searches) on the streaming replica, in a
 * read-only transaction of their own with the same tenant context. Whether
 * the actor is still current is decided on the primary only (a replica
 * replays revocations late), and a replica that does not answer leaves the
 * reads on the primary.
 */
static void open_replica(struct req *rq, const struct db_ctx *ctx)
{
    struct db *r = threaddb_read();
    if (!r || rq->replica_failed)
        return;
    rq->replica_trips0 = db_round_trips(r);
    db_set_busy(r, true);
    int e = db_ensure_alive(r);
    /* the replica replays the epoch late: the pin is checked on the primary */
    struct db_ctx rctx = *ctx;
    rctx.remembered_at = NULL;
    if (!e)
        e = db_begin(r, &rctx, false);
    if (e) {
        db_set_busy(r, false);
        log_warn("the read replica is unavailable (%s): reading from the primary",
                 aidc_err_name(e));
        req_add_round_trips(rq, r, rq->replica_trips0);
        return;
    }
    rq->rdb = r;
}

static void close_replica(struct req *rq)
{
    if (rq->rdb == rq->db)
        return;
    db_rollback(rq->rdb); /* it wrote nothing */
    req_add_round_trips(rq, rq->rdb, rq->replica_trips0);
    db_set_busy(rq->rdb, false);
    rq->rdb = rq->db;
}

/* One attempt at the transaction; returns 0 or an aidc_err (AIDC_ERETRY: again). */
static int run_once(struct req *rq, struct resp *rs, const char *hash)
{
    const struct route *rt = rq->route;
    int e = 0;
    rq->wake = 0; /* what an earlier attempt asked for was rolled back */
    if (rt->flags & RF_NO_TX) {
        e = rt->handler(rq, rs);
        if (!e)
            e = record_change(rq, rs);
        return e;
    }
    struct ctx_strings cs = {0};
    struct db_ctx ctx;
    ctx_build(rq, &cs, &ctx);
    bool readonly = is_read_method(rq->method) && !(rt->flags & RF_AUDIT_READ);
    e = db_begin(rq->db, &ctx, readonly);
    if (!e && (rt->flags & RF_REPLICA))
        open_replica(rq, &ctx);
    ctx_free(&cs);
    if (e)
        return e;
    struct idem_hit hit = {0};
    if (hash && idem_lookup(rq, rs, hash, &hit, &e)) {
        if (db_ctx_verify(rq->db) == DB_CTX_STALE) {
            db_idem_hit_free(&hit);
            db_rollback(rq->db);
            return AIDC_ESTALE;
        }
        if (!e && rs->replayed) {
            json_t *d = json_pack("{s:b, s:s}", "replayed", 1, "idempotency_key",
                                  rq->idempotency_key);
            /* the replay names what the first request changed */
            struct audit_event ev = {.action = rt->action, .status = rs->status, .details = d,
                                     .resource_type = hit.resource_type,
                                     .resource_id = hit.resource_id};
            e = auditreq_record(rq, &ev);
            json_decref(d);
        }
        db_idem_hit_free(&hit);
        close_replica(rq);
        if (e) {
            db_rollback(rq->db);
            return e;
        }
        return db_commit(rq->db);
    }
    if (e)
        goto fail;
    e = rt->handler(rq, rs);
    if (e == AIDC_EUNAVAIL && rq->rdb != rq->db && !db_is_up(rq->rdb)) {
        /* the replica went away under the read: once more, on the primary */
        log_warn("the read replica was lost during the request: reading from the primary");
        rq->replica_failed = true;
        close_replica(rq);
        db_rollback(rq->db);
        return AIDC_ERETRY; /* the caller drops what the attempt answered */
    }
    close_replica(rq);
    /* whatever the handler concluded, it did so for the actor we believed in */
    int state = db_ctx_verify(rq->db);
    if (state == DB_CTX_STALE) {
        db_rollback(rq->db);
        return AIDC_ESTALE;
    }
    remember_epoch(rq);
    if (e || rs->err.status)
        goto fail;
    e = record_change(rq, rs);
    if (!e && hash)
        e = idem_store(rq, rs, hash);
    if (e)
        goto fail;
    if (readonly) {
        db_commit_nowait(rq->db);
        return 0;
    }
    e = db_commit(rq->db);
    /* also when the COMMIT's answer was lost: it may have committed, and a
     * notification too many costs a pass */
    if (rq->wake && (!e || e == AIDC_EUNAVAIL))
        waker_poke(rq->wake);
    if (e == AIDC_ECONFLICT && hash) {
        /* a concurrent request with the same key won: answer as it did */
        reset_resp(rs);
        return AIDC_ERETRY;
    }
    return e;
fail:
    close_replica(rq); /* (none is open on any path today: replica routes create nothing) */
    db_rollback(rq->db);
    return e ? e : api_status_err(rs->err.status);
}

static void map_error(struct resp *rs, int e)
{
    if (rs->err.status)
        return;
    switch (e) {
    case AIDC_EUNAVAIL:
        api_problem(rs, PROBLEM_DB_UNAVAILABLE, NULL);
        rs->err.retry_after = 2;
        break;
    case AIDC_ENOTFOUND: api_problem(rs, PROBLEM_NOT_FOUND, NULL); break;
    case AIDC_ECONFLICT: api_problem(rs, PROBLEM_CONFLICT, NULL); break;
    case AIDC_EINVAL: api_problem(rs, PROBLEM_INVALID, NULL); break;
    case AIDC_EFORBIDDEN: api_problem(rs, PROBLEM_FORBIDDEN, NULL); break;
    case AIDC_ERETRY:
    case AIDC_ESTALE:
        api_problem(rs, PROBLEM_CONTENTION, NULL);
        rs->err.retry_after = 1;
        break;
    default: api_problem(rs, PROBLEM_INTERNAL, NULL); break;
    }
}

/* Forget the actor and tenant of rq and the answer so far, to start over fresh. */
static void start_over(struct req *rq, struct resp *rs)
{
    if (rq->actor.cache_key[0])
        authcache_drop(rq->actor.cache_key);
    actor_free(&rq->actor);
    forget_tenant(rq);
    resp_free(rs);
    rq->no_auth_cache = true;
}

/*
 * Admission with a remembered actor can refuse wrongly when the actor gained a
 * membership or role since: before refusing, look again with a fresh one.
 */
static int admit_fresh(struct req *rq, struct resp *rs)
{
    int e = admit(rq, rs);
    if ((rs->denied || e == AIDC_ESTALE) && rq->actor.from_cache) {
        start_over(rq, rs);
        e = admit(rq, rs);
    }
    return e;
}

/*
 * The rate of one credential: an API token by its id, a login session by its
 * id. Only the first refusal of a burst is audited: a client hammering past
 * its limit must not turn every refused request into an audit row.
 */
static int rate_limit(struct req *rq, struct resp *rs)
{
    const struct actor *a = &rq->actor;
    char key[RATELIMIT_KEY_LEN];
    if (!a->authenticated)
        return 0;
    if (a->via_token)
        snprintf(key, sizeof key, "t:%s", a->token_id);
    else if (a->jti[0])
        snprintf(key, sizeof key, "s:%s", a->jti);
    else
        snprintf(key, sizeof key, "u:%s", a->user_id);
    struct ratelimit_decision d = ratelimit_take(RATELIMIT_TOKEN, key);
    if (!d.limited)
        return 0;
    if (d.first)
        log_warn("rate limit: %s %s over %d requests/s", a->via_token ? "token" : "session of",
                 a->via_token ? a->token_id : (a->username ? a->username : a->user_id),
                 rq->cfg->rate_limit_per_token);
    rs->quiet = !d.first;
    rs->err.retry_after = d.retry_after;
    return api_problem(rs, PROBLEM_RATE_CREDENTIAL, json_pack("{s:i}", "seconds", d.retry_after));
}

int dispatch_begin_read(struct req *rq)
{
    struct ctx_strings cs = {0};
    struct db_ctx ctx;
    ctx_build(rq, &cs, &ctx);
    int e = db_begin(rq->db, &ctx, false); /* a real transaction: SET LOCAL must hold */
    ctx_free(&cs);
    return e;
}

/* The database, the actor admitted, its rate taken: 0 and no refusal in rs to go on. */
static int admit_and_limit(struct req *rq, struct resp *rs)
{
    int e = db_ensure(rq->db);
    db_set_busy(rq->db, true);
    if (!e)
        e = admit_fresh(rq, rs);
    if (!e && !rs->err.status)
        e = rate_limit(rq, rs);
    return e;
}

/* Map what went wrong to an answer, and audit a refusal. */
static void finish(struct req *rq, struct resp *rs, int e)
{
    db_set_busy(rq->db, false);
    if (e || rs->err.status)
        map_error(rs, e);
    if ((rs->denied || rs->err.status == MHD_HTTP_UNAUTHORIZED ||
         rs->err.status == MHD_HTTP_FORBIDDEN || rs->err.status == MHD_HTTP_TOO_MANY_REQUESTS) &&
        !rs->quiet)
        audit_denied(rq, rs, rs->err.detail);
}

void dispatch(struct req *rq, struct resp *rs, const struct config *cfg)
{
    const struct route *rt = rq->route;
    unsigned long trips = db_round_trips(rq->db);
    int e;
    rq->cfg = cfg;
    e = check_query(rq, rs);
    if (!e)
        e = parse_body(rq, rs);
    if (e)
        goto out;
    if ((rt->flags & RF_NO_DB) && (rt->flags & RF_PUBLIC)) {
        e = rt->handler(rq, rs);
        goto out;
    }
    e = admit_and_limit(rq, rs);
    if (e || rs->err.status)
        goto out;
    log_set_request(rq->request_id, rq->tenant.slug);
    char hash[65];
    bool idem = idem_active(rq);
    if (idem) {
        e = idem_check_key(rq->idempotency_key, rs);
        if (e)
            goto out;
        request_hash(rq, hash);
    }
    for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
        e = run_once(rq, rs, idem ? hash : NULL);
        if (e == AIDC_ESTALE) {
            /* the actor changed since it was loaded: admit it afresh; only the tenant
             * when only what was remembered of it moved */
            e = db_ctx_only_pin_moved(rq->db) ? readmit_tenant(rq, rs) : AIDC_ESTALE;
            if (e == AIDC_ESTALE) {
                start_over(rq, rs);
                e = admit(rq, rs);
            }
            log_set_request(rq->request_id, rq->tenant.slug);
            if (e || rs->err.status)
                goto out;
            e = AIDC_ERETRY;
            continue;
        }
        if (e != AIDC_ERETRY)
            break;
        if (!rq->replica_failed || attempt > 0)
            log_info("retrying %s after a serialization conflict", rt->action);
        resp_free(rs); /* nothing of the failed attempt may reach the answer */
    }
out:
    finish(rq, rs, e);
    req_add_round_trips(rq, rq->db, trips);
    rq->trips_counted = true;
}

void dispatch_upload_begin(struct req *rq, struct resp *rs, const struct config *cfg)
{
    unsigned long trips = db_round_trips(rq->db);
    rq->cfg = cfg;
    int e = check_query(rq, rs);
    if (!e)
        e = admit_and_limit(rq, rs);
    /* what the handler will check again once the body is in, read now so a
     * refused upload is refused before its bytes are sent */
    for (int attempt = 0; !e && !rs->err.status; attempt++) {
        log_set_request(rq->request_id, rq->tenant.slug);
        e = dispatch_begin_read(rq);
        if (e)
            break;
        e = rq->route->begin(rq, rs);
        bool stale = db_ctx_verify(rq->db) == DB_CTX_STALE;
        db_rollback(rq->db);
        if (!stale)
            break;
        /* it decided for an actor no longer current (a remembered one whose
         * role changed): undo what it began, and once more with a fresh actor */
        if (rq->sink.free && rq->sink.state)
            rq->sink.free(rq->sink.state);
        memset(&rq->sink, 0, sizeof rq->sink);
        start_over(rq, rs);
        e = attempt > 0 ? AIDC_ESTALE : admit(rq, rs);
    }
    finish(rq, rs, e);
    req_add_round_trips(rq, rq->db, trips);
    rq->trips_counted = true;
    /* the handler's dispatch admits the request again once the body is in
     * (rights may change during a long upload): from nothing, as any request */
    actor_free(&rq->actor);
    free(rq->tenant.slug);
    memset(&rq->tenant, 0, sizeof rq->tenant);
}
