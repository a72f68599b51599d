/*
 * approvals.h - dual control: sensitive operations answer 202 with an
 * approval request instead of acting; another platform admin approves (the
 * recorded operation runs then, once) or rejects; requests expire.
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

#endif
