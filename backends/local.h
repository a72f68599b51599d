/*
 * local.h - the `local` backend: jobs as child processes of this machine.
 *
 * Each job lives in a directory <workdir>/<job id>/ holding job.json (what to
 * run), stdout, stderr, shim.pid and, once it ended, status.json. It is run
 * by a shim (`aidcd local-shim DIR`, backends/shim.c): a process in its own
 * session, detached from aidcd, that starts the job in its own process group
 * with the job's environment and CUDA_VISIBLE_DEVICES/NVIDIA_VISIBLE_DEVICES,
 * enforces the time limit (SIGTERM, then SIGKILL after the grace period),
 * forwards stop requests, and writes the exit status to status.json. So jobs
 * keep running when aidcd restarts, and their end is found in the file.
 *
 * Options: {"gpus": {"a100": 4, ...}, "cpus": N, "memory_gib": N,
 * "max_time_limit_minutes": N, "workdir": "/path", "node": "gpu-box-1"}; every
 * one is optional ("node" names this machine for GPU faults; default: its
 * host name). On
 * a machine without GPUs the gpus are slots, so the platform can be tried
 * anywhere. GPU indexes are numbered over the types in name order (a100: 0-3,
 * t4: 4-5 for {"t4": 2, "a100": 4}).
 */
#ifndef AIDC_LOCAL_H
#define AIDC_LOCAL_H

#include "backend.h"

extern const struct backend_ops backend_local;

/* The first GPU index of gpu_type in options, and how many there are. */
bool local_gpu_range(const json_t *options, const char *gpu_type, int *first, int *count);

#endif
