/* space.c - storage spaces on disk (see space.h). */
#include "space.h"

#include "../lib/fsat.h"
#include "../lib/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How deep space_measure goes (a frame of 24 bytes a level): deeper is cut. */
#define MAX_DEPTH 65536

static const char *const kind_dirs[] = {"projects", "home", "datasets"};

const char *space_kind_dir(enum space_kind k)
{
    return kind_dirs[k];
}

static bool name_char(char c, bool first)
{
    if (c >= 'a' && c <= 'z')
        return true;
    return !first && ((c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.');
}

/* The form of project slugs, usernames and dataset names alike. */
static bool name_valid(const char *s, size_t n)
{
    if (n < 1 || n > SPACE_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i], i == 0))
            return false;
    return true;
}

bool space_dataset_name_valid(const char *name)
{
    return name && name_valid(name, strlen(name));
}

int space_parse(const char *tenant, const char *path, struct space *sp, const char **rest)
{
    memset(sp, 0, sizeof *sp);
    size_t tn = tenant ? strlen(tenant) : 0;
    if (!name_valid(tenant, tn) || !path)
        return -1;
    size_t kn = strcspn(path, "/");
    bool found = false;
    for (size_t k = 0; k < sizeof kind_dirs / sizeof *kind_dirs; k++) {
        if (strlen(kind_dirs[k]) == kn && strncmp(path, kind_dirs[k], kn) == 0) {
            sp->kind = (enum space_kind)k;
            found = true;
        }
    }
    if (!found || path[kn] != '/')
        return -1;
    const char *name = path + kn + 1;
    size_t nn = strcspn(name, "/");
    if (!name_valid(name, nn))
        return -1;
    memcpy(sp->tenant, tenant, tn + 1);
    memcpy(sp->name, name, nn);
    sp->name[nn] = '\0';
    *rest = name[nn] == '/' ? name + nn + 1 : name + nn;
    return 0;
}

/* Whether s[0..n) is valid UTF-8 (shortest forms, no surrogates) without control characters. */
static bool component_valid(const unsigned char *s, size_t n)
{
    if (n == 0 || n > SPACE_COMPONENT_MAX || (n == 1 && s[0] == '.') ||
        (n == 2 && s[0] == '.' && s[1] == '.'))
        return false;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + len > n || c < 0x20 || c == 0x7f)
            return false;
        unsigned cp = len == 1 ? c : c & (0x7fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3fu);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
            return false;
        i += len;
    }
    return true;
}

bool space_path_valid(const char *rel)
{
    if (!rel)
        return false;
    size_t n = strlen(rel);
    if (n == 0)
        return true;
    if (n > SPACE_PATH_MAX)
        return false;
    for (const char *p = rel;;) {
        size_t c = strcspn(p, "/");
        if (!component_valid((const unsigned char *)p, c))
            return false;
        if (p[c] == '\0')
            return true;
        p += c + 1;
    }
}

bool space_relpath(const struct space *sp, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "%s/%s/%s", sp->tenant, space_kind_dir(sp->kind), sp->name);
    return n > 0 && (size_t)n < outsz;
}

struct space_owner space_owner_of(long long uid_first, long long tenant_number)
{
    struct space_owner o = {-1, -1};
    if (geteuid() == 0 && tenant_number >= 0) {
        o.uid = uid_first + tenant_number;
        o.gid = o.uid;
    }
    return o;
}

/*
 * Open name in at as a directory, making it first when create: owned by
 * uid:gid (-1: as made) with mode. A directory that exists keeps its owner
 * and mode. The descriptor, or -1 with errno.
 */
static int step(int at, const char *name, bool create, long long uid, long long gid, mode_t mode)
{
    int fd = fsat_open(at, name, O_RDONLY | O_DIRECTORY, 0);
    if (fd >= 0 || errno != ENOENT || !create)
        return fd;
    if (mkdirat(at, name, 0700) != 0 && errno != EEXIST)
        return -1;
    fd = fsat_open(at, name, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return -1;
    /* owner and mode on the descriptor: the name may have been swapped since */
    if ((uid >= 0 && fchown(fd, (uid_t)uid, (gid_t)gid) != 0) || fchmod(fd, mode) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int space_open(int rootfd, const struct space *sp, const struct space_owner *own, bool create)
{
    bool root = own && own->uid >= 0;
    long long uid = root ? own->uid : -1, gid = root ? own->gid : -1;
    mode_t shared = root ? 0750 : 0700;
    /* the tenant's folders: root's, entered by the tenant's group */
    int t = step(rootfd, sp->tenant, create, root ? 0 : -1, gid, shared);
    if (t < 0)
        return -1;
    int k = step(t, space_kind_dir(sp->kind), create, root ? 0 : -1, gid, shared);
    close(t);
    if (k < 0)
        return -1;
    /* a dataset is the tenant's too (its admins write it through the files
     * API, as the tenant), but only ever mounted read-only into jobs */
    int fd = step(k, sp->name, create, uid, gid,
                  !root ? 0700 : sp->kind == SPACE_DATASET ? 0750 : 0770);
    int saved = errno;
    close(k);
    errno = saved;
    return fd;
}

/*
 * The walk holds one directory open at a time, however deep the tree (a job,
 * or a member through moves, can nest directories far deeper than there are
 * descriptors to hold one per level): going down it remembers where it was
 * in the directory it leaves (telldir) and what that directory is (device and
 * inode); coming back it opens ".." and continues only if that is still the
 * same directory (else something moved meanwhile: the walk stops, cut).
 */
struct frame {
    dev_t dev;
    ino_t ino;
    long pos;
};

/* The directory open as fd (taken) as a stream, and what it is. NULL with errno. */
static DIR *walk_open(int fd, struct stat *st)
{
    DIR *d = fd >= 0 && fstat(fd, st) == 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return d;
}

int space_measure(int spacefd, long long max_entries, long long *bytes, long long *entries)
{
    long long n = 0, held = 0;
    bool cut = false;
    int rc = 0;
    size_t depth = 0, cap = 0;
    struct frame *stack = NULL;
    struct stat here;
    /* a stream of its own: one over spacefd would move its read position */
    DIR *d = walk_open(openat(spacefd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &here);
    if (!d)
        rc = -1;
    while (d) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (depth == 0)
                break;
            /* back up to where this directory was found */
            struct frame f = stack[--depth];
            int up = openat(dirfd(d), "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            closedir(d);
            d = walk_open(up, &here);
            if (!d || here.st_dev != f.dev || here.st_ino != f.ino) {
                cut = true; /* moved meanwhile: the figures so far */
                break;
            }
            seekdir(d, f.pos);
            continue;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n >= max_entries) {
            cut = true;
            break;
        }
        n++;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        held += (long long)st.st_blocks * 512;
        if (!S_ISDIR(st.st_mode))
            continue;
        if (depth >= MAX_DEPTH) {
            cut = true; /* counted as far as this: beneath it, not */
            continue;
        }
        int sub = fsat_open(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY, 0);
        if (sub < 0)
            continue; /* swapped for a link, or unreadable: not ours to count */
        if (depth == cap) {
            cap = cap ? cap * 2 : 64;
            stack = xreallocarray(stack, cap, sizeof *stack);
        }
        stack[depth++] = (struct frame){here.st_dev, here.st_ino, telldir(d)};
        closedir(d);
        d = walk_open(sub, &here);
        if (!d) {
            rc = -1;
            break;
        }
    }
    int saved = errno;
    if (d)
        closedir(d);
    free(stack);
    *bytes = held;
    *entries = n;
    errno = saved;
    return rc < 0 ? -1 : cut ? 1 : 0;
}
