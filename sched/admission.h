/*
 * admission.h - who may run what, on whose quota, and why a job waits.
 *
 * A pure function over a snapshot of the platform (queued and active jobs,
 * tenant and project quotas, cluster capacity, GPU-hour usage) returning
 * decisions: admit (on guaranteed or borrowed quota, on which cluster),
 * preempt (which borrowed job, for which waiting job), or wait (with a reason
 * and an estimated start). No I/O, no clock, no allocation the caller does not
 * free: server/admitter.c loads the snapshot, calls admission_run, and writes
 * the decisions in one transaction.
 *
 * Rules (DESIGN.md "Jobs, quotas, admission, preemption"):
 * - queued jobs are taken by priority (high, normal, low), then submit time;
 * - GPU types never mix: a job of type t only uses capacity of type t;
 * - a job is admitted on guaranteed quota when its tenant's non-borrowed use of
 *   t stays within `guaranteed`, and these jobs are placed before any
 *   borrowing; a job beyond `guaranteed` but within `limit` is admitted as
 *   preemptible (borrowing) only if capacity is still free after every
 *   guaranteed job has been served, i.e. no tenant's guaranteed work waits;
 * - a guaranteed job that finds capacity taken by borrowed jobs reclaims it:
 *   the fewest borrowed jobs needed are preempted, chosen lowest priority
 *   first, newest first; GPUs already being reclaimed are not reclaimed twice;
 * - smaller jobs may pass a blocked larger one, until that one has waited
 *   longer than starvation_seconds: then the rest of its GPU type waits
 *   ("starvation-hold") so capacity gathers for it;
 * - a tenant (or project) past its monthly GPU-hour budget gets no new GPU
 *   admissions (CPU-only work spends no GPU-hours): "budget:tenant" or
 *   "budget:project:<slug>" says whose; a suspended tenant none;
 * - a project whose allocations have all ended gets no admissions
 *   ("allocation:expired"); one whose running allocation's GPU-hours are
 *   spent within its period no new GPU admissions ("allocation:gpu_hours");
 * - a job only a cluster that is down could run waits ("cluster-down"); one
 *   no cluster can run at all (time limit, nodes, size) waits
 *   ("no-cluster-fits") without holding capacity that others could use.
 */
#ifndef AIDC_ADMISSION_H
#define AIDC_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>

enum adm_priority { ADM_LOW = 0, ADM_NORMAL = 1, ADM_HIGH = 2 };

/* Limits use ADM_UNLIMITED for "no limit". */
#define ADM_UNLIMITED (-1.0)

struct adm_job {
    int tenant;        /* index into snapshot.tenants */
    int project;       /* index into snapshot.projects */
    int gpu_type;      /* index into snapshot.gpu_types, or -1 for a CPU-only job */
    int gpus, cpus, memory_gib; /* totals over all the job's nodes */
    int nodes;
    int priority;      /* enum adm_priority */
    double submitted;  /* seconds since the epoch */
    int time_limit_s;
    int cluster;       /* queued: the cluster asked for (-1: any); active: where it runs */
    /* active jobs only */
    bool preemptible;  /* admitted on borrowed quota */
    bool stopping;     /* a cancel or preemption was already requested */
    double admitted;   /* when it was admitted */
    double expected_end; /* when its time limit ends it */
};

struct adm_gpu_quota {
    double guaranteed, limit; /* GPUs; absent from the tenant's quota: 0 and 0 */
};

struct adm_tenant {
    struct adm_gpu_quota *gpu;  /* [ngpu_types] */
    double cpu_limit, memory_limit, jobs_limit; /* ADM_UNLIMITED when absent */
    double gpu_hours_budget;    /* per calendar month, ADM_UNLIMITED when absent */
    double gpu_hours_used;      /* this month so far */
    bool suspended;             /* a suspended tenant gets no admissions */
};

struct adm_project {
    int tenant;
    const char *slug;  /* for reasons ("budget:project:<slug>"); may be NULL */
    double *gpu_limit; /* [ngpu_types], ADM_UNLIMITED when absent */
    double cpu_limit, memory_limit, jobs_limit;
    double gpu_hours_budget, gpu_hours_used;
    /* allocations (docs/allocations.md): enum adm_alloc; the running one's
     * GPU-hours (ADM_UNLIMITED: none granted) and what its period used */
    int alloc;
    double alloc_gpu_hours, alloc_gpu_hours_used;
};

/* A project under allocation: none ever approved (free of the rules), one
 * running now, or all ended ("allocation:expired"). */
enum adm_alloc { ADM_ALLOC_NONE = 0, ADM_ALLOC_ACTIVE, ADM_ALLOC_EXPIRED };

struct adm_cluster {
    int *gpus;             /* [ngpu_types]: total GPUs of each type */
    int cpus, memory_gib;  /* totals; 0 = not limited here */
    int max_time_limit_s;  /* 0 = no maximum */
    int max_nodes;         /* 0 = no maximum (the local executor: 1) */
    bool down;             /* unhealthy: nothing is placed there until it recovers */
};

struct adm_snapshot {
    const char *const *gpu_types; size_t ngpu_types;
    struct adm_tenant *tenants; size_t ntenants;
    struct adm_project *projects; size_t nprojects;
    struct adm_cluster *clusters; size_t nclusters;
    struct adm_job *queued; size_t nqueued;
    struct adm_job *active; size_t nactive;
    double now;
    double starvation_seconds;
    double preempt_grace_seconds;
    double month_end; /* when GPU-hour budgets start afresh */
};

enum adm_kind { ADM_ADMIT, ADM_PREEMPT, ADM_WAIT };

struct adm_decision {
    int kind;        /* enum adm_kind */
    size_t job;      /* ADMIT/WAIT: index into queued; PREEMPT: index into active */
    int cluster;     /* ADMIT: where */
    bool preemptible;/* ADMIT: on borrowed quota */
    size_t for_job;  /* PREEMPT: the queued job the GPUs are reclaimed for */
    char reason[96]; /* WAIT: "quota:gpu:a100", "capacity:gpu:a100", "budget:tenant",
                      * "budget:project:<slug>", ... */
    double estimated_start; /* WAIT: seconds since the epoch, or 0 when unknown */
};

struct adm_result {
    struct adm_decision *decisions; /* malloc'd */
    size_t ndecisions;
};

/* Decide. Always succeeds (allocation failure aborts). Free with admission_result_free. */
void admission_run(const struct adm_snapshot *s, struct adm_result *out);
void admission_result_free(struct adm_result *r);

#endif
