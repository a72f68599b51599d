/* audit.c - the audit write path (see audit.h). */
#include "audit.h"

#include "../db/auditlog.h"
#include "../lib/err.h"
#include "../lib/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct sign_key *configured_key;

void audit_key_set(const struct sign_key *k)
{
    configured_key = k;
}

const struct sign_key *audit_key(void)
{
    return configured_key;
}

/* The stored, redacted details of ev (malloc'd JSON text), or NULL. */
static char *details_text(const struct audit_event *ev)
{
    json_t *d = ev->details ? json_deep_copy(ev->details) : json_object();
    if (!d)
        return NULL;
    redact_details(d);
    char *text = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    return text;
}

/*
 * Store ev as row (whose actor and origin the caller filled): the event's own
 * fields, its redacted details, queued or at once. 0 or an aidc_err.
 */
static int store(struct db *db, struct db_audit_row *row, const struct audit_event *ev, bool queue)
{
    char status[16];
    snprintf(status, sizeof status, "%d", ev->status);
    char *details = details_text(ev);
    if (!details)
        return AIDC_EINTERNAL;
    row->action = ev->action;
    row->resource_type = ev->resource_type;
    row->resource_id = ev->resource_id;
    row->outcome = ev->outcome ? ev->outcome : "success";
    row->status = ev->status ? status : NULL;
    row->details = details;
    int e = db_audit_insert(db, row, queue);
    if (e)
        log_error("cannot record audit event %s: %s", ev->action, aidc_err_name(e));
    free(details);
    return e;
}

int audit_record_system(struct db *db, const struct audit_event *ev, bool queue)
{
    struct db_audit_row row = {
        .actor_username = "aidc",
        .actor_roles = "system",
        .tenant_id = ev->tenant_id && ev->tenant_id[0] ? ev->tenant_id : NULL,
        .tenant_slug = ev->tenant_slug && ev->tenant_slug[0] ? ev->tenant_slug : NULL,
    };
    return store(db, &row, ev, queue);
}

int audit_record(struct db *db, const struct audit_origin *o, const struct audit_event *ev,
                 bool queue)
{
#ifdef AIDC_BENCH_NO_AUDIT
    (void)db;
    (void)o;
    (void)ev;
    (void)queue;
    return 0; /* benchmark build: what auditing costs is the difference */
#endif
    char roles[64];
    const struct actor *a = o->actor;
    actor_roles_csv(a->roles, roles, sizeof roles);
    const char *tenant_id = ev->tenant_id ? ev->tenant_id : o->tenant_id;
    const char *tenant_slug = ev->tenant_slug ? ev->tenant_slug : o->tenant_slug;
    struct db_audit_row row = {
        .actor_user_id = a->user_id[0] ? a->user_id : NULL,
        .actor_username = a->username,
        .actor_token_id = a->token_id[0] ? a->token_id : NULL,
        .actor_roles = roles,
        .tenant_id = tenant_id && tenant_id[0] ? tenant_id : NULL,
        .tenant_slug = tenant_slug && tenant_slug[0] ? tenant_slug : NULL,
        .source_ip = o->source_ip && o->source_ip[0] ? o->source_ip : NULL,
        .user_agent = o->user_agent,
        .request_id = o->request_id,
    };
    return store(db, &row, ev, queue);
}
