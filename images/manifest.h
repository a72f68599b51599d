/*
 * manifest.h - what aidc reads from a container registry, parsed: the
 * registry's auth challenge and paging
 * links, manifests (Docker schema 2, OCI image manifests and indexes) and
 * image configs. Pure functions over text, no I/O: every answer of a
 * registry is untrusted input and is checked here (types, sizes, digests).
 */
#ifndef AIDC_MANIFEST_H
#define AIDC_MANIFEST_H

#include "../lib/imgref.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* labels kept from an image config: at most this many, each value this long */
#define IMAGE_LABELS_MAX 64
#define IMAGE_LABEL_VALUE_MAX 256

/* The media types aidc asks for (the Accept header) and understands. */
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"

/*
 * A WWW-Authenticate challenge: scheme ("Bearer", "Basic") and the Bearer
 * parameters. false when the header cannot be read.
 */
struct regchallenge {
    char scheme[16];
    char realm[1024];
    char service[256];
    char scope[512];
};
bool registry_parse_challenge(const char *header, struct regchallenge *c);
/*
 * The path and query of a Link header's rel="next" target below /v2/ of
 * this registry - a path, or an absolute URL starting with origin
 * ("http://host:port") - malloc'd. NULL when there is none, or when it
 * points elsewhere (never followed: credentials would go with it); then
 * *unfollowable is set, since a listing that stops there is incomplete.
 */
char *registry_next_link(const char *header, const char *origin, bool *unfollowable);
/* The token of a token service's JSON answer ("token" or "access_token"), malloc'd. */
char *registry_parse_token(const char *body, size_t len);

/*
 * One page of a catalog or tag list (body: {"<key>": ["...", ...]}, with
 * null_ok a null list too): its strings appended to out. 0, or -1 with err
 * (the page is not such an object, or the list holds a non-string).
 */
int registry_list_page(const char *body, size_t len, const char *key, bool null_ok, json_t *out,
                       char *err, size_t errsz);

struct manifest_child {
    char digest[IMAGE_DIGEST_LEN + 1];
    char media_type[128];
    char platform[64]; /* "linux/amd64", "linux/arm64/v8", or "" */
    long long size;    /* of the child manifest itself */
};
struct manifest {
    bool index;                /* an image index / manifest list */
    char media_type[128];
    /* an image manifest */
    char config_digest[IMAGE_DIGEST_LEN + 1];
    long long size; /* config + layers: the compressed bytes a pull transfers */
    /* an index */
    struct manifest_child *children;
    size_t nchildren;
};
/*
 * Parse a manifest answer (body and its Content-Type). Refuses schema 1,
 * unknown media types, missing or ill-typed fields, bad digests, negative
 * or absurd sizes. 0, or AIDC_EINVAL with err.
 */
int manifest_parse(const char *body, size_t len, const char *content_type, struct manifest *m,
                   char *err, size_t errsz);
void manifest_free(struct manifest *m);
/*
 * The labels of an image config (its config.Labels, strings only, at most
 * IMAGE_LABELS_MAX, long values cut) plus "architecture" and "os" when the
 * config has them: a new object, or NULL with err when the body is no config.
 */
json_t *manifest_config_labels(const char *body, size_t len, char *err, size_t errsz);
/* Whether body's sha256 is digest ("sha256:<hex>"). */
bool manifest_digest_matches(const char *body, size_t len, const char *digest);

#endif
