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

#define SBUF_INIT {NULL, 0, 0}

void sbuf_append(struct sbuf *sb, const char *s, size_t n);
void sbuf_puts(struct sbuf *sb, const char *s);
void sbuf_putc(struct sbuf *sb, char c);
void sbuf_printf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_vprintf(struct sbuf *sb, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Append s as a JSON string literal, quotes included, escaping as RFC 8259 asks. */
void sbuf_json_str(struct sbuf *sb, const char *s);
/* The contents (never NULL: "" when empty); valid until the next append. */
const char *sbuf_str(const struct sbuf *sb);
/* Hand the buffer to the caller (free() it); the sbuf is empty afterwards. */
char *sbuf_steal(struct sbuf *sb);
void sbuf_reset(struct sbuf *sb);
void sbuf_free(struct sbuf *sb);

#endif
