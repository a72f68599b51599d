/*
 * appsessions.c - interactive sessions (docs/sessions.md): a Jupyter notebook
 * or a web app of the user's, run as a job of kind "interactive" (quotas,
 * admission, preemption, metering and audit are the job's) and served by the
 * sessions relay (server/relay.c) on an origin of its own.
 *
 * What the job is given: PORT (where the app listens; a backend may choose
 * another), AIDC_SESSION_BASE_URL (the path the app is served under: every
 * link and redirect of the app must carry it), AIDC_SESSION_ORIGIN (the
 * relay's public origin) and AIDC_SESSION_TOKEN (the app's own secret, the
 * second lock behind aidc's: the relay adds it to every request it passes,
 * so the browser never holds it).
 */
#include "appsessions.h"

#include "../db/appsessions.h"
#include "../db/jobs.h"
#include "../db/projects.h"
#include "../db/quotas.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "jobs.h"
#include "jobspec.h"
#include "paging.h"
#include "templates.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IDLE_DEFAULT 60
#define IDLE_MAX     10080
#define TIME_DEFAULT 240
#define APP_PORT     "8888"
#define LINK_TTL     60

/* The Jupyter Notebook of a session: the image's, or the host's (Debian's jupyter-notebook). */
static const char jupyter_script[] =
    "#!/bin/sh\n"
    "# aidc: the Jupyter Notebook of an interactive session (docs/sessions.md)\n"
    "export JUPYTER_TOKEN=\"$" APPSESSION_SECRET_ENV "\"\n"
    "unset " APPSESSION_SECRET_ENV "\n"
    "d=\"${TMPDIR:-/tmp}/.aidc-jupyter\"\n"
    "mkdir -p \"$d\"\n"
    "export JUPYTER_RUNTIME_DIR=\"$d/runtime\" JUPYTER_DATA_DIR=\"$d/data\" "
    "JUPYTER_CONFIG_DIR=\"$d/config\" IPYTHONDIR=\"$d/ipython\" PYDEVD_DISABLE_FILE_VALIDATION=1\n"
    "dir=\"${AIDC_PROJECT_DIR:-${AIDC_HOME_DIR:-$PWD}}\"\n"
    "if command -v jupyter-notebook >/dev/null 2>&1; then set -- jupyter-notebook\n"
    "elif command -v jupyter >/dev/null 2>&1; then set -- jupyter notebook\n"
    "else echo 'aidc: no Jupyter here (neither jupyter-notebook nor jupyter on PATH)' >&2; "
    "exit 127; fi\n"
    "exec \"$@\" --no-browser --ip=0.0.0.0 --port=\"$PORT\" --port-retries=0 --allow-root \\\n"
    "  --notebook-dir=\"$dir\" --NotebookApp.base_url=\"$AIDC_SESSION_BASE_URL\" \\\n"
    "  --NotebookApp.allow_remote_access=True "
    "--NotebookApp.allow_origin=\"$AIDC_SESSION_ORIGIN\"\n";

static int not_found(struct req *rq, struct resp *rs, const char *id)
{
    return api_problem(rs, PROBLEM_APPSESSION_NOT_FOUND,
                       json_pack("{s:s, s:s}", "id", id, "tenant", rq->tenant.slug));
}

/* json_string of a malloc'd string, freeing it. */
static json_t *own_string(char *s)
{
    json_t *v = json_string(s);
    free(s);
    return v;
}

/* s->obj completed for the caller: its url and its job as the caller may see it. */
static int decorate(struct req *rq, json_t *obj)
{
    const char *id = json_string_value(json_object_get(obj, "id"));
    const char *job_id = json_string_value(json_object_get(obj, "job"));
    if (!id || !job_id)
        return AIDC_EINTERNAL;
    json_t *job = NULL;
    int e = db_job_get(rq->db, rq->tenant.id, job_id, &job);
    if (e)
        return e;
    json_object_set_new(obj, "job", api_job_shown(rq, job));
    json_object_set_new(obj, "url", own_string(config_session_url(rq->cfg, id)));
    return 0;
}

/* ---- create ----------------------------------------------------------------------- */

static const struct vfield session_fields[] = {
    {"app", V_STRING, V_NULLABLE, 0, 0, NULL, 0},
    {"idle_minutes", V_INT, 0, 1, IDLE_MAX, NULL, 0},
};

