/*
 * sbuf.h - a growable, always NUL-terminated byte string.
 *
 * Used for log lines, JSON fragments and CSV. Zero-initialised (SBUF_INIT) is an
 * empty buffer; sbuf_free releases it; sbuf_steal hands the bytes to the caller.
 */
#ifndef AIDC_SBUF_H
#define AIDC_SBUF_H

#include <stdarg.h>
#include <stddef.h>

struct sbuf {
    char *buf;
    size_t len;
    size_t cap;
};

#define SBUF_INIT                                                                                  \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Room for extra more bytes (and the NUL) without another allocation. */
void sbuf_reserve(struct sbuf *sb, size_t extra);
void sbuf_append(struct sbuf *sb, const char *s, size_t n);
void sbuf_puts(struct sbuf *sb, const char *s);
void sbuf_putc(struct sbuf *sb, char c);
void sbuf_printf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_vprintf(struct sbuf *sb, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/*
 * Append s as a JSON string literal, quotes included, escaping as RFC 8259
 * asks; bytes that are not valid UTF-8 become U+FFFD, so the output is
 * always valid JSON whatever a client sent.
 */
void sbuf_json_str(struct sbuf *sb, const char *s);
/* Append s with every byte that is not part of valid UTF-8 replaced by U+FFFD. */
void sbuf_utf8(struct sbuf *sb, const char *s);
/* Bytes of valid UTF-8 s up to max, cut at a character boundary. */
size_t sbuf_utf8_prefix(const char *s, size_t max);
/* Length (1-4) of the valid UTF-8 sequence at p, or 0 if invalid. */
size_t sbuf_utf8_seq(const unsigned char *p);
/* The contents (never NULL: "" when empty); valid until the next append. */
const char *sbuf_str(const struct sbuf *sb);
/* Hand the buffer to the caller (free() it); the sbuf is empty afterwards. */
char *sbuf_steal(struct sbuf *sb);
void sbuf_reset(struct sbuf *sb);
/* Keep the first len bytes (len <= sb->len), as if nothing came after them. */
void sbuf_truncate(struct sbuf *sb, size_t len);
void sbuf_free(struct sbuf *sb);

#endif
