/* usagequery.c - the usage routes' query arguments (see usagequery.h). */
#include "usagequery.h"

#include "../lib/gputype.h"

#include "../lib/sbuf.h"
#include "../server/validate.h"
#include "auditfilter.h"
#include "jobspec.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

const char *const usagequery_groups[USAGEQUERY_NGROUPS] = {"tenant", "project", "user",    "day",
                                                           "week",   "month",   "resource"};
#define NGROUPS USAGEQUERY_NGROUPS

static void rfc3339(time_t t, char *out, size_t n)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void usagequery_range(const struct req *rq, struct resp *rs, time_t dfrom, time_t dto,
                      long max_days, char *from, char *to, size_t n)
{
    const char *f = req_query(rq, "from"), *t = req_query(rq, "to");
    time_t tf = dfrom, tt = dto;
    if (f && !auditfilter_time(f, &tf, NULL))
        api_field_problem(rs, "from", PROBLEM_V_TIME, NULL);
    if (t && !auditfilter_time(t, &tt, NULL))
        api_field_problem(rs, "to", PROBLEM_V_TIME, NULL);
    if (tt <= tf)
        api_field_problem(rs, "to", PROBLEM_V_AFTER_FROM, NULL);
    else if (tt - tf > max_days * 86400L)
        api_field_problem(rs, "to", PROBLEM_USAGE_RANGE,
                          json_pack("{s:I}", "max", (json_int_t)max_days));
    /* the texts as given keep their fractions; defaults are whole seconds */
    snprintf(from, n, "%s", f ? f : "");
    snprintf(to, n, "%s", t ? t : "");
    if (!f)
        rfc3339(tf, from, n);
    if (!t)
        rfc3339(tt, to, n);
}

time_t usagequery_month_start(time_t now)
{
    struct tm tm;
    gmtime_r(&now, &tm);
    tm.tm_mday = 1;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    return timegm(&tm);
}

static bool is_resource(const char *s)
{
    return strcmp(s, "cpu") == 0 || strcmp(s, "memory_gib") == 0 || strcmp(s, "storage_gib") == 0 ||
           (strncmp(s, "gpu:", 4) == 0 && gputype_valid(s + 4));
}

static bool wants_csv(const struct req *rq, struct resp *rs)
{
    const char *format = req_query(rq, "format");
    if (format && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0)
        api_field_problem(rs, "format", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "json, csv"));
    if (format)
        return strcmp(format, "csv") == 0;
    return rq->accept && strstr(rq->accept, "text/csv") != NULL;
}

static void parse_groups(const struct req *rq, struct resp *rs, bool platform, struct usage_args *a)
{
    const char *g = req_query(rq, "group_by");
    struct sbuf pg = SBUF_INIT;
    sbuf_putc(&pg, '{');
    char buf[128];
    if (g && strlen(g) >= sizeof buf) {
        api_field_problem(rs, "group_by", PROBLEM_V_BYTES_MAX,
                          json_pack("{s:I}", "max", (json_int_t)(sizeof buf - 1)));
        g = NULL;
    }
    snprintf(buf, sizeof buf, "%s", g ? g : "");
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t k = 0;
        while (k < NGROUPS && strcmp(usagequery_groups[k], tok) != 0)
            k++;
        if (k == NGROUPS || (k == 0 && !platform)) {
            api_field_problem(rs, "group_by",
                              platform ? PROBLEM_USAGE_GROUP_BY_PLATFORM : PROBLEM_USAGE_GROUP_BY,
                              NULL);
            break;
        }
        bool dup = false;
        for (size_t i = 0; i < a->norder; i++)
            dup = dup || a->order[i] == usagequery_groups[k];
        if (dup || k == NGROUPS - 1) /* every row names its resource anyway */
            continue;
        a->order[a->norder++] = usagequery_groups[k];
        sbuf_printf(&pg, "%s%s", a->norder > 1 ? "," : "", usagequery_groups[k]);
    }
    sbuf_putc(&pg, '}');
    snprintf(a->group_pg, sizeof a->group_pg, "%s", sbuf_str(&pg));
    sbuf_free(&pg);
}

int usagequery_parse(const struct req *rq, struct resp *rs, bool platform, long max_days,
                     long max_rows, struct usage_args *a)
{
    memset(a, 0, sizeof *a);
    time_t now = time(NULL);
    usagequery_range(rq, rs, usagequery_month_start(now), now, max_days, a->from, a->to,
                     sizeof a->from);
    parse_groups(rq, rs, platform, a);
    a->csv = wants_csv(rq, rs);
    const char *project = req_query(rq, "project"), *user = req_query(rq, "user");
    const char *resource = req_query(rq, "resource");
    if (project && !validate_slug(project))
        api_field_problem(rs, "project", PROBLEM_V_PROJECT, NULL);
    if (user && !validate_username(user))
        api_field_problem(rs, "user", PROBLEM_V_USER, NULL);
    if (resource && !is_resource(resource))
        api_field_problem(rs, "resource", PROBLEM_PRICE_RESOURCE, NULL);
    if (rs->err.nfields)
        return api_fail_fields(rs);
    a->q = (struct db_usage_query){.from = a->from,
                                   .to = a->to,
                                   .group_by = a->group_pg,
                                   .project = project,
                                   .user = user,
                                   .resource = resource,
                                   .limit = max_rows};
    return 0;
}
