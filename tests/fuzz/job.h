/* job.h - the job the backend targets build bodies for (a cluster's options are the input). */
#ifndef AIDC_FUZZ_JOB_H
#define AIDC_FUZZ_JOB_H

#include "backends/backend.h"

#include <jansson.h>

/* A typical job: 2 GPUs, a command, an environment. json_decref cmd and env after use. */
static inline struct backend_job fuzz_job(json_t **cmd, json_t **env)
{
    *cmd = json_pack("[s, s]", "python3", "train.py");
    *env = json_pack("{s:s}", "EPOCHS", "3");
    return (struct backend_job){
        .id = "0192a0b1-c2d3-7e4f-8a9b-0c1d2e3f4a5b-r1", .tenant = "acme", .project = "vision",
        .user = "alice", .name = "train", .image = "registry.example/acme/train@sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        .image_tagged = "registry.example/acme/train:v1", .command = *cmd, .env = *env,
        .gpus = 2, .gpu_type = "a100", .cpus = 8, .memory_gib = 64, .nodes = 1,
        .time_limit_minutes = 60, .grace_seconds = 30, .priority = "normal"};
}

/* Mounts of every kind (json_decref after use). */
static inline json_t *fuzz_mounts(void)
{
    return json_pack("[{s:s}, {s:s}, {s:s, s:s}]", "space", "project", "space", "home", "space",
                     "dataset", "name", "imagenet");
}

#endif
