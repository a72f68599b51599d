/*
 * shimrun.h - the shim's inside (backends/shim.h): what shim.c (the job's
 * control directory, its end, supervising it, the unconfined mode) and
 * shimrun.c (the job in its sandbox: image, directories, cgroups,
 * bubblewrap, network) share. Only the shim process uses these.
 */
#ifndef AIDC_SHIMRUN_H
#define AIDC_SHIMRUN_H

#include "cgroup.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

struct shim_run {
    int dfd;          /* the job's control directory (the shim's working directory) */
    json_t *spec;     /* job.json */
    int out, err;     /* the job's stdout and stderr files */
    bool drop;        /* aidcd is root: the job runs as uid/gid */
    uid_t uid;
    gid_t gid;
    long long share_gid; /* a supplementary group (the image cache's), or -1 */
    time_t started;   /* when the job itself began (0: not yet) */
    sigset_t signals; /* blocked, taken by sigwaitinfo: TERM, INT, ALRM, CHLD */
    int cancel_fd;    /* signalfd of TERM and INT: a stop request during the pull */
};

struct shim_end {
    int exit_code; /* -1: none */
    int signal;
    bool stopped, timed_out, oom;
    bool killed; /* the shim sent SIGKILL when the grace period was over */
    /* what it used: CPU seconds and peak memory (bytes); -1: not known */
    double cpu_seconds, mem_peak_bytes;
    char reason[128];
};

/* Write text to name in the control directory (atomically); exits the shim on failure. */
void shim_note(struct shim_run *r, const char *name, const char *text);
/* status.json from e: the job's end. */
void shim_end(struct shim_run *r, const struct shim_end *e);
/* The job failed before it ran, for reason (also on its stderr). */
void shim_fail(struct shim_run *r, const char *reason);
/* Mark the job running (started, phase). */
void shim_mark_started(struct shim_run *r);
/* A directory of the job's (work, tmp) in the control directory: its descriptor or -1. */
int shim_job_dir(struct shim_run *r, const char *name);
/* In a child: become the job's uid and gid when the shim is root. 0 or -1. */
int shim_drop(const struct shim_run *r);
/*
 * Wait until pid (the job unconfined, or bwrap) ends, passing on a stop
 * request or the time limit as SIGTERM and, after the grace period, SIGKILL
 * (shim_signal_job); e says how it ended (its reason from pid's status).
 */
void shim_supervise(struct shim_run *r, pid_t pid, pid_t sandbox_pid,
                    const struct cgroup_job *cg, struct shim_end *e);
/*
 * Send sig to the job: unconfined (sandbox_pid -1) to pid's process group;
 * in the sandbox SIGTERM to every process of its cgroup but bwrap's own two
 * (pid and sandbox_pid: its init ignores SIGTERM), SIGKILL to sandbox_pid,
 * which ends the whole PID namespace.
 */
void shim_signal_job(pid_t pid, pid_t sandbox_pid, const struct cgroup_job *cg, int sig);

/* Run the job in its sandbox and write its end (shimrun.c). */
void shimrun_sandboxed(struct shim_run *r);

#endif
