/*
 * jobs.c - submitting, reading, listing and cancelling jobs, their history
 * and their logs. Submitting only inserts the job as queued (with its event
 * and a NOTIFY for the admission worker): nothing here waits on a cluster.
 */
#include "jobs.h"
#include "jobhistory.h"

#include "../backends/backend.h"
#include "../db/clusters.h"
#include "../db/images.h"
#include "../db/jobarrays.h"
#include "../db/jobs.h"
#include "../db/projects.h"
#include "../db/quotas.h"
#include "../images/manifest.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "../server/waker.h"
#include "../storage/jobmount.h"
#include "jobarray.h"
#include "jobspec.h"
#include "paging.h"
#include "templates.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_TAIL_DEFAULT 100
#define LOG_TAIL_MAX     10000

static int unprocessable(struct resp *rs)
{
    rs->err.status = MHD_HTTP_UNPROCESSABLE_CONTENT;
    return api_fail_fields(rs);
}

/*
 * Keep the clusters (ok[]) whose offer col is at least need; with
 * zero_any, 0 there means "no limit". Returns how many are left;
 * *largest receives the largest value among those that were in.
 */
static int narrow(const struct db_cluster_candidates *r, bool *ok, enum db_cluster_offer col,
                  long long need, bool zero_any, long long *largest)
{
    int left = 0;
    *largest = 0;
    for (size_t i = 0; i < r->n; i++) {
        long long v = r->v[i].offer[col];
        if (ok[i] && v > *largest)
            *largest = v;
        ok[i] = ok[i] && (v >= need || (zero_any && v <= 0));
        left += ok[i];
    }
    return left;
}

/* The clusters that could ever run the job, narrowed rule by rule; the
 * first rule that leaves none is the answer (422). *cluster_id receives the
 * asked-for cluster's id. */
static int check_clusters(struct req *rq, struct resp *rs, const struct jobspec *js,
                          char *cluster_id)
{
    struct db_cluster_candidates cands = {0}, *r = &cands;
    int e = db_cluster_candidates(rq->db, js->gpu_type, &cands);
    if (e)
        return e;
    int n = (int)cands.n, left = 0;
    bool *ok = xcalloc((size_t)n + 1, sizeof *ok);
    for (int i = 0; i < n; i++) {
        ok[i] = !js->cluster || strcmp(cands.v[i].name, js->cluster) == 0;
        left += ok[i];
        if (ok[i] && js->cluster)
            snprintf(cluster_id, 37, "%s", cands.v[i].id);
    }
    long long nodes = js->nodes, big = 0;
    if (left == 0 && js->cluster)
        api_field_problem(rs, "cluster", PROBLEM_JOB_CLUSTER_UNKNOWN,
                          json_pack("{s:s}", "cluster", js->cluster));
    else if (left == 0)
        api_field_problem(rs, "cluster", PROBLEM_JOB_NO_CLUSTERS, NULL);
    if (left && js->gpus > 0 &&
        (left = narrow(r, ok, DB_OFFER_GPUS, js->gpus * nodes, false, &big)) == 0) {
        if (big == 0 && js->cluster)
            api_field_problem(
                rs, "gpu_type", PROBLEM_JOB_GPU_TYPE_NOT_ON_CLUSTER,
                json_pack("{s:s, s:s}", "cluster", js->cluster, "gpu_type", js->gpu_type));
        else if (big == 0)
            api_field_problem(rs, "gpu_type", PROBLEM_JOB_GPU_TYPE_NOT_OFFERED,
                              json_pack("{s:s}", "gpu_type", js->gpu_type));
        else
            api_field_problem(rs, "gpus", PROBLEM_JOB_GPUS_EXCEED_CLUSTER,
                              json_pack("{s:I, s:s, s:I}", "requested",
                                        (json_int_t)(js->gpus * nodes), "gpu_type", js->gpu_type,
                                        "largest", (json_int_t)big));
    }
    if (left) {
        int max_nodes = 0;
        left = 0;
        for (int i = 0; i < n; i++) {
            const struct backend_ops *ops = backend_find(cands.v[i].kind);
            int m = ops ? ops->max_nodes : 0;
            if (ok[i] && m > max_nodes)
                max_nodes = m;
            ok[i] = ok[i] && (m == 0 || js->nodes <= m);
            left += ok[i];
        }
        if (!left)
            api_field_problem(rs, "nodes", PROBLEM_JOB_NODES_EXCEED_CLUSTER,
                              json_pack("{s:i}", "max", max_nodes));
    }
    if (left && (left = narrow(r, ok, DB_OFFER_CPUS, js->cpus * nodes, true, &big)) == 0)
        api_field_problem(rs, "cpus", PROBLEM_JOB_CPUS_EXCEED_CLUSTER,
                          json_pack("{s:I, s:I}", "requested", (json_int_t)(js->cpus * nodes),
                                    "largest", (json_int_t)big));
    if (left &&
        (left = narrow(r, ok, DB_OFFER_MEMORY_GIB, js->memory_gib * nodes, true, &big)) == 0)
        api_field_problem(rs, "memory_gib", PROBLEM_JOB_MEMORY_EXCEEDS_CLUSTER,
                          json_pack("{s:I, s:I}", "requested", (json_int_t)(js->memory_gib * nodes),
                                    "largest", (json_int_t)big));
    if (left &&
        (left = narrow(r, ok, DB_OFFER_MAX_MINUTES, js->time_limit_minutes, true, &big)) == 0)
        api_field_problem(rs, "time_limit_minutes", PROBLEM_JOB_TIME_EXCEEDS_CLUSTER,
                          json_pack("{s:I}", "max", (json_int_t)big));
    free(ok);
    db_cluster_candidates_free(&cands);
    return rs->err.nfields ? unprocessable(rs) : 0;
}

