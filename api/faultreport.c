/* faultreport.c - reading a GPU fault report (see faultreport.h). */
#include "faultreport.h"

#include "../backends/backend.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "auditfilter.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ALERT_NAME 200

static int fail(struct faultreport *out, enum faultreport_error why, char *field, size_t fsz,
                char *msg, size_t msz, int status, const char *f, const char *m)
{
    out->error = why;
    snprintf(field, fsz, "%s", f);
    snprintf(msg, msz, "%s", m);
    return status;
}

/* s cut to at most max characters (UTF-8, invalid bytes replaced), malloc'd. */
static char *text_cut(const char *s, size_t max)
{
    struct sbuf b = SBUF_INIT;
    sbuf_utf8(&b, s);
    const char *t = sbuf_str(&b);
    size_t at = 0, chars = 0;
    while (t[at] && chars < max) {
        size_t k = sbuf_utf8_seq((const unsigned char *)t + at);
        at += k ? k : 1;
        chars++;
    }
    char *out = xstrndup(t, at);
    sbuf_free(&b);
    for (char *p = out; *p; p++) /* one line: it ends up in Slurm's node reason */
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    return out;
}

/* "0".."1023" without sign, spaces or leading zeros; -1 when it is not such an index. */
static int gpu_index(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 4 || (n > 1 && s[0] == '0'))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return -1;
    long v = strtol(s, NULL, 10);
    return v <= FAULTREPORT_MAX_GPU_INDEX ? (int)v : -1;
}

static bool is_source(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64 || !islower((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '_' &&
            s[i] != '.' && s[i] != '-')
            return false;
    return true;
}

static struct faultreport_item *add(struct faultreport *r)
{
    r->items = xreallocarray(r->items, r->n + 1, sizeof *r->items);
    struct faultreport_item *it = &r->items[r->n++];
    memset(it, 0, sizeof *it);
    it->gpu = -1;
    return it;
}

/* ---- the operator's form ------------------------------------------------------------- */

static int parse_operator(const json_t *body, struct faultreport *out, char *field, size_t fsz,
                          char *msg, size_t msz)
{
    static const char *const known[] = {"node", "gpus", "reason", "source"};
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= strcmp(key, known[i]) == 0;
        if (!ok)
            return fail(out, FAULTREPORT_E_UNKNOWN_FIELD, field, fsz, msg, msz, FAULTREPORT_BAD,
                        key, "unknown field");
    }
    const char *node = vstr(body, "node"), *reason = vstr(body, "reason");
    if (!node || !backend_node_name_valid(node))
        return fail(out, FAULTREPORT_E_NODE, field, fsz, msg, msz, FAULTREPORT_BAD, "node",
                    "must be a node name (letters, digits, '.', '_', '-'; at most 253)");
    if (!reason || validate_utf8_len(reason) < 1 ||
        validate_utf8_len(reason) > FAULTREPORT_MAX_REASON)
        return fail(out, FAULTREPORT_E_REASON, field, fsz, msg, msz, FAULTREPORT_BAD, "reason",
                    "must be a string of 1 to 500 characters");
    json_t *src = json_object_get(body, "source");
    if (src && (!json_is_string(src) || !is_source(json_string_value(src))))
        return fail(out, FAULTREPORT_E_SOURCE, field, fsz, msg, msz, FAULTREPORT_BAD, "source",
                    "must match ^[a-z][a-z0-9_.-]{0,63}$");
    out->source = xstrdup(src ? json_string_value(src) : "operator");
    json_t *gpus = json_object_get(body, "gpus");
    bool all = !gpus || (json_is_string(gpus) && strcmp(json_string_value(gpus), "all") == 0);
    if (!all && (!json_is_array(gpus) || json_array_size(gpus) < 1))
        return fail(out, FAULTREPORT_E_GPUS, field, fsz, msg, msz, FAULTREPORT_BAD, "gpus",
                    "must be \"all\" or an array of GPU indexes");
    if (!all && json_array_size(gpus) > FAULTREPORT_MAX_GPUS)
        return fail(out, FAULTREPORT_E_GPUS_TOO_MANY, field, fsz, msg, msz, FAULTREPORT_TOO_MANY,
                    "gpus", "at most 64 GPUs per request");
    size_t n = all ? 1 : json_array_size(gpus);
    for (size_t i = 0; i < n; i++) {
        json_t *g = all ? NULL : json_array_get(gpus, i);
        if (g && (!json_is_integer(g) || json_integer_value(g) < 0 ||
                  json_integer_value(g) > FAULTREPORT_MAX_GPU_INDEX))
            return fail(out, FAULTREPORT_E_GPUS_ITEM, field, fsz, msg, msz, FAULTREPORT_BAD, "gpus",
                        "every item must be an integer from 0 to 1023");
        struct faultreport_item *it = add(out);
        it->firing = true;
        it->node = xstrdup(node);
        it->gpu = g ? (int)json_integer_value(g) : -1;
        it->reason = text_cut(reason, FAULTREPORT_MAX_REASON);
    }
    return FAULTREPORT_OK;
}

