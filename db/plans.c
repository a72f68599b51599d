/* plans.c - custom plans for a transaction (see plans.h). */
#include "plans.h"

#include "db.h"

static const struct db_stmt st_custom = {
    "custom_plans", "SELECT set_config('plan_cache_mode', 'force_custom_plan', true)", 0};

const struct db_stmt *const db_plans_stmts[] = {&st_custom, NULL};

int db_custom_plans(struct db *db)
{
    return db_exec(db, &st_custom, NULL);
}
