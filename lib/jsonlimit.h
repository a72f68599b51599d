/*
 * jsonlimit.h - bounds on the shape of a JSON document, checked on the raw
 * text before it is parsed.
 *
 * The body size limit bounds the bytes, not what parsing them costs: a
 * megabyte of "[[[[..." recurses a quarter million levels deep in the parser,
 * and "[0,0,0,..." becomes half a million allocated values. A single pass over
 * the text (strings skipped) refuses both before jansson sees them.
 */
#ifndef AIDC_JSONLIMIT_H
#define AIDC_JSONLIMIT_H

#include <stdbool.h>
#include <stddef.h>

enum jsonlimit_result { JSONLIMIT_OK, JSONLIMIT_TOO_DEEP, JSONLIMIT_TOO_MANY_VALUES };

/*
 * Whether the document in s[0..n) nests at most max_depth arrays/objects deep
 * and holds at most max_values values, counted as one plus each comma outside
 * strings (every element or member after the first of its container).
 * Malformed text passes unless it is too deep or too long already: the parser
 * reports it better.
 */
enum jsonlimit_result jsonlimit_check(const char *s, size_t n, int max_depth, long max_values);

#endif
