/*
 * jsonsplit.h - an answer too large to hold, taken apart as it arrives: a
 * JSON object whose one member (say "jobs") is an array of many elements is
 * fed in pieces of any size (a curl write callback's), and each element of
 * that array is handed over as its own text once its last byte came; every
 * other member of the object ("meta", "errors") is handed over whole, with
 * its key. Only the current element or member is held (its buffer is reused),
 * so memory follows the largest element, not the answer (slurmrestd's
 * GET jobs: ~3.2 KB a job, 130 MB at 40,000 jobs).
 *
 * It only finds where values begin and end (strings, escapes, nesting); the
 * texts it hands over are parsed by the caller (jansson), which checks them.
 * A structure it cannot follow (not an object, unbalanced brackets, bytes
 * after the end, an element larger than the cap) is an error, and nothing
 * more is handed over.
 */
#ifndef AIDC_JSONSPLIT_H
#define AIDC_JSONSPLIT_H

#include <stdbool.h>
#include <stddef.h>

#define JSONSPLIT_MAX_KEY 64

/* Returns false to stop (jsonsplit_feed then fails with why). */
typedef bool (*jsonsplit_element_fn)(void *arg, const char *text, size_t len);
typedef bool (*jsonsplit_member_fn)(void *arg, const char *key, const char *text, size_t len);

struct jsonsplit {
    /* set by the caller */
    const char *array_key; /* the member whose array is split */
    size_t max_value;      /* largest element or other member, bytes */
    jsonsplit_element_fn on_element;
    jsonsplit_member_fn on_member;
    void *arg;
    /* state */
    char *buf;
    size_t len, cap;
    int depth, where; /* nesting; the place in the object (jsonsplit.c) */
    bool in_string, escape, array_seen, failed;
    size_t key_len, elements;
    char key[JSONSPLIT_MAX_KEY + 1];
    char why[128];
};

/* Ready to feed (the fields the caller sets must be set already). */
void jsonsplit_init(struct jsonsplit *s);
/* The next n bytes; false with s->why when the text is not what it expects or a callback stopped.
 */
bool jsonsplit_feed(struct jsonsplit *s, const char *data, size_t n);
/* After the last byte: whether the object ended whole and its array member was there. */
bool jsonsplit_finish(struct jsonsplit *s);
void jsonsplit_free(struct jsonsplit *s);

#endif
