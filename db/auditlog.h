/*
 * auditlog.h - inserting audit events. (Reading, sealing and exporting them
 * come with the audit issue.)
 */
#ifndef AIDC_DB_AUDITLOG_H
#define AIDC_DB_AUDITLOG_H

#include "db.h"

#include <stdbool.h>

/* One audit_events row; NULL fields are stored as NULL. */
struct db_audit_row {
    const char *actor_user_id, *actor_username, *actor_token_id, *actor_roles;
    const char *tenant_id, *tenant_slug, *source_ip, *user_agent, *request_id;
    const char *action, *resource_type, *resource_id, *outcome, *status, *details;
};

/*
 * Insert row into the audit inbox, which the sealer moves into audit_events;
 * queue = true queues it in the open transaction.
 */
int db_audit_insert(struct db *db, const struct db_audit_row *row, bool queue);

extern const struct db_stmt *const db_auditlog_stmts[];

#endif
