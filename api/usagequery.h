/*
 * usagequery.h - the query arguments of the usage routes (api/usage.c),
 * parsed without the database: from/to, group_by, format, the project,
 * user and resource filters. Kept apart so that they are fuzzed
 * (tests/fuzz/fuzz_router.c) like every other query parser.
 */
#ifndef AIDC_USAGEQUERY_H
#define AIDC_USAGEQUERY_H

#include "../db/billing.h"
#include "../server/request.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define USAGEQUERY_NGROUPS 7
/* The group_by keys in the report's column order: tenant, project, user, day, week, month,
 * resource. */
extern const char *const usagequery_groups[USAGEQUERY_NGROUPS];

struct usage_args {
    struct db_usage_query q;
    char from[40], to[40];
    char tenant_id[UUID_LEN + 1];
    char group_pg[128];                    /* {day,project} */
    const char *order[USAGEQUERY_NGROUPS]; /* the group_by keys as given, for the answer */
    size_t norder;
    bool csv;
};

/*
 * from and to into from/to (n bytes each; defaults dfrom/dto), checked:
 * RFC 3339, to after from, at most max_days apart. Problems go into rs.
 */
void usagequery_range(const struct req *rq, struct resp *rs, time_t dfrom, time_t dto,
                      long max_days, char *from, char *to, size_t n);
/* The start of now's month (UTC). */
time_t usagequery_month_start(time_t now);
/*
 * Every argument but the tenant (whose slug the caller resolves) into *a,
 * the range at most max_days long, "tenant" allowed in group_by only when
 * platform. 0, or an error filled into rs (api_fail_fields).
 */
int usagequery_parse(const struct req *rq, struct resp *rs, bool platform, long max_days,
                     long max_rows, struct usage_args *a);

#endif
