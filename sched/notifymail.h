/*
 * notifymail.h - an e-mail delivery attempt (docs/notifications.md): a
 * plain-text message to the user's address (users.email) over SMTP with
 * libcurl. STARTTLS is required unless AIDC_SMTP_URL is on the loopback
 * (smtps:// is TLS from the start); AUTH uses AIDC_SMTP_USER and the password
 * AIDC_SMTP_PASSWORD_REF names, read at each attempt (a rotated secret takes
 * effect without a restart). Header values carry no user text unencoded: the
 * subject is RFC 2047 encoded, names and reasons go in the body only.
 */
#ifndef AIDC_NOTIFYMAIL_H
#define AIDC_NOTIFYMAIL_H

#include "notifycall.h"

struct config;
struct db_notification;

/* Prepare c for n: an easy handle ready to run, or c done at once (no address, no SMTP). */
void notifymail_prepare(const struct config *cfg, const struct db_notification *n,
                        struct notify_call *c);
/* Whether addr may be an envelope recipient: one @, no space, control, <, > or comma. */
bool notifymail_address_ok(const char *addr);

#endif
