/*
 * pgcol.h - reading one column of one row of a result into a C value, for
 * the db/ modules that hand out typed rows (a struct per row shape). Only
 * db/ sees a PGresult: these helpers stay behind the db/ headers, and each
 * module names its columns (an enum beside its SELECT).
 */
#ifndef AIDC_PGCOL_H
#define AIDC_PGCOL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

/* A new copy of the value (xstrdup), or NULL when it is SQL NULL. */
char *pgcol_text(const PGresult *r, int row, int col);
/* Copy the value into buf: 0, or AIDC_EINTERNAL when NULL or it does not fit. */
int pgcol_copy(const PGresult *r, int row, int col, char *buf, size_t bufsz);
/* An integer column: 0 (dflt when NULL), or AIDC_EINTERNAL when it is no integer. */
int pgcol_ll(const PGresult *r, int row, int col, long long dflt, long long *out);
/* A float column: 0 (dflt when NULL), or AIDC_EINTERNAL when it is no number. */
int pgcol_double(const PGresult *r, int row, int col, double dflt, double *out);
/* A boolean column ('t'); NULL is false. */
bool pgcol_bool(const PGresult *r, int row, int col);

#endif
