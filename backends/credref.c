/* credref.c - secrets named by credentials_ref (see credref.h). */
#include "credref.h"

#include "../server/err.h"
#include "../server/secfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool credref_valid(const char *ref)
{
    if (strncmp(ref, "file:", 5) == 0)
        return ref[5] == '/' && strlen(ref) <= 1024 && !strstr(ref, "/../");
    const char *n = ref + 4;
    if (strncmp(ref, "env:", 4) != 0 || strlen(n) > 128 ||
        !((n[0] >= 'A' && n[0] <= 'Z') || (n[0] >= 'a' && n[0] <= 'z') || n[0] == '_'))
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}

int credref_read(const char *ref, unsigned char *out, size_t n, size_t *len, char *err,
                 size_t errsz)
{
    out[0] = '\0';
    *len = 0;
    if (!credref_valid(ref)) {
        snprintf(err, errsz, "credentials_ref must be file:/path or env:NAME");
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