/* The problems of one quota's limits: the tenant's or a project's. */
struct limit_problems {
    enum problem gpus, cpus, memory;
    bool tenant; /* a GPU type absent from it is out of reach */
};
static const struct limit_problems tenant_limits = {
    PROBLEM_QUOTA_TENANT_GPUS, PROBLEM_QUOTA_TENANT_CPUS, PROBLEM_QUOTA_TENANT_MEMORY, true};
static const struct limit_problems project_limits = {
    PROBLEM_QUOTA_PROJECT_GPUS, PROBLEM_QUOTA_PROJECT_CPUS, PROBLEM_QUOTA_PROJECT_MEMORY, false};

static json_t *over(double requested, double limit)
{
    return json_pack("{s:o, s:o}", "requested", problem_number(requested), "limit",
                     problem_number(limit));
}

/* Compare the request with a quota's limits. */
static void check_limits(struct resp *rs, const struct db_quota_rows *q, const struct jobspec *js,
                         const struct limit_problems *lp)
{
    char gres[48] = "";
    if (js->gpu_type)
        snprintf(gres, sizeof gres, "gpu:%s", js->gpu_type);
    /* small integers (at most 64 * 16384): exact as doubles */
    double gpus = (double)js->gpus * js->nodes, cpus = (double)js->cpus * js->nodes,
           mem = (double)js->memory_gib * js->nodes;
    bool gpu_listed = false;
    for (size_t i = 0; i < q->n; i++) {
        const char *res = q->v[i].resource;
        double limit = q->v[i].limit;
        if (gres[0] && strcmp(res, gres) == 0) {
            gpu_listed = true;
            if (gpus > limit + 1e-9) {
                json_t *params = over(gpus, limit);
                json_object_set_new(params, "gpu_type", json_string(js->gpu_type));
                api_field_problem(rs, "gpus", lp->gpus, params);
            }
        } else if (strcmp(res, "cpu") == 0 && cpus > limit + 1e-9) {
            api_field_problem(rs, "cpus", lp->cpus, over(cpus, limit));
        } else if (strcmp(res, "memory_gib") == 0 && mem > limit + 1e-9) {
            api_field_problem(rs, "memory_gib", lp->memory, over(mem, limit));
        }
    }
    /* a GPU type absent from a tenant's quota is out of reach; from a
     * project's, the tenant's limit applies */
    if (gres[0] && !gpu_listed && lp->tenant)
        api_field_problem(rs, "gpu_type", PROBLEM_QUOTA_NO_GPU_TYPE,
                          json_pack("{s:s}", "gpu_type", js->gpu_type));
}

static int check_quotas(struct req *rq, struct resp *rs, const struct jobspec *js)
{
    struct db_quota_rows t = {0}, p = {0};
    int e = db_quota_both_get(rq->db, rq->tenant.id, js->project, &t, &p);
    if (!e) {
        check_limits(rs, &t, js, &tenant_limits);
        check_limits(rs, &p, js, &project_limits);
    }
    db_quota_rows_free(&t);
    db_quota_rows_free(&p);
    if (e)
        return e;
    return rs->err.nfields ? unprocessable(rs) : 0;
}

