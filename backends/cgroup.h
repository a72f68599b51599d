/*
 * cgroup.h - one control group per local job: its CPU, memory and process
 * limits, how it ended (out of memory or not), and what is left of it.
 *
 * cgroup v2 (a unified hierarchy at /sys/fs/cgroup) and v1 (one hierarchy
 * per controller: memory, pids, cpu, and devices where the caller is root)
 * are both handled; which one is read from the mounts. A job's group is
 * <parent>/<name> in each hierarchy; the job's first process joins it before
 * it executes anything (cgroup_job_join, between fork and exec), so the job
 * is charged from its first instruction. Out of memory is told by the
 * kernel's oom_kill counter, never by an exit code (a SIGKILL and `exit 137`
 * look alike). Depends on libc only.
 */
#ifndef AIDC_CGROUP_H
#define AIDC_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CGROUP_MAX_DIRS 5   /* v1: memory, pids, cpu, devices, cpuacct */
#define CGROUP_MAX_DEVICES 80

struct cgroup_limits {
    long long memory_bytes; /* and no swap beyond it; 0: none */
    long long cpu_millis;   /* 1000 = one core; 0: none */
    long long pids;         /* tasks (threads count); 0: none */
    /*
     * Character devices (major, minor) the job may open besides the usual
     * ones (null, zero, full, random, urandom, tty, ptmx, pts): its GPUs.
     * Used with v1's devices controller (root only); v2 leaves device
     * access to the sandbox's view.
     */
    unsigned devices[CGROUP_MAX_DEVICES][2];
    size_t ndevices;
};

struct cgroup_job {
    int version;                         /* 1 or 2 */
    char dirs[CGROUP_MAX_DIRS][512];     /* the job's group in each hierarchy */
    size_t ndirs;
    int memory;                          /* index of the memory group in dirs */
};

/*
 * Where jobs' groups go when options.cgroup_parent is not given (into out):
 * "/aidc" below each hierarchy's root for root; for another user the group
 * it runs in (delegated to it, e.g. systemd's Delegate=yes) plus "/aidc-jobs".
 */
void cgroup_default_parent(char *out, size_t outsz);

/*
 * Make the job's groups under parent (a path inside the hierarchies, "/aidc")
 * named name, with limits l. 0, or -1 with a message naming what failed
 * (and what to do) in err; nothing is left behind on failure.
 */
int cgroup_job_create(struct cgroup_job *cg, const char *parent, const char *name,
                      const struct cgroup_limits *l, char *err, size_t errsz);
/*
 * The job's groups as cgroup_job_create made them (found again after a
 * restart, by the same parent and name). false when there are none.
 */
bool cgroup_job_find(struct cgroup_job *cg, const char *parent, const char *name);
/*
 * Descriptors of the job's cgroup.procs files (at most max, O_CLOEXEC), for
 * a child to join between fork and exec with cgroup_job_join; without the
 * devices group unless devices (a helper of the job's, slirp4netns, opens
 * /dev/net/tun); how many, or -1 with errno.
 */
int cgroup_job_procs_fds(const struct cgroup_job *cg, bool devices, int *fds, size_t max);
/* In the child: write "0" to each of fds (async-signal-safe). 0 or -1. */
int cgroup_job_join(const int *fds, size_t n);
/* The kernel's count of processes it killed for memory in the job's group. */
long cgroup_job_oom_kills(const struct cgroup_job *cg);
/*
 * What the job used, from its groups' accounting (before they are removed):
 * CPU time (v2 cpu.stat usage_usec; v1 cpuacct.usage where cpuacct shares
 * a hierarchy with cpu) and peak memory (v2 memory.peak; v1
 * memory.max_usage_in_bytes). -1 where the kernel does not tell.
 */
void cgroup_job_usage(const struct cgroup_job *cg, double *cpu_seconds, double *mem_peak_bytes);
/* The job's processes (at most max) into pids; how many. */
size_t cgroup_job_pids(const struct cgroup_job *cg, pid_t *pids, size_t max);
/*
 * Kill every process left in the job's groups (SIGKILL, until they are empty
 * or a few seconds passed) and remove the groups. 0, or -1 when a group stayed.
 */
int cgroup_job_destroy(struct cgroup_job *cg);
/*
 * Whether job groups can be made under parent here (one made and removed):
 * the sandbox's check; -1 with the reason in err.
 */
int cgroup_probe(const char *parent, char *err, size_t errsz);

#endif
