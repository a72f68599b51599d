/* credential.c - the credential in a request's headers (see credential.h). */
#include "credential.h"

#include "../lib/xalloc.h"

#include <string.h>
#include <strings.h>

char *credential_cookie(const char *cookie, const char *name)
{
    const size_t nl = strlen(name);
    for (const char *p = cookie; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=')
            return xstrndup(p + nl + 1, len - nl - 1);
        p = end;
    }
    return NULL;
}

char *credential_cookie_session(const char *cookie)
{
    return credential_cookie(cookie, AUTH_COOKIE);
}

int credential_from_headers(const char *authorization, const char *cookie, const char **token,
                            char **cookie_tok)
{
    *token = NULL;
    *cookie_tok = NULL;
    if (authorization) {
        if (strncasecmp(authorization, "Bearer ", 7) != 0)
            return -1;
        const char *t = authorization + 7;
        while (*t == ' ')
            t++;
        *token = t;
    } else if (cookie) {
        *cookie_tok = credential_cookie_session(cookie);
        *token = *cookie_tok;
    }
    return 0;
}
