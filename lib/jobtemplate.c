/* jobtemplate.c - checking parameters and rendering a job template (see jobtemplate.h). */
#include "jobtemplate.h"

#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum jobtemplate_type jobtemplate_type_of(const char *s)
{
    static const char *const names[] = {"string", "integer", "number", "boolean", "choice"};
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0)
            return (enum jobtemplate_type)i;
    return JT_BAD_TYPE;
}

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || c == '_' || (!first && c >= '0' && c <= '9');
}

bool jobtemplate_param_name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > JOBTEMPLATE_MAX_NAME)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i], i == 0))
            return false;
    return true;
}

/* glibc's extended expressions take back-references (\1), whose matching may take
 * exponential time on a long value: a pattern is refused with one */
static bool has_backref(const char *p)
{
    for (; *p; p++)
        if (p[0] == '\\' && p[1] && (p[1] >= '1' && p[1] <= '9'))
            return true;
        else if (p[0] == '\\' && p[1])
            p++;
    return false;
}

/* The whole value must match: the pattern is wrapped in ^( )$. */
static bool compile(const char *pattern, regex_t *re)
{
    if (strlen(pattern) > JOBTEMPLATE_MAX_PATTERN || has_backref(pattern))
        return false;
    char *full = xasprintf("^(%s)$", pattern);
    int rc = regcomp(re, full, REG_EXTENDED | REG_NOSUB);
    free(full);
    return rc == 0;
}

bool jobtemplate_pattern_valid(const char *pattern)
{
    regex_t re;
    if (!compile(pattern, &re))
        return false;
    regfree(&re);
    return true;
}

static bool in_bounds(const json_t *decl, double x, enum jobtemplate_bad *bad)
{
    const json_t *mn = json_object_get(decl, "min"), *mx = json_object_get(decl, "max");
    if (json_is_number(mn) && x < json_number_value(mn)) {
        *bad = JT_BELOW_MIN;
        return false;
    }
    if (json_is_number(mx) && x > json_number_value(mx)) {
        *bad = JT_ABOVE_MAX;
        return false;
    }
    return true;
}

static bool string_ok(const json_t *decl, const char *s, enum jobtemplate_bad *bad)
{
    if (strlen(s) > JOBTEMPLATE_MAX_VALUE) {
        *bad = JT_TOO_LONG;
        return false;
    }
    const char *pattern = json_string_value(json_object_get(decl, "pattern"));
    if (!pattern)
        return true;
    regex_t re;
    bool ok = compile(pattern, &re);
    if (ok) {
        ok = regexec(&re, s, 0, NULL, 0) == 0;
        regfree(&re);
    }
    if (!ok)
        *bad = JT_PATTERN;
    return ok;
}

static bool choice_ok(const json_t *decl, const char *s, enum jobtemplate_bad *bad)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(decl, "choices"), i, c)
    {
        if (json_is_string(c) && strcmp(json_string_value(c), s) == 0)
            return true;
    }
    *bad = JT_NOT_CHOICE;
    return false;
}

bool jobtemplate_value_ok(const json_t *decl, const json_t *v, enum jobtemplate_bad *bad)
{
    *bad = JT_TYPE;
    switch (jobtemplate_type_of(json_string_value(json_object_get(decl, "type")))) {
    case JT_STRING:
        return json_is_string(v) && string_ok(decl, json_string_value(v), bad);
    case JT_INTEGER:
        return json_is_integer(v) && in_bounds(decl, (double)json_integer_value(v), bad);
    case JT_NUMBER:
        return json_is_number(v) && isfinite(json_number_value(v)) &&
               in_bounds(decl, json_number_value(v), bad);
    case JT_BOOLEAN:
        return json_is_boolean(v);
    case JT_CHOICE:
        return json_is_string(v) && choice_ok(decl, json_string_value(v), bad);
    case JT_BAD_TYPE:
        break;
    }
    return false;
}

static const json_t *declaration(const json_t *declared, const char *name)
{
    size_t i;
    json_t *d;
    json_array_foreach(declared, i, d)
    {
        const char *n = json_string_value(json_object_get(d, "name"));
        if (n && strcmp(n, name) == 0)
            return d;
    }
    return NULL;
}

json_t *jobtemplate_values(const json_t *declared, const json_t *given, jobtemplate_report *report,
                           void *arg)
{
    bool ok = true;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)given, k, v)
    {
        if (!declaration(declared, k)) {
            report(arg, k, JT_UNKNOWN, NULL);
            ok = false;
        }
    }
    json_t *values = json_object();
    if (!values)
        return NULL;
    size_t i;
    json_t *d;
    json_array_foreach(declared, i, d)
    {
        const char *name = json_string_value(json_object_get(d, "name"));
        if (!name)
            continue;
        const json_t *g = json_object_get(given, name);
        if (g && !json_is_null(g)) {
            enum jobtemplate_bad bad;
            if (!jobtemplate_value_ok(d, g, &bad)) {
                report(arg, name, bad, d);
                ok = false;
            } else {
                json_object_set(values, name, (json_t *)g);
            }
        } else if (json_object_get(d, "default") && !json_is_null(json_object_get(d, "default"))) {
            json_object_set(values, name, json_object_get(d, "default"));
        } else if (json_is_true(json_object_get(d, "required"))) {
            report(arg, name, JT_REQUIRED, d);
            ok = false;
        }
    }
    if (!ok) {
        json_decref(values);
        return NULL;
    }
    return values;
}

