/*
 * slurmscript.h - the batch script the Slurm backend submits for a run: the
 * job's own script (Slurm wants a #! line) or its command, wrapped in the
 * container runtime the cluster's options name (apptainer, pyxis).
 *
 * An interactive session's run (backend_job.app) starts with aidc's own
 * lines, in bash, before the job's: they pick a free TCP port on the node
 * the batch script runs on, export it as PORT (over the env's), and write it
 * into the job's comment with scontrol (a user may update its own job's
 * comment, from the node: slurmrestd 22.05's API is not reachable there),
 * "<the comment aidc gave it> aidc-port=<port>:<restart count>". aidcd reads
 * the port back from the comment and the host from Slurm itself
 * (backends/slurmapp.h): a job says a port, never where it runs.
 */
#ifndef AIDC_SLURMSCRIPT_H
#define AIDC_SLURMSCRIPT_H

#include "backend.h"

#include <stddef.h>

/* What a session's comment ends with, before "<port>:<restart count>". */
#define SLURMSCRIPT_PORT_TAG "aidc-port="

/*
 * The batch script of job (malloc'd) for container ("none", "apptainer",
 * "pyxis"), comment the comment the job is submitted with (a session's
 * port is appended to it). NULL with err when the job cannot run so (an
 * image on a cluster without containers).
 */
char *slurmscript_build(const struct backend_job *job, const char *container, const char *comment,
                        char *err, size_t errsz);

#endif