static json_t *submit_audit(const struct jobspec *js)
{
    json_t *cmd = js->command_json ? json_loads(js->command_json, 0, NULL) : NULL;
    json_t *env = json_loads(js->env_json, 0, NULL), *keys = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v) json_array_append_new(keys, json_string(k)); /* not values */
    json_decref(env);
    return json_pack("{s:s, s:s, s:s?, s:o*, s:b, s:i, s:s?, s:i, s:i, s:i, s:i, s:s, s:o, s:s?, "
                     "s:O*}",
                     "project", js->project, "name", js->name, "image", js->image, "command", cmd,
                     "script", js->script != NULL, "gpus", js->gpus, "gpu_type", js->gpu_type,
                     "cpus", js->cpus, "memory_gib", js->memory_gib, "nodes", js->nodes,
                     "time_limit_minutes", js->time_limit_minutes, "priority", js->priority,
                     "env_keys", keys, "cluster", js->cluster, "mounts", js->mounts);
}

/* The image a job names, resolved among those its tenant may use. */
struct resolved {
    char id[37];
    char digest[IMAGE_DIGEST_LEN + 1];
    char *ref; /* pinned: [host/]repository@digest (malloc'd) */
    char tagged[IMAGE_HOST_MAX + IMAGE_REPO_MAX + IMAGE_TAG_MAX + 3]; /* [host/]repository:tag */
};

