/* jobs.h - the job endpoints (see jobs.c). */
#ifndef AIDC_API_JOBS_H
#define AIDC_API_JOBS_H

#include "../server/request.h"

int api_job_submit(struct req *rq, struct resp *rs);
int api_job_list(struct req *rq, struct resp *rs);
int api_job_get(struct req *rq, struct resp *rs);
int api_job_events(struct req *rq, struct resp *rs);
int api_job_cancel(struct req *rq, struct resp *rs);
int api_job_logs(struct req *rq, struct resp *rs);

#endif
