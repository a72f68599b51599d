/*
 * metrics.h - the Prometheus registry: request counts and latency histograms
 * per route and status, in-flight requests, database reconnects. Lock-free
 * (atomic counters in a table sized once at start).
 */
#ifndef AIDC_METRICS_H
#define AIDC_METRICS_H

#include <stdbool.h>
#include <stddef.h>

/* Slots beyond the route table: static portal files, unmatched paths. */
#define METRICS_SLOT_STATIC(nroutes) (nroutes)
#define METRICS_SLOT_UNMATCHED(nroutes) ((nroutes) + 1)

/* Allocate counters for nroutes routes (+2 extra slots). Call once. */
void metrics_init(size_t nroutes, int threads);
void metrics_observe(size_t slot, int status, double seconds);
void metrics_inflight_add(int delta);
/* A tenant named by a platform-wide role, found in memory or looked up (tenantcache.h). */
void metrics_tenant_lookup(bool remembered);
struct db;
/* The exposition text (malloc'd); the platform-wide gauges come through db (may be NULL). */
char *metrics_render(struct db *db);

#endif
