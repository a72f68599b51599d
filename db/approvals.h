/* approvals.h - approval requests (dual control). */
#ifndef AIDC_DB_APPROVALS_H
#define AIDC_DB_APPROVALS_H

#include "db.h"

extern const struct db_stmt *const db_approvals_stmts[];

#endif
