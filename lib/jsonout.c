/* jsonout.c - a JSON answer's text (see jsonout.h). */
#include "jsonout.h"

#include "sbuf.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Deeper than any answer aidc builds; a deeper tree (or a cycle) is refused. */
#define MAX_DEPTH 2048

/*
 * The length of the UTF-8 sequence at p (at most n bytes) and its code
 * point, or 0 where jansson's decoder refuses it: a stray continuation byte,
 * an overlong form, a surrogate, past U+10FFFF, cut short.
 */
static size_t utf8_next(const unsigned char *p, size_t n, unsigned *cp)
{
    unsigned c = p[0];
    size_t len;
    unsigned v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
        (len == 4 && (v < 0x10000 || v > 0x10FFFF)))
        return 0;
    *cp = v;
    return len;
}

bool jsonout_string(struct sbuf *sb, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF"; /* jansson writes \u001F */
    const unsigned char *p = (const unsigned char *)s;
    sbuf_putc(sb, '"');
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n;) {
        if (p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\') {
            i++; /* the common case: printable ASCII, as it is */
            run++;
            continue;
        }
        unsigned cp;
        size_t len = utf8_next(p + i, n - i, &cp);
        if (!len)
            return false;
        if (cp >= 0x20 && cp != '"' && cp != '\\') {
            i += len;
            run += len;
            continue;
        }
        sbuf_append(sb, (const char *)p + i - run, run);
        run = 0;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t elen = 2;
        switch (cp) {
        case '"':
        case '\\':
            esc[1] = (char)cp;
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[cp >> 4];
            esc[5] = hex[cp & 15];
            elen = 6;
        }
        sbuf_append(sb, esc, elen);
        i += len;
    }
    sbuf_append(sb, (const char *)p + n - run, run);
    sbuf_putc(sb, '"');
    return true;
}

void jsonout_integer(struct sbuf *sb, json_int_t v)
{
    char buf[24];
    char *e = buf + sizeof buf, *q = e;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--q = '-';
    sbuf_append(sb, q, (size_t)(e - q));
}

/* As jansson's jsonp_dtostr with precision 15: "%.15g", a ".0" where it would
 * read back as an integer, the exponent without '+' or leading zeros. */
bool jsonout_real(struct sbuf *sb, double v)
{
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%.15g", v);
    if (n < 0 || (size_t)n >= sizeof buf - 3)
        return false;
    size_t len = (size_t)n;
    if (!strchr(buf, '.') && !strchr(buf, 'e')) {
        memcpy(buf + len, ".0", 3);
        len += 2;
    }
    char *start = strchr(buf, 'e');
    if (start) {
        start++;
        char *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, len - (size_t)(end - buf) + 1);
            len -= (size_t)(end - start);
        }
    }
    sbuf_append(sb, buf, len);
    return true;
}

static bool put_value(struct sbuf *sb, const json_t *v, int depth)
{
    if (depth > MAX_DEPTH)
        return false;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        sbuf_putc(sb, '{');
        bool first = true;
        const char *key;
        const json_t *item;
        void *it = json_object_iter((json_t *)v);
        for (; it; it = json_object_iter_next((json_t *)v, it)) {
            key = json_object_iter_key(it);
            item = json_object_iter_value(it);
            if (!first)
                sbuf_putc(sb, ',');
            first = false;
            if (!jsonout_string(sb, key, json_object_iter_key_len(it)))
                return false;
            sbuf_putc(sb, ':');
            if (!put_value(sb, item, depth + 1))
                return false;
        }
        sbuf_putc(sb, '}');
        return true;
    }
    case JSON_ARRAY: {
        sbuf_putc(sb, '[');
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            if (i)
                sbuf_putc(sb, ',');
            if (!put_value(sb, json_array_get(v, i), depth + 1))
                return false;
        }
        sbuf_putc(sb, ']');
        return true;
    }
    case JSON_STRING:
        return jsonout_string(sb, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        jsonout_integer(sb, json_integer_value(v));
        return true;
    case JSON_REAL:
        return jsonout_real(sb, json_real_value(v));
    case JSON_TRUE:
        sbuf_append(sb, "true", 4);
        return true;
    case JSON_FALSE:
        sbuf_append(sb, "false", 5);
        return true;
    case JSON_NULL:
        sbuf_append(sb, "null", 4);
        return true;
    }
    return false;
}

bool jsonout_value(struct sbuf *sb, const json_t *v)
{
    return put_value(sb, v, 0);
}

bool jsonout_object_add_string(struct sbuf *sb, const char *key, const char *value)
{
    if (sb->len < 2 || sb->buf[sb->len - 1] != '}')
        return false;
    size_t end = sb->len - 1;
    bool empty = sb->buf[end - 1] == '{';
    sbuf_truncate(sb, end); /* reopened */
    if (!empty)
        sbuf_putc(sb, ',');
    bool ok = jsonout_string(sb, key, strlen(key));
    sbuf_putc(sb, ':');
    ok = ok && jsonout_string(sb, value, strlen(value));
    if (!ok)
        sbuf_truncate(sb, end); /* closed again as it was */
    sbuf_putc(sb, '}');
    return ok;
}

char *jsonout_compact(const json_t *v)
{
    if (!json_is_object(v) && !json_is_array(v))
        return NULL;
    struct sbuf sb = SBUF_INIT;
    sbuf_reserve(&sb, 1024); /* most answers: one allocation */
    if (!put_value(&sb, v, 0)) {
        sbuf_free(&sb);
        return NULL;
    }
    return sbuf_steal(&sb);
}
