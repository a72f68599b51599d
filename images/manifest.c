/* manifest.c - registry answers and image references, parsed (see manifest.h). */
#include "manifest.h"

#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* a size no real image has: a registry claiming more is broken or hostile */
#define SIZE_MAX_BYTES (1LL << 50)
#define CHILDREN_MAX 64

/* ---- headers -------------------------------------------------------------------------- */

/* Copy a quoted or bare parameter value starting at p into out; returns past it. */
static const char *param_value(const char *p, char *out, size_t n)
{
    size_t k = 0;
    if (*p == '"') {
        p++;
        while (*p && *p != '"') {
            if (*p == '\\' && p[1])
                p++;
            if (k + 1 < n)
                out[k++] = *p;
            p++;
        }
        if (*p == '"')
            p++;
    } else {
        while (*p && *p != ',' && !isspace((unsigned char)*p)) {
            if (k + 1 < n)
                out[k++] = *p;
            p++;
        }
    }
    out[k] = '\0';
    return p;
}

bool registry_parse_challenge(const char *header, struct regchallenge *c)
{
    memset(c, 0, sizeof *c);
    if (!header)
        return false;
    const char *p = header;
    while (isspace((unsigned char)*p))
        p++;
    size_t k = 0;
    while (isalpha((unsigned char)*p) && k + 1 < sizeof c->scheme)
        c->scheme[k++] = *p++;
    c->scheme[k] = '\0';
    if (k == 0 || (*p && !isspace((unsigned char)*p)))
        return false;
    while (*p) {
        while (isspace((unsigned char)*p) || *p == ',')
            p++;
        const char *name = p;
        while (*p && *p != '=' && *p != ',' && !isspace((unsigned char)*p))
            p++;
        size_t nl = (size_t)(p - name);
        if (*p != '=') {
            if (nl == 0)
                break;
            continue;
        }
        p++;
        char value[1024];
        p = param_value(p, value, sizeof value);
        if (nl == 5 && strncasecmp(name, "realm", 5) == 0)
            snprintf(c->realm, sizeof c->realm, "%s", value);
        else if (nl == 7 && strncasecmp(name, "service", 7) == 0)
            snprintf(c->service, sizeof c->service, "%.255s", value);
        else if (nl == 5 && strncasecmp(name, "scope", 5) == 0)
            snprintf(c->scope, sizeof c->scope, "%.511s", value);
    }
    if (strcasecmp(c->scheme, "Bearer") == 0)
        return strncmp(c->realm, "https://", 8) == 0 || strncmp(c->realm, "http://", 7) == 0;
    return true;
}

/* Whether link parameters ("; rel=\"next\"; ...") of n bytes name rel next. */
static bool rel_next(const char *params, size_t n)
{
    char *ps = xstrndup(params, n);
    bool found = false;
    char *save = NULL;
    for (char *p = strtok_r(ps, ";", &save); p && !found; p = strtok_r(NULL, ";", &save)) {
        while (isspace((unsigned char)*p))
            p++;
        if (strncasecmp(p, "rel", 3) != 0)
            continue;
        p += 3;
        while (isspace((unsigned char)*p))
            p++;
        if (*p++ != '=')
            continue;
        while (isspace((unsigned char)*p))
            p++;
        bool quoted = *p == '"';
        p += quoted;
        /* rel may list several relation types: "prev next" */
        for (char *w = p; *w && !found;) {
            size_t wl = strcspn(w, quoted ? " \"" : " ,");
            found = wl == 4 && strncasecmp(w, "next", 4) == 0;
            w += wl;
            if (*w != ' ')
                break;
            w++;
        }
    }
    free(ps);
    return found;
}

char *registry_next_link(const char *header, const char *origin, bool *unfollowable)
{
    *unfollowable = false;
    if (!header)
        return NULL;
    const char *p = header;
    while ((p = strchr(p, '<'))) {
        const char *end = strchr(p, '>');
        if (!end)
            return NULL;
        const char *params = end + 1;
        const char *next = strchr(params, '<');
        size_t plen = next ? (size_t)(next - params) : strlen(params);
        if (rel_next(params, plen)) {
            const char *u = p + 1;
            size_t ul = (size_t)(end - u);
            /* an absolute link to the registry itself (Quay sends those) is its path */
            size_t ol = origin ? strlen(origin) : 0;
            if (ol && ul > ol && strncmp(u, origin, ol) == 0 && u[ol] == '/') {
                u += ol;
                ul -= ol;
            }
            *unfollowable = true; /* until it proves to be a path of this registry */
            if (ul < 4 || strncmp(u, "/v2/", 4) != 0)
                return NULL;
            for (size_t i = 0; i < ul; i++)
                if ((unsigned char)u[i] <= ' ' || (unsigned char)u[i] >= 127)
                    return NULL;
            *unfollowable = false;
            return xstrndup(u, ul);
        }
        p = end + 1;
    }
    return NULL;
}

