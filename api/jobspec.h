/*
 * jobspec.h - the body of a job submission, checked field by field (every
 * problem a 400 field error, all reported at once) and completed with the
 * defaults. Whether the job is possible at all (GPU type offered, quota
 * limits, cluster maximums: 422) is api/jobs.c's business.
 */
#ifndef AIDC_JOBSPEC_H
#define AIDC_JOBSPEC_H

#include "../server/request.h"

#include <jansson.h>
#include <stdbool.h>

#define JOB_MAX_ENV        256    /* env entries */
#define JOB_MAX_ENV_NAME   128    /* characters of a variable name */
#define JOB_MAX_ENV_VALUE  32768  /* bytes of a value */
#define JOB_MAX_ARGS       1024   /* command items */
#define JOB_MAX_ARG        32768  /* bytes of one item */
#define JOB_MAX_SCRIPT     262144 /* bytes of a script */
#define JOB_MAX_GPUS       64
#define JOB_MAX_CPUS       1024
#define JOB_MAX_MEMORY_GIB 16384
#define JOB_MAX_NODES      64
#define JOB_MAX_MINUTES    525600 /* a year */

struct jobspec {
    const char *project, *name, *image, *script, *gpu_type, *priority, *cluster;
    char *command_json;   /* compact JSON array, or NULL */
    char *env_json;       /* compact JSON object */
    const json_t *mounts; /* the storage spaces it mounts (borrowed; NULL: none) */
    char *mounts_json;    /* compact JSON array, as given ("[]" for none) */
    /* "array" and "depends_on" as given (borrowed; NULL or null: none), checked by
     * api/jobarray.c with the other 422s */
    const json_t *array, *depends_on;
    int gpus, cpus, memory_gib, nodes, time_limit_minutes;
};

/* Check body into spec (strings borrowed from body). False: field errors are in rs. */
bool jobspec_parse(const json_t *body, struct jobspec *spec, struct resp *rs);
void jobspec_free(struct jobspec *spec);
/*
 * Check a submission's "mounts" (storage/jobmount.h; NULL or null: none),
 * each problem a field error in rs ("mounts[1].name"); true when it is valid.
 */
bool jobspec_check_mounts(const json_t *mounts, struct resp *rs);
/* A job state name. */
bool jobspec_state_valid(const char *s);

#endif
