/* pgcol.c - one column of a result as a C value (see pgcol.h). */
#include "pgcol.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *pgcol_text(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : xstrdup(PQgetvalue(r, row, col));
}

int pgcol_copy(const PGresult *r, int row, int col, char *buf, size_t bufsz)
{
    if (PQgetisnull(r, row, col) || (size_t)PQgetlength(r, row, col) >= bufsz)
        return AIDC_EINTERNAL;
    memcpy(buf, PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col) + 1);
    return 0;
}

int pgcol_ll(const PGresult *r, int row, int col, long long dflt, long long *out)
{
    if (PQgetisnull(r, row, col)) {
        *out = dflt;
        return 0;
    }
    const char *s = PQgetvalue(r, row, col);
    char *end = NULL;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno || end == s || *end ? AIDC_EINTERNAL : 0;
}

int pgcol_double(const PGresult *r, int row, int col, double dflt, double *out)
{
    if (PQgetisnull(r, row, col)) {
        *out = dflt;
        return 0;
    }
    const char *s = PQgetvalue(r, row, col);
    char *end = NULL;
    errno = 0;
    *out = strtod(s, &end);
    return errno || end == s || *end ? AIDC_EINTERNAL : 0;
}

bool pgcol_bool(const PGresult *r, int row, int col)
{
    return !PQgetisnull(r, row, col) && PQgetvalue(r, row, col)[0] == 't';
}