char *registry_parse_token(const char *body, size_t len)
{
    json_t *doc = json_loadb(body, len, 0, NULL);
    const char *t = json_string_value(json_object_get(doc, "token"));
    if (!t || !t[0])
        t = json_string_value(json_object_get(doc, "access_token"));
    char *out = NULL;
    /* a token is header material: printable, no spaces, bounded */
    if (t && t[0] && strlen(t) < 8192) {
        bool ok = true;
        for (const char *q = t; *q && ok; q++)
            ok = *q > ' ' && *q < 127;
        if (ok)
            out = xstrdup(t);
    }
    json_decref(doc);
    return out;
}

/* ---- manifests ------------------------------------------------------------------------- */

static bool size_ok(const json_t *v, long long *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > SIZE_MAX_BYTES)
        return false;
    *out = (long long)json_integer_value(v);
    return true;
}

/* A descriptor {mediaType?, size, digest}: its digest into d and size into *size. */
static bool descriptor(const json_t *v, char d[IMAGE_DIGEST_LEN + 1], long long *size)
{
    const char *dg = json_string_value(json_object_get(v, "digest"));
    if (!json_is_object(v) || !imgref_digest_valid(dg) || !size_ok(json_object_get(v, "size"), size))
        return false;
    snprintf(d, IMAGE_DIGEST_LEN + 1, "%s", dg);
    return true;
}

static int parse_image(const json_t *doc, struct manifest *m, char *err, size_t errsz)
{
    long long sz = 0, total = 0;
    /* signatures, SBOMs, Helm charts ride in registries as manifests too: not runnable */
    const char *cmt = json_string_value(json_object_get(json_object_get(doc, "config"), "mediaType"));
    if (json_object_get(doc, "artifactType") ||
        (cmt && strcmp(cmt, "application/vnd.docker.container.image.v1+json") != 0 &&
         strcmp(cmt, "application/vnd.oci.image.config.v1+json") != 0)) {
        snprintf(err, errsz, "not a container image (an artifact: %.80s)",
                 cmt ? cmt : "artifactType");
        return AIDC_EINVAL;
    }
    if (!descriptor(json_object_get(doc, "config"), m->config_digest, &sz)) {
        snprintf(err, errsz, "the manifest's config is not a descriptor (digest, size)");
        return AIDC_EINVAL;
    }
    total = sz;
    json_t *layers = json_object_get(doc, "layers");
    if (!json_is_array(layers)) {
        snprintf(err, errsz, "the manifest has no layers array");
        return AIDC_EINVAL;
    }
    size_t i;
    json_t *l;
    json_array_foreach(layers, i, l) {
        char d[IMAGE_DIGEST_LEN + 1];
        if (!descriptor(l, d, &sz)) {
            snprintf(err, errsz, "layer %zu of the manifest is not a descriptor (digest, size)", i);
            return AIDC_EINVAL;
        }
        total += sz;
        if (total > SIZE_MAX_BYTES) {
            snprintf(err, errsz, "the manifest's layers add up to an impossible size");
            return AIDC_EINVAL;
        }
    }
    m->size = total;
    return 0;
}

/* linux, amd64, v8: [a-z0-9._-], 1 to max characters */
static bool platform_word(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'z') && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

static int parse_index(const json_t *doc, struct manifest *m, char *err, size_t errsz)
{
    json_t *list = json_object_get(doc, "manifests");
    if (!json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > CHILDREN_MAX) {
        snprintf(err, errsz, "the index's manifests must be an array of 1 to %d entries",
                 CHILDREN_MAX);
        return AIDC_EINVAL;
    }
    m->children = xcalloc(json_array_size(list), sizeof *m->children);
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c) {
        struct manifest_child *ch = &m->children[m->nchildren];
        if (!descriptor(c, ch->digest, &ch->size)) {
            snprintf(err, errsz, "entry %zu of the index is not a descriptor (digest, size)", i);
            return AIDC_EINVAL;
        }
        const char *mt = json_string_value(json_object_get(c, "mediaType"));
        snprintf(ch->media_type, sizeof ch->media_type, "%s", mt ? mt : "");
        json_t *pf = json_object_get(c, "platform");
        const char *os = json_string_value(json_object_get(pf, "os"));
        const char *arch = json_string_value(json_object_get(pf, "architecture"));
        const char *var = json_string_value(json_object_get(pf, "variant"));
        if (var && !var[0])
            var = NULL;
        /* attestations and other artifacts ride in indexes as "unknown/unknown"; a
         * platform that is not plain words (it ends up in a label) is no platform */
        if (platform_word(os, 20) && platform_word(arch, 20) && (!var || platform_word(var, 16)) &&
            strcmp(os, "unknown") != 0 && strcmp(arch, "unknown") != 0)
            snprintf(ch->platform, sizeof ch->platform, "%s/%s%s%s", os, arch, var ? "/" : "",
                     var ? var : "");
        m->nchildren++;
    }
    return 0;
}

