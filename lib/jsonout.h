/*
 * jsonout.h - a JSON answer's text, written straight from the jansson tree.
 *
 * json_dumps spent 3-4 µs on a project's eight fields - a tenth of aidcd's
 * CPU per authenticated GET (perf, docs/performance.md): it hands every token
 * to a callback and, to refuse cycles, formats each container's address into
 * a string for a hash table. This writes the same bytes into one growing
 * buffer: byte for byte what json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(15))
 * writes (tests/unit/test_jsonout compares the two over random trees), and
 * NULL where json_dumps fails - a top level that is neither object nor array,
 * a string that is not UTF-8 - or nesting deeper than a cycle-free answer has.
 */
#ifndef AIDC_JSONOUT_H
#define AIDC_JSONOUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct sbuf;

/* The compact text of v (malloc'd; free() it), or NULL. */
char *jsonout_compact(const json_t *v);

/*
 * The pieces, for text written without a tree (db/rowjson's rows): each
 * appends to sb what jsonout_compact writes for such a value. false (sb then
 * holds a part) where jsonout_compact would fail: a string that is not UTF-8,
 * a value nested too deep.
 */
bool jsonout_string(struct sbuf *sb, const char *s, size_t n);
void jsonout_integer(struct sbuf *sb, json_int_t v);
bool jsonout_real(struct sbuf *sb, double v);
bool jsonout_value(struct sbuf *sb, const json_t *v);
/*
 * Add "key":"value" to the object whose text ends sb, as json_object_set_new of
 * a key it lacks would. The caller knows that sb ends with an object's text
 * (rowjson_append_object's) without that key: only the last byte is checked
 * (a '}'), and a key already there would be there twice. false, sb unchanged,
 * where that byte is not '}' or a string is not UTF-8.
 */
bool jsonout_object_add_string(struct sbuf *sb, const char *key, const char *value);

#endif
