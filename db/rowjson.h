/*
 * rowjson.h - turn PostgreSQL result rows into jansson values.
 *
 * Column names become keys; a column whose name starts with '_' is internal
 * (cursor keys, ids for the caller) and is skipped. Types map as: bool ->
 * true/false, integers -> integer, float -> real, numeric -> decimal string,
 * json/jsonb -> parsed value, timestamptz -> RFC 3339 UTC ("...Z"), NULL ->
 * null, everything else -> string. Anything richer is built as json in SQL.
 */
#ifndef AIDC_ROWJSON_H
#define AIDC_ROWJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <libpq-fe.h>

/* A new object for row `row` of r, or NULL if a json column does not parse. */
json_t *rowjson_object(const PGresult *r, int row);
/* A new array of every row of r (NULL on a bad json column). */
json_t *rowjson_array(const PGresult *r);
/*
 * Normalise a PostgreSQL timestamptz text ("2026-12-02 08:00:00.5+00") into
 * RFC 3339 UTC ("2026-12-02T08:00:00.5Z") in out. Returns 0 or AIDC_EINVAL.
 */
int rowjson_timestamp(const char *pg, char *out, size_t outsz);
struct sbuf;
/*
 * Append to sb the text jsonout_compact writes for rowjson_object(r, row),
 * written without building the tree: an answer of one row costs no
 * allocation per field (docs/performance.md, fourteenth section). false
 * (sb then holds a part) where rowjson_object gives NULL.
 */
bool rowjson_append_object(const PGresult *r, int row, struct sbuf *sb);
/* r's first row appended to out: 0, AIDC_ENOTFOUND (no row) or AIDC_EINTERNAL
 * (out then as it was: no part of a row reaches an answer). */
int rowjson_one_text(const PGresult *r, struct sbuf *out);
struct db;
struct db_stmt;
/*
 * Run stmt and return its first row as a new object in *out. AIDC_ENOTFOUND
 * when it returns no row; other errors as db_query.
 */
int rowjson_query_one(struct db *db, const struct db_stmt *stmt, const char *const *params,
                      json_t **out);
/* The same, the row appended to out as text (rowjson_append_object); an
 * unwritable row is AIDC_EINTERNAL, out then as it was. */
int rowjson_query_one_text(struct db *db, const struct db_stmt *stmt, const char *const *params,
                           struct sbuf *out);

/*
 * The rows of a list as db/ hands them out: each row already a JSON object
 * (internal '_' columns left out), with its sort key beside it. Callers page
 * over them (api/paging.h) without seeing a PGresult or a column.
 */
struct db_rows {
    json_t *items; /* array of objects */
    json_t *keys;  /* array, per item: its "_cursor" string, or null */
};
/* Fill *out from r: each row turned by rowjson_object, or, when prebuilt, the
 * row's first column parsed as the item's JSON. 0 or AIDC_EINTERNAL. */
int rowjson_rows(const PGresult *r, bool prebuilt, struct db_rows *out);
/* Run stmt and fill *out as rowjson_rows; errors as db_query. */
int rowjson_query_rows(struct db *db, const struct db_stmt *stmt, const char *const *params,
                       bool prebuilt, struct db_rows *out);
void db_rows_free(struct db_rows *rows);

/* Column value of r by name (NULL if SQL NULL or no such column). */
const char *rowjson_get(const PGresult *r, int row, const char *column);

#endif
