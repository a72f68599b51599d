/*
 * test_dbkeepalive.c - PostgreSQL keeps TCP keepalives of about 10 s on
 * aidcd's sessions (db/db.c sets them per session), so a session whose aidcd
 * host vanished - and a worker's leader lock with it - ends in about 25 s,
 * not after the kernel's two hours (docs/ha.md).
 *
 * Read off the kernel: aidcd's sockets (/proc/<pid>/fd) name the local
 * ports of its connections to the database in /proc/net/tcp{,6}; the
 * server's ends of those connections show their keepalive timer there
 * (timer 2, its expiry in clock ticks). Needs the database over TCP.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SOCKETS 256

static void setup(void)
{
    harness_setup("dbkeepalive", NULL);
}

static void teardown(void)
{
    harness_teardown();
}

/* The database's TCP port from AIDC_TEST_APP_URL (...@host:port/...), or 0. */
static unsigned db_port(void)
{
    const char *url = getenv("AIDC_TEST_APP_URL");
    const char *at = url ? strrchr(url, '@') : NULL;
    const char *colon = at ? strchr(at, ':') : NULL;
    if (!colon || strstr(url, "%2F") || strstr(url, "host=/"))
        return 0; /* a Unix socket: no TCP keepalive to see */
    return (unsigned)strtoul(colon + 1, NULL, 10);
}

/* The socket inodes open in process pid. */
static size_t socket_inodes(pid_t pid, unsigned long *out, size_t max)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot read %s", dir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        char link[384], target[128];
        snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (strncmp(target, "socket:[", 8) == 0)
            out[n++] = strtoul(target + 8, NULL, 10);
    }
    closedir(d);
    return n;
}

struct tcp_line {
    unsigned local_port, remote_port;
    int state, timer;
    unsigned long when, inode;
};

/* Every line of /proc/net/tcp and tcp6 to fn; stops when fn returns true. */
static void each_tcp(bool (*fn)(const struct tcp_line *, void *), void *arg)
{
    const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (size_t f = 0; f < 2; f++) {
        FILE *in = fopen(files[f], "r");
        if (!in)
            continue;
        char line[512];
        bool stop = false;
        while (!stop && fgets(line, sizeof line, in)) {
            struct tcp_line t;
            char local[64], remote[64];
            /* sl local rem st tx:rx tr:tm->when retrnsmt uid timeout inode */
            if (sscanf(line, " %*d: %63s %63s %x %*x:%*x %x:%lx %*x %*u %*d %lu", local, remote,
                       (unsigned *)&t.state, (unsigned *)&t.timer, &t.when, &t.inode) != 6)
                continue;
            const char *lp = strrchr(local, ':'), *rp = strrchr(remote, ':');
            if (!lp || !rp)
                continue;
            t.local_port = (unsigned)strtoul(lp + 1, NULL, 16);
            t.remote_port = (unsigned)strtoul(rp + 1, NULL, 16);
            stop = fn(&t, arg);
        }
        fclose(in);
    }
}

struct ours {
    unsigned db;                        /* the database's port */
    unsigned long inodes[MAX_SOCKETS];  /* aidcd's sockets */
    size_t ninodes;
    unsigned ports[MAX_SOCKETS];        /* aidcd's ends of its database connections */
    size_t nports;
    int keepalive_short, keepalive_long; /* server ends with the timer under / over 60 s */
};

static bool find_client_ends(const struct tcp_line *t, void *arg)
{
    struct ours *o = arg;
    for (size_t i = 0; i < o->ninodes && o->nports < MAX_SOCKETS; i++)
        if (t->inode == o->inodes[i] && t->remote_port == o->db && t->state == 1)
            o->ports[o->nports++] = t->local_port;
    return false;
}

static bool check_server_ends(const struct tcp_line *t, void *arg)
{
    struct ours *o = arg;
    long hz = sysconf(_SC_CLK_TCK);
    for (size_t i = 0; i < o->nports; i++)
        if (t->local_port == o->db && t->remote_port == o->ports[i] && t->state == 1 &&
            t->timer == 2) {
            if (t->when <= (unsigned long)(60 * hz))
                o->keepalive_short++;
            else
                o->keepalive_long++;
        }
    return false;
}

START_TEST(the_server_keeps_short_keepalives_on_aidcds_sessions)
{
    struct ours o = {.db = db_port()};
    if (!o.db) {
        fprintf(stderr, "test_dbkeepalive: the test database is reached over a Unix socket\n");
        return;
    }
    /* every idle session with its timer read at least once: poll a few seconds */
    double deadline = jobs_now() + 20;
    do {
        ck_assert_int_eq(req("GET", "/api/v1/me", harness_srv.admin_token, NULL), 200);
        o.ninodes = socket_inodes(harness_srv.pid, o.inodes, MAX_SOCKETS);
        o.nports = 0;
        o.keepalive_short = o.keepalive_long = 0;
        each_tcp(find_client_ends, &o);
        each_tcp(check_server_ends, &o);
        if (o.keepalive_short >= 2 && o.keepalive_long == 0)
            break;
        jobs_nap_ms(200);
    } while (jobs_now() < deadline);
    ck_assert_msg(o.nports >= 2, "aidcd has %zu database connections over TCP", o.nports);
    ck_assert_msg(o.keepalive_short >= 2 && o.keepalive_long == 0,
                  "server ends of aidcd's %zu sessions: %d with a keepalive timer under 60 s, "
                  "%d over",
                  o.nports, o.keepalive_short, o.keepalive_long);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("dbkeepalive");
    TCase *tc = tcase_create("dbkeepalive");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, the_server_keeps_short_keepalives_on_aidcds_sessions);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
