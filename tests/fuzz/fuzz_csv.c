/*
 * fuzz_csv.c - CSV export cells (lib/csv.c): any text a client stored
 * (names, audit details, user agents) through csv_cell and csv_number. The
 * cell must read back as the text (RFC 4180), and no cell may start, as a
 * spreadsheet reads it, with a formula character.
 */
#include "fuzz.h"

#include "lib/csv.h"
#include "lib/sbuf.h"

/* Read back one cell written alone; abort when it is no RFC 4180 cell. */
static char *read_cell(const char *c)
{
    size_t n = strlen(c);
    char *out = malloc(n + 1), *w = out;
    if (!out)
        abort();
    if (n && c[0] == '"') {
        if (n < 2 || c[n - 1] != '"')
            abort();
        for (size_t i = 1; i + 1 < n; i++) {
            if (c[i] == '"') {
                if (c[i + 1] != '"' || i + 2 >= n)
                    abort(); /* a lone quote inside */
                i++;
            }
            *w++ = c[i];
        }
    } else {
        if (strpbrk(c, ",;\t\"\r\n") || (c[0] && strchr("=+@\t\r", c[0])))
            abort();
        memcpy(w, c, n);
        w += n;
    }
    *w = '\0';
    return out;
}

static void check(const char *s, bool number)
{
    struct sbuf sb = SBUF_INIT;
    if (number)
        csv_number(&sb, s);
    else
        csv_cell(&sb, s);
    const char *c = sbuf_str(&sb);
    char *back = read_cell(c);
    bool formula = s[0] && strchr("=+-@\t\r", s[0]);
    bool as_number = number && c[0] != '"';
    if (formula && !as_number) {
        if (back[0] != '\'' || strcmp(back + 1, s) != 0)
            abort();
    } else if (strcmp(back, s) != 0) {
        abort();
    }
    if (as_number && s[0] == '-' && !(s[1] >= '0' && s[1] <= '9') && s[1] != '.')
        abort(); /* only a negative number may start with '-' */
    free(back);
    sbuf_free(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_str(data, size);
    check(s, false);
    check(s, true);
    free(s);
    return 0;
}
