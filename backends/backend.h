/*
 * backend.h - the interface between aidc and a scheduler that runs jobs.
 *
 * A backend is a table of functions chosen by a cluster's `kind`. aidc
 * decides who runs what (sched/admission.c); a backend only carries out:
 * submit, cancel, preempt (stop with a grace period so the job can
 * checkpoint), poll (what became of the jobs it holds), inventory (what the
 * cluster offers), its nodes, draining a node with faulty GPUs and the runs
 * on a node, and, where it can, logs.
 *
 * Contract for every backend:
 * - submit is idempotent: the backend job carries the platform job id, and
 *   submitting a job that already exists reports success with its id;
 * - cancel and preempt of a job that already ended, or never arrived, succeed;
 * - calls may block (network) but never for longer than the backend's own
 *   timeouts; they are made from background workers, never from a request;
 * - submit, cancel and preempt say what they sent (struct backend_call):
 *   every call that changes state in a scheduler is audited.
 */
#ifndef AIDC_BACKEND_H
#define AIDC_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A cluster as the backends see it. */
struct backend_cluster {
    const char *id;
    const char *name;
    const char *kind;
    const char *endpoint;
    const char *credentials_ref;
    const json_t *options; /* validated by the backend's check_options */
    const char *data_dir;  /* aidcd's AIDC_DATA_DIR */
    const char *self_exe;  /* aidcd's own binary (the local executor runs its shim) */
    /* aidcd's AIDC_STORAGE_ROOT (the spaces on this host: storage/space.h) and
     * AIDC_STORAGE_UID_FIRST (a tenant's files belong to it + the tenant's number);
     * NULL and 0 where no job is submitted */
    const char *storage_root;
    long long storage_uid_first;
};

/*
 * A job to start. Strings are borrowed for the call. `id` is the run key:
 * the platform job id, suffixed "-r<N>" for its N-th run after preemptions,
 * so every run is a distinct backend job and a retried delivery of the same
 * run finds the one it made. Every other call names the run the same way.
 */
struct backend_job {
    const char *id;
    const char *tenant;
    const char *project;
    const char *user;
    const char *name;
    const char *image; /* may be NULL; pinned to its digest when aidc knows the image */
    /* the same image by tag (host/repository:tag), for runtimes that cannot pull by
     * digest (enroot/pyxis); NULL when aidc does not know the image */
    const char *image_tagged;
    const char *image_digest; /* the digest checked at submission, or NULL */
    /* the registry the catalog names for image (its URL and credentials_ref; "" for
     * anonymous), NULL when the image is of no registry */
    const char *image_registry;
    const char *image_credentials_ref;
    /* the tenant's number (never reused): the local executor's jobs run as uid
     * options.uid_range.first + it */
    long long tenant_number;
    const json_t *command; /* array of strings, or NULL when script is set */
    const char *script;
    const json_t *env; /* object of strings */
    /* the storage spaces it mounts, as submitted (storage/jobmount.h; checked again by
     * the backend with jobmount_parse): an array, NULL or empty for none */
    const json_t *mounts;
    int gpus;
    const char *gpu_type;   /* NULL for CPU-only */
    const int *gpu_indexes; /* where aidc assigns GPUs: the indexes to expose */
    size_t ngpu_indexes;
    int cpus, memory_gib, nodes;
    int time_limit_minutes;
    int grace_seconds; /* SIGTERM to SIGKILL, on time limit, cancel and preemption */
    bool preemptible;
    /*
     * An interactive session's run (docs/sessions.md): its command starts an
     * HTTP app on $PORT (env; the backend may choose another and set it) that
     * aidcd's relay must reach - the backend makes it reachable and tells
     * where through app_endpoint.
     */
    bool app;
    /*
     * A whole job array (API.md "Jobs, more"): array_count tasks, indexes 0 ..
     * array_count - 1, at most array_max_parallel at once, as one job of the
     * cluster (Slurm --array, a Kubernetes Indexed Job). Each task sees its
     * index in AIDC_ARRAY_INDEX and SLURM_ARRAY_TASK_ID. A backend that
     * reports per-job status reports a task as "<backend id>_<index>"
     * (Slurm's own notation): the syncer maps it to the task's row. 0: one job.
     */
    int array_count, array_max_parallel;
    /*
     * Slurm's --dependency for jobs of the same Slurm cluster aidc handed it
     * ("afterok:<id>,afternotok:<id>,afterany:<id>"); NULL: none (aidc holds a
     * job until its other dependencies hold). Other backends never get one.
     */
    const char *dependency;
    const char *priority; /* high, normal, low */
    /*
     * An earlier delivery of this run may have reached the cluster (aidcd
     * died before recording it): look for the run before submitting again.
     * The run was admitted at since, so its backend job is no older.
     */
    bool retry;
    time_t since;
};