/*
 * The job a session body asks for: the body less the session's own fields,
 * with aidc's command for a notebook and the defaults of a session. NULL with
 * field errors in rs.
 */
static json_t *job_body(const json_t *body, const char *app, struct resp *rs)
{
    json_t *jb = json_deep_copy(body);
    if (!jb)
        return NULL;
    json_object_del(jb, "app");
    json_object_del(jb, "idle_minutes");
    if (json_object_get(jb, "script"))
        api_field_problem(rs, "script", PROBLEM_V_UNKNOWN_FIELD, NULL);
    if (json_object_get(jb, "nodes"))
        api_field_problem(rs, "nodes", PROBLEM_V_UNKNOWN_FIELD, NULL);
    const json_t *cmd = json_object_get(jb, "command");
    bool has_cmd = cmd && !json_is_null(cmd);
    if (strcmp(app, "web") == 0 && !has_cmd)
        api_field_problem(rs, "command", PROBLEM_APPSESSION_COMMAND_REQUIRED, NULL);
    if (strcmp(app, "jupyter") == 0 && has_cmd)
        api_field_problem(rs, "command", PROBLEM_APPSESSION_COMMAND_FORBIDDEN, NULL);
    if (strcmp(app, "jupyter") == 0) {
        json_object_del(jb, "command");
        json_object_set_new(jb, "script", json_string(jupyter_script));
    }
    if (!json_object_get(jb, "name"))
        json_object_set_new(jb, "name",
                            json_string(strcmp(app, "jupyter") == 0 ? "notebook" : "web app"));
    if (!json_object_get(jb, "time_limit_minutes"))
        json_object_set_new(jb, "time_limit_minutes", json_integer(TIME_DEFAULT));
    if (!json_object_get(jb, "mounts")) /* the project's space and the user's home */
        json_object_set_new(jb, "mounts",
                            json_pack("[{s:s}, {s:s}]", "space", "project", "space", "home"));
    return jb;
}

/* The job's env with what the app is given (js->env_json replaced). */
static int session_env(struct req *rq, struct jobspec *js, const char *id, const char *secret)
{
    json_t *env = json_loads(js->env_json, 0, NULL);
    if (!env)
        return AIDC_EINTERNAL;
    char *origin = config_session_origin(rq->cfg, id);
    json_object_set_new(env, "PORT", json_string(APP_PORT));
    json_object_set_new(env, "AIDC_SESSION_ID", json_string(id));
    json_object_set_new(env, "AIDC_SESSION_BASE_URL",
                        own_string(xasprintf(CONFIG_SESSION_PATH "%s/", id)));
    json_object_set_new(env, "AIDC_SESSION_ORIGIN", own_string(origin));
    json_object_set_new(env, APPSESSION_SECRET_ENV, json_string(secret));
    char *dump = json_dumps(env, JSON_COMPACT);
    json_decref(env);
    if (!dump)
        return AIDC_EINTERNAL;
    free(js->env_json);
    js->env_json = dump;
    return 0;
}

