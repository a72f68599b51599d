/* slurmnode.c - Slurm nodes for GPU faults (see slurmnode.h). */
#include "slurmnode.h"

#include "../lib/gputype.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "command.h"
#include "slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define COMMAND_TIMEOUT_S 30
#define MAX_REASON        200

bool slurmnode_check_options(const json_t *o, char *err, size_t errsz)
{
    static const char *const keys[] = {"drain_command", "resume_command"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const json_t *tpl = json_object_get(o, keys[i]);
        char why[160];
        if (tpl && !command_template_valid(tpl, why, sizeof why)) {
            snprintf(err, errsz, "options.%s %s", keys[i], why);
            return false;
        }
    }
    return true;
}

/* ---- hostlists ------------------------------------------------------------------------- */

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return n > 0;
}

/*
 * Whether the number written in s (k digits) is in one of the ranges of a
 * bracket, r .. re ("1-3,07,10-12"): a bound written with a leading zero
 * fixes the width; otherwise the number has none.
 */
static bool in_ranges(const char *r, const char *re, const char *s, size_t k)
{
    /* bounds have at most 9 digits: a longer number is in no range (and would overflow v) */
    if (k > 9)
        return false;
    long long v = 0;
    for (size_t i = 0; i < k; i++)
        v = v * 10 + (s[i] - '0');
    while (r < re) {
        const char *comma = memchr(r, ',', (size_t)(re - r));
        const char *end = comma ? comma : re;
        const char *dash = memchr(r, '-', (size_t)(end - r));
        const char *lo = r, *hi = dash ? dash + 1 : r;
        size_t nlo = (size_t)((dash ? dash : end) - lo), nhi = (size_t)(end - hi);
        if (!digits(lo, nlo) || !digits(hi, nhi) || nlo > 9 || nhi > 9)
            return false;
        long long a = strtoll(lo, NULL, 10), b = strtoll(hi, NULL, 10);
        bool padded = nlo > 1 && lo[0] == '0';
        bool width_ok = padded ? k == nlo : (k == 1 || s[0] != '0');
        if (width_ok && v >= a && v <= b)
            return true;
        r = comma ? comma + 1 : re;
    }
    return false;
}

/* Whether s is exactly the hosts of pattern p .. pe: literal text and [ranges]. */
static bool match(const char *p, const char *pe, const char *s)
{
    while (p < pe) {
        if (*p != '[') {
            if (*p != *s)
                return false;
            p++;
            s++;
            continue;
        }
        const char *close = memchr(p, ']', (size_t)(pe - p));
        if (!close)
            return false;
        size_t run = 0;
        while (isdigit((unsigned char)s[run]))
            run++;
        /* the number may be followed by literal digits of the pattern: try every split */
        for (size_t k = run; k >= 1; k--)
            if (in_ranges(p + 1, close, s, k) && match(close + 1, pe, s + k))
                return true;
        return false;
    }
    return *s == '\0';
}

bool slurmnode_hostlist_has(const char *hostlist, const char *node)
{
    if (!hostlist || !node || !*node)
        return false;
    const char *item = hostlist;
    int depth = 0;
    for (const char *p = hostlist;; p++) {
        if (*p == '[')
            depth++;
        else if (*p == ']')
            depth--;
        if (depth < 0 || depth > 1)
            return false;
        if ((*p == ',' && depth == 0) || *p == '\0') {
            if (p > item && match(item, p, node))
                return true;
            if (*p == '\0')
                return false;
            item = p + 1;
        }
    }
}

/* ---- nodes and jobs ------------------------------------------------------------------- */

void slurmnode_each(const json_t *nodes, void (*report)(void *arg, const struct backend_node *n),
                    void *arg)
{
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        const char *name = json_string_value(json_object_get(node, "name"));
        if (!name || !*name)
            continue;
        struct backend_node bn = {.name = name, .gpu_type = "", .usable = slurm_node_usable(node)};
        const char *gres = json_string_value(json_object_get(node, "gres"));
        char *copy = xstrdup(gres ? gres : ""), *save = NULL;
        int at = 0, reported = 0;
        for (char *g = strtok_r(copy, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
            char *paren = strchr(g, '(');
            if (paren)
                *paren = '\0';
            /* gpu:<type>:<count>; an untyped "gpu:8" still numbers its GPUs */
            if (strncmp(g, "gpu:", 4) != 0)
                continue;
            char *colon = strrchr(g + 4, ':'), *end = NULL;
            long count = strtol(colon ? colon + 1 : g + 4, &end, 10);
            if (!end || *end || count <= 0 || count > 1024)
                continue;
            if (colon)
                *colon = '\0';
            if (colon && gputype_valid(g + 4)) {
                bn.gpu_type = g + 4;
                bn.first = at;
                bn.gpus = (int)count;
                report(arg, &bn);
                reported++;
            }
            at += (int)count;
        }
        if (!reported) { /* a node without typed GPUs is still a node a fault may name */
            bn.gpu_type = "";
            bn.first = bn.gpus = 0;
            report(arg, &bn);
        }
        free(copy);
    }
}

