/*
 * intake.h - a request's intake from libmicrohttpd (see intake.c), and the
 * connection callbacks that count open connections per client address.
 */
#ifndef AIDC_INTAKE_H
#define AIDC_INTAKE_H

#include "../lib/config.h"
#include "request.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Remember the configuration (trusted proxies); before any other call. */
void intake_init(const struct config *cfg);

/* MHD_OPTION_UNESCAPE_CALLBACK: %HH decoded in place, but %00. */
size_t intake_unescape(void *cls, struct MHD_Connection *c, char *s);

/* A new request from the connection's headers and query (free with req_free). */
struct req *intake_request(struct MHD_Connection *c, const char *url, const char *method);

/* Whether ip is one of AIDC_TRUSTED_PROXIES. */
bool intake_trusted_proxy(const char *ip);

/* The accept policy: false once the peer's address has its most connections open. */
enum MHD_Result intake_accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen);

/* MHD_OPTION_NOTIFY_CONNECTION: counts connections per address. */
void intake_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe);

#endif
