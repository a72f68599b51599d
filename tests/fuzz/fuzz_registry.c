/*
 * fuzz_registry.c - header values a container registry answers and image
 * references users write (images/manifest.c): a WWW-Authenticate challenge
 * (Bearer realm/service/scope, Basic), a Link header's rel="next" target
 * (which must never lead to another origin), and
 * [host[:port]/]repository[:tag][@digest] references.
 */
#include "fuzz.h"

#include "images/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_str(data, size);
    struct regchallenge c;
    if (registry_parse_challenge(s, &c) &&
        (strnlen(c.realm, sizeof c.realm) == sizeof c.realm ||
         strnlen(c.scheme, sizeof c.scheme) == sizeof c.scheme))
        abort();

    static const char origin[] = "http://registry.example:5000";
    bool unfollowable = false;
    char *next = registry_next_link(s, origin, &unfollowable);
    /* a path below /v2/ of this registry (appended to its origin), no spaces or controls */
    if (next && strncmp(next, "/v2/", 4) != 0)
        abort();
    for (const char *p = next; p && *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 127)
            abort();
    free(next);

    struct imgref r;
    char err[256];
    if (imgref_parse(s, &r, err, sizeof err)) {
        if (!imgref_repository_valid(r.repository) || (r.tag[0] && !imgref_tag_valid(r.tag)) ||
            (r.digest[0] && !imgref_digest_valid(r.digest)) || (!r.tag[0] && !r.digest[0]))
            abort();
    }
    (void)imgref_digest_valid(s);
    (void)imgref_repository_valid(s);
    (void)imgref_tag_valid(s);
    free(s);
    return 0;
}
