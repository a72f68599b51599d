/* appsessions.h - the interactive session endpoints (see appsessions.c, docs/sessions.md). */
#ifndef AIDC_API_APPSESSIONS_H
#define AIDC_API_APPSESSIONS_H

#include "../server/request.h"

int api_appsession_create(struct req *rq, struct resp *rs);
int api_appsession_list(struct req *rq, struct resp *rs);
int api_appsession_get(struct req *rq, struct resp *rs);
int api_appsession_stop(struct req *rq, struct resp *rs);
int api_appsession_extend(struct req *rq, struct resp *rs);
int api_appsession_open(struct req *rq, struct resp *rs);

#endif
