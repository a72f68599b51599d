/*
 * jobhistory.h - the job list as a history, like sacct: its query (states,
 * time windows, name, exit code, GPU type, cluster, user, project; sort and
 * order) parsed without the database, and a page of it as CSV. Kept apart
 * from api/jobs.c so that the parser is fuzzed (tests/fuzz/fuzz_router.c)
 * like every other query parser.
 */
#ifndef AIDC_JOBHISTORY_H
#define AIDC_JOBHISTORY_H

#include "../db/jobs.h"
#include "../server/request.h"

#include <stdbool.h>

#define JOBHISTORY_NAME_MAX 200 /* a job's name is 1..200 characters */

struct jobhistory {
    struct db_job_filter f; /* points into the buffers below and into rq's query */
    char states[128];       /* {queued,running} */
    char name_like[2 * JOBHISTORY_NAME_MAX + 3];
    char exit_code[16];
    bool csv; /* ?format=csv or Accept: text/csv */
};

/*
 * rq's list query into h. 0, or every problem found filled into rs
 * (api_fail_fields). rq must outlive h.
 */
int jobhistory_parse(const struct req *rq, struct resp *rs, struct jobhistory *h);
/*
 * The name filter as an ILIKE pattern into out (n bytes): '*' matches any
 * run of characters; without one, the text matches anywhere in the name.
 * %, _ and \ match themselves. False when it does not fit.
 */
bool jobhistory_name_pattern(const char *name, char *out, size_t n);
/*
 * Turn rs's JSON page of jobs into CSV (one row per job, the next page's
 * cursor, if there is one, in X-Next-Cursor).
 */
int jobhistory_csv(struct resp *rs);

#endif
