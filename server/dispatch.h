/*
 * dispatch.h - everything between "this route matched" and "the handler
 * runs", in one place: query-argument checks, authentication, the portal's
 * CSRF rule, token scopes, tenant resolution (another tenant's objects are
 * 404), role checks, suspended tenants, the request transaction with its
 * row-level-security context, Idempotency-Key replay, the audit event of a
 * state change (same transaction) or of a refusal (own transaction), retries
 * of serialization failures, and the mapping of error codes to statuses.
 * The authorization decision itself is server/authorize.c's (approvals
 * make it again with the same code).
 */
#ifndef AIDC_DISPATCH_H
#define AIDC_DISPATCH_H

#include "../lib/config.h"
#include "request.h"

/* Run rq (route already matched, body read) and fill rs. Never fails. */
void dispatch(struct req *rq, struct resp *rs, const struct config *cfg);

/*
 * For an RF_UPLOAD route once its headers are in: the same checks as
 * dispatch(), then the route's begin handler (in a read-only transaction)
 * to set rq->sink. rs holds the refusal when the upload may not start.
 */
void dispatch_upload_begin(struct req *rq, struct resp *rs, const struct config *cfg);

/*
 * Begin a read-only transaction on rq->db with rq's actor as the row-level
 * security context: for work that continues after dispatch() answered (a
 * streamed export reads in batches, each in a transaction of its own).
 */
int dispatch_begin_read(struct req *rq);

#endif
