/* jobarray.c - a submission's array and dependencies (see jobarray.h). */
#include "jobarray.h"

#include "../db/jobarrays.h"
#include "../db/jobs.h"
#include "../db/pgarray.h"
#include "../lib/crypto.h"
#include "../lib/err.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

static int unprocessable(struct resp *rs)
{
    rs->err.status = MHD_HTTP_UNPROCESSABLE_CONTENT;
    return api_fail_fields(rs);
}

static bool int_in(const json_t *v, long long lo, long long hi)
{
    return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

static void check_array(struct resp *rs, const json_t *a, struct jobarray *out)
{
    const json_t *count = json_object_get(a, "count"), *mp = json_object_get(a, "max_parallel");
    if (!json_is_object(a) || !json_is_integer(count) ||
        (mp && !json_is_null(mp) && !json_is_integer(mp)) ||
        json_object_size(a) != 1u + (mp != NULL)) {
        api_field_problem(rs, "array", PROBLEM_JOB_ARRAY_SHAPE, NULL);
        return;
    }
    if (!int_in(count, 1, JOBARRAY_MAX_COUNT)) {
        api_field_problem(rs, "array.count", PROBLEM_JOB_ARRAY_COUNT,
                          json_pack("{s:i}", "max", JOBARRAY_MAX_COUNT));
        return;
    }
    out->count = (int)json_integer_value(count);
    out->max_parallel = out->count;
    if (mp && !json_is_null(mp)) {
        if (!int_in(mp, 1, out->count))
            api_field_problem(rs, "array.max_parallel", PROBLEM_JOB_ARRAY_MAX_PARALLEL,
                              json_pack("{s:i}", "count", out->count));
        else
            out->max_parallel = (int)json_integer_value(mp);
    }
}

static const char *condition_of(const json_t *v)
{
    static const char *const conds[] = {"succeeded", "failed", "ended"};
    const char *s = json_string_value(v);
    for (size_t i = 0; s && i < sizeof conds / sizeof conds[0]; i++)
        if (strcmp(s, conds[i]) == 0)
            return conds[i];
    return NULL;
}

static void check_deps(struct resp *rs, const json_t *deps, struct jobarray *out)
{
    if (!json_is_array(deps)) {
        api_field_problem(rs, "depends_on", PROBLEM_JOB_DEPS_SHAPE, NULL);
        return;
    }
    if (json_array_size(deps) > JOBARRAY_MAX_DEPS) {
        api_field_problem(rs, "depends_on", PROBLEM_JOB_DEPS_TOO_MANY,
                          json_pack("{s:i}", "max", JOBARRAY_MAX_DEPS));
        return;
    }
    size_t i;
    const json_t *d;
    json_array_foreach(deps, i, d)
    {
        char field[48];
        snprintf(field, sizeof field, "depends_on[%zu]", i);
        const char *id = json_string_value(json_object_get(d, "job"));
        const char *cond = condition_of(json_object_get(d, "condition"));
        if (!json_is_object(d) || json_object_size(d) != 2 || !id ||
            !json_object_get(d, "condition")) {
            api_field_problem(rs, field, PROBLEM_JOB_DEPS_SHAPE, NULL);
            continue;
        }
        if (!crypto_uuid_valid(id)) {
            snprintf(field, sizeof field, "depends_on[%zu].job", i);
            api_field_problem(rs, field, PROBLEM_V_UUID, NULL);
            continue;
        }
        if (!cond) {
            snprintf(field, sizeof field, "depends_on[%zu].condition", i);
            api_field_problem(rs, field, PROBLEM_JOB_DEPS_CONDITION, NULL);
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k < out->ndeps && !dup; k++)
            dup = strcasecmp(out->dep_ids[k], id) == 0;
        if (dup) {
            api_field_problem(rs, field, PROBLEM_JOB_DEPS_DUPLICATE, json_pack("{s:s}", "id", id));
            continue;
        }
        snprintf(out->dep_ids[out->ndeps], sizeof out->dep_ids[0], "%s", id);
        out->dep_conditions[out->ndeps++] = cond;
    }
}

static void peer_arrays(const struct jobarray *a, struct pgarray *ids, struct pgarray *conds)
{
    for (size_t i = 0; i < a->ndeps; i++) {
        pgarray_add(ids, a->dep_ids[i]);
        if (conds)
            pgarray_add(conds, a->dep_conditions[i]);
    }
}

int api_jobarray_check(struct req *rq, struct resp *rs, const json_t *array,
                       const json_t *depends_on, const char *kind, struct jobarray *out)
{
    memset(out, 0, sizeof *out);
    bool has_array = array && !json_is_null(array),
         has_deps = depends_on && !json_is_null(depends_on);
    if (kind && (has_array || has_deps)) {
        api_field_problem(rs, has_array ? "array" : "depends_on", PROBLEM_JOB_ARRAY_SESSION, NULL);
        return unprocessable(rs);
    }
    if (has_array)
        check_array(rs, array, out);
    if (has_deps)
        check_deps(rs, depends_on, out);
    if (rs->err.nfields)
        return unprocessable(rs);
    if (out->count) {
        long open = 0;
        int e = db_jobarray_open_tasks(rq->db, rq->tenant.id, &open);
        if (e)
            return e;
        if (open + out->count > JOBARRAY_MAX_OPEN) {
            api_field_problem(rs, "array.count", PROBLEM_JOB_ARRAY_TENANT_OPEN,
                              json_pack("{s:s, s:I, s:i, s:i}", "tenant", rq->tenant.slug, "open",
                                        (json_int_t)open, "count", out->count, "max",
                                        JOBARRAY_MAX_OPEN));
            return unprocessable(rs);
        }
    }
    if (!out->ndeps)
        return 0;
    struct pgarray ids = PGARRAY_INIT;
    peer_arrays(out, &ids, NULL);
    long unknown = -1;
    int e = db_jobarray_unknown_peer(rq->db, rq->tenant.id, NULL, pgarray_str(&ids), &unknown);
    pgarray_free(&ids);
    if (e)
        return e;
    if (unknown >= 0 && (size_t)unknown < out->ndeps) {
        char field[48];
        snprintf(field, sizeof field, "depends_on[%ld].job", unknown);
        api_field_problem(
            rs, field, PROBLEM_JOB_DEPS_UNKNOWN,
            json_pack("{s:s, s:s}", "id", out->dep_ids[unknown], "tenant", rq->tenant.slug));
        return unprocessable(rs);
    }
    return 0;
}

int api_jobarray_record(struct req *rq, const struct jobarray *a, const char *id, json_t **job)
{
    if (!a->count && !a->ndeps)
        return 0;
    int e = 0;
    if (a->count)
        e = db_jobarray_make(rq->db, rq->tenant.id, id, a->count, a->max_parallel);
    if (!e && a->ndeps) {
        struct pgarray ids = PGARRAY_INIT, conds = PGARRAY_INIT;
        peer_arrays(a, &ids, &conds);
        e = db_jobarray_depend(rq->db, rq->tenant.id, id, pgarray_str(&ids), pgarray_str(&conds));
        pgarray_free(&ids);
        pgarray_free(&conds);
    }
    json_t *again = NULL;
    if (!e)
        e = db_job_get(rq->db, rq->tenant.id, id, &again);
    if (e)
        return e == AIDC_ENOTFOUND ? AIDC_EINTERNAL : e; /* it was inserted a moment ago */
    json_decref(*job);
    *job = again;
    return 0;
}
