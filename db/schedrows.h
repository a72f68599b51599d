/*
 * schedrows.h - reading the rows of the workers' statements (db/sched.c,
 * db/schedsnap.c, db/gpufaults.c) into typed structs: one checked reader per
 * cell type, and a store that owns the strings of a whole row array.
 *
 * Internal to db/: the row structs the workers see hold plain C values and
 * strings owned by a struct db_strings, freed with the array.
 */
#ifndef AIDC_DB_SCHEDROWS_H
#define AIDC_DB_SCHEDROWS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The strings (and small arrays) of one row array, copied in chunks: a
 * snapshot of 100,000 queued jobs costs a few dozen allocations, not one per
 * cell.
 */
struct db_strings;
void db_strings_free(struct db_strings *s);

/*
 * The cells of row i of r. Each reader records in bad a cell that does not
 * parse as its type (the statement and the code disagree: a bug), and gives
 * 0 / "" for it; the caller checks bad once per row.
 */
struct rowreader {
    const PGresult *r;
    int i;
    struct db_strings **strings;
    bool bad;
};

/* Text, copied into the store; NULL for SQL NULL. */
const char *rowreader_text(struct rowreader *rd, int c);
/* Text, copied into the store; "" for SQL NULL. */
const char *rowreader_text0(struct rowreader *rd, int c);
/* A UUID (or "" for SQL NULL) into out; a longer value is bad. */
void rowreader_uuid(struct rowreader *rd, int c, char out[37]);
/* A whole number (0 for SQL NULL); bad when not one or out of range. */
int rowreader_int(struct rowreader *rd, int c);
long long rowreader_ll(struct rowreader *rd, int c);
/* A number as a double (0 for SQL NULL): float8 and numeric text. */
double rowreader_double(struct rowreader *rd, int c);
/* A boolean: true for "t" (SQL NULL is false). */
bool rowreader_bool(struct rowreader *rd, int c);
bool rowreader_null(const struct rowreader *rd, int c);
/* An int[] ("{0,3}") into the store, *n its length; NULL (0) for SQL NULL. */
const int *rowreader_ints(struct rowreader *rd, int c, size_t *n);

/*
 * The cluster of an outbox row (db/sched.h) from its columns id, name, kind,
 * endpoint, credentials_ref and options (JSON text), in that order from first.
 */
struct db_outbox_cluster;
void rowreader_outbox_cluster(struct rowreader *rd, int first, struct db_outbox_cluster *cl);

/* The name a job's current run carries in its backend (SQL, of the jobs row
 * alias j): the job id, and after a preemption the id with the run number,
 * so a re-run never meets the remains of the run before it. */
#define RUN_KEY(j)                                                                                \
    "CASE WHEN " j ".preemption_count = 0 THEN " j ".id::text"                                    \
    " ELSE " j ".id || '-r' || " j ".preemption_count END"

/*
 * Fill an array of nrow structs of size sz from r: one(rd, row) reads each.
 * *v gets the array (malloc'd, never NULL), *strings its store.
 * 0, or AIDC_EINTERNAL (logged, nothing kept) when a row does not read.
 */
int rowreader_all(const PGresult *r, size_t sz, void (*one)(struct rowreader *rd, void *row),
                  void **v, size_t *n, struct db_strings **strings, const char *what);

#endif
