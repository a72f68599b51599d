/* csv.c - CSV cells (see csv.h). */
#include "csv.h"

#include "sbuf.h"
#include "xalloc.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void csv_cell(struct sbuf *sb, const char *s)
{
    if (!s)
        return;
    /* =, +, -, @ (and tab/CR, which some spreadsheets skip first) start a formula */
    bool formula = s[0] != '\0' && strchr("=+-@\t\r", s[0]) != NULL;
    /* ';' and tab too: spreadsheets in many locales split cells on them */
    bool quote = formula || strpbrk(s, ",;\t\"\r\n") != NULL;
    if (quote)
        sbuf_putc(sb, '"');
    if (formula)
        sbuf_putc(sb, '\'');
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            sbuf_putc(sb, '"');
        sbuf_putc(sb, *p);
    }
    if (quote)
        sbuf_putc(sb, '"');
}

void csv_number(struct sbuf *sb, const char *s)
{
    /* a leading minus, digits and points pass as a number; anything else is text */
    bool num = s && s[0] != '\0', digit = false;
    for (const char *p = s; num && *p; p++) {
        digit = digit || (*p >= '0' && *p <= '9');
        num = (*p >= '0' && *p <= '9') || *p == '.' || (p == s && *p == '-');
    }
    num = num && digit;
    if (num)
        sbuf_puts(sb, s);
    else
        csv_cell(sb, s);
}
