/*
 * problem.h - every refusal the API can answer with, and its rendering as an
 * RFC 9457 problem document:
 * {"type","title","status","code","detail","params","request_id",
 *  "errors":[{"field","code","message","params"}]}
 *
 * A problem is an entry of one catalog (problems/ *.def, one file per area):
 * a stable dotted code ("quota.limit_exceeded") that clients and the portal
 * key on, an HTTP status, and an English text whose {name} placeholders are
 * filled from the params given where it is raised. The params travel in the
 * answer too, so a translation fills its own text with the same values.
 * Keeping every text in one catalog lets one test read them all (wording,
 * placeholders, a translation for each: tests/unit/test_problem.c) and
 * docs/errors.md list them.
 */
#ifndef AIDC_PROBLEM_H
#define AIDC_PROBLEM_H

#include <jansson.h>

enum problem {
#define PROBLEM(id, status, code, text) id,
#include "problems/core.def"
#include "problems/jobs.def"
#include "problems/images.def"
#include "problems/billing.def"
#include "problems/identity.def"
#include "problems/files.def"
#include "problems/sessions.def"
#include "problems/sso.def"
#include "problems/allocations.def"
#include "problems/templates.def"
#include "problems/jobarrays.def"
#include "problems/notify.def"
#undef PROBLEM
    PROBLEM_COUNT
};

struct problem_def {
    const char *name; /* the enum constant's name, for tests and docs */
    int status;
    const char *code;
    const char *text;
};

/* The catalog entry of p (p < PROBLEM_COUNT). */
const struct problem_def *problem_def(enum problem p);

/*
 * text with each {name} (a name of [a-z0-9_]) replaced by params' member of
 * that name: strings as they are, integers in decimal, reals as %g, true,
 * false and null spelled out. Braces around anything else, and placeholders
 * params lacks, stay as written. Returns malloc'd valid UTF-8.
 */
char *problem_format(const char *text, const json_t *params);

/* A number for params: an integer when v is whole (most amounts are), so it
 * reads "2", not "2.0", in every language. New reference. */
json_t *problem_number(double v);

/* A string for params from text that may not be UTF-8 (a lower layer's words,
 * quoting what a client or a cluster sent, cut anywhere): such bytes become
 * U+FFFD, where json_string would refuse the whole text. New reference. */
json_t *problem_text(const char *s);

/* The reason phrase for an HTTP status ("Not Found"). */
const char *problem_title(int status);

struct api_error;
/* Render e as JSON text (malloc'd). */
char *problem_render(const struct api_error *e, const char *request_id);

#endif