static enum problem imgref_problem(enum imgref_error e)
{
    switch (e) {
    case IMGREF_E_DIGEST:
        return PROBLEM_JOB_IMAGE_REF_DIGEST;
    case IMGREF_E_HOST:
        return PROBLEM_JOB_IMAGE_REF_HOST;
    case IMGREF_E_TAG:
        return PROBLEM_JOB_IMAGE_REF_TAG;
    case IMGREF_E_REPOSITORY:
        return PROBLEM_JOB_IMAGE_REF_REPOSITORY;
    case IMGREF_OK:
    case IMGREF_E_SHAPE:
        break;
    }
    return PROBLEM_JOB_IMAGE_REF_SHAPE;
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* The images image may name, read (m) or sent ahead (m NULL: db_prefetch). */
static int image_matches(struct req *rq, const struct imgref *ref, struct db_image_matches *m)
{
    const char *tag = ref->tag[0] ? ref->tag : NULL, *digest = ref->digest[0] ? ref->digest : NULL,
               *host = ref->host[0] ? ref->host : NULL;
    if (m)
        return db_image_matches(rq->db, rq->tenant.id, ref->repository, tag, digest, host, m);
    db_image_matches_prefetch(rq->db, rq->tenant.id, ref->repository, tag, digest, host);
    return 0;
}

/* What image names, as ref (parsed: whether imgref_parse took it; ref->error says why
 * not). */
static int resolve_image(struct req *rq, struct resp *rs, const char *image,
                         const struct imgref *ref, bool parsed, struct resolved *out)
{
    if (!parsed) {
        api_field_problem(rs, "image", imgref_problem(ref->error), NULL);
        return api_fail_fields(rs);
    }
    struct db_image_matches m = {0};
    int e = image_matches(rq, ref, &m);
    if (e) {
        db_image_matches_free(&m);
        return e;
    }
    const struct db_image_match *v = m.v;
    int n = (int)m.n, pick = -1, other = -1;
    /* the first live one (the tenant's own before public ones); another live one of the
     * same kind with another digest makes the reference ambiguous */
    for (int i = 0; i < n; i++) {
        if (v[i].gone)
            continue;
        if (pick < 0)
            pick = i;
        else if (other < 0 && v[i].public_image == v[pick].public_image &&
                 strcmp(v[i].digest, v[pick].digest) != 0)
            other = i;
    }
    if (n == 0)
        api_field_problem(rs, "image", PROBLEM_IMAGE_NOT_AVAILABLE,
                          json_pack("{s:s, s:s}", "image", image, "tenant", rq->tenant.slug));
    else if (pick < 0 && !v[0].registry)
        api_field_problem(rs, "image", PROBLEM_JOB_IMAGE_GONE, json_pack("{s:s}", "image", image));
    else if (pick < 0)
        api_field_problem(rs, "image", PROBLEM_JOB_IMAGE_GONE_FROM,
                          json_pack("{s:s, s:s}", "image", image, "registry", v[0].registry));
    else if (other >= 0)
        api_field_problem(rs, "image", PROBLEM_JOB_IMAGE_AMBIGUOUS,
                          json_pack("{s:s, s:s, s:s, s:s}", "image", image, "registry",
                                    or_empty(v[pick].registry), "other_registry",
                                    or_empty(v[other].registry), "host", or_empty(v[pick].host)));
    if (!rs->err.nfields) {
        const struct db_image_match *im = &v[pick];
        snprintf(out->id, sizeof out->id, "%s", im->id);
        snprintf(out->digest, sizeof out->digest, "%s", im->digest);
        snprintf(out->tagged, sizeof out->tagged, "%s%s%s:%s", or_empty(im->host),
                 im->host ? "/" : "", im->repository, im->tag);
        out->ref = im->host ? xasprintf("%s/%s@%s", im->host, im->repository, out->digest)
                            : xasprintf("%s@%s", im->repository, out->digest);
    }
    db_image_matches_free(&m);
    return rs->err.nfields ? unprocessable(rs) : 0;
}

static int storage_unavailable(struct resp *rs, const char *what, const char *rel)
{
    log_error("job mounts: cannot %s %s: %s", what, rel, strerror(errno));
    return api_problem(rs, PROBLEM_JOB_MOUNT_STORAGE_UNAVAILABLE, NULL);
}

/*
 * The spaces the job mounts, on this host (AIDC_STORAGE_ROOT): without own,
 * every dataset must be there (422 naming those that are not: datasets are
 * made through the files API, never by a job); with own (the tenant's, after
 * the insert), the project's space and the submitter's home are made when
 * missing. Opened beneath the root without following a link: a link where a
 * space should be is no space.
 */
static int mount_spaces(struct req *rq, struct resp *rs, const struct jobspec *js,
                        const struct space_owner *own)
{
    struct jobmount m[JOBMOUNT_MAX];
    char err[256];
    int n = js->mounts ? jobmount_parse(js->mounts, rq->tenant.slug, js->project,
                                        rq->actor.username, m, err, sizeof err)
                       : 0;
    if (n < 0) {
        log_error("job mounts: %s", err);
        return AIDC_EINTERNAL;
    }
    bool any = false;
    for (int i = 0; i < n; i++)
        any |= own ? m[i].space.kind != SPACE_DATASET : m[i].space.kind == SPACE_DATASET;
    if (!any)
        return 0;
    int root = jobmount_root_open(rq->cfg->storage_root, own != NULL);
    if (root < 0 && (own || errno != ENOENT))
        return storage_unavailable(rs, "open the storage root", rq->cfg->storage_root);
    int e = 0;
    for (int i = 0; i < n && !e; i++) {
        if ((m[i].space.kind == SPACE_DATASET) == (own != NULL))
            continue;
        int fd = root >= 0 ? space_open(root, &m[i].space, own, own != NULL) : -1;
        if (fd >= 0)
            close(fd);
        else if (!own && (root < 0 || errno == ENOENT || errno == ENOTDIR || errno == ELOOP ||
                          errno == EXDEV)) {
            char field[32];
            snprintf(field, sizeof field, "mounts[%d].name", i);
            api_field_problem(rs, field, PROBLEM_JOB_MOUNT_DATASET_UNKNOWN,
                              json_pack("{s:s, s:s}", "name", m[i].space.name, "tenant",
                                        rq->tenant.slug));
        } else
            e = storage_unavailable(rs, own ? "make" : "open", m[i].rel);
    }
    if (root >= 0)
        close(root);
    return e ? e : rs->err.nfields ? unprocessable(rs) : 0;
}

int api_job_submit_spec(struct req *rq, struct resp *rs, const struct jobspec *js,
                        const char *kind, json_t **job)
{
    *job = NULL;
    if (rq->tenant.suspended) /* platform admins pass the dispatcher; no new work either */
        return api_problem(rs, PROBLEM_JOB_TENANT_SUSPENDED,
                           json_pack("{s:s}", "tenant", rq->tenant.slug));
    char project_id[37] = "", cluster_id[37] = "";
    /* the checks' reads travel with the project's: one round trip for them all */
    struct imgref ref;
    char err[256];
    bool parsed = js->image && imgref_parse(js->image, &ref, err, sizeof err);
    if (parsed) /* one that does not parse is refused below */
        (void)image_matches(rq, &ref, NULL);
    db_cluster_candidates_prefetch(rq->db, js->gpu_type);
    db_quota_both_prefetch(rq->db, rq->tenant.id, js->project);
    int e = db_project_id(rq->db, rq->tenant.id, js->project, project_id);
    if (e == AIDC_ENOTFOUND) {
        api_field_problem(
            rs, "project", PROBLEM_JOB_PROJECT_UNKNOWN,
            json_pack("{s:s, s:s}", "project", js->project, "tenant", rq->tenant.slug));
        e = unprocessable(rs);
    }
    struct resolved img = {0};
    if (!e)
        e = mount_spaces(rq, rs, js, NULL);
    if (!e && js->image)
        e = resolve_image(rq, rs, js->image, &ref, parsed, &img);
    if (!e)
        e = check_clusters(rq, rs, js, cluster_id);
    if (!e)
        e = check_quotas(rq, rs, js);
    struct jobarray ja;
    if (!e)
        e = api_jobarray_check(rq, rs, js->array, js->depends_on, kind, &ja);
    bool whole = false;
    if (!e && ja.count && cluster_id[0])
        e = db_jobarray_whole(rq->db, cluster_id, &whole);
    if (!e && whole) { /* one job array there holds max_parallel tasks at once: they must fit */
        struct jobspec hold = *js;
        hold.gpus *= ja.max_parallel;
        hold.cpus *= ja.max_parallel;
        hold.memory_gib *= ja.max_parallel;
        e = check_clusters(rq, rs, &hold, cluster_id);
        if (!e)
            e = check_quotas(rq, rs, &hold);
    }
    json_t *out = NULL;
    if (!e) {
        struct db_job_new j = {.tenant_id = rq->tenant.id,
                               .project_slug = js->project,
                               .user_id = rq->actor.user_id,
                               .username = rq->actor.username,
                               .name = js->name,
                               .priority = js->priority,
                               .requested_cluster = cluster_id[0] ? cluster_id : NULL,
                               .gpu_type = js->gpu_type,
                               .image = js->image,
                               .command_json = js->command_json,
                               .script = js->script,
                               .env_json = js->env_json,
                               .gpus = js->gpus,
                               .cpus = js->cpus,
                               .memory_gib = js->memory_gib,
                               .nodes = js->nodes,
                               .time_limit_minutes = js->time_limit_minutes,
                               .image_id = img.ref ? img.id : NULL,
                               .image_digest = img.ref ? img.digest : NULL,
                               .image_ref = img.ref,
                               .image_tagged = img.ref ? img.tagged : NULL,
                               .mounts_json = js->mounts_json,
                               .kind = kind};
        long long number = -1;
        e = db_job_insert(rq->db, &j, &out, &number);
        if (!e) /* the admitter, once the job is committed */
            rq->wake |= WAKER_JOBS;
        /* in the job's transaction: spaces that cannot be made leave no job behind */
        struct space_owner own = space_owner_of(rq->cfg->storage_uid_first, number);
        if (!e && number >= 0)
            e = mount_spaces(rq, rs, js, &own);
        else if (!e)
            e = AIDC_EINTERNAL;
        if (!e)
            e = api_jobarray_record(rq, &ja, json_string_value(json_object_get(out, "id")), &out);
        if (e) {
            json_decref(out);
            out = NULL;
        }
    }
    free(img.ref);
    *job = out;
    return e;
}

json_t *api_job_submit_audit(const struct jobspec *js, const json_t *job)
{
    json_t *d = submit_audit(js);
    const char *digest = json_string_value(json_object_get(job, "image_digest"));
    if (digest && js->image) /* what runs is what was audited */
        json_object_set_new(d, "image_digest", json_string(digest));
    if (js->array && !json_is_null(js->array))
        json_object_set_new(d, "array", json_deep_copy(js->array));
    if (js->depends_on && !json_is_null(js->depends_on))
        json_object_set_new(d, "depends_on", json_deep_copy(js->depends_on));
    return d;
}

int api_job_submit(struct req *rq, struct resp *rs)
{
    if (rq->tenant.suspended) /* said before anything about the body */
        return api_problem(rs, PROBLEM_JOB_TENANT_SUSPENDED,
                           json_pack("{s:s}", "tenant", rq->tenant.slug));
    int e = api_template_expand(rq, rs, "batch"); /* {"template":…}: the job it renders */
    if (e)
        return e;
    struct jobspec js;
    if (!jobspec_parse(rq->json, &js, rs)) {
        jobspec_free(&js);
        return rs->err.nfields ? api_fail_fields(rs) : AIDC_EINTERNAL;
    }
    json_t *out = NULL;
    e = api_job_submit_spec(rq, rs, &js, NULL, &out);
    if (!e) {
        const char *id = json_string_value(json_object_get(out, "id"));
        char *loc = xasprintf("/api/v1/tenants/%s/jobs/%s", rq->tenant.slug, id);
        resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
        free(loc);
        resp_audit(rs, "job", id, api_job_submit_audit(&js, out));
        e = resp_json(rs, MHD_HTTP_CREATED, out);
    }
    jobspec_free(&js);
    return e;
}

int api_job_not_found(struct req *rq, struct resp *rs, const char *id)
{
    return api_problem(rs, PROBLEM_JOB_NOT_FOUND,
                       json_pack("{s:s, s:s}", "id", id, "tenant", rq->tenant.slug));
}

/* Tenant admins, platform admins and the job's owner may see all of it. */
bool api_job_sees_all(const struct req *rq, const char *owner)
{
    return (rq->actor.roles & GR_PLATFORM_ADMIN) || rq->tenant.role >= TR_ADMIN ||
           (owner && rq->actor.username && strcmp(owner, rq->actor.username) == 0);
}

/* Others see which variables a job sets, not their values (tokens end up there);
 * nobody sees a session's secret (the app's own lock, api/appsessions.c). */
json_t *api_job_shown(const struct req *rq, json_t *job)
{
    json_t *env = json_object_get(job, "env");
    if (json_object_get(env, APPSESSION_SECRET_ENV))
        json_object_set_new(env, APPSESSION_SECRET_ENV, json_string("(hidden)"));
    if (api_job_sees_all(rq, json_string_value(json_object_get(job, "user"))))
        return job;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(job, "env"), k, v)
        json_object_set_new(json_object_get(job, "env"), k, json_string("(hidden)"));
    return job;
}

