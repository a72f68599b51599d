/*
 * shim.h - the process that runs one job of the local backend.
 *
 * `aidcd local-shim DIR` is started (detached, in its own session) by
 * backends/local.c. It reads DIR/job.json, writes DIR/shim.pid, runs the
 * job in its own process group with stdout/stderr to DIR/stdout and
 * DIR/stderr, and writes DIR/status.json when it ends. SIGTERM to the shim
 * means "stop the job": SIGTERM to the job's group, SIGKILL after the grace
 * period. The time limit ends the job the same way.
 */
#ifndef AIDC_SHIM_H
#define AIDC_SHIM_H

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

struct shim_status {
    time_t started_at, finished_at;
    int exit_code;   /* -1 when ended by a signal or never started */
    bool stopped;    /* ended because it was asked to stop */
    bool timed_out;  /* ended by its time limit */
    char reason[128];
};

/* Run the shim for DIR; returns the process exit status. */
int shim_main(const char *dir);
/* Read a status.json document. */
void shim_status_parse(const json_t *doc, struct shim_status *out);

#endif
