/* notify.c - the caller's notification preferences and deliveries (see notify.h). */
#include "notify.h"

#include "../db/notify.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/urlguard.h"
#include "../server/validate.h"
#include "paging.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const events[] = {"job.ended",     "job.failed", "job.preempted",
                                     "job.idle",      "session.ready", "budget.80",
                                     "budget.100",    "allocation.expiring"};
#define NEVENTS (sizeof events / sizeof events[0])
#define ALLOWED                                                                                    \
    "job.ended, job.failed, job.preempted, job.idle, session.ready, budget.80, budget.100, "                 \
    "allocation.expiring"

static const struct vfield prefs_fields[] = {
    {"email", V_BOOL, 0, 0, 0, NULL, 0},
    {"events", V_STRING_ARRAY, 0, 0, 0, NULL, 0},
    {"projects", V_STRING_ARRAY, 0, 0, 0, NULL, 0},
    {"webhooks", V_ANY, 0, 0, 0, NULL, 0},
    {"updated_at", V_ANY, V_NULLABLE, 0, 0, NULL, 0}, /* as GET gave it: ignored */
};
static const struct vfield hook_fields[] = {
    {"url", V_STRING, V_REQUIRED, 1, URLGUARD_MAX_URL, NULL, 0},
    {"secret", V_STRING, V_NULLABLE, 0, 0, NULL, 0},
    {"events", V_STRING_ARRAY, 0, 0, 0, NULL, 0},
    {"secret_set", V_BOOL, 0, 0, 0, NULL, 0}, /* as GET gave it: ignored */
};

static int bound_refused(const struct req *rq, struct resp *rs)
{
    return rq->actor.token_tenant[0] ? api_problem(rs, PROBLEM_NOTIFY_TOKEN_BOUND, NULL) : 0;
}

static bool known_event(const char *e)
{
    for (size_t i = 0; i < NEVENTS; i++)
        if (strcmp(e, events[i]) == 0)
            return true;
    return false;
}

/* Whether a string array has v among its first n items. */
static bool seen_before(const json_t *a, size_t n, const char *v)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(json_string_value(json_array_get(a, i)), v) == 0)
            return true;
    return false;
}

/* events (an array of strings, or NULL: none) under field; false after a field error. */
static bool check_events(const json_t *a, const char *field, struct resp *rs)
{
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v)
    {
        const char *e = json_string_value(v);
        if (!known_event(e)) {
            api_field_problem(rs, field, PROBLEM_NOTIFY_EVENT,
                              json_pack("{s:s, s:s}", "event", e, "allowed", ALLOWED));
            return false;
        }
        if (seen_before(a, i, e)) {
            api_field_problem(rs, field, PROBLEM_NOTIFY_DUPLICATE, json_pack("{s:s}", "value", e));
            return false;
        }
    }
    return true;
}

static bool check_projects(const json_t *a, struct resp *rs)
{
    if (json_array_size(a) > NOTIFY_MAX_PROJECTS) {
        api_field_problem(rs, "projects", PROBLEM_NOTIFY_TOO_MANY,
                          json_pack("{s:i}", "max", NOTIFY_MAX_PROJECTS));
        return false;
    }
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v)
    {
        const char *p = json_string_value(v);
        if (!validate_slug(p)) {
            api_field_problem(rs, "projects", PROBLEM_NOTIFY_PROJECT,
                              json_pack("{s:s}", "project", p));
            return false;
        }
        if (seen_before(a, i, p)) {
            api_field_problem(rs, "projects", PROBLEM_NOTIFY_DUPLICATE,
                              json_pack("{s:s}", "value", p));
            return false;
        }
    }
    return true;
}

static bool secret_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < NOTIFY_SECRET_MIN || n > NOTIFY_SECRET_MAX)
        return false;
    for (; *s; s++)
        if (*s < 0x21 || *s > 0x7e)
            return false;
    return true;
}

/*
 * One webhook into its stored form {url, events[, secret]} appended to out
 * (events defaults to the top-level list). false after a field error.
 */
