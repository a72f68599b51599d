/* auditfilter.c - checked query arguments of the audit endpoints (see auditfilter.h). */
#include "auditfilter.h"

#include "../lib/crypto.h"
#include "../server/validate.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_MAX 200

static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

bool auditfilter_time(const char *s, time_t *out, long *nsec)
{
    long frac = 0;
    /* YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM) */
    size_t n = strlen(s);
    if (n < 20 || n > 40 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':')
        return false;
    struct tm tm = {0};
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
        mi > 59 || se < 0 || se > 60)
        return false;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        const char *f = p;
        long scale = 100000000L;
        while (isdigit((unsigned char)*p)) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
        if (p == f || p - f > 9)
            return false;
    }
    long off = 0;
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
        off = 0;
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int oh = digits(p + 1, 2), om = digits(p + 4, 2);
        if (oh < 0 || oh > 15 || om < 0 || om > 59)
            return false;
        off = (oh * 60L + om) * 60L * (*p == '-' ? -1 : 1);
    } else {
        return false;
    }
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    time_t t = timegm(&tm);
    struct tm back;
    gmtime_r(&t, &back);
    if (se < 60 && back.tm_mday != d) /* 2026-02-30 */
        return false;
    *out = t - off;
    if (nsec)
        *nsec = frac;
    return true;
}

static bool ip_or_network(const char *s)
{
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return false;
    snprintf(buf, sizeof buf, "%s", s);
    char *slash = strchr(buf, '/');
    long bits = -1;
    if (slash) {
        *slash = '\0';
        const char *d = slash + 1;
        size_t nd = strlen(d);
        if (nd == 0 || nd > 3 || strspn(d, "0123456789") != nd) /* no sign, no spaces */
            return false;
        bits = strtol(d, NULL, 10);
    }
    unsigned char a[16];
    if (inet_pton(AF_INET, buf, a) == 1)
        return bits <= 32;
    if (inet_pton(AF_INET6, buf, a) == 1)
        return bits <= 128;
    return false;
}

static bool text_ok(const char *s)
{
    size_t n = validate_utf8_len(s);
    if (n == 0 || n > TEXT_MAX)
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20)
            return false;
    return true;
}

/* Check the free-text arguments names[] of rq. */
static void check_texts(const struct req *rq, struct resp *rs, const char *const *names)
{
    for (; *names; names++) {
        const char *v = req_query(rq, *names);
        if (v && !text_ok(v))
            api_field_problem(rs, *names, PROBLEM_V_TEXT, json_pack("{s:i}", "max", TEXT_MAX));
    }
}

static void check_times(const struct req *rq, struct resp *rs)
{
    time_t from = 0, to = 0;
    long fns = 0, tns = 0;
    const char *f = req_query(rq, "from"), *t = req_query(rq, "to");
    bool fok = f && auditfilter_time(f, &from, &fns), tok = t && auditfilter_time(t, &to, &tns);
    if (f && !fok)
        api_field_problem(rs, "from", PROBLEM_V_TIME, NULL);
    if (t && !tok)
        api_field_problem(rs, "to", PROBLEM_V_TIME, NULL);
    if (fok && tok && (to < from || (to == from && tns <= fns)))
        api_field_problem(rs, "to", PROBLEM_V_AFTER_FROM, NULL);
}

int auditfilter_events(const struct req *rq, struct resp *rs, struct db_audit_filter *f,
                       char *prefix_buf, size_t prefix_sz)
{
    static const char *const texts[] = {"actor",         "tenant",      "action", "q",
                                        "resource_type", "resource_id", NULL};
    memset(f, 0, sizeof *f);
    check_texts(rq, rs, texts);
    check_times(rq, rs);
    f->actor = req_query(rq, "actor");
    f->tenant = req_query(rq, "tenant");
    f->outcome = req_query(rq, "outcome");
    f->source_ip = req_query(rq, "source_ip");
    f->from = req_query(rq, "from");
    f->to = req_query(rq, "to");
    f->q = req_query(rq, "q");
    f->resource_type = req_query(rq, "resource_type");
    f->resource_id = req_query(rq, "resource_id");
    if (f->outcome && strcmp(f->outcome, "success") != 0 && strcmp(f->outcome, "denied") != 0 &&
        strcmp(f->outcome, "error") != 0)
        api_field_problem(rs, "outcome", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "success, denied, error"));
    if (f->source_ip && !ip_or_network(f->source_ip))
        api_field_problem(rs, "source_ip", PROBLEM_AUDIT_SOURCE_IP, NULL);
    const char *action = req_query(rq, "action");
    size_t al = action ? strlen(action) : 0;
    if (al > 0 && action[al - 1] == '*' && text_ok(action)) {
        /* a prefix: LIKE with its own wildcards escaped */
        size_t o = 0;
        for (size_t i = 0; i + 1 < al && o + 3 < prefix_sz; i++) {
            if (action[i] == '%' || action[i] == '_' || action[i] == '\\')
                prefix_buf[o++] = '\\';
            prefix_buf[o++] = action[i];
        }
        prefix_buf[o++] = '%';
        prefix_buf[o] = '\0';
        f->action_prefix = prefix_buf;
    } else {
        f->action = action;
    }
    return rs->err.nfields ? api_fail_fields(rs) : 0;
}

int auditfilter_commands(const struct req *rq, struct resp *rs, struct db_audit_cmd_filter *f)
{
    static const char *const texts[] = {"host", "user", "tenant", "q", NULL};
    memset(f, 0, sizeof *f);
    check_texts(rq, rs, texts);
    check_times(rq, rs);
    f->host = req_query(rq, "host");
    f->user = req_query(rq, "user");
    f->tenant = req_query(rq, "tenant");
    f->q = req_query(rq, "q");
    f->from = req_query(rq, "from");
    f->to = req_query(rq, "to");
    f->job_id = req_query(rq, "job_id");
    f->kind = req_query(rq, "kind");
    if (f->job_id && !crypto_uuid_valid(f->job_id))
        api_field_problem(rs, "job_id", PROBLEM_V_UUID, NULL);
    if (f->kind && strcmp(f->kind, "command") != 0 && strcmp(f->kind, "module") != 0 &&
        strcmp(f->kind, "image_pull") != 0)
        api_field_problem(rs, "kind", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "command, module, image_pull"));
    return rs->err.nfields ? api_fail_fields(rs) : 0;
}

json_t *auditfilter_echo(const struct req *rq)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < rq->nquery; i++)
        if (strcmp(rq->query[i].key, "cursor") != 0)
            json_object_set_new(o, rq->query[i].key, json_string(rq->query[i].value));
    return o;
}
