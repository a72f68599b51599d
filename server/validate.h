/*
 * validate.h - checking client input: identifiers and JSON request bodies.
 *
 * validate_object checks a body against a field table in one pass: unknown
 * fields, missing required fields, wrong types, lengths (in characters, not
 * bytes) and ranges. Every problem becomes a field error of the 400 answer,
 * so a client learns everything wrong at once.
 */
#ifndef AIDC_VALIDATE_H
#define AIDC_VALIDATE_H

#include "request.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* ^[a-z][a-z0-9-]{1,62}$ */
bool validate_slug(const char *s);
/* ^[a-z][a-z0-9._-]{0,62}$ */
bool validate_username(const char *s);
/* Empty, or one "@" with text on both sides, no spaces, at most 254 bytes. */
bool validate_email(const char *s);
/* Number of UTF-8 characters of a valid UTF-8 string. */
size_t validate_utf8_len(const char *s);

/* V_ANY: any JSON value, checked by the caller (a field whose shape needs more than a table) */
enum vtype { V_STRING, V_BOOL, V_INT, V_STRING_ARRAY, V_OBJECT, V_ANY };

enum vflag {
    V_REQUIRED = 1u << 0,
    V_NULLABLE = 1u << 1, /* null is accepted (and means "none"/"unset") */
};

struct vfield {
    const char *name;
    enum vtype type;
    unsigned flags;
    long min, max; /* string: characters; int: value; array: items (0,0 = no limit) */
    bool (*check)(const char *); /* strings and array items: extra rule */
    enum problem check_problem;  /* ... and what it demands (its params: "value") */
};

/*
 * Check obj against n fields, adding a field error to rs for each problem.
 * Returns true when obj is valid.
 */
bool validate_object(const json_t *obj, const struct vfield *fields, size_t n, struct resp *rs);

/* Whether a new password pw (NULL: none given) passes the password policy; if
 * not, a field error on field. */
bool validate_password(const char *pw, const char *field, struct resp *rs);

/*
 * The route's {id} into *out: 0 when it is a UUID, else a 400 naming the
 * parameter filled into rs (its status returned).
 */
int validate_id_param(struct req *rq, struct resp *rs, const char **out);

/* The string value of obj[name], or NULL when absent, null or not a string. */
const char *vstr(const json_t *obj, const char *name);
/* True if obj has key name (even if null). */
bool vhas(const json_t *obj, const char *name);

#endif
