/* jobhistory.c - the job list's query and CSV (see jobhistory.h). */
#include "jobhistory.h"

#include "../lib/crypto.h"
#include "../lib/csv.h"
#include "../lib/gputype.h"
#include "../lib/sbuf.h"
#include "../server/validate.h"
#include "auditfilter.h"
#include "jobspec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_STATES 8

static const char *const sort_names[] = {"submitted", "started", "ended", "wait", "runtime"};

/* state=a,b: each a job state; into the array literal {a,b} */
static void parse_states(const char *s, struct resp *rs, struct jobhistory *h)
{
    char buf[128];
    if (strlen(s) >= sizeof buf) {
        api_field_problem(rs, "state", PROBLEM_V_BYTES_MAX,
                          json_pack("{s:I}", "max", (json_int_t)(sizeof buf - 1)));
        return;
    }
    snprintf(buf, sizeof buf, "%s", s);
    struct sbuf sb = SBUF_INIT;
    sbuf_putc(&sb, '{');
    int n = 0;
    bool bad = false;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && !bad; tok = strtok_r(NULL, ",", &save)) {
        bad = !jobspec_state_valid(tok) || ++n > MAX_STATES;
        sbuf_printf(&sb, "%s%s", n > 1 ? "," : "", tok);
    }
    sbuf_putc(&sb, '}');
    if (bad || n == 0)
        api_field_problem(rs, "state", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed",
                                    "queued, admitted, pending, running, "
                                    "succeeded, failed, cancelled, preempted "
                                    "(one, or several separated by commas)"));
    else
        snprintf(h->states, sizeof h->states, "%s", sbuf_str(&sb));
    sbuf_free(&sb);
}

bool jobhistory_name_pattern(const char *name, char *out, size_t n)
{
    bool star = strchr(name, '*') != NULL;
    size_t o = 0;
    /* room for the two added wildcards and the terminator */
    if (n < 3)
        return false;
    if (!star)
        out[o++] = '%';
    for (const char *c = name; *c; c++) {
        if (o + 4 > n)
            return false;
        if (*c == '*') {
            out[o++] = '%';
            continue;
        }
        if (*c == '%' || *c == '_' || *c == '\\')
            out[o++] = '\\';
        out[o++] = *c;
    }
    if (!star)
        out[o++] = '%';
    out[o] = '\0';
    return true;
}

static bool printable(const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return false;
    return true;
}

static void parse_name(const char *name, struct resp *rs, struct jobhistory *h)
{
    if (strlen(name) > JOBHISTORY_NAME_MAX)
        api_field_problem(rs, "name", PROBLEM_V_BYTES_MAX,
                          json_pack("{s:i}", "max", JOBHISTORY_NAME_MAX));
    else if (!*name || !printable(name))
        api_field_problem(rs, "name", PROBLEM_V_PRINTABLE, NULL);
    else if (jobhistory_name_pattern(name, h->name_like, sizeof h->name_like))
        h->f.name_like = h->name_like;
}

static void parse_exit_code(const char *s, struct resp *rs, struct jobhistory *h)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < -2147483647L || v > 2147483647L) {
        api_field_problem(rs, "exit_code", PROBLEM_V_TYPE_INTEGER, NULL);
        return;
    }
    snprintf(h->exit_code, sizeof h->exit_code, "%ld", v);
    h->f.exit_code = h->exit_code;
}

/* <what>_from and <what>_to: RFC 3339, to after from */
static void parse_window(const struct req *rq, struct resp *rs, const char *what, const char **from,
                         const char **to)
{
    char fname[32], tname[32];
    snprintf(fname, sizeof fname, "%s_from", what);
    snprintf(tname, sizeof tname, "%s_to", what);
    const char *f = req_query(rq, fname), *t = req_query(rq, tname);
    time_t tf = 0, tt = 0;
    long nf = 0, nt = 0;
    bool fok = !f || auditfilter_time(f, &tf, &nf), tok = !t || auditfilter_time(t, &tt, &nt);
    if (!fok)
        api_field_problem(rs, fname, PROBLEM_V_TIME, NULL);
    if (!tok)
        api_field_problem(rs, tname, PROBLEM_V_TIME, NULL);
    if (f && t && fok && tok && (tt < tf || (tt == tf && nt <= nf)))
        api_field_problem(rs, tname, PROBLEM_V_AFTER_FROM, NULL);
    *from = f;
    *to = t;
}