static bool check_hook(const struct req *rq, const json_t *h, const json_t *top_events, json_t *out,
                       struct resp *rs)
{
    if (!json_is_object(h)) {
        api_field_problem(rs, "webhooks", PROBLEM_V_TYPE_OBJECT, NULL);
        return false;
    }
    if (!validate_object(h, hook_fields, sizeof hook_fields / sizeof hook_fields[0], rs))
        return false;
    const char *url = vstr(h, "url"), *secret = vstr(h, "secret");
    struct urlguard_target t;
    char why[160];
    if (urlguard_check(url, rq->cfg->webhook_allow_loopback, &t, why, sizeof why) != 0) {
        api_field_problem(rs, "webhooks", PROBLEM_NOTIFY_URL, json_pack("{s:s}", "reason", why));
        return false;
    }
    if (secret && !secret_ok(secret)) {
        api_field_problem(
            rs, "webhooks", PROBLEM_NOTIFY_SECRET,
            json_pack("{s:i, s:i}", "min", NOTIFY_SECRET_MIN, "max", NOTIFY_SECRET_MAX));
        return false;
    }
    const json_t *ev = json_object_get(h, "events");
    if (!ev)
        ev = top_events;
    if (!check_events(ev, "webhooks", rs))
        return false;
    size_t i;
    const json_t *o;
    json_array_foreach(out, i,
                       o) if (strcmp(json_string_value(json_object_get(o, "url")), url) == 0)
    {
        api_field_problem(rs, "webhooks", PROBLEM_NOTIFY_DUPLICATE,
                          json_pack("{s:s}", "value", url));
        return false;
    }
    json_t *w = json_pack("{s:s, s:O}", "url", url, "events", ev);
    if (secret)
        json_object_set_new(w, "secret", json_string(secret));
    json_array_append_new(out, w);
    return true;
}

static bool check_hooks(const struct req *rq, const json_t *hooks, const json_t *top_events,
                        json_t *out, struct resp *rs)
{
    if (!hooks)
        return true;
    if (!json_is_array(hooks)) {
        api_field_problem(rs, "webhooks", PROBLEM_V_TYPE_OBJECT, NULL);
        return false;
    }
    if (json_array_size(hooks) > NOTIFY_MAX_WEBHOOKS) {
        api_field_problem(rs, "webhooks", PROBLEM_NOTIFY_TOO_MANY,
                          json_pack("{s:i}", "max", NOTIFY_MAX_WEBHOOKS));
        return false;
    }
    size_t i;
    const json_t *h;
    json_array_foreach(hooks, i, h) if (!check_hook(rq, h, top_events, out, rs)) return false;
    return true;
}

int api_notify_get(struct req *rq, struct resp *rs)
{
    int refused = bound_refused(rq, rs);
    if (refused)
        return refused;
    json_t *p = NULL;
    int e = db_notify_prefs_get(rq->db, rq->actor.user_id, &p);
    if (e)
        return e;
    return resp_json(rs, MHD_HTTP_OK, p);
}

int api_notify_put(struct req *rq, struct resp *rs)
{
    int refused = bound_refused(rq, rs);
    if (refused)
        return refused;
    const json_t *b = rq->json;
    if (!validate_object(b, prefs_fields, sizeof prefs_fields / sizeof prefs_fields[0], rs))
        return api_fail_fields(rs);
    json_t *none = json_array();
    const json_t *ev = json_object_get(b, "events"), *pr = json_object_get(b, "projects");
    ev = ev ? ev : none;
    pr = pr ? pr : none;
    json_t *hooks = json_array();
    int e = 0;
    if (!check_events(ev, "events", rs) || !check_projects(pr, rs) ||
        !check_hooks(rq, json_object_get(b, "webhooks"), ev, hooks, rs))
        e = api_fail_fields(rs);
    char *unsigned_url = NULL;
    if (!e)
        e = db_notify_prefs_unsigned(rq->db, rq->actor.user_id, hooks, &unsigned_url);
    if (!e && unsigned_url) {
        api_field_problem(rs, "webhooks", PROBLEM_NOTIFY_SECRET_REQUIRED,
                          json_pack("{s:s}", "url", unsigned_url));
        e = api_fail_fields(rs);
    }
    free(unsigned_url);
    json_t *out = NULL;
    if (!e)
        e = db_notify_prefs_put(rq->db, rq->actor.user_id,
                                json_is_true(json_object_get(b, "email")), ev, pr, hooks, &out);
    json_decref(hooks);
    json_decref(none);
    if (e)
        return e;
    /* what was set, without the webhooks' URLs (some carry a token in their path) */
    resp_audit(rs, "user", rq->actor.user_id,
               json_pack("{s:O, s:O, s:O, s:I}", "email", json_object_get(out, "email"), "events",
                         json_object_get(out, "events"), "projects",
                         json_object_get(out, "projects"), "webhooks",
                         (json_int_t)json_array_size(json_object_get(out, "webhooks"))));
    return resp_json(rs, MHD_HTTP_OK, out);
}

int api_notify_deliveries(struct req *rq, struct resp *rs)
{
    int refused = bound_refused(rq, rs);
    if (refused)
        return refused;
    struct page pg;
    int e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    e = db_notify_deliveries(rq->db, rq->actor.user_id, pg.after, pg.after_id, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}
