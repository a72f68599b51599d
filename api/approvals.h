/*
 * approvals.h - dual control: sensitive operations answer 202 with an
 * approval request instead of acting; another platform admin approves (the
 * recorded operation runs then, once, as the approver, and is audited with
 * both names) or rejects; the requester may withdraw its own; requests
 * expire after AIDC_APPROVAL_TTL_HOURS. docs/approvals.md has the details.
 */
#ifndef AIDC_API_APPROVALS_H
#define AIDC_API_APPROVALS_H

#include "../server/request.h"

int api_approval_list(struct req *rq, struct resp *rs);
int api_approval_get(struct req *rq, struct resp *rs);
int api_approval_approve(struct req *rq, struct resp *rs);
int api_approval_reject(struct req *rq, struct resp *rs);

/*
 * For a handler of a sensitive operation: when rq is not already running as
 * an approved operation, record an approval request for it (method, path,
 * body, summary) and answer 202 {"approval": {...}}; returns 1 then (the
 * handler returns 0 at once), 0 when the handler should act, or an aidc_err.
 */
int approval_required(struct req *rq, struct resp *rs, const char *summary);

/*
 * Record an approval request for an operation other than rq itself - method
 * and path of a route of the table, body (borrowed; NULL for none) - asked
 * by rq's actor, and answer 202 {"approval": {...}} in rs (the caller may add
 * to rs->body). Audited as "approval.request". When the same operation is
 * already pending, that request is the answer. 0 or an aidc_err.
 */
int approval_request(struct req *rq, struct resp *rs, const char *method, const char *path,
                     const json_t *body, const char *summary);

#endif