int manifest_parse(const char *body, size_t len, const char *content_type, struct manifest *m,
                   char *err, size_t errsz)
{
    memset(m, 0, sizeof *m);
    json_error_t jerr;
    json_t *doc = json_loadb(body, len, 0, &jerr);
    if (!json_is_object(doc)) {
        snprintf(err, errsz, "the manifest is not a JSON object");
        json_decref(doc);
        return AIDC_EINVAL;
    }
    /* the body's own mediaType wins over a generic Content-Type */
    const char *mt = json_string_value(json_object_get(doc, "mediaType"));
    char ct[128] = "";
    if (content_type) {
        snprintf(ct, sizeof ct, "%s", content_type);
        ct[strcspn(ct, "; ")] = '\0';
    }
    if (!mt)
        mt = ct;
    json_t *sv = json_object_get(doc, "schemaVersion");
    int e = 0;
    if (!json_is_integer(sv) || json_integer_value(sv) != 2) {
        snprintf(err, errsz, "schema %lld manifests are not supported (only schema 2 and OCI)",
                 json_is_integer(sv) ? (long long)json_integer_value(sv) : 0LL);
        e = AIDC_EINVAL;
    } else if (strcmp(mt, MT_DOCKER_MANIFEST) == 0 || strcmp(mt, MT_OCI_MANIFEST) == 0 ||
               (!mt[0] && json_object_get(doc, "config"))) {
        e = parse_image(doc, m, err, errsz);
    } else if (strcmp(mt, MT_DOCKER_LIST) == 0 || strcmp(mt, MT_OCI_INDEX) == 0 ||
               (!mt[0] && json_object_get(doc, "manifests"))) {
        m->index = true;
        e = parse_index(doc, m, err, errsz);
    } else {
        snprintf(err, errsz, "unsupported manifest media type \"%.80s\"", mt);
        e = AIDC_EINVAL;
    }
    if (!e)
        snprintf(m->media_type, sizeof m->media_type, "%s",
                 mt[0] ? mt : (m->index ? MT_OCI_INDEX : MT_OCI_MANIFEST));
    json_decref(doc);
    if (e)
        manifest_free(m);
    return e;
}

void manifest_free(struct manifest *m)
{
    free(m->children);
    m->children = NULL;
    m->nchildren = 0;
}

static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < ' ' || *s == 127)
            return false;
    return true;
}

json_t *manifest_config_labels(const char *body, size_t len, char *err, size_t errsz)
{
    json_t *doc = json_loadb(body, len, 0, NULL);
    if (!json_is_object(doc)) {
        snprintf(err, errsz, "the image config is not a JSON object");
        json_decref(doc);
        return NULL;
    }
    json_t *out = json_object();
    json_t *labels = json_object_get(json_object_get(doc, "config"), "Labels");
    const char *k;
    json_t *v;
    json_object_foreach(labels, k, v) {
        const char *s = json_string_value(v);
        if (json_object_size(out) >= IMAGE_LABELS_MAX)
            break;
        if (!s || strlen(k) > 128 || !k[0] || !printable(k) || !printable(s))
            continue;
        size_t n = strnlen(s, IMAGE_LABEL_VALUE_MAX);
        while (n > 0 && s[n] && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--; /* cut before a character, not inside one */
        json_object_set_new(out, k, json_stringn(s, n));
    }
    static const char *const plat[] = {"architecture", "os"};
    for (size_t i = 0; i < 2; i++) {
        const char *s = json_string_value(json_object_get(doc, plat[i]));
        if (s && s[0] && strlen(s) <= 32 && printable(s))
            json_object_set_new(out, plat[i], json_string(s));
    }
    json_decref(doc);
    return out;
}

bool manifest_digest_matches(const char *body, size_t len, const char *digest)
{
    if (!imgref_digest_valid(digest))
        return false;
    char hex[65];
    crypto_sha256_hex(body, len, hex);
    return strcmp(hex, digest + 7) == 0;
}

int registry_list_page(const char *body, size_t len, const char *key, bool null_ok, json_t *out,
                       char *err, size_t errsz)
{
    json_t *doc = json_loadb(body, len, 0, NULL);
    json_t *items = json_object_get(doc, key);
    int rc = 0;
    if (!json_is_object(doc) || !(json_is_array(items) || (null_ok && json_is_null(items)))) {
        snprintf(err, errsz, "the answer has no \"%s\" list", key);
        rc = -1;
    }
    size_t i;
    json_t *v;
    json_array_foreach(rc ? NULL : items, i, v) {
        if (!json_is_string(v) || json_array_append(out, v) != 0) {
            snprintf(err, errsz, "\"%s\" holds a non-string", key);
            rc = -1;
            break;
        }
    }
    json_decref(doc);
    return rc;
}
