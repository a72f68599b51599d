/*
 * hex.h - hexadecimal digits, and %HH decoding of URLs.
 */
#ifndef AIDC_HEX_H
#define AIDC_HEX_H

#include <stddef.h>

/* The value of one hex digit (either case), or -1. */
int hex_digit(char c);

/*
 * Decode %HH in place, except %00: a NUL would silently cut the C string
 * ("/projects/victim%00.json" would name "victim"). Left encoded, it makes the
 * name invalid and the request a clean 400/404. Returns the new length.
 */
size_t hex_url_unescape(char *s);

#endif
