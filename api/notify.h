/*
 * notify.h - the caller's notification preferences and delivery log
 * (docs/notifications.md): GET|PUT /api/v1/me/notifications and
 * GET /api/v1/me/notifications/deliveries.
 *
 * A user's own, like /me/sessions: a token bound to a tenant is refused (the
 * preferences cover every tenant of the user, and a webhook would carry
 * them out). Webhook secrets are write-only: GET shows "secret_set", and a
 * PUT that leaves a stored webhook's secret out keeps it, so a client can
 * save what it read.
 */
#ifndef AIDC_API_NOTIFY_H
#define AIDC_API_NOTIFY_H

#include "../server/request.h"

#define NOTIFY_MAX_WEBHOOKS 5
#define NOTIFY_MAX_PROJECTS 50
#define NOTIFY_SECRET_MIN   16
#define NOTIFY_SECRET_MAX   256

int api_notify_get(struct req *rq, struct resp *rs);
int api_notify_put(struct req *rq, struct resp *rs);
int api_notify_deliveries(struct req *rq, struct resp *rs);

#endif
