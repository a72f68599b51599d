/*
 * cannedhttp.h - a tiny HTTP server for the unit tests of HTTP clients (the
 * slurmrestd client, the Kubernetes backend): it answers the requests it
 * receives with canned answers, in order, and keeps every request as it
 * arrived so a test can check what the client sent. Canned answers are how
 * the tests reach what a real server cannot be made to say on demand: a 429,
 * a 503 from a proxy, garbage, a body cut short, silence.
 *
 * Loopback only, one thread, one connection at a time, one exchange per
 * connection (closed after the answer, so an answer cut short ends there).
 * Needs no Check: failures are return values the test asserts on.
 */
#ifndef AIDC_TEST_CANNEDHTTP_H
#define AIDC_TEST_CANNEDHTTP_H

#include <stddef.h>

/* requests kept (more are answered and counted, not kept) */
#define CANNEDHTTP_MAX 16

struct cannedhttp;

/*
 * Listen on 127.0.0.1 on a free port and serve in a thread of its own: the
 * i-th request gets answers[i], sent as it is (a whole HTTP response, or
 * bytes that are none); a NULL answer says nothing and holds the connection
 * until the client hangs up (or cannedhttp_stop). Requests beyond n get a
 * 500 saying no answer was left. The answers are copied. NULL when the
 * socket or the thread cannot be made (errno says why).
 */
struct cannedhttp *cannedhttp_start(const char *const *answers, size_t n);
/* The same with one answer. */
struct cannedhttp *cannedhttp_start1(const char *answer);
/* The port it listens on (still known after stop: nobody listens there then). */
int cannedhttp_port(const struct cannedhttp *s);
/* Stop serving and close the port (a connection held open is closed). Requests stay. */
void cannedhttp_stop(struct cannedhttp *s);
/* Stop, and release everything (accepts NULL). */
void cannedhttp_free(struct cannedhttp *s);

/* How many requests arrived, kept or not. */
size_t cannedhttp_nrequests(const struct cannedhttp *s);
/*
 * The i-th request as received (request line, headers, body), NUL-terminated;
 * NULL when there is none. Valid until cannedhttp_free.
 */
const char *cannedhttp_request(const struct cannedhttp *s, size_t i);
/* Its body (after the blank line; "" when none), or NULL when there is no such request. */
const char *cannedhttp_body(const struct cannedhttp *s, size_t i);

/*
 * A whole answer (malloc'd, the caller frees): "HTTP/1.1 <status> <reason>",
 * headers (each line ending "\r\n"; NULL: "Content-Type: application/json\r\n"),
 * Content-Length, the blank line, body (NULL: none).
 */
char *cannedhttp_answer(int status, const char *headers, const char *body);

#endif
