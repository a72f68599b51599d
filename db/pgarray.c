/* pgarray.c - array literals (see pgarray.h). */
#include "pgarray.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void pgarray_add(struct pgarray *a, const char *elem)
{
    sbuf_putc(&a->sb, a->n++ ? ',' : '{');
    if (!elem) {
        sbuf_puts(&a->sb, "NULL");
        return;
    }
    sbuf_putc(&a->sb, '"');
    for (const char *p = elem; *p; p++) {
        if (*p == '"' || *p == '\\')
            sbuf_putc(&a->sb, '\\');
        sbuf_putc(&a->sb, *p);
    }
    sbuf_putc(&a->sb, '"');
}

void pgarray_addf(struct pgarray *a, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pgarray_add(a, buf);
}

const char *pgarray_str(struct pgarray *a)
{
    if (!a->n)
        return "{}";
    sbuf_putc(&a->sb, '}');
    /* the closing brace is taken back on the next add */
    a->sb.len--;
    return sbuf_str(&a->sb);
}

void pgarray_reset(struct pgarray *a)
{
    sbuf_reset(&a->sb);
    a->n = 0;
}

void pgarray_free(struct pgarray *a)
{
    sbuf_free(&a->sb);
    a->n = 0;
}
