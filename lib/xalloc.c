/* xalloc.c - abort-on-failure allocation wrappers. */
#include "xalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Noreturn void oom(size_t n)
{
    /* No allocation here: the logger may need memory we do not have. */
    char msg[96];
    int len = snprintf(msg, sizeof msg,
                       "{\"level\":\"fatal\",\"msg\":\"out of memory\",\"bytes\":%zu}\n", n);
    if (len > 0 && (size_t)len < sizeof msg) {
        ssize_t w = write(STDERR_FILENO, msg, (size_t)len);
        (void)w;
    }
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom(count * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

void *xreallocarray(void *p, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        oom(SIZE_MAX);
    return xrealloc(p, count * size);
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    char *p = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    int m = vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    if (m != n)
        abort();
    return p;
}
