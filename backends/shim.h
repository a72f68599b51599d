/*
 * shim.h - the process that runs one job of the local backend.
 *
 * `aidcd local-shim DIR` is started (detached, in its own session) by
 * backends/local.c. DIR is the job's control directory: aidcd and the shim
 * write it, the job never sees it. The shim reads DIR/job.json, writes
 * DIR/shim.pid, pulls the job's image if it has one (DIR/phase says so),
 * makes the job's directory DIR/work (its /job) and DIR/tmp (its /tmp),
 * owned by the job's uid, its cgroups, and runs it in its sandbox
 * (backends/jail.h) with stdout/stderr appended to DIR/stdout and
 * DIR/stderr. DIR/started marks the moment it runs. SIGTERM to the shim
 * means "stop the job": SIGTERM to its processes, SIGKILL after the grace
 * period; the time limit ends it the same way. Its end - exit code, out of
 * memory, stopped, timed out - comes from the shim's own wait on the sandbox
 * and the cgroup's counters, never from a file the job can write, and goes
 * to DIR/status.json.
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
    bool oom;        /* a process of it was killed for memory */
    double cpu_seconds, mem_peak_bytes; /* what it used; -1: not known */
    char reason[128];
};

/* Run the shim for DIR; returns the process exit status. */
int shim_main(const char *dir);
/* Read a status.json document. */
void shim_status_parse(const json_t *doc, struct shim_status *out);

#endif
