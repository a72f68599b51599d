/*
 * respond.c - a handler's answer (struct resp) made into a libmicrohttpd
 * response: a problem document, JSON, raw bytes, a file sent by sendfile or a
 * body streamed as it is produced, with the headers every answer carries.
 */
#include "respond.h"

#include "../lib/jsonout.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "problem.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void respond_common_headers(struct MHD_Response *r, const char *request_id, bool api)
{
    MHD_add_response_header(r, "X-Request-Id", request_id);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    if (api) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'none'; frame-ancestors 'none'");
    } else {
        /* for browsers older than CSP's frame-ancestors */
        MHD_add_response_header(r, "X-Frame-Options", "DENY");
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'self'; script-src 'self'; style-src 'self'; "
                                "img-src 'self' data:; connect-src 'self'; font-src 'self'; "
                                "object-src 'none'; base-uri 'none'; form-action 'self'; "
                                "frame-ancestors 'none'");
    }
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct resp_stream *st = cls;
    long n = st->next(st->state, buf, max);
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

static void stream_done(void *cls)
{
    struct resp_stream *st = cls;
    if (st->free)
        st->free(st->state);
    free(st);
}

/* A response whose body is produced as it is sent (chunked), e.g. an audit export. */
static struct MHD_Response *stream_response(struct resp *rs)
{
    struct resp_stream *st = xmalloc(sizeof *st);
    *st = rs->stream;
    memset(&rs->stream, 0, sizeof rs->stream); /* the response owns it now */
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, (size_t)64 * 1024,
                                                               stream_read, st, stream_done);
    if (!r)
        stream_done(st);
    return r;
}

struct MHD_Response *respond_build(struct resp *rs, const char *request_id, bool closing,
                                   int *status_out)
{
    int status = rs->status;
    char *body = NULL;
    size_t len = 0;
    const char *ctype = "application/json";
    bool streamed = false;
    if (rs->err.status || !status) {
        if (!rs->err.status)
            rs->err.status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        status = rs->err.status;
        body = problem_render(&rs->err, request_id);
        len = strlen(body);
        ctype = "application/problem+json";
    } else if (rs->stream.next) {
        streamed = true;
        ctype = rs->content_type ? rs->content_type : "application/octet-stream";
    } else if (rs->file.set) {
        ctype = rs->content_type ? rs->content_type : "application/octet-stream";
    } else if (rs->raw) {
        body = rs->raw;
        len = rs->raw_len;
        rs->raw = NULL;
        ctype = rs->content_type ? rs->content_type : "application/octet-stream";
    } else if (rs->body && status != MHD_HTTP_NO_CONTENT) {
        body = jsonout_compact(rs->body); /* what json_dumps writes, faster (lib/jsonout.h) */
        if (!body) {
            log_error("cannot encode the response");
            status = MHD_HTTP_INTERNAL_SERVER_ERROR;
            body = xstrdup("{\"type\":\"about:blank\",\"title\":\"Internal Server Error\","
                           "\"status\":500}");
            ctype = "application/problem+json";
        }
        len = strlen(body);
    }
    struct MHD_Response *r = NULL;
    if (streamed) {
        r = stream_response(rs);
    } else if (rs->file.set && rs->file.length > 0 && !rs->err.status && status) {
        /* sent by sendfile from the descriptor, which the response now owns */
        r = MHD_create_response_from_fd_at_offset64(rs->file.length, rs->file.fd, rs->file.offset);
        if (r)
            rs->file.set = false;
    } else {
        r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
    }
    if (!r) {
        free(body);
        return NULL;
    }
    respond_common_headers(r, request_id, true);
    if (len || streamed || rs->file.set || status != MHD_HTTP_NO_CONTENT)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (rs->err.allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rs->err.allow);
    if (closing)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (rs->err.retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", rs->err.retry_after);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"aidc\"");
    /* a refused request carries none of what the handler meant for success
     * (a session cookie from a login whose audit record failed, a Location) */
    for (size_t i = 0; i < rs->nheaders && !rs->err.status; i++)
        MHD_add_response_header(r, rs->headers[i].name, rs->headers[i].value);
    *status_out = status;
    return r;
}
