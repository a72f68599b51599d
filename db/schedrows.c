/* schedrows.c - typed reading of worker rows (see schedrows.h). */
#include "schedrows.h"

#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "sched.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 65536
#define ALIGN 8

struct db_strings {
    struct db_strings *next;
    size_t used, cap;
    char data[];
};

void db_strings_free(struct db_strings *s)
{
    while (s) {
        struct db_strings *next = s->next;
        free(s);
        s = next;
    }
}

/* n bytes of the store, 8-aligned (int arrays live there too) */
static void *store(struct db_strings **s, size_t n)
{
    size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (need < n)
        abort(); /* overflow: no cell is that large */
    if (!*s || (*s)->cap - (*s)->used < need) {
        size_t cap = need > CHUNK ? need : CHUNK;
        struct db_strings *c = xmalloc(sizeof *c + cap);
        c->next = *s;
        c->used = 0;
        c->cap = cap;
        *s = c;
    }
    void *p = (*s)->data + (*s)->used;
    (*s)->used += need;
    return p;
}

bool rowreader_null(const struct rowreader *rd, int c)
{
    return PQgetisnull(rd->r, rd->i, c) != 0;
}

const char *rowreader_text(struct rowreader *rd, int c)
{
    if (rowreader_null(rd, c))
        return NULL;
    size_t len = (size_t)PQgetlength(rd->r, rd->i, c);
    char *p = store(rd->strings, len + 1);
    memcpy(p, PQgetvalue(rd->r, rd->i, c), len);
    p[len] = '\0';
    return p;
}

const char *rowreader_text0(struct rowreader *rd, int c)
{
    const char *t = rowreader_text(rd, c);
    return t ? t : "";
}

void rowreader_uuid(struct rowreader *rd, int c, char out[37])
{
    const char *v = PQgetvalue(rd->r, rd->i, c);
    size_t len = strlen(v);
    if (len > 36) {
        rd->bad = true;
        len = 0;
    }
    memcpy(out, v, len);
    out[len] = '\0';
}

long long rowreader_ll(struct rowreader *rd, int c)
{
    if (rowreader_null(rd, c))
        return 0;
    const char *v = PQgetvalue(rd->r, rd->i, c);
    char *end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || errno) {
        rd->bad = true;
        return 0;
    }
    return n;
}

int rowreader_int(struct rowreader *rd, int c)
{
    long long n = rowreader_ll(rd, c);
    if (n < INT_MIN || n > INT_MAX) {
        rd->bad = true;
        return 0;
    }
    return (int)n;
}

double rowreader_double(struct rowreader *rd, int c)
{
    if (rowreader_null(rd, c))
        return 0;
    const char *v = PQgetvalue(rd->r, rd->i, c);
    char *end = NULL;
    double d = strtod(v, &end); /* "Infinity" and "NaN" of float8 read as such */
    if (end == v || *end) {
        rd->bad = true;
        return 0;
    }
    return d;
}

bool rowreader_bool(struct rowreader *rd, int c)
{
    return PQgetvalue(rd->r, rd->i, c)[0] == 't';
}

const int *rowreader_ints(struct rowreader *rd, int c, size_t *n)
{
    *n = 0;
    if (rowreader_null(rd, c))
        return NULL;
    const char *text = PQgetvalue(rd->r, rd->i, c);
    size_t max = 0;
    for (const char *p = text; *p; p++)
        max += *p == ',';
    int *v = store(rd->strings, (max + 1) * sizeof *v);
    /* the elements are GPU indexes (0..1023): anything but digits separates them */
    for (const char *p = text; *p && *n <= max;) {
        if (*p >= '0' && *p <= '9') {
            char *end = NULL;
            long x = strtol(p, &end, 10);
            if (x > INT_MAX) {
                rd->bad = true;
                x = 0;
            }
            v[(*n)++] = (int)x;
            p = end;
        } else {
            p++;
        }
    }
    return v;
}

void rowreader_outbox_cluster(struct rowreader *rd, int first, struct db_outbox_cluster *cl)
{
    rowreader_uuid(rd, first, cl->id);
    cl->name = rowreader_text0(rd, first + 1);
    cl->kind = rowreader_text0(rd, first + 2);
    cl->endpoint = rowreader_text0(rd, first + 3);
    cl->credentials_ref = rowreader_text0(rd, first + 4);
    cl->options = rowreader_text0(rd, first + 5);
}

int rowreader_all(const PGresult *r, size_t sz, void (*one)(struct rowreader *rd, void *row),
                  void **v, size_t *n, struct db_strings **strings, const char *what)
{
    size_t nrow = (size_t)PQntuples(r);
    char *rows = xcalloc(nrow + 1, sz);
    struct db_strings *s = NULL;
    for (size_t i = 0; i < nrow; i++) {
        struct rowreader rd = {.r = r, .i = (int)i, .strings = &s};
        one(&rd, rows + i * sz);
        if (rd.bad) {
            log_error("%s: row %zu does not read as expected", what, i);
            free(rows);
            db_strings_free(s);
            *v = NULL;
            *n = 0;
            *strings = NULL;
            return AIDC_EINTERNAL;
        }
    }
    *v = rows;
    *n = nrow;
    *strings = s;
    return 0;
}
