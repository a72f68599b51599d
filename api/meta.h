/* meta.h - health, readiness, metrics and the OpenAPI document. */
#ifndef AIDC_API_META_H
#define AIDC_API_META_H

#include "../server/request.h"

int api_meta_healthz(struct req *rq, struct resp *rs);
int api_meta_readyz(struct req *rq, struct resp *rs);
int api_meta_metrics(struct req *rq, struct resp *rs);
int api_meta_openapi(struct req *rq, struct resp *rs);

#endif
