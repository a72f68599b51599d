/*
 * slurm.h - the Slurm backend: jobs go to a real Slurm through slurmrestd
 * (backends/slurmrest.h). aidc decides admission; Slurm places the job on
 * nodes and GPUs and runs it.
 *
 * A cluster: {"kind":"slurm","endpoint":"http://host:6820","credentials_ref":
 * "file:/etc/slurm/jwt_hs256.key" | "env:SLURM_JWT","options":{"user_name":
 * "aidc", ...}} (options and defaults in docs/operations.md).
 *
 * Every Slurm job carries its run key (the platform job id, "-r<N>" after
 * preemptions) as its name and in its comment, so a submit that may have
 * reached slurmrestd before aidcd died is found and adopted, not sent twice.
 *
 * The parsing functions are public for the unit tests (tests/unit/
 * test_slurm.c) over answers captured from a real slurmrestd.
 */
#ifndef AIDC_SLURM_H
#define AIDC_SLURM_H

#include "backend.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

extern const struct backend_ops backend_slurm;

/* What a Slurm job (one element of "jobs") means for aidc. */
void slurm_job_status(const json_t *job, struct backend_status *out);
/*
 * The resources of the nodes that can take work ("nodes" of GET /nodes):
 * gpu:<type> from each node's gres, cpu, memory_gib; nodes down, drained,
 * draining or failing are left out. Returns how many (at most max).
 */
int slurm_inventory_parse(const json_t *nodes, struct backend_resource *out, size_t max);
/* Whether a node of GET /nodes can take work: not down, drained, draining or failing. */
bool slurm_node_usable(const json_t *node);
/* The Slurm job (from a "jobs" array) whose name is run_key and user user; NULL if none. */
const json_t *slurm_find_run(const json_t *jobs, const char *run_key, const char *user);
/*
 * The id aidc knows a job of GET jobs by: its job_id, or for a task of a job
 * array that Slurm lists on its own "<array_job_id>_<array_task_id>" (the
 * array's tasks still pending together are one entry: its job_id, the array's).
 */
void slurm_backend_id(const json_t *job, char *out, size_t n);
/*
 * The body of POST job/submit for job on a cluster with options (checked);
 * storage_root the storage spaces' root where options.storage.root is not
 * set (aidcd's own; NULL: none). NULL with err when the job cannot go there
 * (an image without a container mode, mounts it cannot have). New reference.
 */
json_t *slurm_submit_body(const struct backend_job *job, const json_t *options,
                          const char *storage_root, char *err, size_t errsz);

#endif