int api_appsession_create(struct req *rq, struct resp *rs)
{
    if (rq->cfg->sessions_port < 0)
        return api_problem(rs, PROBLEM_APPSESSION_RELAY_OFF, NULL);
    if (rq->tenant.suspended)
        return api_problem(rs, PROBLEM_JOB_TENANT_SUSPENDED,
                           json_pack("{s:s}", "tenant", rq->tenant.slug));
    int te = api_template_expand(rq, rs, "interactive"); /* {"template":…}: what it renders */
    if (te)
        return te;
    json_t *own = json_object();
    json_object_set(own, "app", json_object_get(rq->json, "app"));
    if (json_object_get(rq->json, "idle_minutes"))
        json_object_set(own, "idle_minutes", json_object_get(rq->json, "idle_minutes"));
    validate_object(own, session_fields, sizeof session_fields / sizeof session_fields[0], rs);
    json_decref(own);
    const char *app = vstr(rq->json, "app") ? vstr(rq->json, "app") : "jupyter";
    if (strcmp(app, "jupyter") != 0 && strcmp(app, "web") != 0) {
        api_field_problem(rs, "app", PROBLEM_APPSESSION_APP_UNKNOWN, NULL);
        app = "jupyter"; /* the rest is still checked */
    }
    json_t *iv = json_object_get(rq->json, "idle_minutes");
    int idle = json_is_integer(iv) ? (int)json_integer_value(iv) : IDLE_DEFAULT;
    json_t *jb = job_body(rq->json, app, rs);
    if (!jb)
        return AIDC_EINTERNAL;
    struct jobspec js;
    bool ok = jobspec_parse(jb, &js, rs);
    if (!ok || rs->err.nfields) {
        jobspec_free(&js);
        json_decref(jb);
        return rs->err.nfields ? api_fail_fields(rs) : AIDC_EINTERNAL;
    }
    char id[37], secret[49];
    unsigned char raw[24];
    crypto_uuid_new(id);
    int e = crypto_random(raw, sizeof raw) == 0 ? 0 : AIDC_EINTERNAL;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    if (!e)
        e = session_env(rq, &js, id, secret);
    json_t *job = NULL;
    if (!e)
        e = api_job_submit_spec(rq, rs, &js, "interactive", &job);
    struct db_appsession s = {0};
    const char *job_id = json_string_value(json_object_get(job, "id"));
    if (!e)
        e = job_id ? db_appsession_insert(rq->db, id, rq->tenant.id, job_id, rq->actor.user_id, app,
                                          idle, secret, &s)
                   : AIDC_EINTERNAL;
    if (!e)
        e = decorate(rq, s.obj);
    if (!e) {
        char *loc = xasprintf("/api/v1/tenants/%s/sessions/%s", rq->tenant.slug, id);
        resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
        free(loc);
        json_t *d = api_job_submit_audit(&js, job);
        json_object_set_new(d, "app", json_string(app));
        json_object_set_new(d, "idle_minutes", json_integer(idle));
        json_object_set_new(d, "job", json_string(job_id));
        resp_audit(rs, "app_session", id, d);
        e = resp_json(rs, MHD_HTTP_CREATED, s.obj);
        s.obj = NULL;
    }
    db_appsession_free(&s);
    json_decref(job);
    jobspec_free(&js);
    json_decref(jb);
    return e;
}

/* ---- read --------------------------------------------------------------------------- */

/* Session {id} of the request's tenant into *s; 0, or its 404 (or 400) in rs. */
static int load(struct req *rq, struct resp *rs, const char **id, struct db_appsession *s)
{
    memset(s, 0, sizeof *s); /* freed by the caller whatever happens */
    int e = validate_id_param(rq, rs, id);
    if (e)
        return e;
    e = db_appsession_get(rq->db, rq->tenant.id, *id, s);
    if (e == AIDC_ENOTFOUND)
        return not_found(rq, rs, *id);
    return e;
}

/* The caller's own session (or it administers the tenant or the platform). */
static bool may_change(const struct req *rq, const struct db_appsession *s)
{
    return (rq->actor.roles & GR_PLATFORM_ADMIN) || rq->tenant.role >= TR_ADMIN ||
           (s->user_id[0] && strcmp(s->user_id, rq->actor.user_id) == 0);
}

int api_appsession_get(struct req *rq, struct resp *rs)
{
    const char *id;
    struct db_appsession s;
    int e = load(rq, rs, &id, &s);
    if (!e)
        e = decorate(rq, s.obj);
    if (!e) {
        e = resp_json(rs, MHD_HTTP_OK, s.obj);
        s.obj = NULL;
    }
    db_appsession_free(&s);
    return e;
}

static bool state_valid(const char *s)
{
    return strcmp(s, "queued") == 0 || strcmp(s, "starting") == 0 || strcmp(s, "ready") == 0 ||
           strcmp(s, "ended") == 0;
}

int api_appsession_list(struct req *rq, struct resp *rs)
{
    const char *state = req_query(rq, "state"), *user = req_query(rq, "user");
    if (state && !state_valid(state))
        api_field_problem(rs, "state", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "queued, starting, ready, ended"));
    if (user && !validate_username(user))
        api_field_problem(rs, "user", PROBLEM_V_USER, NULL);
    if (rs->err.nfields)
        return api_fail_fields(rs);
    struct page pg;
    int e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    e = db_appsession_list(rq->db, rq->tenant.id, state, user, pg.after, pg.after_id, pg.limit,
                           &pg.rows);
    e = paging_finish(rs, &pg, e, NULL);
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(rs->body, "items"), i, item)
    {
        if (!e)
            e = decorate(rq, item);
    }
    return e;
}

/* ---- change ------------------------------------------------------------------------- */

