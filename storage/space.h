/*
 * space.h - the tenants' storage spaces on disk (docs/storage.md).
 *
 * Under the storage root (AIDC_STORAGE_ROOT on aidcd's host; the same tree
 * is a Slurm cluster's shared file system or a Kubernetes volume):
 *
 *   <root>/<tenant>/projects/<project>   a project's space
 *   <root>/<tenant>/home/<user>          a member's home in that tenant
 *   <root>/<tenant>/datasets/<name>      a shared dataset, read-only to jobs
 *
 * With aidcd as root the tenant's directories belong to root with the
 * tenant's group (0750: its jobs pass, cannot rename or replace a space),
 * project and home spaces to the tenant's uid and gid (0770), datasets too
 * (0750; jobs only ever get them read-only).
 * Another tenant's uid enters none of it. Without root everything is
 * aidcd's own (0700). Every open goes beneath a directory descriptor
 * without following a link (lib/fsat.h).
 */
#ifndef AIDC_STORAGE_SPACE_H
#define AIDC_STORAGE_SPACE_H

#include <stdbool.h>
#include <stddef.h>

#define SPACE_NAME_MAX 63     /* bytes of a project, user or dataset name */
#define SPACE_PATH_MAX 4096   /* bytes of a path inside a space */
#define SPACE_COMPONENT_MAX 255

enum space_kind { SPACE_PROJECT, SPACE_HOME, SPACE_DATASET };

struct space {
    enum space_kind kind;
    char tenant[SPACE_NAME_MAX + 1];
    char name[SPACE_NAME_MAX + 1];
};

/* Who owns a tenant's files: uid and gid, or -1 for aidcd's own (not root). */
struct space_owner {
    long long uid, gid;
};

/* "projects", "home" or "datasets": the folder of a kind, as in the API's paths. */
const char *space_kind_dir(enum space_kind k);

/* Whether name is a valid dataset name: a-z first, then a-z, 0-9, '-', '_', '.'; 1-63. */
bool space_dataset_name_valid(const char *name);

/*
 * The space a path of the files API names ("projects/<p>/a/b", "home/<u>",
 * "datasets/<d>/x") into sp, *rest pointing into path at what follows (""
 * at the space's root). 0, or -1 when the kind or name is not one
 * (names are checked for their form only: whether the project exists is the
 * caller's business).
 */
int space_parse(const char *tenant, const char *path, struct space *sp, const char **rest);

/*
 * Whether rel is a valid path inside a space: "" (the root), or components
 * separated by single '/', each 1-255 bytes of valid UTF-8 without control
 * characters, none "." or "..", at most SPACE_PATH_MAX bytes in all.
 */
bool space_path_valid(const char *rel);

/* "<tenant>/<kind dir>/<name>" into out; false when it does not fit. */
bool space_relpath(const struct space *sp, char *out, size_t outsz);

/* The owner of a tenant's files: uid_first + number when aidcd is root, else -1. */
struct space_owner space_owner_of(long long uid_first, long long tenant_number);

/*
 * The space's directory, opened O_RDONLY | O_DIRECTORY beneath rootfd (no
 * link followed). With create, the layout on the way and the space itself
 * are made with their owners and modes (an existing one is left as it is).
 * The descriptor, or -1 with errno (ENOENT: no such space).
 */
int space_open(int rootfd, const struct space *sp, const struct space_owner *own, bool create);

/*
 * Bytes (of blocks held) and entries beneath spacefd, walking at most
 * max_entries entries and never following a link, at any depth (one
 * directory open at a time). 0 when the walk was whole, 1 when it was cut
 * (the figures so far): at max_entries, 65536 directories down, or where a
 * directory it stood in moved meanwhile; -1 with errno.
 */
int space_measure(int spacefd, long long max_entries, long long *bytes, long long *entries);

#endif
