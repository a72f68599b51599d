/*
 * jobarray.h - a submission's "array" and "depends_on" (API.md "Jobs,
 * more"; docs/design.md "Job arrays and dependencies"): checked with the
 * other 422s before the job is inserted, recorded right after it in the
 * same transaction.
 */
#ifndef AIDC_API_JOBARRAY_H
#define AIDC_API_JOBARRAY_H

#include "../server/request.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JOBARRAY_MAX_COUNT 10000 /* tasks of one array */
/* tasks of a tenant's arrays not ended, all arrays together: each is a row the
 * admission pass may read; a member's request makes up to 10,000 of them */
#define JOBARRAY_MAX_OPEN 20000
#define JOBARRAY_MAX_DEPS 32 /* jobs one job depends on */

struct jobarray {
    int count;        /* 0: not an array */
    int max_parallel; /* 1..count (default: count) */
    size_t ndeps;
    char dep_ids[JOBARRAY_MAX_DEPS][37];
    const char *dep_conditions[JOBARRAY_MAX_DEPS]; /* static strings */
};

/*
 * Check array and depends_on (borrowed; NULL or null: none) of a job of
 * kind (NULL: batch; a session may have neither) into *out: every problem
 * a field error, answered as one 422, as is a peer that is no job of the
 * tenant (another tenant's job is as unknown as one that never was).
 */
int api_jobarray_check(struct req *rq, struct resp *rs, const json_t *array,
                       const json_t *depends_on, const char *kind, struct jobarray *out);
/*
 * Record a's tasks and dependencies for the job id just inserted (its
 * transaction), and read the job again into *job (replacing it) when either
 * was recorded: its reason and state may have changed (a dependency that
 * can no longer hold cancels it at once).
 */
int api_jobarray_record(struct req *rq, const struct jobarray *a, const char *id, json_t **job);

#endif
