/*
 * localopts.h - the options of a `local` cluster (docs/operations.md "The
 * local executor"): checked when the cluster is registered, and turned into
 * what a job's shim is told (the sandbox part of job.json).
 */
#ifndef AIDC_LOCALOPTS_H
#define AIDC_LOCALOPTS_H

#include "backend.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define LOCALOPTS_UID_FIRST 3000000
#define LOCALOPTS_UID_COUNT 1000000
#define LOCALOPTS_PIDS_MAX 4096
#define LOCALOPTS_CACHE_GIB 20
#define LOCALOPTS_PULL_SECONDS 1800

/* Check options (the cluster's) in place; false with a message naming the option. */
bool localopts_check(json_t *options, char *err, size_t errsz);

/* Whether the cluster runs its jobs without a sandbox (options.sandbox "unconfined"). */
bool localopts_unconfined(const json_t *options);

/* The directory of the jobs' directories (malloc'd): options.workdir or <data dir>/jobs. */
char *localopts_workdir(const struct backend_cluster *c);

/*
 * The uid (and gid) a tenant's jobs run as: options.uid_range.first + the
 * tenant's number, when aidcd is root; -1 when it is not (jobs then run as
 * aidcd's own user, each in its own user namespace). -2 with err when the
 * number is beyond the range.
 */
long long localopts_uid(const json_t *options, long long tenant_number, char *err, size_t errsz);

/*
 * The group every job's processes have besides their tenant's (aidcd as root:
 * uid_range.first, which no tenant's number gives), to which the image cache
 * alone is open; -1 when aidcd is not root.
 */
long long localopts_share_gid(const json_t *options);

/*
 * The sandbox part of job.json (new reference): mode, network, the device
 * directory, hidden and writable paths, cgroup parent, process limit, image
 * cache and host name.
 */
json_t *localopts_sandbox(const struct backend_cluster *c);

/* GPU types of options in name order (the index numbering) into types; how many. */
size_t localopts_gpu_types(const json_t *options, const char **types, size_t max);

#endif
