/* tree.c - file operations beneath a directory descriptor (see tree.h). */
#include "tree.h"

#include "../lib/crypto.h"
#include "../lib/fsat.h"
#include "../lib/rmtree.h"
#include "../lib/xalloc.h"
#include "space.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define FILE_MODE 0660
#define DIR_MODE  0770

/* Open rel ("" = dirfd itself) as a directory beneath dirfd. */
static int open_dir(int dirfd, const char *rel)
{
    int fd = fsat_open(dirfd, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY, 0);
    if (fd >= 0 || errno != ENOTDIR)
        return fd;
    /* a link where a directory should be says ENOTDIR (O_DIRECTORY is
     * checked first): tell it from a file there, as a link is refused */
    int p = fsat_open(dirfd, rel, O_PATH, 0);
    struct stat st;
    int err = p < 0 ? errno : fstat(p, &st) == 0 && S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
    if (p >= 0)
        close(p);
    errno = err;
    return -1;
}

/*
 * The parent directory of rel (opened) and its last component (into base).
 * rel must name something below the root: "" has no parent (EINVAL).
 */
static int open_parent(int dirfd, const char *rel, char *base, size_t basesz)
{
    if (!space_path_valid(rel) || !rel[0]) {
        errno = EINVAL;
        return -1;
    }
    const char *slash = strrchr(rel, '/');
    const char *last = slash ? slash + 1 : rel;
    if (strlen(last) >= basesz) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(base, last, strlen(last) + 1);
    if (!slash)
        return open_dir(dirfd, "");
    char *parent = xstrndup(rel, (size_t)(slash - rel));
    int fd = open_dir(dirfd, parent);
    free(parent);
    return fd;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A max-heap of names (the greatest at 0). */
static void swap(char **h, size_t a, size_t b)
{
    char *t = h[a];
    h[a] = h[b];
    h[b] = t;
}

static void sift_up(char **h, size_t i)
{
    while (i > 0 && strcmp(h[(i - 1) / 2], h[i]) < 0) {
        swap(h, (i - 1) / 2, i);
        i = (i - 1) / 2;
    }
}

static void sift_down(char **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && strcmp(h[l], h[m]) > 0)
            m = l;
        if (r < n && strcmp(h[r], h[m]) > 0)
            m = r;
        if (m == i)
            return;
        swap(h, i, m);
        i = m;
    }
}

