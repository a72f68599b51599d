/*
 * plans.h - planning for a transaction's actual arguments. The connection
 * plans prepared statements once, generically (db/db.c); statements whose
 * best plan depends on which optional filters are given (audit search,
 * usage reports: "$n IS NULL OR col = $n") ask for custom plans instead.
 */
#ifndef AIDC_DB_PLANS_H
#define AIDC_DB_PLANS_H

struct db;

extern const struct db_stmt *const db_plans_stmts[];

/* Plan the rest of this transaction's statements for their arguments. 0 or an aidc_err. */
int db_custom_plans(struct db *db);

#endif
