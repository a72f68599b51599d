/*
 * imagestest.h - what the image tests (tests/http/test_images*.c) share:
 * their suite of tests on one server, their users and the tenants, registry
 * and public image the programs stand on, image bodies with digests of their
 * own, registration that must succeed, refusals that must be problem
 * documents, and counts in the database.
 */
#ifndef AIDC_TEST_IMAGESTEST_H
#define AIDC_TEST_IMAGESTEST_H

#include "tests/support/client.h"

#include <check.h>
#include <jansson.h>
#include <stdbool.h>

/*
 * The suite of an image program: one test case, both called name, whose
 * tests share one aidcd - setup runs before the first test and teardown after
 * the last (Check's unchecked fixture), so each test works on images of its
 * own - each test 120 s at most: tests, NULL-terminated, in that order.
 */
Suite *imagestest_suite(const char *name, void (*setup)(void), void (*teardown)(void),
                        const TTest *const *tests);

/*
 * After harness_setup: tenants alpha and beta; the registry "reg" at an
 * address nothing listens at (its syncs fail at once and change nothing),
 * which maps library/ to everyone and teams/<tenant>/ to that tenant; and the
 * public image library/pub:1 (digest of 0xb0b), as a sync of a platform
 * repository would have found it: its id into pub_id (if not NULL).
 */
void imagestest_world(char *pub_id);

/*
 * The users test_images.c and test_images_changes.c share, logged in (JWTs,
 * malloc'd): of tenant alpha, members am and am2, viewer av, tenant admin aa;
 * of beta, member bm and tenant admin ba; of no tenant, fin (finance) and aud
 * (auditor).
 */
struct imagestest_users {
    char *am, *am2, *av, *aa;
    char *bm, *ba;
    char *fin, *aud;
};

/* After imagestest_world: make the users of u and log them in (in the order of u). */
void imagestest_users_login(struct imagestest_users *u);
/* Free the JWTs of u (NULL ones too). */
void imagestest_users_free(struct imagestest_users *u);

/*
 * As the admin: make user name (global roles as JSON text, or NULL), a member
 * of tenant as role (tenant NULL: of none), and log it in: its JWT (malloc'd).
 */
char *imagestest_user(const char *name, const char *roles, const char *tenant, const char *role);

/* A digest of its own for n ("sha256:" and 64 hex digits). */
void imagestest_digest_of(unsigned n, char out[72]);

/* Whether o[k] is the string want. */
bool imagestest_is(const json_t *o, const char *k, const char *want);

/*
 * The body of an image: repository, tag, digest of n, size; extra JSON
 * members (or ""). An fmt() buffer.
 */
const char *imagestest_image_body(const char *repo, const char *tag, unsigned n, long long size,
                                  const char *extra);

/*
 * As jwt, register an image in tenant; it must be 201: its id into id. The id
 * is looked up in the database, not taken from the answer, so that a wrong
 * echo fails the test of the echo and not every other one.
 */
void imagestest_reg_ok(const char *jwt, const char *tenant, const char *body, char id[37]);
/* imagestest_reg_ok of imagestest_image_body(repo, tag, n, size, extra). */
void imagestest_reg(const char *jwt, const char *tenant, const char *repo, const char *tag,
                    unsigned n, long long size, const char *extra, char id[37]);

/* Whether the problem document names field in its errors (and, if given, says want there). */
bool imagestest_names_field(const json_t *problem, const char *field, const char *want);

/*
 * method path as jwt answers status with a problem of code whose params have
 * key == value (a string; key NULL: not checked). The answer, to look at more
 * (free it with http_res_free).
 */
struct http_res imagestest_problem(const char *method, const char *path, const char *jwt,
                                   const char *body, long status, const char *code, const char *key,
                                   const char *value);

/*
 * method path as jwt must answer a problem document of status naming field
 * (NULL: any) that does not hold absent (NULL: anything may be in it); what
 * says which case failed.
 */
void imagestest_refused_hiding(const char *method, const char *path, const char *jwt,
                               const char *body, long status, const char *field, const char *what,
                               const char *absent);
/* As imagestest_refused_hiding, whatever the answer holds. */
void imagestest_refused(const char *method, const char *path, const char *jwt, const char *body,
                        long status, const char *field, const char *what);

/* The items' "repository:tag", sorted as listed, joined by ' ' (static buffer). */
const char *imagestest_refs(const json_t *items);

/* The number sql (with n params) answers as the owner; the test fails when there is none. */
long long imagestest_sql_num(const char *sql, int n, const char *const *p);
/* The count sql (as the owner) must be want. */
void imagestest_count_is(long long want, const char *sql, int n, const char *const *p);

#endif