/* A session just changed: audited with details (taken), answered as it is now with status. */
static int answer_changed(struct req *rq, struct resp *rs, const char *id, int status,
                          json_t *details)
{
    struct db_appsession s;
    int e = db_appsession_get(rq->db, rq->tenant.id, id, &s);
    if (!e)
        e = decorate(rq, s.obj);
    if (!e) {
        resp_audit(rs, "app_session", id, details);
        details = NULL;
        e = resp_json(rs, status, s.obj);
        s.obj = NULL;
    }
    json_decref(details);
    db_appsession_free(&s);
    return e;
}

int api_appsession_stop(struct req *rq, struct resp *rs)
{
    const char *id;
    struct db_appsession s;
    int e = load(rq, rs, &id, &s);
    if (!e && !may_change(rq, &s))
        e = api_problem(rs, PROBLEM_JOB_CANCEL_NOT_OWNER, NULL);
    if (!e && strcmp(s.state, "ended") == 0)
        e = api_problem(rs, PROBLEM_APPSESSION_ENDED, json_pack("{s:s}", "id", id));
    char before[16] = "";
    json_t *job = NULL;
    if (!e) {
        e = db_job_cancel(rq->db, rq->tenant.id, s.job_id, rq->actor.username, before,
                          sizeof before, &job);
        json_decref(job);
        if (e == AIDC_ECONFLICT) /* its job ended meanwhile */
            e = api_problem(rs, PROBLEM_APPSESSION_ENDED, json_pack("{s:s}", "id", id));
    }
    if (!e) {
        char *why = xasprintf("stopped by %s", rq->actor.username);
        e = db_appsession_end(rq->db, id, why);
        free(why);
    }
    json_t *audit = e ? NULL : json_pack("{s:s, s:s}", "job", s.job_id, "state_before", before);
    db_appsession_free(&s);
    return e ? e : answer_changed(rq, rs, id, MHD_HTTP_ACCEPTED, audit);
}

/* The month's GPU-hours of the tenant (project_id NULL) or project, and their limit (-1: none). */
static int hours_of(struct req *rq, const char *project_id, double *used, double *limit)
{
    *used = 0;
    *limit = -1;
    struct db_quota_rows q = {0};
    int e = project_id ? db_quota_project_get(rq->db, project_id, &q)
                       : db_quota_tenant_get(rq->db, rq->tenant.id, &q);
    for (size_t i = 0; !e && i < q.n; i++)
        if (strcmp(q.v[i].resource, "gpu_hours_month") == 0)
            *limit = q.v[i].limit;
    db_quota_rows_free(&q);
    struct db_quota_uses u = {0};
    if (!e && *limit >= 0)
        e = db_quota_usage(rq->db, rq->tenant.id, project_id, &u);
    for (size_t i = 0; !e && i < u.n; i++)
        if (strcmp(u.v[i].resource, "gpu_hours_month") == 0)
            *used = u.v[i].used;
    db_quota_uses_free(&u);
    return e;
}

/*
 * More time is more GPU-hours: what the session would still hold until its
 * new end (its GPUs times the time left) must fit in what the tenant's and
 * the project's gpu_hours_month quotas leave this month (0, or the 422 in rs).
 */
static int check_hours(struct req *rq, struct resp *rs, const json_t *job, int minutes)
{
    const json_t *res = json_object_get(job, "resources");
    double gpus = (double)json_integer_value(json_object_get(res, "gpus")) *
                  (double)json_integer_value(json_object_get(res, "nodes"));
    const char *slug = json_string_value(json_object_get(job, "project"));
    if (gpus <= 0 || !slug)
        return 0;
    double total = (double)json_integer_value(json_object_get(res, "time_limit_minutes")) + minutes;
    const char *started = json_string_value(json_object_get(job, "started_at"));
    struct tm tm = {0};
    if (started && strptime(started, "%Y-%m-%dT%H:%M:%S", &tm)) {
        double ran = difftime(time(NULL), timegm(&tm)) / 60.0;
        total -= ran > 0 ? ran : 0;
    }
    double requested = gpus * (total > 0 ? total : 0) / 60.0, used, limit;
    char project_id[37] = "";
    int e = hours_of(rq, NULL, &used, &limit);
    if (!e && limit >= 0 && used + requested > limit)
        return api_problem(rs, PROBLEM_APPSESSION_EXTEND_TENANT_HOURS,
                           json_pack("{s:o, s:o, s:o, s:s}", "requested", problem_number(requested),
                                     "used", problem_number(used), "limit", problem_number(limit),
                                     "tenant", rq->tenant.slug));
    if (!e)
        e = db_project_id(rq->db, rq->tenant.id, slug, project_id);
    if (!e)
        e = hours_of(rq, project_id, &used, &limit);
    if (!e && limit >= 0 && used + requested > limit)
        return api_problem(rs, PROBLEM_APPSESSION_EXTEND_PROJECT_HOURS,
                           json_pack("{s:o, s:o, s:o, s:s}", "requested", problem_number(requested),
                                     "used", problem_number(used), "limit", problem_number(limit),
                                     "project", slug));
    return e;
}