int api_job_get(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_job_get(rq->db, rq->tenant.id, id, &out);
    if (e == AIDC_ENOTFOUND)
        return api_job_not_found(rq, rs, id);
    return e ? e : resp_json(rs, MHD_HTTP_OK, api_job_shown(rq, out));
}

int api_job_list(struct req *rq, struct resp *rs)
{
    struct jobhistory h;
    int e = jobhistory_parse(rq, rs, &h);
    if (e)
        return e;
    struct page pg;
    e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    e = db_job_list(rq->db, rq->tenant.id, &h.f, pg.after, pg.after_id, pg.limit, &pg.rows);
    e = paging_finish(rs, &pg, e, NULL);
    if (e)
        return e;
    size_t i;
    json_t *job;
    json_array_foreach(json_object_get(rs->body, "items"), i, job) api_job_shown(rq, job);
    return h.csv ? jobhistory_csv(rs) : 0;
}

int api_job_events(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    struct page pg;
    e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    if (pg.after && (strspn(pg.after, "0123456789") != strlen(pg.after) || strlen(pg.after) > 18)) {
        paging_free(&pg);
        api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
        return api_fail_fields(rs);
    }
    e = db_job_events(rq->db, rq->tenant.id, id, pg.after, pg.limit, &pg.rows);
    /* every job has its "submitted" event: none on the first page, no job */
    if (!e && json_array_size(pg.rows.items) == 0 && !pg.after)
        e = api_job_not_found(rq, rs, id);
    else if (!e)
        e = paging_page(rs, &pg);
    paging_free(&pg);
    return e;
}