/* A run's outputs (see backend_ops.outputs). */
struct backend_outputs {
    int work_fd; /* the job's own directory, or -1 */
    int logs_fd; /* where its stdout and stderr are, or -1 */
    char stdout_name[160], stderr_name[160];
    /* files in work_fd are the job's: read as this uid and gid (-1: as aidcd) */
    long long uid, gid;
};

enum backend_state {
    BS_UNKNOWN = 0, /* the backend does not know the job (not delivered, or lost) */
    BS_PENDING,     /* accepted, waiting in the backend */
    BS_RUNNING,
    BS_SUCCEEDED,
    BS_FAILED,
    BS_STOPPED, /* ended because aidc stopped it (cancel, preemption) */
};

struct backend_status {
    int state;         /* enum backend_state */
    time_t started_at; /* 0 when not known */
    time_t finished_at;
    int exit_code;    /* -1 when none (killed by a signal, or not ended) */
    int restarts;     /* times the cluster requeued the job by itself (Slurm's restart_cnt) */
    char reason[128]; /* e.g. "time limit", "killed by signal 9", "executor lost" */
    /* an ended run's use (the local executor's cgroups): CPU seconds, peak memory
     * bytes, -1 each where not measured; has_usage false: nothing measured */
    bool has_usage;
    double cpu_seconds, mem_peak_bytes;
};

/* Where a run's app answers: what aidcd's relay connects to. */
struct backend_endpoint {
    char host[254]; /* a name or a numeric address */
    int port;
};

/* One resource a cluster offers: "gpu:a100", "cpu" or "memory_gib". */
struct backend_resource {
    char name[48];
    long long total;
};

/*
 * Add amount of resource name to out (n used of max entries; a new name takes
 * the next one while there is room). Amounts come from a scheduler's answers:
 * a negative one adds nothing, and the sum stops at the largest value (huge
 * ones overflowed it: found by fuzzing).
 */
void backend_resource_add(struct backend_resource *out, size_t max, int *n, const char *name,
                          long long amount);

/*
 * What one call that changes state in the scheduler (submit, cancel,
 * preempt) did, for the audit trail: the backend fills it, the dispatcher
 * turns it into a "backend.<call>" event in the transaction that records the
 * call's outcome. Secrets never enter it (backend_call_http redacts them as
 * it records). Start it zeroed; backend_call_free releases it.
 */
struct backend_call {
    /*
     * The request that changes the job, as sent (new reference): over HTTP
     * {"method","url","headers","body"}; for the local executor what it was
     * handed ({"action","dir","spec"...}). NULL when nothing was sent.
     */
    json_t *request;
    /* A retried submit: the read that looked for an earlier delivery's job (or NULL). */
    json_t *lookup;
    /* HTTP status of request's answer (lookup's when nothing was sent); 0: none, or not HTTP */
    int status;
    bool adopted; /* the run was there already (an earlier delivery): nothing was sent */
};

/*
 * One node of a cluster and its GPUs of one type (a node with GPUs of two
 * types is reported twice; a node without GPUs once, with gpu_type ""):
 * indexes first .. first + gpus - 1 in the cluster's own numbering (Slurm's
 * IDX, the device plugin's, the local executor's). usable: the backend's
 * inventory counts the node (not drained, cordoned, down or not ready).
 */
