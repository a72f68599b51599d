/*
 * imgref.h - container image references as users and jobs write them
 * ([host[:port]/]repository[:tag][@digest]) and the grammar of their parts:
 * what the API, the registry client and every backend check alike.
 */
#ifndef AIDC_IMGREF_H
#define AIDC_IMGREF_H

#include <stdbool.h>
#include <stddef.h>

#define IMAGE_DIGEST_LEN 71 /* "sha256:" + 64 hex */
#define IMAGE_REPO_MAX   255
#define IMAGE_TAG_MAX    128
#define IMAGE_HOST_MAX   253
bool imgref_digest_valid(const char *s);
/* Docker's repository grammar: lowercase components separated by '/'. */
bool imgref_repository_valid(const char *s);
bool imgref_tag_valid(const char *s);

/*
 * An image reference as a job names it: [host[:port]/]repository[:tag][@digest],
 * or enroot's host#repository[:tag]. The first component is a host when it
 * has a '.' or ':' or is "localhost" (Docker's rule). Neither tag nor digest
 * means tag "latest".
 */
enum imgref_error {
    IMGREF_OK,
    IMGREF_E_SHAPE,  /* empty or too long */
    IMGREF_E_DIGEST, /* the digest after '@' */
    IMGREF_E_HOST,   /* the registry host */
    IMGREF_E_TAG,
    IMGREF_E_REPOSITORY,
};

struct imgref {
    enum imgref_error error;       /* why imgref_parse refused it (err says it in English) */
    char host[IMAGE_HOST_MAX + 1]; /* "" when none */
    char repository[IMAGE_REPO_MAX + 1];
    char tag[IMAGE_TAG_MAX + 1];       /* "" when only a digest is given */
    char digest[IMAGE_DIGEST_LEN + 1]; /* "" when none */
};
/* false with a reason in err when s is no valid reference. */
bool imgref_parse(const char *s, struct imgref *out, char *err, size_t errsz);

#endif
