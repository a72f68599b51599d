/* approvals.c - dual control (see approvals.h). Work in progress. */
#include "approvals.h"

#include <microhttpd.h>

int api_approval_list(struct req *rq, struct resp *rs)
{
    (void)rq;
    return api_fail(rs, MHD_HTTP_NOT_IMPLEMENTED, "approvals are not built yet");
}

int api_approval_get(struct req *rq, struct resp *rs)
{
    (void)rq;
    return api_fail(rs, MHD_HTTP_NOT_IMPLEMENTED, "approvals are not built yet");
}

int api_approval_approve(struct req *rq, struct resp *rs)
{
    (void)rq;
    return api_fail(rs, MHD_HTTP_NOT_IMPLEMENTED, "approvals are not built yet");
}

int api_approval_reject(struct req *rq, struct resp *rs)
{
    (void)rq;
    return api_fail(rs, MHD_HTTP_NOT_IMPLEMENTED, "approvals are not built yet");
}

int approval_required(struct req *rq, struct resp *rs, const char *summary)
{
    (void)rq;
    (void)rs;
    (void)summary;
    return 0;
}
