/* credref.c - secrets named by credentials_ref (see credref.h). */
#include "credref.h"

#include "config.h"
#include "err.h"
#include "secfile.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct config *g_cfg; /* configuration: read-only after start */

void credref_init(const struct config *cfg)
{
    g_cfg = cfg;
}

/* Whether a and b name the same file (both must exist). */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && a[0] && b[0] && stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Whether path is one of aidcd's own secret files or under its data directory. */
static bool own_file(const char *path)
{
    const char *base = strrchr(path, '/');
    if (strcmp(base ? base + 1 : path, ".pgpass") == 0)
        return true; /* libpq's passwords */
    if (!g_cfg)
        return false;
    if (same_file(path, g_cfg->jwt_key_file) || same_file(path, g_cfg->audit_key_file) ||
        same_file(path, getenv("AIDC_CONFIG_FILE")) || same_file(path, getenv("PGPASSFILE")))
        return true;
    char real[PATH_MAX], data[PATH_MAX];
    if (!realpath(g_cfg->data_dir, data))
        return false;
    size_t n = strlen(data);
    /* a file that does not exist yet is judged by its directory's path */
    return realpath(path, real) ? strncmp(real, data, n) == 0 && (real[n] == '/' || !real[n])
                                : strncmp(path, data, n) == 0 && path[n] == '/';
}

size_t credref_own_paths(const char **out, size_t n)
{
    if (!g_cfg)
        return 0;
    const char *all[] = {g_cfg->jwt_key_file, g_cfg->audit_key_file, getenv("AIDC_CONFIG_FILE"),
                         getenv("PGPASSFILE")};
    size_t k = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0] && k < n; i++)
        if (all[i] && all[i][0] == '/')
            out[k++] = all[i];
    return k;
}

/* aidcd's own settings and libpq's variables (PGPASSWORD, ...). */
static bool own_variable(const char *name)
{
    return g_cfg && (config_is_setting(name) || strncmp(name, "PG", 2) == 0);
}

bool credref_valid(const char *ref)
{
    if (strncmp(ref, "file:", 5) == 0)
        return ref[5] == '/' && strlen(ref) <= 1024 && !strstr(ref, "/../") && !own_file(ref + 5);
    const char *n = ref + 4;
    if (strncmp(ref, "env:", 4) != 0 || strlen(n) > 128 ||
        !((n[0] >= 'A' && n[0] <= 'Z') || (n[0] >= 'a' && n[0] <= 'z') || n[0] == '_'))
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return !own_variable(n);
}

int credref_read(const char *ref, unsigned char *out, size_t n, size_t *len, char *err,
                 size_t errsz)
{
    out[0] = '\0';
    *len = 0;
    if (!credref_valid(ref)) {
        snprintf(err, errsz,
                 "credentials_ref must be file:/path or env:NAME, and not one of "
                 "aidcd's own settings, keys or files");
        return AIDC_EINVAL;
    }
    if (ref[0] == 'e') {
        const char *v = getenv(ref + 4);
        if (!v || !*v) {
            snprintf(err, errsz, "the environment variable %s (credentials_ref) is not set",
                     ref + 4);
            return AIDC_ENOTFOUND;
        }
        size_t vl = strlen(v);
        if (vl >= n) {
            snprintf(err, errsz, "the secret in %s is longer than %zu bytes", ref + 4, n - 1);
            return AIDC_ETOOBIG;
        }
        memcpy(out, v, vl + 1);
        *len = vl;
        return 0;
    }
    const char *path = ref + 5;
    char why[600];
    int fd = secfile_open(path, why, sizeof why);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errsz, "credentials_ref: %s", why);
        return e == ENOENT ? AIDC_ENOTFOUND : e == EPERM ? AIDC_EFORBIDDEN : AIDC_EIO;
    }
    size_t got = 0;
    ssize_t r = 0;
    while (got + 1 < n && (r = read(fd, out + got, n - 1 - got)) > 0)
        got += (size_t)r;
    unsigned char extra;
    bool more = r >= 0 && got + 1 >= n && read(fd, &extra, 1) == 1;
    int read_errno = r < 0 ? errno : 0;
    close(fd);
    out[got] = '\0';
    if (read_errno || more) {
        out[0] = '\0';
        if (more)
            snprintf(err, errsz, "%s (credentials_ref) is longer than %zu bytes", path, n - 1);
        else
            snprintf(err, errsz, "cannot read %s (credentials_ref): %s", path,
                     strerror(read_errno));
        return more ? AIDC_ETOOBIG : AIDC_EIO;
    }
    *len = got;
    return 0;
}

/* The secret of ref as one line of text (malloc'd), or NULL with *e and err. */
static char *one_line(const char *ref, bool need_colon, int *e, char *err, size_t errsz)
{
    unsigned char *secret = xmalloc(CREDREF_MAX + 1);
    size_t len = 0;
    char *out = NULL;
    *e = credref_read(ref, secret, CREDREF_MAX + 1, &len, err, errsz);
    while (!*e && len && (secret[len - 1] == '\n' || secret[len - 1] == '\r'))
        len--;
    if (!*e && ((need_colon && !memchr(secret, ':', len)) || memchr(secret, '\0', len) ||
                memchr(secret, '\n', len) || len == 0)) {
        snprintf(err, errsz, "the secret of %s must be one line%s", ref,
                 need_colon ? " user:password" : " of text");
        *e = AIDC_EINVAL;
    }
    if (!*e)
        out = xstrndup((const char *)secret, len);
    explicit_bzero(secret, CREDREF_MAX + 1);
    free(secret);
    return out;
}

char *credref_userpwd(const char *ref, int *e, char *err, size_t errsz)
{
    return one_line(ref, true, e, err, errsz);
}

char *credref_line(const char *ref, int *e, char *err, size_t errsz)
{
    return one_line(ref, false, e, err, errsz);
}
