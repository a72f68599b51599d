/* err.c - names of aidc status codes for logs. */
#include "err.h"

const char *aidc_err_name(int err)
{
    switch (err) {
    case AIDC_OK:
        return "ok";
    case AIDC_EINVAL:
        return "invalid";
    case AIDC_ENOTFOUND:
        return "not found";
    case AIDC_ECONFLICT:
        return "conflict";
    case AIDC_EFORBIDDEN:
        return "forbidden";
    case AIDC_EUNAVAIL:
        return "unavailable";
    case AIDC_ERETRY:
        return "retry";
    case AIDC_EINTERNAL:
        return "internal";
    case AIDC_EIO:
        return "i/o error";
    case AIDC_ETOOBIG:
        return "too big";
    case AIDC_ESTALE:
        return "stale";
    default:
        return "unknown";
    }
}
