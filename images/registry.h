/*
 * registry.h - a client of the Docker Registry HTTP API v2 / OCI
 * distribution API over libcurl, for reading: the catalog and tag lists
 * (following Link paging), manifests (with the Accept header that keeps a
 * registry from converting them) and config blobs, each checked against
 * its digest. Authentication: none, HTTP basic (a "user:password" secret
 * named by credentials_ref) or bearer tokens from the realm a
 * WWW-Authenticate challenge names (the token dance), cached per scope for
 * the life of the client. Every call has a timeout and an answer size cap.
 *
 * A client is used by one thread at a time (the sync worker).
 */
#ifndef AIDC_REGISTRY_H
#define AIDC_REGISTRY_H

#include "manifest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define REGISTRY_CONNECT_TIMEOUT 5
#define REGISTRY_TIMEOUT 30
/* answers larger than these are refused (a registry is untrusted input) */
#define REGISTRY_MAX_LIST (16L * 1024 * 1024)
#define REGISTRY_MAX_MANIFEST (4L * 1024 * 1024)
/* repositories and tags of one registry aidc follows at most */
#define REGISTRY_MAX_ITEMS 100000

struct registry_target {
    const char *url;     /* http(s)://host[:port] */
    const char *credref; /* file:PATH or env:NAME holding user:password, or "" */
    int timeout_seconds; /* per call; 0: REGISTRY_TIMEOUT */
    int page_size;       /* n= of list calls; 0: the registry's default */
};

struct regclient;

/* A client for t (the secret is read now). 0, or an aidc_err with err. */
int regclient_open(const struct registry_target *t, struct regclient **out, char *err,
                   size_t errsz);
void regclient_close(struct regclient *c);

/*
 * Errors of the calls below: AIDC_EUNAVAIL (unreachable, timed out, 5xx,
 * answer too large), AIDC_EFORBIDDEN (credentials missing or refused),
 * AIDC_ENOTFOUND (404), AIDC_EINVAL (an answer that makes no sense); err
 * says which, naming the URL but never a secret.
 */
/* GET /v2/: is it a registry, and do the credentials work. */
int registry_ping(struct regclient *c, char *err, size_t errsz);
/* Every repository of the catalog (a new array of strings). */
int registry_catalog(struct regclient *c, json_t **repos, char *err, size_t errsz);
/* Every tag of repo (a new array; empty when the registry says "tags": null). */
int registry_tags(struct regclient *c, const char *repo, json_t **tags, char *err, size_t errsz);
/* The digest a tag points at now (HEAD; GET when HEAD gives no digest). */
int registry_digest(struct regclient *c, const char *repo, const char *tag,
                    char digest[IMAGE_DIGEST_LEN + 1], char *err, size_t errsz);
/* The manifest of ref (tag or digest), parsed, and its digest (checked against the bytes). */
int registry_manifest(struct regclient *c, const char *repo, const char *ref, struct manifest *m,
                      char digest[IMAGE_DIGEST_LEN + 1], char *err, size_t errsz);
/* The labels of the config blob digest (manifest_config_labels; the blob checked). */
int registry_config_labels(struct regclient *c, const char *repo, const char *digest,
                           json_t **labels, char *err, size_t errsz);

#endif
