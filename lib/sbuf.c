/* sbuf.c - growable strings. */
#include "sbuf.h"

#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbuf_reserve(struct sbuf *sb, size_t extra)
{
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap *= 2;
    sb->buf = xrealloc(sb->buf, cap);
    sb->cap = cap;
}

void sbuf_append(struct sbuf *sb, const char *s, size_t n)
{
    sbuf_reserve(sb, n);
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void sbuf_puts(struct sbuf *sb, const char *s)
{
    sbuf_append(sb, s, strlen(s));
}

void sbuf_putc(struct sbuf *sb, char c)
{
    sbuf_append(sb, &c, 1);
}

void sbuf_vprintf(struct sbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n <= 0)
        return;
    sbuf_reserve(sb, (size_t)n);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sbuf_printf(struct sbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbuf_vprintf(sb, fmt, ap);
    va_end(ap);
}

size_t sbuf_utf8_seq(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned cp;
    if ((c & 0xe0) == 0xc0) {
        n = 2;
        cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3fu);
    }
    /* no overlong forms, no surrogates, nothing beyond U+10FFFF */
    static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return n;
}

size_t sbuf_utf8_prefix(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n;
}

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* Append the character at *p (or U+FFFD for an invalid byte); advance past it. */
static void utf8_char(struct sbuf *sb, const unsigned char **p)
{
    size_t n = sbuf_utf8_seq(*p);
    if (n == 0) {
        sbuf_append(sb, replacement, 3);
        (*p)++;
    } else {
        sbuf_append(sb, (const char *)*p, n);
        *p += n;
    }
}

void sbuf_utf8(struct sbuf *sb, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;)
        utf8_char(sb, &p);
}

void sbuf_json_str(struct sbuf *sb, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    sbuf_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned char c = *p;
        if (c >= 0x80) {
            utf8_char(sb, &p);
            continue;
        }
        switch (c) {
        case '"':
            sbuf_append(sb, "\\\"", 2);
            break;
        case '\\':
            sbuf_append(sb, "\\\\", 2);
            break;
        case '\n':
            sbuf_append(sb, "\\n", 2);
            break;
        case '\r':
            sbuf_append(sb, "\\r", 2);
            break;
        case '\t':
            sbuf_append(sb, "\\t", 2);
            break;
        default:
            if (c < 0x20 || c == 0x7f) {
                char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                sbuf_append(sb, esc, sizeof esc);
            } else {
                sbuf_putc(sb, (char)c);
            }
        }
        p++;
    }
    sbuf_putc(sb, '"');
}

const char *sbuf_str(const struct sbuf *sb)
{
    return sb->buf ? sb->buf : "";
}

char *sbuf_steal(struct sbuf *sb)
{
    char *p = sb->buf ? sb->buf : xstrdup("");
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return p;
}

void sbuf_reset(struct sbuf *sb)
{
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = '\0';
}

void sbuf_free(struct sbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
}

void sbuf_truncate(struct sbuf *sb, size_t len)
{
    if (len >= sb->len)
        return;
    sb->len = len;
    sb->buf[len] = '\0';
}
