/*
 * tree.h - what the files API does inside a space (or a job's outputs):
 * list, open for reading, make a directory, move, remove, and uploads that
 * appear whole or not at all.
 *
 * Every path is relative to a directory descriptor and checked with
 * space_path_valid first; every open goes through lib/fsat.h (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and the last step of a change is
 * an *at() call on the parent's descriptor, which never follows a link
 * there either. A link a job planted is listed as nothing and opened as
 * nothing; a FIFO is never opened for reading or waited on.
 *
 * Functions return 0 or -1 with errno: ENOENT (no such entry), ENOTDIR (a
 * file on the way), EISDIR / EINVAL (not a regular file or directory),
 * ELOOP / EXDEV (a link or a way out), EEXIST, ENOTEMPTY, ENOSPC, EDQUOT.
 */
#ifndef AIDC_STORAGE_TREE_H
#define AIDC_STORAGE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

/* Names an upload's partial file has while it is written: never listed. */
#define TREE_UPLOAD_PREFIX ".aidc-upload-"

struct tree_entry {
    char *name;
    bool dir;
    long long size;
    struct timespec mtime;
};

struct tree_list {
    struct tree_entry *items;
    size_t n;
    bool more; /* entries follow the last one */
};

/*
 * The regular files and directories of directory rel beneath dirfd whose
 * names sort after `after` (bytewise; NULL: from the first), at most limit
 * of them. Links, FIFOs, sockets, devices, partial uploads and names that
 * are no valid path component (space_path_valid) are left out.
 */
int tree_list(int dirfd, const char *rel, const char *after, size_t limit, struct tree_list *out);
void tree_list_free(struct tree_list *l);

/* What rel beneath dirfd is, without following a link ("" = dirfd itself). */
int tree_stat(int dirfd, const char *rel, struct stat *st);

/*
 * Open the regular file rel beneath dirfd for reading (O_NONBLOCK: a FIFO
 * swapped in cannot hold the caller), st its status. The descriptor, or -1.
 */
int tree_open_file(int dirfd, const char *rel, struct stat *st);

/* Make directory rel (its parent must exist). */
int tree_mkdir(int dirfd, const char *rel);

/* Move from to to, both beneath dirfd; to must not exist (EEXIST). */
int tree_move(int dirfd, const char *from, const char *to);

/* Remove rel: a file, an empty directory, or with recursive a whole tree. */
int tree_remove(int dirfd, const char *rel, bool recursive);

/*
 * An upload of rel beneath dirfd. Its bytes go to a partial file next to
 * the target; tree_upload_commit renames it over rel at the end (a file
 * there is replaced, a directory is EISDIR), tree_upload_abort removes it.
 *
 * Resumable uploads (key != NULL: who uploads what, e.g. the user and the
 * path) keep a partial file named from a hash of key between requests: a
 * part starting at offset 0 starts it afresh; one starting at offset > 0
 * continues it only when it holds exactly offset bytes (else EAGAIN, and
 * *have says how many it holds, 0 when there is none), and only when no
 * other request is writing it (else EBUSY: the partial file is locked
 * while a part arrives).
 */
struct tree_upload;

struct tree_upload *tree_upload_open(int dirfd, const char *rel, const char *key,
                                     uint64_t offset, uint64_t *have);
int tree_upload_write(struct tree_upload *u, const char *data, size_t len);
/* Bytes the partial file holds now (offset + what was written). */
uint64_t tree_upload_size(const struct tree_upload *u);
/* Make the partial file rel (fsync, rename); st: the file's status after. Frees u. */
int tree_upload_commit(struct tree_upload *u, struct stat *st);
/* Write what is gathered in memory to the partial file (a part answered is on disk). */
int tree_upload_flush(struct tree_upload *u);
/* Keep the partial file for the next part (resumable only). Frees u. */
void tree_upload_keep(struct tree_upload *u);
/* Remove the partial file. Frees u. */
void tree_upload_abort(struct tree_upload *u);

#endif
