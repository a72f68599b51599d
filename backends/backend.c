/* backend.c - the backends this build has, by cluster kind. */
#include "backend.h"

#include "local.h"
#include "slurm.h"

#include "../server/err.h"
#include "../server/xalloc.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct backend_ops *const all[] = {&backend_local, &backend_slurm, NULL};

const struct backend_ops *backend_find(const char *kind)
{
    for (size_t i = 0; kind && all[i]; i++)
        if (strcmp(all[i]->kind, kind) == 0)
            return all[i];
    return NULL;
}

int backend_tail_file(const char *path, int tail, char **text, size_t *textlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return AIDC_ENOTFOUND;
    /* read backwards in blocks until tail lines are found */
    off_t end = lseek(fd, 0, SEEK_END), pos = end;
    size_t len = 0;
    char *buf = NULL;
    int lines = 0;
    /* at most 16 MiB of a log per answer */
    while (pos > 0 && lines <= tail && len < (size_t)16 << 20) {
        size_t chunk = pos > 65536 ? 65536 : (size_t)pos;
        char *more = xmalloc(len + chunk);
        if (pread(fd, more, chunk, pos - (off_t)chunk) != (ssize_t)chunk) {
            free(more);
            break;
        }
        pos -= (off_t)chunk;
        for (size_t i = 0; i < chunk; i++)
            lines += more[i] == '\n';
        if (len)
            memcpy(more + chunk, buf, len);
        free(buf);
        buf = more;
        len += chunk;
    }
    close(fd);
    /* skip whole lines beyond the last `tail` (a final line without \n counts) */
    size_t start = 0;
    int total = 0;
    for (size_t i = 0; i < len; i++)
        total += buf[i] == '\n';
    if (len && buf[len - 1] != '\n')
        total++;
    for (size_t i = 0; i < len && total > tail; i++) {
        if (buf[i] == '\n') {
            total--;
            start = i + 1;
        }
    }
    *text = xmalloc(len - start + 1);
    if (len > start)
        memcpy(*text, buf + start, len - start);
    (*text)[len - start] = '\0';
    *textlen = len - start;
    free(buf);
    return 0;
}