struct backend_node {
    const char *name;
    const char *gpu_type;
    int first, gpus;
    bool usable;
};

/* Whether s can name a node: [A-Za-z0-9][A-Za-z0-9._-]{0,252} (host names, Slurm and Kubernetes).
 */
bool backend_node_name_valid(const char *s);

/* Release call's requests (accepts NULL); call is zeroed. */
void backend_call_free(struct backend_call *call);
/*
 * The record of an HTTP request (new reference): headers ("Name: value"
 * lines) as an object, the values of those naming a secret (Authorization,
 * X-SLURM-USER-TOKEN, cookies...) and a user's password in url replaced by
 * "[redacted]"; body (may be NULL) copied.
 */
json_t *backend_call_http(const char *method, const char *url, const char *const *headers,
                          size_t nheaders, const json_t *body);
/*
 * In env, an environment inside a call's record, replace the value of every
 * variable of the job's own env (job_env) with "[redacted]": users pass
 * credentials to jobs there, so the record keeps their names only, as the
 * job.submit event does. What aidc adds (AIDC_JOB_ID...) stays.
 */
void backend_call_hide_env(json_t *env, const json_t *job_env);

struct backend_ops {
    const char *kind;
    /*
     * Check and complete a cluster's options (POST /clusters) in place. On a
     * problem, write a message naming the option into err and return false.
     */
    bool (*check_options)(json_t *options, char *err, size_t errsz);
    /*
     * Start job; backend_id receives the backend's id for it. 0 or an error
     * with err: AIDC_EINVAL when the cluster refuses the job as it is (the
     * job fails at once), anything else is tried again with backoff.
     * submit, cancel and preempt describe what they sent in call (when not
     * NULL; the caller frees it), also when they fail.
     */
    int (*submit)(const struct backend_cluster *c, const struct backend_job *job, char *backend_id,
                  size_t idsz, struct backend_call *call, char *err, size_t errsz);
    /* Stop a job for good (SIGTERM, then SIGKILL after its grace period). */
    int (*cancel)(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                  struct backend_call *call, char *err, size_t errsz);
    /* Stop a job so it can be requeued, after grace_seconds. */
    int (*preempt)(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                   int grace_seconds, struct backend_call *call, char *err, size_t errsz);
    /* What became of one job. 0, or an error when the backend cannot tell now. */
    int (*poll)(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                struct backend_status *out, char *err, size_t errsz);
    /*
     * Where the backend can tell about many jobs in one call (Slurm: one GET
     * /jobs?update_time=), the jobs that changed since `since` (0: all it
     * knows), each passed to report with its backend id and the run key it
     * carries (its name; "" when none). NULL: the syncer polls job by job.
     * 0, or an error when the backend cannot tell now.
     */
    int (*poll_changed)(const struct backend_cluster *c, time_t since,
                        void (*report)(void *arg, const char *backend_id, const char *run_key,
                                       const struct backend_status *status),
                        void *arg, char *err, size_t errsz);
    /* The cluster's resources into out (at most max); returns how many, or -1 with err. */
    int (*inventory)(const struct backend_cluster *c, struct backend_resource *out, size_t max,
                     char *err, size_t errsz);
    /*
     * The last `tail` lines of a job's stdout or stderr (malloc'd into *text,
     * *len bytes, which may include NULs; NUL-terminated). AIDC_ENOTFOUND
     * when there is no such log (yet). NULL when the backend cannot read logs.
     */
    int (*logs)(const struct backend_cluster *c, const char *job_id, bool stderr_stream, int tail,
                char **text, size_t *len);
    /*
     * Where a run's outputs are, for the files API: its work directory and
     * the directory of its logs with their names there (descriptors the
     * caller closes; -1 where there is none). 0, AIDC_ENOTFOUND when the run
     * left nothing (yet). NULL when aidcd cannot read a run's files.
     */
    int (*outputs)(const struct backend_cluster *c, const char *job_id,
                   struct backend_outputs *out);
    /*
     * Where aidc assigns GPU indexes (the local executor): the first index
     * and count of gpu_type in a cluster's options. NULL when the cluster's
     * own scheduler places GPUs.
     */
    bool (*gpu_range)(const json_t *options, const char *gpu_type, int *first, int *count);
    /*
     * The cluster's nodes with their GPUs, each passed to report (borrowed for
     * the call): what a GPU fault may name. 0, or an error with err.
     */
    int (*nodes)(const struct backend_cluster *c,
                 void (*report)(void *arg, const struct backend_node *node), void *arg, char *err,
                 size_t errsz);
    /*
     * Take node out of service (on: Slurm's DRAIN, a Kubernetes cordon) or
     * give it back (off) after GPU faults; reason says why, for the cluster's
     * own record. A node taken out by someone else is left as it is, in both
     * directions; doing what is done already succeeds. Describes what it sent
     * in call. AIDC_EINVAL: the cluster cannot do it as configured (not tried
     * again). NULL where aidc keeps work off faulty GPUs itself (the local
     * executor assigns GPU indexes).
     */
    int (*drain)(const struct backend_cluster *c, const char *node, bool on, const char *reason,
                 struct backend_call *call, char *err, size_t errsz);
    /*
     * The runs of aidc on node now (Slurm: the job's node list; Kubernetes:
     * its pod's nodeName), each passed to report with its backend id and run
     * key: what a GPU fault there interrupts. 0, or an error with err.
     */
    int (*node_jobs)(const struct backend_cluster *c, const char *node,
                     void (*report)(void *arg, const char *backend_id, const char *run_key),
                     void *arg, char *err, size_t errsz);
    /*
     * Where the app of an interactive run (backend_job.app) answers, once
     * it is known: the local executor's forwarded loopback port, the Slurm
     * node the job runs on and the port the job reported, a Kubernetes
     * Service. 0; AIDC_ENOTFOUND while the run has not said (yet); another
     * error with err. NULL: the backend cannot run sessions.
     */
    int (*app_endpoint)(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                        struct backend_endpoint *out, char *err, size_t errsz);
    /* Most nodes one job may span (0: no limit of the backend's own). */
    int max_nodes;
    /*
     * poll_changed answers every job the backend holds, whatever `since`
     * (Kubernetes lists all its Jobs): each round is a full one, so a job
     * missing from it is gone at once, not at the next full poll. Such a
     * backend deletes what it stops: a missing job whose stop was requested
     * (checked again under its row lock) ended as asked.
     */
    bool poll_lists_all;
};

