/* audit.c (db) - reading, sealing and exporting the audit log. */
#include "audit.h"

const struct db_stmt *const db_audit_stmts[] = {NULL};
