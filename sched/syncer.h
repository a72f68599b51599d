/*
 * syncer.h - the worker that follows the clusters: it asks each backend what
 * became of the jobs handed to it and records every change of state (with
 * its event, its run interval and, for a preempted job, the requeue), and it
 * refreshes the clusters' inventory and health. One replica at a time;
 * woken by a timer, and by NOTIFY aidc_sync (new cluster, POST .../sync),
 * which also refreshes every inventory at once.
 */
#ifndef AIDC_SYNCER_H
#define AIDC_SYNCER_H

#include <stdbool.h>

struct config;
struct worker;

/* Start the syncer's worker (NULL when it cannot start); worker_stop stops it. */
struct worker *syncer_start(const struct config *cfg);

#endif
