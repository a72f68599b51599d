/*
 * slurmnode.h - what GPU faults need of a Slurm cluster: its nodes and their
 * GPUs (GET /nodes), whether a node is in a job's node list (a hostlist
 * expression such as "gpu-[01-04,07]"), which of aidc's runs are on a node,
 * and draining a node and resuming it.
 *
 * slurmrestd 22.05 (API v0.0.38) reads nodes but cannot change one: there is
 * no node update and no reservation create (tests/fixtures/slurmrestd/
 * 00-openapi-v3.json; both came with v0.0.39). So a drain runs the program
 * the cluster's options name (backends/command.h: no shell), typically
 * scontrol on a host that may:
 *   "drain_command":  ["/usr/bin/scontrol", "update", "nodename={node}",
 *                      "state=drain", "reason={reason}"],
 *   "resume_command": ["/usr/bin/scontrol", "update", "nodename={node}", "state=resume"]
 * and checks through slurmrestd that it took effect. The reason aidc passes
 * starts with "aidc:", which is how aidc tells its own drains from an
 * administrator's: a node drained for another reason is never drained over
 * nor resumed by aidc.
 */
#ifndef AIDC_SLURMNODE_H
#define AIDC_SLURMNODE_H

#include "backend.h"
#include "slurmrest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What aidc's drains write first into a node's reason. */
#define SLURMNODE_REASON_PREFIX "aidc:"

/* Check options.drain_command and options.resume_command (both optional). */
bool slurmnode_check_options(const json_t *o, char *err, size_t errsz);
/*
 * Whether node is one of the hosts of hostlist, Slurm's compressed form
 * ("node-a100", "gpu-[1-3,07],cpu-x"; brackets hold numbers and ranges,
 * zero-padded to the width written). False for anything malformed.
 */
bool slurmnode_hostlist_has(const char *hostlist, const char *node);
/*
 * Each node of GET /nodes's "nodes" to report: its GPUs by type from its
 * gres ("gpu:a100:4(S:0),gpu:h100:2": indexes 0-3 a100, 4-5 h100), usable
 * when it can take work (slurm_node_usable).
 */
void slurmnode_each(const json_t *nodes, void (*report)(void *arg, const struct backend_node *n),
                    void *arg);
/*
 * The runs of user on node among jobs (GET /jobs's "jobs"): the jobs that
 * hold a node now (running, suspended, completing) with node in their node
 * list, reported with their job id and name (the run key).
 */
void slurmnode_jobs_on(const json_t *jobs, const char *node, const char *user,
                       void (*report)(void *arg, const char *backend_id, const char *run_key),
                       void *arg);
/*
 * Drain node (on) or resume it (off) on the cluster at t with options, as
 * backend_ops.drain says; call records the command run (its argument vector,
 * exit status and output) and lookup the node as slurmrestd showed it first.
 */
int slurmnode_drain(const struct slurmrest_target *t, const json_t *options, const char *node,
                    bool on, const char *reason, struct backend_call *call, char *err,
                    size_t errsz);

#endif