int tree_list(int dirfd, const char *rel, const char *after, size_t limit, struct tree_list *out)
{
    memset(out, 0, sizeof *out);
    if (!space_path_valid(rel)) {
        errno = EINVAL;
        return -1;
    }
    int fd = open_dir(dirfd, rel);
    if (fd < 0)
        return -1;
    DIR *d = fsat_listdir(fd);
    if (!d) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    /*
     * The page is the first `limit` names past the cursor: kept in a max-heap
     * of limit + 1 names while the directory is read, so a directory of
     * millions of entries (a job can make them) takes a page's memory, not
     * the directory's. One more than the page says whether more follow.
     */
    size_t cap = limit + 1, n = 0, seen = 0;
    char **heap = xcalloc(cap, sizeof *heap);
    struct dirent *e;
    while ((errno = 0, e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        /* a name the API cannot address (a control character, not UTF-8: a
         * job's) is listed as nothing: as a page's last, its cursor would be
         * refused, and every name after it never listed */
        if (!space_path_valid(nm) ||
            strncmp(nm, TREE_UPLOAD_PREFIX, strlen(TREE_UPLOAD_PREFIX)) == 0 ||
            (after && strcmp(nm, after) <= 0) ||
            (e->d_type != DT_REG && e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
            continue;
        seen++;
        if (n == cap && strcmp(nm, heap[0]) >= 0)
            continue;
        if (n == cap) {
            free(heap[0]);
            heap[0] = heap[--n];
            sift_down(heap, n, 0);
        }
        heap[n] = xstrdup(nm);
        sift_up(heap, n++);
    }
    int rc = errno ? -1 : 0;
    qsort(heap, n, sizeof *heap, cmp_names);
    char **names = heap;
    out->items = xcalloc(limit ? limit : 1, sizeof *out->items);
    size_t i = 0;
    for (; rc == 0 && i < n && out->n < limit; i++) {
        struct stat st;
        if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
            continue; /* gone, or a link or a FIFO: nothing to list */
        struct tree_entry *t = &out->items[out->n++];
        t->name = names[i];
        names[i] = NULL;
        t->dir = S_ISDIR(st.st_mode);
        t->size = t->dir ? 0 : (long long)st.st_size;
        t->mtime = st.st_mtim;
    }
    out->more = i < n || seen > n; /* names left in the heap, or never kept in it */
    for (size_t k = 0; k < n; k++)
        free(names[k]);
    free(names);
    int saved = errno;
    closedir(d);
    close(fd);
    errno = saved;
    if (rc != 0)
        tree_list_free(out);
    return rc;
}

void tree_list_free(struct tree_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i].name);
    free(l->items);
    memset(l, 0, sizeof *l);
}

int tree_stat(int dirfd, const char *rel, struct stat *st)
{
    if (!space_path_valid(rel)) {
        errno = EINVAL;
        return -1;
    }
    if (!rel[0])
        return fstat(dirfd, st);
    char base[SPACE_COMPONENT_MAX + 1];
    int pfd = open_parent(dirfd, rel, base, sizeof base);
    if (pfd < 0)
        return -1;
    int rc = fstatat(pfd, base, st, AT_SYMLINK_NOFOLLOW);
    int saved = errno;
    close(pfd);
    errno = saved;
    return rc;
}

int tree_open_file(int dirfd, const char *rel, struct stat *st)
{
    if (!space_path_valid(rel) || !rel[0]) {
        errno = rel && !rel[0] ? EISDIR : EINVAL;
        return -1;
    }
    int fd = fsat_open(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return -1;
    int why = fstat(fd, st) != 0 ? errno : S_ISDIR(st->st_mode) ? EISDIR
                                         : !S_ISREG(st->st_mode) ? EINVAL : 0;
    if (why) {
        close(fd);
        errno = why;
        return -1;
    }
    return fd;
}

int tree_mkdir(int dirfd, const char *rel)
{
    char base[SPACE_COMPONENT_MAX + 1];
    int pfd = open_parent(dirfd, rel, base, sizeof base);
    if (pfd < 0)
        return -1;
    int rc = mkdirat(pfd, base, DIR_MODE);
    int saved = errno;
    close(pfd);
    errno = saved;
    return rc;
}

int tree_move(int dirfd, const char *from, const char *to)
{
    char b1[SPACE_COMPONENT_MAX + 1], b2[SPACE_COMPONENT_MAX + 1];
    int p1 = open_parent(dirfd, from, b1, sizeof b1);
    if (p1 < 0)
        return -1;
    int p2 = open_parent(dirfd, to, b2, sizeof b2);
    if (p2 < 0) {
        int saved = errno;
        close(p1);
        errno = saved;
        return -1;
    }
    /* RENAME_NOREPLACE: nothing at the destination is ever lost to a move */
    int rc = renameat2(p1, b1, p2, b2, RENAME_NOREPLACE);
    int saved = errno;
    close(p1);
    close(p2);
    errno = saved;
    return rc;
}

int tree_remove(int dirfd, const char *rel, bool recursive)
{
    char base[SPACE_COMPONENT_MAX + 1];
    int pfd = open_parent(dirfd, rel, base, sizeof base);
    if (pfd < 0)
        return -1;
    struct stat st;
    int rc = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW);
    if (rc == 0 && S_ISDIR(st.st_mode))
        rc = recursive ? rmtree_at(pfd, base) : unlinkat(pfd, base, AT_REMOVEDIR);
    else if (rc == 0)
        rc = unlinkat(pfd, base, 0);
    int saved = errno;
    close(pfd);
    errno = saved;
    return rc;
}

/* ---- uploads ------------------------------------------------------------------ */

/* Bytes gathered before a write: the body comes in pieces of a few KiB, and a
 * system call per piece would cost more than the disk. */
#define UPLOAD_BUF ((size_t)256 << 10)

struct tree_upload {
    int parent, fd;
    char base[SPACE_COMPONENT_MAX + 1];
    char part[80];
    uint64_t size;    /* bytes of the file, those in buf included */
    char *buf;
    size_t nbuf;
};

static void upload_free(struct tree_upload *u)
{
    if (u->fd >= 0)
        close(u->fd);
    if (u->parent >= 0)
        close(u->parent);
    free(u->buf);
    free(u);
}

static int write_all(int fd, const char *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        done += (size_t)w;
    }
    return 0;
}

static int flush(struct tree_upload *u)
{
    if (!u->nbuf)
        return 0;
    int rc = write_all(u->fd, u->buf, u->nbuf);
    u->nbuf = 0;
    return rc;
}

