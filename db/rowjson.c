/* rowjson.c - PGresult rows to jansson by column type OID. */
#include "rowjson.h"

#include "../lib/err.h"
#include "../lib/jsonout.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "db.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Built-in type OIDs (stable; see pg_type.dat). */
enum {
    OID_BOOL = 16,
    OID_INT8 = 20,
    OID_INT2 = 21,
    OID_INT4 = 23,
    OID_JSON = 114,
    OID_FLOAT4 = 700,
    OID_FLOAT8 = 701,
    OID_TIMESTAMPTZ = 1184,
    OID_JSONB = 3802,
};

/* Read exactly n decimal digits at *p into *out and advance. */
static bool digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static bool expect(const char **p, char c)
{
    if (**p != c)
        return false;
    (*p)++;
    return true;
}

int rowjson_timestamp(const char *pg, char *out, size_t outsz)
{
    struct tm tm = {0};
    const char *p = pg;
    if (!digits(&p, 4, &tm.tm_year) || !expect(&p, '-') || !digits(&p, 2, &tm.tm_mon) ||
        !expect(&p, '-') || !digits(&p, 2, &tm.tm_mday) || !expect(&p, ' ') ||
        !digits(&p, 2, &tm.tm_hour) || !expect(&p, ':') || !digits(&p, 2, &tm.tm_min) ||
        !expect(&p, ':') || !digits(&p, 2, &tm.tm_sec))
        return AIDC_EINVAL;
    char frac[16] = "";
    size_t fn = 0; /* the fraction's length, its dot included */
    if (*p == '.') {
        size_t n = strspn(p + 1, "0123456789");
        if (n == 0 || n > 9)
            return AIDC_EINVAL;
        fn = n + 1;
        memcpy(frac, p, fn);
        frac[fn] = '\0';
        p += fn;
    }
    long sign = 0;
    int oh = 0, om = 0, os = 0;
    if (*p == '+' || *p == '-') {
        sign = *p == '-' ? -1 : 1;
        p++;
        if (!digits(&p, 2, &oh))
            return AIDC_EINVAL;
        if (*p == ':' && (p++, !digits(&p, 2, &om)))
            return AIDC_EINVAL;
        if (*p == ':' && (p++, !digits(&p, 2, &os)))
            return AIDC_EINVAL;
    }
    if (*p != '\0' || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60 || oh > 15 || om > 59 || os > 59)
        return AIDC_EINVAL;
    if (oh == 0 && om == 0 && os == 0) {
        /* already UTC (our sessions are): the text as it came, 'T' for the space
         * and 'Z' for the offset - no calendar arithmetic, no formatting (two
         * snprintf calls per row were a visible share of a GET, perf) */
        if (19 + fn + 2 > outsz)
            return AIDC_EINVAL;
        memcpy(out, pg, 19);
        out[10] = 'T';
        memcpy(out + 19, frac, fn);
        out[19 + fn] = 'Z';
        out[20 + fn] = '\0';
        return 0;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm) - sign * (oh * 3600L + om * 60L + os);
    struct tm u;
    if (!gmtime_r(&t, &u))
        return AIDC_EINVAL;
    int n = snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", u.tm_year + 1900, u.tm_mon + 1,
                     u.tm_mday, u.tm_hour, u.tm_min, u.tm_sec, frac);
    return n < 0 || (size_t)n >= outsz ? AIDC_EINVAL : 0;
}

