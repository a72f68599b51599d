/*
 * jsonlimit.c - nesting depth and value count of JSON text, in one pass.
 */
#include "jsonlimit.h"

#include <stdio.h>

bool jsonlimit_ok(const char *s, size_t n, int max_depth, long max_values, char *why,
                  size_t whyn)
{
    long depth = 0, values = 1; /* the top-level value */
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++; /* the escaped character, whatever it is */
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
        case '"':
            in_string = true;
            break;
        case '[':
        case '{':
            if (++depth > max_depth) {
                snprintf(why, whyn, "JSON nests deeper than %d levels", max_depth);
                return false;
            }
            break;
        case ']':
        case '}':
            depth--;
            break;
        case ',':
            /* each comma separates one more element or member */
            if (++values > max_values) {
                snprintf(why, whyn, "JSON document has more than %ld values", max_values);
                return false;
            }
            break;
        default:
            break;
        }
    }
    return true;
}
