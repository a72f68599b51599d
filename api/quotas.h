/* quotas.h - tenant and project quotas. */
#ifndef AIDC_API_QUOTAS_H
#define AIDC_API_QUOTAS_H

#include "../server/request.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include <stdbool.h>

int api_quota_tenant_get(struct req *rq, struct resp *rs);
int api_quota_tenant_put(struct req *rq, struct resp *rs);
int api_quota_project_get(struct req *rq, struct resp *rs);
int api_quota_project_put(struct req *rq, struct resp *rs);

/* Whether name is a resource of a project's quota ("gpu:<type>", "cpu", ...): allocations use the
 * same. */
bool api_quota_project_resource(const char *name);

/* An amount of a quota: a JSON number from 0 to QUOTA_MAX_AMOUNT, as exact text for
 * numeric, into out; false when v is none. */
#define QUOTA_MAX_AMOUNT 1e9
bool api_quota_amount(const json_t *v, char *out, size_t n);

#endif
