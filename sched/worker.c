/* worker.c - the background worker loop (see worker.h). */
#include "worker.h"

#include "../db/db.h"
#include "../server/err.h"
#include "../server/log.h"
#include "../server/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RETRY_MS 1000

struct worker {
    struct worker_spec spec;
    pthread_t thread;
    int wake[2]; /* a pipe: stop writes a byte, the wait sees it */
    atomic_bool stop;
    struct db *db;
};

static void nap(struct worker *w, int ms)
{
    struct pollfd p = {.fd = w->wake[0], .events = POLLIN};
    (void)poll(&p, 1, ms);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    bool notified = true; /* the first round looks at everything */
    while (!atomic_load(&w->stop)) {
        int r = w->spec.round(w->db, notified, w->spec.arg);
        notified = false;
        if (atomic_load(&w->stop))
            break;
        if (r > 0)
            continue;
        if (r < 0) {
            log_debug("%s: round failed (%s); again in a second", w->spec.name, aidc_err_name(r));
            nap(w, RETRY_MS);
            notified = true;
            continue;
        }
        int got = db_wait(w->db, w->spec.interval_ms, w->wake[0]);
        if (got < 0) {
            nap(w, RETRY_MS);
            notified = true; /* notifications may have been missed */
        } else {
            notified = got > 0;
        }
    }
    return NULL;
}

struct worker *worker_start(const char *url, const struct worker_spec *spec)
{
    struct worker *w = xcalloc(1, sizeof *w);
    w->spec = *spec;
    atomic_init(&w->stop, false);
    if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        log_error("%s: cannot create its wake-up pipe: %s", spec->name, strerror(errno));
        free(w);
        return NULL;
    }
    char *app = xasprintf("aidcd-%s", spec->name);
    w->db = db_open(url, app);
    free(app);
    for (int i = 0; i < 4 && spec->channels[i]; i++)
        db_listen(w->db, spec->channels[i]);
    if (pthread_create(&w->thread, NULL, run, w) != 0) {
        log_error("cannot start the %s thread", spec->name);
        db_close(w->db);
        close(w->wake[0]);
        close(w->wake[1]);
        free(w);
        return NULL;
    }
    return w;
}

void worker_stop(struct worker *w)
{
    if (!w)
        return;
    atomic_store(&w->stop, true);
    char b = 1;
    while (write(w->wake[1], &b, 1) < 0 && errno == EINTR)
        ;
    pthread_join(w->thread, NULL);
    db_close(w->db);
    close(w->wake[0]);
    close(w->wake[1]);
    free(w);
}