void slurmnode_jobs_on(const json_t *jobs, const char *node, const char *user,
                       void (*report)(void *arg, const char *backend_id, const char *run_key),
                       void *arg)
{
    static const char *const holding[] = {"RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING",
                                          "STOPPED", "RESIZING",  "SIGNALING",  NULL};
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        const char *state = json_string_value(json_object_get(j, "job_state"));
        const char *owner = json_string_value(json_object_get(j, "user_name"));
        const char *name = json_string_value(json_object_get(j, "name"));
        bool holds = false;
        for (size_t k = 0; state && holding[k]; k++)
            holds |= strcmp(state, holding[k]) == 0;
        if (!holds || (owner && user && strcmp(owner, user) != 0) ||
            !slurmnode_hostlist_has(json_string_value(json_object_get(j, "nodes")), node))
            continue;
        char id[24];
        snprintf(id, sizeof id, "%lld",
                 (long long)json_integer_value(json_object_get(j, "job_id")));
        report(arg, id, name ? name : "");
    }
}

/* ---- drain ---------------------------------------------------------------------------- */

/* What slurmrestd says of node now: drained (DRAIN state or flag) and whether by aidc. */
static int node_state(const struct slurmrest_target *t, const char *node, bool *drained, bool *ours,
                      json_t **seen, char *err, size_t errsz)
{
    char path[300];
    snprintf(path, sizeof path, "node/%s", node);
    struct slurmrest_answer a;
    json_t *sent = NULL;
    int e = slurmrest_call_record(t, "GET", path, NULL, &a, &sent, err, errsz);
    json_decref(sent);
    if (e)
        return e;
    const json_t *n = json_array_get(json_object_get(a.json, "nodes"), 0);
    if (!slurmrest_ok(&a, err, errsz) || !n) {
        if (!err[0])
            snprintf(err, errsz, "GET %s: no such node in the answer", path);
        slurmrest_answer_free(&a);
        return AIDC_EUNAVAIL;
    }
    const char *state = json_string_value(json_object_get(n, "state"));
    const char *reason = json_string_value(json_object_get(n, "reason"));
    bool flag = false;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(n, "state_flags"), i, f) flag |=
        json_string_value(f) && strcasecmp(json_string_value(f), "DRAIN") == 0;
    *drained = flag || (state && strncasecmp(state, "drain", 5) == 0);
    *ours =
        reason && strncmp(reason, SLURMNODE_REASON_PREFIX, strlen(SLURMNODE_REASON_PREFIX)) == 0;
    if (seen)
        *seen = json_pack("{s:s?, s:O?, s:s?}", "state", state, "state_flags",
                          json_object_get(n, "state_flags"), "reason", reason);
    slurmrest_answer_free(&a);
    return 0;
}

/* "aidc: <reason>" with control characters blanked, at most MAX_REASON bytes. */
static void drain_reason(const char *reason, char *out, size_t n)
{
    snprintf(out, n < MAX_REASON ? n : MAX_REASON, "%s %s", SLURMNODE_REASON_PREFIX,
             reason && *reason ? reason : "GPU fault");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
}

static int run_command(const json_t *tpl, const char *node, const char *reason,
                       struct backend_call *call, char *err, size_t errsz)
{
    const char *keys[] = {"node", "reason"}, *values[] = {node, reason};
    char **argv = command_expand(tpl, keys, values, 2);
    if (!argv) {
        snprintf(err, errsz, "the command template is not valid");
        return AIDC_EINVAL;
    }
    struct command_result res;
    int e = command_run(argv, COMMAND_TIMEOUT_S, &res, err, errsz);
    if (call)
        call->request = json_pack("{s:o, s:i, s:i, s:b, s:s}", "command", command_argv_json(argv),
                                  "exit_status", res.exit_status, "signal", res.signal, "timed_out",
                                  res.timed_out, "output", res.output);
    /* a command that failed may work later (slurmctld restarting): tried again */
    if (!e && res.timed_out) {
        snprintf(err, errsz, "%s timed out after %d s: %s", argv[0], COMMAND_TIMEOUT_S, res.output);
        e = AIDC_EUNAVAIL;
    } else if (!e && res.exit_status != 0) {
        if (res.exit_status > 0)
            snprintf(err, errsz, "%s failed with exit status %d: %s", argv[0], res.exit_status,
                     res.output);
        else
            snprintf(err, errsz, "%s was killed by signal %d: %s", argv[0], res.signal, res.output);
        e = AIDC_EUNAVAIL;
    }
    command_argv_free(argv);
    return e;
}

int slurmnode_drain(const struct slurmrest_target *t, const json_t *options, const char *node,
                    bool on, const char *reason, struct backend_call *call, char *err, size_t errsz)
{
    bool drained = false, ours = false;
    json_t *seen = NULL;
    int e = node_state(t, node, &drained, &ours, &seen, err, errsz);
    if (e)
        return e;
    if (call)
        call->lookup = json_pack("{s:s, s:o}", "node", node, "slurm", seen);
    else
        json_decref(seen);
    /* done already, or another's drain: aidc neither drains over it nor resumes it */
    if ((on && drained) || (!on && (!drained || !ours)))
        return 0;
    const char *key = on ? "drain_command" : "resume_command";
    const json_t *tpl = json_object_get(options, key);
    if (!tpl) {
        snprintf(err, errsz,
                 "options.%s is not set: slurmrestd 22.05 cannot %s a node, so aidc "
                 "runs a command for it (docs/gpu-health.md)",
                 key, on ? "drain" : "resume");
        return AIDC_EINVAL;
    }
    char why[MAX_REASON];
    drain_reason(reason, why, sizeof why);
    e = run_command(tpl, node, why, call, err, errsz);
    if (e)
        return e;
    e = node_state(t, node, &drained, &ours, NULL, err, errsz);
    if (!e && drained != on) {
        snprintf(err, errsz, "%s ran, but slurmrestd shows node %s %s", key, node,
                 on ? "not drained" : "still drained");
        e = AIDC_EUNAVAIL;
    }
    return e;
}
