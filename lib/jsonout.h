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

/* The compact text of v (malloc'd; free() it), or NULL. */
char *jsonout_compact(const json_t *v);

#endif