/* A partial file of one's own: a regular file with one link (checked on the descriptor).
 * O_NONBLOCK: a FIFO a job made under the name (it is predictable) fails the open
 * (ENXIO) instead of waiting, with this HTTP thread, for a reader that never comes. */
static int open_part(struct tree_upload *u, uint64_t offset, uint64_t *have)
{
    int fd = fsat_open(u->parent, u->part, O_WRONLY | O_NONBLOCK | O_NOCTTY, 0);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)) {
        close(fd);
        fd = -1;
        errno = EINVAL;
    }
    /* one request at a time writes a part: a client that retries while its
     * first try still arrives must wait for it, or both would write */
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        errno = EBUSY;
        return -1;
    }
    *have = fd >= 0 ? (uint64_t)st.st_size : 0;
    if (fd >= 0 && *have == offset && lseek(fd, 0, SEEK_END) == (off_t)offset)
        return fd;
    if (fd >= 0)
        close(fd);
    errno = EAGAIN;
    return -1;
}

struct tree_upload *tree_upload_open(int dirfd, const char *rel, const char *key,
                                     uint64_t offset, uint64_t *have)
{
    struct tree_upload *u = xcalloc(1, sizeof *u);
    u->fd = -1;
    *have = 0;
    u->parent = open_parent(dirfd, rel, u->base, sizeof u->base);
    if (u->parent < 0)
        goto fail;
    struct stat st;
    if (fstatat(u->parent, u->base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        goto fail;
    }
    if (key) {
        char hash[65];
        crypto_sha256_hex(key, strlen(key), hash);
        snprintf(u->part, sizeof u->part, TREE_UPLOAD_PREFIX "%.32s.part", hash);
    } else {
        unsigned char rnd[12];
        char hex[25];
        if (crypto_random(rnd, sizeof rnd) != 0)
            goto fail;
        for (size_t i = 0; i < sizeof rnd; i++)
            snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
        snprintf(u->part, sizeof u->part, TREE_UPLOAD_PREFIX "%s", hex);
    }
    if (key && offset > 0) {
        u->fd = open_part(u, offset, have);
        if (u->fd < 0)
            goto fail;
        u->size = offset;
        return u;
    }
    /* afresh: whatever has the name (a link, a FIFO, an old part) goes first */
    if (rmtree_at(u->parent, u->part) != 0)
        goto fail;
    u->fd = openat(u->parent, u->part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   FILE_MODE);
    if (u->fd < 0 || flock(u->fd, LOCK_EX | LOCK_NB) != 0)
        goto fail;
    return u;
fail: {
    int saved = errno;
    upload_free(u);
    errno = saved;
    return NULL;
}
}

int tree_upload_write(struct tree_upload *u, const char *data, size_t len)
{
    if (!u->buf)
        u->buf = xmalloc(UPLOAD_BUF);
    if (u->nbuf + len > UPLOAD_BUF && flush(u) != 0)
        return -1;
    if (len >= UPLOAD_BUF) {
        if (write_all(u->fd, data, len) != 0)
            return -1;
    } else {
        memcpy(u->buf + u->nbuf, data, len);
        u->nbuf += len;
    }
    u->size += len;
    return 0;
}

uint64_t tree_upload_size(const struct tree_upload *u)
{
    return u->size;
}

int tree_upload_commit(struct tree_upload *u, struct stat *st)
{
    int why = flush(u) != 0 || fsync(u->fd) != 0 || fstat(u->fd, st) != 0 ? errno : 0;
    if (close(u->fd) != 0 && !why)
        why = errno;
    u->fd = -1;
    if (!why && renameat(u->parent, u->part, u->parent, u->base) != 0)
        why = errno; /* EISDIR when a directory took the name meanwhile */
    if (why) {
        unlinkat(u->parent, u->part, 0);
        upload_free(u);
        errno = why;
        return -1;
    }
    fsync(u->parent); /* the rename itself survives a crash */
    upload_free(u);
    return 0;
}

int tree_upload_flush(struct tree_upload *u)
{
    return flush(u);
}

void tree_upload_keep(struct tree_upload *u)
{
    (void)flush(u); /* what could not be written is not kept: the next part says so */
    upload_free(u);
}

void tree_upload_abort(struct tree_upload *u)
{
    unlinkat(u->parent, u->part, 0);
    upload_free(u);
}