/* ---- Alertmanager's webhook ---------------------------------------------------------- */

/* The node an alert's labels name (malloc'd), or NULL. */
static char *alert_node(const json_t *labels)
{
    static const char *const keys[] = {"node", "Hostname", "instance"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *v = vstr(labels, keys[k]);
        if (!v || !*v)
            continue;
        size_t n = strlen(v);
        /* instance is host:port (the exporter's), and an IPv6 host is [..]:port */
        const char *colon = k == 2 ? strrchr(v, ':') : NULL;
        if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1))
            n = (size_t)(colon - v);
        char *node = xstrndup(v, n);
        if (backend_node_name_valid(node))
            return node;
        free(node);
    }
    return NULL;
}

static void read_alert(const json_t *a, struct faultreport_item *it)
{
    const json_t *labels = json_object_get(a, "labels"), *notes = json_object_get(a, "annotations");
    const char *status = vstr(a, "status"), *name = vstr(labels, "alertname");
    if (!json_is_object(a) || !json_is_object(labels)) {
        it->error = xstrdup("an alert is an object with labels");
        it->why = FAULTREPORT_E_ALERT_SHAPE;
        return;
    }
    if (!status || (strcmp(status, "firing") != 0 && strcmp(status, "resolved") != 0)) {
        it->error = xstrdup("status must be firing or resolved");
        it->why = FAULTREPORT_E_ALERT_STATUS;
        return;
    }
    it->firing = strcmp(status, "firing") == 0;
    it->node = alert_node(labels);
    if (!it->node) {
        it->error = xstrdup("no node label (node, Hostname or instance) naming a node");
        it->why = FAULTREPORT_E_ALERT_NODE;
        return;
    }
    const char *gpu = vstr(labels, "gpu");
    it->gpu = gpu ? gpu_index(gpu) : -1;
    if (gpu && it->gpu < 0) {
        it->error = xstrdup("label gpu must be a GPU index from 0 to 1023");
        it->why = FAULTREPORT_E_ALERT_GPU;
        return;
    }
    const char *about = vstr(notes, "summary");
    if (!about)
        about = vstr(notes, "description");
    char *reason =
        xasprintf("%s%s%s", name ? name : "alert", about ? ": " : "", about ? about : "");
    it->reason = text_cut(reason, FAULTREPORT_MAX_REASON);
    free(reason);
    it->alert = name ? text_cut(name, MAX_ALERT_NAME) : NULL;
    time_t t = 0;
    const char *starts = vstr(a, "startsAt");
    if (starts && auditfilter_time(starts, &t, NULL) && t > 0) {
        struct tm tm;
        char buf[32];
        gmtime_r(&t, &tm);
        strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
        it->since = xstrdup(buf);
    }
}

static int parse_webhook(const json_t *body, struct faultreport *out, char *field, size_t fsz,
                         char *msg, size_t msz)
{
    out->webhook = true;
    out->source = xstrdup("alertmanager");
    json_t *version = json_object_get(body, "version");
    if (version && !(json_is_string(version) && strcmp(json_string_value(version), "4") == 0))
        return fail(out, FAULTREPORT_E_VERSION, field, fsz, msg, msz, FAULTREPORT_BAD, "version",
                    "only Alertmanager's webhook payload version \"4\" is read");
    const json_t *alerts = json_object_get(body, "alerts");
    if (!json_is_array(alerts) || json_array_size(alerts) < 1)
        return fail(out, FAULTREPORT_E_ALERTS, field, fsz, msg, msz, FAULTREPORT_BAD, "alerts",
                    "must be a non-empty array of alerts");
    if (json_array_size(alerts) > FAULTREPORT_MAX_ALERTS)
        return fail(out, FAULTREPORT_E_ALERTS_TOO_MANY, field, fsz, msg, msz, FAULTREPORT_TOO_MANY,
                    "alerts",
                    "at most 256 alerts per request (set max_alerts in Alertmanager's "
                    "webhook_config)");
    size_t i;
    json_t *a;
    json_array_foreach(alerts, i, a) read_alert(a, add(out));
    return FAULTREPORT_OK;
}

int faultreport_parse(const json_t *body, struct faultreport *out, char *field, size_t fsz,
                      char *msg, size_t msz)
{
    memset(out, 0, sizeof *out);
    field[0] = msg[0] = '\0';
    if (!json_is_object(body))
        return fail(out, FAULTREPORT_E_BODY, field, fsz, msg, msz, FAULTREPORT_BAD, "body",
                    "must be a JSON object");
    if (json_object_get(body, "alerts"))
        return parse_webhook(body, out, field, fsz, msg, msz);
    return parse_operator(body, out, field, fsz, msg, msz);
}

void faultreport_free(struct faultreport *r)
{
    for (size_t i = 0; r && i < r->n; i++) {
        free(r->items[i].node);
        free(r->items[i].reason);
        free(r->items[i].alert);
        free(r->items[i].since);
        free(r->items[i].error);
    }
    if (r) {
        free(r->items);
        free(r->source);
        memset(r, 0, sizeof *r);
    }
}
