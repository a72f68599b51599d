/* tenants.h - tenants and their members. */
#ifndef AIDC_API_TENANTS_H
#define AIDC_API_TENANTS_H

#include "../server/request.h"

int api_tenant_create(struct req *rq, struct resp *rs);
int api_tenant_list(struct req *rq, struct resp *rs);
int api_tenant_get(struct req *rq, struct resp *rs);
int api_tenant_update(struct req *rq, struct resp *rs);
int api_tenant_delete(struct req *rq, struct resp *rs);

int api_member_list(struct req *rq, struct resp *rs);
int api_member_put(struct req *rq, struct resp *rs);
int api_member_delete(struct req *rq, struct resp *rs);

#endif