int api_job_cancel(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    json_t *job = NULL;
    e = db_job_get(rq->db, rq->tenant.id, id, &job);
    if (e == AIDC_ENOTFOUND)
        return api_job_not_found(rq, rs, id);
    if (e)
        return e;
    bool mine = api_job_sees_all(rq, json_string_value(json_object_get(job, "user")));
    json_decref(job);
    if (!mine)
        return api_problem(rs, PROBLEM_JOB_CANCEL_NOT_OWNER, NULL);
    bool waits = false; /* a task of a whole array the cluster has not shown yet */
    e = db_jobarray_task_waits(rq->db, rq->tenant.id, id, &waits);
    if (e)
        return e;
    if (waits)
        return api_problem(rs, PROBLEM_JOB_ARRAY_TASK_WAITS, json_pack("{s:s}", "id", id));
    char state[16] = "";
    json_t *out = NULL;
    e = db_job_cancel(rq->db, rq->tenant.id, id, rq->actor.username, state, sizeof state, &out);
    if (e == AIDC_ENOTFOUND)
        return api_job_not_found(rq, rs, id);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_JOB_ENDED,
                           json_pack("{s:s, s:s}", "id", id, "state", state));
    if (e)
        return e;
    resp_audit(rs, "job", id, json_pack("{s:s}", "state_before", state));
    return resp_json(rs, MHD_HTTP_ACCEPTED, api_job_shown(rq, out));
}

