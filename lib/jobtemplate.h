/*
 * jobtemplate.h - rendering a job template (docs/templates.md): its typed
 * parameters checked against what a submit gives, then every `{{name}}`
 * placeholder replaced by its value in one pass.
 *
 * A placeholder is exactly "{{" + a parameter name + "}}"; anything else
 * (`{{ x }}`, `{{.Names}}`) is plain text. Values are never scanned again,
 * so a value holding "{{other}}" stays that text. In a shell script a value
 * goes in single-quoted ('it'\''s'), one word whatever it holds; in a
 * command item, an env value or the image it goes in as it is (no shell
 * reads those). A resource given as "{{name}}" alone takes the parameter's
 * typed value. Placeholders naming no declared parameter are refused when
 * a template is saved (jobtemplate_placeholders lists them), so rendering
 * never meets one; should it, the text is left as it is.
 *
 * No HTTP and no database here: api/templates.c maps what this reports to
 * problems.
 */
#ifndef AIDC_JOBTEMPLATE_H
#define AIDC_JOBTEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JOBTEMPLATE_MAX_PARAMS   32     /* parameters of one template */
#define JOBTEMPLATE_MAX_NAME     63     /* characters of a parameter's name */
#define JOBTEMPLATE_MAX_VALUE    4096   /* bytes of a string value */
#define JOBTEMPLATE_MAX_PATTERN  200    /* bytes of a pattern */
#define JOBTEMPLATE_MAX_CHOICES  50     /* choices of a choice parameter */
#define JOBTEMPLATE_MAX_RENDERED 262144 /* bytes of rendered text, all fields together */

enum jobtemplate_type { JT_STRING, JT_INTEGER, JT_NUMBER, JT_BOOLEAN, JT_CHOICE, JT_BAD_TYPE };

/* What is wrong with one parameter of a submit. */
enum jobtemplate_bad {
    JT_OK = 0,
    JT_UNKNOWN,    /* not declared by the template */
    JT_REQUIRED,   /* required, not given, no default */
    JT_TYPE,       /* not of the declared type */
    JT_BELOW_MIN,  /* integer/number under "min" */
    JT_ABOVE_MAX,  /* integer/number over "max" */
    JT_TOO_LONG,   /* string over JOBTEMPLATE_MAX_VALUE bytes */
    JT_PATTERN,    /* string not matching "pattern" (the whole value) */
    JT_NOT_CHOICE, /* not one of "choices" */
};

/* The type named s ("string", …), JT_BAD_TYPE for anything else. */
enum jobtemplate_type jobtemplate_type_of(const char *s);
/* A parameter name: [a-z_][a-z0-9_]*, 1 to JOBTEMPLATE_MAX_NAME characters. */
bool jobtemplate_param_name_valid(const char *s);
/* Whether pattern compiles as a POSIX extended regular expression, at most
 * JOBTEMPLATE_MAX_PATTERN bytes, without back-references (their matching time). */
bool jobtemplate_pattern_valid(const char *pattern);

/* Called once per bad parameter: its name and what is wrong; decl is its
 * declaration (NULL for JT_UNKNOWN), borrowed. */
typedef void jobtemplate_report(void *arg, const char *name, enum jobtemplate_bad bad,
                                const json_t *decl);
/*
 * Check the given parameters (an object, NULL: none) against the declared
 * ones (an array of checked declarations) and, when every one is good,
 * return the values to render (new object: given values, defaults for the
 * rest; optional parameters without a default are absent). NULL when some
 * were reported.
 */
json_t *jobtemplate_values(const json_t *declared, const json_t *given, jobtemplate_report *report,
                           void *arg);
/* Whether value v passes declaration decl (its type and bounds); *bad says why not. */
bool jobtemplate_value_ok(const json_t *decl, const json_t *v, enum jobtemplate_bad *bad);

/* s single-quoted for a POSIX shell (new string): one word, nothing expanded. */
char *jobtemplate_shell_quote(const char *s);
/*
 * s with its placeholders replaced by the text of values (shell-quoted when
 * shell); placeholders of names without a value become "" (or '' in a
 * shell). New string; NULL when the result would pass *budget bytes, else
 * *budget is lowered by its length.
 */
char *jobtemplate_substitute(const char *s, const json_t *values, bool shell, size_t *budget);
/*
 * Call found(arg, name) for each placeholder of s (a name may come more
 * than once).
 */
void jobtemplate_placeholders(const char *s, void (*found)(void *arg, const char *name), void *arg);

/*
 * The job body of template tpl (a checked template: image, command or
 * script, resources, mounts, env) rendered with values: the resources
 * flattened into the body's fields, "name" the template's. NULL when the
 * rendered text passes JOBTEMPLATE_MAX_RENDERED bytes (*too_large set) or
 * memory fails.
 */
json_t *jobtemplate_render(const json_t *tpl, const json_t *values, bool *too_large);

#endif
