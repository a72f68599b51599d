/* cannedhttp.c - a socket that answers canned HTTP (see cannedhttp.h). */
#include "cannedhttp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* a request larger than this is kept cut (the tests send a few KiB) */
#define REQUEST_MAX ((size_t)1024 * 1024)

static const char NO_ANSWER_LEFT[] = "HTTP/1.1 500 Internal Server Error\r\n"
                                     "Content-Type: text/plain\r\nContent-Length: 35\r\n\r\n"
                                     "cannedhttp: no canned answer left\r\n";

struct cannedhttp {
    int lfd;     /* listening; -1 once stopped */
    int wake[2]; /* stop writes to wake[1]: the thread leaves whatever it waits for */
    int port;
    char **answers; /* NULL entries: silence */
    size_t nanswers;
    pthread_t th;
    bool running;
    pthread_mutex_t lock; /* requests, nrequests */
    char *requests[CANNEDHTTP_MAX];
    size_t nrequests;
};

/* Not out of memory in a test: abort, as xmalloc does. */
static void *must(void *p)
{
    if (!p)
        abort();
    return p;
}

/* Until fd can be read: true; false when stop was asked (or poll failed). */
static bool wait_readable(struct cannedhttp *s, int fd)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->wake[0], .events = POLLIN}};
    for (;;) {
        int n = poll(p, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || p[1].revents)
            return false;
        if (p[0].revents)
            return true;
    }
}

static bool send_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

/* The value of header name in the head [buf, end), or NULL. */
static const char *header(const char *buf, const char *end, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(buf, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, nl) == 0 && p[2 + nl] == ':')
            return p + 3 + nl + strspn(p + 3 + nl, " \t");
    return NULL;
}

/*
 * One request: the head, then as much body as Content-Length says (curl
 * sends bodies with a length; "Expect: 100-continue" is answered so a
 * client that waits for it does not). NULL when the client hung up before
 * sending anything, or stop was asked.
 */
