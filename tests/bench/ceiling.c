/*
 * ceiling.c - the reference server of tests/bench/run.sh: the physical limit
 * of aidcd's design on this machine.
 *
 * A minimal libmicrohttpd server in the same mode as aidcd (epoll, internal
 * thread pool) that answers every GET with one prepared single-row SELECT by
 * primary key, run over a per-thread libpq connection. No authentication, no
 * transaction, no row-level-security context, no JSON library, no access log:
 * whatever aidcd spends beyond this is the cost of its features.
 *
 * Usage: bench_ceiling DATABASE_URL PORT PROJECT_ID [THREADS]
 *   (or the environment: CEILING_DATABASE_URL, CEILING_PORT, CEILING_ID,
 *   CEILING_THREADS). Listens on 127.0.0.1; PORT 0 picks a free port. Prints
 *   "listening on 127.0.0.1:PORT" once ready, runs until SIGTERM or SIGINT.
 *
 * The URL must name a role that sees the projects row without a tenant
 * context, i.e. the table owner (row-level security does not apply to it).
 * Answers: 200 with {"id","slug","name"}; 404 if the row is gone; 503 if the
 * database does not answer (the connection is reset for the next request).
 */
#include <libpq-fe.h>
#include <microhttpd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define STMT_NAME "ceiling_get"
#define STMT_SQL "SELECT id, slug, name FROM projects WHERE id = $1::uuid"

static const char *g_url;
static const char *g_id;
static pthread_key_t g_conn_key;

static void conn_destroy(void *p)
{
    PQfinish(p);
}

static PGconn *conn_open(void)
{
    PGconn *c = PQconnectdb(g_url);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "ceiling: cannot connect: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    PGresult *r = PQprepare(c, STMT_NAME, STMT_SQL, 1, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "ceiling: cannot prepare: %s", PQerrorMessage(c));
    PQclear(r);
    if (!ok) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* The calling worker thread's connection, opened (and prepared) on first use. */
static PGconn *thread_conn(void)
{
    PGconn *c = pthread_getspecific(g_conn_key);
    if (!c) {
        c = conn_open();
        if (c && pthread_setspecific(g_conn_key, c) != 0) {
            PQfinish(c);
            c = NULL;
        }
    }
    return c;
}

static void thread_conn_drop(void)
{
    PGconn *c = pthread_getspecific(g_conn_key);
    PQfinish(c);
    pthread_setspecific(g_conn_key, NULL);
}

static enum MHD_Result reply(struct MHD_Connection *con, unsigned status, const char *body,
                             size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ok = MHD_queue_response(con, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result reply_str(struct MHD_Connection *con, unsigned status, const char *body)
{
    return reply(con, status, body, strlen(body));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    static int marker;
    (void)cls;
    (void)url;
    (void)version;
    (void)upload_data;
    if (*req_cls == NULL) { /* headers only: answer on the next call, as aidcd does */
        *req_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size) { /* ignore any body */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0)
        return reply_str(con, MHD_HTTP_METHOD_NOT_ALLOWED, "{\"error\":\"GET only\"}\n");

    PGconn *c = thread_conn();
    if (!c)
        return reply_str(con, MHD_HTTP_SERVICE_UNAVAILABLE, "{\"error\":\"no database\"}\n");
    const char *params[1] = {g_id};
    PGresult *r = PQexecPrepared(c, STMT_NAME, 1, params, NULL, NULL, 0);
    char buf[512];
    unsigned status;
    int n;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        if (PQstatus(c) != CONNECTION_OK)
            thread_conn_drop(); /* reconnect on the next request */
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        n = snprintf(buf, sizeof buf, "{\"error\":\"query failed\"}\n");
    } else if (PQntuples(r) != 1) {
        status = MHD_HTTP_NOT_FOUND;
        n = snprintf(buf, sizeof buf, "{\"error\":\"not found\"}\n");
    } else {
        status = MHD_HTTP_OK;
        n = snprintf(buf, sizeof buf, "{\"id\":\"%s\",\"slug\":\"%s\",\"name\":\"%s\"}\n",
                     PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2));
    }
    PQclear(r);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof buf)
        n = (int)sizeof buf - 1;
    return reply(con, status, buf, (size_t)n);
}

static const char *arg_or_env(int argc, char **argv, int i, const char *env)
{
    if (argc > i)
        return argv[i];
    const char *v = getenv(env);
    return v && *v ? v : NULL;
}

int main(int argc, char **argv)
{
    g_url = arg_or_env(argc, argv, 1, "CEILING_DATABASE_URL");
    const char *port_s = arg_or_env(argc, argv, 2, "CEILING_PORT");
    g_id = arg_or_env(argc, argv, 3, "CEILING_ID");
    const char *threads_s = arg_or_env(argc, argv, 4, "CEILING_THREADS");
    if (!g_url || !port_s || !g_id) {
        fprintf(stderr, "usage: bench_ceiling DATABASE_URL PORT PROJECT_ID [THREADS]\n"
                        "  (or CEILING_DATABASE_URL, CEILING_PORT, CEILING_ID, "
                        "CEILING_THREADS)\n");
        return 2;
    }
    char *end;
    long port = strtol(port_s, &end, 10);
    if (*end || port < 0 || port > 65535) {
        fprintf(stderr, "ceiling: bad port \"%s\"\n", port_s);
        return 2;
    }
    long threads = threads_s ? strtol(threads_s, &end, 10) : 2;
    if ((threads_s && *end) || threads < 1 || threads > 64) {
        fprintf(stderr, "ceiling: bad thread count \"%s\"\n", threads_s);
        return 2;
    }
    if (pthread_key_create(&g_conn_key, conn_destroy) != 0)
        return 1;

    /* Fail fast on a wrong URL or id rather than serving 404s or 503s. */
    PGconn *c = conn_open();
    if (!c)
        return 1;
    const char *params[1] = {g_id};
    PGresult *r = PQexecPrepared(c, STMT_NAME, 1, params, NULL, NULL, 0);
    int found = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (!found)
        fprintf(stderr, "ceiling: no project with id %s visible to this role: %s", g_id,
                PQresultStatus(r) == PGRES_TUPLES_OK ? "0 rows\n" : PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    if (!found)
        return 1;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by libmicrohttpd's threads */
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG, (uint16_t)port, NULL,
        NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&sa,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)60, MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "ceiling: cannot listen on 127.0.0.1:%ld\n", port);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("listening on 127.0.0.1:%u (%ld threads)\n", di ? (unsigned)di->port : (unsigned)port,
           threads);
    fflush(stdout);

    int sig = 0;
    sigwait(&set, &sig);
    MHD_stop_daemon(d); /* worker threads exit: their connections close (key destructor) */
    return 0;
}
