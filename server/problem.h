/*
 * problem.h - RFC 9457 problem documents, the only error format of the API:
 * {"type","title","status","detail","request_id","errors":[{"field","message"}]}
 */
#ifndef AIDC_PROBLEM_H
#define AIDC_PROBLEM_H

#include "request.h"

/* The reason phrase for an HTTP status ("Not Found"). */
const char *problem_title(int status);
/* Render e as JSON text (malloc'd). */
char *problem_render(const struct api_error *e, const char *request_id);

#endif