static char *read_request(struct cannedhttp *s, int c)
{
    size_t cap = 8192, got = 0;
    char *buf = must(malloc(cap));
    bool continued = false;
    buf[0] = '\0';
    for (;;) {
        if (!wait_readable(s, c))
            break;
        if (got + 1 == cap) {
            if (cap >= REQUEST_MAX)
                break;
            cap *= 2;
            buf = must(realloc(buf, cap));
        }
        ssize_t n = recv(c, buf + got, cap - 1 - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = '\0';
        const char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        size_t head = (size_t)(end + 4 - buf);
        const char *cl = header(buf, end, "Content-Length");
        size_t body = cl ? strtoul(cl, NULL, 10) : 0;
        const char *expect = header(buf, end, "Expect");
        if (!continued && expect && strncasecmp(expect, "100-continue", 12) == 0 && got == head) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            continued = true;
            if (!send_all(c, cont, sizeof cont - 1))
                break;
        }
        if (got >= head + body)
            break;
    }
    if (got == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void keep(struct cannedhttp *s, char *req)
{
    pthread_mutex_lock(&s->lock);
    if (s->nrequests < CANNEDHTTP_MAX)
        s->requests[s->nrequests] = req;
    else
        free(req);
    s->nrequests++;
    pthread_mutex_unlock(&s->lock);
}

static void *serve(void *arg)
{
    struct cannedhttp *s = arg;
    size_t next = 0;
    while (wait_readable(s, s->lfd)) {
        int c = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        char *req = read_request(s, c);
        if (req) {
            keep(s, req);
            const char *answer = next < s->nanswers ? s->answers[next] : NO_ANSWER_LEFT;
            next++;
            if (answer) {
                (void)send_all(c, answer, strlen(answer));
            } else {
                char buf[256];
                /* silence: until the client gives up and hangs up */
                while (wait_readable(s, c) && recv(c, buf, sizeof buf, 0) > 0)
                    ;
            }
        }
        close(c);
    }
    return NULL;
}

struct cannedhttp *cannedhttp_start(const char *const *answers, size_t n)
{
    struct cannedhttp *s = must(calloc(1, sizeof *s));
    s->lfd = -1;
    s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    s->nanswers = n;
    s->answers = must(calloc(n ? n : 1, sizeof *s->answers));
    for (size_t i = 0; i < n; i++)
        s->answers[i] = answers[i] ? must(strdup(answers[i])) : NULL;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int e = 0;
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(s->lfd, (struct sockaddr *)&a, &len) != 0 || listen(s->lfd, 8) != 0 ||
        pipe2(s->wake, O_CLOEXEC) != 0) {
        e = errno;
        goto out;
    }
    s->port = ntohs(a.sin_port);
    e = pthread_create(&s->th, NULL, serve, s);
    s->running = e == 0;
out:
    if (e) {
        cannedhttp_free(s);
        s = NULL;
        errno = e;
    }
    return s;
}

struct cannedhttp *cannedhttp_start1(const char *answer)
{
    const char *answers[1] = {answer};
    return cannedhttp_start(answers, 1);
}

int cannedhttp_port(const struct cannedhttp *s)
{
    return s->port;
}

void cannedhttp_stop(struct cannedhttp *s)
{
    if (s->running) {
        ssize_t w = write(s->wake[1], "x", 1);
        (void)w;
        pthread_join(s->th, NULL);
        s->running = false;
    }
    if (s->lfd >= 0)
        close(s->lfd);
    s->lfd = -1;
}

void cannedhttp_free(struct cannedhttp *s)
{
    if (!s)
        return;
    cannedhttp_stop(s);
    for (int i = 0; i < 2; i++)
        if (s->wake[i] >= 0)
            close(s->wake[i]);
    for (size_t i = 0; i < s->nanswers; i++)
        free(s->answers[i]);
    free((void *)s->answers);
    for (size_t i = 0; i < s->nrequests && i < CANNEDHTTP_MAX; i++)
        free(s->requests[i]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

size_t cannedhttp_nrequests(const struct cannedhttp *s)
{
    pthread_mutex_t *lock = (pthread_mutex_t *)&s->lock;
    pthread_mutex_lock(lock);
    size_t n = s->nrequests;
    pthread_mutex_unlock(lock);
    return n;
}

const char *cannedhttp_request(const struct cannedhttp *s, size_t i)
{
    pthread_mutex_t *lock = (pthread_mutex_t *)&s->lock;
    pthread_mutex_lock(lock);
    const char *r = i < s->nrequests && i < CANNEDHTTP_MAX ? s->requests[i] : NULL;
    pthread_mutex_unlock(lock);
    return r;
}

const char *cannedhttp_body(const struct cannedhttp *s, size_t i)
{
    const char *r = cannedhttp_request(s, i);
    const char *end = r ? strstr(r, "\r\n\r\n") : NULL;
    return end ? end + 4 : r ? r + strlen(r) : NULL;
}

static const char *reason_of(int status)
{
    static const struct {
        int status;
        const char *reason;
    } reasons[] = {{200, "OK"},           {201, "Created"},       {304, "Not Modified"},
                   {400, "Bad Request"},   {401, "Unauthorized"},  {403, "Forbidden"},
                   {404, "Not Found"},     {409, "Conflict"},      {422, "Unprocessable Entity"},
                   {429, "Too Many Requests"}, {500, "Internal Server Error"},
                   {502, "Bad Gateway"},   {503, "Service Unavailable"}, {504, "Gateway Timeout"}};
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return "Whatever";
}

#define ANSWER_FMT "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n\r\n%s"

char *cannedhttp_answer(int status, const char *headers, const char *body)
{
    const char *h = headers ? headers : "Content-Type: application/json\r\n";
    const char *b = body ? body : "";
    const char *reason = reason_of(status);
    int len = snprintf(NULL, 0, ANSWER_FMT, status, reason, h, strlen(b), b);
    if (len < 0)
        abort();
    char *out = must(malloc((size_t)len + 1));
    (void)snprintf(out, (size_t)len + 1, ANSWER_FMT, status, reason, h, strlen(b), b);
    return out;
}
