/* capacity.c - the cluster view (see capacity.h). */
#include "capacity.h"

#include "../db/efficiency.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../sched/admestimate.h"

#include <microhttpd.h>
#include <string.h>
#include <time.h>

/* the job sizes the view estimates a start for */
static const int sizes[] = {1, 8};

/* An epoch as RFC 3339 UTC, or null (0: never, as far as the running jobs tell). */
static json_t *when(double t)
{
    if (t <= 0)
        return json_null();
    time_t s = (time_t)t;
    struct tm tm;
    char buf[32];
    if (!gmtime_r(&s, &tm) || strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return json_null();
    return json_string(buf);
}

static json_t *type_item(const struct db_capacity *c, const struct db_capacity_type *t)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nends; i++)
        n += strcmp(c->ends[i].gpu_type, t->gpu_type) == 0;
    double *at = xcalloc(n + 1, sizeof *at), *amount = xcalloc(n + 1, sizeof *amount);
    n = 0;
    for (size_t i = 0; i < c->nends; i++)
        if (strcmp(c->ends[i].gpu_type, t->gpu_type) == 0) {
            at[n] = c->ends[i].at;
            amount[n++] = (double)c->ends[i].gpus;
        }
    long long free_now = t->total > t->in_use ? t->total - t->in_use : 0;
    json_t *starts = json_object();
    for (size_t k = 0; starts && k < sizeof sizes / sizeof *sizes; k++) {
        char key[8];
        snprintf(key, sizeof key, "%d", sizes[k]);
        /* a job larger than the type's whole inventory never starts */
        double s = sizes[k] > t->total
                       ? 0
                       : admestimate_first_start((double)free_now, at, amount, n,
                                                 (double)t->queued_gpus, sizes[k], c->now);
        json_object_set_new(starts, key, when(s));
    }
    free(at);
    free(amount);
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:o*}", "gpu_type", t->gpu_type, "total",
                     (json_int_t)t->total, "in_use", (json_int_t)t->in_use, "free",
                     (json_int_t)free_now, "queued_gpus", (json_int_t)t->queued_gpus,
                     "earliest_start", starts);
}

int api_capacity_get(struct req *rq, struct resp *rs)
{
    struct db_capacity c;
    int e = db_capacity_read(rq->db, &c);
    if (e)
        return e;
    json_t *items = json_array();
    for (size_t i = 0; items && i < c.ntypes; i++) {
        json_t *it = type_item(&c, &c.types[i]);
        if (!it || json_array_append_new(items, it) != 0) {
            json_decref(items);
            items = NULL;
        }
    }
    db_capacity_free(&c);
    if (!items)
        return AIDC_EINTERNAL;
    return resp_json(rs, MHD_HTTP_OK, json_pack("{s:o}", "items", items));
}

int api_capacity_nodes(struct req *rq, struct resp *rs)
{
    json_t *items = NULL;
    int e = db_capacity_nodes(rq->db, &items);
    if (e)
        return e;
    return resp_json(rs, MHD_HTTP_OK, json_pack("{s:o}", "items", items));
}