static void parse_order(const struct req *rq, struct resp *rs, struct jobhistory *h)
{
    const char *sort = req_query(rq, "sort"), *order = req_query(rq, "order");
    h->f.sort = DB_JOB_SORT_SUBMITTED;
    if (sort) {
        size_t i = 0;
        while (i < sizeof sort_names / sizeof *sort_names && strcmp(sort_names[i], sort) != 0)
            i++;
        if (i == sizeof sort_names / sizeof *sort_names)
            api_field_problem(
                rs, "sort", PROBLEM_V_ONE_OF,
                json_pack("{s:s}", "allowed", "submitted, started, ended, wait, runtime"));
        else
            h->f.sort = (enum db_job_sort)i;
    }
    if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0)
        api_field_problem(rs, "order", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "asc, desc"));
    h->f.ascending = order && strcmp(order, "asc") == 0;
}

int jobhistory_parse(const struct req *rq, struct resp *rs, struct jobhistory *h)
{
    memset(h, 0, sizeof *h);
    const char *state = req_query(rq, "state"), *name = req_query(rq, "name");
    const char *exit_code = req_query(rq, "exit_code"), *format = req_query(rq, "format");
    h->f.project = req_query(rq, "project");
    h->f.user = req_query(rq, "user");
    h->f.cluster = req_query(rq, "cluster");
    h->f.gpu_type = req_query(rq, "gpu_type");
    h->f.array_parent = req_query(rq, "array_parent");
    if (state)
        parse_states(state, rs, h);
    if (h->states[0])
        h->f.states = h->states;
    if (h->f.project && !validate_slug(h->f.project))
        api_field_problem(rs, "project", PROBLEM_V_SLUG, NULL);
    if (h->f.user && !validate_username(h->f.user))
        api_field_problem(rs, "user", PROBLEM_V_USER, NULL);
    if (h->f.cluster && !validate_slug(h->f.cluster))
        api_field_problem(rs, "cluster", PROBLEM_V_CLUSTER, NULL);
    if (h->f.gpu_type && !gputype_valid(h->f.gpu_type))
        api_field_problem(rs, "gpu_type", PROBLEM_V_GPU_TYPE, NULL);
    if (h->f.array_parent && !crypto_uuid_valid(h->f.array_parent))
        api_field_problem(rs, "array_parent", PROBLEM_V_UUID, NULL);
    if (name)
        parse_name(name, rs, h);
    if (exit_code)
        parse_exit_code(exit_code, rs, h);
    parse_window(rq, rs, "submitted", &h->f.submitted_from, &h->f.submitted_to);
    parse_window(rq, rs, "started", &h->f.started_from, &h->f.started_to);
    parse_window(rq, rs, "ended", &h->f.ended_from, &h->f.ended_to);
    parse_order(rq, rs, h);
    if (format && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0)
        api_field_problem(rs, "format", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "json, csv"));
    h->csv =
        format ? strcmp(format, "csv") == 0 : rq->accept && strstr(rq->accept, "text/csv") != NULL;
    return rs->err.nfields ? api_fail_fields(rs) : 0;
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* an integer member as a cell (empty for null) */
static void int_cell(struct sbuf *sb, const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    char num[32];
    snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    csv_number(sb, json_is_integer(v) ? num : NULL);
}

int jobhistory_csv(struct resp *rs)
{
    static const char header[] = "id,name,state,reason,project,user,cluster,gpu_type,gpus,nodes,"
                                 "cpus,memory_gib,submitted_at,started_at,finished_at,"
                                 "wait_seconds,run_seconds,exit_code\r\n";
    struct sbuf sb = SBUF_INIT;
    sbuf_puts(&sb, header);
    size_t i;
    const json_t *j;
    json_array_foreach(json_object_get(rs->body, "items"), i, j)
    {
        const json_t *res = json_object_get(j, "resources");
        const char *texts[] = {str(j, "id"),      str(j, "name"),      str(j, "state"),
                               str(j, "reason"),  str(j, "project"),   str(j, "user"),
                               str(j, "cluster"), str(res, "gpu_type")};
        for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
            csv_cell(&sb, texts[k]);
            sbuf_putc(&sb, ',');
        }
        static const char *const amounts[] = {"gpus", "nodes", "cpus", "memory_gib"};
        for (size_t k = 0; k < sizeof amounts / sizeof *amounts; k++) {
            int_cell(&sb, res, amounts[k]);
            sbuf_putc(&sb, ',');
        }
        static const char *const times[] = {"submitted_at", "started_at", "finished_at"};
        for (size_t k = 0; k < sizeof times / sizeof *times; k++) {
            csv_cell(&sb, str(j, times[k]));
            sbuf_putc(&sb, ',');
        }
        int_cell(&sb, j, "wait_seconds");
        sbuf_putc(&sb, ',');
        int_cell(&sb, j, "run_seconds");
        sbuf_putc(&sb, ',');
        int_cell(&sb, j, "exit_code");
        sbuf_puts(&sb, "\r\n");
    }
    const char *next = str(rs->body, "next_cursor");
    if (next)
        resp_header(rs, "X-Next-Cursor", next);
    json_decref(rs->body);
    rs->body = NULL;
    resp_csv(rs, &sb, "jobs.csv");
    return 0;
}
