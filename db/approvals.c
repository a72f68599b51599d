/* approvals.c - approval requests (dual control). */
#include "approvals.h"

const struct db_stmt *const db_approvals_stmts[] = {NULL};
