/*
 * imagecache.h - container images for local jobs: pulled by digest, unpacked
 * once per digest into a cache of bounded size, used read-only by every job
 * that runs them.
 *
 * Pulling and unpacking are done by established tools, not here: skopeo
 * copies the image by its digest from the registry into an OCI layout
 * (containers/image checks every blob against its digest), and umoci unpacks
 * that into a root file system (as root keeping the image's owners; as
 * another user --rootless, everything its own). The cache directory holds,
 * per digest, <hex>/rootfs and <hex>/config.json (umoci's runtime spec,
 * whose process.env the job starts from), <hex>/size, <hex>/sources (the
 * host/repository names it was fetched as: a job naming the digest under
 * another name has the registry confirm it first), and a lock file
 * <hex>.lock: exclusive while one process pulls, shared by the jobs that run
 * the image, so eviction (least recently used first, down to the size
 * bound) never takes an image a job runs. An entry appears by one rename,
 * and goes by one rename before it is removed: a crash leaves no half image.
 *
 * The unpacked tree is made safe to share (backends/imagetree.h: no device
 * nodes, setuid bits or file capabilities; real mount points), a pull that
 * outgrows the cache's bound is stopped, and the cache is closed to every
 * user but aidcd's and the jobs' group.
 */
#ifndef AIDC_IMAGECACHE_H
#define AIDC_IMAGECACHE_H

#include <jansson.h>
#include <stdbool.h>

#define IMAGECACHE_SKOPEO "/usr/bin/skopeo"
#define IMAGECACHE_UMOCI "/usr/bin/umoci"

struct imagecache_ref {
    const char *dir;      /* the cache directory (made 0711 if missing) */
    long long max_bytes;  /* the cache's bound (images in use stay above it) */
    const char *image;    /* host/repository@sha256:... */
    const char *digest;   /* sha256:<64 hex> */
    bool tls_verify;      /* false for a registry over plain http */
    const char *authfile; /* skopeo's auth file for the registry, or NULL */
    int timeout_s;        /* for the pull and the unpack */
    long long share_gid;  /* the group the jobs' processes have (the cache is 0710 to it), or -1:
                           * only this user (0700) */
    int cancel_fd;        /* readable: give up (a stop request); -1: none */
};

struct imagecache_use {
    int lock_fd;   /* held shared while the image is used */
    int rootfs_fd; /* the root file system, a directory (O_PATH) */
    json_t *env;   /* the image's environment: array of "NAME=value" (new reference) */
    bool pulled;   /* this call pulled it (not found in the cache) */
};

/*
 * The image of r, pulled and unpacked unless the cache has it; held for use
 * until imagecache_release. 0, or -1 with err (skopeo's or umoci's own words
 * where they failed). Blocks for the pull; r->cancel_fd ends it early.
 */
int imagecache_acquire(const struct imagecache_ref *r, struct imagecache_use *u, char *err,
                       size_t errsz);
void imagecache_release(struct imagecache_use *u);

/*
 * Bring the cache (open as dirfd) within max bytes: images go least recently
 * used first, except keep (a hex digest, or NULL), those used in the last two
 * minutes and those a job holds (their lock is taken). Each goes by a rename,
 * then is removed; its lock file stays.
 */
void imagecache_trim(int dirfd, long long max, const char *keep);

/* Whether d is "sha256:" and 64 lowercase hex digits. */
bool imagecache_digest_valid(const char *d);

#endif
