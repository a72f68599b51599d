/*
 * permrun.h - the runner of the permission matrix (tests/http/
 * test_permissions_matrix.c and the programs it is split into): a program's
 * table has a row per route with the status each actor of permfixture.h
 * must get on tenant "own" and, where the route has such a column, on tenant
 * "other". Each cell of it (row, actor, column) is prepared by the program,
 * sent as the actor and checked: the expected status, problem+json for a
 * refusal (401, 403, 404, 501), no tenant's name or id in a 404, then the
 * program's own checks of what the request did. The mismatches of a row are
 * noted (mismatch.h) and fail the row's test together.
 *
 * Which routes' rows are in which program is the programs' data
 * (split_routes in tests/http/permissions_fixture.h); a program with part of
 * the matrix has a test that its rows are exactly the routes listed for it.
 */
#ifndef AIDC_TEST_PERMRUN_H
#define AIDC_TEST_PERMRUN_H

#include "tests/support/client.h"
#include "tests/support/permfixture.h"

#include <check.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * own: the expected status of each actor on tenant "own" (or the only one,
 * for routes without {tenant}); other: on tenant "other" (or what the
 * program's column() says it is), all 0 where there is no such column.
 */
struct permrun_row {
    const char *method;
    const char *pattern;
    int kind; /* the program's enum kind: what its prep and verify do */
    int own[NACTORS];
    int other[NACTORS];
};

/* One request of the matrix: the runner sets r, ri, a, t and tag, prep the rest. */
struct permrun_cell {
    const struct permrun_row *r;
    int ri, a, t;      /* row index, actor, column (0 own, 1 other) */
    char what[500];    /* for messages */
    char tag[32];      /* unique name for what this cell creates */
    char path[300];    /* the request's path */
    char body[400];    /* the request's body ("": none) */
    char check[300];   /* where the admin looks afterwards */
    char before[256];  /* a value that a refusal must leave as it was */
    char secret[1024]; /* a credential of the target: a token's secret, a session's JWT */
};

/* The program that holds the rows of a route. */
struct permrun_split {
    const char *route; /* "METHOD pattern" */
    const char *file;  /* the program's file name, "test_permissions_x.c" */
};

/* A program's part of the matrix. */
struct permrun_matrix {
    /* the program's file name, as split names it; NULL for test_permissions_matrix.c, which
     * has the rows of every route that split does not list */
    const char *file;
    const char *tag; /* the start of its cells' tags, unique among the programs */
    const struct permrun_row *rows;
    size_t nrows;
    const struct permrun_split *split;
    size_t nsplit;
    /* Fill in c's path, body and check, and before where a refusal must leave something
     * as it was (the rest of c is zero). May fail the test (ck_assert). */
    void (*prep)(struct permrun_cell *c);
    /* The program's checks of the request that answered got (res): mismatches are noted. */
    void (*verify)(const struct permrun_cell *c, long got, const struct http_res *res);
    /* What c's column is, for messages; NULL: "tenant own" or "tenant other". */
    const char *(*column)(const struct permrun_cell *c);
};

/*
 * Add m's tests to tc: where m->file is set, every_listed_route_is_in_this_matrix
 * (the routes m->split gives to m->file are routes of api/routes.c with rows in m,
 * and m has rows of no other route), then matrix, a loop test of one run per row.
 * A program has one matrix; m must live until the suite has run.
 */
void permrun_tcase_add(TCase *tc, const struct permrun_matrix *m);

/*
 * The main() of a program of the matrix, called name ("permissions_x": its
 * database and its suite). Skips (77) without a test PostgreSQL; runs
 * global_setup(name), then setup, the program's own (NULL: none; it exits
 * when it fails); then one test case, "matrix", each test 120 s at most:
 * m's tests (permrun_tcase_add), then those that more adds (NULL: none), in
 * that order. Tears the harness down and returns main's exit status.
 */
int permrun_main(const char *name, const struct permrun_matrix *m, void (*setup)(void),
                 void (*more)(TCase *tc));

/* The program that m->split gives the rows of route key ("METHOD pattern") to, or NULL. */
const char *permrun_split_file(const struct permrun_matrix *m, const char *key);

/* ---- checks for a program's verify: each notes what it finds wrong ------------------- */

/* A value read after the request (now, NULL: none): want after a 2xx, else c->before. */
void check_value(const struct permrun_cell *c, long got, const char *field, const char *now,
                 const char *want);
/* A field of the object the admin reads at path: changed to want after a 2xx, else as before. */
void check_changed(const struct permrun_cell *c, long got, const char *path, const char *field,
                   const char *want);
/* Whether the object at path exists for the admin: after a 2xx exactly when after_2xx. */
void check_exists(const struct permrun_cell *c, long got, const char *path, bool after_2xx);

#endif
