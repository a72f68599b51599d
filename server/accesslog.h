/*
 * accesslog.h - the access log: one JSON line per finished request
 * (docs/operations.md, "Logs"), at level info.
 */
#ifndef AIDC_SERVER_ACCESSLOG_H
#define AIDC_SERVER_ACCESSLOG_H

#include "request.h"

/* rq answered status after secs; route names what served it (the route's
 * pattern, "static" or "unmatched"). */
void accesslog_write(const struct req *rq, const char *route, int status, double secs);

#endif
