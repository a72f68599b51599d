/*
 * capacity.h - the cluster view (docs/efficiency.md): per GPU type what the
 * clusters offer, what admitted jobs hold, what the queue asks, and when a
 * job of 1 or 8 GPUs would start (sched/admestimate.h's replay); per node
 * for platform admins.
 */
#ifndef AIDC_API_CAPACITY_H
#define AIDC_API_CAPACITY_H

#include "../server/request.h"

/* GET /api/v1/capacity (any signed-in user: only sums over every tenant) */
int api_capacity_get(struct req *rq, struct resp *rs);
/* GET /api/v1/capacity/nodes (platform admins) */
int api_capacity_nodes(struct req *rq, struct resp *rs);

#endif
