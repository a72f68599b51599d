/*
 * audit.h - recording audit events (the write path).
 *
 * A state change records its event in the same transaction as the change
 * (audit_record, queued), so one never exists without the other. Refusals -
 * failed logins, 401s, 403s - are recorded at once in a transaction of their
 * own, after the request's transaction was rolled back. Details are
 * stored with secrets redacted (redact_details). Who, from where and which
 * request come from a struct audit_origin (server/auditreq.c fills one from
 * an HTTP request; audit/ itself knows nothing of HTTP).
 */
#ifndef AIDC_AUDIT_H
#define AIDC_AUDIT_H

#include "../lib/actor.h"
#include "../lib/redact.h"

#include <jansson.h>
#include <stdbool.h>

struct db;

struct audit_event {
    const char *action;        /* "project.create", "auth.login", ... */
    const char *resource_type; /* "project", "user", ... (NULL: none) */
    const char *resource_id;   /* its id or name (NULL: none) */
    const char *outcome;       /* "success" (default), "denied" or "error" */
    int status;                /* HTTP status of the answer (0: not known yet) */
    json_t *details;           /* borrowed; a redacted copy is stored */
    const char *tenant_id;     /* default: the request's tenant */
    const char *tenant_slug;
};

/* Who did it, from where, in which request, about which tenant (all borrowed). */
struct audit_origin {
    const struct actor *actor;
    const char *tenant_id; /* the request's tenant ("" or NULL: none), unless ev names one */
    const char *tenant_slug;
    const char *source_ip; /* "" or NULL: not known */
    const char *user_agent;
    const char *request_id;
};
/*
 * Record ev as done by o: queue = true adds it to db's open transaction (the
 * change and its event commit together), false writes it at once in a
 * transaction of its own (no transaction may be open). 0 or an aidc_err.
 */
int audit_record(struct db *db, const struct audit_origin *o, const struct audit_event *ev,
                 bool queue);
/*
 * Record ev for a background worker (no request): the actor is the system
 * ("aidc", role system), source and request id are empty. queue = true adds
 * it to db's open transaction, false writes it in a transaction of its own.
 */
int audit_record_system(struct db *db, const struct audit_event *ev, bool queue);
/*
 * The checkpoint signing key of this process (configuration: set once at
 * start, before any thread reads it). NULL when none is configured.
 */
struct sign_key;
void audit_key_set(const struct sign_key *k);
const struct sign_key *audit_key(void);

#endif
