/*
 * gpufaults.h - GPU health of a cluster (docs/gpu-health.md): faulty GPUs
 * reported by an operator or by Alertmanager, listed, and given back.
 *
 * A report takes the GPUs out of the inventory at once (in its own
 * transaction), asks the jobs on them to stop and be requeued (where aidc
 * assigns GPUs; elsewhere the node's drain finds them, sched/nodeoutbox.c),
 * and queues the drain of the node through the outbox. Giving the last
 * faulty GPU of a node back queues its undrain.
 */
#ifndef AIDC_API_GPUFAULTS_H
#define AIDC_API_GPUFAULTS_H

#include "../server/request.h"

/* POST /api/v1/clusters/{name}/gpu-faults: an operator's report or an Alertmanager webhook. */
int api_gpu_fault_report(struct req *rq, struct resp *rs);
/* GET /api/v1/clusters/{name}/gpu-faults?state=open|resolved|all */
int api_gpu_fault_list(struct req *rq, struct resp *rs);
/* DELETE /api/v1/clusters/{name}/gpu-faults/{node}?gpu=N: the node's GPUs (or GPU N) are healthy.
 */
int api_gpu_fault_resolve(struct req *rq, struct resp *rs);

#endif
