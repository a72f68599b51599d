/* audit.h (db) - reading, sealing and exporting the audit log. */
#ifndef AIDC_DB_AUDIT_H
#define AIDC_DB_AUDIT_H

#include "db.h"

extern const struct db_stmt *const db_audit_stmts[];

#endif