/*
 * The last tail lines of the file name in the directory dir (malloc'd into
 * *text, *len bytes, NUL-terminated; at most 16 MiB read): the logs of
 * backends whose job output is a file aidcd can read. The job may own the
 * directory: name is opened without following a link and without blocking,
 * and only a regular file with one link is read (fsat_open_regular), so a
 * link to aidcd's key or a FIFO in its place reads as no log.
 * AIDC_ENOTFOUND when there is no such file or it is refused.
 */
int backend_tail_file(const char *dir, const char *name, int tail, char **text, size_t *len);

/* The backend for a cluster kind, or NULL when this build has none. */
const struct backend_ops *backend_find(const char *kind);

/* Tests' fault injection: whether AIDC_FAULT names this fault. */
static inline bool backend_fault(const char *name)
{
    const char *f = getenv("AIDC_FAULT");
    return f && strcmp(f, name) == 0;
}

/* Tests (AIDC_FAULT=slow_submit): a cluster slow to take one job - its name says "slow" -
 * and quick with the others: the dispatcher's first try waits 12 s before the submit. */
static inline void backend_fault_slow_submit(const struct backend_job *job)
{
    if (!job->retry && job->name && strncmp(job->name, "slow", 4) == 0 &&
        backend_fault("slow_submit"))
        sleep(12);
}

#endif
