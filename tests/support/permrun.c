/*
 * permrun.c - the runner of the permission matrix (permrun.h). Check's loop
 * test knows only the row's index, so the matrix of the program is kept
 * here by permrun_tcase_add; forked tests inherit it.
 */
#include "tests/support/permrun.h"

#include "server/router.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/mismatch.h"
#include "tests/support/permfixture.h"
#include "tests/support/suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct permrun_matrix *program_matrix;

/* ---- the matrix in several programs: which rows are where ----------------------------- */

const char *permrun_split_file(const struct permrun_matrix *m, const char *key)
{
    for (size_t k = 0; k < m->nsplit; k++)
        if (strcmp(m->split[k].route, key) == 0)
            return m->split[k].file;
    return NULL;
}

/* Whether api/routes.c has route key ("METHOD pattern"). */
static bool route_in_table(const char *key)
{
    char rk[300];
    for (size_t i = 0; i < routes_count; i++) {
        snprintf(rk, sizeof rk, "%s %s", routes[i].method, routes[i].pattern);
        if (strcmp(rk, key) == 0)
            return true;
    }
    return false;
}

static void row_route(const struct permrun_matrix *m, size_t i, char *key, size_t n)
{
    snprintf(key, n, "%s %s", m->rows[i].method, m->rows[i].pattern);
}

/*
 * Every route that m->split gives to m->file is a route of api/routes.c with
 * a row in m, and each row of m is of such a route (test_permissions_matrix.c
 * relies on split for the routes it has no rows for).
 */
static void check_split_rows(const struct permrun_matrix *m)
{
    char key[300];
    for (size_t k = 0; k < m->nsplit; k++) {
        const char *want = m->split[k].route;
        if (strcmp(m->split[k].file, m->file) != 0)
            continue;
        bool has_row = false;
        for (size_t i = 0; i < m->nrows; i++) {
            row_route(m, i, key, sizeof key);
            has_row |= strcmp(key, want) == 0;
        }
        if (!route_in_table(want))
            note("%s is in split_routes but not in the route table", want);
        if (!has_row)
            note("route %s has no row in the permission matrix of %s", want, m->file);
    }
    for (size_t i = 0; i < m->nrows; i++) {
        row_route(m, i, key, sizeof key);
        const char *owner = permrun_split_file(m, key);
        if (!owner)
            note("the row of %s in %s is not listed in split_routes", key, m->file);
        else if (strcmp(owner, m->file) != 0)
            note("the row of %s in %s is listed in split_routes for %s", key, m->file, owner);
    }
}

/* The routes split_routes gives to this program have rows here, and only they. */
START_TEST(every_listed_route_is_in_this_matrix)
{
    reset_notes();
    check_split_rows(program_matrix);
    finish();
}
END_TEST

/* ---- the cells ------------------------------------------------------------------------ */

static void run_cell(const struct permrun_matrix *m, int ri, int a, int t)
{
    const struct permrun_row *r = &m->rows[ri];
    struct permrun_cell c = {.r = r, .ri = ri, .a = a, .t = t};
    int want = t ? r->other[a] : r->own[a];
    snprintf(c.tag, sizeof c.tag, "%s%02da%02d%c", m->tag, ri, a, t ? 'x' : 'o');
    m->prep(&c);
    snprintf(c.what, sizeof c.what, "%s %s as %s (%s)", r->method, c.path, actors[a].label,
             m->column ? m->column(&c) : (t ? "tenant other" : "tenant own"));
    struct http_res res;
    long got = as(a, r->method, c.path, c.body[0] ? c.body : NULL, &res);
    if (got != want)
        note("%s: expected %d, got %ld %s", c.what, want, got, res.body ? res.body : "");
    if ((got == 401 || got == 403 || got == 404 || got == 501) && !is_problem(&res, got))
        note("%s: %ld is not problem+json", c.what, got);
    if (got == 404)
        check_no_leak(c.what, &res);
    m->verify(&c, got, &res);
    http_res_free(&res);
}

START_TEST(matrix)
{
    const struct permrun_matrix *m = program_matrix;
    reset_notes();
    for (int a = 0; a < NACTORS; a++) {
        run_cell(m, _i, a, 0);
        if (m->rows[_i].other[0])
            run_cell(m, _i, a, 1);
    }
    finish();
}
END_TEST

void permrun_tcase_add(TCase *tc, const struct permrun_matrix *m)
{
    if (program_matrix && program_matrix != m) {
        fprintf(stderr, "test setup: a program has one permission matrix\n");
        exit(1);
    }
    program_matrix = m;
    if (m->file)
        tcase_add_test(tc, every_listed_route_is_in_this_matrix);
    tcase_add_loop_test(tc, matrix, 0, (int)m->nrows);
}

int permrun_main(const char *name, const struct permrun_matrix *m, void (*setup)(void),
                 void (*more)(TCase *tc))
{
    harness_require_pg();
    global_setup(name);
    if (setup)
        setup();
    Suite *s = suite_create(name);

    TCase *tc = tcase_create("matrix");
    tcase_set_timeout(tc, 120);
    permrun_tcase_add(tc, m);
    if (more)
        more(tc);
    suite_add_tcase(s, tc);

    int failed = suite_run(s);
    harness_teardown();
    return failed;
}

/* ---- checks for verify ---------------------------------------------------------------- */

void check_value(const struct permrun_cell *c, long got, const char *field, const char *now,
                 const char *want)
{
    if (is_2xx(got) && (!now || strcmp(now, want) != 0))
        note("%s: answered %ld but %s is \"%s\", not \"%s\"", c->what, got, field,
             now ? now : "(none)", want);
    if (!is_2xx(got) && (!now || strcmp(now, c->before) != 0))
        note("%s: refused (%ld) but %s changed from \"%s\" to \"%s\"", c->what, got, field,
             c->before, now ? now : "(none)");
}

void check_changed(const struct permrun_cell *c, long got, const char *path, const char *field,
                   const char *want)
{
    char *now = adm_field(path, field);
    check_value(c, got, field, now, want);
    free(now);
}

void check_exists(const struct permrun_cell *c, long got, const char *path, bool after_2xx)
{
    long st = adm_status(path);
    bool want = is_2xx(got) ? after_2xx : !after_2xx;
    if (st != (want ? 200 : 404))
        note("%s: answered %ld, then GET %s answers %ld to the admin (expected %d)", c->what, got,
             path, st, want ? 200 : 404);
}
