/*
 * fuzz.h - what the libFuzzer targets share: the input as C strings. A
 * target's input is untrusted bytes; the parsers take NUL-terminated text
 * (as libmicrohttpd, libcurl and jansson hand it over), so the bytes are
 * copied and cut at the first NUL, or split into fields at a separator.
 */
#ifndef AIDC_FUZZ_H
#define AIDC_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* data[0..n) as a malloc'd C string (cut at the first NUL). */
static inline char *fuzz_str(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/*
 * Split s in place at each sep into at most max fields; returns how many.
 * Fields that are not there point to "".
 */
static inline size_t fuzz_split(char *s, char sep, char **fields, size_t max)
{
    size_t n = 0;
    static char empty[1];
    for (char *p = s; p && n < max; n++) {
        fields[n] = p;
        p = strchr(p, sep);
        if (p)
            *p++ = '\0';
    }
    for (size_t i = n; i < max; i++)
        fields[i] = empty;
    return n;
}

#endif
