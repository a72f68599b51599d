/* jsonsplit.c - a large JSON answer taken apart as it arrives (see jsonsplit.h). */
#include "jsonsplit.h"

#include "../lib/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where in the object the next byte falls. */
enum {
    BEFORE,      /* before its '{' */
    EXPECT_KEY,  /* after '{' or ',' */
    IN_KEY,      /* in a key's string */
    AFTER_KEY,   /* before ':' */
    VALUE_START, /* after ':' */
    IN_VALUE,    /* a member other than the split array */
    IN_ARRAY,    /* the split array: its elements, one by one */
    AFTER_VALUE, /* the array ended, before ',' or '}' */
    DONE,        /* after the object's '}' */
};

static bool fail(struct jsonsplit *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(struct jsonsplit *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    s->failed = true;
    return false;
}

void jsonsplit_init(struct jsonsplit *s)
{
    s->buf = NULL;
    s->len = s->cap = s->key_len = s->elements = 0;
    s->depth = 0;
    s->where = BEFORE;
    s->in_string = s->escape = s->array_seen = s->failed = false;
    s->key[0] = s->why[0] = '\0';
}

void jsonsplit_free(struct jsonsplit *s)
{
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

static bool space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool put(struct jsonsplit *s, char c)
{
    if (s->len + 1 > s->max_value)
        return fail(s, "a value of \"%s\" is larger than %zu bytes", s->key, s->max_value);
    if (s->len + 1 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        s->buf = xrealloc(s->buf, cap);
        s->cap = cap;
    }
    s->buf[s->len++] = c;
    return true;
}

/* The value held (without surrounding blanks) to its callback; the buffer stays for the next. */
static bool emit(struct jsonsplit *s, bool element)
{
    size_t a = 0, b = s->len;
    while (a < b && space(s->buf[a]))
        a++;
    while (b > a && space(s->buf[b - 1]))
        b--;
    s->len = 0;
    if (a == b)
        return fail(s, "an empty value in \"%s\"", s->key);
    bool go = element ? s->on_element(s->arg, s->buf + a, b - a)
                      : s->on_member(s->arg, s->key, s->buf + a, b - a);
    if (!go)
        return fail(s, "stopped at a value of \"%s\"", s->key);
    if (element)
        s->elements++;
    return true;
}

/* A byte of a value held whole (a member, an element): strings and nesting followed. */
static bool value_byte(struct jsonsplit *s, char c)
{
    if (s->in_string) {
        if (s->escape)
            s->escape = false;
        else if (c == '\\')
            s->escape = true;
        else if (c == '"')
            s->in_string = false;
        return put(s, c);
    }
    if (c == '"')
        s->in_string = true;
    else if (c == '{' || c == '[')
        s->depth++;
    else if (c == '}' || c == ']')
        s->depth--;
    return put(s, c);
}

static bool byte(struct jsonsplit *s, char c)
{
    switch (s->where) {
    case BEFORE:
        if (c == '{') {
            s->depth = 1;
            s->where = EXPECT_KEY;
        } else if (!space(c)) {
            return fail(s, "the answer is not a JSON object");
        }
        return true;
    case EXPECT_KEY:
        if (c == '"') {
            s->key_len = 0;
            s->key[0] = '\0';
            s->where = IN_KEY;
        } else if (c == '}' && s->key_len == 0 && !s->array_seen) {
            s->depth = 0;
            s->where = DONE; /* {} */
        } else if (!space(c)) {
            return fail(s, "a key expected, '%c' found", c);
        }
        return true;
    case IN_KEY:
        /* keys are compared as they are written: escapes are not undone */
        if (s->escape) {
            s->escape = false;
        } else if (c == '\\') {
            s->escape = true;
        } else if (c == '"') {
            s->where = AFTER_KEY;
            return true;
        }
        if (s->key_len < JSONSPLIT_MAX_KEY) {
            s->key[s->key_len++] = c;
            s->key[s->key_len] = '\0';
        } else {
            s->key[0] = '\0'; /* too long to be one we look for */
        }
        return true;
    case AFTER_KEY:
        if (c == ':')
            s->where = VALUE_START;
        else if (!space(c))
            return fail(s, "':' expected after \"%s\"", s->key);
        return true;
    case VALUE_START:
        if (space(c))
            return true;
        if (c == '[' && strcmp(s->key, s->array_key) == 0) {
            if (s->array_seen)
                return fail(s, "\"%s\" twice", s->key);
            s->array_seen = true;
            s->depth = 2;
            s->len = 0;
            s->where = IN_ARRAY;
            return true;
        }
        s->len = 0;
        s->where = IN_VALUE;
        return value_byte(s, c);
    case IN_VALUE:
        if (!s->in_string && s->depth == 1 && (c == ',' || c == '}')) {
            if (!emit(s, false))
                return false;
            s->where = c == ',' ? EXPECT_KEY : DONE;
            s->depth = c == ',' ? 1 : 0;
            return true;
        }
        if (!s->in_string && s->depth == 1 && c == ']')
            return fail(s, "']' where \"%s\" should end", s->key);
        return value_byte(s, c);
    case IN_ARRAY:
        if (!s->in_string && s->depth == 2 && c == ',')
            return emit(s, true);
        if (!s->in_string && s->depth == 2 && c == ']') {
            bool blank = true;
            for (size_t i = 0; i < s->len && blank; i++)
                blank = space(s->buf[i]);
            if (blank && s->elements > 0)
                return fail(s, "a ',' before the end of \"%s\"", s->key);
            if (!blank && !emit(s, true))
                return false;
            s->depth = 1;
            s->len = 0;
            s->where = AFTER_VALUE;
            return true;
        }
        if (!s->in_string && s->depth == 2 && c == '}')
            return fail(s, "'}' in the array \"%s\"", s->key);
        return value_byte(s, c);
    case AFTER_VALUE:
        if (c == ',')
            s->where = EXPECT_KEY;
        else if (c == '}') {
            s->depth = 0;
            s->where = DONE;
        } else if (!space(c)) {
            return fail(s, "',' or '}' expected after \"%s\"", s->key);
        }
        return true;
    case DONE:
    default:
        if (!space(c))
            return fail(s, "bytes after the end of the answer");
        return true;
    }
}

bool jsonsplit_feed(struct jsonsplit *s, const char *data, size_t n)
{
    if (s->failed)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!byte(s, data[i]))
            return false;
    return true;
}

bool jsonsplit_finish(struct jsonsplit *s)
{
    if (s->failed)
        return false;
    if (s->where != DONE)
        return fail(s, "the answer ended before its end");
    if (!s->array_seen)
        return fail(s, "no \"%s\" array in the answer", s->array_key);
    return true;
}
