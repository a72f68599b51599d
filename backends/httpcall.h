/*
 * httpcall.h - one HTTP request with a JSON answer, for the backends that
 * talk to a scheduler's REST API (slurmrestd, the Kubernetes API server):
 * libcurl handles reused from a small pool (their connections stay open),
 * timeouts on every call (the callers are background workers that must not
 * hang on a dead cluster), an answer size cap, TLS verification always on
 * (with the cluster's own CA bundle when it has one).
 */
#ifndef AIDC_HTTPCALL_H
#define AIDC_HTTPCALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct httpcall {
    const char *method;
    const char *url;
    const char *const *headers; /* "Name: value" lines */
    size_t nheaders;
    const char *body;    /* NULL: none */
    const char *ca_file; /* PEM bundle that signs the server's certificate; NULL: the system's */
    int connect_timeout_s;
    int timeout_s;
    long max_answer; /* bytes */
};

struct httpcall_answer {
    long status; /* HTTP status */
    char *body;  /* NUL-terminated */
    size_t len;
    json_t *json; /* the body parsed, or NULL when it is not JSON */
};

/*
 * Make the request. 0 with the answer whatever its HTTP status;
 * AIDC_EUNAVAIL when the server could not be reached, timed out, failed TLS
 * verification or sent more than max_answer (err says which, naming the
 * URL); AIDC_EINTERNAL when libcurl could not start.
 */
int httpcall_do(const struct httpcall *c, struct httpcall_answer *out, char *err, size_t errsz);
void httpcall_answer_free(struct httpcall_answer *a);

/* A piece of the body as it arrives, with the HTTP status; false stops the transfer. */
typedef bool (*httpcall_chunk_fn)(void *arg, long status, const char *data, size_t len);
/*
 * httpcall_do for an answer too large to hold (slurmrestd's list of every
 * job): the body goes to chunk piece by piece, and nothing of it is kept
 * here (max_answer is not applied: chunk bounds what it keeps). 0 with
 * *status once the whole answer came; errors as httpcall_do, AIDC_EUNAVAIL
 * also when chunk stopped it.
 */
int httpcall_stream(const struct httpcall *c, httpcall_chunk_fn chunk, void *arg, long *status,
                    char *err, size_t errsz);

#endif
