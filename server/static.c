/* static.c - portal files (see static.h). */
#include "static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *static_content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".woff2", "font/woff2"},
        {".txt", "text/plain; charset=utf-8"},
        {".map", "application/json"},
    };
    const char *dot = strrchr(name, '.');
    const char *slash = strrchr(name, '/');
    if (dot && (!slash || dot > slash))
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* Reject anything but plain path segments: no "..", no ".x", no backslash. */
static int path_is_safe(const char *path)
{
    if (path[0] != '/' || strchr(path, '\\') || strstr(path, "//"))
        return 0;
    for (const char *p = path; (p = strchr(p, '/')) != NULL; p++)
        if (p[1] == '.')
            return 0;
    return strlen(path) < 1024;
}

static int open_under(const char *root, const char *rel, struct stat *st)
{
    char full[PATH_MAX], real_root[PATH_MAX], real[PATH_MAX];
    int n = snprintf(full, sizeof full, "%s%s", root, rel);
    if (n < 0 || (size_t)n >= sizeof full)
        return -1;
    if (!realpath(root, real_root) || !realpath(full, real))
        return -1;
    size_t rl = strlen(real_root);
    if (strncmp(real, real_root, rl) != 0 || (real[rl] != '/' && real[rl] != '\0'))
        return -1; /* a symlink pointing outside the portal */
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return -1;
    }
    return fd;
}

void static_open(const char *root, const char *path, const char *if_none_match,
                 struct static_file *out)
{
    struct stat st;
    const char *name = path;
    memset(out, 0, sizeof *out);
    out->fd = -1;
    out->status = 404;
    if (!path_is_safe(path))
        return;
    if (strcmp(path, "/") == 0)
        name = "/index.html";
    int fd = open_under(root, name, &st);
    if (fd < 0) {
        const char *last = strrchr(path, '/');
        if (strchr(last, '.'))
            return; /* a missing asset is a 404, not the index */
        name = "/index.html";
        fd = open_under(root, name, &st);
        if (fd < 0)
            return;
    }
    /* size, mtime to the nanosecond and inode: a redeploy that keeps sizes and
     * whole-second mtimes (cp -p, reproducible images) still changes the tag */
    snprintf(out->etag, sizeof out->etag, "W/\"%llx-%llx.%lx-%llx\"",
             (unsigned long long)st.st_size, (unsigned long long)st.st_mtim.tv_sec,
             (unsigned long)st.st_mtim.tv_nsec, (unsigned long long)st.st_ino);
    out->content_type = static_content_type(name);
    out->cache_control = strncmp(name, "/vendor/", 8) == 0 && strchr(name + 8, '/')
                             ? "public, max-age=31536000, immutable"
                             : "no-cache";
    out->size = (uint64_t)st.st_size;
    if (if_none_match && strcmp(if_none_match, out->etag) == 0) {
        close(fd);
        out->status = 304;
        return;
    }
    out->fd = fd;
    out->status = 200;
}