static const struct vfield extend_fields[] = {
    {"minutes", V_INT, V_REQUIRED, 1, 10080, NULL, 0},
};

int api_appsession_extend(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, extend_fields, 1, rs))
        return api_fail_fields(rs);
    int minutes = (int)json_integer_value(json_object_get(rq->json, "minutes"));
    const char *id;
    struct db_appsession s;
    int e = load(rq, rs, &id, &s);
    if (!e && !may_change(rq, &s))
        e = api_problem(rs, PROBLEM_JOB_CANCEL_NOT_OWNER, NULL);
    json_t *job = NULL;
    if (!e && strcmp(s.state, "ended") != 0) {
        e = db_job_get(rq->db, rq->tenant.id, s.job_id, &job);
        if (!e)
            e = check_hours(rq, rs, job, minutes);
        json_decref(job);
    }
    int limit = 0;
    if (!e) {
        e = db_appsession_extend(rq->db, rq->tenant.id, id, minutes, rq->cfg->sessions_max_minutes,
                                 &limit);
        if (e == AIDC_ENOTFOUND)
            e = api_problem(rs, PROBLEM_APPSESSION_ENDED, json_pack("{s:s}", "id", id));
        else if (e == AIDC_ECONFLICT)
            e = api_problem(rs, PROBLEM_APPSESSION_EXTEND_LIMIT,
                            json_pack("{s:i, s:i, s:i}", "limit_minutes",
                                      rq->cfg->sessions_max_minutes, "minutes", limit, "requested",
                                      minutes));
    }
    json_t *audit = e ? NULL
                      : json_pack("{s:s, s:i, s:i}", "job", s.job_id, "minutes", minutes,
                                  "time_limit_minutes", limit + minutes);
    db_appsession_free(&s);
    return e ? e : answer_changed(rq, rs, id, MHD_HTTP_OK, audit);
}

/* ---- entry -------------------------------------------------------------------------- */

int api_appsession_open(struct req *rq, struct resp *rs)
{
    const char *id;
    struct db_appsession s;
    int e = load(rq, rs, &id, &s);
    bool owner = !e && s.user_id[0] && strcmp(s.user_id, rq->actor.user_id) == 0;
    /* only its owner enters; a platform admin too, and the entry says so (audit) */
    if (!e && !owner && !(rq->actor.roles & GR_PLATFORM_ADMIN))
        e = api_problem(rs, PROBLEM_APPSESSION_NOT_OWNER, NULL);
    if (!e && strcmp(s.state, "ended") == 0)
        e = api_problem(rs, PROBLEM_APPSESSION_ENDED, json_pack("{s:s}", "id", id));
    unsigned char raw[32];
    char key[64], hash[65];
    if (!e && crypto_random(raw, sizeof raw) != 0)
        e = AIDC_EINTERNAL;
    if (!e) {
        crypto_b64url_encode(raw, sizeof raw, key, sizeof key);
        crypto_sha256_hex(key, strlen(key), hash);
        e = db_appsession_link(rq->db, id, rq->actor.user_id, hash, LINK_TTL);
    }
    if (!e) {
        char *origin = config_session_origin(rq->cfg, id);
        char *url = xasprintf("%s" CONFIG_SESSION_OPEN_PATH "?key=%s", origin, key);
        free(origin);
        resp_audit(rs, "app_session", id,
                   json_pack("{s:s, s:b}", "job", s.job_id, "as_platform_admin", !owner));
        e = resp_json(rs, MHD_HTTP_OK,
                      json_pack("{s:o, s:i}", "url", own_string(url), "expires_in", LINK_TTL));
    }
    db_appsession_free(&s);
    return e;
}
