/*
 * respond.h - a handler's answer made into a libmicrohttpd response (the
 * body in the form it was left in, and the headers every answer carries).
 */
#ifndef AIDC_RESPOND_H
#define AIDC_RESPOND_H

#include "request.h"

#include <microhttpd.h>
#include <stdbool.h>

/* The security headers of every answer: an API answer's, or a portal page's. */
void respond_common_headers(struct MHD_Response *r, const char *request_id, bool api);
/*
 * The response for rs (a problem document when rs->err is set), its status in
 * *status_out; NULL when libmicrohttpd cannot make one. The body, stream or file
 * of rs passes to the response. closing adds "Connection: close" (draining).
 */
struct MHD_Response *respond_build(struct resp *rs, const char *request_id, bool closing,
                                   int *status_out);

#endif
