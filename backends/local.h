/*
 * local.h - the `local` backend: jobs as sandboxed process trees of this
 * machine.
 *
 * Each run has a control directory <workdir>/<run key>/ that aidcd and the
 * run's shim write and the job never sees: job.json (what to run), shim.pid,
 * phase, started, stop, status.json, the captured stdout and stderr, and the
 * job's own directories work/ (its /job) and tmp/ (its /tmp). The shim
 * (`aidcd local-shim DIR`, backends/shim.c) is a process in its own session,
 * detached from aidcd, so jobs keep running when aidcd restarts and their end
 * is found in the file. It runs the job in a bubblewrap sandbox
 * (backends/jail.h) as the tenant's uid (aidcd as root), within cgroup
 * limits, in its image when it names one. Every file aidcd reads there is
 * opened without following links or blocking (lib/fsat.h).
 *
 * Options: {"gpus": {"a100": 4, ...}, "cpus": N, "memory_gib": N,
 * "max_time_limit_minutes": N, "workdir": "/path", "node": "gpu-box-1",
 * "sandbox": "bwrap" | "unconfined", "network": "none" | "outbound",
 * "uid_range": {"first": N, "count": M}, "device_dir": "/dev",
 * "cgroup_parent": "/aidc", "pids_max": N, "writable_paths": [...],
 * "hidden_paths": [...], "image_cache": "/path", "image_cache_gib": N,
 * "pull_timeout_seconds": N}; every one is optional (backends/localopts.h,
 * docs/operations.md). On a machine without GPUs the gpus are slots, so the
 * platform can be tried anywhere. GPU indexes are numbered over the types in
 * name order (a100: 0-3, t4: 4-5 for {"t4": 2, "a100": 4}).
 */
#ifndef AIDC_LOCAL_H
#define AIDC_LOCAL_H

#include "backend.h"

extern const struct backend_ops backend_local;

/* The first GPU index of gpu_type in options, and how many there are. */
bool local_gpu_range(const json_t *options, const char *gpu_type, int *first, int *count);

#endif
