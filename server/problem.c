/* problem.c - problem+json rendering. */
#include "problem.h"

#include "xalloc.h"

#include <jansson.h>
#include <stdbool.h>
#include <microhttpd.h>

const char *problem_title(int status)
{
    switch (status) {
    case MHD_HTTP_BAD_REQUEST: return "Bad Request";
    case MHD_HTTP_UNAUTHORIZED: return "Unauthorized";
    case MHD_HTTP_FORBIDDEN: return "Forbidden";
    case MHD_HTTP_NOT_FOUND: return "Not Found";
    case MHD_HTTP_METHOD_NOT_ALLOWED: return "Method Not Allowed";
    case MHD_HTTP_NOT_ACCEPTABLE: return "Not Acceptable";
    case MHD_HTTP_CONFLICT: return "Conflict";
    case MHD_HTTP_CONTENT_TOO_LARGE: return "Content Too Large";
    case MHD_HTTP_UNSUPPORTED_MEDIA_TYPE: return "Unsupported Media Type";
    case MHD_HTTP_UNPROCESSABLE_CONTENT: return "Unprocessable Content";
    case MHD_HTTP_TOO_MANY_REQUESTS: return "Too Many Requests";
    case MHD_HTTP_INTERNAL_SERVER_ERROR: return "Internal Server Error";
    case MHD_HTTP_NOT_IMPLEMENTED: return "Not Implemented";
    case MHD_HTTP_SERVICE_UNAVAILABLE: return "Service Unavailable";
    default: return status >= 500 ? "Server Error" : "Client Error";
    }
}

char *problem_render(const struct api_error *e, const char *request_id)
{
    int status = e->status ? e->status : MHD_HTTP_INTERNAL_SERVER_ERROR;
    json_t *doc = json_object();
    bool ok = doc && json_object_set_new(doc, "type", json_string("about:blank")) == 0 &&
              json_object_set_new(doc, "title", json_string(problem_title(status))) == 0 &&
              json_object_set_new(doc, "status", json_integer(status)) == 0 &&
              json_object_set_new(doc, "detail", json_string(e->detail ? e->detail
                                                                         : problem_title(status))) == 0 &&
              json_object_set_new(doc, "request_id",
                                  json_string(request_id ? request_id : "")) == 0;
    if (ok && e->nfields) {
        json_t *errors = json_array();
        bool built = errors != NULL;
        for (size_t i = 0; built && i < e->nfields; i++)
            built = json_array_append_new(errors, json_pack("{s:s, s:s}", "field",
                                                            e->fields[i].field, "message",
                                                            e->fields[i].message)) == 0;
        if (built) {
            ok = json_object_set_new(doc, "errors", errors) == 0; /* takes errors */
        } else {
            json_decref(errors);
            ok = false;
        }
    }
    char *s = ok ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (s)
        return s;
    /* a detail that is not valid UTF-8 cannot happen (ours are ASCII or copied
     * from validated JSON), but answer something valid anyway */
    return xasprintf("{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%d}",
                     problem_title(status), status);
}
