/*
 * allocations.h - allocation requests (docs/allocations.md): a project's PI
 * or a tenant admin asks for resources for a period (allocations.c);
 * platform admins review them, the thread of comments, and the report for
 * finance (allocreview.c). An approved request writes the project's quota;
 * admission holds the project to the allocation's GPU-hours in its period
 * and to its end (sched/admission.h).
 */
#ifndef AIDC_API_ALLOCATIONS_H
#define AIDC_API_ALLOCATIONS_H

#include "../server/request.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* the tenant's side */
int api_alloc_create(struct req *rq, struct resp *rs);
int api_alloc_list(struct req *rq, struct resp *rs);
int api_alloc_get(struct req *rq, struct resp *rs);
/* the platform's side */
int api_alloc_queue(struct req *rq, struct resp *rs);
int api_alloc_approve(struct req *rq, struct resp *rs);
int api_alloc_reject(struct req *rq, struct resp *rs);
int api_alloc_comment(struct req *rq, struct resp *rs);
int api_alloc_report(struct req *rq, struct resp *rs);

/*
 * Check a resources object as project quotas take them ({"<resource>":
 * {"limit", "guaranteed"?}}); field errors go to rs named
 * "<field>.<resource>". True when it is good.
 */
bool api_alloc_resources_check(const json_t *v, const char *field, struct resp *rs);
/*
 * An optional amount (gpu_hours, storage_gib): absent or null is "" in out;
 * else a number from 0 to 1e9, as exact decimal text. A field error otherwise.
 */
void api_alloc_amount(const json_t *obj, const char *field, char *out, size_t n, struct resp *rs);
/* "YYYY-MM-DD" as days since 1970-01-01 (UTC); false when it is no real date. */
bool api_alloc_parse_day(const char *s, long *days);
/* Answer request id as it reads now (any tenant) with status. */
int api_alloc_answer(struct req *rq, struct resp *rs, const char *id, int status);

#endif
