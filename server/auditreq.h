/*
 * auditreq.h - audit events of an HTTP request: its actor, tenant, source
 * address, user agent and request id become the event's origin (audit/audit.h).
 */
#ifndef AIDC_AUDITREQ_H
#define AIDC_AUDITREQ_H

#include "../audit/audit.h"
#include "request.h"

/* Queue ev in rq's open transaction. 0 or an aidc_err. */
int auditreq_record(struct req *rq, const struct audit_event *ev);
/* Write ev at once, in its own transaction (no transaction may be open). */
int auditreq_record_now(struct req *rq, const struct audit_event *ev);

#endif
