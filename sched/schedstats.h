/*
 * schedstats.h - what the background workers did, for /metrics: admission
 * passes (how long the last took, how many jobs it saw waiting), admissions
 * and preemptions, outbox deliveries, syncer rounds. Process-wide atomic
 * counters: a replica that is not the leader shows its passes skipped.
 */
#ifndef AIDC_SCHEDSTATS_H
#define AIDC_SCHEDSTATS_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf;

void schedstats_admission(double ms, size_t admitted, size_t borrowed, size_t preempted);
void schedstats_delivery(bool ok);
void schedstats_sync(void);
/* Append the Prometheus text of these counters. */
void schedstats_render(struct sbuf *sb);

#endif
