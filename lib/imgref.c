/* imgref.c - image references and their parts (see imgref.h). */
#include "imgref.h"

#include "xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool imgref_digest_valid(const char *s)
{
    if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != IMAGE_DIGEST_LEN)
        return false;
    for (const char *p = s + 7; *p; p++)
        if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
            return false;
    return true;
}

static bool is_alnum_lower(char c)
{
    return isdigit((unsigned char)c) || (c >= 'a' && c <= 'z');
}

/* One path component: [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)* of exactly n characters. */
static bool component_valid(const char *s, size_t n)
{
    size_t i = 0;
    if (n == 0 || !is_alnum_lower(s[0]))
        return false;
    while (i < n) {
        while (i < n && is_alnum_lower(s[i]))
            i++;
        if (i == n)
            return true;
        size_t sep = i;
        if (s[i] == '.')
            i++;
        else if (s[i] == '_')
            i += i + 1 < n && s[i + 1] == '_' ? 2 : 1;
        else if (s[i] == '-')
            while (i < n && s[i] == '-')
                i++;
        else
            return false;
        if (i == sep || i == n || !is_alnum_lower(s[i]))
            return false;
    }
    return true;
}

bool imgref_repository_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > IMAGE_REPO_MAX)
        return false;
    const char *p = s;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (!component_valid(p, len))
            return false;
        if (!slash)
            return true;
        p = slash + 1;
    }
}

bool imgref_tag_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > IMAGE_TAG_MAX || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
            return false;
    return true;
}

static bool host_valid(const char *s, size_t n)
{
    if (n == 0 || n > IMAGE_HOST_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-' && s[i] != ':' &&
            s[i] != '[' && s[i] != ']')
            return false;
    return true;
}

bool imgref_parse(const char *s, struct imgref *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > IMAGE_HOST_MAX + IMAGE_REPO_MAX + IMAGE_TAG_MAX + IMAGE_DIGEST_LEN + 3) {
        out->error = IMGREF_E_SHAPE;
        snprintf(err, errsz, "an image reference is host/repository:tag or repository@digest");
        return false;
    }
    char *buf = xstrdup(s);
    char *rest = buf;
    /* enroot's (pyxis') spelling: host#repository:tag */
    char *hash = strchr(rest, '#');
    bool hash_host = hash && !memchr(rest, '/', (size_t)(hash - rest));
    if (hash_host)
        *hash = '/';
    char *at = strchr(rest, '@');
    bool ok = true;
    if (at) {
        *at = '\0';
        if (!imgref_digest_valid(at + 1)) {
            out->error = IMGREF_E_DIGEST;
            snprintf(err, errsz,
                     "the digest after '@' must be sha256: and 64 lowercase hex digits");
            ok = false;
        } else {
            snprintf(out->digest, sizeof out->digest, "%s", at + 1);
        }
    }
    char *slash = strchr(rest, '/');
    if (ok && slash) {
        size_t hl = (size_t)(slash - rest);
        bool is_host = hash_host || memchr(rest, '.', hl) || memchr(rest, ':', hl) ||
                       (hl == 9 && strncmp(rest, "localhost", 9) == 0);
        if (is_host) {
            if (!host_valid(rest, hl)) {
                out->error = IMGREF_E_HOST;
                snprintf(err, errsz, "the registry host of the image is not a host[:port]");
                ok = false;
            } else {
                memcpy(out->host, rest, hl);
                out->host[hl] = '\0';
                rest = slash + 1;
            }
        }
    }
    /* a ':' after the last '/' starts the tag */
    char *lastslash = strrchr(rest, '/');
    char *colon = strchr(lastslash ? lastslash : rest, ':');
    if (ok && colon) {
        *colon = '\0';
        if (!imgref_tag_valid(colon + 1)) {
            out->error = IMGREF_E_TAG;
            snprintf(err, errsz, "the tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
            ok = false;
        } else {
            snprintf(out->tag, sizeof out->tag, "%s", colon + 1);
        }
    }
    if (ok && !imgref_repository_valid(rest)) {
        out->error = IMGREF_E_REPOSITORY;
        snprintf(err, errsz,
                 "the repository must be lowercase path components "
                 "([a-z0-9] separated by '.', '_', '__' or '-'), at most 255 characters");
        ok = false;
    }
    if (ok) {
        snprintf(out->repository, sizeof out->repository, "%s", rest);
        if (!out->tag[0] && !out->digest[0])
            snprintf(out->tag, sizeof out->tag, "latest");
    }
    free(buf);
    return ok;
}
