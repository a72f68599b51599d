/*
 * usage.h - usage reports, the jobs behind them, and GPU utilization
 * (see usage.c and docs/billing.md).
 */
#ifndef AIDC_API_USAGE_H
#define AIDC_API_USAGE_H

#include "../server/request.h"

int api_usage_tenant(struct req *rq, struct resp *rs);
int api_usage_platform(struct req *rq, struct resp *rs);
int api_usage_tenant_jobs(struct req *rq, struct resp *rs);
int api_usage_platform_jobs(struct req *rq, struct resp *rs);
int api_usage_utilization(struct req *rq, struct resp *rs);

#endif
