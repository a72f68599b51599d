/*
 * fuzz_jobtemplate.c - the renderer of job templates (lib/jobtemplate.c):
 * text a tenant admin wrote and values any member submits. The input is
 * "TEXT\nVALUE": TEXT is rendered with the one parameter "v" = VALUE, in a
 * script (shell-quoted) and as it is. A quoted value must read back, as a
 * POSIX shell reads single quotes, as exactly the value; placeholders other
 * text without placeholders renders as itself; nothing is scanned twice
 * (VALUE may hold "{{v}}"); the size budget holds.
 */
#include "fuzz.h"

#include "lib/jobtemplate.h"

/* A shell word of only single-quoted parts and \' back to its text; abort if it is not one. */
static char *unquote(const char *q)
{
    size_t n = strlen(q);
    char *out = malloc(n + 1), *w = out;
    if (!out)
        abort();
    for (const char *p = q; *p;) {
        if (p[0] == '\\' && p[1] == '\'') {
            *w++ = '\'';
            p += 2;
        } else if (*p == '\'') {
            const char *end = strchr(p + 1, '\'');
            if (!end)
                abort(); /* an open quote */
            memcpy(w, p + 1, (size_t)(end - p - 1));
            w += end - p - 1;
            p = end + 1;
        } else {
            abort(); /* anything outside quotes is for the shell to read */
        }
    }
    *w = '\0';
    return out;
}

static void count(void *arg, const char *name)
{
    (void)name;
    ++*(size_t *)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_str(data, size);
    char *fields[2];
    fuzz_split(s, '\n', fields, 2);
    const char *text = fields[0], *value = fields[1];

    char *q = jobtemplate_shell_quote(value);
    char *back = unquote(q);
    if (strcmp(back, value) != 0)
        abort();
    free(back);

    json_t *values = json_pack("{s:s}", "v", value);
    size_t budget = JOBTEMPLATE_MAX_RENDERED;
    char *plain = jobtemplate_substitute(text, values, false, &budget);
    size_t budget2 = JOBTEMPLATE_MAX_RENDERED;
    char *shell = jobtemplate_substitute(text, values, true, &budget2);
    if (plain) {
        if (strlen(plain) + budget != JOBTEMPLATE_MAX_RENDERED)
            abort();
    }
    /* a text without placeholders renders as itself, whatever the value */
    size_t found = 0;
    jobtemplate_placeholders(text, count, &found);
    if (!found && ((plain && strcmp(plain, text) != 0) || (shell && strcmp(shell, text) != 0)))
        abort();
    /* the text is the only source of placeholders: the value's own are never read */
    json_t *other = json_pack("{s:s}", "v", "");
    size_t b3 = JOBTEMPLATE_MAX_RENDERED;
    char *empty = jobtemplate_substitute(text, other, false, &b3);
    if (plain && empty && strlen(plain) < strlen(empty))
        abort();
    free(empty);
    json_decref(other);
    free(plain);
    free(shell);
    free(q);
    json_decref(values);
    free(s);
    return 0;
}