static json_t *cell(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return json_null();
    const char *v = PQgetvalue(r, row, col);
    char ts[48];
    switch (PQftype(r, col)) {
    case OID_BOOL:
        return json_boolean(v[0] == 't');
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
        return json_integer(strtoll(v, NULL, 10));
    case OID_FLOAT4:
    case OID_FLOAT8:
        return json_real(strtod(v, NULL));
    case OID_JSON:
    case OID_JSONB: {
        json_error_t jerr;
        json_t *j = json_loads(v, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (!j)
            log_error("column %s holds bad json: %s", PQfname(r, col), jerr.text);
        return j;
    }
    case OID_TIMESTAMPTZ:
        if (rowjson_timestamp(v, ts, sizeof ts) == 0)
            return json_string(ts);
        log_error("column %s holds an unexpected timestamp \"%s\"", PQfname(r, col), v);
        return NULL;
    default:
        return json_stringn(v, (size_t)PQgetlength(r, row, col));
    }
}

json_t *rowjson_object(const PGresult *r, int row)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int n = PQnfields(r);
    for (int c = 0; c < n; c++) {
        const char *name = PQfname(r, c);
        if (name[0] == '_')
            continue;
        json_t *v = cell(r, row, c);
        if (!v || json_object_set_new(o, name, v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* cell's value written as text: the same bytes jsonout writes for cell's tree */
static bool cell_text(const PGresult *r, int row, int col, struct sbuf *sb)
{
    if (PQgetisnull(r, row, col)) {
        sbuf_append(sb, "null", 4);
        return true;
    }
    const char *v = PQgetvalue(r, row, col);
    char ts[48];
    switch (PQftype(r, col)) {
    case OID_BOOL:
        if (v[0] == 't')
            sbuf_append(sb, "true", 4);
        else
            sbuf_append(sb, "false", 5);
        return true;
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
        jsonout_integer(sb, strtoll(v, NULL, 10));
        return true;
    case OID_FLOAT4:
    case OID_FLOAT8: {
        double d = strtod(v, NULL);
        return isfinite(d) && jsonout_real(sb, d); /* json_real refuses the others */
    }
    case OID_TIMESTAMPTZ:
        if (rowjson_timestamp(v, ts, sizeof ts) == 0)
            return jsonout_string(sb, ts, strlen(ts));
        log_error("column %s holds an unexpected timestamp \"%s\"", PQfname(r, col), v);
        return false;
    case OID_JSON:
    case OID_JSONB: {
        json_t *j = cell(r, row, col); /* parsed: PostgreSQL's spacing is not ours */
        bool ok = j && jsonout_value(sb, j);
        json_decref(j);
        return ok;
    }
    default:
        return jsonout_string(sb, v, (size_t)PQgetlength(r, row, col));
    }
}

/* whether every column a row's object takes has a name of its own (a repeated
 * name is one key in the tree, at its first place with its last value) */
static bool names_unique(const PGresult *r)
{
    int n = PQnfields(r);
    for (int c = 0; c < n; c++) {
        const char *a = PQfname(r, c);
        for (int d = c + 1; d < n; d++) {
            const char *b = PQfname(r, d);
            if (a[0] == b[0] && strcmp(a, b) == 0) /* most names differ at once */
                return false;
        }
    }
    return true;
}

bool rowjson_append_object(const PGresult *r, int row, struct sbuf *sb)
{
    if (!names_unique(r)) {
        json_t *o = rowjson_object(r, row);
        bool ok = o && jsonout_value(sb, o);
        json_decref(o);
        return ok;
    }
    sbuf_putc(sb, '{');
    bool first = true;
    int n = PQnfields(r);
    for (int c = 0; c < n; c++) {
        const char *name = PQfname(r, c);
        if (name[0] == '_')
            continue;
        if (!first)
            sbuf_putc(sb, ',');
        first = false;
        if (!jsonout_string(sb, name, strlen(name)))
            return false;
        sbuf_putc(sb, ':');
        if (!cell_text(r, row, c, sb))
            return false;
    }
    sbuf_putc(sb, '}');
    return true;
}

json_t *rowjson_array(const PGresult *r)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    int n = PQntuples(r);
    for (int i = 0; i < n; i++) {
        json_t *o = rowjson_object(r, i);
        if (!o || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

const char *rowjson_get(const PGresult *r, int row, const char *column)
{
    int c = PQfnumber(r, column);
    if (c < 0 || row >= PQntuples(r) || PQgetisnull(r, row, c))
        return NULL;
    return PQgetvalue(r, row, c);
}

int rowjson_query_one(struct db *db, const struct db_stmt *stmt, const char *const *params,
                      json_t **out)
{
    int e;
    PGresult *r = db_query(db, stmt, params, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    *out = rowjson_object(r, 0);
    PQclear(r);
    return *out ? 0 : AIDC_EINTERNAL;
}

void db_rows_free(struct db_rows *rows)
{
    json_decref(rows->items);
    json_decref(rows->keys);
    rows->items = rows->keys = NULL;
}

int rowjson_rows(const PGresult *r, bool prebuilt, struct db_rows *out)
{
    out->items = json_array();
    out->keys = json_array();
    int kc = PQfnumber(r, "_cursor");
    int n = out->items && out->keys ? PQntuples(r) : -1;
    for (int i = 0; i < n; i++) {
        json_t *o = prebuilt ? json_loads(PQgetvalue(r, i, 0), 0, NULL) : rowjson_object(r, i);
        json_t *k =
            kc < 0 || PQgetisnull(r, i, kc) ? json_null() : json_string(PQgetvalue(r, i, kc));
        if (!o || !k) {
            json_decref(o);
            json_decref(k);
            n = -1;
        } else if (json_array_append_new(out->items, o) != 0 ||
                   json_array_append_new(out->keys, k) != 0) {
            n = -1; /* json_array_append_new took o and k, even when it failed */
        }
    }
    if (n < 0) {
        db_rows_free(out);
        return AIDC_EINTERNAL;
    }
    return 0;
}

int rowjson_query_rows(struct db *db, const struct db_stmt *stmt, const char *const *params,
                       bool prebuilt, struct db_rows *out)
{
    int e;
    PGresult *r = db_query(db, stmt, params, &e);
    if (!r)
        return e;
    e = rowjson_rows(r, prebuilt, out);
    PQclear(r);
    return e;
}

int rowjson_one_text(const PGresult *r, struct sbuf *out)
{
    if (PQntuples(r) == 0)
        return AIDC_ENOTFOUND;
    size_t start = out->len;
    if (rowjson_append_object(r, 0, out))
        return 0;
    sbuf_truncate(out, start);
    return AIDC_EINTERNAL;
}

int rowjson_query_one_text(struct db *db, const struct db_stmt *stmt, const char *const *params,
                           struct sbuf *out)
{
    int e;
    PGresult *r = db_query(db, stmt, params, &e);
    if (!r)
        return e;
    e = rowjson_one_text(r, out);
    PQclear(r);
    return e;
}
