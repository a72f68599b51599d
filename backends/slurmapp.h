/*
 * slurmapp.h - where the app of an interactive session's Slurm run answers
 * (backend_ops.app_endpoint): the port the job wrote into its comment
 * (backends/slurmscript.h) on the address of the node its batch script runs
 * on, as Slurm knows it.
 *
 * aidcd's relay connects there, so what a job can write decides nothing
 * else: the host is never read from the job's words but from Slurm's own
 * record (the job's batch_host, checked to be among the nodes allocated to
 * it, and that node's NodeAddr from GET node/{name}); the port must be
 * 1024..65535 (no system service of the node) and reported by this start of
 * the job (its restart count). Anything else is no endpoint.
 *
 * One Unix user runs every job of aidc on a cluster (options.user_name), so
 * a job could rewrite another's comment: it could point that session at
 * another port of that session's own node, never at another host. Jobs of
 * one user are not isolated from each other on Slurm in any case (they may
 * signal and trace each other): tenants that must be apart need users, or
 * clusters, of their own (docs/operations.md).
 */
#ifndef AIDC_SLURMAPP_H
#define AIDC_SLURMAPP_H

#include "backend.h"
#include "slurmrest.h"

#include <jansson.h>
#include <stddef.h>

/*
 * What a Slurm job (an element of GET job/{id}'s "jobs") says of its app:
 * it must be run_key's job of user, running, with a comment ending in this
 * start's report (" aidc-port=<port>:<restart_cnt>"); *port the port and
 * node (n bytes) the node its batch script runs on. 0; AIDC_ENOTFOUND when
 * the job has not reported (yet) or no longer runs; AIDC_EINVAL with err
 * when what it reported or what Slurm says cannot be trusted.
 */
int slurmapp_job_port(const json_t *job, const char *run_key, const char *user, int *port,
                      char *node, size_t n, char *err, size_t errsz);
/*
 * The address of node name (an element of GET node/{name}'s "nodes") into
 * host (n bytes): its NodeAddr, else its name. AIDC_EINVAL with err when the
 * element is another node's, or the address no host name or IP address.
 */
int slurmapp_node_host(const json_t *node, const char *name, char *host, size_t n, char *err,
                       size_t errsz);
/*
 * The endpoint of run run_key, Slurm job backend_id, on the cluster at t
 * (jobs of user): the two reads above, as backend_ops.app_endpoint answers.
 */
int slurmapp_endpoint(const struct slurmrest_target *t, const char *run_key, const char *backend_id,
                      struct backend_endpoint *out, char *err, size_t errsz);

#endif