static int tail_param(struct req *rq, struct resp *rs, int *tail)
{
    const char *t = req_query(rq, "tail");
    *tail = LOG_TAIL_DEFAULT;
    if (!t)
        return 0;
    char *end;
    long v = strtol(t, &end, 10);
    if (!*t || *end || !(t[0] >= '0' && t[0] <= '9') || v < 1 || v > LOG_TAIL_MAX) {
        api_field_problem(rs, "tail", PROBLEM_V_LIMIT, json_pack("{s:i}", "max", LOG_TAIL_MAX));
        return api_fail_fields(rs);
    }
    *tail = (int)v;
    return 0;
}

int api_job_placed(struct req *rq, struct resp *rs, const char *id, struct db_job_placement *pl,
                   json_t **options, const struct backend_ops **ops)
{
    int e = db_job_placement(rq->db, rq->tenant.id, id, pl);
    if (e == AIDC_ENOTFOUND)
        return api_job_not_found(rq, rs, id);
    if (e)
        return e;
    *ops = pl->cluster_id[0] ? backend_find(pl->kind) : NULL;
    *options = pl->options_json ? json_loads(pl->options_json, 0, NULL) : NULL;
    free(pl->options_json);
    pl->options_json = NULL;
    return 0;
}

int api_job_logs(struct req *rq, struct resp *rs)
{
    const char *id, *stream = req_query(rq, "stream");
    int tail, e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    if (stream && strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
        api_field_problem(rs, "stream", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "stdout, stderr"));
        return api_fail_fields(rs);
    }
    e = tail_param(rq, rs, &tail);
    if (e)
        return e;
    struct db_job_placement pl;
    const struct backend_ops *ops;
    json_t *options;
    e = api_job_placed(rq, rs, id, &pl, &options, &ops);
    if (e)
        return e;
    if (!api_job_sees_all(rq, pl.user))
        e = api_problem(rs, PROBLEM_JOB_LOGS_NOT_OWNER, NULL);
    else if (!pl.cluster_id[0]) {
        /* queued, or back in the queue after a preemption: nothing written by this
         * run yet - an empty log, like a placed job that has not started (a page
         * following a running job must not see it vanish when it is preempted) */
        json_decref(options);
        rs->status = MHD_HTTP_OK;
        rs->raw = xstrdup("");
        rs->raw_len = 0;
        rs->content_type = "text/plain; charset=utf-8";
        return 0;
    } else if (!ops || !ops->logs)
        e = api_problem(rs, PROBLEM_JOB_LOGS_UNAVAILABLE, json_pack("{s:s}", "kind", pl.kind));
    if (e) {
        json_decref(options);
        return e;
    }
    struct backend_cluster cl = {.id = pl.cluster_id,
                                 .kind = pl.kind,
                                 .options = options,
                                 .data_dir = rq->cfg->data_dir,
                                 .self_exe = rq->cfg->self_exe};
    char *text = NULL;
    size_t len = 0;
    e = ops->logs(&cl, pl.run_key, stream && strcmp(stream, "stderr") == 0, tail, &text, &len);
    json_decref(options);
    if (e == AIDC_ENOTFOUND) {
        text = xstrdup(""); /* not started yet: nothing written so far */
        len = 0;
        e = 0;
    }
    if (e)
        return e;
    rs->status = MHD_HTTP_OK;
    rs->raw = text;
    rs->raw_len = len;
    rs->content_type = "text/plain; charset=utf-8";
    return 0;
}
