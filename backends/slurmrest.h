/*
 * slurmrest.h - a small client of slurmrestd, Slurm's REST daemon, over
 * libcurl: JSON in and out, JWT authentication, connection reuse through a
 * pool of curl handles, and timeouts on every call (the callers are
 * background workers that must not hang on a dead cluster).
 *
 * Authentication: X-SLURM-USER-NAME and X-SLURM-USER-TOKEN on every call.
 * The cluster's credentials_ref (lib/credref.h) names either a Slurm
 * JWT (sent as it is; a warning is logged as it nears its expiry) or
 * Slurm's jwt_hs256.key, with which a short-lived HS256 token (claims sun,
 * iat, exp) is minted for each call, so nothing ever expires in flight.
 */
#ifndef AIDC_SLURMREST_H
#define AIDC_SLURMREST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Seconds: connecting, and a whole call by default (listing thousands of jobs takes seconds). */
#define SLURMREST_CONNECT_TIMEOUT 5
#define SLURMREST_TIMEOUT         30
/* Largest answer read by slurmrest_call (lists go through slurmrest_list, uncapped). */
#define SLURMREST_MAX_ANSWER (128L * 1024 * 1024)
/* A list (GET jobs, every job slurmctld holds) may take this many times a call's timeout:
 * slurmrestd composes the whole answer before its first byte (~0.3-0.5 ms a job). */
#define SLURMREST_LIST_TIMEOUT_FACTOR 4
/* Largest element of a list (a job is ~3.2 KB) or other member of its answer. */
#define SLURMREST_LIST_VALUE_MAX (4L * 1024 * 1024)
/* Lifetime of a minted token, seconds. */
#define SLURMREST_TOKEN_TTL 600

/* Where and as whom: from a cluster's endpoint, credentials_ref and options. */
struct slurmrest_target {
    const char *endpoint;    /* http://127.0.0.1:6820 */
    const char *credref;     /* file:/etc/slurm/jwt_hs256.key | env:SLURM_JWT */
    const char *user;        /* options.user_name */
    const char *api_version; /* options.api_version, v0.0.38 */
    int timeout_seconds;     /* options.timeout_seconds; 0: SLURMREST_TIMEOUT */
};

struct slurmrest_answer {
    long status; /* HTTP status */
    char *body;  /* NUL-terminated */
    size_t len;
    json_t *json; /* the body parsed, or NULL when it is not JSON */
};

/*
 * One call: method and path below /slurm/<api_version>/ ("jobs?update_time=0"),
 * body (NULL for none). 0 with the answer whatever its HTTP status;
 * AIDC_EUNAVAIL when slurmrestd could not be reached, timed out or sent more
 * than SLURMREST_MAX_ANSWER; another aidc_err when the credential is not
 * usable. err says why.
 */
int slurmrest_call(const struct slurmrest_target *t, const char *method, const char *path,
                   const json_t *body, struct slurmrest_answer *out, char *err, size_t errsz);
/*
 * slurmrest_call that also records the request for the audit trail: *sent
 * receives it (backend_call_http: the token redacted; new reference) once
 * the request was made, also when no answer came; NULL when nothing was
 * sent (the credential was not usable).
 */
int slurmrest_call_record(const struct slurmrest_target *t, const char *method, const char *path,
                          const json_t *body, struct slurmrest_answer *out, json_t **sent,
                          char *err, size_t errsz);
void slurmrest_answer_free(struct slurmrest_answer *a);

/*
 * GET path, a list ("jobs?update_time=T"), whose answer is never held
 * whole: the array member `key` ("jobs") is split as it arrives
 * (backends/jsonsplit.h) and each element, parsed, goes to each (false
 * stops), so memory follows one element, not the answer, which has no size
 * cap here. The call may take SLURMREST_LIST_TIMEOUT_FACTOR times the
 * target's timeout. 0 when the whole answer came, well formed, HTTP 200
 * with no "errors" — or 304 Not Modified (nothing handed over; *status
 * says which). Otherwise AIDC_EUNAVAIL (or the credential's aidc_err) with
 * err: the elements handed over before are real states, but what was not
 * handed over proves nothing (the caller must not take it as gone).
 */
int slurmrest_list(const struct slurmrest_target *t, const char *path, const char *key,
                   bool (*each)(void *arg, json_t *element), void *arg, long *status, char *err,
                   size_t errsz);

/*
 * Whether an answer reports success: HTTP 200 and an empty or absent
 * "errors". Otherwise its message into msg: the errors' "error" and
 * "description" (both shapes slurmrestd uses), else the text body.
 */
bool slurmrest_ok(const struct slurmrest_answer *a, char *msg, size_t n);

/*
 * The token for secret (*len bytes from the credentials_ref): the secret
 * itself when it is a JWT (*expires: its exp, 0 when it has none), else an
 * HS256 token minted with it as the key for user, valid from now for
 * SLURMREST_TOKEN_TTL (*expires set). 0 or an aidc_err with err.
 */
int slurmrest_token(const unsigned char *secret, size_t len, const char *user, time_t now,
                    char *out, size_t n, time_t *expires, char *err, size_t errsz);

#endif
