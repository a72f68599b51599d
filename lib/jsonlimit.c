/*
 * jsonlimit.c - nesting depth and value count of JSON text, in one pass.
 */
#include "jsonlimit.h"

enum jsonlimit_result jsonlimit_check(const char *s, size_t n, int max_depth, long max_values)
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
            if (++depth > max_depth)
                return JSONLIMIT_TOO_DEEP;
            break;
        case ']':
        case '}':
            depth--;
            break;
        case ',':
            /* each comma separates one more element or member */
            if (++values > max_values)
                return JSONLIMIT_TOO_MANY_VALUES;
            break;
        default:
            break;
        }
    }
    return JSONLIMIT_OK;
}
