/*
 * callstats.h - how the calls to clusters went, for /metrics:
 * aidc_backend_calls_total{cluster,op,result} and the latency histogram
 * aidc_backend_call_duration_seconds{cluster,op}. A small table under a
 * mutex: backend calls are few (a handful per second) next to requests.
 */
#ifndef AIDC_CALLSTATS_H
#define AIDC_CALLSTATS_H

#include <stdbool.h>
#include <time.h>

struct sbuf;

/* The monotonic clock now, to hand to callstats_done. */
struct timespec callstats_start(void);
/* Count one call of op (a constant: "submit", "cancel", ...) to cluster, begun at t0. */
void callstats_done(struct timespec t0, const char *cluster, const char *op, bool ok);
void callstats_render(struct sbuf *sb);

#endif
