/* dbwait.c - LISTEN and NOTIFY for background workers (see db.h). */
#include "db.h"
#include "dbint.h"

#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

void db_listen(struct db *db, const char *channel)
{
    size_t n = strlen(channel);
    bool ok = n > 0 && n < 64 && db->nchannels < MAX_CHANNELS;
    for (size_t i = 0; ok && i < n; i++)
        ok = (channel[i] >= 'a' && channel[i] <= 'z') || channel[i] == '_';
    if (!ok) {
        log_error("db_listen: bad channel \"%s\"", channel);
        abort(); /* a programming error: channels are constants */
    }
    db->channels[db->nchannels++] = xstrdup(channel);
    if (db->up)
        dbint_drop_conn(db); /* the next connection listens on it */
}

/* Take every notification libpq has read; true if there was one. */
static bool take_notifies(struct db *db)
{
    bool any = false;
    PGnotify *n;
    while ((n = PQnotifies(db->conn)) != NULL) {
        any = true;
        bool fits = strlen(n->extra) < sizeof db->note;
        if (fits && !db->notes++)
            strcpy(db->note, n->extra);
        else if (!fits || strcmp(db->note, n->extra) != 0)
            db->note_mixed = true;
        PQfreemem(n);
    }
    return any;
}

bool db_notified_only(struct db *db, const char *payload)
{
    bool only = !db->note_mixed && (!db->notes || strcmp(db->note, payload) == 0);
    db->notes = 0;
    db->note_mixed = false;
    return only;
}

int db_wait(struct db *db, int timeout_ms, int wake_fd)
{
    int e = dbint_ensure_up(db);
    if (e)
        return e;
    if (db->npending > 0 && dbint_drain(db, NULL) == AIDC_EUNAVAIL)
        return AIDC_EUNAVAIL; /* answers of a commit nobody waited for */
    if (!db->up)
        return AIDC_EUNAVAIL;
    if (!PQconsumeInput(db->conn)) {
        dbint_set_error(db, NULL, "connection lost while waiting");
        return dbint_conn_lost(db);
    }
    if (take_notifies(db))
        return 1;
    struct pollfd fds[2] = {{.fd = PQsocket(db->conn), .events = POLLIN},
                            {.fd = wake_fd, .events = POLLIN}};
    int n = poll(fds, wake_fd >= 0 ? 2 : 1, timeout_ms);
    if (n < 0 && errno != EINTR)
        return AIDC_EIO;
    if (n <= 0 || !(fds[0].revents & (POLLIN | POLLERR | POLLHUP)))
        return 0;
    if (!PQconsumeInput(db->conn)) {
        dbint_set_error(db, NULL, "connection lost while waiting");
        return dbint_conn_lost(db);
    }
    return take_notifies(db) ? 1 : 0;
}
