/* drift.h - GET /api/v1/clusters/{name}/drift: aidc's ledger against the cluster's. */
#ifndef AIDC_API_DRIFT_H
#define AIDC_API_DRIFT_H

#include "../server/request.h"

int api_cluster_drift(struct req *rq, struct resp *rs);

#endif
