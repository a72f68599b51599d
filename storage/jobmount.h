/*
 * jobmount.h - the storage spaces a job mounts (docs/storage.md, "Mounts in
 * jobs"): the "mounts" of a submission checked, each turned into its space
 * and where the job sees it, and the environment that says where.
 *
 *   {"space":"project"}                  the job's own project's space
 *   {"space":"home"}                     its submitter's home in the job's tenant
 *   {"space":"dataset","name":N}         the tenant's dataset N, always read-only
 *
 * A job reaches only its own tenant's spaces, and of those only its own
 * project's and its submitter's home, by construction: a kind names no
 * tenant, no project and no user, so there is nothing to ask for that is not
 * the job's. In a container (the local sandbox, Kubernetes) they are at
 * fixed paths: /data/project, /home/<user>, /data/datasets/<name>. Where a
 * job sees the host's file system (Slurm, an unconfined local job) they are
 * at <root>/<tenant>/<kind dir>/<name>, root being the storage root on that
 * host. AIDC_PROJECT_DIR, AIDC_HOME_DIR and AIDC_DATASETS_DIR say where.
 *
 * Depends on libc, jansson and storage/space.h only: the API checks a
 * submission with it, the backends check again what they are handed.
 */
#ifndef AIDC_STORAGE_JOBMOUNT_H
#define AIDC_STORAGE_JOBMOUNT_H

#include "space.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JOBMOUNT_MAX 8                 /* mounts of one job */
#define JOBMOUNT_PROJECT_PATH "/data/project"
#define JOBMOUNT_DATASETS_PATH "/data/datasets"
#define JOBMOUNT_HOMES_PATH "/home"
#define JOBMOUNT_REL_MAX (3 * SPACE_NAME_MAX + 16)

/* One mount of a job. */
struct jobmount {
    struct space space;            /* the job's tenant; its project, its user or the dataset */
    bool read_only;                /* datasets always */
    char target[JOBMOUNT_REL_MAX]; /* where a container shows it */
    char rel[JOBMOUNT_REL_MAX];    /* <tenant>/<kind dir>/<name> beneath the storage root */
};

/* What is wrong with a "mounts" array (jobmount_check). */
enum jobmount_problem {
    JOBMOUNT_NOT_ARRAY,        /* mounts: not an array (null means none) */
    JOBMOUNT_TOO_MANY,         /* mounts: more than JOBMOUNT_MAX items */
    JOBMOUNT_NOT_OBJECT,       /* an item is not an object */
    JOBMOUNT_UNKNOWN_KEY,      /* an item has a member other than space, name, read_only */
    JOBMOUNT_SPACE_MISSING,    /* an item has no space */
    JOBMOUNT_SPACE_INVALID,    /* space is not "project", "home" or "dataset" */
    JOBMOUNT_NAME_MISSING,     /* a dataset without its name */
    JOBMOUNT_NAME_INVALID,     /* a dataset name not of space_dataset_name_valid's form */
    JOBMOUNT_NAME_NOT_ALLOWED, /* a name on a project or home mount: those are the job's own */
    JOBMOUNT_READ_ONLY_TYPE,   /* read_only is not true or false */
    JOBMOUNT_DATASET_WRITABLE, /* read_only false on a dataset */
    JOBMOUNT_DUPLICATE,        /* the same space as an earlier item */
};

/*
 * Called by jobmount_check for each problem: index the item (-1: the array
 * itself), key the member it concerns (NULL: the item; for
 * JOBMOUNT_UNKNOWN_KEY the unknown member), other the earlier item a
 * duplicate repeats (else -1).
 */
typedef void (*jobmount_report_fn)(void *arg, enum jobmount_problem p, long index,
                                   const char *key, long other);

/* Check a submission's mounts (NULL or null: none), reporting every problem; true when none. */
bool jobmount_check(const json_t *mounts, jobmount_report_fn report, void *arg);

/* A problem in English, for a backend's reason ("mounts[2].name: ..."). */
const char *jobmount_problem_text(enum jobmount_problem p);

/* "project", "home", "dataset": the API's name of a kind. */
const char *jobmount_kind_name(enum space_kind k);

/*
 * The mounts of a job of tenant, project and user (the array stored with it:
 * NULL or empty means none) into out[JOBMOUNT_MAX]. How many, or -1 with err
 * when the array is not one jobmount_check accepts or a name is not a
 * space's (the backends check again what they are handed).
 */
int jobmount_parse(const json_t *mounts, const char *tenant, const char *project,
                   const char *user, struct jobmount *out, char *err, size_t errsz);

/*
 * Into env (an object), where the mounts are: AIDC_PROJECT_DIR,
 * AIDC_HOME_DIR, AIDC_DATASETS_DIR (the folder of the datasets, when one is
 * mounted); at their fixed paths when root is NULL, else beneath root (the
 * storage root where the job runs).
 */
void jobmount_env(const struct jobmount *m, size_t n, const char *root, json_t *env);

/*
 * For a job that works in the host's file system itself, where nothing is
 * mounted (Slurm, an unconfined local job): jobmount_env beneath root into
 * env, and the project's space's path into cwd when it is mounted (cwd may
 * be NULL). Nothing makes a project or home read-only there: false with err
 * when one asks to be.
 */
bool jobmount_host(const struct jobmount *m, size_t n, const char *root, json_t *env, char *cwd,
                   size_t cwdsz, char *err, size_t errsz);

/*
 * The storage root (an operator's path: links followed) as a directory
 * descriptor; with create, made first when missing (0711: the tenants' own
 * folders keep them apart). -1 with errno.
 */
int jobmount_root_open(const char *root, bool create);

#endif
