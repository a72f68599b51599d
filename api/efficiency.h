/*
 * efficiency.h - the idle-GPU report (docs/efficiency.md): running jobs
 * whose GPUs stayed under AIDC_IDLE_GPU_UTIL_PERCENT for AIDC_IDLE_GPU_SECONDS,
 * as the efficiency worker (sched/effwatch.h) found them. A job's own
 * efficiency is a field of the job object (db/jobs.c).
 */
#ifndef AIDC_API_EFFICIENCY_H
#define AIDC_API_EFFICIENCY_H

#include "../server/request.h"

/* GET /api/v1/tenants/{tenant}/efficiency/idle (tenant admins) */
int api_eff_idle_tenant(struct req *rq, struct resp *rs);
/* GET /api/v1/efficiency/idle (platform admins: every tenant) */
int api_eff_idle_all(struct req *rq, struct resp *rs);

#endif
