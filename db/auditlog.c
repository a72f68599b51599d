/* auditlog.c - audit event inserts (into the inbox: see 0029_audit_inbox.sql). */
#include "auditlog.h"

static const struct db_stmt st_insert = {
    "audit_insert",
    "INSERT INTO audit_inbox (actor_user_id, actor_username, actor_token_id, actor_roles,"
    " tenant_id, tenant_slug, source_ip, user_agent, request_id, action, resource_type,"
    " resource_id, outcome, status, details)"
    " VALUES ($1::uuid, $2, $3::uuid, coalesce(string_to_array(nullif($4, ''), ','), '{}'), $5::uuid, $6,"
    " $7::inet, $8, $9, $10, $11, $12, $13, $14::int, $15::jsonb)",
    15};

const struct db_stmt *const db_auditlog_stmts[] = {&st_insert, NULL};

int db_audit_insert(struct db *db, const struct db_audit_row *row, bool queue)
{
    const char *p[15] = {row->actor_user_id, row->actor_username, row->actor_token_id,
                         row->actor_roles,   row->tenant_id,      row->tenant_slug,
                         row->source_ip,     row->user_agent,     row->request_id,
                         row->action,        row->resource_type,  row->resource_id,
                         row->outcome,       row->status,         row->details};
    return queue ? db_queue(db, &st_insert, p) : db_exec(db, &st_insert, p);
}
