/*
 * effwatch.h - the efficiency worker: reads the GPU metrics of jobs on
 * clusters that name a Prometheus (options.metrics) - while they run, at
 * most every AIDC_EFFICIENCY_INTERVAL_SECONDS, and once after they end -
 * and marks jobs whose GPUs stayed under AIDC_IDLE_GPU_UTIL_PERCENT for
 * AIDC_IDLE_GPU_SECONDS (the idle report, docs/efficiency.md). Queries are
 * bounded: at most a batch of jobs per round, four instant queries each.
 */
#ifndef AIDC_EFFWATCH_H
#define AIDC_EFFWATCH_H

struct config;
struct worker;

/* Start the worker (NULL when it cannot start); stop it with worker_stop. */
struct worker *effwatch_start(const struct config *cfg);

#endif
