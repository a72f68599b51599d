/*
 * static.h - the portal's static files, served from AIDC_PORTAL_DIR.
 *
 * Only regular files below the root are served (no "..", no dot files, no
 * symlinks leaving the root). A path without an extension that names no file
 * gets index.html, so the portal's client-side routes survive a reload.
 * Files carry a weak ETag from size, mtime (ns) and inode and `Cache-Control: no-cache`,
 * so browsers revalidate cheaply (304) and never run a stale portal. The
 * exception is /vendor/NAME-VERSION/...: a vendored library's folder names its
 * version, a new version is a new URL, so those are cached for a year.
 */
#ifndef AIDC_STATIC_H
#define AIDC_STATIC_H

#include <stdint.h>

struct static_file {
    int status; /* 200, 304 or 404 */
    int fd;     /* open file for 200, else -1 */
    uint64_t size;
    const char *content_type;
    const char *cache_control;
    char etag[96];
};

/* Resolve path under root; the caller closes out->fd (if >= 0). */
void static_open(const char *root, const char *path, const char *if_none_match,
                 struct static_file *out);
/* Content type for a file name by extension. */
const char *static_content_type(const char *name);

#endif
