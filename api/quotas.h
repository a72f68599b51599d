/* quotas.h - tenant and project quotas. */
#ifndef AIDC_API_QUOTAS_H
#define AIDC_API_QUOTAS_H

#include "../server/request.h"

#include <stdbool.h>

int api_quota_tenant_get(struct req *rq, struct resp *rs);
int api_quota_tenant_put(struct req *rq, struct resp *rs);
int api_quota_project_get(struct req *rq, struct resp *rs);
int api_quota_project_put(struct req *rq, struct resp *rs);

/* Whether name is a resource of a project's quota ("gpu:<type>", "cpu", ...): allocations use the same. */
bool api_quota_project_resource(const char *name);

#endif
