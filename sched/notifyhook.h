/*
 * notifyhook.h - a webhook delivery attempt (docs/notifications.md): the
 * JSON document POSTed to the user's URL, signed with the webhook's secret
 * (X-Aidc-Signature: sha256=<hex HMAC-SHA256 of the body>), named by
 * X-Aidc-Event and X-Aidc-Delivery. The URL passes lib/urlguard.h again at
 * each attempt, its host resolved and pinned; redirects are not followed.
 */
#ifndef AIDC_NOTIFYHOOK_H
#define AIDC_NOTIFYHOOK_H

#include "notifycall.h"

struct config;
struct db_notification;

/*
 * Prepare c for n: an easy handle ready to run, or c done at once (refused
 * address, removed webhook). n must outlive the transfer (its body is sent
 * from where it is).
 */
void notifyhook_prepare(const struct config *cfg, const struct db_notification *n,
                        struct notify_call *c);
/* hex HMAC-SHA256 of body with secret into out (65 bytes); false if OpenSSL failed. */
bool notifyhook_sign(const char *secret, const char *body, char out[65]);

#endif