char *jobtemplate_shell_quote(const char *s)
{
    struct sbuf sb = {0};
    sbuf_putc(&sb, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            sbuf_puts(&sb, "'\\''");
        else
            sbuf_putc(&sb, *s);
    }
    sbuf_putc(&sb, '\'');
    return sbuf_steal(&sb);
}

/* A value as text: strings as they are, numbers in their shortest usual form. */
static char *text_of(const json_t *v)
{
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    if (json_is_integer(v))
        return xasprintf("%lld", (long long)json_integer_value(v));
    if (json_is_real(v))
        return xasprintf("%.15g", json_real_value(v));
    if (json_is_boolean(v))
        return xstrdup(json_is_true(v) ? "true" : "false");
    return xstrdup("");
}

/* Length of the name of a placeholder at p ("{{name}}"), 0 when p starts none. */
static size_t placeholder_at(const char *p, size_t *len)
{
    if (p[0] != '{' || p[1] != '{' || !name_char(p[2], true))
        return 0;
    size_t n = 1;
    while (n <= JOBTEMPLATE_MAX_NAME && name_char(p[2 + n], false))
        n++;
    if (n > JOBTEMPLATE_MAX_NAME || p[2 + n] != '}' || p[3 + n] != '}')
        return 0;
    *len = n + 4;
    return n;
}

void jobtemplate_placeholders(const char *s, void (*found)(void *arg, const char *name), void *arg)
{
    char name[JOBTEMPLATE_MAX_NAME + 1];
    for (const char *p = s; *p;) {
        size_t len, n = placeholder_at(p, &len);
        if (!n) {
            p++;
            continue;
        }
        memcpy(name, p + 2, n);
        name[n] = '\0';
        found(arg, name);
        p += len;
    }
}

char *jobtemplate_substitute(const char *s, const json_t *values, bool shell, size_t *budget)
{
    struct sbuf sb = {0};
    char name[JOBTEMPLATE_MAX_NAME + 1];
    for (const char *p = s; *p && sb.len <= *budget;) {
        size_t len, n = placeholder_at(p, &len);
        if (!n) {
            sbuf_putc(&sb, *p++);
            continue;
        }
        memcpy(name, p + 2, n);
        name[n] = '\0';
        const json_t *v = json_object_get(values, name);
        char *text = text_of(v);
        if (shell) {
            char *q = jobtemplate_shell_quote(text);
            free(text);
            text = q;
        }
        sbuf_puts(&sb, text);
        free(text);
        p += len;
    }
    if (sb.len > *budget) {
        sbuf_free(&sb);
        return NULL;
    }
    *budget -= sb.len;
    return sbuf_steal(&sb);
}

/* A rendered string into body[key]; false when over the budget. */
static bool put_text(json_t *body, const char *key, const char *s, const json_t *values, bool shell,
                     size_t *budget)
{
    char *r = jobtemplate_substitute(s, values, shell, budget);
    if (!r)
        return false;
    json_object_set_new(body, key, json_string(r));
    free(r);
    return true;
}

/* A resource: as it is, or "{{name}}" alone replaced by the value itself. */
static void put_resource(json_t *body, const char *key, json_t *v, const json_t *values)
{
    const char *s = json_string_value(v);
    size_t len = 0, n = s ? placeholder_at(s, &len) : 0;
    if (n && s[len] == '\0') {
        char name[JOBTEMPLATE_MAX_NAME + 1];
        memcpy(name, s + 2, n);
        name[n] = '\0';
        json_t *val = json_object_get(values, name);
        if (val) /* an optional parameter without a value: the job's default */
            json_object_set(body, key, val);
        return;
    }
    json_object_set(body, key, v);
}

static bool render_lists(json_t *body, const json_t *tpl, const json_t *values, size_t *budget)
{
    const json_t *cmd = json_object_get(tpl, "command");
    if (json_is_array(cmd)) {
        json_t *out = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(cmd, i, item)
        {
            char *r = jobtemplate_substitute(json_string_value(item) ? json_string_value(item) : "",
                                             values, false, budget);
            if (!r) {
                json_decref(out);
                return false;
            }
            json_array_append_new(out, json_string(r));
            free(r);
        }
        json_object_set_new(body, "command", out);
    }
    const json_t *env = json_object_get(tpl, "env");
    if (json_is_object(env)) {
        json_t *out = json_object();
        json_object_set_new(body, "env", out);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)env, k, v)
        {
            if (!put_text(out, k, json_string_value(v) ? json_string_value(v) : "", values, false,
                          budget))
                return false;
        }
    }
    return true;
}

json_t *jobtemplate_render(const json_t *tpl, const json_t *values, bool *too_large)
{
    *too_large = false;
    size_t budget = JOBTEMPLATE_MAX_RENDERED;
    json_t *body = json_object();
    if (!body)
        return NULL;
    const char *name = json_string_value(json_object_get(tpl, "name"));
    if (name)
        json_object_set_new(body, "name", json_string(name));
    const char *image = json_string_value(json_object_get(tpl, "image"));
    const char *script = json_string_value(json_object_get(tpl, "script"));
    bool ok = (!image || put_text(body, "image", image, values, false, &budget)) &&
              (!script || put_text(body, "script", script, values, true, &budget)) &&
              render_lists(body, tpl, values, &budget);
    if (!ok) {
        *too_large = true;
        json_decref(body);
        return NULL;
    }
    const json_t *mounts = json_object_get(tpl, "mounts");
    if (json_is_array(mounts))
        json_object_set(body, "mounts", (json_t *)mounts);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(tpl, "resources"), k, v) put_resource(body, k, v, values);
    return body;
}
