/* validate.c - input checks (see validate.h). */
#include "validate.h"

#include "../lib/crypto.h"
#include "password.h"
#include "../lib/sbuf.h"

#include <string.h>

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool validate_slug(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 2 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

bool validate_username(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

bool validate_email(const char *s)
{
    if (!s)
        return false;
    size_t n = strlen(s);
    if (n == 0)
        return true;
    const char *at = strchr(s, '@');
    if (n > 254 || !at || at == s || at[1] == '\0' || strchr(at + 1, '@'))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p == 0x7f)
            return false;
    return true;
}

size_t validate_utf8_len(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xc0) != 0x80;
    return n;
}

static enum problem type_problem(enum vtype t)
{
    switch (t) {
    case V_STRING: return PROBLEM_V_TYPE_STRING;
    case V_BOOL: return PROBLEM_V_TYPE_BOOL;
    case V_INT: return PROBLEM_V_TYPE_INTEGER;
    case V_STRING_ARRAY: return PROBLEM_V_TYPE_STRINGS;
    case V_OBJECT: return PROBLEM_V_TYPE_OBJECT;
    case V_ANY: break;
    }
    return PROBLEM_V_INVALID;
}

/* {"value": v}, cut to 64 characters (what a message may quote of input) */
static json_t *value_param(const char *v)
{
    return json_pack("{s:s%}", "value", v, sbuf_utf8_prefix(v, 64));
}

static json_t *range_params(long min, long max)
{
    return json_pack("{s:I, s:I}", "min", (json_int_t)min, "max", (json_int_t)max);
}

static bool check_string(const struct vfield *f, const char *field, const char *v, struct resp *rs)
{
    size_t len = validate_utf8_len(v);
    if ((f->min || f->max) && (len < (size_t)f->min || len > (size_t)f->max)) {
        api_field_problem(rs, field, f->min == f->max ? PROBLEM_V_LENGTH_EXACT : PROBLEM_V_LENGTH,
                          range_params(f->min, f->max));
        return false;
    }
    if (f->check && !f->check(v)) {
        api_field_problem(rs, field, f->check_problem, value_param(v));
        return false;
    }
    return true;
}

static bool check_field(const struct vfield *f, const json_t *v, struct resp *rs)
{
    if (json_is_null(v)) {
        if (f->flags & V_NULLABLE)
            return true;
        api_field_problem(rs, f->name, PROBLEM_V_NOT_NULL, NULL);
        return false;
    }
    switch (f->type) {
    case V_STRING:
        if (!json_is_string(v))
            break;
        return check_string(f, f->name, json_string_value(v), rs);
    case V_BOOL:
        if (!json_is_boolean(v))
            break;
        return true;
    case V_INT:
        if (!json_is_integer(v))
            break;
        if ((f->min || f->max) &&
            (json_integer_value(v) < f->min || json_integer_value(v) > f->max)) {
            api_field_problem(rs, f->name, PROBLEM_V_RANGE, range_params(f->min, f->max));
            return false;
        }
        return true;
    case V_STRING_ARRAY: {
        if (!json_is_array(v))
            break;
        size_t n = json_array_size(v);
        if (f->max && (n < (size_t)f->min || n > (size_t)f->max)) {
            api_field_problem(rs, f->name, PROBLEM_V_ITEMS, range_params(f->min, f->max));
            return false;
        }
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) {
            if (!json_is_string(item)) {
                api_field_problem(rs, f->name, PROBLEM_V_TYPE_STRINGS, NULL);
                return false;
            }
            if (f->check && !f->check(json_string_value(item))) {
                api_field_problem(rs, f->name, f->check_problem,
                                  value_param(json_string_value(item)));
                return false;
            }
        }
        return true;
    }
    case V_OBJECT:
        if (!json_is_object(v))
            break;
        return true;
    case V_ANY:
        return true;
    }
    api_field_problem(rs, f->name, type_problem(f->type), NULL);
    return false;
}

bool validate_object(const json_t *obj, const struct vfield *fields, size_t n, struct resp *rs)
{
    bool ok = true;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = strcmp(fields[i].name, key) == 0;
        if (!known) {
            api_field_problem(rs, key, PROBLEM_V_UNKNOWN_FIELD, NULL);
            ok = false;
        }
    }
    for (size_t i = 0; i < n; i++) {
        v = json_object_get(obj, fields[i].name);
        if (!v) {
            if (fields[i].flags & V_REQUIRED) {
                api_field_problem(rs, fields[i].name, PROBLEM_V_REQUIRED, NULL);
                ok = false;
            }
            continue;
        }
        if (!check_field(&fields[i], v, rs))
            ok = false;
    }
    return ok;
}

const char *vstr(const json_t *obj, const char *name)
{
    return json_string_value(json_object_get(obj, name));
}

bool vhas(const json_t *obj, const char *name)
{
    return json_object_get(obj, name) != NULL;
}

bool validate_password(const char *pw, const char *field, struct resp *rs)
{
    switch (pw ? password_policy(pw) : PASSWORD_OK) {
    case PASSWORD_OK: return true;
    case PASSWORD_TOO_SHORT:
        api_field_problem(rs, field, PROBLEM_PASSWORD_TOO_SHORT,
                          json_pack("{s:i}", "min", PASSWORD_MIN_LEN));
        break;
    case PASSWORD_TOO_LONG:
        api_field_problem(rs, field, PROBLEM_V_BYTES_MAX, json_pack("{s:i}", "max", PASSWORD_MAX_LEN));
        break;
    }
    return false;
}

int validate_id_param(struct req *rq, struct resp *rs, const char **out)
{
    *out = req_param(rq, "id");
    if (!crypto_uuid_valid(*out)) {
        api_field_problem(rs, "id", PROBLEM_V_UUID, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}
